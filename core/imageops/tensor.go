package imageops

import (
	"fmt"
	"math"
)

// ToTensor writes m as torchvision's ToTensor does: CHW float32, each
// sample v as float32(v)/255. len(dst) must be C*H*W (one batch slot).
func ToTensor(dst []float32, m *Image) error {
	if err := m.check(); err != nil {
		return err
	}
	if len(dst) != m.C*m.H*m.W {
		return fmt.Errorf("%w: ToTensor of %dx%dx%d into %d floats", ErrBadArg, m.C, m.H, m.W, len(dst))
	}
	plane := m.H * m.W
	for y := 0; y < m.H; y++ {
		row := m.Row(y)
		for c := 0; c < m.C; c++ {
			out := dst[c*plane+y*m.W : c*plane+(y+1)*m.W]
			for x := range out {
				out[x] = float32(row[x*m.C+c]) / 255
			}
		}
	}
	return nil
}

// PILToTensor writes m as torchvision's PILToTensor (v2: ToImage) does:
// CHW uint8. len(dst) must be C*H*W.
func PILToTensor(dst []uint8, m *Image) error {
	if err := m.check(); err != nil {
		return err
	}
	if len(dst) != m.C*m.H*m.W {
		return fmt.Errorf("%w: PILToTensor of %dx%dx%d into %d bytes", ErrBadArg, m.C, m.H, m.W, len(dst))
	}
	plane := m.H * m.W
	for y := 0; y < m.H; y++ {
		row := m.Row(y)
		for c := 0; c < m.C; c++ {
			out := dst[c*plane+y*m.W : c*plane+(y+1)*m.W]
			for x := range out {
				out[x] = row[x*m.C+c]
			}
		}
	}
	return nil
}

// Normalize is torchvision's Normalize(mean, std) as it follows ToTensor:
// (x - mean[c]) / std[c] in float32, mean and std rounded to float32 as
// torch.as_tensor does. It also holds, for the fused path, the result for
// each of the 256 values a uint8 sample can take. Immutable once built;
// safe for concurrent use.
type Normalize struct {
	c         int
	mean, std [3]float32
	lut       [3][256]float32
}

// NewNormalize returns the normalization for len(mean) == len(std)
// channels (1 or 3); every std must be non-zero and all values finite.
func NewNormalize(mean, std []float64) (*Normalize, error) {
	if len(mean) != len(std) || (len(mean) != 1 && len(mean) != 3) {
		return nil, fmt.Errorf("%w: Normalize needs 1 or 3 means and as many stds, got %d and %d", ErrBadArg, len(mean), len(std))
	}
	n := &Normalize{c: len(mean)}
	for c := range mean {
		m, s := float32(mean[c]), float32(std[c])
		if s == 0 || math.IsInf(float64(m), 0) || math.IsInf(float64(s), 0) || m != m || s != s {
			return nil, fmt.Errorf("%w: Normalize mean %v std %v", ErrBadArg, mean, std)
		}
		n.mean[c], n.std[c] = m, s
		for v := range n.lut[c] {
			n.lut[c][v] = (float32(v)/255 - m) / s
		}
	}
	return n, nil
}

// identity fills n as ToTensor alone: mean 0, std 1 for c channels.
func (n *Normalize) identity(c int) {
	n.c = c
	for ch := 0; ch < c; ch++ {
		n.mean[ch], n.std[ch] = 0, 1
		for v := range n.lut[ch] {
			n.lut[ch][v] = float32(v) / 255
		}
	}
}

// Channels is the channel count n was built for.
func (n *Normalize) Channels() int { return n.c }

// Apply normalizes a CHW float32 tensor in place; len(t) must be a
// multiple of the channel count (each plane len(t)/C).
func (n *Normalize) Apply(t []float32) error {
	if n.c == 0 || len(t)%n.c != 0 {
		return fmt.Errorf("%w: Normalize of %d floats over %d channels", ErrBadArg, len(t), n.c)
	}
	plane := len(t) / n.c
	for c := 0; c < n.c; c++ {
		m, s := n.mean[c], n.std[c]
		p := t[c*plane : (c+1)*plane]
		for i, x := range p {
			p[i] = (x - m) / s
		}
	}
	return nil
}
