package imageops

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// testImage is a deterministic w x h x c image: smooth gradients plus
// noise of the given amplitude (0: none, 255: pure noise).
func testImage(w, h, c int, noise int, seed uint64) *Image {
	rng := sampler.NewRNG(seed)
	m := NewImage(w, h, c)
	for y := 0; y < h; y++ {
		row := m.Row(y)
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				var base int
				switch ch {
				case 0:
					base = x * 255 / max(w-1, 1)
				case 1:
					base = y * 255 / max(h-1, 1)
				default:
					base = (x + y) * 7 % 256
				}
				v := base
				if noise > 0 {
					v += int(rng.Below(uint64(2*noise+1))) - noise
				}
				row[x*c+ch] = uint8(min(max(v, 0), 255))
			}
		}
	}
	return m
}

// toStd returns m as a standard library image (*image.RGBA or *image.Gray).
func toStd(m *Image) image.Image {
	if m.C == 1 {
		g := image.NewGray(image.Rect(0, 0, m.W, m.H))
		for y := 0; y < m.H; y++ {
			copy(g.Pix[y*g.Stride:], m.Row(y))
		}
		return g
	}
	rgba := image.NewRGBA(image.Rect(0, 0, m.W, m.H))
	for y := 0; y < m.H; y++ {
		row := m.Row(y)
		for x := 0; x < m.W; x++ {
			copy(rgba.Pix[y*rgba.Stride+4*x:], row[3*x:3*x+3])
			rgba.Pix[y*rgba.Stride+4*x+3] = 255
		}
	}
	return rgba
}

func encodeJPEG(t testing.TB, img image.Image, quality int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// maxDiff is the largest absolute difference between two images' samples;
// -1 when their shapes differ.
func maxDiff(a, b *Image) int {
	if a.W != b.W || a.H != b.H || a.C != b.C {
		return -1
	}
	d := 0
	for y := 0; y < a.H; y++ {
		ra, rb := a.Row(y), b.Row(y)
		for i := range ra {
			d = max(d, abs(int(ra[i])-int(rb[i])))
		}
	}
	return d
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
