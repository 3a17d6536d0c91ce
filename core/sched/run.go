package sched

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/pipeline"
	"github.com/minatoloader/minatoloader/core/scale"
)

// item is one sample in flight through an epoch.
type item struct {
	pos     int   // position in the epoch's order
	index   int64 // the sample index at pos
	smp     pipeline.Sample
	buf     *sampleBuf
	next    int           // index of the next step to run
	elapsed time.Duration // processing time so far (both lanes)
	slow    bool
	err     error
	ready   int64 // batches built when a slow sample became ready
}

type result struct {
	b   *batch.Batch
	err error
}

// epochRun is one epoch's pipeline:
//
//	dispatch --work--> fast workers --fast--------------------> builder --out--> Next
//	                        |                                    ^
//	                        +--temp--> slow workers --slow-------+
//
// tokens bounds the samples dispatched and not yet in an emitted batch to
// cfg.MaxInflight, so fast, temp and slow (capacity MaxInflight) never
// block a sender; out holds at most cfg.PrefetchBatches batches.
type epochRun struct {
	l      *Loader
	epoch  int64
	feed   *feed
	ctx    context.Context // ends when the run is stopped
	cancel context.CancelFunc
	// wctx ends when the run is stopped or the builder is done; the
	// dispatcher, workers and scaler watch it.
	wctx    context.Context
	wcancel context.CancelFunc

	tokens chan struct{}
	work   chan *item
	temp   chan *item
	fast   chan *item
	slow   chan *item
	out    chan result

	fastWG sync.WaitGroup // fast workers; temp closes after them
	wg     sync.WaitGroup // every goroutine of the run

	err      error
	errMu    sync.Mutex // guards err, skipped, lastSkip
	skipped  []int64    // indices left out under on_error=skip
	dropped  int64      // samples of batches that failed under on_error=batch
	lastSkip string

	delivered  atomic.Int64 // samples in batches handed to the consumer
	dispatched atomic.Bool  // every sample of the epoch was dispatched
	prefetched atomic.Bool  // the next epoch was started
}

func (l *Loader) newRun(epoch int64, f *feed) *epochRun {
	ctx, cancel := context.WithCancel(context.Background())
	wctx, wcancel := context.WithCancel(ctx)
	// The lanes' queues hold at most the samples in flight: MaxInflight,
	// or fewer when the whole order is known and shorter (their buffers
	// are allocated here, 8 bytes a slot).
	c := l.cfg.MaxInflight
	if n, closed := f.count(); closed {
		c = min(c, max(n, 1))
	}
	return &epochRun{
		l: l, epoch: epoch, feed: f,
		ctx: ctx, cancel: cancel, wctx: wctx, wcancel: wcancel,
		tokens: make(chan struct{}, c),
		work:   make(chan *item),
		temp:   make(chan *item, c),
		fast:   make(chan *item, c),
		slow:   make(chan *item, c),
		out:    make(chan result, l.cfg.PrefetchBatches),
	}
}

func (r *epochRun) goroutine(f func()) {
	r.wg.Add(1)
	liveGoroutines.Add(1)
	go func() {
		defer func() {
			liveGoroutines.Add(-1)
			r.wg.Done()
		}()
		f()
	}()
}

// startWorkers starts the dispatcher, the lanes and the builder.
func (r *epochRun) startWorkers() {
	l := r.l
	r.goroutine(r.dispatch)
	// Fast workers count in both groups: they leave the fast lane when the
	// dispatcher is done, then help the slow lane until it drains.
	slowWG := &sync.WaitGroup{}
	for id := 0; id < l.cfg.MaxWorkers; id++ {
		r.fastWG.Add(1)
		slowWG.Add(1)
		r.goroutine(func() { defer slowWG.Done(); r.fastWorker(id) })
	}
	r.goroutine(func() { r.fastWG.Wait(); close(r.temp) })
	for i := 0; i < l.cfg.SlowWorkers; i++ {
		slowWG.Add(1)
		r.goroutine(func() { defer slowWG.Done(); r.slowWorker() })
	}
	r.goroutine(func() { slowWG.Wait(); close(r.slow) })
	if l.cfg.InOrder {
		r.goroutine(r.buildInOrder)
	} else {
		r.goroutine(r.buildAnyOrder)
	}
}

// startScaler starts the worker-count controller (when the run becomes the
// current epoch; a prefetched run has none).
func (r *epochRun) startScaler() {
	if r.l.cfg.Adaptive && r.l.cfg.MaxWorkers > 1 {
		r.goroutine(r.scaler)
	}
}

// stop cancels the run, waits for its goroutines and frees what they left.
// The wait is bounded by the loader's stop grace: a goroutine inside a step
// that ignores cancellation (a read that never returns: a stuck network
// file system) is abandoned, counted in the stats, and left to finish on
// its own; what it and the rest of the run leave is freed when the last of
// them returns. stop never blocks longer than the grace.
func (r *epochRun) stop() {
	r.cancel()
	done := make(chan struct{})
	liveGoroutines.Add(1)
	go func() {
		r.wg.Wait()
		liveGoroutines.Add(-1) // before done: once stop returns, the count is exact
		close(done)
	}()
	grace := r.l.stopGrace
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		r.release()
	case <-t.C:
		r.l.st.abandoned.Add(1)
		liveGoroutines.Add(1)
		go func() {
			defer liveGoroutines.Add(-1)
			<-done
			r.release()
		}()
	}
}

// release frees what a stopped run's goroutines left in its queues.
func (r *epochRun) release() {
	r.drainQueues()
	for {
		select {
		case res, ok := <-r.out:
			if !ok {
				return
			}
			if res.b != nil {
				r.dropBatch(res.b)
				res.b.Release()
			}
		default:
			return
		}
	}
}

