// Package sched is minatoloader's load balancer: per-sample fast and slow
// lanes, bounded queues and a batch builder that never waits on a slow
// sample while fast ones are ready (the MinatoLoader paper's Algorithm 1,
// done with exactly-once epochs).
//
//	sampler order
//	     |
//	 dispatch ---work---> fast workers (adaptive width, formula (1)-(2))
//	     ^                   |            \ elapsed > threshold after a step,
//	  tokens (max_inflight)  |             \ or a step gave up (ErrTimedOut)
//	     |                 fast              temp ---> slow workers (resume at
//	     |                   |                           the next step)
//	     |                   v                               |
//	     +----------- batch builder <---------- slow --------+
//	                         |
//	                  out (prefetch_batches) ---> Next
//
// A sample's bytes depend only on (seed, epoch, index): each step draws from
// an RNG seeded with those and its step number. The builder fills a batch
// with an aged slow sample first (one that has waited slow_max_age batches),
// then fast samples, then other finished slow samples; in_order=true
// instead emits batch k with exactly positions [k*B, (k+1)*B) of the order.
//
// Bounds: at most max_inflight samples are dispatched and not yet in an
// emitted batch; so the fast, temp and slow queues (capacity max_inflight)
// never block a sender, and at most prefetch_batches built batches wait for
// the consumer. Measured overhead with no-op steps: about 0.7 µs per sample
// (BenchmarkSchedulerPerSample, 2 cores).
package sched
