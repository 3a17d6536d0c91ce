// Package synth is a native synthetic dataset with a controlled cost
// distribution: the stand-in for the MinatoLoader paper's Speech-3s/10s
// workloads (a light step on every sample, a heavy step on some).
//
// Costs are spent either as busy CPU (measured as this thread's CPU time,
// so that more workers than cores do not shorten a sample's work) or as
// sleep (I/O-like). The heavy step polls the fast-lane deadline and gives up
// unchanged when it passes, so the slow lane re-runs it from the start.
//
// Content is a pure function of (seed, epoch, index): values come from the
// index, the light step is a fixed affine map, and the heavy step adds
// noise drawn from the step's Ctx.Rand.
package synth

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
	"github.com/minatoloader/minatoloader/core/sampler"
)

// Source implements pipeline.Source. Every sample has two fields: "data"
// (the configured shape and dtype) and "label" (an int64 scalar in
// [0, num_classes)).
type Source struct {
	d      config.Dataset
	dt     config.DType
	fields []batch.FieldSpec
	light  time.Duration
	heavy  time.Duration
	fail   map[int64]bool
	steps  []pipeline.Step
}

// New builds a source from a validated dataset config.
func New(d config.Dataset) (*Source, error) {
	dt, ok := config.DTypes[d.DType]
	if !ok {
		return nil, fmt.Errorf("synth: unknown dtype %q", d.DType)
	}
	s := &Source{
		d:     d,
		dt:    dt,
		light: time.Duration(d.LightCostUS * float64(time.Microsecond)),
		heavy: time.Duration(d.HeavyCostUS * float64(time.Microsecond)),
		fail:  map[int64]bool{},
	}
	for _, i := range d.FailIndices {
		s.fail[i] = true
	}
	s.fields = []batch.FieldSpec{
		{Name: "data", DType: dt, Shape: slices.Clone(d.Shape)},
		{Name: "label", DType: config.DTypes["int64"]},
	}
	if err := batch.Validate(s.fields); err != nil {
		return nil, err
	}
	s.steps = []pipeline.Step{
		{Name: "light", Fn: s.lightStep},
		{Name: "heavy", Fn: s.heavyStep},
	}
	return s, nil
}

// Len implements pipeline.Source.
func (s *Source) Len() int64 { return s.d.Length }

// Fields implements pipeline.Source.
func (s *Source) Fields() []batch.FieldSpec { return s.fields }

// Steps implements pipeline.Source.
func (s *Source) Steps() []pipeline.Step { return s.steps }

// IsHeavy reports whether sample index pays the heavy cost. Fixed per
// index (not per epoch), as a long audio clip is long in every epoch.
func (s *Source) IsHeavy(index int64) bool {
	if s.heavy <= 0 {
		return false
	}
	if s.d.HeavyEvery > 0 && index%s.d.HeavyEvery == 0 {
		return true
	}
	if s.d.HeavyFraction > 0 {
		r := sampler.NewRNG(0xC057, uint64(index))
		return r.Float64() < s.d.HeavyFraction
	}
	return false
}

// Load fills the sample's values from its index.
func (s *Source) Load(c *pipeline.Ctx, index int64, smp *pipeline.Sample) error {
	if index < 0 || index >= s.d.Length {
		return fmt.Errorf("index %d out of range [0, %d)", index, s.d.Length)
	}
	if s.fail[index] {
		return fmt.Errorf("synthetic failure injected for index %d", index)
	}
	smp.Index = index
	r := sampler.NewRNG(0x5EED, uint64(index))
	binary.LittleEndian.PutUint64(smp.Fields[1].Data, r.Below(uint64(s.d.NumClasses)))
	fill(smp.Fields[0].Data, s.dt, &r)
	return nil
}

func (s *Source) lightStep(c *pipeline.Ctx, smp *pipeline.Sample) error {
	if err := spend(c, smp, s.light, s.d.CostKind, false); err != nil {
		return err
	}
	affine(smp.Fields[0].Data, s.dt, 2, -1)
	return nil
}

func (s *Source) heavyStep(c *pipeline.Ctx, smp *pipeline.Sample) error {
	if !s.IsHeavy(smp.Index) {
		return nil
	}
	if err := spend(c, smp, s.heavy, s.d.CostKind, true); err != nil {
		return err
	}
	noise(smp.Fields[0].Data, s.dt, &c.Rand)
	return nil
}

