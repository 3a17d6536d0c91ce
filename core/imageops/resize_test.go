package imageops

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// The reference below is a direct transcription of Pillow's resampling
// (src/libImaging/Resample.c: precompute_coeffs, normalize_coeffs_8bpc,
// ImagingResampleHorizontal_8bpc / Vertical_8bpc, ImagingResampleInner;
// the pass order of Pillow 13.0) for the BILINEAR filter and a box of the
// whole image, written for clarity: no windows, per-pixel loops in PIL's
// order, its own coefficient code. The implementation was also compared
// with Pillow 13.0.0 itself, outside these tests: 509 resize, crop, jitter
// and fused cases, every value equal.

// refCoeffs is precompute_coeffs + normalize_coeffs_8bpc: for each output
// position, the first input index and the fixed-point weights.
func refCoeffs(inSize, outSize int) (xmins []int, weights [][]int32) {
	in0, in1 := float32(0), float32(inSize) // PIL's box is float
	scale := float64(in1-in0) / float64(outSize)
	filterscale := scale
	if filterscale < 1.0 {
		filterscale = 1.0
	}
	support := 1.0 * filterscale // bilinear_filter's support
	for xx := 0; xx < outSize; xx++ {
		center := float64(in0) + (float64(xx)+0.5)*scale
		ww := 0.0
		ss := 1.0 / filterscale
		xmin := int(center - support + 0.5)
		if xmin < 0 {
			xmin = 0
		}
		xmax := int(center + support + 0.5)
		if xmax > inSize {
			xmax = inSize
		}
		xmax -= xmin
		k := make([]float64, xmax)
		for x := 0; x < xmax; x++ {
			t := (float64(x+xmin) - center + 0.5) * ss
			if t < 0 {
				t = -t
			}
			w := 0.0
			if t < 1.0 {
				w = 1.0 - t
			}
			k[x] = w
			ww += w
		}
		fixed := make([]int32, xmax)
		for x := 0; x < xmax; x++ {
			if ww != 0.0 {
				k[x] /= ww
			}
			if k[x] < 0 {
				fixed[x] = int32(-0.5 + k[x]*(1<<22))
			} else {
				fixed[x] = int32(0.5 + k[x]*(1<<22))
			}
		}
		xmins = append(xmins, xmin)
		weights = append(weights, fixed)
	}
	return xmins, weights
}

func refClip8(in int32) uint8 {
	v := in >> 22
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// refPass resamples along one axis: horizontal when horiz, else vertical.
func refPass(src *Image, outSize int, horiz bool) *Image {
	w, h := src.W, src.H
	in := w
	if horiz {
		w = outSize
	} else {
		in, h = h, outSize
	}
	xmins, weights := refCoeffs(in, outSize)
	out := NewImage(w, h, src.C)
	for yy := 0; yy < h; yy++ {
		for xx := 0; xx < w; xx++ {
			for c := 0; c < src.C; c++ {
				ss := int32(1 << 21)
				if horiz {
					for x, k := range weights[xx] {
						ss += int32(src.Pix[yy*src.Stride+(x+xmins[xx])*src.C+c]) * k
					}
				} else {
					for y, k := range weights[yy] {
						ss += int32(src.Pix[(y+xmins[yy])*src.Stride+xx*src.C+c]) * k
					}
				}
				out.Pix[yy*out.Stride+xx*out.C+c] = refClip8(ss)
			}
		}
	}
	return out
}

// pilResize is Image.resize((outW, outH), BILINEAR) on an 8-bit image.
func pilResize(src *Image, outH, outW int) *Image {
	needH := outW != src.W
	needV := outH != src.H
	// Pillow 13: the vertical pass goes first when both sizes change and
	// the height shrinks by more than twice as much as the width.
	dy, dx := src.H-outH, src.W-outW
	if needH && needV && dy > 0 && dy > 2*dx {
		return refPass(refPass(src, outH, false), outW, true)
	}
	out := src
	if needH {
		out = refPass(out, outW, true)
	}
	if needV {
		out = refPass(out, outH, false)
	}
	if out == src {
		out = NewImage(src.W, src.H, src.C)
		_ = src.CopyTo(out)
	}
	return out
}

func TestResizeMatchesPILReference(t *testing.T) {
	sizes := [][2]int{{480, 640}, {333, 517}, {17, 9}, {1, 50}, {50, 1}, {7, 7}, {1000, 37}, {113, 10}}
	outs := [][2]int{{224, 224}, {256, 341}, {3, 5}, {1, 1}, {100, 900}, {31, 17}, {7, 7}, {88, 4}, {40, 290}}
	var s Scratch // reused across every case, as a worker would
	for _, in := range sizes {
		for _, c := range []int{3, 1} {
			for _, noise := range []int{255, 20} {
				src := testImage(in[1], in[0], c, noise, uint64(in[0]*1000+in[1]))
				for _, out := range outs {
					name := fmt.Sprintf("%dx%dx%d_noise%d_to_%dx%d", in[1], in[0], c, noise, out[1], out[0])
					want := pilResize(src, out[0], out[1])
					var got Image
					if err := s.Resize(&got, src, out[0], out[1]); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if d := maxDiff(&got, want); d != 0 {
						t.Errorf("%s: max abs diff %d vs the PIL reference, want 0", name, d)
					}
				}
			}
		}
	}
}

// Small cases worked by hand from Resample.c (and confirmed with Pillow).
func TestResizeByHand(t *testing.T) {
	tests := []struct {
		name string
		in   []uint8
		outW int
		want []uint8
	}{
		// Downscale by 2: support 2, weights 3/7, 3/7, 1/7 (not a 2-tap mean).
		{"down2", []uint8{0, 70, 140, 210}, 2, []uint8{50, 160}},
		// Upscale by 2: plain bilinear with half-pixel centers, edges clamped.
		{"up2", []uint8{0, 255}, 4, []uint8{0, 64, 191, 255}},
		{"same", []uint8{1, 2, 3}, 3, []uint8{1, 2, 3}},
		{"to1", []uint8{0, 100, 200}, 1, []uint8{100}},
	}
	for _, tt := range tests {
		src := &Image{W: len(tt.in), H: 1, C: 1, Stride: len(tt.in), Pix: tt.in}
		var got Image
		if err := Resize(&got, src, 1, tt.outW); err != nil {
			t.Fatal(err)
		}
		if string(got.Pix) != string(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got.Pix, tt.want)
		}
	}
}

