package synth

import (
	"bytes"
	"testing"
	"time"

	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
)

func newSrc(t *testing.T, mut func(*config.Dataset)) *Source {
	t.Helper()
	c := config.Default()
	mut(&c.Dataset)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := New(c.Dataset)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t *testing.T, s *Source, index, epoch int64) []byte {
	t.Helper()
	smp := pipeline.NewSample(s.Fields())
	var c pipeline.Ctx
	c.Reset(1, epoch, index, 0, time.Time{})
	if err := s.Load(&c, index, &smp); err != nil {
		t.Fatal(err)
	}
	for i, st := range s.Steps() {
		c.Reset(1, epoch, index, i+1, time.Time{})
		if err := st.Fn(&c, &smp); err != nil {
			t.Fatal(err)
		}
	}
	return smp.Fields[0].Data
}

func TestDeterministicPerIndexAndEpoch(t *testing.T) {
	for _, dt := range []string{"uint8", "int16", "float16", "float32", "float64", "int64"} {
		s := newSrc(t, func(d *config.Dataset) {
			d.DType, d.Shape, d.HeavyEvery, d.HeavyCostUS = dt, []int64{5}, 1, 1
		})
		a, b := run(t, s, 7, 0), run(t, s, 7, 0)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: same (index, epoch) differ", dt)
		}
		if bytes.Equal(run(t, s, 7, 0), run(t, s, 8, 0)) {
			t.Fatalf("%s: indices 7 and 8 equal", dt)
		}
		if dt != "uint8" && dt != "int16" && dt != "int64" && bytes.Equal(run(t, s, 7, 0), run(t, s, 7, 1)) {
			t.Fatalf("%s: heavy augmentation ignores the epoch", dt)
		}
	}
}

func TestHeavySelection(t *testing.T) {
	s := newSrc(t, func(d *config.Dataset) { d.HeavyCostUS, d.HeavyEvery, d.Length = 1, 4, 100 })
	for i := int64(0); i < 100; i++ {
		if s.IsHeavy(i) != (i%4 == 0) {
			t.Fatalf("IsHeavy(%d) = %v", i, s.IsHeavy(i))
		}
	}
	f := newSrc(t, func(d *config.Dataset) { d.HeavyCostUS, d.HeavyFraction, d.Length = 1, 0.2, 10000 })
	n := 0
	for i := int64(0); i < 10000; i++ {
		if f.IsHeavy(i) {
			n++
		}
	}
	if n < 1800 || n > 2200 {
		t.Fatalf("%d heavy of 10000 at fraction 0.2", n)
	}
}

func TestBusyCostIsCPUTime(t *testing.T) {
	s := newSrc(t, func(d *config.Dataset) { d.LightCostUS = 3000 })
	start := threadCPU()
	run(t, s, 0, 0)
	if got := threadCPU() - start; got < 3*time.Millisecond {
		t.Fatalf("busy step used %v of CPU, want >= 3ms", got)
	}
}

func TestHeavyStepPreempts(t *testing.T) {
	for _, kind := range []string{"busy", "sleep"} {
		s := newSrc(t, func(d *config.Dataset) { d.HeavyCostUS, d.HeavyEvery, d.CostKind = 1e6, 1, kind })
		smp := pipeline.NewSample(s.Fields())
		var c pipeline.Ctx
		c.Reset(1, 0, 0, 2, time.Now().Add(2*time.Millisecond))
		before := append([]byte(nil), smp.Fields[0].Data...)
		if err := s.Steps()[1].Fn(&c, &smp); err != pipeline.ErrTimedOut {
			t.Fatalf("%s: got %v, want ErrTimedOut", kind, err)
		}
		if !bytes.Equal(before, smp.Fields[0].Data) {
			t.Fatalf("%s: a preempted step changed the sample", kind)
		}
		owed, ok := smp.Resume.(time.Duration)
		if !ok || owed <= 0 || owed >= time.Second {
			t.Fatalf("%s: Resume = %v, want the cost still owed, in (0, 1s)", kind, smp.Resume)
		}
		// The re-run (no deadline) pays only what is owed: make it small.
		smp.Resume = time.Millisecond
		c.Reset(1, 0, 0, 2, time.Time{})
		if err := s.Steps()[1].Fn(&c, &smp); err != nil {
			t.Fatalf("%s: re-run: %v", kind, err)
		}
	}
}

func TestFailIndices(t *testing.T) {
	s := newSrc(t, func(d *config.Dataset) { d.FailIndices = []int64{3} })
	smp := pipeline.NewSample(s.Fields())
	var c pipeline.Ctx
	if err := s.Load(&c, 3, &smp); err == nil {
		t.Fatal("no error for a failing index")
	}
	if err := s.Load(&c, 1<<40, &smp); err == nil {
		t.Fatal("no error for an index out of range")
	}
}
