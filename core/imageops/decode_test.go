package imageops

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"strings"
	"testing"
)

// pngHeader is a PNG signature and IHDR chunk claiming w x h, 8-bit RGB.
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // bit depth, truecolor
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// jpegHeader is SOI, a JFIF APP0 and a baseline SOF0 claiming w x h, 3
// components: the header image/jpeg's DecodeConfig stops after.
func jpegHeader(w, h uint16) []byte {
	b := []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0}
	b = append(b, 0xFF, 0xC0, 0, 17, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 3)
	for id := byte(1); id <= 3; id++ {
		b = append(b, id, 0x11, 0)
	}
	return b
}

func TestDecodePNGKinds(t *testing.T) {
	const w, h = 5, 3
	rect := image.Rect(0, 0, w, h)
	// Each source pixel's expected RGB, as PIL's convert("RGB") gives it.
	rgbAt := func(x, y int) [3]uint8 { return [3]uint8{uint8(40*x + y), uint8(200 - 30*y), uint8(x * y * 9)} }

	gray := image.NewGray(rect)
	gray16 := image.NewGray16(rect)
	rgb := image.NewRGBA(rect)
	nrgba := image.NewNRGBA(rect)
	nrgba64 := image.NewNRGBA64(rect)
	rgba64 := image.NewRGBA64(rect)
	pal := color.Palette{color.RGBA{10, 20, 30, 255}, color.NRGBA{200, 100, 50, 0}, color.NRGBA{1, 2, 3, 128}}
	paletted := image.NewPaletted(rect, pal)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := rgbAt(x, y)
			gray.SetGray(x, y, color.Gray{c[0]})
			gray16.SetGray16(x, y, color.Gray16{uint16(c[0])<<8 | 0x7F})
			rgb.SetRGBA(x, y, color.RGBA{c[0], c[1], c[2], 255})
			// Alpha varies, down to fully transparent: the stored color is kept.
			nrgba.SetNRGBA(x, y, color.NRGBA{c[0], c[1], c[2], uint8(x * 60)})
			nrgba64.SetNRGBA64(x, y, color.NRGBA64{uint16(c[0])<<8 | 0xFF, uint16(c[1]) << 8, uint16(c[2])<<8 | 1, uint16(x) << 14})
			rgba64.SetRGBA64(x, y, color.RGBA64{uint16(c[0]) << 8, uint16(c[1]) << 8, uint16(c[2]) << 8, 0xFFFF})
			paletted.SetColorIndex(x, y, uint8((x+y)%3))
		}
	}
	grayWant := func(x, y int) [3]uint8 { v := rgbAt(x, y)[0]; return [3]uint8{v, v, v} }
	palWant := func(x, y int) [3]uint8 {
		n := color.NRGBAModel.Convert(pal[(x+y)%3]).(color.NRGBA)
		return [3]uint8{n.R, n.G, n.B}
	}
	tests := []struct {
		name string
		img  image.Image
		want func(x, y int) [3]uint8
	}{
		{"gray8", gray, grayWant},
		{"gray16", gray16, grayWant},
		{"rgb8", rgb, rgbAt},
		{"rgba8 (alpha dropped)", nrgba, rgbAt},
		{"rgba16 (alpha dropped)", nrgba64, rgbAt},
		{"rgb16", rgba64, rgbAt},
		{"paletted with transparency", paletted, palWant},
	}
	for _, tt := range tests {
		data := encodePNG(t, tt.img)
		for _, mode := range []Mode{RGB, Gray} {
			var got Image
			info, err := NewDecoder(&DecodeOptions{Mode: mode}).Decode(&got, data)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if info != (Info{Format: FormatPNG, W: w, H: h}) || got.W != w || got.H != h || got.C != mode.Channels() {
				t.Fatalf("%s mode %d: got info %+v, image %dx%dx%d", tt.name, mode, info, got.W, got.H, got.C)
			}
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					c := tt.want(x, y)
					if mode == Gray {
						l := lum(c[0], c[1], c[2])
						if g := got.Pix[y*got.Stride+x]; g != l {
							t.Errorf("%s gray (%d,%d): got %d, want %d", tt.name, x, y, g, l)
						}
						continue
					}
					p := got.Pix[y*got.Stride+3*x:]
					if [3]uint8(p[:3]) != c {
						t.Errorf("%s (%d,%d): got %v, want %v", tt.name, x, y, p[:3], c)
					}
				}
			}
		}
	}
}

