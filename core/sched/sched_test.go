package sched

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
	"github.com/minatoloader/minatoloader/core/sampler"
)

// testSource is a Source whose steps the tests control per index.
type testSource struct {
	n     int64
	shape []int64
	// hook, when set, runs as step "hook" for every sample.
	hook func(c *pipeline.Ctx, s *pipeline.Sample) error
}

func (t *testSource) Len() int64 { return t.n }
func (t *testSource) Fields() []batch.FieldSpec {
	i64 := config.DTypes["int64"]
	return []batch.FieldSpec{{Name: "data", DType: i64, Shape: t.shape}, {Name: "label", DType: i64}}
}
func (t *testSource) Load(c *pipeline.Ctx, index int64, s *pipeline.Sample) error {
	d := s.Fields[0].Data
	for i := 0; i+8 <= len(d); i += 8 {
		putInt64(d[i:], index)
	}
	putInt64(s.Fields[1].Data, index%7)
	return nil
}
func (t *testSource) Steps() []pipeline.Step {
	noise := pipeline.Step{Name: "noise", Fn: func(c *pipeline.Ctx, s *pipeline.Sample) error {
		s.Fields[0].Data[0] ^= byte(c.Rand.Uint64())
		return nil
	}}
	if t.hook == nil {
		return []pipeline.Step{noise}
	}
	return []pipeline.Step{{Name: "hook", Fn: t.hook}, noise}
}

func putInt64(b []byte, v int64) {
	for k := 0; k < 8; k++ {
		b[k] = byte(v >> (8 * k))
	}
}

func cfgFor(t testing.TB, js string) config.Config {
	t.Helper()
	c, err := config.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// drain runs one epoch and returns its batches' indices, in batch order.
func drain(t testing.TB, l *Loader, epoch int64) ([][]int64, []*batch.Batch) {
	t.Helper()
	if err := l.StartEpoch(epoch); err != nil {
		t.Fatal(err)
	}
	var got [][]int64
	var bs []*batch.Batch
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		b, err := l.Next(ctx)
		if err == io.EOF {
			return got, bs
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, slices.Clone(b.Indices))
		bs = append(bs, b)
	}
}

func releaseAll(bs []*batch.Batch) {
	for _, b := range bs {
		b.Release()
	}
}

