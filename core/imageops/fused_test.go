package imageops

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

var imagenet = func() *Normalize {
	n, err := NewNormalize([]float64{0.485, 0.456, 0.406}, []float64{0.229, 0.224, 0.225})
	if err != nil {
		panic(err)
	}
	return n
}()

// unfused runs the plan as torchvision's chain does, one op at a time:
// crop, resize, center crop (pad), flips, ToTensor, Normalize.
func unfused(t testing.TB, src *Image, p Plan, norm *Normalize) []float32 {
	t.Helper()
	crop, err := src.View(p.Crop)
	if err != nil {
		t.Fatal(err)
	}
	var resized, out Image
	if err := Resize(&resized, &crop, p.ResizeH, p.ResizeW); err != nil {
		t.Fatal(err)
	}
	win := p.window()
	if win == CenterCropRect(p.ResizeH, p.ResizeW, win.H, win.W) {
		err = CenterCrop(&out, &resized, win.H, win.W)
	} else {
		err = cropPad(&out, &resized, win)
	}
	if err != nil {
		t.Fatal(err)
	}
	if p.HFlip {
		_ = HFlip(&out)
	}
	if p.VFlip {
		_ = VFlip(&out)
	}
	ten := make([]float32, out.C*out.H*out.W)
	if err := ToTensor(ten, &out); err != nil {
		t.Fatal(err)
	}
	if norm != nil {
		if err := norm.Apply(ten); err != nil {
			t.Fatal(err)
		}
	}
	return ten
}

// cropPad copies region r of src, zero outside it.
func cropPad(dst, src *Image, r Rect) error {
	dst.Reset(r.W, r.H, src.C)
	clear(dst.Pix)
	for y := 0; y < r.H; y++ {
		for x := 0; x < r.W; x++ {
			sy, sx := r.Top+y, r.Left+x
			if sy >= 0 && sy < src.H && sx >= 0 && sx < src.W {
				copy(dst.Pix[y*dst.Stride+x*src.C:][:src.C], src.Pix[sy*src.Stride+sx*src.C:])
			}
		}
	}
	return nil
}

func TestFusedEqualsUnfused(t *testing.T) {
	type tc struct {
		name string
		src  *Image
		p    Plan
		norm *Normalize
	}
	var cases []tc
	rrc := RandomResizedCrop{H: 224, W: 224}
	for _, sz := range [][2]int{{375, 500}, {480, 640}, {100, 37}, {64, 48}} {
		for _, c := range []int{3, 1} {
			src := testImage(sz[1], sz[0], c, 30, uint64(sz[0]+c))
			norm := imagenet
			if c == 1 {
				norm, _ = NewNormalize([]float64{0.5}, []float64{0.25})
			}
			for k := 0; k < 6; k++ {
				rng := sampler.NewRNG(5, 0, uint64(k), 0)
				p := rrc.Plan(&rng, src.H, src.W, 0.5)
				p.VFlip = k%3 == 0
				cases = append(cases, tc{fmt.Sprintf("rrc %dx%dx%d #%d", sz[1], sz[0], c, k), src, p, norm})
			}
			cases = append(cases,
				tc{fmt.Sprintf("eval %dx%dx%d", sz[1], sz[0], c), src, ResizeCenterCropPlan(src.H, src.W, 256, 224, 224), norm},
				tc{fmt.Sprintf("eval padded %dx%dx%d", sz[1], sz[0], c), src, ResizeCenterCropPlan(src.H, src.W, 32, 40, 50), norm},
				tc{fmt.Sprintf("to tensor only %dx%dx%d", sz[1], sz[0], c), src, Plan{Crop: Rect{H: src.H, W: src.W}, ResizeH: 17, ResizeW: 300, HFlip: true}, nil},
				tc{fmt.Sprintf("window past the edge %dx%dx%d", sz[1], sz[0], c), src,
					Plan{Crop: Rect{Top: 1, Left: 2, H: src.H - 1, W: src.W - 2}, ResizeH: 30, ResizeW: 20, Window: Rect{Top: 25, Left: -3, H: 10, W: 12}, HFlip: true}, norm},
				tc{fmt.Sprintf("window outside %dx%dx%d", sz[1], sz[0], c), src,
					Plan{Crop: Rect{H: src.H, W: src.W}, ResizeH: 10, ResizeW: 10, Window: Rect{Top: 20, Left: 0, H: 3, W: 3}}, norm},
			)
		}
	}
	var s Scratch // one worker's scratch across all cases
	for _, tt := range cases {
		h, w := tt.p.OutSize()
		got := make([]float32, tt.src.C*h*w)
		if err := s.Fused(got, tt.src, tt.p, tt.norm); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		want := unfused(t, tt.src, tt.p, tt.norm)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("%s (%+v): value %d: got %v, want %v", tt.name, tt.p, i, got[i], want[i])
				break
			}
		}
		u := make([]uint8, len(got))
		if err := s.FusedUint8(u, tt.src, tt.p); err != nil {
			t.Fatalf("%s uint8: %v", tt.name, err)
		}
		unit := unfused(t, tt.src, tt.p, nil)
		for i := range u {
			if float32(u[i])/255 != unit[i] {
				t.Errorf("%s: FusedUint8 value %d: got %d, want %v*255", tt.name, i, u[i], unit[i])
				break
			}
		}
	}
}

