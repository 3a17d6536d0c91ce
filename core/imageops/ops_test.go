package imageops

import (
	"errors"
	"math"
	"testing"
)

func TestCenterCropRect(t *testing.T) {
	tests := []struct {
		imgH, imgW, h, w int
		want             Rect
	}{
		{256, 341, 224, 224, Rect{16, 58, 224, 224}}, // round(58.5) = 58: half to even
		{341, 256, 224, 224, Rect{58, 16, 224, 224}},
		{10, 10, 9, 9, Rect{0, 0, 9, 9}}, // round(0.5) = 0
		{10, 10, 7, 7, Rect{2, 2, 7, 7}}, // round(1.5) = 2
		{10, 10, 5, 5, Rect{2, 2, 5, 5}}, // round(2.5) = 2
		{10, 10, 10, 10, Rect{0, 0, 10, 10}},
		{17, 9, 20, 30, Rect{-1, -10, 20, 30}}, // padded: (20-17)//2, (30-9)//2 before
		{17, 9, 11, 8, Rect{3, 0, 11, 8}},      // round(3.0), round(0.5)
	}
	for _, tt := range tests {
		if got := CenterCropRect(tt.imgH, tt.imgW, tt.h, tt.w); got != tt.want {
			t.Errorf("CenterCropRect(%d, %d, %d, %d) = %+v, want %+v", tt.imgH, tt.imgW, tt.h, tt.w, got, tt.want)
		}
	}
}

func TestCenterCropPixels(t *testing.T) {
	// 3x2 gray image, values 1..6.
	src := &Image{W: 3, H: 2, C: 1, Stride: 3, Pix: []uint8{1, 2, 3, 4, 5, 6}}
	tests := []struct {
		h, w int
		want []uint8
	}{
		{1, 1, []uint8{2}},                                  // top round(0.5)=0, left round(1.0)=1
		{2, 2, []uint8{1, 2, 4, 5}},                         // left round(0.5) = 0
		{2, 3, []uint8{1, 2, 3, 4, 5, 6}},                   // whole image
		{4, 3, []uint8{0, 0, 0, 1, 2, 3, 4, 5, 6, 0, 0, 0}}, // padded one row above, one below
		{2, 5, []uint8{0, 1, 2, 3, 0, 0, 4, 5, 6, 0}},
		{1, 6, []uint8{0, 1, 2, 3, 0, 0}}, // pad (6-3)//2 = 1 left, 2 right
	}
	for _, tt := range tests {
		var got Image
		if err := CenterCrop(&got, src, tt.h, tt.w); err != nil {
			t.Fatal(err)
		}
		if got.W != tt.w || got.H != tt.h || string(got.Pix) != string(tt.want) {
			t.Errorf("CenterCrop(%d, %d): got %dx%d %v, want %v", tt.h, tt.w, got.W, got.H, got.Pix, tt.want)
		}
	}
}

func TestFlips(t *testing.T) {
	// 3x2 RGB, pixel p = (x, y, 9).
	src := NewImage(3, 2, 3)
	for y := 0; y < 2; y++ {
		for x := 0; x < 3; x++ {
			copy(src.Pix[y*9+3*x:], []uint8{uint8(x), uint8(y), 9})
		}
	}
	h := NewImage(3, 2, 3)
	_ = src.CopyTo(h)
	if err := HFlip(h); err != nil {
		t.Fatal(err)
	}
	if want := []uint8{2, 0, 9, 1, 0, 9, 0, 0, 9, 2, 1, 9, 1, 1, 9, 0, 1, 9}; string(h.Pix) != string(want) {
		t.Errorf("HFlip: got %v, want %v", h.Pix, want)
	}
	v := NewImage(3, 2, 3)
	_ = src.CopyTo(v)
	if err := VFlip(v); err != nil {
		t.Fatal(err)
	}
	if want := []uint8{0, 1, 9, 1, 1, 9, 2, 1, 9, 0, 0, 9, 1, 0, 9, 2, 0, 9}; string(v.Pix) != string(want) {
		t.Errorf("VFlip: got %v, want %v", v.Pix, want)
	}
	// Flipping a view flips only the view's pixels.
	big := testImage(6, 5, 1, 255, 2)
	before := append([]uint8(nil), big.Pix...)
	view, err := big.View(Rect{Top: 1, Left: 1, H: 3, W: 4})
	if err != nil {
		t.Fatal(err)
	}
	_ = HFlip(&view)
	for y := 0; y < 5; y++ {
		for x := 0; x < 6; x++ {
			inside := y >= 1 && y < 4 && x >= 1 && x < 5
			wantX := x
			if inside {
				wantX = 1 + (4 - 1 - (x - 1))
			}
			if got, want := big.Pix[y*6+x], before[y*6+wantX]; got != want {
				t.Fatalf("flip of view at (%d,%d): got %d, want %d", x, y, got, want)
			}
		}
	}
}