// TestExactlyOnceProperty runs many configurations, on the synthetic
// source with heavy samples and learned or fixed thresholds, and checks
// that every index of the epoch arrives exactly once.
func TestExactlyOnceProperty(t *testing.T) {
	type tc struct {
		seed                int64
		n, bs, workers      int
		dropLast, inOrder   bool
		timeout             string
		heavyEvery          int
		heavyFrac           float64
		costKind            string
		world, rank, maxInf int
	}
	var cases []tc
	rng := sampler.NewRNG(42)
	for i := 0; i < 48; i++ {
		c := tc{
			seed:     int64(rng.Below(1000)),
			n:        int(rng.Below(300)),
			bs:       1 + int(rng.Below(33)),
			workers:  1 + int(rng.Below(6)),
			dropLast: rng.Below(2) == 0,
			inOrder:  rng.Below(2) == 0,
			timeout:  []string{`"timeout_ms": 0, "warmup_samples": 8`, `"timeout_ms": 0.05`, `"timeout_ms": 1000`}[rng.Below(3)],
			costKind: []string{"busy", "sleep"}[rng.Below(2)],
			world:    1 + int(rng.Below(3)),
		}
		c.rank = int(rng.Below(uint64(c.world)))
		if rng.Below(2) == 0 {
			c.heavyEvery = 1 + int(rng.Below(10))
		} else {
			c.heavyFrac = rng.Float64() * 0.3
		}
		if rng.Below(3) == 0 {
			c.maxInf = c.bs + int(rng.Below(8))
		}
		cases = append(cases, c)
	}
	for i, c := range cases {
		name := fmt.Sprintf("%d/%+v", i, c)
		js := fmt.Sprintf(`{"batch_size": %d, "drop_last": %v, "shuffle": true, "seed": %d, "in_order": %v,
			"workers": %d, "slow_workers": 2, "adaptive": %v, "scale_interval_ms": 5, %s, "max_inflight": %d,
			"world_size": %d, "rank": %d,
			"dataset": {"length": %d, "shape": [3], "dtype": "float32", "light_cost_us": 20, "heavy_cost_us": 400,
			"heavy_every": %d, "heavy_fraction": %v, "cost_kind": %q}}`,
			c.bs, c.dropLast, c.seed, c.inOrder, c.workers, i%2 == 0, c.timeout, c.maxInf, c.world, c.rank,
			c.n, c.heavyEvery, c.heavyFrac, c.costKind)
		cfg := cfgFor(t, js)
		var alloc batch.GoAllocator
		l, err := Open(cfg, &alloc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wantBatches, wantSamples := l.Len()
		for epoch := int64(0); epoch < 2; epoch++ {
			got, bs := drain(t, l, epoch)
			order, _ := sampler.Indices(sampler.Options{Length: int64(c.n), Shuffle: true, Seed: c.seed, Rank: c.rank, WorldSize: c.world}, epoch)
			order = order[:wantSamples]
			var flat []int64
			for bi, b := range got {
				if b := len(b); (bi < len(got)-1 || c.dropLast) && b != c.bs {
					t.Fatalf("%s: batch %d has %d rows, want %d", name, bi, b, c.bs)
				}
				flat = append(flat, b...)
			}
			if int64(len(got)) != wantBatches {
				t.Fatalf("%s: %d batches, want %d", name, len(got), wantBatches)
			}
			if c.inOrder {
				if !slices.Equal(flat, order) {
					t.Fatalf("%s: in_order delivered %v, want %v", name, flat, order)
				}
			}
			slices.Sort(flat)
			slices.Sort(order)
			if !slices.Equal(flat, order) {
				t.Fatalf("%s epoch %d: delivered multiset differs from the sampler's (%d vs %d)", name, epoch, len(flat), len(order))
			}
			releaseAll(bs)
		}
		l.Close()
		if alloc.Live() != 0 {
			t.Fatalf("%s: %d blocks live after close", name, alloc.Live())
		}
	}
	if n := LiveGoroutines(); n != 0 {
		t.Fatalf("%d loader goroutines still running", n)
	}
}

// TestSameBytesOnBothLanes runs one epoch three ways: no timeout (all
// fast), a timeout every sample passes after its first step (all slow), and
// one that preempts the heavy step mid-way (re-run on the slow lane). The
// bytes of every index must be identical.
func TestSameBytesOnBothLanes(t *testing.T) {
	rows := func(timeout string) (map[int64][]byte, Stats) {
		cfg := cfgFor(t, `{"batch_size": 5, "shuffle": true, "seed": 9, "workers": 3, "slow_workers": 4, "adaptive": false, "prefetch_epoch": false, `+timeout+`,
			"dataset": {"length": 60, "shape": [4, 2], "dtype": "float32", "light_cost_us": 50, "heavy_cost_us": 50000,
			"heavy_every": 6, "cost_kind": "sleep"}}`)
		var alloc batch.GoAllocator
		l, err := Open(cfg, &alloc)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		_, bs := drain(t, l, 3)
		m := map[int64][]byte{}
		for _, b := range bs {
			for i := 0; i < b.N; i++ {
				m[b.Indices[i]] = slices.Clone(b.Fields[0].Row(i))
			}
		}
		releaseAll(bs)
		return m, l.Stats()
	}
	fast, fs := rows(`"timeout_ms": 100000`)
	slow, ss := rows(`"timeout_ms": 0.000001`)
	pre, ps := rows(`"timeout_ms": 5`)
	if fs.SlowSamples != 0 {
		t.Fatalf("fast run: %d slow samples, want 0", fs.SlowSamples)
	}
	if ss.SlowSamples != 60 {
		t.Fatalf("all-slow run: %d slow samples, want 60", ss.SlowSamples)
	}
	if ps.Preempted == 0 || ps.SlowSamples < 10 {
		t.Fatalf("preempting run: %d preempted steps, %d slow samples; want the 10 heavy samples re-run on the slow lane", ps.Preempted, ps.SlowSamples)
	}
	for i := int64(0); i < 60; i++ {
		if !bytes.Equal(fast[i], slow[i]) || !bytes.Equal(fast[i], pre[i]) {
			t.Fatalf("index %d: fast lane %x, slow lane %x, preempted %x", i, fast[i], slow[i], pre[i])
		}
	}
}

// TestSlowSampleDoesNotBlockBatches holds one sample on the slow lane
// until several later batches were delivered, then checks it arrived, in
// a later batch, exactly once.
func TestSlowSampleDoesNotBlockBatches(t *testing.T) {
	for _, lane := range []string{"slow lane (preempted)", "fast worker (not preemptible)"} {
		t.Run(lane, func(t *testing.T) {
			const victim, held = int64(3), 5
			gate := make(chan struct{})
			var once sync.Once
			src := &testSource{n: 200, shape: []int64{2}, hook: func(c *pipeline.Ctx, s *pipeline.Sample) error {
				if s.Index != victim {
					return nil
				}
				if lane == "slow lane (preempted)" {
					if _, fast := c.Deadline(); fast {
						for !c.Expired() {
							time.Sleep(100 * time.Microsecond)
						}
						return pipeline.ErrTimedOut
					}
				}
				<-gate
				return nil
			}}
			cfg := cfgFor(t, `{"batch_size": 4, "workers": 2, "adaptive": false, "timeout_ms": 1, "in_order": false, "prefetch_epoch": false}`)
			var alloc batch.GoAllocator
			l, err := New(cfg, src, &alloc)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.StartEpoch(0); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			seen := map[int64]int{}
			victimBatch := int64(-1)
			for seq := int64(0); ; seq++ {
				b, err := l.Next(ctx)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if b.Seq != seq {
					t.Fatalf("batch seq %d, want %d", b.Seq, seq)
				}
				for _, i := range b.Indices {
					seen[i]++
					if i == victim {
						victimBatch = seq
					}
				}
				b.Release()
				if seq == held {
					once.Do(func() { close(gate) })
				}
			}
			once.Do(func() { close(gate) })
			if victimBatch <= held {
				t.Fatalf("held sample came in batch %d, want after batch %d", victimBatch, held)
			}
			if len(seen) != 200 {
				t.Fatalf("%d distinct indices, want 200", len(seen))
			}
			for i, n := range seen {
				if n != 1 {
					t.Fatalf("index %d delivered %d times", i, n)
				}
			}
			if lane == "slow lane (preempted)" && l.Stats().SlowSamples < 1 {
				t.Fatal("victim did not go through the slow lane")
			}
		})
	}
}

// TestSlowSampleCannotStarve checks that a finished slow sample is placed
// within slow_max_age batches of becoming ready, even though fast samples
// are always ready. Order, not time: the slow lane records how many batches
// had been built when the sample finished.
func TestSlowSampleCannotStarve(t *testing.T) {
	const maxAge = 1
	var l *Loader
	var mu sync.Mutex
	builtWhenReady := map[int64]int64{}
	src := &testSource{n: 400, shape: []int64{1}, hook: func(c *pipeline.Ctx, s *pipeline.Sample) error {
		if s.Index%10 != 0 {
			return nil
		}
		if _, fast := c.Deadline(); fast {
			return pipeline.ErrTimedOut
		}
		mu.Lock()
		builtWhenReady[s.Index] = l.st.batchesBuilt.Load()
		mu.Unlock()
		return nil
	}}
	cfg := cfgFor(t, `{"batch_size": 8, "workers": 2, "adaptive": false, "timeout_ms": 1000, "slow_max_age": 1, "max_inflight": 64, "in_order": false, "prefetch_epoch": false}`)
	var alloc batch.GoAllocator
	l, _ = New(cfg, src, &alloc)
	defer l.Close()
	got, bs := drain(t, l, 0)
	releaseAll(bs)
	seqOf := map[int64]int64{}
	n := 0
	for seq, b := range got {
		for _, i := range b {
			seqOf[i] = int64(seq)
			n++
		}
	}
	if n != 400 || len(seqOf) != 400 {
		t.Fatalf("%d samples (%d distinct), want 400", n, len(seqOf))
	}
	if len(builtWhenReady) != 40 {
		t.Fatalf("%d samples took the slow lane, want 40", len(builtWhenReady))
	}
	// Ready while batch r+1 at the latest was being built (r = batches built
	// then); aged after maxAge more batches.
	for i, r := range builtWhenReady {
		if seqOf[i] > r+1+maxAge {
			t.Errorf("slow sample %d ready after %d batches, placed in batch %d (bound %d)", i, r, seqOf[i], r+1+maxAge)
		}
	}
}

func TestSampleErrorNamesIndex(t *testing.T) {
	for _, inOrder := range []bool{true, false} {
		cfg := cfgFor(t, fmt.Sprintf(`{"batch_size": 4, "in_order": %v, "dataset": {"length": 50, "fail_indices": [17]}}`, inOrder))
		var alloc batch.GoAllocator
		l, err := Open(cfg, &alloc)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.StartEpoch(0); err != nil {
			t.Fatal(err)
		}
		var serr *SampleError
		for {
			b, err := l.Next(context.Background())
			if err == io.EOF {
				t.Fatal("epoch ended without the injected failure")
			}
			if err != nil {
				if !errors.As(err, &serr) || serr.Index != 17 || serr.Step != "load" {
					t.Fatalf("got %v, want a SampleError for index 17 in step load", err)
				}
				break
			}
			b.Release()
		}
		if _, err := l.Next(context.Background()); !errors.As(err, &serr) {
			t.Fatalf("second Next after failure: %v, want the same SampleError", err)
		}
		l.Close()
		if alloc.Live() != 0 {
			t.Fatalf("%d blocks live after close", alloc.Live())
		}
	}
}

func TestCloseStopsEverything(t *testing.T) {
	cfg := cfgFor(t, `{"batch_size": 8, "workers": 4, "dataset": {"length": 100000, "light_cost_us": 100, "cost_kind": "sleep"}}`)
	var alloc batch.GoAllocator
	l, err := Open(cfg, &alloc)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.StartEpoch(0); err != nil {
		t.Fatal(err)
	}
	b, err := l.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// A second epoch cancels the first mid-way.
	if err := l.StartEpoch(1); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for {
			b, err := l.Next(context.Background())
			if err != nil {
				done <- err
				return
			}
			b.Release()
		}
	}()
	time.Sleep(20 * time.Millisecond)
	l.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Next blocked across Close returned %v, want ErrClosed", err)
	}
	if LiveGoroutines() != 0 {
		t.Fatalf("%d goroutines after Close", LiveGoroutines())
	}
	if alloc.Live() != 1 {
		t.Fatalf("%d blocks live, want 1 (the batch we hold)", alloc.Live())
	}
	b.Release()
	if alloc.Live() != 0 {
		t.Fatalf("%d blocks live after release", alloc.Live())
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := l.StartEpoch(2); !errors.Is(err, ErrClosed) {
		t.Fatalf("StartEpoch after Close: %v", err)
	}
	if _, err := l.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
}

