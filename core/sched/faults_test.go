package sched

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
)

// pathSource is a testSource whose samples have files (pipeline.Pather).
type pathSource struct{ testSource }

func (p *pathSource) Path(index int64) string { return fmt.Sprintf("/data/s%03d.npy", index) }

// TestMismatchedSampleIsSkipped: a sample whose dtype or shape differs
// from the source's specs is rejected before the skip decision, so
// on_error=skip leaves it out (issue 9, case 3: it used to fail every epoch
// at batch time), and on_error=raise names the file, the field and both
// dtypes.
func TestMismatchedSampleIsSkipped(t *testing.T) {
	hook := func(c *pipeline.Ctx, s *pipeline.Sample) error {
		switch s.Index {
		case 9: // a float32 field among int64 ones
			s.Fields[0].DType = config.DTypes["float32"]
			s.Fields[0].Data = make([]byte, 4*4)
		case 13: // two channels where one is declared
			s.Fields[0].Shape = []int64{2, 4}
			s.Fields[0].Data = make([]byte, 2*4*8)
		}
		return nil
	}
	for _, inOrder := range []bool{true, false} {
		t.Run(fmt.Sprintf("in_order=%v", inOrder), func(t *testing.T) {
			src := &pathSource{testSource{n: 30, shape: []int64{4}, hook: hook}}
			cfg := cfgFor(t, fmt.Sprintf(`{"batch_size": 4, "in_order": %v, "on_error": "skip", "workers": 2}`, inOrder))
			var alloc batch.GoAllocator
			l, err := New(cfg, src, &alloc)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for epoch := int64(0); epoch < 2; epoch++ {
				rows, bs := drain(t, l, epoch)
				releaseAll(bs)
				var got []int64
				for _, r := range rows {
					got = append(got, r...)
				}
				slices.Sort(got)
				var want []int64
				for i := int64(0); i < 30; i++ {
					if i != 9 && i != 13 {
						want = append(want, i)
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("epoch %d: delivered %v, want every index but 9 and 13", epoch, got)
				}
				st := l.Stats()
				skipped := slices.Clone(st.EpochSkipped)
				slices.Sort(skipped)
				if !slices.Equal(skipped, []int64{9, 13}) {
					t.Fatalf("epoch %d: skipped %v, want [9 13]", epoch, st.EpochSkipped)
				}
			}
		})
	}
	t.Run("raise", func(t *testing.T) {
		src := &pathSource{testSource{n: 12, shape: []int64{4}, hook: hook}}
		l, _ := New(cfgFor(t, `{"batch_size": 4, "in_order": true}`), src, &batch.GoAllocator{})
		defer l.Close()
		l.StartEpoch(0)
		for {
			b, err := l.Next(context.Background())
			if err == io.EOF {
				t.Fatal("epoch ended without the dtype error")
			}
			if err != nil {
				var se *SampleError
				msg := err.Error()
				if !errors.As(err, &se) || se.Index != 9 || se.Path != "/data/s009.npy" ||
					!strings.Contains(msg, "/data/s009.npy") || !strings.Contains(msg, "dtype float32") ||
					!strings.Contains(msg, "dtype int64") || !strings.Contains(msg, `field "data"`) {
					t.Fatalf("got %v, want a SampleError for index 9 naming its file, the field and both dtypes", err)
				}
				return
			}
			b.Release()
		}
	})
}

// blockingSource's Load for index block never returns until release is
// closed, and ignores cancellation: a read stuck in the kernel.
type blockingSource struct {
	testSource
	block   int64
	release chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (b *blockingSource) Load(c *pipeline.Ctx, index int64, s *pipeline.Sample) error {
	if index == b.block {
		b.once.Do(func() { close(b.entered) })
		<-b.release
	}
	return b.testSource.Load(c, index, s)
}

// TestStopIsBoundedWhenAStepNeverReturns: Close and the next StartEpoch
// return although a step never returns (issue 9, case 2: they blocked
// forever); the stuck goroutine is abandoned, counted, and cleans up after
// itself when the step finally returns.
func TestStopIsBoundedWhenAStepNeverReturns(t *testing.T) {
	before := LiveGoroutines()
	src := &blockingSource{testSource: testSource{n: 40, shape: []int64{2}}, block: 5,
		release: make(chan struct{}), entered: make(chan struct{})}
	var alloc batch.GoAllocator
	l, err := New(cfgFor(t, `{"batch_size": 4, "in_order": true, "workers": 2, "adaptive": false, "stop_timeout_ms": 50}`), src, &alloc)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.StartEpoch(0); err != nil {
		t.Fatal(err)
	}
	<-src.entered
	// The first batch arrives; the second waits on index 5 forever.
	b, err := l.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	if _, err := l.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next: got %v, want the caller's deadline", err)
	}
	cancel()

	done := make(chan error, 1)
	go func() {
		// A new epoch stops the stuck one; then Close stops the new one.
		if err := l.StartEpoch(1); err != nil {
			done <- err
			return
		}
		done <- l.Close()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("StartEpoch/Close blocked on a step that never returns")
	}
	if n := l.Stats().AbandonedStops; n < 1 {
		t.Fatalf("abandoned_stops = %d, want >= 1", n)
	}
	if LiveGoroutines() == before {
		t.Fatal("the stuck goroutine is not counted as live")
	}
	close(src.release) // the read returns at last
	waitFor(t, func() bool { return LiveGoroutines() == before && alloc.Live() == 0 },
		"goroutines and blocks of the abandoned epoch to be released")
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHugeSizesDoNotAllocateUpFront: a batch_size and prefetch at their
// bounds over a short epoch allocate for the epoch, not for the bounds
// (issue 9, case 1: 2^40 aborted the process in makechan).
func TestHugeSizesDoNotAllocateUpFront(t *testing.T) {
	src := &testSource{n: 10, shape: []int64{2}}
	js := fmt.Sprintf(`{"batch_size": %d, "prefetch_batches": %d}`, config.MaxBatchSize, config.MaxPrefetchBatches)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	l, err := New(cfgFor(t, js), src, &batch.GoAllocator{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, bs := drain(t, l, 0)
	releaseAll(bs)
	runtime.ReadMemStats(&ms1)
	if len(rows) != 1 || len(rows[0]) != 10 {
		t.Fatalf("got batches %v, want one batch of the 10 samples", rows)
	}
	if grew := ms1.TotalAlloc - ms0.TotalAlloc; grew > 16<<20 {
		t.Fatalf("an epoch of 10 samples allocated %d bytes", grew)
	}
}

// faultSource injects failures at random points of an epoch: a Load or a
// step fails (an allocation or read failure), or waits a moment. Which
// samples fail depends on the run's seed, not on the sample, so retries
// across epochs see different faults.
type faultSource struct {
	testSource
	rng   func() float64
	pFail float64
}

var errInjectedRead = errors.New("injected read failure")

func (f *faultSource) Load(c *pipeline.Ctx, index int64, s *pipeline.Sample) error {
	switch u := f.rng(); {
	case u < f.pFail/2:
		return fmt.Errorf("reading sample %d: %w", index, errInjectedRead)
	case u < f.pFail:
		return fmt.Errorf("decode buffer for sample %d: %w", index, batch.ErrNoMemory)
	case u < f.pFail+0.05:
		select { // a slow read that honours cancellation
		case <-time.After(time.Duration(1+int(u*1000)%3) * time.Millisecond):
		case <-c.Done():
			return errors.New("cancelled")
		}
	}
	return f.testSource.Load(c, index, s)
}

// faultAllocator fails a share of its allocations.
type faultAllocator struct {
	batch.GoAllocator
	rng   func() float64
	pFail float64
	fails atomic.Int64
}

func (a *faultAllocator) Alloc(size int) (batch.Block, error) {
	if a.rng() < a.pFail {
		a.fails.Add(1)
		return nil, fmt.Errorf("injected: %w", batch.ErrNoMemory)
	}
	return a.GoAllocator.Alloc(size)
}

// lockedRNG is a seeded source of floats safe for concurrent use.
func lockedRNG(seed uint64) func() float64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

// TestFaultInjection makes reads and allocations fail at random points of
// epochs, under both error policies and both orders, and sometimes closes
// the loader mid-epoch. Whatever is delivered is delivered once, with the
// right content; under on_error=skip an epoch that ends normally delivers
// or reports every index exactly once; an epoch that ends in an error ends
// with a typed error (a SampleError, a BudgetError or batch.ErrNoMemory);
// Close leaves no goroutine and no block behind.
func TestFaultInjection(t *testing.T) {
	before := LiveGoroutines()
	trials := 48
	if testing.Short() {
		trials = 12
	}
	for trial := 0; trial < trials; trial++ {
		seed := uint64(trial + 1)
		rng := lockedRNG(seed)
		pick := rand.New(rand.NewPCG(seed, 7))
		n := int64(20 + pick.IntN(80))
		bs := 1 + pick.IntN(9)
		inOrder := pick.IntN(2) == 0
		policy := []string{"raise", "skip"}[pick.IntN(2)]
		budget := []int{-1, 3}[pick.IntN(2)]
		pRead := []float64{0, 0.02, 0.1}[pick.IntN(3)]
		pAlloc := []float64{0, 0, 0.05}[pick.IntN(3)]
		closeAt := -1
		if pick.IntN(4) == 0 {
			closeAt = pick.IntN(5)
		}
		name := fmt.Sprintf("trial%d/n=%d/b=%d/in_order=%v/%s/budget=%d/read=%.2f/alloc=%.2f/closeAt=%d",
			trial, n, bs, inOrder, policy, budget, pRead, pAlloc, closeAt)
		t.Run(name, func(t *testing.T) {
			src := &faultSource{testSource: testSource{n: n, shape: []int64{3}}, rng: rng, pFail: pRead}
			alloc := &faultAllocator{rng: rng, pFail: pAlloc}
			cfg := cfgFor(t, fmt.Sprintf(`{"batch_size": %d, "in_order": %v, "on_error": %q, "max_skipped": %d,
				"workers": %d, "shuffle": true, "seed": %d, "timeout_ms": %v}`,
				bs, inOrder, policy, budget, 1+pick.IntN(4), seed, []float64{0, 0.5}[pick.IntN(2)]))
			l, err := New(cfg, src, alloc)
			if err != nil {
				t.Fatal(err)
			}
			for epoch := int64(0); epoch < 2; epoch++ {
				if err := l.StartEpoch(epoch); err != nil {
					t.Fatal(err)
				}
				seen := map[int64]bool{}
				batches := 0
				var end error
				for {
					if batches == closeAt {
						l.Close()
					}
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					b, err := l.Next(ctx)
					cancel()
					if err != nil {
						end = err
						break
					}
					batches++
					for row, idx := range b.Indices {
						if seen[idx] {
							t.Fatalf("index %d delivered twice", idx)
						}
						if idx < 0 || idx >= n {
							t.Fatalf("index %d outside the dataset", idx)
						}
						seen[idx] = true
						data := b.Fields[0].Row(row)
						for k := 8; k+8 <= len(data); k += 8 { // byte 0 carries the noise step
							var v int64
							for j := 0; j < 8; j++ {
								v |= int64(data[k+j]) << (8 * j)
							}
							if v != idx {
								t.Fatalf("row of index %d holds %d", idx, v)
							}
						}
					}
					b.Release()
				}
				skipped := l.Stats().EpochSkipped
				for _, s := range skipped {
					if seen[s] {
						t.Fatalf("index %d both delivered and skipped", s)
					}
				}
				var se *SampleError
				var be *BudgetError
				switch {
				case errors.Is(end, ErrClosed):
					l.Close()
					if alloc.Live() != 0 {
						t.Fatalf("%d blocks live after Close", alloc.Live())
					}
					return
				case end == io.EOF:
					if policy == "raise" && len(skipped) > 0 {
						t.Fatalf("skipped %v under on_error=raise", skipped)
					}
					if got := len(seen) + len(skipped); int64(got) != n {
						t.Fatalf("epoch %d ended with %d delivered + %d skipped of %d", epoch, len(seen), len(skipped), n)
					}
				case errors.As(end, &be):
					if policy != "skip" || budget < 0 || len(skipped) != budget {
						t.Fatalf("budget error %v with policy %s, budget %d, %d skipped", end, policy, budget, len(skipped))
					}
				case errors.As(end, &se):
					if policy != "raise" {
						t.Fatalf("sample error %v under on_error=skip", end)
					}
					if !errors.Is(end, errInjectedRead) && !errors.Is(end, batch.ErrNoMemory) {
						t.Fatalf("sample error %v does not wrap the injected failure", end)
					}
				case errors.Is(end, batch.ErrNoMemory):
					if alloc.fails.Load() == 0 {
						t.Fatalf("out of memory %v with no injected allocation failure", end)
					}
				default:
					t.Fatalf("epoch ended with %v (%T)", end, end)
				}
			}
			l.Close()
			if alloc.Live() != 0 {
				t.Fatalf("%d blocks live after Close", alloc.Live())
			}
		})
	}
	waitFor(t, func() bool { return LiveGoroutines() == before }, "every goroutine to end")
}

// TestInflightMemoryIsBoundedUpFront: samples in flight that could not fit
// in memory are refused when the loader is made, naming max_inflight,
// instead of aborting the process when the buffers are allocated (Go cannot
// recover from a failed allocation).
func TestInflightMemoryIsBoundedUpFront(t *testing.T) {
	limit := memoryLimit()
	if limit <= 0 {
		t.Skip("no memory limit readable here (sysinfo)")
	}
	// Samples of 1 GiB; enough in flight to pass any machine's memory.
	src := &testSource{n: 4, shape: []int64{1 << 27}} // int64: 1 GiB
	inflight := int(limit>>30) + 8
	_, err := New(cfgFor(t, fmt.Sprintf(`{"batch_size": 1, "max_inflight": %d}`, inflight)), src, &batch.GoAllocator{})
	if err == nil || !strings.Contains(err.Error(), "max_inflight") {
		t.Fatalf("got %v, want an error naming max_inflight", err)
	}
	// A modest configuration of the same samples is accepted.
	l, err := New(cfgFor(t, `{"batch_size": 1, "max_inflight": 1, "prefetch_epoch": false}`), src, &batch.GoAllocator{})
	if err != nil {
		t.Fatalf("one sample of 1 GiB in flight refused: %v", err)
	}
	l.Close()
}

// TestManySkipsDoNotStallTheEpoch: a skipped sample gives back its
// in-flight token. It kept it, so an epoch with more skips than
// max_inflight stalled for ever (found by TestFaultInjection).
func TestManySkipsDoNotStallTheEpoch(t *testing.T) {
	for _, inOrder := range []bool{true, false} {
		src := &testSource{n: 100, shape: []int64{2}, hook: func(c *pipeline.Ctx, s *pipeline.Sample) error {
			if s.Index%2 == 1 {
				return errInjectedRead
			}
			return nil
		}}
		l, err := New(cfgFor(t, fmt.Sprintf(`{"batch_size": 2, "max_inflight": 8, "in_order": %v, "on_error": "skip"}`, inOrder)), src, &batch.GoAllocator{})
		if err != nil {
			t.Fatal(err)
		}
		l.StartEpoch(0)
		got := 0
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			b, err := l.Next(ctx)
			cancel()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("in_order=%v: after %d samples: %v", inOrder, got, err)
			}
			got += b.N
			b.Release()
		}
		if skipped := len(l.Stats().EpochSkipped); got != 50 || skipped != 50 {
			t.Fatalf("in_order=%v: %d delivered, %d skipped, want 50 and 50", inOrder, got, skipped)
		}
		l.Close()
	}
}