// libjpegPixel is libjpeg-turbo's output for pixel (x, y) of a decoded
// image, written per pixel from jdsample.c (h2v2_fancy_upsample,
// h2v1_fancy_upsample, h1v2_fancy_upsample, replication) and jdcolor.c
// (build_ycc_rgb_table, ycc_rgb_convert). The implementation works a row
// at a time; this reference shares none of its code.
func libjpegPixel(s *image.YCbCr, x, y int) [3]uint8 {
	w, h := s.Rect.Dx(), s.Rect.Dy()
	hf, vf := 1, 1 // chroma subsampling factors
	switch s.SubsampleRatio {
	case image.YCbCrSubsampleRatio422:
		hf = 2
	case image.YCbCrSubsampleRatio420:
		hf, vf = 2, 2
	case image.YCbCrSubsampleRatio440:
		vf = 2
	case image.YCbCrSubsampleRatio411:
		hf = 4
	case image.YCbCrSubsampleRatio410:
		hf, vf = 4, 2
	}
	cw, ch := (w+hf-1)/hf, (h+vf-1)/vf // downsampled_width, _height
	at := func(plane []uint8, cx, cy int) int {
		cy = min(max(cy, 0), ch-1) // context rows replicate the edges
		return int(plane[cy*s.CStride+cx])
	}
	up := func(plane []uint8) uint8 {
		cx, cy := x/hf, y/vf
		near := cy + 1 // the second-nearest chroma row
		if y%2 == 0 {
			near = cy - 1
		}
		switch {
		case hf == 2 && vf == 2 && cw > 2:
			sum := func(c int) int { return 3*at(plane, c, cy) + at(plane, c, near) }
			switch {
			case x%2 == 0 && cx == 0:
				return uint8((sum(0)*4 + 8) >> 4)
			case x%2 == 0:
				return uint8((sum(cx)*3 + sum(cx-1) + 8) >> 4)
			case cx == cw-1:
				return uint8((sum(cx)*4 + 7) >> 4)
			default:
				return uint8((sum(cx)*3 + sum(cx+1) + 7) >> 4)
			}
		case hf == 2 && vf == 1 && cw > 2:
			switch {
			case x%2 == 0 && cx == 0, x%2 == 1 && cx == cw-1:
				return uint8(at(plane, cx, cy))
			case x%2 == 0:
				return uint8((3*at(plane, cx, cy) + at(plane, cx-1, cy) + 1) >> 2)
			default:
				return uint8((3*at(plane, cx, cy) + at(plane, cx+1, cy) + 2) >> 2)
			}
		case hf == 1 && vf == 2:
			bias := 2
			if y%2 == 0 {
				bias = 1
			}
			return uint8((3*at(plane, cx, cy) + at(plane, cx, near) + bias) >> 2)
		}
		return uint8(at(plane, cx, cy))
	}
	const scaleBits, oneHalf = 16, 1 << 15
	fix := func(v float64) int { return int(v*(1<<scaleBits) + 0.5) }
	cb, cr := int(up(s.Cb))-128, int(up(s.Cr))-128
	yy := int(s.Y[y*s.YStride+x])
	clamp := func(v int) uint8 { return uint8(min(max(v, 0), 255)) }
	return [3]uint8{
		clamp(yy + (fix(1.40200)*cr+oneHalf)>>scaleBits),
		clamp(yy + (-fix(0.34414)*cb+oneHalf-fix(0.71414)*cr)>>scaleBits),
		clamp(yy + (fix(1.77200)*cb+oneHalf)>>scaleBits),
	}
}