func TestNextBeforeEpochAndTimeout(t *testing.T) {
	cfg := cfgFor(t, `{"batch_size": 2, "workers": 1, "adaptive": false, "dataset": {"length": 4, "light_cost_us": 200000, "cost_kind": "sleep"}}`)
	var alloc batch.GoAllocator
	l, _ := Open(cfg, &alloc)
	defer l.Close()
	if _, err := l.Next(context.Background()); !errors.Is(err, ErrNoEpoch) {
		t.Fatalf("got %v, want ErrNoEpoch", err)
	}
	l.StartEpoch(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := l.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
}

// TestPollReturnsReadyBatch: an expired context still gets a batch that is
// ready (a zero timeout is a reliable poll).
func TestPollReturnsReadyBatch(t *testing.T) {
	cfg := cfgFor(t, `{"batch_size": 2, "workers": 1, "prefetch_batches": 8, "dataset": {"length": 16}}`)
	var alloc batch.GoAllocator
	l, _ := Open(cfg, &alloc)
	defer l.Close()
	l.StartEpoch(0)
	b, err := l.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	// Wait until the rest of the epoch is built, by order not by time:
	// Stats reports the batch queue's depth.
	for l.Stats().QueueBatches < 7 {
		time.Sleep(time.Millisecond)
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 7; i++ {
		b, err := l.Next(expired)
		if err != nil {
			t.Fatalf("poll %d with a ready batch: %v", i, err)
		}
		b.Release()
	}
}

// TestAdaptiveWorkersGrow starts with one worker on a sleep-cost workload
// that keeps the batch queue empty, and checks the scaler widened the
// fast lane (formula (1)-(2): an empty queue gives Δ > 0).
func TestAdaptiveWorkersGrow(t *testing.T) {
	cfg := cfgFor(t, `{"batch_size": 4, "workers": 1, "max_workers": 6, "adaptive": true, "scale_interval_ms": 2, "prefetch_epoch": false,
		"dataset": {"length": 400, "light_cost_us": 1000, "cost_kind": "sleep"}}`)
	var alloc batch.GoAllocator
	l, _ := Open(cfg, &alloc)
	defer l.Close()
	_, bs := drain(t, l, 0)
	releaseAll(bs)
	st := l.Stats()
	if st.WorkerChanges == 0 || st.Workers <= 1 {
		t.Fatalf("workers %d after %d changes; want the lane widened", st.Workers, st.WorkerChanges)
	}
	if st.Workers > 6 {
		t.Fatalf("workers %d above max_workers 6", st.Workers)
	}
}

func TestLearnedThresholdAndStats(t *testing.T) {
	cfg := cfgFor(t, `{"batch_size": 8, "workers": 2, "adaptive": false, "warmup_samples": 32, "prefetch_epoch": false,
		"dataset": {"length": 400, "light_cost_us": 100, "heavy_cost_us": 3000, "heavy_every": 5, "cost_kind": "sleep"}}`)
	var alloc batch.GoAllocator
	l, _ := Open(cfg, &alloc)
	defer l.Close()
	_, bs := drain(t, l, 0)
	releaseAll(bs)
	st := l.Stats()
	if st.ThresholdMS <= 0 || st.ThresholdSource == "warmup" {
		t.Fatalf("threshold %v from %q after 400 samples", st.ThresholdMS, st.ThresholdSource)
	}
	if st.Samples != 400 || st.FastSamples+st.SlowSamples != 400 {
		t.Fatalf("samples %d, fast %d + slow %d; want 400", st.Samples, st.FastSamples, st.SlowSamples)
	}
	if st.SlowSamples == 0 {
		t.Fatal("no heavy sample took the slow lane")
	}
}

func TestDropLastAndLen(t *testing.T) {
	tests := []struct {
		n, bs    int
		dropLast bool
		batches  int64
		samples  int64
	}{
		{10, 3, false, 4, 10}, {10, 3, true, 3, 9}, {9, 3, true, 3, 9}, {2, 3, true, 0, 0}, {0, 3, false, 0, 0},
	}
	for _, tt := range tests {
		cfg := cfgFor(t, fmt.Sprintf(`{"batch_size": %d, "drop_last": %v, "dataset": {"length": %d}}`, tt.bs, tt.dropLast, tt.n))
		var alloc batch.GoAllocator
		l, _ := Open(cfg, &alloc)
		b, s := l.Len()
		if b != tt.batches || s != tt.samples {
			t.Errorf("%+v: Len() = %d, %d", tt, b, s)
		}
		got, bs := drain(t, l, 0)
		if int64(len(got)) != tt.batches {
			t.Errorf("%+v: %d batches", tt, len(got))
		}
		releaseAll(bs)
		l.Close()
	}
}

// TestCloseInterruptsWaitingSteps: a step that waits (here an hour-long
// sleep cost) gives up when the loader closes, so Close cannot hang.
func TestCloseInterruptsWaitingSteps(t *testing.T) {
	for _, kind := range []string{"sleep", "busy"} {
		cfg := cfgFor(t, `{"batch_size": 2, "workers": 2, "timeout_ms": 100000,
			"dataset": {"length": 8, "light_cost_us": 3.6e9, "cost_kind": "`+kind+`"}}`)
		var alloc batch.GoAllocator
		l, _ := Open(cfg, &alloc)
		l.StartEpoch(0)
		done := make(chan struct{})
		go func() { l.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: Close still waiting on an hour-long step after 30s", kind)
		}
		if LiveGoroutines() != 0 || alloc.Live() != 0 {
			t.Fatalf("%s: %d goroutines, %d blocks after Close", kind, LiveGoroutines(), alloc.Live())
		}
	}
}

// TestMemoryFlatOverEpochs: the Go heap after 30 epochs is what it was
// after 3 (queues and pools are bounded; nothing accumulates per epoch).
func TestMemoryFlatOverEpochs(t *testing.T) {
	cfg := cfgFor(t, `{"batch_size": 16, "workers": 2, "shuffle": true, "timeout_ms": 0.01,
		"dataset": {"length": 500, "shape": [256], "heavy_cost_us": 50, "heavy_every": 7}}`)
	var alloc batch.GoAllocator
	l, _ := Open(cfg, &alloc)
	defer l.Close()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var at3 uint64
	for e := int64(0); e < 30; e++ {
		_, bs := drain(t, l, e)
		releaseAll(bs)
		if e == 2 {
			at3 = heap()
		}
	}
	at30 := heap()
	if at30 > at3+1<<20 {
		t.Fatalf("heap grew from %d to %d bytes between epochs 3 and 30", at3, at30)
	}
	l.Close()
	if alloc.Live() != 0 {
		t.Fatalf("%d batch blocks live after Close", alloc.Live())
	}
	// One block per batch of the 30 epochs, plus what the prefetched 31st
	// had built when Close dropped it (at most its in-flight bound).
	if total := alloc.Total(); total < 30*32 || total > 31*32 {
		t.Fatalf("%d blocks allocated over 30 epochs, want 960 (+ at most 32 prefetched)", total)
	}
}

// TestVariableSizeFieldIsAClearError: a step that leaves a field at another
// size than declared fails that sample with an error naming the field.
func TestVariableSizeFieldIsAClearError(t *testing.T) {
	src := &testSource{n: 20, shape: []int64{4}, hook: func(c *pipeline.Ctx, s *pipeline.Sample) error {
		if s.Index == 9 {
			s.Fields[0].Data = make([]byte, 3*8)
			s.Fields[0].Shape = []int64{3}
		}
		return nil
	}}
	for _, inOrder := range []bool{true, false} {
		cfg := cfgFor(t, fmt.Sprintf(`{"batch_size": 4, "in_order": %v}`, inOrder))
		var alloc batch.GoAllocator
		l, _ := New(cfg, src, &alloc)
		l.StartEpoch(0)
		var serr *SampleError
		for {
			b, err := l.Next(context.Background())
			if err == io.EOF {
				t.Fatal("epoch ended without the size error")
			}
			if err != nil {
				if !errors.As(err, &serr) || serr.Index != 9 || !strings.Contains(err.Error(), `field "data" has shape [3]`) {
					t.Fatalf("got %v, want a SampleError for index 9 naming field \"data\"", err)
				}
				break
			}
			b.Release()
		}
		l.Close()
		if alloc.Live() != 0 {
			t.Fatalf("%d blocks live", alloc.Live())
		}
	}
}

// varSource's "seq" field has a variable first dimension: sample i has
// i%4+1 rows of 2 int16 values, each (i, row).
type varSource struct{ n int64 }

func (v varSource) Len() int64 { return v.n }
func (v varSource) Fields() []batch.FieldSpec {
	return []batch.FieldSpec{
		{Name: "seq", DType: config.DTypes["int16"], Shape: []int64{-1, 2}},
		{Name: "label", DType: config.DTypes["int64"]},
	}
}
func (v varSource) Load(c *pipeline.Ctx, i int64, s *pipeline.Sample) error {
	rows := i%4 + 1
	data := make([]byte, rows*2*2)
	for r := int64(0); r < rows; r++ {
		data[4*r], data[4*r+2] = byte(i+1), byte(r+1)
	}
	s.Fields[0].Data, s.Fields[0].Shape = data, []int64{rows, 2}
	putInt64(s.Fields[1].Data, i)
	return nil
}
func (v varSource) Steps() []pipeline.Step { return nil }

// TestPaddingCollate: a variable dimension is padded to the longest sample
// of each batch, with zeros after each sample's own rows.
func TestPaddingCollate(t *testing.T) {
	for _, inOrder := range []bool{true, false} {
		cfg := cfgFor(t, fmt.Sprintf(`{"batch_size": 3, "workers": 2, "in_order": %v}`, inOrder))
		var alloc batch.GoAllocator
		l, err := New(cfg, varSource{n: 10}, &alloc)
		if err != nil {
			t.Fatal(err)
		}
		_, bs := drain(t, l, 0)
		seen := 0
		for _, b := range bs {
			f := b.Field("seq")
			longest := int64(0)
			for _, i := range b.Indices {
				longest = max(longest, i%4+1)
			}
			if f.Shape[1] != longest || f.Shape[2] != 2 {
				t.Fatalf("batch %d: shape %v, want [%d %d 2]", b.Seq, f.Shape, b.N, longest)
			}
			for row, i := range b.Indices {
				data := f.Row(row)
				for r := int64(0); r < longest; r++ {
					want0, want1 := byte(0), byte(0)
					if r < i%4+1 {
						want0, want1 = byte(i+1), byte(r+1)
					}
					if data[4*r] != want0 || data[4*r+2] != want1 || data[4*r+1] != 0 || data[4*r+3] != 0 {
						t.Fatalf("index %d row %d: got % x", i, r, data[4*r:4*r+4])
					}
				}
				seen++
			}
		}
		releaseAll(bs)
		l.Close()
		if seen != 10 || alloc.Live() != 0 {
			t.Fatalf("seen %d, live %d", seen, alloc.Live())
		}
	}
}

func TestPadCopy(t *testing.T) {
	src := []byte{1, 2, 3, 4, 5, 6} // 2x3
	dst := make([]byte, 3*4)
	padCopy(dst, []int64{3, 4}, src, []int64{2, 3}, 1)
	want := []byte{1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0, 0}
	if !bytes.Equal(dst, want) {
		t.Fatalf("got %v, want %v", dst, want)
	}
}

// TestPrefetchedEpochIsAdoptedOrDropped: once an epoch has dispatched its
// last sample the next one starts; StartEpoch adopts it for that epoch (its
// batches are the right ones, exactly once) and drops it for another.
func TestPrefetchedEpochIsAdoptedOrDropped(t *testing.T) {
	cfg := cfgFor(t, `{"batch_size": 4, "workers": 2, "shuffle": true, "seed": 3, "in_order": true, "dataset": {"length": 40}}`)
	var alloc batch.GoAllocator
	l, _ := Open(cfg, &alloc)
	defer l.Close()
	for _, epoch := range []int64{0, 1, 2, 7, 8} { // 1, 2 and 8 adopt; 7 drops the prefetched 3
		got, bs := drain(t, l, epoch)
		releaseAll(bs)
		want, _ := sampler.Indices(sampler.Options{Length: 40, Shuffle: true, Seed: 3, WorldSize: 1}, epoch)
		var flat []int64
		for _, b := range got {
			flat = append(flat, b...)
		}
		if !slices.Equal(flat, want) {
			t.Fatalf("epoch %d: delivered %v, want %v", epoch, flat, want)
		}
		l.mu.Lock()
		next := l.next
		l.mu.Unlock()
		if next == nil || next.epoch != epoch+1 {
			t.Fatalf("after epoch %d: prefetched %v, want epoch %d", epoch, next, epoch+1)
		}
	}
	l.Close()
	if LiveGoroutines() != 0 || alloc.Live() != 0 {
		t.Fatalf("%d goroutines, %d blocks after Close", LiveGoroutines(), alloc.Live())
	}
}
