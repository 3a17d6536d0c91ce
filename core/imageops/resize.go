package imageops

import (
	"fmt"
	"math"
)

// precisionBits is PIL's fixed-point precision for 8-bit resampling
// (Resample.c: 32 - 8 - 2).
const precisionBits = 32 - 8 - 2

// coeffs are one axis's resampling coefficients, computed as PIL's
// precompute_coeffs and normalize_coeffs_8bpc do for its BILINEAR filter,
// for output positions [from, from+n) only.
type coeffs struct {
	ksize  int
	bounds []int32   // per position: first input index, tap count
	k      []int32   // per position: ksize weights, 22-bit fixed point
	pre    []float64 // one position's weights before rounding
}

// compute fills c for resizing an axis of inSize samples to outSize. The
// filter is the triangle of support 1 widened by the downscale factor, so
// downscaling is antialiased and upscaling is plain bilinear; edge taps
// fall off the image and the rest are renormalized.
func (c *coeffs) compute(inSize, outSize, from, n int) {
	scale := float64(inSize) / float64(outSize)
	filterscale := max(scale, 1.0)
	support := 1.0 * filterscale // BILINEAR's support is 1
	ksize := int(math.Ceil(support))*2 + 1
	c.ksize = ksize
	c.bounds = grow(c.bounds, 2*n)
	c.k = grow(c.k, n*ksize)
	c.pre = grow(c.pre, ksize)
	ss := 1.0 / filterscale
	for i := 0; i < n; i++ {
		center := (float64(from+i) + 0.5) * scale
		xmin := int(center - support + 0.5) // C's (int) truncates, as Go's does
		if xmin < 0 {
			xmin = 0
		}
		xmax := int(center + support + 0.5)
		if xmax > inSize {
			xmax = inSize
		}
		cnt := min(max(xmax-xmin, 0), ksize)
		ww := 0.0
		pre := c.pre[:cnt]
		for x := range pre {
			w := bilinear((float64(x+xmin) - center + 0.5) * ss)
			pre[x] = w
			ww += w
		}
		k := c.k[i*ksize : (i+1)*ksize]
		for x := range pre {
			if ww != 0 {
				pre[x] /= ww
			}
			k[x] = toFixed(pre[x])
		}
		clear(k[cnt:])
		c.bounds[2*i], c.bounds[2*i+1] = int32(xmin), int32(cnt)
	}
}

func bilinear(x float64) float64 {
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return 1 - x
	}
	return 0
}

// toFixed rounds a weight to PIL's fixed point, half away from zero.
func toFixed(w float64) int32 {
	if w < 0 {
		return int32(-0.5 + w*(1<<precisionBits))
	}
	return int32(0.5 + w*(1<<precisionBits))
}

