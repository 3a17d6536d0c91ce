package audio

import (
	"math"
	"slices"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

func ramp(frames, bins int) Features {
	f := Features{Frames: frames, Bins: bins, Data: make([]float32, frames*bins)}
	for i := range f.Data {
		f.Data[i] = float32(i + 1)
	}
	return f
}

func TestMaskAlongAxisSemantics(t *testing.T) {
	tests := []struct {
		name  string
		axis  Axis
		param int
		p     float64
	}{
		{"time", AxisTime, 30, 1},
		{"freq", AxisFreq, 27, 1},
		{"time p=0.05", AxisTime, 100, 0.05},
		{"param > size", AxisFreq, 200, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(200) {
				f := ramp(120, 80)
				rng := sampler.NewRNG(seed)
				twin := rng // the same stream, to recompute the draws
				if err := MaskAlongAxis(&f, tt.axis, tt.param, tt.p, -7, &rng); err != nil {
					t.Fatal(err)
				}
				size := f.Frames
				if tt.axis == AxisFreq {
					size = f.Bins
				}
				param := tt.param
				if tt.p != 1 {
					param = min(param, int(float64(size)*tt.p))
				}
				value := twin.Float64() * float64(param)
				start := int(twin.Float64() * (float64(size) - value))
				end := start + int(value)
				want := ramp(120, 80)
				for t := range want.Frames {
					for b := range want.Bins {
						i := t
						if tt.axis == AxisFreq {
							i = b
						}
						if i >= start && i < end {
							want.Data[t*want.Bins+b] = -7
						}
					}
				}
				if !slices.Equal(f.Data, want.Data) {
					t.Fatalf("seed %d: mask [%d, %d) on axis %d: features differ", seed, start, end, tt.axis)
				}
				if int(value) >= param && param > 0 {
					t.Fatalf("seed %d: width %d not below param %d", seed, int(value), param)
				}
			}
		})
	}
}

// TestMaskWidthDistribution checks widths cover [0, param) uniformly and
// masks always fit when param <= size.
func TestMaskWidthDistribution(t *testing.T) {
	const param, size, draws = 10, 50, 20000
	counts := make([]int, param)
	rng := sampler.NewRNG(42)
	for range draws {
		f := Features{Frames: size, Bins: 1, Data: make([]float32, size)}
		if err := MaskAlongAxis(&f, AxisTime, param, 1, 1, &rng); err != nil {
			t.Fatal(err)
		}
		w, first, last := 0, -1, -1
		for i, v := range f.Data {
			if v == 1 {
				w++
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		if w > 0 && last-first+1 != w {
			t.Fatalf("mask not contiguous: %v", f.Data)
		}
		counts[w]++
	}
	for w, c := range counts {
		// Expected draws/param = 2000 each; 5 sigma is about 210.
		if math.Abs(float64(c)-draws/param) > 250 {
			t.Errorf("width %d drawn %d times, want about %d", w, c, draws/param)
		}
	}
}

func TestSpecAugmentDeterministic(t *testing.T) {
	o := SpecAugmentOptions{TimeMasks: 2, TimeMaskParam: 40, FreqMasks: 2, FreqMaskParam: 27, P: 1}
	run := func(seed, epoch, index, step uint64) Features {
		f := ramp(300, 80)
		rng := sampler.NewRNG(seed, epoch, index, step)
		if err := SpecAugment(&f, o, &rng); err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := run(1, 0, 7, 3), run(1, 0, 7, 3)
	if !slices.Equal(a.Data, b.Data) {
		t.Fatal("same RNG key: got different masks")
	}
	differ := 0
	for index := range uint64(20) {
		if !slices.Equal(run(1, 0, index, 3).Data, a.Data) {
			differ++
		}
	}
	if differ < 18 {
		t.Fatalf("different indices gave the same masks %d of 20 times", 20-differ)
	}
	// Time masks are drawn first: the first two draws pairs of the stream
	// decide the time masks, as torchaudio's SpecAugment orders them.
	rng := sampler.NewRNG(1, 0, 7, 3)
	f := ramp(300, 80)
	for range 2 {
		if err := MaskAlongAxis(&f, AxisTime, 40, 1, 0, &rng); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := MaskAlongAxis(&f, AxisFreq, 27, 1, 0, &rng); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(f.Data, a.Data) {
		t.Fatal("SpecAugment differs from its masks applied one by one")
	}
}

func TestSpecAugmentMeanValue(t *testing.T) {
	f := ramp(10, 4) // values 1..40, mean 20.5
	rng := sampler.NewRNG(3)
	o := SpecAugmentOptions{TimeMasks: 5, TimeMaskParam: 10, P: 1, MeanValue: true, Value: 99}
	if err := SpecAugment(&f, o, &rng); err != nil {
		t.Fatal(err)
	}
	masked := 0
	for i, v := range f.Data {
		if v != float32(i+1) {
			if v != 20.5 {
				t.Fatalf("masked value %v, want the mean 20.5", v)
			}
			masked++
		}
	}
	if masked == 0 {
		t.Fatal("five masks of up to 9 frames masked nothing")
	}
}

func TestSpecAugmentErrors(t *testing.T) {
	f := ramp(10, 4)
	rng := sampler.NewRNG(1)
	bad := []struct {
		name string
		err  error
	}{
		{"p > 1", MaskAlongAxis(&f, AxisTime, 3, 1.5, 0, &rng)},
		{"p NaN", MaskAlongAxis(&f, AxisTime, 3, math.NaN(), 0, &rng)},
		{"negative param", MaskAlongAxis(&f, AxisTime, -1, 1, 0, &rng)},
		{"axis", MaskAlongAxis(&f, 5, 3, 1, 0, &rng)},
		{"nil rng", MaskAlongAxis(&f, AxisTime, 3, 1, 0, nil)},
		{"bad features", MaskAlongAxis(&Features{Frames: 2, Bins: 2}, AxisTime, 3, 1, 0, &rng)},
		{"negative count", SpecAugment(&f, SpecAugmentOptions{TimeMasks: -1, P: 1}, &rng)},
		{"p unset", SpecAugment(&f, SpecAugmentOptions{TimeMasks: 1, TimeMaskParam: 5}, &rng)},
	}
	for _, b := range bad {
		if b.err == nil {
			t.Errorf("%s: want an error", b.name)
		}
	}
	if err := MaskAlongAxis(&f, AxisTime, 0, 1, 0, nil); err == nil {
		t.Error("nil rng with param 0: want an error (checked before the no-op)")
	}
}