// spend costs d of CPU time ("busy") or of wall time ("sleep"). When
// preemptible, it gives up with pipeline.ErrTimedOut once the fast-lane
// deadline passes, leaving the cost still owed in smp.Resume: the slow lane
// pays only the rest, so no work is done twice.
func spend(c *pipeline.Ctx, smp *pipeline.Sample, d time.Duration, kind string, preemptible bool) error {
	if owed, ok := smp.Resume.(time.Duration); ok && preemptible {
		d = owed
	}
	if d <= 0 {
		return nil
	}
	deadline, hasDeadline := c.Deadline()
	hasDeadline = hasDeadline && preemptible
	if kind == "sleep" {
		wait, res := d, error(nil)
		if hasDeadline && time.Until(deadline) < d {
			wait, res = max(time.Until(deadline), 0), pipeline.ErrTimedOut
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
			if res != nil {
				smp.Resume = d - wait
			}
			return res
		case <-c.Done():
			return context.Canceled
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	begin := threadCPU()
	end := begin + d
	x := uint64(1)
	for {
		for i := 0; i < 512; i++ { // about 1 µs of work between checks
			x = sampler.Mix(x + uint64(i))
		}
		now := threadCPU()
		if now >= end {
			sink.Store(x)
			return nil
		}
		if hasDeadline && time.Now().After(deadline) {
			sink.Store(x)
			smp.Resume = end - now
			return pipeline.ErrTimedOut
		}
		select {
		case <-c.Done():
			return context.Canceled
		default:
		}
	}
}

// sink keeps the busy loop's result observable.
var sink atomic.Uint64

// threadCPU is this OS thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

func fill(b []byte, dt config.DType, r *sampler.RNG) {
	sz := dt.Size()
	for off := 0; off+sz <= len(b); off += sz {
		v := r.Uint64()
		switch {
		case dt.Code == 2 && sz == 4:
			binary.LittleEndian.PutUint32(b[off:], math.Float32bits(float32(v>>40)/(1<<24)))
		case dt.Code == 2 && sz == 8:
			binary.LittleEndian.PutUint64(b[off:], math.Float64bits(float64(v>>11)/(1<<53)))
		case dt.Code == 2 && sz == 2:
			binary.LittleEndian.PutUint16(b[off:], f16(float32(v>>40)/(1<<24)))
		default:
			for k := 0; k < sz; k++ {
				b[off+k] = byte(v >> (8 * k))
			}
		}
	}
}

// affine maps floats x -> a*x + c; integers are bit-inverted.
func affine(b []byte, dt config.DType, a, c float64) {
	sz := dt.Size()
	switch {
	case dt.Code == 2 && sz == 4:
		f := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
		for i := range f {
			f[i] = float32(a)*f[i] + float32(c)
		}
	case dt.Code == 2 && sz == 8:
		f := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
		for i := range f {
			f[i] = a*f[i] + c
		}
	case dt.Code == 2 && sz == 2:
		for off := 0; off+2 <= len(b); off += 2 {
			x := f16to32(binary.LittleEndian.Uint16(b[off:]))
			binary.LittleEndian.PutUint16(b[off:], f16(float32(a)*x+float32(c)))
		}
	default:
		for i := range b {
			b[i] = ^b[i]
		}
	}
}

// noise adds small uniform noise to floats and flips random low bits of
// integers, drawn from r.
func noise(b []byte, dt config.DType, r *sampler.RNG) {
	sz := dt.Size()
	for off := 0; off+sz <= len(b); off += sz {
		v := r.Uint64()
		switch {
		case dt.Code == 2 && sz == 4:
			x := math.Float32frombits(binary.LittleEndian.Uint32(b[off:]))
			binary.LittleEndian.PutUint32(b[off:], math.Float32bits(x+float32(v>>40)/(1<<24)*0.01))
		case dt.Code == 2 && sz == 8:
			x := math.Float64frombits(binary.LittleEndian.Uint64(b[off:]))
			binary.LittleEndian.PutUint64(b[off:], math.Float64bits(x+float64(v>>11)/(1<<53)*0.01))
		case dt.Code == 2 && sz == 2:
			x := f16to32(binary.LittleEndian.Uint16(b[off:]))
			binary.LittleEndian.PutUint16(b[off:], f16(x+float32(v>>40)/(1<<24)*0.01))
		default:
			b[off] ^= byte(v & 1)
		}
	}
}

// f16 converts to IEEE half precision (round toward zero; the values here
// are small and finite).
func f16(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int((bits>>23)&0xff) - 127 + 15
	mant := bits & 0x7fffff
	switch {
	case exp <= 0:
		return sign
	case exp >= 31:
		return sign | 0x7c00
	}
	return sign | uint16(exp)<<10 | uint16(mant>>13)
}

func f16to32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	if exp == 0 {
		return math.Float32frombits(sign) // zero (subnormals flushed)
	}
	if exp == 31 {
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
}
