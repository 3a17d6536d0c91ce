package sched

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/datasets"
	"github.com/minatoloader/minatoloader/core/pipeline"
	"github.com/minatoloader/minatoloader/core/sampler"
	"github.com/minatoloader/minatoloader/core/threshold"
)

// liveGoroutines counts goroutines started by every Loader in the process
// and still running.
var liveGoroutines atomic.Int64

// LiveGoroutines reports the goroutines started by loaders that are still
// running; 0 once every loader is closed.
func LiveGoroutines() int64 { return liveGoroutines.Load() }

// Loader runs the fast/slow lane scheduler over a Source. Its methods are
// safe for concurrent use; one epoch runs at a time.
type Loader struct {
	cfg   config.Config
	src   pipeline.Source
	alloc batch.Allocator
	specs []batch.FieldSpec
	offs  []int // offset of each field in a sample buffer
	steps []pipeline.Step
	est   *threshold.Estimator
	pool  sync.Pool // *sampleBuf

	active   atomic.Int32 // fast-lane width
	wakeMu   sync.Mutex
	wake     chan struct{} // closed when active grows
	st       counters
	lastNext atomic.Int64 // unix ns when the consumer last got a batch
	// stopGrace bounds how long stopping an epoch waits for its goroutines
	// (config stop_timeout_ms).
	stopGrace time.Duration

	mu     sync.Mutex
	run    *epochRun
	next   *epochRun // epoch run+1, started early (cfg.PrefetchEpoch)
	closed bool
}

// Open builds the configured native source and a Loader over it.
func Open(cfg config.Config, alloc batch.Allocator) (*Loader, error) {
	if err := cfg.Validate(); err != nil {
		closeProcs(cfg.Dataset.Procs) // the loader owns them from here on, even when it fails
		return nil, err
	}
	src, err := datasets.Open(cfg.Dataset)
	if err != nil {
		return nil, err
	}
	l, err := New(cfg, src, alloc)
	if err != nil {
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
		return nil, err
	}
	return l, nil
}

// closeProcs closes the channels of Python worker processes that a failed
// Open will not use.
func closeProcs(procs []config.Proc) {
	for _, p := range procs {
		if p.FD >= 0 {
			syscall.Close(p.FD)
		}
	}
}

// New returns a Loader over src. cfg must have been validated; its Dataset
// part is ignored. On failure src is left to the caller (Open closes it).
func New(cfg config.Config, src pipeline.Source, alloc batch.Allocator) (*Loader, error) {
	if src == nil || alloc == nil {
		return nil, errors.New("sched: nil source or allocator")
	}
	specs := src.Fields()
	if err := batch.Validate(specs); err != nil {
		return nil, err
	}
	l := &Loader{
		cfg:       cfg,
		src:       src,
		alloc:     alloc,
		specs:     specs,
		wake:      make(chan struct{}),
		stopGrace: time.Duration(cfg.StopTimeoutMS) * time.Millisecond,
	}
	if l.stopGrace <= 0 {
		l.stopGrace = time.Duration(config.Default().StopTimeoutMS) * time.Millisecond
	}
	size := 0
	for _, f := range specs {
		l.offs = append(l.offs, size)
		size += (f.Bytes() + 7) &^ 7 // each field 8-byte aligned, for typed views
	}
	if err := checkMemory(cfg, size); err != nil {
		return nil, err
	}
	l.steps = append([]pipeline.Step{{Name: "load", Fn: func(c *pipeline.Ctx, s *pipeline.Sample) error {
		return src.Load(c, c.Index, s)
	}}}, src.Steps()...)
	l.est = threshold.New(threshold.Options{
		Fixed:             time.Duration(cfg.TimeoutMS * float64(time.Millisecond)),
		Warmup:            cfg.WarmupSamples,
		Quantile:          cfg.Quantile,
		FallbackQuantile:  cfg.FallbackQuantile,
		SlowFractionLimit: cfg.SlowFractionLimit,
		Min:               time.Duration(cfg.MinTimeoutMS * float64(time.Millisecond)),
	})
	l.pool.New = func() any {
		return &sampleBuf{mem: make([]byte, size), fields: make([]pipeline.Array, len(specs))}
	}
	l.active.Store(int32(cfg.Workers))
	return l, nil
}

// Len reports the batches and samples one epoch delivers.
func (l *Loader) Len() (batches, samples int64) {
	n := l.src.Len()
	if w := int64(l.cfg.WorldSize); w > 1 && n > 0 {
		n = (n + w - 1) / w
	}
	b := int64(l.cfg.BatchSize)
	if l.cfg.DropLast {
		return n / b, n / b * b
	}
	return (n + b - 1) / b, n
}