func TestDecodeJPEGMatchesLibjpegConversion(t *testing.T) {
	// What image/jpeg decodes (YCbCr planes) must be converted as
	// libjpeg-turbo converts them. Against Pillow 13.0.0 itself (outside
	// these tests) the decoded RGB was within 3 levels (mean 0.05) on 99
	// files: every subsampling ratio, sizes from 1x1 to 1024x768; the rest
	// is image/jpeg's IDCT rounding.
	files := map[string][]byte{
		"go 4:2:0":              encodeJPEG(t, toStd(testImage(61, 37, 3, 40, 3)), 90),
		"go 4:2:0 narrow":       encodeJPEG(t, toStd(testImage(3, 37, 3, 40, 3)), 90),
		"go gray":               encodeJPEG(t, toStd(testImage(61, 37, 1, 40, 4)), 90),
		"pil 4:4:4":             mustRead(t, "testdata/quads_444.jpg"),
		"pil 4:2:2":             mustRead(t, "testdata/quads_422.jpg"),
		"pil progressive 4:2:0": mustRead(t, "testdata/quads_420_progressive.jpg"),
		"libjpeg 4:4:0":         mustRead(t, "testdata/grad_440.jpg"),
		"libjpeg 4:1:1":         mustRead(t, "testdata/grad_411.jpg"),
		"libjpeg 4:1:0":         mustRead(t, "testdata/grad_410.jpg"),
	}
	d := NewDecoder(nil)
	for name, data := range files {
		ref, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var got Image
		if _, err := d.Decode(&got, data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b := ref.Bounds()
		for y := 0; y < b.Dy(); y++ {
			for x := 0; x < b.Dx(); x++ {
				var want [3]uint8
				if s, ok := ref.(*image.YCbCr); ok {
					want = libjpegPixel(s, x, y)
				} else {
					want = rgbOf(ref.At(x, y))
				}
				if p := got.Pix[y*got.Stride+3*x:]; [3]uint8(p[:3]) != want {
					t.Fatalf("%s (%d,%d): got %v, want %v", name, x, y, p[:3], want)
				}
			}
		}
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestYCbCrEveryRatioAndSize(t *testing.T) {
	ratios := []image.YCbCrSubsampleRatio{
		image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420,
		image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410,
	}
	for _, r := range ratios {
		// Odd and tiny sizes: chroma planes of 1 and 2 samples take the
		// replicating upsamplers, as in libjpeg.
		for _, sz := range [][2]int{{23, 13}, {1, 1}, {2, 5}, {3, 2}, {4, 4}, {5, 9}, {9, 3}} {
			// MCU-padded planes, as image/jpeg allocates them; the padding
			// must not be read.
			full := image.NewYCbCr(image.Rect(0, 0, (sz[0]+15)&^15, (sz[1]+15)&^15), r)
			for i := range full.Y {
				full.Y[i] = uint8(i * 37)
			}
			for i := range full.Cb {
				full.Cb[i], full.Cr[i] = uint8(i*91+3), uint8(255-i*53)
			}
			src := *full
			src.Rect = image.Rect(0, 0, sz[0], sz[1])
			var got Image
			if err := FromImage(&got, &src, RGB); err != nil {
				t.Fatal(err)
			}
			for y := 0; y < sz[1]; y++ {
				for x := 0; x < sz[0]; x++ {
					want := libjpegPixel(&src, x, y)
					if p := got.Pix[y*got.Stride+3*x:]; [3]uint8(p[:3]) != want {
						t.Fatalf("%v %v (%d,%d): got %v, want %v", r, sz, x, y, p[:3], want)
					}
				}
			}
		}
		// Sub-images (any origin, also negative) take each pixel's own
		// chroma sample.
		base := image.NewYCbCr(image.Rect(-3, -2, 20, 11), r)
		for i := range base.Y {
			base.Y[i] = uint8(i * 29)
		}
		for i := range base.Cb {
			base.Cb[i], base.Cr[i] = uint8(i*71+9), uint8(200-i*31)
		}
		for _, sub := range []image.Rectangle{image.Rect(1, 1, 19, 10), image.Rect(2, 1, 9, 8), image.Rect(-3, -2, 4, 3), image.Rect(-1, 0, 0, 1)} {
			s := base.SubImage(sub).(*image.YCbCr)
			var got Image
			if err := FromImage(&got, s, RGB); err != nil {
				t.Fatal(err)
			}
			for y := sub.Min.Y; y < sub.Max.Y; y++ {
				for x := sub.Min.X; x < sub.Max.X; x++ {
					var want [3]uint8
					c := s.YCbCrAt(x, y)
					ycbcrToRGB(want[:], c.Y, c.Cb, c.Cr)
					if p := got.Pix[(y-sub.Min.Y)*got.Stride+3*(x-sub.Min.X):]; [3]uint8(p[:3]) != want {
						t.Fatalf("%v sub-image %v (%d,%d): got %v, want %v", r, sub, x, y, p[:3], want)
					}
				}
			}
		}
	}
}

func TestCMYK(t *testing.T) {
	// Values from Pillow 13.0.0: Image.new("CMYK", (1, 1), c).convert("RGB").
	tests := []struct{ cmyk, want [4]uint8 }{
		{[4]uint8{0, 0, 0, 0}, [4]uint8{255, 255, 255}},
		{[4]uint8{255, 0, 0, 0}, [4]uint8{0, 255, 255}},
		{[4]uint8{128, 0, 0, 64}, [4]uint8{95, 191, 191}},
		{[4]uint8{10, 200, 30, 255}, [4]uint8{0, 0, 0}},
		{[4]uint8{77, 33, 190, 12}, [4]uint8{170, 212, 62}},
	}
	for _, tt := range tests {
		img := image.NewCMYK(image.Rect(0, 0, 1, 1))
		copy(img.Pix, tt.cmyk[:])
		var got Image
		if err := FromImage(&got, img, RGB); err != nil {
			t.Fatal(err)
		}
		if [3]uint8(got.Pix) != [3]uint8(tt.want[:3]) {
			t.Errorf("CMYK %v: got %v, want %v", tt.cmyk, got.Pix, tt.want[:3])
		}
	}
	// A CMYK JPEG (Adobe, inverted) written by Pillow with those colors in
	// its quadrants decodes to them, within JPEG loss.
	var got Image
	if _, err := NewDecoder(nil).Decode(&got, mustRead(t, "testdata/quads_cmyk.jpg")); err != nil {
		t.Fatal(err)
	}
	centers := []struct {
		x, y int
		want [3]uint8
	}{{8, 6, [3]uint8{255, 255, 255}}, {24, 6, [3]uint8{0, 255, 255}}, {8, 18, [3]uint8{95, 191, 191}}, {24, 18, [3]uint8{170, 212, 62}}}
	for _, c := range centers {
		p := got.Pix[c.y*got.Stride+3*c.x:]
		for i := 0; i < 3; i++ {
			if d := abs(int(p[i]) - int(c.want[i])); d > 4 {
				t.Errorf("cmyk.jpg (%d,%d): got %v, want %v +- 4", c.x, c.y, p[:3], c.want)
				break
			}
		}
	}
}

func TestGrayConversion(t *testing.T) {
	// Values from Pillow 13.0.0: Image.new("RGB", (1, 1), c).convert("L").
	tests := []struct {
		rgb  [3]uint8
		want uint8
	}{{[3]uint8{255, 0, 0}, 76}, {[3]uint8{0, 255, 0}, 150}, {[3]uint8{0, 0, 255}, 29}, {[3]uint8{255, 255, 255}, 255}, {[3]uint8{12, 200, 99}, 132}, {[3]uint8{128, 128, 127}, 128}}
	for _, tt := range tests {
		src := &Image{W: 1, H: 1, C: 3, Stride: 3, Pix: tt.rgb[:]}
		var got Image
		if err := ToGray(&got, src); err != nil {
			t.Fatal(err)
		}
		if got.Pix[0] != tt.want {
			t.Errorf("L%v: got %d, want %d", tt.rgb, got.Pix[0], tt.want)
		}
	}
}

func TestDecodeBadInput(t *testing.T) {
	src := toStd(testImage(40, 30, 3, 30, 1))
	jpg, pngData := encodeJPEG(t, src, 90), encodePNG(t, src)
	corruptPNG := bytes.Clone(pngData)
	corruptPNG[len(corruptPNG)/2] ^= 0xFF // inside IDAT: checksum mismatch
	corruptJPEG := bytes.Clone(jpg)
	if i := bytes.Index(corruptJPEG, []byte{0xFF, 0xC4}); i > 0 { // DHT: class/id byte
		corruptJPEG[i+4] = 0x7F
	}
	tests := []struct {
		name   string
		data   []byte
		opts   *DecodeOptions
		reason error
	}{
		{"zero bytes", nil, nil, ErrEmpty},
		{"garbage", []byte("definitely not an image, just text"), nil, ErrUnsupported},
		{"gif", []byte("GIF89a\x01\x00\x01\x00"), nil, ErrUnsupported},
		{"signature prefix", []byte{0xFF, 0xD8}, nil, ErrTruncated},
		{"png signature only", []byte("\x89PNG\r\n\x1a\n"), nil, ErrTruncated},
		{"png bomb header", pngHeader(100000, 100000), nil, ErrTooManyPixels},
		{"jpeg bomb header", jpegHeader(65535, 65535), nil, ErrTooManyPixels},
		{"png over a small limit", pngData, &DecodeOptions{MaxPixels: 40*30 - 1}, ErrTooManyPixels},
		{"jpeg over a small limit", jpg, &DecodeOptions{MaxPixels: 100}, ErrTooManyPixels},
		{"png zero width", pngHeader(0, 10), nil, ErrCorrupt},
		{"png corrupt data", corruptPNG, nil, ErrCorrupt},
		{"jpeg corrupt table", corruptJPEG, nil, ErrCorrupt},
	}
	for _, tt := range tests {
		var dst Image
		_, err := NewDecoder(tt.opts).Decode(&dst, tt.data)
		if !errors.Is(err, tt.reason) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.reason)
			continue
		}
		if !strings.Contains(err.Error(), tt.reason.Error()) {
			t.Errorf("%s: message %q does not say %q", tt.name, err, tt.reason)
		}
	}
	// A negative limit turns the check off.
	var dst Image
	if _, err := NewDecoder(&DecodeOptions{MaxPixels: -1}).Decode(&dst, pngData); err != nil {
		t.Errorf("no limit: %v", err)
	}
}

func TestDecodeTruncatedEverywhere(t *testing.T) {
	src := testImage(40, 30, 3, 30, 1)
	files := map[string][]byte{
		"jpeg":             encodeJPEG(t, toStd(src), 90),
		"gray jpeg":        encodeJPEG(t, toStd(testImage(40, 30, 1, 30, 2)), 90),
		"progressive jpeg": mustRead(t, "testdata/quads_420_progressive.jpg"),
		"cmyk jpeg":        mustRead(t, "testdata/quads_cmyk.jpg"),
		"png":              encodePNG(t, toStd(src)),
		"paletted png": encodePNG(t, image.NewPaletted(image.Rect(0, 0, 9, 9),
			color.Palette{color.Black, color.White})),
	}
	d := NewDecoder(nil)
	var dst Image
	for name, data := range files {
		if _, err := d.Decode(&dst, data); err != nil {
			t.Fatalf("%s: complete file: %v", name, err)
		}
		for n := 1; n < len(data); n++ {
			_, err := d.Decode(&dst, data[:n])
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("%s cut at %d of %d: got %v, want ErrTruncated", name, n, len(data), err)
			}
		}
	}
}

