package turbojpeg

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// smoothRGBA is a w x h picture of low-frequency gradients: chroma varies
// slowly, so image/jpeg's nearest-neighbour chroma upsampling and
// libjpeg-turbo's smoothing filter differ by rounding only.
func smoothRGBA(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, color.RGBA{
				R: uint8(128 + 100*math.Sin(float64(x)/23)*math.Cos(float64(y)/17)),
				G: uint8(128 + 90*math.Cos(float64(x+y)/31)),
				B: uint8(40 + 160*(x+y)/(w+h)),
				A: 255,
			})
		}
	}
	return img
}

// photoRGBA is a w x h photo-like picture: value noise over five octaves
// per channel, fine grain and a few hard edges, from a fixed seed. At
// quality 90 a 1024x768 one encodes to 214 KB, about what a 1024x768
// camera photo does.
func photoRGBA(w, h int) *image.RGBA {
	rng := rand.New(rand.NewPCG(1, 2))
	const grid = 129
	var layers [3][5][grid * grid]float64
	for c := range layers {
		for o := range layers[c] {
			for i := range layers[c][o] {
				layers[c][o][i] = rng.Float64()
			}
		}
	}
	noise := func(c int, x, y float64) float64 {
		v, amp, scale, sum := 0.0, 1.0, 1.0/128, 0.0
		for o := 0; o < 5; o++ {
			fx, fy := x*scale, y*scale
			ix, iy := int(fx), int(fy)
			tx, ty := fx-float64(ix), fy-float64(iy)
			at := func(i, j int) float64 { return layers[c][o][(j%grid)*grid+i%grid] }
			top := at(ix, iy)*(1-tx) + at(ix+1, iy)*tx
			bot := at(ix, iy+1)*(1-tx) + at(ix+1, iy+1)*tx
			v += amp * (top*(1-ty) + bot*ty)
			sum += amp
			amp *= 0.55
			scale *= 2
		}
		return v / sum
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var px [3]uint8
			for c := range px {
				v := noise(c, float64(x), float64(y))*255 + 0.3*float64(c*40-40) + 24*(rng.Float64()-0.5)
				if (x/97+y/71)%5 == 0 {
					v = 255 - v
				}
				px[c] = uint8(max(0, min(255, v)))
			}
			img.SetRGBA(x, y, color.RGBA{R: px[0], G: px[1], B: px[2], A: 255})
		}
	}
	return img
}

func encodeJPEG(t testing.TB, img image.Image, quality int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func toGray(img image.Image) *image.Gray {
	b := img.Bounds()
	g := image.NewGray(b)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			g.Set(x, y, img.At(x, y))
		}
	}
	return g
}

// rgbHWC flattens any image to 8-bit RGB rows through Go's color models
// (image/jpeg's own YCbCr and CMYK conversions).
func rgbHWC(img image.Image) []uint8 {
	b := img.Bounds()
	out := make([]uint8, 0, b.Dx()*b.Dy()*3)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			out = append(out, uint8(r>>8), uint8(g>>8), uint8(bl>>8))
		}
	}
	return out
}

// goDecode is the reference: image/jpeg's decode as RGB rows.
func goDecode(t testing.TB, data []byte) (w, h int, pix []uint8) {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("image/jpeg: %v", err)
	}
	return img.Bounds().Dx(), img.Bounds().Dy(), rgbHWC(img)
}

// diff returns the largest and the mean absolute difference.
func diff(a, b []uint8) (maxAbs int, mean float64) {
	sum := 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		sum += d
		maxAbs = max(maxAbs, d)
	}
	return maxAbs, float64(sum) / float64(len(a))
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
