package imageops

import (
	"errors"
	"testing"
)

// fuzzDecoder keeps fuzzed headers small enough to decode quickly.
var fuzzDecoder = NewDecoder(&DecodeOptions{MaxPixels: 1 << 20})

// checkDecode is what both fuzz targets assert for any input: no panic; an
// error names exactly one reason; a success has the header's size and a
// well-formed image that the resize and fused paths accept.
func checkDecode(t *testing.T, data []byte) {
	var dst Image
	info, err := fuzzDecoder.Decode(&dst, data)
	if err != nil {
		n := 0
		for _, reason := range []error{ErrEmpty, ErrTruncated, ErrCorrupt, ErrUnsupported, ErrTooManyPixels} {
			if errors.Is(err, reason) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("error %q wraps %d reasons, want 1", err, n)
		}
		return
	}
	if dst.W != info.W || dst.H != info.H || dst.C != 3 || len(dst.Pix) != dst.W*dst.H*3 {
		t.Fatalf("info %+v, image %dx%dx%d with %d bytes", info, dst.W, dst.H, dst.C, len(dst.Pix))
	}
	if cfg, err := fuzzDecoder.Config(data); err != nil || cfg != info {
		t.Fatalf("Config = %+v, %v; Decode said %+v", cfg, err, info)
	}
	var small Image
	if err := Resize(&small, &dst, 5, 7); err != nil {
		t.Fatal(err)
	}
	var s Scratch
	p := Plan{Crop: Rect{H: dst.H, W: dst.W}, ResizeH: 4, ResizeW: 3, HFlip: true}
	if err := s.Fused(make([]float32, 3*4*3), &dst, p, nil); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecodeJPEG(f *testing.F) {
	// Seeds: testdata/fuzz/FuzzDecodeJPEG (Go- and Pillow-written files:
	// 4:4:4, 4:2:2, 4:2:0, progressive, gray, CMYK, truncated, a bomb
	// header) and these.
	f.Add([]byte{})
	f.Add([]byte{0xFF, 0xD8, 0xFF})
	f.Add(jpegHeader(300, 200))
	f.Fuzz(checkDecode)
}

func FuzzDecodePNG(f *testing.F) {
	// Seeds: testdata/fuzz/FuzzDecodePNG (gray 8/16-bit, RGB, RGBA 8/16-bit,
	// paletted with transparency, truncated, a bomb header) and these.
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add(pngHeader(3, 2))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		checkPNGRows(t, data)
	})
}