func TestDecodeReusesPixels(t *testing.T) {
	data := encodeJPEG(t, toStd(testImage(40, 30, 3, 30, 1)), 90)
	small := encodePNG(t, toStd(testImage(10, 10, 3, 30, 1)))
	d := NewDecoder(nil)
	var dst Image
	if _, err := d.Decode(&dst, data); err != nil {
		t.Fatal(err)
	}
	first := &dst.Pix[:1][0]
	if _, err := d.Decode(&dst, small); err != nil {
		t.Fatal(err)
	}
	if &dst.Pix[:1][0] != first || dst.W != 10 || len(dst.Pix) != 300 {
		t.Errorf("second decode: got a new buffer or shape %dx%d len %d", dst.W, dst.H, len(dst.Pix))
	}
}

// scalingDecoder stands in for a libjpeg-turbo decoder: it records the
// hint and returns a half-size image when the hint allows it.
type scalingDecoder struct {
	minW, minH int
	fail       error
}

func (s *scalingDecoder) DecodeJPEG(dst *Image, data []byte, mode Mode, minW, minH int) error {
	s.minW, s.minH = minW, minH
	if s.fail != nil {
		return s.fail
	}
	if err := (GoJPEG{}).DecodeJPEG(dst, data, mode, 0, 0); err != nil {
		return err
	}
	if minW > 0 && dst.W/2 >= minW && dst.H/2 >= minH {
		var half Image
		if err := Resize(&half, dst, dst.H/2, dst.W/2); err != nil {
			return err
		}
		*dst = half
	}
	return nil
}

