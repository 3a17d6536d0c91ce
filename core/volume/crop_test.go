package volume

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// refCrop is the crop by definition: one voxel at a time, values through
// At/Set.
func refCrop(v *Volume, p CropParams, pad Pad) *Volume {
	r := len(v.Shape)
	c := 1
	for _, d := range v.Shape[:r-3] {
		c *= d
	}
	D, H, W := v.Shape[r-3], v.Shape[r-2], v.Shape[r-1]
	shape := append(slices.Clone(v.Shape[:r-3]), p.Size[:]...)
	out, _ := New(v.DType, shape...)
	clamp := func(i, n int) int { return min(max(i, 0), n-1) }
	o := 0
	for ch := 0; ch < c; ch++ {
		for z := 0; z < p.Size[0]; z++ {
			for y := 0; y < p.Size[1]; y++ {
				for x := 0; x < p.Size[2]; x++ {
					sz, sy, sx := p.Start[0]+z, p.Start[1]+y, p.Start[2]+x
					inside := sz >= 0 && sz < D && sy >= 0 && sy < H && sx >= 0 && sx < W
					switch {
					case inside || pad.Mode == PadEdge:
						sz, sy, sx = clamp(sz, D), clamp(sy, H), clamp(sx, W)
						out.Set(o, v.At(((ch*D+sz)*H+sy)*W+sx))
					default:
						out.Set(o, pad.Value)
					}
					o++
				}
			}
		}
	}
	return out
}

func TestCropMatchesReference(t *testing.T) {
	shapes := [][]int{{5, 6, 7}, {1, 5, 6, 7}, {2, 3, 4, 9}, {2, 1, 1, 3, 1, 5}}
	windows := []CropParams{
		{Start: [3]int{0, 0, 0}, Size: [3]int{1, 1, 1}},
		{Start: [3]int{1, 2, 3}, Size: [3]int{2, 3, 4}},
		{Start: [3]int{0, 0, 0}, Size: [3]int{5, 6, 7}},     // whole volume
		{Start: [3]int{-2, -1, -3}, Size: [3]int{4, 4, 5}},  // before every axis
		{Start: [3]int{3, 4, 5}, Size: [3]int{4, 4, 5}},     // past every axis
		{Start: [3]int{-1, -2, -3}, Size: [3]int{9, 9, 12}}, // larger than the volume
		{Start: [3]int{7, -9, 20}, Size: [3]int{2, 3, 4}},   // entirely outside
		{Start: [3]int{0, 0, -6}, Size: [3]int{2, 2, 3}},    // outside along W only
	}
	pads := []Pad{{}, {Mode: PadConstant, Value: -3}, {Mode: PadEdge}}
	for dt := Uint8; dt <= Float64; dt++ {
		for si, shape := range shapes {
			v := randomVolume(t, dt, uint64(si), shape...)
			orig := v.Clone()
			for wi, w := range windows {
				for _, pad := range pads {
					got, err := Crop(v, w, pad)
					if err != nil {
						t.Fatalf("%s %v window %d: %v", dt, shape, wi, err)
					}
					want := refCrop(v, w, pad)
					if !Equal(got, want) {
						t.Fatalf("%s %v window %+v pad %+v: got %v %x, want %v %x", dt, shape, w, pad, got.Shape, got.Data, want.Shape, want.Data)
					}
					dst := make([]byte, len(want.Data))
					for i := range dst {
						dst[i] = 0xa5 // every byte must be written
					}
					if err := CropInto(dst, v, w, pad); err != nil || string(dst) != string(want.Data) {
						t.Fatalf("%s %v window %+v pad %+v: CropInto differs (%v)", dt, shape, w, pad, err)
					}
				}
			}
			if !Equal(v, orig) {
				t.Fatalf("%s %v: Crop modified its input", dt, shape)
			}
		}
	}
}

