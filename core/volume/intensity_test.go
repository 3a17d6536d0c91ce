package volume

import (
	"errors"
	"math"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

func float32s(t testing.TB, v *Volume) []float32 {
	t.Helper()
	f, err := v.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestBrightnessMatchesReference(t *testing.T) {
	v := randomVolume(t, Float32, 1, 3, 4, 5)
	v.Set(0, math.Inf(1))
	v.Set(1, math.NaN())
	v.Set(2, 3.4e38)
	in := float32s(t, v)
	for _, f := range []float64{0.7, 1, 1.3, 0.123456789} {
		w := v.Clone()
		if err := Brightness(w, BrightnessParams{Apply: true, Factor: f}); err != nil {
			t.Fatal(err)
		}
		got := float32s(t, w)
		for i, x := range in {
			g := got[i]
			if math.IsNaN(float64(x)) {
				if !math.IsNaN(float64(g)) {
					t.Errorf("factor %v: NaN became %v", f, g)
				}
				continue
			}
			// Exactly the documented rounding of the float64 product...
			if want := float32(float64(x) * f); g != want {
				t.Errorf("factor %v [%d]: got %v, want float32(float64(x)*f) = %v", f, i, g, want)
			}
			// ...which is the plain float32 product within rounding.
			if want := x * float32(f); g != want && math.Abs(float64(g-want)) > 1e-6*math.Abs(float64(want)) {
				t.Errorf("factor %v [%d]: got %v, want about %v", f, i, g, want)
			}
		}
	}
	w := v.Clone()
	if err := Brightness(w, BrightnessParams{Apply: false, Factor: 5}); err != nil || !Equal(w, v) {
		t.Errorf("Apply false changed the volume (%v)", err)
	}
}

func TestRandomBrightnessDraw(t *testing.T) {
	b := RandomBrightness{Factor: 0.3, Prob: 0.25}
	applied := 0
	lo, hi := 2.0, 0.0
	const n = 20000
	for seed := uint64(0); seed < n; seed++ {
		r1, r2 := sampler.NewRNG(seed), sampler.NewRNG(seed)
		p, err := b.Draw(&r1)
		if err != nil {
			t.Fatal(err)
		}
		want := BrightnessParams{}
		if r2.Float64() < b.Prob {
			lo, hi := 1-b.Factor, 1+b.Factor // in float64, as numpy computes them
			want = BrightnessParams{Apply: true, Factor: lo + (hi-lo)*r2.Float64()}
		}
		if p != want || r1 != r2 {
			t.Fatalf("seed %d: got %+v, want %+v", seed, p, want)
		}
		if p.Apply {
			applied++
			lo, hi = min(lo, p.Factor), max(hi, p.Factor)
		}
	}
	if applied < n*23/100 || applied > n*27/100 {
		t.Errorf("applied %d of %d times, want about 25%%", applied, n)
	}
	if lo < 0.7 || hi >= 1.3 || lo > 0.71 || hi < 1.29 {
		t.Errorf("factors span [%v, %v], want about [0.7, 1.3)", lo, hi)
	}
	for _, bad := range []RandomBrightness{{Factor: -0.1, Prob: 0.5}, {Factor: 0.3, Prob: 1.1}, {Factor: math.NaN()}} {
		r := sampler.NewRNG(0)
		if _, err := bad.Draw(&r); !errors.Is(err, ErrParams) {
			t.Errorf("%+v: got %v", bad, err)
		}
	}
}

// refNoise is the polar method written out as the documentation states it.
func refNoise(x []float32, p NoiseParams) []float32 {
	out := make([]float32, len(x))
	r := sampler.NewRNG(p.Seed)
	var z []float64
	for len(z) < len(x) {
		u, v := 2*r.Float64()-1, 2*r.Float64()-1
		q := u*u + v*v
		if q >= 1 || q == 0 {
			continue
		}
		m := math.Sqrt(-2 * math.Log(q) / q)
		z = append(z, u*m, v*m)
	}
	for i := range x {
		out[i] = x[i] + float32(p.Mean+p.Std*z[i])
	}
	return out
}

func TestAddNoiseMatchesReference(t *testing.T) {
	for _, shape := range [][]int{{3, 4, 5}, {1, 3, 3, 3}} { // even and odd counts
		v := randomVolume(t, Float32, 2, shape...)
		in := float32s(t, v)
		p := NoiseParams{Apply: true, Mean: 0.25, Std: 0.1, Seed: 12345}
		if err := AddNoise(v, p); err != nil {
			t.Fatal(err)
		}
		got, want := float32s(t, v), refNoise(in, p)
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 1e-6*max(1, math.Abs(float64(want[i]))) {
				t.Fatalf("%v [%d]: got %v, want %v", shape, i, got[i], want[i])
			}
		}
	}
	v := randomVolume(t, Float32, 2, 3, 4, 5)
	w := v.Clone()
	if err := AddNoise(w, NoiseParams{Apply: false, Std: 1}); err != nil || !Equal(v, w) {
		t.Errorf("Apply false changed the volume (%v)", err)
	}
}

func TestAddNoiseStatistics(t *testing.T) {
	v, _ := New(Float32, 64, 64, 64)
	p := NoiseParams{Apply: true, Mean: 0.5, Std: 0.2, Seed: 7}
	if err := AddNoise(v, p); err != nil {
		t.Fatal(err)
	}
	x := float32s(t, v)
	var sum, sq float64
	tail := 0
	for _, f := range x {
		sum += float64(f)
		if math.Abs(float64(f)-p.Mean) > 1.96*p.Std {
			tail++
		}
	}
	mean := sum / float64(len(x))
	for _, f := range x {
		sq += (float64(f) - mean) * (float64(f) - mean)
	}
	std := math.Sqrt(sq / float64(len(x)))
	if math.Abs(mean-p.Mean) > 0.002 || math.Abs(std-p.Std) > 0.002 {
		t.Errorf("mean %v std %v, want %v and %v", mean, std, p.Mean, p.Std)
	}
	if frac := float64(tail) / float64(len(x)); math.Abs(frac-0.05) > 0.003 {
		t.Errorf("%.4f of values beyond 1.96 std, want 0.05", frac)
	}
}

func TestGaussianNoiseDraw(t *testing.T) {
	g := GaussianNoise{Mean: 0.1, Std: 0.2, Prob: 0.5}
	for seed := uint64(0); seed < 2000; seed++ {
		r1, r2 := sampler.NewRNG(seed), sampler.NewRNG(seed)
		p, err := g.Draw(&r1)
		if err != nil {
			t.Fatal(err)
		}
		want := NoiseParams{}
		if r2.Float64() < g.Prob {
			std := g.Std * r2.Float64()
			want = NoiseParams{Apply: true, Mean: g.Mean, Std: std, Seed: r2.Uint64()}
		}
		if p != want || r1 != r2 {
			t.Fatalf("seed %d: got %+v, want %+v", seed, p, want)
		}
		if p.Apply && (p.Std < 0 || p.Std >= g.Std) {
			t.Fatalf("std %v outside [0, %v)", p.Std, g.Std)
		}
	}
	for _, bad := range []GaussianNoise{{Std: -1, Prob: 0.5}, {Std: math.Inf(1)}, {Mean: math.NaN()}, {Prob: 2}} {
		r := sampler.NewRNG(0)
		if _, err := bad.Draw(&r); !errors.Is(err, ErrParams) {
			t.Errorf("%+v: got %v", bad, err)
		}
	}
}

func TestIntensityOpsNeedFloat32(t *testing.T) {
	u := randomVolume(t, Uint8, 1, 2, 2, 2)
	if err := Brightness(u, BrightnessParams{Apply: true, Factor: 1}); !errors.Is(err, ErrDType) {
		t.Errorf("Brightness on uint8: got %v", err)
	}
	if err := AddNoise(u, NoiseParams{Apply: true}); !errors.Is(err, ErrDType) {
		t.Errorf("AddNoise on uint8: got %v", err)
	}
	f := randomVolume(t, Float32, 1, 2, 2, 2)
	if err := Brightness(f, BrightnessParams{Apply: true, Factor: math.Inf(1)}); !errors.Is(err, ErrParams) {
		t.Errorf("infinite factor: got %v", err)
	}
	if err := AddNoise(f, NoiseParams{Apply: true, Std: math.NaN()}); !errors.Is(err, ErrParams) {
		t.Errorf("NaN std: got %v", err)
	}
}