func TestViewErrors(t *testing.T) {
	m := NewImage(4, 3, 3)
	for _, r := range []Rect{{-1, 0, 1, 1}, {0, 0, 4, 4}, {0, 1, 3, 4}, {0, 0, 0, 1}, {2, 3, 1, 1}} {
		if _, err := m.View(r); (err == nil) != (r == Rect{2, 3, 1, 1}) {
			t.Errorf("View(%+v): err %v", r, err)
		}
	}
}

// jitterSrc is the 2x2 image the Pillow values below were computed on.
func jitterSrc() *Image {
	return &Image{W: 2, H: 2, C: 3, Stride: 6, Pix: []uint8{10, 200, 30, 250, 128, 0, 77, 77, 77, 0, 90, 255}}
}

func TestAdjustMatchesPillow(t *testing.T) {
	// Pillow 13.0.0, ImageEnhance.<kind>(img).enhance(factor) on jitterSrc,
	// which is what torchvision's adjust_* do on PIL images.
	tests := []struct {
		kind   string
		factor float64
		want   []uint8
	}{
		{"brightness", 0.5, []uint8{5, 100, 15, 125, 64, 0, 38, 38, 38, 0, 45, 127}},
		{"brightness", 0.75, []uint8{7, 150, 22, 187, 96, 0, 57, 57, 57, 0, 67, 191}},
		{"brightness", 1.3, []uint8{13, 255, 39, 255, 166, 0, 100, 100, 100, 0, 116, 255}},
		{"brightness", 0, []uint8{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"contrast", 0, []uint8{108, 108, 108, 108, 108, 108, 108, 108, 108, 108, 108, 108}},
		{"contrast", 0.5, []uint8{59, 154, 69, 179, 118, 54, 92, 92, 92, 54, 99, 181}},
		{"contrast", 1.3, []uint8{0, 227, 6, 255, 134, 0, 67, 67, 67, 0, 84, 255}},
		{"contrast", 2.0, []uint8{0, 255, 0, 255, 148, 0, 46, 46, 46, 0, 72, 255}},
		{"saturation", 0, []uint8{124, 124, 124, 150, 150, 150, 77, 77, 77, 82, 82, 82}},
		{"saturation", 0.75, []uint8{38, 181, 53, 225, 133, 37, 77, 77, 77, 20, 88, 211}},
		{"saturation", 1.3, []uint8{0, 222, 1, 255, 121, 0, 77, 77, 77, 0, 92, 255}},
	}
	for _, tt := range tests {
		m := jitterSrc()
		var err error
		switch tt.kind {
		case "brightness":
			err = AdjustBrightness(m, tt.factor)
		case "contrast":
			err = AdjustContrast(m, tt.factor)
		case "saturation":
			err = AdjustSaturation(m, tt.factor)
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Pix) != string(tt.want) {
			t.Errorf("%s %v: got %v, want %v", tt.kind, tt.factor, m.Pix, tt.want)
		}
	}
	if got := GrayMean(jitterSrc()); got != 108 {
		t.Errorf("GrayMean: got %d, want 108", got)
	}
}

// plainBlend is Image.blend's formula written per sample: C float
// arithmetic, truncation toward zero, clamping.
func plainBlend(deg, v float64, factor float64) uint8 {
	a := float32(factor)
	t := float32(deg) + float32(a*float32(v-deg))
	return uint8(math.Max(0, math.Min(255, math.Trunc(float64(t)))))
}

func TestColorJitterMatchesPlainFormulas(t *testing.T) {
	src := testImage(37, 23, 3, 60, 5)
	for _, p := range []JitterParams{
		{Order: [3]Jitter{0, 1, 2}, Brightness: 0.63, Contrast: 1.37, Saturation: 0.2},
		{Order: [3]Jitter{2, 0, 1}, Brightness: 1.9, Contrast: 0.1, Saturation: 1.6},
		{Order: [3]Jitter{1, 2, 0}, Brightness: 1, Contrast: 1, Saturation: 1},
	} {
		got := NewImage(src.W, src.H, 3)
		_ = src.CopyTo(got)
		if err := p.Apply(got); err != nil {
			t.Fatal(err)
		}
		want := NewImage(src.W, src.H, 3)
		_ = src.CopyTo(want)
		for _, f := range p.Order {
			px := want.Pix
			switch f {
			case JitterBrightness:
				for i, v := range px {
					px[i] = plainBlend(0, float64(v), p.Brightness)
				}
			case JitterContrast:
				var sum float64
				for i := 0; i < len(px); i += 3 {
					sum += math.Floor((float64(px[i])*19595 + float64(px[i+1])*38470 + float64(px[i+2])*7471 + 32768) / 65536)
				}
				mean := math.Floor(sum/float64(len(px)/3) + 0.5)
				for i, v := range px {
					px[i] = plainBlend(mean, float64(v), p.Contrast)
				}
			case JitterSaturation:
				for i := 0; i < len(px); i += 3 {
					l := math.Floor((float64(px[i])*19595 + float64(px[i+1])*38470 + float64(px[i+2])*7471 + 32768) / 65536)
					for c := 0; c < 3; c++ {
						px[i+c] = plainBlend(l, float64(px[i+c]), p.Saturation)
					}
				}
			}
		}
		if d := maxDiff(got, want); d != 0 {
			t.Errorf("%+v: max abs diff %d vs the plain formulas, want 0", p, d)
		}
	}
}

func TestAdjustErrors(t *testing.T) {
	for _, f := range []func(*Image, float64) error{AdjustBrightness, AdjustContrast, AdjustSaturation} {
		if err := f(jitterSrc(), -0.1); !errors.Is(err, ErrBadArg) {
			t.Errorf("negative factor: got %v, want ErrBadArg", err)
		}
		if err := f(jitterSrc(), math.NaN()); !errors.Is(err, ErrBadArg) {
			t.Errorf("NaN factor: got %v, want ErrBadArg", err)
		}
	}
	gray := testImage(3, 3, 1, 255, 1)
	before := string(gray.Pix)
	if err := AdjustSaturation(gray, 0); err != nil || string(gray.Pix) != before {
		t.Errorf("saturation of a gray image changed it (err %v)", err)
	}
}

func TestToTensorAndNormalize(t *testing.T) {
	m := &Image{W: 2, H: 1, C: 3, Stride: 6, Pix: []uint8{0, 51, 255, 255, 102, 0}}
	got := make([]float32, 6)
	if err := ToTensor(got, m); err != nil {
		t.Fatal(err)
	}
	want := []float32{0, 1, 0.2, 0.4, 1, 0} // CHW: R plane, G plane, B plane
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ToTensor: got %v, want %v", got, want)
		}
	}
	n, err := NewNormalize([]float64{0.5, 0.5, 0.5}, []float64{0.5, 0.25, 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Apply(got); err != nil {
		t.Fatal(err)
	}
	want = []float32{-1, 1, -1.2, -0.4, 0.25, -0.25}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("Normalize: got %v, want %v", got, want)
		}
	}
	u := make([]uint8, 6)
	if err := PILToTensor(u, m); err != nil {
		t.Fatal(err)
	}
	if want := []uint8{0, 255, 51, 102, 255, 0}; string(u) != string(want) {
		t.Errorf("PILToTensor: got %v, want %v", u, want)
	}
	for _, bad := range [][2][]float64{{{0.5}, {0}}, {{0.5, 0.5}, {1, 1}}, {{0.5}, {1, 1}}, {{math.NaN()}, {1}}, {{0}, {math.Inf(1)}}} {
		if _, err := NewNormalize(bad[0], bad[1]); !errors.Is(err, ErrBadArg) {
			t.Errorf("NewNormalize(%v, %v): got %v, want ErrBadArg", bad[0], bad[1], err)
		}
	}
	var zero Normalize
	if err := zero.Apply(got); !errors.Is(err, ErrBadArg) {
		t.Errorf("zero Normalize: got %v, want ErrBadArg", err)
	}
	if err := ToTensor(make([]float32, 5), m); !errors.Is(err, ErrBadArg) {
		t.Errorf("short destination: got %v, want ErrBadArg", err)
	}
}
