package imageops

import (
	"fmt"
	"math"
)

// CenterCropRect is where torchvision's CenterCrop((h, w)) cuts an
// imgH x imgW image: top = int(round((imgH - h) / 2.0)) with Python's
// round (half to even), likewise left. Where the crop is larger than the
// image torchvision first pads with zeros, (size-crop)//2 before; the rect
// then starts at that negative offset.
func CenterCropRect(imgH, imgW, h, w int) Rect {
	return Rect{Top: centerOffset(imgH, h), Left: centerOffset(imgW, w), H: h, W: w}
}

func centerOffset(size, crop int) int {
	if crop > size {
		return -((crop - size) / 2)
	}
	return int(math.RoundToEven(float64(size-crop) / 2))
}

// CenterCrop writes torchvision's CenterCrop((h, w)) of src into dst
// (dst.Reset): the CenterCropRect region, zero where it lies outside src.
// dst must not share pixels with src.
func CenterCrop(dst, src *Image, h, w int) error {
	if err := src.check(); err != nil {
		return err
	}
	if h <= 0 || w <= 0 {
		return fmt.Errorf("%w: center crop %dx%d", ErrBadArg, w, h)
	}
	if dst == src {
		return fmt.Errorf("%w: center crop in place", ErrBadArg)
	}
	r := CenterCropRect(src.H, src.W, h, w)
	dst.Reset(w, h, src.C)
	c := src.C
	x0, x1 := max(r.Left, 0), min(r.Left+w, src.W) // source columns kept
	for y := 0; y < h; y++ {
		out := dst.Row(y)
		sy := r.Top + y
		if sy < 0 || sy >= src.H {
			clear(out)
			continue
		}
		in := src.Row(sy)
		lo := (x0 - r.Left) * c
		clear(out[:lo])
		n := copy(out[lo:], in[x0*c:x1*c])
		clear(out[lo+n:])
	}
	return nil
}

// HFlip mirrors m left to right in place (torchvision's hflip).
func HFlip(m *Image) error {
	if err := m.check(); err != nil {
		return err
	}
	c := m.C
	for y := 0; y < m.H; y++ {
		row := m.Row(y)
		for i, j := 0, (m.W-1)*c; i < j; i, j = i+c, j-c {
			for k := 0; k < c; k++ {
				row[i+k], row[j+k] = row[j+k], row[i+k]
			}
		}
	}
	return nil
}

// VFlip mirrors m top to bottom in place (torchvision's vflip).
func VFlip(m *Image) error {
	if err := m.check(); err != nil {
		return err
	}
	for i, j := 0, m.H-1; i < j; i, j = i+1, j-1 {
		a, b := m.Row(i), m.Row(j)
		for k := range a {
			a[k], b[k] = b[k], a[k]
		}
	}
	return nil
}

// blend is PIL's ImagingBlend for one sample: in1 + alpha*(in2-in1) in
// single precision, truncated, clamped to [0, 255]. alpha is PIL's C float.
func blend(in1, in2 int32, alpha float32) uint8 {
	t := float32(in1) + float32(alpha*float32(in2-in1)) // explicit conversion: no FMA
	if t <= 0 {
		return 0
	}
	if t >= 255 {
		return 255
	}
	return uint8(t)
}

// blendTable is blend(deg, v, alpha) for every v.
func blendTable(deg int32, alpha float32) (t [256]uint8) {
	for v := range t {
		t[v] = blend(deg, int32(v), alpha)
	}
	return t
}

func applyTable(m *Image, t *[256]uint8) {
	for y := 0; y < m.H; y++ {
		row := m.Row(y)
		for i, v := range row {
			row[i] = t[v]
		}
	}
}

// AdjustBrightness is torchvision's adjust_brightness on a PIL image
// (ImageEnhance.Brightness: blend with black), in place. factor >= 0.
func AdjustBrightness(m *Image, factor float64) error {
	if err := m.check(); err != nil {
		return err
	}
	if factor < 0 || math.IsNaN(factor) {
		return fmt.Errorf("%w: brightness factor %v", ErrBadArg, factor)
	}
	t := blendTable(0, float32(factor))
	applyTable(m, &t)
	return nil
}

// GrayMean is what ImageEnhance.Contrast blends with: the mean of the
// image's L conversion, int(mean + 0.5).
func GrayMean(m *Image) int32 {
	var sum int64
	for y := 0; y < m.H; y++ {
		row := m.Row(y)
		if m.C == 1 {
			for _, v := range row {
				sum += int64(v)
			}
			continue
		}
		for x := 0; x+2 < len(row); x += 3 {
			sum += int64(lum(row[x], row[x+1], row[x+2]))
		}
	}
	return int32(float64(sum)/float64(m.W*m.H) + 0.5)
}

func lum(r, g, b uint8) uint8 {
	return uint8((uint32(r)*19595 + uint32(g)*38470 + uint32(b)*7471 + 0x8000) >> 16)
}

// AdjustContrast is torchvision's adjust_contrast on a PIL image
// (ImageEnhance.Contrast: blend with a constant image of GrayMean), in
// place. factor >= 0.
func AdjustContrast(m *Image, factor float64) error {
	if err := m.check(); err != nil {
		return err
	}
	if factor < 0 || math.IsNaN(factor) {
		return fmt.Errorf("%w: contrast factor %v", ErrBadArg, factor)
	}
	t := blendTable(GrayMean(m), float32(factor))
	applyTable(m, &t)
	return nil
}

// AdjustSaturation is torchvision's adjust_saturation on a PIL image
// (ImageEnhance.Color: blend each pixel with its L value), in place. A
// gray image is unchanged. factor >= 0.
func AdjustSaturation(m *Image, factor float64) error {
	if err := m.check(); err != nil {
		return err
	}
	if factor < 0 || math.IsNaN(factor) {
		return fmt.Errorf("%w: saturation factor %v", ErrBadArg, factor)
	}
	if m.C == 1 {
		return nil
	}
	alpha := float32(factor)
	for y := 0; y < m.H; y++ {
		row := m.Row(y)
		for x := 0; x+2 < len(row); x += 3 {
			p := row[x : x+3 : x+3]
			l := int32(lum(p[0], p[1], p[2]))
			p[0], p[1], p[2] = blend(l, int32(p[0]), alpha), blend(l, int32(p[1]), alpha), blend(l, int32(p[2]), alpha)
		}
	}
	return nil
}

// ToGray writes PIL's convert("L") of src into dst (dst.Reset). dst must
// not share pixels with src.
func ToGray(dst, src *Image) error {
	if err := src.check(); err != nil {
		return err
	}
	if dst == src {
		return fmt.Errorf("%w: gray conversion in place", ErrBadArg)
	}
	dst.Reset(src.W, src.H, 1)
	for y := 0; y < src.H; y++ {
		if src.C == 1 {
			copy(dst.Row(y), src.Row(y))
		} else {
			rgbToL(dst.Row(y), src.Row(y))
		}
	}
	return nil
}