func TestJPEGDecoderHook(t *testing.T) {
	data := encodeJPEG(t, toStd(testImage(64, 48, 3, 10, 1)), 90)
	hook := &scalingDecoder{}
	d := NewDecoder(&DecodeOptions{JPEG: hook})
	var dst Image
	info, err := d.DecodeScaled(&dst, data, 20, 20)
	if err != nil {
		t.Fatal(err)
	}
	if hook.minW != 20 || hook.minH != 20 {
		t.Errorf("hook got hint %dx%d, want 20x20", hook.minW, hook.minH)
	}
	if info.W != 64 || info.H != 48 || dst.W != 32 || dst.H != 24 {
		t.Errorf("got info %dx%d and image %dx%d, want 64x48 and 32x24", info.W, info.H, dst.W, dst.H)
	}
	// PNG does not go through the hook.
	hook.minW = -1
	if _, err := d.DecodeScaled(&dst, encodePNG(t, toStd(testImage(8, 8, 3, 0, 1))), 4, 4); err != nil || hook.minW != -1 {
		t.Errorf("png: err %v, hook called: %v", err, hook.minW != -1)
	}
	// A hook's own errors are classified; already-classified ones kept.
	for _, tt := range []struct {
		fail, want error
	}{
		{errors.New("libjpeg: Premature end of JPEG file"), ErrCorrupt}, // the file itself is complete
		{ErrUnsupported, ErrUnsupported},
	} {
		hook.fail = tt.fail
		if _, err := d.Decode(&dst, data); !errors.Is(err, tt.want) {
			t.Errorf("hook error %v: got %v, want %v", tt.fail, err, tt.want)
		}
	}
}