// clip8 is PIL's clip8: the integer part of a fixed-point sum, clamped.
func clip8(v int32) uint8 {
	v >>= precisionBits
	if uint32(v) > 255 {
		if v < 0 {
			return 0
		}
		return 255
	}
	return uint8(v)
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Scratch is one worker's reusable buffers for Resize and Fused. It is not
// safe for concurrent use; give each worker its own. The zero value is
// ready; buffers grow to the largest image seen and are then reused, so a
// steady stream of similar images allocates nothing.
type Scratch struct {
	xc, yc coeffs
	tmp    []uint8   // first pass output (horizontal-first: the rows the window needs)
	acc    []int32   // vertical pass: one row of sums
	row    []uint8   // one output row
	unit   Normalize // ToTensor alone, built on first use

	// The resample in progress (set by prepare).
	order  passOrder
	src    *Image
	crop   Rect
	win    Rect
	c      int // channels
	rowLen int // samples per output row (win.W*c)
	ybase  int // horizontal-first: first crop row held in tmp
	xbase  int // vertical-first: first crop column the window reads
	tmpLen int // samples per tmp row
}

// passOrder is how prepare and vrow split the work.
type passOrder uint8

const (
	copyOnly        passOrder = iota // same size: a copy
	horizontalOnly                   // only the width changes
	verticalOnly                     // only the height changes
	horizontalFirst                  // both change; PIL's usual order
	verticalFirst                    // both change; PIL's order for strong height reductions
)

// pickOrder is the pass order Pillow 13.0 uses for a resize of an
// inW x inH image to outW x outH: vertical first when both sizes change and
// the height shrinks by more than twice what the width shrinks by;
// horizontal first otherwise. (Read from Pillow 13.0.0's compiled
// ImagingResample, older Resample.c sources always go horizontal first;
// confirmed on 600 random size pairs, TestPickOrder lists some.) The order
// matters because the first pass is rounded to uint8: the wrong one is off
// by up to 1 level.
func pickOrder(inW, inH, outW, outH int) passOrder {
	needH, needV := outW != inW, outH != inH
	switch {
	case !needH && !needV:
		return copyOnly
	case !needV:
		return horizontalOnly
	case !needH:
		return verticalOnly
	case inH-outH > 0 && inH-outH > 2*(inW-outW):
		return verticalFirst
	}
	return horizontalFirst
}

// prepare sets up resampling src's region crop to outH x outW (PIL's
// Image.resize with BILINEAR, after torchvision's crop) for the window win
// of the output, and runs the horizontal pass when it goes first. Rows of
// the window then come from vrow. Only the source rows and columns that the window's
// pixels depend on are read. Arguments are validated by the caller.
func (s *Scratch) prepare(src *Image, crop Rect, outH, outW int, win Rect) {
	c := src.C
	s.src, s.crop, s.win, s.c, s.rowLen = src, crop, win, c, win.W*c
	s.order = pickOrder(crop.W, crop.H, outW, outH)
	s.row = grow(s.row, s.rowLen)
	switch s.order {
	case horizontalOnly:
		s.xc.compute(crop.W, outW, win.Left, win.W)
	case verticalOnly:
		s.yc.compute(crop.H, outH, win.Top, win.H)
		s.acc = grow(s.acc, s.rowLen)
	case horizontalFirst:
		s.xc.compute(crop.W, outW, win.Left, win.W)
		s.yc.compute(crop.H, outH, win.Top, win.H)
		last := 2 * (win.H - 1)
		y0, y1 := int(s.yc.bounds[0]), int(s.yc.bounds[last]+s.yc.bounds[last+1])
		s.ybase, s.tmpLen = y0, s.rowLen
		s.tmp = grow(s.tmp, (y1-y0)*s.rowLen)
		for r := y0; r < y1; r++ {
			o := (crop.Top+r)*src.Stride + crop.Left*c
			s.hrow(s.tmp[(r-y0)*s.rowLen:(r-y0+1)*s.rowLen], src.Pix[o:o+crop.W*c])
		}
		s.acc = grow(s.acc, s.rowLen)
	case verticalFirst:
		s.xc.compute(crop.W, outW, win.Left, win.W)
		s.yc.compute(crop.H, outH, win.Top, win.H)
		last := 2 * (win.W - 1)
		x0, x1 := int(s.xc.bounds[0]), int(s.xc.bounds[last]+s.xc.bounds[last+1])
		for i := 0; i < win.W; i++ { // the horizontal pass reads tmp, which starts at x0
			s.xc.bounds[2*i] -= int32(x0)
		}
		s.xbase, s.tmpLen = x0, (x1-x0)*c
		s.tmp = grow(s.tmp, s.tmpLen)
		s.acc = grow(s.acc, s.tmpLen)
	}
}

// hrow resamples one row horizontally with s.xc: PIL's
// ImagingResampleHorizontal_8bpc. in starts at the column bounds count from.
func (s *Scratch) hrow(out, in []uint8) {
	if s.c == 3 {
		hrow3(out, in, &s.xc)
	} else {
		hrow1(out, in, &s.xc)
	}
}

// hrow3 resamples one RGB row horizontally (PIL's
// ImagingResampleHorizontal_8bpc, 3 bands). Bilinear weights are never
// negative and every channel's sum stays below 2^31, so R and G share one
// 64-bit accumulator (R in the low 32 bits, G in the high), exactly.
func hrow3(out, in []uint8, xc *coeffs) {
	ks := xc.ksize
	n := len(out) / 3
	bounds := xc.bounds[:2*n]
	kk := xc.k[:n*ks]
	const half = 1 << (precisionBits - 1)
	for xx := 0; xx < n; xx++ {
		xmin, cnt := int(bounds[2*xx]), int(bounds[2*xx+1])
		k := kk[xx*ks : xx*ks+cnt]
		p := in[3*xmin : 3*(xmin+cnt)]
		rg, b := uint64(half|half<<32), uint32(half)
		for _, w := range k {
			if len(p) < 3 {
				break
			}
			rg += (uint64(p[0]) | uint64(p[1])<<32) * uint64(uint32(w))
			b += uint32(p[2]) * uint32(w)
			p = p[3:]
		}
		o := out[3*xx : 3*xx+3 : 3*xx+3]
		o[0], o[1], o[2] = clip8(int32(uint32(rg))), clip8(int32(rg>>32)), clip8(int32(b))
	}
}

// hrow1 is hrow3 for one band.
func hrow1(out, in []uint8, xc *coeffs) {
	ks := xc.ksize
	bounds := xc.bounds[:2*len(out)]
	for xx := range out {
		xmin, cnt := int(bounds[2*xx]), int(bounds[2*xx+1])
		k := xc.k[xx*ks : xx*ks+cnt]
		p := in[xmin : xmin+cnt]
		s := int32(1 << (precisionBits - 1))
		for i, w := range k {
			s += int32(p[i]) * w
		}
		out[xx] = clip8(s)
	}
}

// vsum writes out[j] = clip8(half + sum over taps t of k[t]*buf[off+t*stride+j]):
// PIL's ImagingResampleVertical_8bpc for one output row. The sums are
// integers, so accumulating a source row at a time gives PIL's per-pixel
// sums exactly.
func vsum(out []uint8, acc []int32, k []int32, buf []uint8, off, stride int) {
	acc = acc[:len(out)]
	for j := range acc {
		acc[j] = 1 << (precisionBits - 1)
	}
	for t, w := range k {
		o := off + t*stride
		in := buf[o : o+len(acc)]
		for j, v := range in {
			acc[j] += int32(v) * w
		}
	}
	for j, v := range acc {
		out[j] = clip8(v)
	}
}

// vrow returns row i of the window (win.W*C samples, valid until the next
// call; it may alias the source for a plain copy).
func (s *Scratch) vrow(i int) []uint8 {
	src, crop, c := s.src, s.crop, s.c
	switch s.order {
	case copyOnly:
		o := (crop.Top+s.win.Top+i)*src.Stride + (crop.Left+s.win.Left)*c
		return src.Pix[o : o+s.rowLen]
	case horizontalOnly:
		o := (crop.Top+s.win.Top+i)*src.Stride + crop.Left*c
		s.hrow(s.row, src.Pix[o:o+crop.W*c])
	case verticalOnly:
		ymin, cnt := int(s.yc.bounds[2*i]), int(s.yc.bounds[2*i+1])
		k := s.yc.k[i*s.yc.ksize : i*s.yc.ksize+cnt]
		vsum(s.row, s.acc, k, src.Pix, (crop.Top+ymin)*src.Stride+(crop.Left+s.win.Left)*c, src.Stride)
	case horizontalFirst:
		ymin, cnt := int(s.yc.bounds[2*i]), int(s.yc.bounds[2*i+1])
		k := s.yc.k[i*s.yc.ksize : i*s.yc.ksize+cnt]
		vsum(s.row, s.acc, k, s.tmp, (ymin-s.ybase)*s.rowLen, s.rowLen)
	case verticalFirst:
		ymin, cnt := int(s.yc.bounds[2*i]), int(s.yc.bounds[2*i+1])
		k := s.yc.k[i*s.yc.ksize : i*s.yc.ksize+cnt]
		vsum(s.tmp[:s.tmpLen], s.acc, k, src.Pix, (crop.Top+ymin)*src.Stride+(crop.Left+s.xbase)*c, src.Stride)
		s.hrow(s.row, s.tmp[:s.tmpLen])
	}
	return s.row[:s.rowLen]
}

// ResizeSize is the (h, w) torchvision's Resize(size) gives an imgH x imgW
// image for an int size: the smaller edge becomes size and the other keeps
// the aspect ratio, truncated (int(size * long / short)). Non-positive
// arguments give (0, 0).
func ResizeSize(imgH, imgW, size int) (h, w int) {
	if imgH <= 0 || imgW <= 0 || size <= 0 {
		return 0, 0
	}
	short, long := imgW, imgH
	if imgH < imgW {
		short, long = imgH, imgW
	}
	newLong := int(float64(size*long) / float64(short))
	if imgW <= imgH {
		return newLong, size
	}
	return size, newLong
}

// Resize writes src resized to h x w into dst (dst.Reset) with PIL's
// Image.resize(BILINEAR) semantics, which torchvision's Resize uses on PIL
// images: antialiased when downscaling (the triangle filter's support
// scales with the factor), plain bilinear when upscaling, no reducing_gap.
// The result equals PIL's bit for bit (same coefficients, same 22-bit fixed
// point, same uint8 rounding between the horizontal and the vertical
// pass). dst must not share pixels with src.
//
// Resize allocates its buffers; a worker should keep a Scratch and call
// Scratch.Resize. Measured 1024x768 -> 224x224: see BenchmarkResize.
func Resize(dst, src *Image, h, w int) error {
	var s Scratch
	return s.Resize(dst, src, h, w)
}

// Resize is the package-level Resize with s's buffers: no allocation once
// s and dst have grown.
func (s *Scratch) Resize(dst, src *Image, h, w int) error {
	if err := src.check(); err != nil {
		return err
	}
	if h <= 0 || w <= 0 {
		return fmt.Errorf("%w: resize to %dx%d", ErrBadArg, w, h)
	}
	if dst == src {
		return fmt.Errorf("%w: resize in place", ErrBadArg)
	}
	s.prepare(src, Rect{H: src.H, W: src.W}, h, w, Rect{H: h, W: w})
	dst.Reset(w, h, src.C)
	for y := 0; y < h; y++ {
		copy(dst.Row(y), s.vrow(y))
	}
	s.src = nil
	return nil
}
