package sched

import (
	"sync/atomic"
	"time"
)

type counters struct {
	epoch          atomic.Int64
	epochStart     atomic.Int64
	firstBatchNS   atomic.Int64
	batchesBuilt   atomic.Int64
	batchesOut     atomic.Int64
	samplesOut     atomic.Int64
	fastDone       atomic.Int64
	slowDone       atomic.Int64
	toSlow         atomic.Int64
	stolen         atomic.Int64
	preempted      atomic.Int64
	failed         atomic.Int64
	skipped        atomic.Int64
	workerChanges  atomic.Int64
	consumerWaitNS atomic.Int64
	consumerBusyNS atomic.Int64
	cpuMilli       atomic.Int64
	abandoned      atomic.Int64
}

// Stats is a snapshot of a Loader's counters since it was created
// (JSON-marshalable; the C ABI returns it as JSON).
type Stats struct {
	Epoch       int64 `json:"epoch"`
	Batches     int64 `json:"batches"`         // handed to the consumer
	Samples     int64 `json:"samples"`         // in batches handed to the consumer
	FastSamples int64 `json:"fast_samples"`    // finished on the fast lane (a prefetched epoch's too)
	SlowSamples int64 `json:"slow_samples"`    // finished on the slow lane (likewise)
	MovedToSlow int64 `json:"moved_to_slow"`   // handed to the slow lane
	Preempted   int64 `json:"preempted_steps"` // steps given up at the deadline and re-run
	SlowByFast  int64 `json:"slow_by_fast"`    // slow samples resumed by idle fast workers
	Failed      int64 `json:"failed"`          // samples whose error ended an epoch
	Skipped     int64 `json:"skipped"`         // failed samples left out (on_error=skip), all epochs
	// This epoch's skipped sample indices and the last skip's error.
	EpochSkipped    []int64 `json:"epoch_skipped"`
	LastSkipError   string  `json:"last_skip_error"`
	ThresholdMS     float64 `json:"threshold_ms"`     // current slow threshold; -1 while warming up
	ThresholdSource string  `json:"threshold_source"` // fixed, warmup, quantile, fallback
	Workers         int     `json:"workers"`          // fast lane width now
	MaxWorkers      int     `json:"max_workers"`
	SlowWorkers     int     `json:"slow_workers"`
	WorkerChanges   int64   `json:"worker_changes"`
	CPUUtilization  float64 `json:"cpu_utilization"` // last reading of the scaler
	QueueFast       int     `json:"queue_fast"`
	QueueTemp       int     `json:"queue_temp"`
	QueueSlow       int     `json:"queue_slow"`
	QueueBatches    int     `json:"queue_batches"`
	MaxInflight     int     `json:"max_inflight"`
	PrefetchBatches int     `json:"prefetch_batches"`
	FirstBatchS     float64 `json:"first_batch_s"`   // this epoch's time to first batch; -1 before it
	ConsumerWaitS   float64 `json:"consumer_wait_s"` // time spent blocked in Next
	ConsumerBusyS   float64 `json:"consumer_busy_s"` // time between Next calls
	WaitShare       float64 `json:"wait_share"`      // wait / (wait + busy)
	// Epoch stops (close, a new epoch) that gave up waiting after
	// stop_timeout_ms for a step that ignored cancellation (a read that
	// never returns); its goroutine finishes on its own.
	AbandonedStops int64 `json:"abandoned_stops"`
}

// Stats returns a snapshot. Safe to call at any time.
func (l *Loader) Stats() Stats {
	s := Stats{
		Epoch:           l.st.epoch.Load(),
		Batches:         l.st.batchesOut.Load(),
		Samples:         l.st.samplesOut.Load(),
		FastSamples:     l.st.fastDone.Load(),
		SlowSamples:     l.st.slowDone.Load(),
		MovedToSlow:     l.st.toSlow.Load(),
		Preempted:       l.st.preempted.Load(),
		SlowByFast:      l.st.stolen.Load(),
		Failed:          l.st.failed.Load(),
		Skipped:         l.st.skipped.Load(),
		EpochSkipped:    []int64{},
		ThresholdMS:     -1,
		ThresholdSource: l.est.Source(),
		Workers:         int(l.active.Load()),
		MaxWorkers:      l.cfg.MaxWorkers,
		SlowWorkers:     l.cfg.SlowWorkers,
		WorkerChanges:   l.st.workerChanges.Load(),
		CPUUtilization:  float64(l.st.cpuMilli.Load()) / 1000,
		MaxInflight:     l.cfg.MaxInflight,
		PrefetchBatches: l.cfg.PrefetchBatches,
		FirstBatchS:     -1,
		ConsumerWaitS:   time.Duration(l.st.consumerWaitNS.Load()).Seconds(),
		ConsumerBusyS:   time.Duration(l.st.consumerBusyNS.Load()).Seconds(),
		AbandonedStops:  l.st.abandoned.Load(),
	}
	if d, ok := l.est.Threshold(); ok {
		s.ThresholdMS = float64(d) / float64(time.Millisecond)
	}
	if fb := l.st.firstBatchNS.Load(); fb >= 0 {
		s.FirstBatchS = time.Duration(fb).Seconds()
	}
	if t := s.ConsumerWaitS + s.ConsumerBusyS; t > 0 {
		s.WaitShare = s.ConsumerWaitS / t
	}
	l.mu.Lock()
	if r := l.run; r != nil {
		s.QueueFast, s.QueueTemp, s.QueueSlow, s.QueueBatches = len(r.fast), len(r.temp), len(r.slow), len(r.out)
		r.errMu.Lock()
		s.EpochSkipped = append(s.EpochSkipped, r.skipped...)
		s.LastSkipError = r.lastSkip
		r.errMu.Unlock()
	}
	l.mu.Unlock()
	return s
}
