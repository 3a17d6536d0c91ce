package imageops

import "fmt"

// Plan is one fused pass over a decoded image, in torchvision's order:
// crop the source (RandomResizedCrop's i, j, h, w, or the whole image),
// resize the crop to ResizeH x ResizeW (PIL BILINEAR, see Resize), keep the
// Window of the resized image (CenterCrop; zero means all of it; parts
// outside the resized image are zero, as torchvision pads), flip, then
// ToTensor and Normalize.
type Plan struct {
	Crop             Rect
	ResizeH, ResizeW int
	Window           Rect
	HFlip, VFlip     bool
}

// ResizeCenterCropPlan is Resize(size) then CenterCrop((h, w)) of an
// imgH x imgW image: the evaluation chain.
func ResizeCenterCropPlan(imgH, imgW, size, h, w int) Plan {
	rh, rw := ResizeSize(imgH, imgW, size)
	return Plan{
		Crop:    Rect{H: imgH, W: imgW},
		ResizeH: rh, ResizeW: rw,
		Window: CenterCropRect(rh, rw, h, w),
	}
}

// OutSize is the (h, w) of the plan's output.
func (p Plan) OutSize() (h, w int) {
	win := p.window()
	return win.H, win.W
}

func (p Plan) window() Rect {
	if p.Window.H == 0 && p.Window.W == 0 {
		return Rect{H: p.ResizeH, W: p.ResizeW}
	}
	return p.Window
}

