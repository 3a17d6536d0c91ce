package imageops

import (
	"fmt"
	"image"
	"image/color"
)

// FromImage converts any image.Image into dst (dst.Reset, reusing dst.Pix)
// with mode's channels, as PIL's convert("RGB") / convert("L") do after
// PIL's decoders:
//
//   - *image.YCbCr (every subsampling ratio): as libjpeg-turbo, PIL's
//     JPEG decoder, converts: "fancy" chroma upsampling and libjpeg's
//     integer YCbCr->RGB (see upsampler). A sub-image with a non-zero
//     origin takes each pixel's own chroma sample instead.
//   - *image.Gray, *image.Gray16: replicated to RGB; 16 bits keep the high
//     byte. (PIL's convert("RGB") of a 16-bit gray PNG, mode "I;16",
//     instead clips every value above 255 to 255.)
//   - *image.RGBA, *image.NRGBA and their 64-bit forms: alpha is dropped,
//     not composited; 16 bits keep the high byte, as PIL does for 16-bit
//     RGB(A) PNGs. image/png returns straight (NRGBA) color whenever a file
//     has transparency, so the stored color is kept, as in PIL; a
//     premultiplied *image.RGBA from elsewhere is taken as is (that is,
//     composited over black).
//   - *image.Paletted: palette lookup, palette alpha dropped.
//   - *image.CMYK: PIL's cmyk2rgb.
//
// The listed types are converted row by row without per-pixel interface
// calls; any other type goes through At(), many times slower.
func FromImage(dst *Image, src image.Image, mode Mode) error {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= 0 || h <= 0 {
		return fmt.Errorf("%w: empty %T image %v", ErrBadArg, src, b)
	}
	if mode != RGB && mode != Gray {
		return fmt.Errorf("%w: mode %d", ErrBadArg, mode)
	}
	// Sources that are gray already are copied to gray or replicated.
	switch s := src.(type) {
	case *image.Gray:
		dst.Reset(w, h, mode.Channels())
		for y := 0; y < h; y++ {
			o := s.PixOffset(b.Min.X, b.Min.Y+y)
			grayRow(dst.Row(y), s.Pix[o:o+w], 1, mode)
		}
		return nil
	case *image.Gray16:
		dst.Reset(w, h, mode.Channels())
		for y := 0; y < h; y++ {
			o := s.PixOffset(b.Min.X, b.Min.Y+y)
			grayRow(dst.Row(y), s.Pix[o:o+2*w], 2, mode)
		}
		return nil
	}

	// Everything else is written as RGB rows, then reduced to L if asked.
	var row func(y int, out []uint8) // out: w RGB triples of row b.Min.Y+y
	switch s := src.(type) {
	case *image.YCbCr:
		if b.Min == (image.Point{}) {
			f := newUpsampler(s)
			row = f.row
			break
		}
		row = func(y int, out []uint8) { ycbcrRowNearest(out, s, b.Min.X, b.Min.Y+y) }
	case *image.RGBA:
		row = func(y int, out []uint8) { o := s.PixOffset(b.Min.X, b.Min.Y+y); dropAlpha(out, s.Pix[o:o+4*w], 1) }
	case *image.NRGBA:
		row = func(y int, out []uint8) { o := s.PixOffset(b.Min.X, b.Min.Y+y); dropAlpha(out, s.Pix[o:o+4*w], 1) }
	case *image.RGBA64:
		row = func(y int, out []uint8) { o := s.PixOffset(b.Min.X, b.Min.Y+y); dropAlpha(out, s.Pix[o:o+8*w], 2) }
	case *image.NRGBA64:
		row = func(y int, out []uint8) { o := s.PixOffset(b.Min.X, b.Min.Y+y); dropAlpha(out, s.Pix[o:o+8*w], 2) }
	case *image.CMYK:
		row = func(y int, out []uint8) { o := s.PixOffset(b.Min.X, b.Min.Y+y); cmykRow(out, s.Pix[o:o+4*w]) }
	case *image.Paletted:
		var pal [256][3]uint8 // indices past the palette read black
		for i, c := range s.Palette[:min(len(s.Palette), 256)] {
			pal[i] = rgbOf(c)
		}
		row = func(y int, out []uint8) {
			o := s.PixOffset(b.Min.X, b.Min.Y+y)
			for x, idx := range s.Pix[o : o+w] {
				p := &pal[idx]
				out[3*x], out[3*x+1], out[3*x+2] = p[0], p[1], p[2]
			}
		}
	default:
		row = func(y int, out []uint8) { atRow(out, src, b.Min.X, b.Min.Y+y) }
	}
	dst.Reset(w, h, mode.Channels())
	if mode == RGB {
		for y := 0; y < h; y++ {
			row(y, dst.Row(y))
		}
		return nil
	}
	tmp := make([]uint8, 3*w)
	for y := 0; y < h; y++ {
		row(y, tmp)
		rgbToL(dst.Row(y), tmp)
	}
	return nil
}

