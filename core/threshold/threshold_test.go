package threshold

import (
	"testing"
	"time"
)

func TestWarmupThenP75(t *testing.T) {
	e := New(Options{Warmup: 100, Quantile: 0.75, FallbackQuantile: 0.9, SlowFractionLimit: 0.35})
	if _, ok := e.Threshold(); ok {
		t.Fatal("threshold set before warm-up")
	}
	// 1..100 ms uniformly: P75 is about 75 ms.
	for i := 1; i <= 100; i++ {
		e.Observe(time.Duration(i)*time.Millisecond, false)
	}
	got, ok := e.Threshold()
	if !ok {
		t.Fatal("no threshold after warm-up")
	}
	if got < 74*time.Millisecond || got > 80*time.Millisecond {
		t.Fatalf("got %v, want about 75ms (P75, 5%% buckets)", got)
	}
	if s := e.Source(); s != "quantile" {
		t.Fatalf("source %q, want quantile", s)
	}
}

func TestFixed(t *testing.T) {
	e := New(Options{Fixed: 3 * time.Millisecond, Warmup: 1})
	for i := 0; i < 100; i++ {
		e.Observe(time.Second, true)
	}
	if got, ok := e.Threshold(); !ok || got != 3*time.Millisecond {
		t.Fatalf("got %v %v, want 3ms", got, ok)
	}
	if e.Source() != "fixed" {
		t.Fatal("source not fixed")
	}
}

func TestFollowsDrift(t *testing.T) {
	e := New(Options{Warmup: 64, Quantile: 0.75, FallbackQuantile: 0.9, SlowFractionLimit: 0.9})
	for i := 0; i < 2000; i++ {
		e.Observe(time.Millisecond, false)
	}
	before, _ := e.Threshold()
	for i := 0; i < 5000; i++ {
		e.Observe(10*time.Millisecond, false)
	}
	after, _ := e.Threshold()
	if before > 2*time.Millisecond || after < 9*time.Millisecond {
		t.Fatalf("before %v, after %v: want ~1ms then ~10ms", before, after)
	}
}

func TestFallbackToP90WhenTooManySlow(t *testing.T) {
	e := New(Options{Warmup: 64, Quantile: 0.75, FallbackQuantile: 0.9, SlowFractionLimit: 0.35})
	obs := func(slow bool) {
		for i := 1; i <= 100; i++ {
			e.Observe(time.Duration(i)*time.Millisecond, slow)
		}
	}
	obs(false)
	obs(true) // every recent sample slow: far above 35%
	if e.Source() != "fallback" {
		t.Fatalf("source %q, want fallback", e.Source())
	}
	// Force a recompute with the fallback quantile.
	for i := 0; i < recompute; i++ {
		e.Observe(50*time.Millisecond, true)
	}
	got, _ := e.Threshold()
	if got < 85*time.Millisecond {
		t.Fatalf("fallback threshold %v, want about P90 (90ms)", got)
	}
	for i := 0; i < 400; i++ {
		e.Observe(50*time.Millisecond, false)
	}
	if e.Source() != "quantile" {
		t.Fatalf("source %q after slow share fell, want quantile", e.Source())
	}
}

func BenchmarkObserve(b *testing.B) {
	e := New(Options{Warmup: 64, Quantile: 0.75, FallbackQuantile: 0.9, SlowFractionLimit: 0.35})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e.Observe(time.Duration(i%1000)*time.Microsecond, i%4 == 0)
	}
}

func TestLearnedThresholdHasAFloor(t *testing.T) {
	e := New(Options{Warmup: 10, Quantile: 0.75, FallbackQuantile: 0.9, SlowFractionLimit: 0.35, Min: 100 * time.Microsecond})
	for i := 0; i < 100; i++ {
		e.Observe(2*time.Microsecond, false)
	}
	if got, _ := e.Threshold(); got != 100*time.Microsecond {
		t.Fatalf("got %v, want the 100µs floor", got)
	}
}