func (r *epochRun) fail(err error) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *epochRun) failure() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

func (r *epochRun) dispatch() {
	defer close(r.work)
	for pos := 0; ; pos++ {
		index, ok := r.feed.index(pos, r.wctx.Done())
		if !ok {
			break
		}
		select {
		case r.tokens <- struct{}{}:
		case <-r.wctx.Done():
			return
		}
		it := &item{pos: pos, index: index}
		select {
		case r.work <- it:
		case <-r.wctx.Done():
			return
		}
	}
	if r.wctx.Err() == nil {
		r.dispatched.Store(true)
	}
}

// fastWorker runs samples until their elapsed time passes the threshold;
// then the sample and its next step go to the slow lane. When no new sample
// is waiting it resumes a timed-out one rather than idle (work-conserving:
// a slow sample never takes a fast worker from a waiting fast sample).
// Workers whose id is at or above the fast lane's width park between
// samples. Once the dispatcher is done, the worker joins the slow lane.
func (r *epochRun) fastWorker(id int) {
	l := r.l
	var ctx pipeline.Ctx
	ctx.SetDone(r.wctx.Done())
	inFast := true
	leaveFast := func() {
		if inFast {
			inFast = false
			r.fastWG.Done()
		}
	}
	defer leaveFast()
	for {
		for int32(id) >= l.active.Load() {
			wake := l.wakeChan()
			if int32(id) < l.active.Load() {
				break
			}
			select {
			case <-wake:
			case <-r.wctx.Done():
				return
			}
		}
		var it *item
		select {
		case it = <-r.work:
		default:
			select {
			case it = <-r.work:
			case s := <-r.temp:
				l.st.stolen.Add(1)
				r.resume(&ctx, s)
				continue
			case <-r.wctx.Done():
				return
			}
		}
		if it == nil { // dispatcher done
			leaveFast()
			r.slowWorker()
			return
		}
		it.buf = l.getBuf()
		it.smp.Fields = it.buf.fields
		it.smp.Index = it.index
		it.smp.Resume = nil
		it.smp.State = nil
		timeout, learned := l.est.Threshold()
		start := time.Now()
		var deadline time.Time
		if learned {
			deadline = start.Add(timeout)
		}
		for it.next < len(l.steps) {
			ctx.Reset(l.cfg.Seed, r.epoch, it.smp.Index, it.next, deadline)
			err := l.steps[it.next].Fn(&ctx, &it.smp)
			if errors.Is(err, pipeline.ErrTimedOut) {
				l.st.preempted.Add(1)
				break // re-run this step from its start on the slow lane
			}
			if err != nil {
				it.err = l.sampleError(it.smp.Index, l.steps[it.next].Name, err)
				it.next = len(l.steps)
				break
			}
			it.next++
			it.smp.Resume = nil
			if learned && it.next < len(l.steps) && time.Since(start) > timeout {
				break
			}
		}
		it.elapsed = time.Since(start)
		if it.next < len(l.steps) {
			it.slow = true
			l.st.toSlow.Add(1)
			r.temp <- it // never blocks: capacity MaxInflight
			continue
		}
		if it.err == nil {
			l.est.Observe(it.elapsed, false)
			l.st.fastDone.Add(1)
			r.check(it)
		}
		r.fast <- it
	}
}

// slowWorker resumes timed-out samples until the temp queue is closed.
func (r *epochRun) slowWorker() {
	var ctx pipeline.Ctx
	ctx.SetDone(r.wctx.Done())
	for it := range r.temp {
		r.resume(&ctx, it)
	}
}

// resume runs a timed-out sample's remaining steps, without a deadline, and
// hands it to the builder.
func (r *epochRun) resume(ctx *pipeline.Ctx, it *item) {
	l := r.l
	if r.wctx.Err() != nil {
		r.discard(it) // a remote source frees what it holds for the sample
		return
	}
	start := time.Now()
	for it.next < len(l.steps) {
		ctx.Reset(l.cfg.Seed, r.epoch, it.smp.Index, it.next, time.Time{})
		if err := l.steps[it.next].Fn(ctx, &it.smp); err != nil {
			it.err = l.sampleError(it.smp.Index, l.steps[it.next].Name, err)
			break
		}
		it.next++
		it.smp.Resume = nil
	}
	it.elapsed += time.Since(start)
	if it.err == nil {
		l.est.Observe(it.elapsed, true)
		l.st.slowDone.Add(1)
		r.check(it)
	}
	r.slow <- it // never blocks: capacity MaxInflight
}

// scaler adapts the fast lane's width every ScaleIntervalMS with
// formulas (1)-(2): queue occupancy is the batch queue's moving average.
func (r *epochRun) scaler() {
	l := r.l
	p := scale.Params{Alpha: l.cfg.Alpha, Beta: l.cfg.Beta, Theta: l.cfg.Theta, Min: 1, Max: l.cfg.MaxWorkers}
	tick := time.NewTicker(time.Duration(l.cfg.ScaleIntervalMS) * time.Millisecond)
	defer tick.Stop()
	var meter scale.CPUMeter
	meter.Read()
	q := scale.EWMA{Weight: 0.3}
	sample := time.NewTicker(time.Duration(max(l.cfg.ScaleIntervalMS/8, 1)) * time.Millisecond)
	defer sample.Stop()
	for {
		select {
		case <-r.wctx.Done():
			return
		case <-sample.C:
			q.Add(float64(len(r.out)))
		case <-tick.C:
			cpu := meter.Read()
			l.st.cpuMilli.Store(int64(cpu * 1000))
			d := scale.Delta(p, q.Add(float64(len(r.out))), float64(cap(r.out)), cpu)
			l.setActive(scale.Next(p, int(l.active.Load()), d))
		}
	}
}