// StartEpoch cancels any running epoch and starts epoch in the background.
func (l *Loader) StartEpoch(epoch int64) error {
	if epoch < 0 {
		return fmt.Errorf("epoch must be >= 0, got %d", epoch)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.run != nil {
		l.run.stop()
		l.run = nil
	}
	if next := l.next; next != nil {
		l.next = nil
		if next.epoch == epoch {
			// Started while the last epoch ended: adopt it.
			l.run = next
		} else {
			next.stop()
		}
	}
	if l.run == nil {
		f := newFeed()
		if !l.cfg.Feed {
			order, err := l.order(epoch)
			if err != nil {
				return err
			}
			f = fixedFeed(order, l.cfg.BatchSize)
		}
		l.run = l.newRun(epoch, f)
		l.run.startWorkers()
	}
	l.st.epoch.Store(epoch)
	l.st.epochStart.Store(time.Now().UnixNano())
	l.st.firstBatchNS.Store(-1)
	l.lastNext.Store(0)
	l.run.startScaler()
	return nil
}

// order is the epoch's sample order, cut to what it delivers.
func (l *Loader) order(epoch int64) ([]int64, error) {
	order, err := sampler.Indices(sampler.Options{
		Length: l.src.Len(), Shuffle: l.cfg.Shuffle, Seed: l.cfg.Seed,
		Rank: l.cfg.Rank, WorldSize: l.cfg.WorldSize,
	}, epoch)
	if err != nil {
		return nil, err
	}
	_, total := l.Len()
	return order[:total], nil
}

// prefetchNext starts epoch run.epoch+1 in the background once run has
// dispatched its last sample, so that the next epoch's first batches are
// built while this one's last samples finish. StartEpoch adopts it when
// asked for that epoch and drops it otherwise. At most one epoch is
// prefetched; it has its own in-flight bound.
func (l *Loader) prefetchNext(run *epochRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.run != run || l.next != nil || !run.prefetched.CompareAndSwap(false, true) {
		return
	}
	order, err := l.order(run.epoch + 1)
	if err != nil {
		return
	}
	l.next = l.newRun(run.epoch+1, fixedFeed(order, l.cfg.BatchSize))
	l.next.startWorkers()
}

// Feed appends whole batches to the current epoch's order (config
// "feed"): sizes cut idx into batches; last marks the end of the epoch.
// The host keeps at least max_inflight samples fed ahead of the batches it
// has received (or ends the order), else Next waits for it.
func (l *Loader) Feed(idx []int64, sizes []int, last bool) error {
	l.mu.Lock()
	run, closed := l.run, l.closed
	l.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case !l.cfg.Feed:
		return errors.New("this loader orders its samples itself (config feed=false)")
	case run == nil:
		return ErrNoEpoch
	}
	n := l.src.Len()
	for _, i := range idx {
		if i < 0 || (n > 0 && i >= n) {
			return fmt.Errorf("index %d is out of range for a dataset of %d samples", i, n)
		}
	}
	for _, s := range sizes {
		if s > l.cfg.MaxInflight {
			return fmt.Errorf("a batch of %d samples is larger than max_inflight=%d", s, l.cfg.MaxInflight)
		}
	}
	return run.feed.append(idx, sizes, last)
}

// Next returns the next batch of the current epoch: io.EOF once every
// sample was delivered, a *SampleError if a sample failed, ErrClosed after
// Close, ErrNoEpoch before StartEpoch, or ctx's error.
// The caller owns the batch and must Release it.
func (l *Loader) Next(ctx context.Context) (*batch.Batch, error) {
	l.mu.Lock()
	run, closed := l.run, l.closed
	l.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if run == nil {
		return nil, ErrNoEpoch
	}
	if l.cfg.PrefetchEpoch && run.dispatched.Load() && !run.prefetched.Load() {
		l.prefetchNext(run)
	}
	t0 := time.Now()
	if last := l.lastNext.Load(); last > 0 {
		l.st.consumerBusyNS.Add(t0.UnixNano() - last)
	}
	defer func() {
		now := time.Now()
		l.st.consumerWaitNS.Add(int64(now.Sub(t0)))
		l.lastNext.Store(now.UnixNano())
	}()
	var (
		r  result
		ok bool
	)
	// A ready batch wins over an expired ctx: take it without blocking
	// first, so a zero timeout is a reliable poll.
	select {
	case r, ok = <-run.out:
	default:
		select {
		case r, ok = <-run.out:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-run.ctx.Done():
			if l.isClosed() {
				return nil, ErrClosed
			}
			// Superseded by a newer epoch: its batches are not ours.
			return nil, io.EOF
		}
	}
	if !ok {
		if err := run.failure(); err != nil {
			return nil, err
		}
		if run.ctx.Err() != nil && l.isClosed() {
			return nil, ErrClosed
		}
		if l.cfg.PrefetchEpoch {
			// Every sample was delivered, so all were dispatched, even if the
			// dispatcher has not yet recorded it.
			l.prefetchNext(run)
		}
		return nil, io.EOF
	}
	if r.err != nil {
		return nil, r.err
	}
	if l.st.firstBatchNS.Load() < 0 {
		l.st.firstBatchNS.Store(time.Now().UnixNano() - l.st.epochStart.Load())
	}
	l.st.batchesOut.Add(1)
	l.st.samplesOut.Add(int64(r.b.N))
	run.delivered.Add(int64(r.b.N))
	return r.b, nil
}

