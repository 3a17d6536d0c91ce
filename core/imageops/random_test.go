package imageops

import (
	"errors"
	"math"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

func TestRandomResizedCropStatistics(t *testing.T) {
	// Reference statistics of torchvision 0.29.2's
	// RandomResizedCrop.get_params(scale=(0.08, 1), ratio=(3/4, 4/3)),
	// measured over 40000 draws each. Tolerances are about 5 standard
	// errors of the difference at these sample sizes.
	tests := []struct {
		h, w                              int
		meanArea, meanLogRatio, pAreaOver float64
	}{
		{480, 640, 0.4340, 0.0318, 0.3874},
		{100, 400, 0.1926, 0.0700, 0.0},
		{1000, 1000, 0.4783, 0.0002, 0.4669},
	}
	t1 := RandomResizedCrop{H: 224, W: 224}
	const n = 20000
	for _, tt := range tests {
		var sumArea, sumLog, over, sumI, nI float64
		for k := 0; k < n; k++ {
			rng := sampler.NewRNG(7, 0, uint64(k), 0)
			r := t1.Params(&rng, tt.h, tt.w)
			if !r.inside(tt.w, tt.h) {
				t.Fatalf("%dx%d: crop %+v outside the image", tt.w, tt.h, r)
			}
			area := float64(r.H*r.W) / float64(tt.h*tt.w)
			lr := math.Log(float64(r.W) / float64(r.H))
			if area < 0.08*0.97 || lr < math.Log(3.0/4)-0.02 || lr > math.Log(4.0/3)+0.02 {
				t.Fatalf("%dx%d: crop %+v: area %.4f, log ratio %.4f out of range", tt.w, tt.h, r, area, lr)
			}
			sumArea += area
			sumLog += lr
			if area > 0.5 {
				over++
			}
			if r.H < tt.h {
				sumI += float64(r.Top) / float64(tt.h-r.H)
				nI++
			}
		}
		check := func(name string, got, want, tol float64) {
			if math.Abs(got-want) > tol {
				t.Errorf("%dx%d %s: got %.4f, want %.4f +- %.4f (torchvision)", tt.w, tt.h, name, got, want, tol)
			}
		}
		check("mean area", sumArea/n, tt.meanArea, 0.01)
		check("mean log ratio", sumLog/n, tt.meanLogRatio, 0.008)
		check("P(area > 0.5)", over/n, tt.pAreaOver, 0.02)
		check("mean top offset / (H - h)", sumI/nI, 0.5, 0.015)
	}
}

func TestRandomResizedCropFallback(t *testing.T) {
	// A scale range above 1 is never accepted: 10 tries, then the center
	// crop with the ratio clamped (get_params' fallback).
	never := RandomResizedCrop{H: 8, W: 8, Scale: [2]float64{2, 3}}
	tests := []struct {
		h, w int
		want Rect
	}{
		{100, 400, Rect{0, 133, 100, 133}}, // 4 > 4/3: w = round(100*4/3) = 133
		{400, 100, Rect{133, 0, 133, 100}}, // 1/4 < 3/4: h = round(100/(3/4)) = 133
		{90, 100, Rect{0, 0, 90, 100}},     // ratio inside: whole image
	}
	for _, tt := range tests {
		rng := sampler.NewRNG(1)
		if got := never.Params(&rng, tt.h, tt.w); got != tt.want {
			t.Errorf("fallback on %dx%d: got %+v, want %+v", tt.w, tt.h, got, tt.want)
		}
	}
}

func TestRandomResizedCropDeterministic(t *testing.T) {
	tr := RandomResizedCrop{H: 224, W: 224}
	draw := func(keys ...uint64) Plan {
		rng := sampler.NewRNG(keys...)
		return tr.Plan(&rng, 375, 500, 0.5)
	}
	a, b := draw(1, 2, 3, 0), draw(1, 2, 3, 0)
	if a != b {
		t.Errorf("same keys: %+v != %+v", a, b)
	}
	same := 0
	for i := uint64(0); i < 50; i++ {
		if draw(1, 2, 3+i, 0) == a {
			same++
		}
	}
	if same > 1 {
		t.Errorf("%d of 50 other indices drew the same plan", same)
	}
}

func TestRandomResizedCropValidate(t *testing.T) {
	tests := []struct {
		t  RandomResizedCrop
		ok bool
	}{
		{RandomResizedCrop{H: 224, W: 224}, true},
		{RandomResizedCrop{H: 224, W: 224, Scale: [2]float64{0.5, 0.5}}, true},
		{RandomResizedCrop{H: 0, W: 224}, false},
		{RandomResizedCrop{H: 224, W: 224, Scale: [2]float64{0.9, 0.1}}, false},
		{RandomResizedCrop{H: 224, W: 224, Scale: [2]float64{0, 1}}, false},
		{RandomResizedCrop{H: 224, W: 224, Ratio: [2]float64{-1, 1}}, false},
		{RandomResizedCrop{H: 224, W: 224, Ratio: [2]float64{1, math.Inf(1)}}, false},
	}
	for _, tt := range tests {
		if err := tt.t.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: Validate() = %v, want ok=%v", tt.t, err, tt.ok)
		}
		// Params never panics, valid or not.
		rng := sampler.NewRNG(3)
		_ = tt.t.Params(&rng, 10, 10)
	}
}