func TestCropErrors(t *testing.T) {
	v := randomVolume(t, Float32, 1, 4, 4, 4)
	tests := []struct {
		name string
		v    *Volume
		p    CropParams
		pad  Pad
		want error
	}{
		{"zero size", v, CropParams{Size: [3]int{0, 1, 1}}, Pad{}, ErrParams},
		{"negative size", v, CropParams{Size: [3]int{1, -1, 1}}, Pad{}, ErrParams},
		{"huge start", v, CropParams{Start: [3]int{1 << 50, 0, 0}, Size: [3]int{1, 1, 1}}, Pad{}, ErrParams},
		{"huge negative start", v, CropParams{Start: [3]int{0, -1 << 62, 0}, Size: [3]int{1, 1, 1}}, Pad{}, ErrParams},
		{"bad pad mode", v, CropParams{Size: [3]int{1, 1, 1}}, Pad{Mode: 7}, ErrParams},
		{"rank 2", randomVolume(t, Float32, 1, 4, 4), CropParams{Size: [3]int{1, 1, 1}}, Pad{}, ErrShape},
		{"empty axis", &Volume{Shape: []int{0, 4, 4}, DType: Float32}, CropParams{Size: [3]int{1, 1, 1}}, Pad{}, ErrShape},
		{"data short", &Volume{Shape: []int{2, 2, 2}, DType: Float32, Data: make([]byte, 31)}, CropParams{Size: [3]int{1, 1, 1}}, Pad{}, ErrShape},
		{"bad dtype", &Volume{Shape: []int{1, 1, 1}, DType: 9, Data: make([]byte, 1)}, CropParams{Size: [3]int{1, 1, 1}}, Pad{}, ErrDType},
	}
	for _, tt := range tests {
		if _, err := Crop(tt.v, tt.p, tt.pad); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := CropInto(make([]byte, 7), v, CropParams{Size: [3]int{1, 2, 1}}, Pad{}); !errors.Is(err, ErrShape) {
		t.Errorf("CropInto short destination: got %v", err)
	}
	if _, err := Crop(nil, CropParams{Size: [3]int{1, 1, 1}}, Pad{}); err == nil {
		t.Error("nil volume: no error")
	}
	a := randomVolume(t, Float32, 1, 4, 4, 4)
	b := randomVolume(t, Uint8, 1, 4, 4, 5)
	if _, _, err := CropPair(a, b, CropParams{Size: [3]int{1, 1, 1}}, Pad{}, Pad{}); !errors.Is(err, ErrShape) {
		t.Errorf("CropPair with different spatial sizes: got %v", err)
	}
}

func TestCropPairCutsBothAlike(t *testing.T) {
	img := randomVolume(t, Float32, 1, 2, 6, 7, 8)
	lbl := randomVolume(t, Uint8, 2, 1, 6, 7, 8)
	p := CropParams{Start: [3]int{-1, 2, 3}, Size: [3]int{4, 4, 4}}
	gi, gl, err := CropPair(img, lbl, p, Pad{Value: -1}, Pad{Mode: PadEdge})
	if err != nil {
		t.Fatal(err)
	}
	if !Equal(gi, refCrop(img, p, Pad{Value: -1})) || !Equal(gl, refCrop(lbl, p, Pad{Mode: PadEdge})) {
		t.Error("pair differs from cropping each alone")
	}
}

func TestRandomCropDraw(t *testing.T) {
	tests := []struct {
		sp, size [3]int
	}{
		{[3]int{10, 7, 5}, [3]int{4, 7, 1}},
		{[3]int{3, 3, 3}, [3]int{3, 3, 3}},
		{[3]int{3, 4, 5}, [3]int{6, 9, 4}}, // larger on two axes: centred
	}
	for _, tt := range tests {
		c := RandomCrop{Size: tt.size}
		hits := make([]map[int]int, 3)
		for a := range hits {
			hits[a] = map[int]int{}
		}
		const n = 6000
		for seed := uint64(0); seed < n; seed++ {
			r := sampler.NewRNG(seed)
			p, err := c.Draw(&r, tt.sp)
			if err != nil {
				t.Fatal(err)
			}
			// Exactly three Below calls with the documented bounds.
			w := sampler.NewRNG(seed)
			for a := 0; a < 3; a++ {
				want := int(w.Below(uint64(max(tt.sp[a]-tt.size[a], 0)+1))) - max(tt.size[a]-tt.sp[a], 0)/2
				if p.Start[a] != want {
					t.Fatalf("seed %d axis %d: got start %d, want %d", seed, a, p.Start[a], want)
				}
				hits[a][p.Start[a]]++
			}
			if r != w {
				t.Fatalf("seed %d: Draw consumed a different number of values", seed)
			}
			if p.Size != tt.size || p.Foreground {
				t.Fatalf("got %+v", p)
			}
		}
		for a := 0; a < 3; a++ {
			k, m := tt.size[a], tt.sp[a]
			if k > m {
				if len(hits[a]) != 1 || hits[a][-(k-m)/2] != n {
					t.Errorf("%v axis %d: got %v, want always %d", tt, a, hits[a], -(k-m)/2)
				}
				continue
			}
			positions := m - k + 1
			for s := 0; s < positions; s++ {
				// Uniform: each position within 25% of its share.
				if got, share := hits[a][s], n/positions; got < share*3/4 || got > share*5/4 {
					t.Errorf("%v axis %d start %d: %d hits, want about %d", tt, a, s, got, share)
				}
			}
			if len(hits[a]) != positions {
				t.Errorf("%v axis %d: %d distinct starts, want %d", tt, a, len(hits[a]), positions)
			}
		}
	}
}

// labelWith builds a (1, D, H, W) label of type dt with the given voxels
// set to their classes.
func labelWith(t testing.TB, dt DType, sp [3]int, fg map[[3]int]float64) *Volume {
	t.Helper()
	v, err := New(dt, 1, sp[0], sp[1], sp[2])
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range fg {
		v.Set((p[0]*sp[1]+p[1])*sp[2]+p[2], c)
	}
	return v
}

func TestForegroundCropContainsForeground(t *testing.T) {
	sp := [3]int{9, 12, 10}
	labels := []struct {
		name string
		fg   map[[3]int]float64
	}{
		{"one voxel in a corner", map[[3]int]float64{{0, 0, 0}: 1}},
		{"far corner", map[[3]int]float64{{8, 11, 9}: 2}},
		{"two classes", map[[3]int]float64{{1, 2, 3}: 1, {4, 4, 4}: 1, {8, 0, 9}: 2}},
		{"edge of every axis", map[[3]int]float64{{0, 11, 5}: 1, {8, 6, 0}: 3}},
	}
	sizes := [][3]int{{4, 4, 4}, {9, 12, 10}, {1, 1, 1}, {12, 5, 16}, {3, 20, 2}}
	for _, dt := range []DType{Uint8, Int16, Int32, Float32, Float16, Float64} {
		for _, lb := range labels {
			label := labelWith(t, dt, sp, lb.fg)
			for _, size := range sizes {
				c := ForegroundCrop{Size: size, Prob: 0.7}
				taken := 0
				const seeds = 400
				for seed := uint64(0); seed < seeds; seed++ {
					r := sampler.NewRNG(seed, 99)
					p, err := c.Draw(&r, label)
					if err != nil {
						t.Fatal(err)
					}
					if !p.Foreground {
						continue
					}
					taken++
					if _, ok := lb.fg[p.Center]; !ok {
						t.Fatalf("%s %s size %v seed %d: centre %v is not foreground", dt, lb.name, size, seed, p.Center)
					}
					for a := 0; a < 3; a++ {
						if p.Center[a] < p.Start[a] || p.Center[a] >= p.Start[a]+size[a] {
							t.Fatalf("%s %s size %v seed %d: centre %v outside window %+v", dt, lb.name, size, seed, p.Center, p)
						}
						if size[a] <= sp[a] && (p.Start[a] < 0 || p.Start[a]+size[a] > sp[a]) {
							t.Fatalf("%s %s size %v seed %d: window %+v leaves the volume", dt, lb.name, size, seed, p)
						}
					}
					got, err := Crop(label, p, Pad{})
					if err != nil {
						t.Fatal(err)
					}
					nonzero := false
					for i := 0; i < got.NumElements(); i++ {
						nonzero = nonzero || got.At(i) > 0
					}
					if !nonzero {
						t.Fatalf("%s %s size %v seed %d: cropped label has no foreground", dt, lb.name, size, seed)
					}
				}
				// The branch is taken with probability 0.7.
				if taken < seeds*6/10 || taken > seeds*8/10 {
					t.Errorf("%s %s size %v: foreground branch %d of %d times, want about 70%%", dt, lb.name, size, taken, seeds)
				}
			}
		}
	}
}

// refForegroundDraw is the documented draw order, written out.
func refForegroundDraw(r *sampler.RNG, label *Volume, c ForegroundCrop) CropParams {
	sp, _ := label.Spatial()
	uniform := func() CropParams {
		p := CropParams{Size: c.Size}
		for a := 0; a < 3; a++ {
			p.Start[a] = int(r.Below(uint64(max(sp[a]-c.Size[a], 0)+1))) - max(c.Size[a]-sp[a], 0)/2
		}
		return p
	}
	if r.Float64() >= c.Prob {
		return uniform()
	}
	var classes []float64
	for i := 0; i < label.NumElements(); i++ {
		if x := label.At(i); x > 0 && !slices.Contains(classes, x) {
			classes = append(classes, x)
		}
	}
	if len(classes) == 0 {
		return uniform()
	}
	slices.Sort(classes)
	class := classes[r.Below(uint64(len(classes)))]
	var at []int
	for i := 0; i < label.NumElements(); i++ {
		if label.At(i) == class {
			at = append(at, i)
		}
	}
	flat := at[r.Below(uint64(len(at)))] % (sp[0] * sp[1] * sp[2])
	p := CropParams{Size: c.Size, Foreground: true, Center: [3]int{flat / (sp[1] * sp[2]), flat / sp[2] % sp[1], flat % sp[2]}}
	for a := 0; a < 3; a++ {
		if sp[a] >= c.Size[a] {
			p.Start[a] = min(max(p.Center[a]-c.Size[a]/2, 0), sp[a]-c.Size[a])
		} else {
			p.Start[a] = -((c.Size[a] - sp[a]) / 2)
		}
	}
	return p
}

func TestForegroundCropFollowsDocumentedDraws(t *testing.T) {
	sp := [3]int{6, 7, 8}
	// Dense labels of several types, with negative values, -0 and NaN as
	// background, two channels, and runs of equal classes.
	for _, dt := range []DType{Uint8, Int8, Int16, Int32, Float16, Float32, Float64} {
		label, _ := New(dt, 2, sp[0], sp[1], sp[2])
		r := sampler.NewRNG(uint64(dt))
		for i := 0; i < label.NumElements(); i++ {
			switch k := r.Below(10); {
			case k < 6:
			case k == 6 && dt.IsFloat():
				label.Set(i, [3]float64{-0.0, -1, 0}[r.Below(3)])
			case k == 7 && dt.IsFloat():
				label.Set(i, 0.5)
			case k == 7 && dt != Uint8:
				label.Set(i, -3)
			default:
				label.Set(i, float64(1+r.Below(3)))
			}
		}
		for _, size := range [][3]int{{2, 3, 4}, {6, 7, 8}, {8, 2, 9}} {
			for _, prob := range []float64{0, 0.5, 1} {
				c := ForegroundCrop{Size: size, Prob: prob}
				for seed := uint64(0); seed < 200; seed++ {
					r1, r2 := sampler.NewRNG(seed), sampler.NewRNG(seed)
					got, err := c.Draw(&r1, label)
					if err != nil {
						t.Fatal(err)
					}
					want := refForegroundDraw(&r2, label, c)
					if got != want || r1 != r2 {
						t.Fatalf("%s size %v prob %v seed %d: got %+v, want %+v (same RNG after: %v)", dt, size, prob, seed, got, want, r1 == r2)
					}
				}
			}
		}
	}
}

func TestForegroundCropWithoutForegroundIsUniform(t *testing.T) {
	label := labelWith(t, Uint8, [3]int{5, 6, 7}, nil)
	c := ForegroundCrop{Size: [3]int{2, 3, 4}, Prob: 1}
	for seed := uint64(0); seed < 100; seed++ {
		r1, r2 := sampler.NewRNG(seed), sampler.NewRNG(seed)
		got, err := c.Draw(&r1, label)
		if err != nil {
			t.Fatal(err)
		}
		r2.Float64()
		want, _ := RandomCrop{Size: c.Size}.Draw(&r2, [3]int{5, 6, 7})
		if got != want || r1 != r2 {
			t.Fatalf("seed %d: got %+v, want the uniform %+v", seed, got, want)
		}
	}
}

// Classes are drawn first, so a one-voxel class is the centre about as
// often as a large one.
func TestForegroundCropBalancesClasses(t *testing.T) {
	fg := map[[3]int]float64{{7, 7, 7}: 2}
	for z := 0; z < 4; z++ {
		for y := 0; y < 8; y++ {
			fg[[3]int{z, y, 1}] = 1
		}
	}
	label := labelWith(t, Uint8, [3]int{8, 8, 8}, fg)
	c := ForegroundCrop{Size: [3]int{4, 4, 4}, Prob: 1}
	small := 0
	const n = 4000
	for seed := uint64(0); seed < n; seed++ {
		r := sampler.NewRNG(seed)
		p, err := c.Draw(&r, label)
		if err != nil {
			t.Fatal(err)
		}
		if p.Center == [3]int{7, 7, 7} {
			small++
		}
	}
	if small < n*45/100 || small > n*55/100 {
		t.Errorf("one-voxel class centred %d of %d times, want about half", small, n)
	}
}

func TestForegroundCropErrors(t *testing.T) {
	label := labelWith(t, Uint8, [3]int{4, 4, 4}, nil)
	r := sampler.NewRNG(1)
	for _, c := range []ForegroundCrop{
		{Size: [3]int{2, 2, 2}, Prob: -0.1},
		{Size: [3]int{2, 2, 2}, Prob: 1.5},
		{Size: [3]int{0, 2, 2}, Prob: 0.5},
	} {
		if _, err := c.Draw(&r, label); !errors.Is(err, ErrParams) {
			t.Errorf("%+v: got %v, want ErrParams", c, err)
		}
	}
	if _, err := (ForegroundCrop{Size: [3]int{2, 2, 2}}).Draw(&r, randomVolume(t, Uint8, 1, 4, 4)); !errors.Is(err, ErrShape) {
		t.Errorf("rank-2 label: got %v", err)
	}
	if _, err := (RandomCrop{Size: [3]int{2, 2, 2}}).Draw(&r, [3]int{0, 2, 2}); !errors.Is(err, ErrShape) {
		t.Errorf("empty volume: got %v", err)
	}
}

func TestCropDeterministic(t *testing.T) {
	label := labelWith(t, Uint8, [3]int{20, 20, 20}, map[[3]int]float64{{3, 4, 5}: 1, {15, 2, 9}: 2})
	img := randomVolume(t, Float32, 5, 1, 20, 20, 20)
	c := ForegroundCrop{Size: [3]int{8, 8, 8}, Prob: 0.5}
	run := func(seed uint64) string {
		r := sampler.NewRNG(seed, 1, 2, 3)
		p, err := c.Draw(&r, label)
		if err != nil {
			t.Fatal(err)
		}
		a, b, err := CropPair(img, label, p, Pad{}, Pad{})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(p) + string(a.Data) + string(b.Data)
	}
	for seed := uint64(0); seed < 50; seed++ {
		if run(seed) != run(seed) {
			t.Fatalf("seed %d: two runs differ", seed)
		}
	}
}
