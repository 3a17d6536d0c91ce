package imageops

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// checkPNGRows: whenever decodePNGRows takes a file, image/png decodes it
// too, and FromImage of its image has the same pixels, in both modes.
func checkPNGRows(t *testing.T, data []byte) (took bool) {
	t.Helper()
	for _, mode := range []Mode{RGB, Gray} {
		var got Image
		if err := decodePNGRows(&got, data, mode); err != nil {
			if err != errPNGFallback {
				t.Fatalf("decodePNGRows: %v, want errPNGFallback or nil", err)
			}
			continue
		}
		took = true
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("decodePNGRows took a file image/png refuses: %v", err)
		}
		var want Image
		if err := FromImage(&want, img, mode); err != nil {
			t.Fatal(err)
		}
		if got.W != want.W || got.H != want.H || got.C != want.C || !bytes.Equal(got.Pix, want.Pix) {
			t.Fatalf("mode %d: decodePNGRows %dx%dx%d differs from image/png's %T through FromImage (%dx%dx%d)",
				mode, got.W, got.H, got.C, img, want.W, want.H, want.C)
		}
	}
	return took
}

// testImages are noisy images of every type png.Encode writes, with
// transparency where the type has it.
func testImages(w, h int) map[string]image.Image {
	r := rand.New(rand.NewPCG(1, 2))
	b := image.Rect(0, 0, w, h)
	gray, gray16 := image.NewGray(b), image.NewGray16(b)
	rgba, nrgba := image.NewRGBA(b), image.NewNRGBA(b)
	rgba64, nrgba64 := image.NewRGBA64(b), image.NewNRGBA64(b)
	pal := image.NewPaletted(b, color.Palette{color.Black, color.White, color.NRGBA{200, 10, 10, 128}})
	for y := range h {
		for x := range w {
			v := uint16(x*977 + y*131 + r.IntN(2000))
			gray.SetGray(x, y, color.Gray{uint8(v >> 8)})
			gray16.SetGray16(x, y, color.Gray16{v})
			rgba.SetRGBA(x, y, color.RGBA{uint8(v), uint8(v >> 3), uint8(x), 255})
			nrgba.SetNRGBA(x, y, color.NRGBA{uint8(v), uint8(v >> 3), uint8(x), uint8(y)})
			rgba64.SetRGBA64(x, y, color.RGBA64{v, v * 3, uint16(x * 300), 0xffff})
			nrgba64.SetNRGBA64(x, y, color.NRGBA64{v, v * 3, uint16(x * 300), uint16(r.IntN(65536))})
			pal.SetColorIndex(x, y, uint8(r.IntN(3)))
		}
	}
	return map[string]image.Image{"gray": gray, "gray16": gray16, "rgb8": rgba, "rgba8": nrgba,
		"rgb16": rgba64, "rgba16": nrgba64, "paletted": pal}
}

func TestPNGRowsMatchImagePNG(t *testing.T) {
	for name, img := range testImages(37, 23) {
		for _, level := range []png.CompressionLevel{png.NoCompression, png.BestSpeed, png.BestCompression} {
			var buf bytes.Buffer
			if err := (&png.Encoder{CompressionLevel: level}).Encode(&buf, img); err != nil {
				t.Fatal(err)
			}
			// NoCompression writes no filters; the others pick per row.
			if took := checkPNGRows(t, buf.Bytes()); took != (name != "paletted") {
				t.Fatalf("%s: streamed %v", name, took)
			}
		}
	}
	// The fuzz seeds: files Pillow wrote, a truncated one, a bomb header.
	seeds, _ := filepath.Glob("testdata/fuzz/FuzzDecodePNG/*")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkPNGRows(t, b)
	}
}

// Decoding a 16-bit RGBA PNG allocates the output (3 bytes a pixel) and
// little else: not image/png's 8 bytes a pixel before the conversion.
func TestDecodePNG16Allocations(t *testing.T) {
	const w, h = 1200, 900
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, testImages(w, h)["rgba16"]); err != nil {
		t.Fatal(err)
	}
	dec := NewDecoder(nil)
	var dst Image
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := dec.Decode(&dst, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	out := uint64(w * h * 3)
	if got := after.TotalAlloc - before.TotalAlloc; got > out+1<<20 {
		t.Fatalf("decoding a %dx%d 16-bit RGBA PNG allocated %d bytes; the output is %d", w, h, got, out)
	}
}
