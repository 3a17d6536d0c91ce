package sched

import (
	"context"
	"io"
	"testing"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
)

// noopSource has no-op steps: what remains is the scheduler's own cost.
type noopSource struct{ n int64 }

func (s noopSource) Len() int64 { return s.n }
func (s noopSource) Fields() []batch.FieldSpec {
	return []batch.FieldSpec{{Name: "data", DType: config.DTypes["float32"], Shape: []int64{4}}}
}
func (s noopSource) Load(c *pipeline.Ctx, i int64, smp *pipeline.Sample) error { return nil }
func (s noopSource) Steps() []pipeline.Step {
	return []pipeline.Step{{Name: "noop", Fn: func(*pipeline.Ctx, *pipeline.Sample) error { return nil }}}
}

func benchEpoch(b *testing.B, inOrder bool, workers int) {
	cfg := config.Default()
	cfg.BatchSize = 64
	cfg.Workers = workers
	cfg.Adaptive = false
	cfg.InOrder = inOrder
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	var alloc batch.GoAllocator
	l, err := New(cfg, noopSource{n: int64(b.N)}, &alloc)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ReportAllocs()
	b.SetBytes(16)
	b.ResetTimer()
	if err := l.StartEpoch(0); err != nil {
		b.Fatal(err)
	}
	for {
		bt, err := l.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		bt.Release()
	}
}

// BenchmarkSchedulerPerSample is the engine overhead per sample with
// no-op transforms (target: at most 2 µs). One op is one sample.
func BenchmarkSchedulerPerSample(b *testing.B) {
	b.Run("any-order/1worker", func(b *testing.B) { benchEpoch(b, false, 1) })
	b.Run("any-order/2workers", func(b *testing.B) { benchEpoch(b, false, 2) })
	b.Run("in-order/2workers", func(b *testing.B) { benchEpoch(b, true, 2) })
}

// BenchmarkNaiveChannelPipeline is the baseline: one goroutine per worker
// reading indices from a channel and writing into a results channel, with
// no lanes, bounds or batching. One op is one sample.
func BenchmarkNaiveChannelPipeline(b *testing.B) {
	b.ReportAllocs()
	in := make(chan int, 64)
	out := make(chan int, 64)
	for w := 0; w < 2; w++ {
		go func() {
			for i := range in {
				out <- i
			}
		}()
	}
	go func() {
		for i := 0; i < b.N; i++ {
			in <- i
		}
		close(in)
	}()
	for i := 0; i < b.N; i++ {
		<-out
	}
}