// atRow converts len(out)/3 pixels of row y from x0 on through At().
func atRow(out []uint8, src image.Image, x0, y int) {
	for x := 0; x < len(out)/3; x++ {
		p := rgbOf(src.At(x0+x, y))
		out[3*x], out[3*x+1], out[3*x+2] = p[0], p[1], p[2]
	}
}

// rgbOf is a color's straight (un-premultiplied) 8-bit RGB, alpha dropped.
func rgbOf(c color.Color) [3]uint8 {
	switch c := c.(type) {
	case color.NRGBA:
		return [3]uint8{c.R, c.G, c.B}
	case color.RGBA:
		return [3]uint8{c.R, c.G, c.B}
	}
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	return [3]uint8{n.R, n.G, n.B}
}

// grayRow writes a gray row (bytesPer 1, or 2 for big-endian 16-bit, high
// byte kept) as gray or replicated RGB.
func grayRow(out, in []uint8, bytesPer int, mode Mode) {
	if mode == Gray {
		if bytesPer == 1 {
			copy(out, in)
			return
		}
		for x := range out {
			out[x] = in[2*x]
		}
		return
	}
	n := len(out) / 3
	in = in[:n*bytesPer]
	for x := 0; x < n; x++ {
		v := in[x*bytesPer]
		o := out[3*x : 3*x+3 : 3*x+3]
		o[0], o[1], o[2] = v, v, v
	}
}

// dropAlpha copies RGB out of RGBA samples of bytesPer bytes each
// (big-endian, high byte kept).
func dropAlpha(out, in []uint8, bytesPer int) {
	n := len(out) / 3
	step := 4 * bytesPer
	in = in[:n*step]
	for x := 0; x < n; x++ {
		p := in[x*step : x*step+step : x*step+step]
		o := out[3*x : 3*x+3 : 3*x+3]
		o[0], o[1], o[2] = p[0], p[bytesPer], p[2*bytesPer]
	}
}

// cmykRow is PIL's cmyk2rgb: with nk = 255-K, R = nk - nk*C/255 (rounded
// as PIL's MULDIV255), likewise G from M and B from Y.
func cmykRow(out, in []uint8) {
	n := len(out) / 3
	in = in[:4*n]
	for x := 0; x < n; x++ {
		p := in[4*x : 4*x+4 : 4*x+4]
		o := out[3*x : 3*x+3 : 3*x+3]
		nk := 255 - int32(p[3])
		o[0] = clampU8(nk - mulDiv255(int32(p[0]), nk))
		o[1] = clampU8(nk - mulDiv255(int32(p[1]), nk))
		o[2] = clampU8(nk - mulDiv255(int32(p[2]), nk))
	}
}

// mulDiv255 is PIL's MULDIV255: a*b/255, rounded.
func mulDiv255(a, b int32) int32 {
	t := a*b + 128
	return ((t >> 8) + t) >> 8
}

func clampU8(v int32) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// rgbToL is PIL's RGB->L conversion (Convert.c L24).
func rgbToL(out, in []uint8) {
	in = in[:3*len(out)]
	for x := range out {
		p := in[3*x : 3*x+3 : 3*x+3]
		out[x] = uint8((uint32(p[0])*19595 + uint32(p[1])*38470 + uint32(p[2])*7471 + 0x8000) >> 16)
	}
}

// ycbcrToRGB is libjpeg's ycc_rgb_convert (jdcolor.c, the decoder PIL
// uses) for one pixel: 16-bit fixed-point tables, computed inline.
func ycbcrToRGB(o []uint8, y, cb, cr uint8) {
	yy := int32(y)
	cb1, cr1 := int32(cb)-128, int32(cr)-128
	o[0] = clampU8(yy + (91881*cr1+1<<15)>>16)
	o[1] = clampU8(yy + (-22554*cb1-46802*cr1+1<<15)>>16)
	o[2] = clampU8(yy + (116130*cb1+1<<15)>>16)
}

// ycbcrRowNearest converts row y of a sub-image (any origin) with each
// pixel's own chroma sample (nearest-neighbour upsampling).
func ycbcrRowNearest(out []uint8, s *image.YCbCr, x0, y int) {
	for x := 0; x < len(out)/3; x++ {
		yi, ci := s.YOffset(x0+x, y), s.COffset(x0+x, y)
		ycbcrToRGB(out[3*x:3*x+3:3*x+3], s.Y[yi], s.Cb[ci], s.Cr[ci])
	}
}

// upsampler converts a whole decoded JPEG (origin 0,0) as libjpeg-turbo
// with its defaults does, so as PIL's decoder does: chroma upsampled with
// jdsample.c's "fancy" triangle filters (h2v2 and h2v1 when the chroma
// plane is wider than 2 samples, h1v2), other ratios by replication; edge
// rows and columns replicated; then ycbcrToRGB.
type upsampler struct {
	s      *image.YCbCr
	w      int
	hs, vs int // horizontal, vertical subsampling shifts
	cw, ch int // chroma samples that are real (the rest is MCU padding)
	fancyH bool
	fancyV bool
	cb, cr []uint8 // one full-width chroma row each
	colsum []int32 // h2v2: the vertically blended chroma row
}