func TestSniffAndConfig(t *testing.T) {
	jpg := encodeJPEG(t, toStd(testImage(7, 5, 3, 0, 1)), 90)
	pngData := encodePNG(t, toStd(testImage(7, 5, 1, 0, 1)))
	for _, tt := range []struct {
		data []byte
		want Info
	}{{jpg, Info{FormatJPEG, 7, 5}}, {pngData, Info{FormatPNG, 7, 5}}} {
		if f := Sniff(tt.data); f != tt.want.Format {
			t.Errorf("Sniff: got %v, want %v", f, tt.want.Format)
		}
		got, err := NewDecoder(nil).Config(tt.data)
		if err != nil || got != tt.want {
			t.Errorf("Config: got %+v, %v, want %+v", got, err, tt.want)
		}
	}
	if f := Sniff([]byte("RIFF")); f != FormatUnknown || f.String() != "unknown" {
		t.Errorf("Sniff(RIFF) = %v", f)
	}
}

func TestFromImageGeneric(t *testing.T) {
	// A type without a fast path goes through At().
	img := image.NewAlpha(image.Rect(0, 0, 2, 1))
	img.Pix[0], img.Pix[1] = 255, 0
	var got Image
	if err := FromImage(&got, img, RGB); err != nil {
		t.Fatal(err)
	}
	if want := []uint8{255, 255, 255, 0, 0, 0}; string(got.Pix) != string(want) {
		t.Errorf("got %v, want %v", got.Pix, want)
	}
	if err := FromImage(&got, image.NewGray(image.Rectangle{}), RGB); !errors.Is(err, ErrBadArg) {
		t.Errorf("empty image: got %v, want ErrBadArg", err)
	}
}