// ScaleCrop maps the plan's source crop from a fullH x fullW image to the
// same region of a DCT-scaled decode of it (h x w, see DecodeScaled):
// edges are scaled and rounded outwards, then clamped. Random parameters
// are drawn on the full size (Info), as torchvision draws them, and then
// applied to the smaller image; the result approximates, and no longer
// equals, torchvision's.
func (p Plan) ScaleCrop(fullH, fullW, h, w int) Plan {
	if (fullH == h && fullW == w) || fullH <= 0 || fullW <= 0 || h <= 0 || w <= 0 {
		return p
	}
	top := p.Crop.Top * h / fullH
	left := p.Crop.Left * w / fullW
	bottom := min(ceilDiv((p.Crop.Top+p.Crop.H)*h, fullH), h)
	right := min(ceilDiv((p.Crop.Left+p.Crop.W)*w, fullW), w)
	p.Crop = Rect{Top: top, Left: left, H: max(bottom-top, 1), W: max(right-left, 1)}
	return p
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// check validates the plan against src and a destination of n values.
func (p Plan) check(src *Image, n int) (win Rect, err error) {
	if err := src.check(); err != nil {
		return Rect{}, err
	}
	if !p.Crop.inside(src.W, src.H) {
		return Rect{}, fmt.Errorf("%w: plan crop %+v outside %dx%d image", ErrBadArg, p.Crop, src.W, src.H)
	}
	if p.ResizeH <= 0 || p.ResizeW <= 0 {
		return Rect{}, fmt.Errorf("%w: plan resize to %dx%d", ErrBadArg, p.ResizeW, p.ResizeH)
	}
	win = p.window()
	if win.H <= 0 || win.W <= 0 {
		return Rect{}, fmt.Errorf("%w: plan window %+v", ErrBadArg, win)
	}
	if want := src.C * win.H * win.W; n != want {
		return Rect{}, fmt.Errorf("%w: plan output %dx%dx%d needs %d values, destination has %d",
			ErrBadArg, src.C, win.H, win.W, want, n)
	}
	return win, nil
}

// inner is the part of the window that lies inside the resized image.
func (p Plan) inner(win Rect) (Rect, bool) {
	top, left := max(win.Top, 0), max(win.Left, 0)
	bottom, right := min(win.Top+win.H, p.ResizeH), min(win.Left+win.W, p.ResizeW)
	if bottom <= top || right <= left {
		return Rect{}, false
	}
	return Rect{Top: top, Left: left, H: bottom - top, W: right - left}, true
}

// Fused runs plan p on src and writes the CHW float32 result straight into
// dst (one batch slot, len C*h*w for p.OutSize), normalized by norm (nil:
// ToTensor only). The values equal, bit for bit, the unfused chain
// View(Crop) -> Resize -> CenterCrop(Window) -> HFlip/VFlip -> ToTensor ->
// Normalize.Apply, which is torchvision's chain on PIL images.
//
// Only the source rows and columns the window needs are resampled. No
// allocation once s has grown (BenchmarkFused); it runs on the calling
// goroutine.
func (s *Scratch) Fused(dst []float32, src *Image, p Plan, norm *Normalize) error {
	win, err := p.check(src, len(dst))
	if err != nil {
		return err
	}
	if norm == nil {
		if s.unit.c != src.C {
			s.unit.identity(src.C)
		}
		norm = &s.unit
	} else if norm.c != src.C {
		return fmt.Errorf("%w: Normalize for %d channels on a %d-channel image", ErrBadArg, norm.c, src.C)
	}
	in, ok := p.inner(win)
	if in != win {
		for c := 0; c < src.C; c++ {
			pad := norm.lut[c][0]
			plane := dst[c*win.H*win.W : (c+1)*win.H*win.W]
			for i := range plane {
				plane[i] = pad
			}
		}
	}
	if !ok {
		return nil
	}
	s.prepare(src, p.Crop, p.ResizeH, p.ResizeW, in)
	plane := win.H * win.W
	for i := 0; i < in.H; i++ {
		row := s.vrow(i)
		oy := in.Top - win.Top + i
		if p.VFlip {
			oy = win.H - 1 - oy
		}
		o := oy*win.W + in.Left - win.Left // first output column of the row
		step := 1
		if p.HFlip {
			o = oy*win.W + win.W - 1 - (in.Left - win.Left)
			step = -1
		}
		if src.C == 1 {
			storeF(dst[:plane], o, step, row, &norm.lut[0])
			continue
		}
		storeF3(dst[:plane], dst[plane:2*plane], dst[2*plane:3*plane], o, step, row, &norm.lut)
	}
	s.src = nil
	return nil
}

// FusedUint8 is Fused without ToTensor/Normalize: CHW uint8, torchvision's
// PILToTensor of the same chain (normalize on the GPU instead).
func (s *Scratch) FusedUint8(dst []uint8, src *Image, p Plan) error {
	win, err := p.check(src, len(dst))
	if err != nil {
		return err
	}
	in, ok := p.inner(win)
	if in != win {
		clear(dst)
	}
	if !ok {
		return nil
	}
	s.prepare(src, p.Crop, p.ResizeH, p.ResizeW, in)
	plane := win.H * win.W
	c := src.C
	for i := 0; i < in.H; i++ {
		row := s.vrow(i)
		oy := in.Top - win.Top + i
		if p.VFlip {
			oy = win.H - 1 - oy
		}
		for x := 0; x < in.W; x++ {
			ox := in.Left - win.Left + x
			if p.HFlip {
				ox = win.W - 1 - ox
			}
			for ch := 0; ch < c; ch++ {
				dst[ch*plane+oy*win.W+ox] = row[x*c+ch]
			}
		}
	}
	s.src = nil
	return nil
}

// storeF3 writes one RGB row into three planes from column o, moving by
// step (+1, or -1 when flipped), through the per-channel tables.
func storeF3(p0, p1, p2 []float32, o, step int, row []uint8, lut *[3][256]float32) {
	n := len(row) / 3
	if step > 0 {
		p0, p1, p2 = p0[o:o+n], p1[o:o+n], p2[o:o+n]
		for x := range p0 {
			q := row[3*x : 3*x+3 : 3*x+3]
			p0[x], p1[x], p2[x] = lut[0][q[0]], lut[1][q[1]], lut[2][q[2]]
		}
		return
	}
	lo := o - n + 1
	p0, p1, p2 = p0[lo:o+1], p1[lo:o+1], p2[lo:o+1]
	for x := range p0 {
		q := row[3*(n-1-x) : 3*(n-x) : 3*(n-x)]
		p0[x], p1[x], p2[x] = lut[0][q[0]], lut[1][q[1]], lut[2][q[2]]
	}
}

// storeF is storeF3 for one channel.
func storeF(p []float32, o, step int, row []uint8, lut *[256]float32) {
	n := len(row)
	if step > 0 {
		p = p[o : o+n]
		for x, v := range row {
			p[x] = lut[v]
		}
		return
	}
	p = p[o-n+1 : o+1]
	for x, v := range row {
		p[n-1-x] = lut[v]
	}
}