func newUpsampler(s *image.YCbCr) *upsampler {
	w, h := s.Rect.Dx(), s.Rect.Dy()
	f := &upsampler{s: s, w: w}
	switch s.SubsampleRatio {
	case image.YCbCrSubsampleRatio422:
		f.hs = 1
	case image.YCbCrSubsampleRatio420:
		f.hs, f.vs = 1, 1
	case image.YCbCrSubsampleRatio440:
		f.vs = 1
	case image.YCbCrSubsampleRatio411:
		f.hs = 2
	case image.YCbCrSubsampleRatio410:
		f.hs, f.vs = 2, 1
	}
	f.cw = (w + 1<<f.hs - 1) >> f.hs
	f.ch = (h + 1<<f.vs - 1) >> f.vs
	// jinit_upsampler: h2 ratios are fancy only for planes wider than 2.
	switch {
	case f.hs == 1 && f.vs == 1:
		f.fancyH, f.fancyV = f.cw > 2, f.cw > 2
	case f.hs == 1 && f.vs == 0:
		f.fancyH = f.cw > 2
	case f.hs == 0 && f.vs == 1:
		f.fancyV = true
	}
	n := f.cw << f.hs // whole chroma samples cover at least w columns
	f.cb, f.cr = make([]uint8, n), make([]uint8, n)
	f.colsum = make([]int32, f.cw)
	return f
}

// row writes the RGB samples of image row y.
func (f *upsampler) row(y int, out []uint8) {
	f.chroma(f.cb, f.s.Cb, y)
	f.chroma(f.cr, f.s.Cr, y)
	yrow := f.s.Y[y*f.s.YStride : y*f.s.YStride+f.w]
	cb, cr := f.cb[:f.w], f.cr[:f.w]
	out = out[:3*f.w]
	for x, yv := range yrow { // ycbcrToRGB, inlined by hand
		yy := int32(yv)
		cb1, cr1 := int32(cb[x])-128, int32(cr[x])-128
		o := out[3*x : 3*x+3 : 3*x+3]
		o[0] = clampU8(yy + (91881*cr1+1<<15)>>16)
		o[1] = clampU8(yy + (-22554*cb1-46802*cr1+1<<15)>>16)
		o[2] = clampU8(yy + (116130*cb1+1<<15)>>16)
	}
}

// chroma writes one plane's samples for image row y at full width.
func (f *upsampler) chroma(out, plane []uint8, y int) {
	cs := f.s.CStride
	r := y >> f.vs
	in0 := plane[r*cs : r*cs+f.cw]
	if f.fancyV {
		// The nearer neighbour row: above for the upper output row of a
		// pair, below for the lower; replicated at the image's edges.
		upper := y&1 == 0
		nr := r + 1
		if upper {
			nr = r - 1
		}
		nr = min(max(nr, 0), f.ch-1)
		in1 := plane[nr*cs : nr*cs+f.cw]
		if !f.fancyH { // h1v2_fancy_upsample
			bias := int32(2)
			if upper {
				bias = 1
			}
			for c, v := range in0 {
				out[c] = uint8((3*int32(v) + int32(in1[c]) + bias) >> 2)
			}
			return
		}
		// h2v2_fancy_upsample: 9/16, 3/16, 3/16, 1/16.
		sum := f.colsum[:len(in0)]
		for c, v := range in0 {
			sum[c] = 3*int32(v) + int32(in1[c])
		}
		n := len(sum)
		out[0] = uint8((sum[0]*4 + 8) >> 4)
		out[1] = uint8((sum[0]*3 + sum[1] + 7) >> 4)
		for c := 1; c < n-1; c++ {
			out[2*c] = uint8((sum[c]*3 + sum[c-1] + 8) >> 4)
			out[2*c+1] = uint8((sum[c]*3 + sum[c+1] + 7) >> 4)
		}
		out[2*n-2] = uint8((sum[n-1]*3 + sum[n-2] + 8) >> 4)
		out[2*n-1] = uint8((sum[n-1]*4 + 7) >> 4)
		return
	}
	if f.fancyH { // h2v1_fancy_upsample
		n := len(in0)
		out[0] = in0[0]
		out[1] = uint8((3*int32(in0[0]) + int32(in0[1]) + 2) >> 2)
		for c := 1; c < n-1; c++ {
			v := 3 * int32(in0[c])
			out[2*c] = uint8((v + int32(in0[c-1]) + 1) >> 2)
			out[2*c+1] = uint8((v + int32(in0[c+1]) + 2) >> 2)
		}
		out[2*n-2] = uint8((3*int32(in0[n-1]) + int32(in0[n-2]) + 1) >> 2)
		out[2*n-1] = in0[n-1]
		return
	}
	// fullsize, h2v1/h2v2 on narrow planes, and int_upsample: replication.
	if f.hs == 0 {
		copy(out, in0)
		return
	}
	for x := range out[:f.w] {
		out[x] = in0[x>>f.hs]
	}
}