func TestRandomCropParams(t *testing.T) {
	rng := sampler.NewRNG(9)
	before := rng
	if r, err := RandomCropParams(&rng, 32, 48, 32, 48); err != nil || r != (Rect{0, 0, 32, 48}) || rng != before {
		t.Errorf("exact size: got %+v, %v, rng advanced %v; want the whole image, no draw", r, err, rng != before)
	}
	for _, bad := range [][4]int{{32, 48, 33, 10}, {32, 48, 10, 49}, {32, 48, 0, 10}} {
		if _, err := RandomCropParams(&rng, bad[0], bad[1], bad[2], bad[3]); !errors.Is(err, ErrBadArg) {
			t.Errorf("crop %v: got %v, want ErrBadArg", bad, err)
		}
	}
	// Offsets are uniform over every valid position.
	counts := map[[2]int]int{}
	const n = 12000
	for k := 0; k < n; k++ {
		r, err := RandomCropParams(&rng, 5, 6, 3, 3) // 3 x 4 positions
		if err != nil {
			t.Fatal(err)
		}
		counts[[2]int{r.Top, r.Left}]++
	}
	if len(counts) != 12 {
		t.Fatalf("got %d distinct offsets, want 12", len(counts))
	}
	for pos, c := range counts {
		if math.Abs(float64(c)-n/12) > 5*math.Sqrt(n/12) {
			t.Errorf("offset %v drawn %d times, want about %d", pos, c, n/12)
		}
	}
}

func TestRandomFlip(t *testing.T) {
	rng := sampler.NewRNG(4)
	for _, p := range []float64{0, 0.3, 0.5, 1} {
		hits := 0
		const n = 10000
		for k := 0; k < n; k++ {
			if RandomFlip(&rng, p) {
				hits++
			}
		}
		if sd := math.Sqrt(n * p * (1 - p)); math.Abs(float64(hits)-n*p) > 5*sd+0.5 {
			t.Errorf("p=%v: %d of %d flipped", p, hits, n)
		}
	}
}

func TestColorJitterParams(t *testing.T) {
	j := ColorJitter{Brightness: 0.4, Contrast: 1.5, Saturation: 0}
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	perms := map[[3]Jitter]int{}
	const n = 6000
	for k := 0; k < n; k++ {
		rng := sampler.NewRNG(11, uint64(k))
		p := j.Params(&rng)
		perms[p.Order]++
		if p.Brightness < 0.6 || p.Brightness > 1.4 {
			t.Fatalf("brightness factor %v outside [0.6, 1.4]", p.Brightness)
		}
		if p.Contrast < 0 || p.Contrast > 2.5 { // [max(0, 1-1.5), 1+1.5]
			t.Fatalf("contrast factor %v outside [0, 2.5]", p.Contrast)
		}
		if p.Saturation != 1 {
			t.Fatalf("saturation off: factor %v, want 1", p.Saturation)
		}
	}
	if len(perms) != 6 {
		t.Fatalf("got %d orders, want all 6", len(perms))
	}
	for o, c := range perms {
		if math.Abs(float64(c)-n/6) > 5*math.Sqrt(n/6) {
			t.Errorf("order %v drawn %d times, want about %d", o, c, n/6)
		}
	}
	for _, bad := range []ColorJitter{{Brightness: -1}, {Contrast: math.NaN()}, {Saturation: math.Inf(1)}} {
		if err := bad.Validate(); !errors.Is(err, ErrBadArg) {
			t.Errorf("%+v: got %v, want ErrBadArg", bad, err)
		}
	}
}

func TestRoundHalfEven(t *testing.T) {
	for _, tt := range []struct {
		x    float64
		want int
	}{{0.5, 0}, {1.5, 2}, {2.5, 2}, {-0.5, 0}, {2.4999, 2}, {math.NaN(), 0}, {1e300, math.MaxInt32}} {
		if got := roundInt(tt.x); got != tt.want {
			t.Errorf("roundInt(%v) = %d, want %d", tt.x, got, tt.want)
		}
	}
}
