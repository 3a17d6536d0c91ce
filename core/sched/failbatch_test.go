package sched

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/pipeline"
)

// Under on_error=batch (torch's DataLoader), a failed sample's batch comes
// back as its error, in its place, and the epoch goes on: in order, every
// other batch is exactly the fed one; in any order, every sample that did
// not fail is delivered once.
func TestFailBatchGoesOn(t *testing.T) {
	fail := map[int64]bool{3: true, 17: true, 18: true, 40: true}
	for _, inOrder := range []bool{true, false} {
		t.Run(fmt.Sprintf("in_order=%v", inOrder), func(t *testing.T) {
			src := &dropSource{testSource: testSource{n: 64, shape: []int64{1}}}
			src.hook = func(c *pipeline.Ctx, s *pipeline.Sample) error {
				if fail[s.Index] {
					return fmt.Errorf("bad sample")
				}
				return nil
			}
			cfg := cfgFor(t, fmt.Sprintf(`{"batch_size":4,"feed":true,"in_order":%v,"workers":2,"on_error":"batch","max_inflight":12}`, inOrder))
			l, err := New(cfg, src, &batch.GoAllocator{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.StartEpoch(0); err != nil {
				t.Fatal(err)
			}
			idx := make([]int64, 42)
			var sizes []int
			for i := range idx {
				idx[i] = int64(i)
			}
			for left := 42; left > 0; left -= 4 {
				sizes = append(sizes, min(4, left))
			}
			go feedAll(t, l, idx, sizes, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var got [][]int64 // nil for an error
			var failed []int64
			for {
				b, err := l.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					var se *SampleError
					if !errors.As(err, &se) {
						t.Fatalf("want a SampleError, got %v", err)
					}
					failed = append(failed, se.Index)
					got = append(got, nil)
					continue
				}
				got = append(got, slices.Clone(b.Indices))
				b.Release()
			}
			slices.Sort(failed)
			if inOrder {
				// Batches 0 (3), 4 (17, 18: one error) and 10 (40) fail.
				if !slices.Equal(failed, []int64{3, 17, 40}) && !slices.Equal(failed, []int64{3, 18, 40}) {
					t.Fatalf("failed %v", failed)
				}
				if len(got) != 11 {
					t.Fatalf("%d results, want 11", len(got))
				}
				for k, rows := range got {
					bad := k == 0 || k == 4 || k == 10
					if bad != (rows == nil) {
						t.Fatalf("batch %d: %v", k, rows)
					}
					if !bad && !slices.Equal(rows, idx[4*k:min(4*k+4, 42)]) {
						t.Fatalf("batch %d: %v", k, rows)
					}
				}
			} else {
				if !slices.Equal(failed, []int64{3, 17, 18, 40}) {
					t.Fatalf("failed %v", failed)
				}
				checkDeliveredOnce(t, got, 42, fail)
			}
			delivered, settled := l.Progress()
			if delivered+settled != 42 {
				t.Fatalf("progress %d + %d, want 42", delivered, settled)
			}
		})
	}
}

// checkDeliveredOnce asserts that rows hold each index in [0, n) not in
// fail exactly once.
func checkDeliveredOnce(t *testing.T, rows [][]int64, n int64, fail map[int64]bool) {
	t.Helper()
	var all []int64
	for _, r := range rows {
		all = append(all, r...)
	}
	slices.Sort(all)
	var want []int64
	for i := int64(0); i < n; i++ {
		if !fail[i] {
			want = append(want, i)
		}
	}
	if !slices.Equal(all, want) {
		t.Fatalf("delivered %v, want %v", all, want)
	}
}