func TestFusedAllocatesNothing(t *testing.T) {
	src := testImage(500, 375, 3, 30, 1)
	rrc := RandomResizedCrop{H: 224, W: 224}
	dst := make([]float32, 3*224*224)
	var s Scratch
	// Grow the buffers once with the largest crop.
	if err := s.Fused(dst, src, Plan{Crop: Rect{H: 375, W: 500}, ResizeH: 224, ResizeW: 224}, imagenet); err != nil {
		t.Fatal(err)
	}
	k := uint64(0)
	allocs := testing.AllocsPerRun(50, func() {
		rng := sampler.NewRNG(1, 0, k, 0)
		k++
		if err := s.Fused(dst, src, rrc.Plan(&rng, src.H, src.W, 0.5), imagenet); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Fused: %v allocations per image, want 0", allocs)
	}
}

func TestFusedErrors(t *testing.T) {
	src := testImage(20, 10, 3, 0, 1)
	good := Plan{Crop: Rect{H: 10, W: 20}, ResizeH: 4, ResizeW: 4}
	gray, _ := NewNormalize([]float64{0.5}, []float64{0.5})
	tests := []struct {
		name string
		p    Plan
		n    int
		norm *Normalize
	}{
		{"crop outside", Plan{Crop: Rect{Top: 1, H: 10, W: 20}, ResizeH: 4, ResizeW: 4}, 48, nil},
		{"empty crop", Plan{Crop: Rect{H: 0, W: 20}, ResizeH: 4, ResizeW: 4}, 48, nil},
		{"zero resize", Plan{Crop: Rect{H: 10, W: 20}, ResizeH: 0, ResizeW: 4}, 0, nil},
		{"empty window", Plan{Crop: Rect{H: 10, W: 20}, ResizeH: 4, ResizeW: 4, Window: Rect{H: 1}}, 0, nil},
		{"short destination", good, 47, nil},
		{"long destination", good, 49, nil},
		{"normalize for gray", good, 48, gray},
	}
	var s Scratch
	for _, tt := range tests {
		err := s.Fused(make([]float32, tt.n), src, tt.p, tt.norm)
		if !errors.Is(err, ErrBadArg) {
			t.Errorf("%s: got %v, want ErrBadArg", tt.name, err)
		}
	}
	if err := s.FusedUint8(make([]uint8, 47), src, good); !errors.Is(err, ErrBadArg) {
		t.Errorf("FusedUint8 short destination: got %v, want ErrBadArg", err)
	}
}

func TestResizeCenterCropPlan(t *testing.T) {
	// torchvision: Resize(256) of 500x375 gives 341x256; CenterCrop(224)
	// then starts at top round(58.5) = 58, left 16.
	got := ResizeCenterCropPlan(375, 500, 256, 224, 224)
	want := Plan{Crop: Rect{H: 375, W: 500}, ResizeH: 256, ResizeW: 341, Window: Rect{Top: 16, Left: 58, H: 224, W: 224}}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if h, w := got.OutSize(); h != 224 || w != 224 {
		t.Errorf("OutSize = %dx%d", w, h)
	}
}

func TestScaleCrop(t *testing.T) {
	p := Plan{Crop: Rect{Top: 101, Left: 37, H: 300, W: 250}, ResizeH: 224, ResizeW: 224, HFlip: true}
	got := p.ScaleCrop(480, 640, 240, 320) // a 1/2 DCT-scaled decode
	want := p
	want.Crop = Rect{Top: 50, Left: 18, H: 151, W: 126} // edges rounded outwards
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if p.ScaleCrop(480, 640, 480, 640) != p {
		t.Error("full size changed the plan")
	}
	whole := Plan{Crop: Rect{H: 480, W: 640}}
	if got := whole.ScaleCrop(480, 640, 60, 80).Crop; got != (Rect{H: 60, W: 80}) {
		t.Errorf("whole image: got %+v", got)
	}
}
