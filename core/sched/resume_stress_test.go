package sched

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
)

// remoteLike is a Source shaped like core/remote: Load waits on an
// asynchronous result and, past its deadline, returns ErrTimedOut with the
// pending call in Resume; the slow lane's Load collects it. Each result
// carries a ticket unique to its call and the index it was made for.
type remoteLike struct {
	n     int64
	calls atomic.Int64
	mu    sync.Mutex
	dur   map[int64]time.Duration
}

type pending struct {
	index  int64
	ticket int64
	done   chan struct{}
}

func (r *remoteLike) Len() int64 { return r.n }
func (r *remoteLike) Fields() []batch.FieldSpec {
	return []batch.FieldSpec{{Name: "ticket", DType: config.DTypes["int64"], Shape: []int64{2}}}
}
func (r *remoteLike) Steps() []pipeline.Step { return nil }
func (r *remoteLike) Load(c *pipeline.Ctx, index int64, s *pipeline.Sample) error {
	p, ok := s.Resume.(*pending)
	if ok {
		s.Resume = nil
		select {
		case <-p.done:
		case <-c.Done():
			return fmt.Errorf("cancelled")
		}
	} else {
		r.mu.Lock()
		d := r.dur[index]
		r.mu.Unlock()
		p = &pending{index: index, ticket: r.calls.Add(1), done: make(chan struct{})}
		time.AfterFunc(d, func() { close(p.done) })
		var timeout <-chan time.Time
		if dl, ok := c.Deadline(); ok {
			t := time.NewTimer(time.Until(dl))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-p.done:
		case <-timeout:
			s.Resume = p
			return pipeline.ErrTimedOut
		case <-c.Done():
			return fmt.Errorf("cancelled")
		}
	}
	binary.LittleEndian.PutUint64(s.Fields[0].Data[0:], uint64(p.index))
	binary.LittleEndian.PutUint64(s.Fields[0].Data[8:], uint64(p.ticket))
	return nil
}

func TestRemoteLikeTicketsAreNeverStale(t *testing.T) {
	for trial := 0; trial < 6; trial++ {
		for _, inOrder := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(uint64(trial), 9))
			src := &remoteLike{n: 400, dur: map[int64]time.Duration{}}
			for i := int64(0); i < 400; i++ {
				d := time.Duration(rng.IntN(300)) * time.Microsecond
				if rng.IntN(30) == 0 {
					d = time.Duration(5+rng.IntN(20)) * time.Millisecond
				}
				src.dur[i] = d
			}
			cfg := cfgFor(t, fmt.Sprintf(`{"batch_size":16,"feed":true,"in_order":%v,"workers":4,"max_workers":4,"adaptive":false,"slow_workers":2,"warmup_samples":16,"max_inflight":128}`, inOrder))
			l, err := New(cfg, src, &batch.GoAllocator{})
			if err != nil {
				t.Fatal(err)
			}
			for epoch := int64(0); epoch < 2; epoch++ {
				idx := make([]int64, 400)
				for i, v := range rng.Perm(400) {
					idx[i] = int64(v)
				}
				sizes := make([]int, 25)
				for i := range sizes {
					sizes[i] = 16
				}
				if err := l.StartEpoch(epoch); err != nil {
					t.Fatal(err)
				}
				go feedAll(t, l, idx, sizes, 4)
				seenT := map[int64]bool{}
				var got []int64
				for {
					b, err := l.Next(t.Context())
					if err != nil {
						break
					}
					for row := 0; row < b.N; row++ {
						d := b.Fields[0].Row(row)
						index := int64(binary.LittleEndian.Uint64(d[0:]))
						tk := int64(binary.LittleEndian.Uint64(d[8:]))
						if index != b.Indices[row] || seenT[tk] {
							t.Fatalf("trial %d epoch %d: row %d index %d ticket %d (batch says %d, ticket seen %v)", trial, epoch, row, index, tk, b.Indices[row], seenT[tk])
						}
						seenT[tk] = true
						got = append(got, index)
					}
					b.Release()
				}
				slices.Sort(got)
				if len(got) != 400 || len(slices.Compact(got)) != 400 {
					t.Fatalf("trial %d epoch %d: %d delivered", trial, epoch, len(got))
				}
			}
			l.Close()
		}
	}
}
