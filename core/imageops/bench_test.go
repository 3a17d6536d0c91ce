package imageops

import (
	"bytes"
	"image"
	"image/jpeg"
	"sync"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// benchJPEG is a 1024x768 4:2:0 JPEG (quality 90) of a noisy gradient,
// 295 KB: as much entropy-coded data as a detailed photo of that size.
var benchJPEG = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, toStd(testImage(1024, 768, 3, 12, 1)), &jpeg.Options{Quality: 90}); err != nil {
		panic(err)
	}
	return buf.Bytes()
})

// benchImage is benchJPEG decoded.
var benchImage = sync.OnceValue(func() *Image {
	var m Image
	if _, err := NewDecoder(nil).Decode(&m, benchJPEG()); err != nil {
		panic(err)
	}
	return &m
})

func BenchmarkDecodeJPEG(b *testing.B) {
	data := benchJPEG()
	d := NewDecoder(nil)
	var dst Image
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(&dst, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJPEGNaive is image/jpeg followed by the obvious
// conversion: one At() and RGBA() interface call per pixel.
func BenchmarkDecodeJPEGNaive(b *testing.B) {
	data := benchJPEG()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		img, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		r := img.Bounds()
		pix := make([]uint8, 3*r.Dx()*r.Dy())
		i := 0
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				cr, cg, cb, _ := img.At(x, y).RGBA()
				pix[i], pix[i+1], pix[i+2] = uint8(cr>>8), uint8(cg>>8), uint8(cb>>8)
				i += 3
			}
		}
	}
}

func BenchmarkResize(b *testing.B) {
	src := benchImage()
	var s Scratch
	var dst Image
	b.SetBytes(int64(len(src.Pix)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Resize(&dst, src, 224, 224); err != nil {
			b.Fatal(err)
		}
	}
}

// naiveResize is the same antialiased bilinear filter written the obvious
// way: separable, float64, the source read through image.Image's At() and
// RGBA() interface calls, weights recomputed for every pixel.
func naiveResize(src image.Image, outW, outH int) *image.RGBA {
	b := src.Bounds()
	inW, inH := b.Dx(), b.Dy()
	weights := func(in, out, i int) (int, []float64) {
		scale := float64(in) / float64(out)
		fs := max(scale, 1)
		center := (float64(i) + 0.5) * scale
		lo := max(int(center-fs+0.5), 0)
		hi := min(int(center+fs+0.5), in)
		ws := make([]float64, hi-lo)
		sum := 0.0
		for k := range ws {
			t := (float64(lo+k) - center + 0.5) / fs
			if t < 0 {
				t = -t
			}
			if t < 1 {
				ws[k] = 1 - t
			}
			sum += ws[k]
		}
		for k := range ws {
			ws[k] /= sum
		}
		return lo, ws
	}
	tmp := make([][3]float64, outW*inH)
	for y := 0; y < inH; y++ {
		for x := 0; x < outW; x++ {
			lo, ws := weights(inW, outW, x)
			var acc [3]float64
			for k, w := range ws {
				r, g, bl, _ := src.At(b.Min.X+lo+k, b.Min.Y+y).RGBA()
				acc[0] += w * float64(r>>8)
				acc[1] += w * float64(g>>8)
				acc[2] += w * float64(bl>>8)
			}
			tmp[y*outW+x] = acc
		}
	}
	out := image.NewRGBA(image.Rect(0, 0, outW, outH))
	for y := 0; y < outH; y++ {
		lo, ws := weights(inH, outH, y)
		for x := 0; x < outW; x++ {
			var acc [3]float64
			for k, w := range ws {
				p := tmp[(lo+k)*outW+x]
				acc[0] += w * p[0]
				acc[1] += w * p[1]
				acc[2] += w * p[2]
			}
			o := out.PixOffset(x, y)
			for c := 0; c < 3; c++ {
				out.Pix[o+c] = uint8(min(max(acc[c]+0.5, 0), 255))
			}
			out.Pix[o+3] = 255
		}
	}
	return out
}

func BenchmarkResizeNaive(b *testing.B) {
	src := toStd(benchImage())
	b.SetBytes(int64(len(benchImage().Pix)))
	b.ReportAllocs()
	for b.Loop() {
		naiveResize(src, 224, 224)
	}
}

// BenchmarkFused is the ImageNet training transform on a decoded 1024x768
// image: RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor +
// Normalize, straight into a batch slot.
func BenchmarkFused(b *testing.B) {
	src := benchImage()
	rrc := RandomResizedCrop{H: 224, W: 224}
	dst := make([]float32, 3*224*224)
	var s Scratch
	k := uint64(0)
	b.SetBytes(int64(len(src.Pix)))
	b.ReportAllocs()
	for b.Loop() {
		rng := sampler.NewRNG(1, 0, k, 0)
		k++
		if err := s.Fused(dst, src, rrc.Plan(&rng, src.H, src.W, 0.5), imagenet); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnfused is the same transform op by op, each op writing a new
// image as torchvision's chain does (same parameters, same output).
func BenchmarkUnfused(b *testing.B) {
	src := benchImage()
	rrc := RandomResizedCrop{H: 224, W: 224}
	dst := make([]float32, 3*224*224)
	k := uint64(0)
	b.SetBytes(int64(len(src.Pix)))
	b.ReportAllocs()
	for b.Loop() {
		rng := sampler.NewRNG(1, 0, k, 0)
		k++
		p := rrc.Plan(&rng, src.H, src.W, 0.5)
		crop, err := src.View(p.Crop)
		if err != nil {
			b.Fatal(err)
		}
		var cropped, resized Image
		if err := crop.CopyTo(&cropped); err != nil { // PIL's crop copies
			b.Fatal(err)
		}
		if err := Resize(&resized, &cropped, 224, 224); err != nil {
			b.Fatal(err)
		}
		if p.HFlip {
			_ = HFlip(&resized)
		}
		if err := ToTensor(dst, &resized); err != nil {
			b.Fatal(err)
		}
		if err := imagenet.Apply(dst); err != nil {
			b.Fatal(err)
		}
	}
}
