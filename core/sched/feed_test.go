package sched

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/pipeline"
)

// dropSource wraps testSource: it records Drop calls, and its hook can
// fail or delay chosen indices.
type dropSource struct {
	testSource
	mu      sync.Mutex
	dropped map[int64]int
}

func (d *dropSource) Drop(s *pipeline.Sample, finished bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dropped == nil {
		d.dropped = map[int64]int{}
	}
	d.dropped[s.Index]++
}

// feedAll feeds order in chunks of random whole batches of the given sizes,
// from another goroutine, as a host would.
func feedAll(t *testing.T, l *Loader, order []int64, sizes []int, chunk int) {
	t.Helper()
	at, k := 0, 0
	for k < len(sizes) {
		n := min(chunk, len(sizes)-k)
		cnt := 0
		for _, s := range sizes[k : k+n] {
			cnt += s
		}
		if err := l.Feed(order[at:at+cnt], sizes[k:k+n], k+n == len(sizes)); err != nil {
			t.Error(err)
			return
		}
		at += cnt
		k += n
	}
	if len(sizes) == 0 {
		if err := l.Feed(nil, nil, true); err != nil {
			t.Error(err)
		}
	}
}

func collect(t *testing.T, l *Loader) (rows [][]int64, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		b, err := l.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
		rows = append(rows, slices.Clone(b.Indices))
		b.Release()
	}
}

func TestFeedVariableBatchSizes(t *testing.T) {
	for _, inOrder := range []bool{true, false} {
		for _, chunk := range []int{1, 3, 100} {
			t.Run(fmt.Sprintf("in_order=%v/chunk=%d", inOrder, chunk), func(t *testing.T) {
				src := &dropSource{testSource: testSource{n: 200, shape: []int64{2}}}
				src.hook = func(c *pipeline.Ctx, s *pipeline.Sample) error {
					if s.Index%13 == 0 {
						time.Sleep(3 * time.Millisecond)
					}
					return nil
				}
				cfg := cfgFor(t, fmt.Sprintf(`{"batch_size":8,"feed":true,"in_order":%v,"workers":3,"warmup_samples":8,"max_inflight":40}`, inOrder))
				l, err := New(cfg, src, &batch.GoAllocator{})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				rng := rand.New(rand.NewPCG(1, uint64(chunk)))
				order := rng.Perm(150)
				idx := make([]int64, len(order))
				for i, v := range order {
					idx[i] = int64(v)
				}
				var sizes []int
				for left := len(idx); left > 0; {
					s := min(left, 1+rng.IntN(12))
					sizes = append(sizes, s)
					left -= s
				}
				if err := l.StartEpoch(0); err != nil {
					t.Fatal(err)
				}
				go feedAll(t, l, idx, sizes, chunk)
				rows, err := collect(t, l)
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) != len(sizes) {
					t.Fatalf("%d batches, want %d", len(rows), len(sizes))
				}
				var all []int64
				at := 0
				for k, r := range rows {
					if len(r) != sizes[k] {
						t.Fatalf("batch %d has %d rows, want %d", k, len(r), sizes[k])
					}
					if inOrder && !slices.Equal(r, idx[at:at+sizes[k]]) {
						t.Fatalf("batch %d = %v, want %v", k, r, idx[at:at+sizes[k]])
					}
					at += sizes[k]
					all = append(all, r...)
				}
				slices.Sort(all)
				want := slices.Clone(idx)
				slices.Sort(want)
				if !slices.Equal(all, want) {
					t.Fatalf("delivered %v, want each of %v once", all, want)
				}
			})
		}
	}
}

