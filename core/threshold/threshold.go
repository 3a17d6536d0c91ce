// Package threshold decides when a sample is slow: a fixed timeout, or one
// learned from the samples' own processing times.
//
// Learning follows the MinatoLoader paper (§4.2): a warm-up records the
// first samples' total times with no timeout, then the threshold is their
// 75th percentile. It keeps following the distribution with a streaming,
// exponentially decayed histogram (so drift is tracked), and falls back to
// the 90th percentile while more than a set fraction of recent samples went
// slow. Observe costs about 50 ns; Threshold is one atomic load.
package threshold

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

const (
	buckets   = 400  // log-spaced, ratio 1.05, from 1 µs: up to ~3e8 s
	ratio     = 1.05 // bucket width: the threshold's resolution is 5%
	minNS     = 1000
	decayEach = 512 // every decayEach observations, counts are halved
	recompute = 16  // recompute the threshold every recompute observations
)

// Options configures an Estimator.
type Options struct {
	Fixed             time.Duration // > 0: always this threshold
	Warmup            int           // observations before the first threshold
	Quantile          float64       // e.g. 0.75
	FallbackQuantile  float64       // e.g. 0.90
	SlowFractionLimit float64       // e.g. 0.35
	// Floor of a learned threshold: below it, moving a sample to the slow
	// lane costs more than it saves.
	Min time.Duration
}

// Estimator is safe for concurrent use.
type Estimator struct {
	o       Options
	current atomic.Int64 // ns; math.MaxInt64 = no timeout (warm-up)

	mu       sync.Mutex
	hist     [buckets]float64
	total    float64
	seen     int
	slowEWMA float64
	fallback bool
	log1p    float64
}

// New returns an estimator.
func New(o Options) *Estimator {
	e := &Estimator{o: o, log1p: math.Log(ratio)}
	if o.Fixed > 0 {
		e.current.Store(int64(o.Fixed))
	} else {
		e.current.Store(math.MaxInt64)
	}
	return e
}

// Threshold is the current timeout; ok is false while warming up.
func (e *Estimator) Threshold() (d time.Duration, ok bool) {
	v := e.current.Load()
	return time.Duration(v), v != math.MaxInt64
}

// Source names where the current threshold comes from: "fixed",
// "warmup", "quantile" or "fallback".
func (e *Estimator) Source() string {
	if e.o.Fixed > 0 {
		return "fixed"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.seen < e.o.Warmup:
		return "warmup"
	case e.fallback:
		return "fallback"
	}
	return "quantile"
}

// Observe records one finished sample: its total processing time and
// whether it went through the slow lane.
func (e *Estimator) Observe(total time.Duration, wentSlow bool) {
	if e.o.Fixed > 0 {
		return
	}
	b := e.bucket(total)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hist[b]++
	e.total++
	e.seen++
	s := 0.0
	if wentSlow {
		s = 1
	}
	e.slowEWMA += (s - e.slowEWMA) / 64
	if e.seen%decayEach == 0 {
		for i := range e.hist {
			e.hist[i] *= 0.5
		}
		e.total *= 0.5
	}
	if e.seen < e.o.Warmup {
		return
	}
	if e.seen == e.o.Warmup {
		e.slowEWMA = 0
	}
	// Hysteresis: fall back above the limit, return below 60% of it.
	if !e.fallback && e.seen > e.o.Warmup+32 && e.slowEWMA > e.o.SlowFractionLimit {
		e.fallback = true
	} else if e.fallback && e.slowEWMA < 0.6*e.o.SlowFractionLimit {
		e.fallback = false
	}
	if e.seen == e.o.Warmup || e.seen%recompute == 0 {
		q := e.o.Quantile
		if e.fallback {
			q = e.o.FallbackQuantile
		}
		e.current.Store(int64(max(e.quantileLocked(q), e.o.Min)))
	}
}

func (e *Estimator) bucket(d time.Duration) int {
	ns := float64(d)
	if ns <= minNS {
		return 0
	}
	b := int(math.Log(ns/minNS) / e.log1p)
	return min(b, buckets-1)
}

// quantileLocked returns the upper edge of the bucket holding quantile q.
func (e *Estimator) quantileLocked(q float64) time.Duration {
	want := q * e.total
	acc := 0.0
	for i, c := range e.hist {
		acc += c
		if acc >= want && c > 0 {
			return time.Duration(minNS * math.Pow(ratio, float64(i+1)))
		}
	}
	return time.Duration(minNS * math.Pow(ratio, buckets))
}
