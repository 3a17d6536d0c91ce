package volume

import (
	"errors"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// refFlip is the flip by definition, out of place, one voxel at a time.
func refFlip(v *Volume, p FlipParams) *Volume {
	r := len(v.Shape)
	c := 1
	for _, d := range v.Shape[:r-3] {
		c *= d
	}
	D, H, W := v.Shape[r-3], v.Shape[r-2], v.Shape[r-1]
	out, _ := New(v.DType, v.Shape...)
	src := func(i, n int, flip bool) int {
		if flip {
			return n - 1 - i
		}
		return i
	}
	for ch := 0; ch < c; ch++ {
		for z := 0; z < D; z++ {
			for y := 0; y < H; y++ {
				for x := 0; x < W; x++ {
					s := ((ch*D+src(z, D, p.Axes[0]))*H+src(y, H, p.Axes[1]))*W + src(x, W, p.Axes[2])
					out.Set(((ch*D+z)*H+y)*W+x, v.At(s))
				}
			}
		}
	}
	return out
}

func TestFlipMatchesReference(t *testing.T) {
	shapes := [][]int{{1, 1, 1}, {4, 5, 6}, {3, 3, 3}, {2, 5, 1, 7}, {3, 1, 4, 1}, {2, 2, 2, 2, 3}}
	for dt := Uint8; dt <= Float64; dt++ {
		for si, shape := range shapes {
			for m := 0; m < 8; m++ {
				p := FlipParams{Axes: [3]bool{m&1 != 0, m&2 != 0, m&4 != 0}}
				v := randomVolume(t, dt, uint64(si), shape...)
				orig := v.Clone()
				want := refFlip(v, p)
				if err := Flip(v, p); err != nil {
					t.Fatal(err)
				}
				if !Equal(v, want) {
					t.Fatalf("%s %v %v: got %x, want %x", dt, shape, p.Axes, v.Data, want.Data)
				}
				if err := Flip(v, p); err != nil {
					t.Fatal(err)
				}
				if !Equal(v, orig) {
					t.Fatalf("%s %v %v: flipping twice did not restore the volume", dt, shape, p.Axes)
				}
			}
		}
	}
}

func TestFlipWideRows(t *testing.T) {
	// Rows longer than swapRows' 512-byte buffer.
	v := randomVolume(t, Float64, 9, 3, 2, 200)
	for _, p := range []FlipParams{{Axes: [3]bool{true, false, false}}, {Axes: [3]bool{true, true, true}}} {
		w := v.Clone()
		want := refFlip(w, p)
		if err := Flip(w, p); err != nil {
			t.Fatal(err)
		}
		if !Equal(w, want) {
			t.Errorf("%v: differs from the reference", p.Axes)
		}
	}
}

func TestFlipPair(t *testing.T) {
	img := randomVolume(t, Float32, 1, 2, 3, 4, 5)
	lbl := randomVolume(t, Uint8, 2, 3, 4, 5)
	p := FlipParams{Axes: [3]bool{true, false, true}}
	wi, wl := refFlip(img, p), refFlip(lbl, p)
	if err := FlipPair(img, lbl, p); err != nil {
		t.Fatal(err)
	}
	if !Equal(img, wi) || !Equal(lbl, wl) {
		t.Error("pair differs from flipping each alone")
	}
	if err := FlipPair(img, randomVolume(t, Uint8, 2, 3, 4, 6), p); !errors.Is(err, ErrShape) {
		t.Errorf("mismatched pair: got %v", err)
	}
	if err := Flip(randomVolume(t, Uint8, 1, 3, 4), p); !errors.Is(err, ErrShape) {
		t.Errorf("rank 2: got %v", err)
	}
}

func TestRandomFlipDraw(t *testing.T) {
	f := RandomFlip{Prob: 1.0 / 3}
	var count [3]int
	const n = 30000
	for seed := uint64(0); seed < n; seed++ {
		r1, r2 := sampler.NewRNG(seed), sampler.NewRNG(seed)
		p, err := f.Draw(&r1)
		if err != nil {
			t.Fatal(err)
		}
		for a := 0; a < 3; a++ {
			if want := r2.Float64() < f.Prob; p.Axes[a] != want {
				t.Fatalf("seed %d axis %d: got %v, want %v", seed, a, p.Axes[a], want)
			}
			if p.Axes[a] {
				count[a]++
			}
		}
		if r1 != r2 {
			t.Fatalf("seed %d: Draw consumed other than three values", seed)
		}
	}
	for a, c := range count {
		if c < n*31/100 || c > n*35/100 {
			t.Errorf("axis %d flipped %d of %d times, want about a third", a, c, n)
		}
	}
	for _, p := range []float64{-1, 2} {
		r := sampler.NewRNG(0)
		if _, err := (RandomFlip{Prob: p}).Draw(&r); !errors.Is(err, ErrParams) {
			t.Errorf("prob %v: got %v", p, err)
		}
	}
}