func TestPickOrder(t *testing.T) {
	// Each case was told apart on Pillow 13.0.0 (the two orders give
	// different pixels there).
	tests := []struct {
		inW, inH, outW, outH int
		want                 passOrder
	}{
		{1024, 768, 224, 224, horizontalFirst}, // dy 544 <= 2*dx 1600
		{640, 480, 900, 100, verticalFirst},    // width grows, height shrinks
		{10, 113, 4, 88, verticalFirst},        // dy 25 > 2*dx 12
		{33, 51, 98, 96, horizontalFirst},      // both grow
		{30, 84, 14, 35, verticalFirst},        // dy 49 > 32
		{47, 64, 11, 13, horizontalFirst},      // dy 51 <= 72
		{100, 40, 90, 20, horizontalFirst},     // dy 20 == 2*dx 20: not more
		{100, 41, 90, 20, verticalFirst},       // dy 21 > 20
		{224, 500, 224, 224, verticalOnly},
		{500, 224, 224, 224, horizontalOnly},
		{7, 7, 7, 7, copyOnly},
	}
	for _, tt := range tests {
		if got := pickOrder(tt.inW, tt.inH, tt.outW, tt.outH); got != tt.want {
			t.Errorf("pickOrder(%dx%d -> %dx%d) = %d, want %d", tt.inW, tt.inH, tt.outW, tt.outH, got, tt.want)
		}
	}
}

func TestResizeSize(t *testing.T) {
	tests := []struct{ h, w, size, wantH, wantW int }{
		{480, 640, 256, 256, 341}, // int(256*640/480) = int(341.33)
		{640, 480, 256, 341, 256},
		{500, 375, 224, 298, 224}, // int(298.67): truncated, not rounded
		{300, 300, 224, 224, 224},
		{1, 1000, 10, 10, 10000},
		{333, 500, 256, 256, 384}, // int(384.38)
		{0, 500, 256, 0, 0},
	}
	for _, tt := range tests {
		h, w := ResizeSize(tt.h, tt.w, tt.size)
		if h != tt.wantH || w != tt.wantW {
			t.Errorf("ResizeSize(%d, %d, %d) = (%d, %d), want (%d, %d)", tt.h, tt.w, tt.size, h, w, tt.wantH, tt.wantW)
		}
	}
}

func TestResizeOfView(t *testing.T) {
	// A view (stride > W*C) resizes as its copy does.
	big := testImage(64, 48, 3, 40, 1)
	v, err := big.View(Rect{Top: 5, Left: 7, H: 30, W: 41})
	if err != nil {
		t.Fatal(err)
	}
	var cp, a, b Image
	if err := v.CopyTo(&cp); err != nil {
		t.Fatal(err)
	}
	if err := Resize(&a, &v, 13, 29); err != nil {
		t.Fatal(err)
	}
	if err := Resize(&b, &cp, 13, 29); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(&a, &b); d != 0 {
		t.Errorf("view vs copy: max abs diff %d, want 0", d)
	}
}

func TestResizeErrors(t *testing.T) {
	good := testImage(4, 4, 3, 0, 1)
	tests := []struct {
		name string
		src  *Image
		h, w int
	}{
		{"zero height", good, 0, 4},
		{"negative width", good, 4, -1},
		{"nil image", nil, 4, 4},
		{"two channels", &Image{W: 2, H: 2, C: 2, Stride: 4, Pix: make([]uint8, 8)}, 4, 4},
		{"short pixels", &Image{W: 4, H: 4, C: 3, Stride: 12, Pix: make([]uint8, 47)}, 4, 4},
	}
	for _, tt := range tests {
		var dst Image
		err := Resize(&dst, tt.src, tt.h, tt.w)
		if !errors.Is(err, ErrBadArg) {
			t.Errorf("%s: got %v, want ErrBadArg", tt.name, err)
		}
	}
	if err := Resize(good, good, 2, 2); !errors.Is(err, ErrBadArg) {
		t.Errorf("in place: got %v, want ErrBadArg", err)
	}
}

func TestCoeffsSumToOne(t *testing.T) {
	// Normalized weights sum to 1 up to the fixed-point rounding of each
	// tap: |sum - 2^22| <= taps/2.
	var c coeffs
	for _, io := range [][2]int{{1024, 224}, {224, 1024}, {37, 1000}, {1000, 3}, {5, 5}} {
		c.compute(io[0], io[1], 0, io[1])
		for i := 0; i < io[1]; i++ {
			cnt := int(c.bounds[2*i+1])
			var sum int64
			for _, w := range c.k[i*c.ksize : i*c.ksize+cnt] {
				sum += int64(w)
			}
			if d := math.Abs(float64(sum - 1<<precisionBits)); d > float64(cnt)/2 {
				t.Errorf("%d->%d position %d: weights sum to %d, want 2^22 +- %d", io[0], io[1], i, sum, cnt/2)
			}
		}
	}
}
