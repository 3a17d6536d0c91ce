// Package pipeline defines what the scheduler runs: a Source that loads a
// sample by index and a chain of Steps that transform it.
//
// A step's randomness comes only from Ctx.Rand, which is seeded from
// (seed, epoch, index, step number). Which worker runs a step, and whether
// it runs on the fast or the slow lane, therefore never changes the bytes a
// sample ends with.
package pipeline

import (
	"errors"
	"time"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/sampler"
)

// ErrTimedOut is returned by a step that noticed Ctx.Expired() and gave up
// before changing the sample's data. The scheduler runs that step again on
// the slow lane; a step that saved its progress in Sample.Resume continues
// from there, any other starts over.
var ErrTimedOut = errors.New("step timed out")

// Array is one named value of a sample: Data holds the field's Shape of
// DType, row-major.
type Array struct {
	DType config.DType
	Shape []int64
	Data  []byte
}

// Sample is one sample in flight. Fields follow the source's Fields() specs,
// in order; the scheduler hands each step buffers of the declared sizes. A
// step may replace a field's Data with a slice of its own, of the same size;
// a field whose shape or size differs from its spec when the sample reaches
// the batch is an error naming the field (make sizes uniform with a
// transform first).
type Sample struct {
	Index  int64
	Fields []Array
	// State is the chain's working value between steps (the encoded bytes,
	// then a decoded image, ...); it travels with the sample across lanes.
	// The scheduler clears it when a new sample starts.
	State any
	// Resume is a step's own continuation: a step that returns ErrTimedOut
	// may leave its progress here, and finds it again when it is run anew
	// for this sample. The scheduler clears it whenever a step completes.
	Resume any
}

// Ctx is what a step sees. It is owned by one worker and reused.
type Ctx struct {
	Rand     sampler.RNG
	Index    int64
	Epoch    int64
	deadline time.Time
	done     <-chan struct{}
}

// SetDone sets the channel that closes when the epoch is cancelled. A step
// that waits (I/O, sleep) should select on Done() and give up.
func (c *Ctx) SetDone(done <-chan struct{}) { c.done = done }

// Done closes when the epoch the step works for is cancelled; nil (never
// closes) when no channel was set.
func (c *Ctx) Done() <-chan struct{} { return c.done }

// Reset prepares the context for step `step` of sample `index`.
func (c *Ctx) Reset(seed, epoch, index int64, step int, deadline time.Time) {
	c.Rand = sampler.NewRNG(uint64(seed), uint64(epoch), uint64(index), uint64(step))
	c.Index, c.Epoch, c.deadline = index, epoch, deadline
}

// Deadline reports when the fast lane gives up on this sample; ok is false
// on the slow lane and during warm-up.
func (c *Ctx) Deadline() (d time.Time, ok bool) { return c.deadline, !c.deadline.IsZero() }

// Expired reports whether the fast-lane deadline has passed. A long step
// may poll it and return ErrTimedOut, leaving the sample unchanged.
func (c *Ctx) Expired() bool {
	return !c.deadline.IsZero() && time.Now().After(c.deadline)
}

// Step is one transform. Fn must be safe for concurrent use on different
// samples.
type Step struct {
	Name string
	Fn   func(c *Ctx, s *Sample) error
}

// Source is a native dataset. Fields declares what every sample yields
// (fixed shapes); Load fills the sample's fields for index; Steps run, in
// order, after Load. Safe for concurrent use.
type Source interface {
	Len() int64
	Fields() []batch.FieldSpec
	Load(c *Ctx, index int64, s *Sample) error
	Steps() []Step
}

// SampleBytes is the size of one sample of all fields.
func SampleBytes(specs []batch.FieldSpec) int {
	n := 0
	for _, f := range specs {
		n += f.Bytes()
	}
	return n
}

// NewSample returns a sample with freshly allocated fields of specs (the
// scheduler uses pooled buffers instead; this is for tests and tools).
func NewSample(specs []batch.FieldSpec) Sample {
	s := Sample{Fields: make([]Array, len(specs))}
	for k, f := range specs {
		s.Fields[k] = Array{DType: f.DType, Shape: f.Shape, Data: make([]byte, f.Bytes())}
	}
	return s
}

// Dropper is implemented by sources whose samples hold resources outside
// the loader (a Python worker's arena block). The loader calls Drop for
// every dispatched sample the consumer will never receive: finished
// (its Fields are final) or not (Resume holds the source's continuation).
// Drop must not block.
type Dropper interface {
	Drop(s *Sample, finished bool)
}

// Pather is implemented by sources whose samples come from files: Path
// names the file (or files, comma-separated) of sample index, so that a
// sample's error names what to fix. Safe for concurrent use.
type Pather interface {
	Path(index int64) string
}
