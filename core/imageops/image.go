package imageops

import (
	"errors"
	"fmt"
)

// ErrBadArg reports a size, rectangle or buffer that does not fit the image
// it is used with. Ops return it wrapped, with the values, instead of
// panicking.
var ErrBadArg = errors.New("imageops: bad argument")

// Image is an 8-bit image in HWC interleaved layout: the sample of channel
// c of pixel (x, y) is Pix[y*Stride+x*C+c]. C is 1 (gray, PIL mode "L") or
// 3 (RGB). A Stride larger than W*C makes the image a view into a larger
// one (see View); ops that write an Image make it tight (Stride == W*C).
//
// An Image is a plain value with no locking; share one between goroutines
// only for reading.
type Image struct {
	W, H, C int
	Stride  int
	Pix     []uint8
}

// NewImage returns a zeroed w x h image with c channels (1 or 3).
func NewImage(w, h, c int) *Image {
	m := &Image{}
	m.Reset(w, h, c)
	clear(m.Pix)
	return m
}

// Reset reshapes m to a tight w x h x c image, reusing Pix when its
// capacity suffices (the contents are then unspecified). It allocates only
// when the image grows.
func (m *Image) Reset(w, h, c int) {
	n := w * h * c
	if cap(m.Pix) < n {
		m.Pix = make([]uint8, n)
	}
	m.W, m.H, m.C, m.Stride, m.Pix = w, h, c, w*c, m.Pix[:n]
}

// Row returns the w*c samples of row y.
func (m *Image) Row(y int) []uint8 {
	o := y * m.Stride
	return m.Pix[o : o+m.W*m.C]
}

// check reports whether m is well formed: positive size, 1 or 3 channels,
// and a Pix long enough for its stride.
func (m *Image) check() error {
	if m == nil {
		return fmt.Errorf("%w: nil image", ErrBadArg)
	}
	if m.W <= 0 || m.H <= 0 || (m.C != 1 && m.C != 3) || m.Stride < m.W*m.C {
		return fmt.Errorf("%w: image %dx%d, %d channels, stride %d", ErrBadArg, m.W, m.H, m.C, m.Stride)
	}
	if len(m.Pix) < (m.H-1)*m.Stride+m.W*m.C {
		return fmt.Errorf("%w: image %dx%dx%d stride %d needs %d bytes, has %d",
			ErrBadArg, m.W, m.H, m.C, m.Stride, (m.H-1)*m.Stride+m.W*m.C, len(m.Pix))
	}
	return nil
}

// Rect is a region in torchvision's order: top row, left column, height,
// width (get_params' i, j, h, w).
type Rect struct {
	Top, Left, H, W int
}

// inside reports whether r is non-empty and lies within a w x h image.
func (r Rect) inside(w, h int) bool {
	return r.H > 0 && r.W > 0 && r.Top >= 0 && r.Left >= 0 && r.Top+r.H <= h && r.Left+r.W <= w
}

// View returns the region r of m without copying: the view shares m's
// pixels, so writing to one writes to the other. This is torchvision's
// crop(img, top, left, height, width) for a region inside the image.
func (m *Image) View(r Rect) (Image, error) {
	if err := m.check(); err != nil {
		return Image{}, err
	}
	if !r.inside(m.W, m.H) {
		return Image{}, fmt.Errorf("%w: crop %+v outside %dx%d image", ErrBadArg, r, m.W, m.H)
	}
	o := r.Top*m.Stride + r.Left*m.C
	end := o + (r.H-1)*m.Stride + r.W*m.C
	return Image{W: r.W, H: r.H, C: m.C, Stride: m.Stride, Pix: m.Pix[o:end:end]}, nil
}

// CopyTo copies m into dst, made tight (dst.Reset); dst must not share
// pixels with m.
func (m *Image) CopyTo(dst *Image) error {
	if err := m.check(); err != nil {
		return err
	}
	dst.Reset(m.W, m.H, m.C)
	for y := 0; y < m.H; y++ {
		copy(dst.Row(y), m.Row(y))
	}
	return nil
}