// Progress reports the current epoch's samples handed to the consumer and
// those settled without delivery: left out under on_error=skip, or in a
// batch that failed under on_error=batch (0, 0 before StartEpoch). The
// host of a fed loader keeps max_inflight samples fed beyond delivered +
// skipped: such a sample frees its in-flight slot without reaching a batch.
// Safe for concurrent use; no allocation.
func (l *Loader) Progress() (delivered, skipped int64) {
	l.mu.Lock()
	run := l.run
	l.mu.Unlock()
	if run == nil {
		return 0, 0
	}
	run.errMu.Lock()
	skipped = int64(len(run.skipped)) + run.dropped
	run.errMu.Unlock()
	return run.delivered.Load(), skipped
}

func (l *Loader) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Close stops every goroutine, waits for them, and frees undelivered
// batches. Batches already returned by Next stay valid. Idempotent.
func (l *Loader) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	run, next := l.run, l.next
	l.run, l.next = nil, nil
	l.mu.Unlock()
	for _, r := range []*epochRun{run, next} {
		if r != nil {
			r.stop()
		}
	}
	if c, ok := l.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// setActive changes the fast lane's width and wakes parked workers.
func (l *Loader) setActive(n int) {
	old := int(l.active.Swap(int32(n)))
	if n != old {
		l.st.workerChanges.Add(1)
	}
	if n > old {
		l.wakeMu.Lock()
		close(l.wake)
		l.wake = make(chan struct{})
		l.wakeMu.Unlock()
	}
}

func (l *Loader) wakeChan() <-chan struct{} {
	l.wakeMu.Lock()
	defer l.wakeMu.Unlock()
	return l.wake
}

// sampleBuf is the pooled memory of one sample in flight: one buffer cut
// into its fields.
type sampleBuf struct {
	mem    []byte
	fields []pipeline.Array
}

// getBuf returns a sample buffer whose fields match the specs (a step may
// have replaced a field's Data or Shape while the buffer was last in use).
func (l *Loader) getBuf() *sampleBuf {
	b := l.pool.Get().(*sampleBuf)
	for k, f := range l.specs {
		end := l.offs[k] + f.Bytes()
		b.fields[k] = pipeline.Array{DType: f.DType, Shape: f.Shape, Data: b.mem[l.offs[k]:end:end]}
	}
	return b
}

func (l *Loader) putBuf(b *sampleBuf) {
	if b != nil {
		l.pool.Put(b)
	}
}

// checkMemory refuses a configuration whose samples in flight could not fit
// in this machine's memory or the process's address-space limit: their
// buffers are Go heap, and Go cannot recover from a failed allocation (it
// aborts the process), so the bound is checked up front. Each epoch run
// holds at most max_inflight samples, and a prefetched next epoch as many
// again; batches (C memory) fail softly with ML_ERR_NO_MEMORY instead.
func checkMemory(cfg config.Config, sampleBytes int) error {
	limit := memoryLimit()
	if limit <= 0 || sampleBytes <= 0 {
		return nil
	}
	runs := int64(1)
	if cfg.PrefetchEpoch {
		runs = 2
	}
	need := runs * int64(cfg.MaxInflight) * int64(sampleBytes)
	if need/int64(sampleBytes) != runs*int64(cfg.MaxInflight) || need > limit {
		return fmt.Errorf("config: option \"max_inflight\": %d samples in flight of %d bytes each (x%d with epoch prefetch) "+
			"would need more than the %d bytes of memory this process may use: lower batch_size, prefetch_batches "+
			"or max_inflight, or make samples smaller", cfg.MaxInflight, sampleBytes, runs, limit)
	}
	return nil
}

// memoryLimit is the smaller of physical memory and RLIMIT_AS, in bytes
// (0: unknown).
func memoryLimit() int64 {
	var limit int64
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		limit = int64(si.Totalram) * int64(si.Unit)
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur < 1<<62 { // RLIM_INFINITY is all ones
		if limit == 0 || int64(rl.Cur) < limit {
			limit = int64(rl.Cur)
		}
	}
	return limit
}