func TestSkipPolicyCountsAndBudget(t *testing.T) {
	fail := map[int64]bool{3: true, 17: true, 18: true, 40: true}
	for _, inOrder := range []bool{true, false} {
		for _, budget := range []int64{-1, 4, 3} {
			t.Run(fmt.Sprintf("in_order=%v/budget=%d", inOrder, budget), func(t *testing.T) {
				src := &dropSource{testSource: testSource{n: 64, shape: []int64{1}}}
				src.hook = func(c *pipeline.Ctx, s *pipeline.Sample) error {
					if fail[s.Index] {
						return fmt.Errorf("bad sample")
					}
					return nil
				}
				cfg := cfgFor(t, fmt.Sprintf(`{"batch_size":4,"feed":%v,"in_order":%v,"workers":2,"on_error":"skip","max_skipped":%d}`, true, inOrder, budget))
				l, err := New(cfg, src, &batch.GoAllocator{})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				if err := l.StartEpoch(0); err != nil {
					t.Fatal(err)
				}
				idx := make([]int64, 42)
				sizes := make([]int, 0)
				for i := range idx {
					idx[i] = int64(i)
				}
				for left := 42; left > 0; left -= 4 {
					sizes = append(sizes, min(4, left))
				}
				go feedAll(t, l, idx, sizes, 2)
				rows, err := collect(t, l)
				if budget == 3 {
					var be *BudgetError
					if !errors.As(err, &be) {
						t.Fatalf("want a BudgetError, got %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				checkDeliveredOnce(t, rows, 42, fail)
				st := l.Stats()
				slices.Sort(st.EpochSkipped)
				if st.Skipped != 4 || !slices.Equal(st.EpochSkipped, []int64{3, 17, 18, 40}) || st.LastSkipError == "" {
					t.Fatalf("stats: skipped %d %v %q", st.Skipped, st.EpochSkipped, st.LastSkipError)
				}
				if !inOrder {
					for k, r := range rows[:len(rows)-1] {
						if len(r) != 4 {
							t.Fatalf("any-order batch %d has %d rows; only the last may be short", k, len(r))
						}
					}
				}
			})
		}
	}
}

func TestFeedErrors(t *testing.T) {
	src := &dropSource{testSource: testSource{n: 10, shape: []int64{1}}}
	l, err := New(cfgFor(t, `{"batch_size":2,"feed":true,"max_inflight":4}`), src, &batch.GoAllocator{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Feed([]int64{1}, []int{1}, false); !errors.Is(err, ErrNoEpoch) {
		t.Fatalf("feed before an epoch: %v", err)
	}
	if err := l.StartEpoch(0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		idx   []int64
		sizes []int
	}{
		{[]int64{1, 2}, []int{1}},
		{[]int64{1}, []int{0, 1}},
		{[]int64{11}, []int{1}},
		{[]int64{1, 2, 3, 4, 5}, []int{5}},
	} {
		if err := l.Feed(c.idx, c.sizes, false); err == nil {
			t.Errorf("Feed(%v, %v) succeeded", c.idx, c.sizes)
		}
	}
	if err := l.Feed([]int64{1}, []int{1}, true); err != nil {
		t.Fatal(err)
	}
	if err := l.Feed([]int64{2}, []int{1}, true); err == nil {
		t.Fatal("feed after the last piece succeeded")
	}
}

// A stopped epoch tells the source about every sample it dispatched and
// the consumer never received.
func TestDropOnStop(t *testing.T) {
	src := &dropSource{testSource: testSource{n: 100, shape: []int64{1}}}
	src.hook = func(c *pipeline.Ctx, s *pipeline.Sample) error {
		time.Sleep(time.Millisecond)
		return nil
	}
	l, err := New(cfgFor(t, `{"batch_size":4,"feed":true,"in_order":true,"workers":3,"max_inflight":32}`), src, &batch.GoAllocator{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.StartEpoch(0); err != nil {
		t.Fatal(err)
	}
	idx := make([]int64, 100)
	sizes := make([]int, 25)
	for i := range idx {
		idx[i] = int64(i)
	}
	for i := range sizes {
		sizes[i] = 4
	}
	if err := l.Feed(idx, sizes, true); err != nil {
		t.Fatal(err)
	}
	got := map[int64]bool{}
	for k := 0; k < 3; k++ {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range b.Indices {
			got[i] = true
		}
		b.Release()
	}
	time.Sleep(20 * time.Millisecond) // let the lanes fill
	l.Close()
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.dropped) == 0 {
		t.Fatal("nothing dropped")
	}
	for i, n := range src.dropped {
		if got[i] || n != 1 {
			t.Fatalf("sample %d dropped %d times (delivered: %v)", i, n, got[i])
		}
	}
}
