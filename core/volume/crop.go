package volume

import (
	"fmt"
	"slices"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// PadMode says what a crop reads outside the volume.
type PadMode uint8

const (
	// PadConstant reads Pad.Value (numpy's np.pad mode "constant").
	PadConstant PadMode = iota
	// PadEdge reads the nearest voxel inside the volume (np.pad mode
	// "edge", which the MLPerf preprocessing uses).
	PadEdge
)

// Pad is what a crop window reads where it leaves the volume. Value is
// stored in the volume's dtype with Cast's rules. The zero Pad pads with 0.
type Pad struct {
	Mode  PadMode
	Value float64
}

// CropParams is one crop window. Start and Size are in voxels along
// (D, H, W) of the source; the window may extend past the volume on any
// side (Start negative, or Start+Size beyond the size), and reads padding
// there. Foreground and Center only record how a ForegroundCrop chose the
// window; Crop ignores them.
//
// numpy equivalent, for a (C, D, H, W) array a and constant padding v:
//
//	lo = [max(0, -s) for s in start]
//	hi = [max(0, s + k - n) for s, k, n in zip(start, size, a.shape[1:])]
//	b = np.pad(a, [(0, 0)] + list(zip(lo, hi)), constant_values=v)
//	out = b[:, start[0]+lo[0] : start[0]+lo[0]+size[0], ...]  # and so on per axis
type CropParams struct {
	Start      [3]int `json:"start"`
	Size       [3]int `json:"size"`
	Foreground bool   `json:"foreground"` // the window was centred on a foreground voxel
	Center     [3]int `json:"center"`     // that voxel (meaningful when Foreground)
}

// maxCoord bounds crop coordinates so that no index arithmetic overflows.
const maxCoord = 1 << 40

func (p CropParams) validate() error {
	for a := 0; a < 3; a++ {
		if p.Size[a] <= 0 || p.Size[a] > maxCoord || p.Start[a] < -maxCoord || p.Start[a] > maxCoord {
			return fmt.Errorf("volume: crop: %w: start %v size %v (sizes must be in [1, 2^40], starts within ±2^40)", ErrParams, p.Start, p.Size)
		}
	}
	return nil
}

// Crop returns the window p of v (rank >= 3; every leading axis is cut
// alike) in a new volume of shape (leading..., Size[0], Size[1], Size[2]).
// Voxels outside v read pad. The result is exact: bytes are copied, not
// converted. Cost: one pass over the output, a row copy (memmove) at a
// time, plus zeroing the new buffer: about 2 ms for 128^3 float32 out of
// 256^3 (BenchmarkCrop); CropInto skips the allocation.
func Crop(v *Volume, p CropParams, pad Pad) (*Volume, error) {
	shape, err := cropShape(v, p, pad)
	if err != nil {
		return nil, err
	}
	n, err := numElements(shape)
	if err != nil {
		return nil, fmt.Errorf("volume: crop: %w", err)
	}
	out := &Volume{Shape: shape, DType: v.DType, Data: make([]byte, n*v.DType.Size())}
	c, sp, _ := v.dims()
	cropInto(out.Data, v.Data, v.DType.Size(), c, sp, p, pad, v.DType)
	return out, nil
}

// CropInto writes the window p of v into dst, which must hold exactly the
// bytes of Crop's result (a batch row, say); it allocates nothing beyond
// one row of padding. Everything else as for Crop.
func CropInto(dst []byte, v *Volume, p CropParams, pad Pad) error {
	shape, err := cropShape(v, p, pad)
	if err != nil {
		return err
	}
	n, err := numElements(shape)
	if err != nil {
		return fmt.Errorf("volume: crop: %w", err)
	}
	if want := n * v.DType.Size(); len(dst) != want {
		return fmt.Errorf("volume: crop: %w: destination has %d bytes, shape %v %s needs %d", ErrShape, len(dst), shape, v.DType, want)
	}
	c, sp, _ := v.dims()
	cropInto(dst, v.Data, v.DType.Size(), c, sp, p, pad, v.DType)
	return nil
}

// cropShape validates a crop and returns its output shape.
func cropShape(v *Volume, p CropParams, pad Pad) ([]int, error) {
	if _, _, err := v.dims(); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	if pad.Mode != PadConstant && pad.Mode != PadEdge {
		return nil, fmt.Errorf("volume: crop: %w: pad mode %d", ErrParams, pad.Mode)
	}
	return append(slices.Clone(v.Shape[:len(v.Shape)-3]), p.Size[:]...), nil
}

// CropPair crops image and label with the same window; their spatial
// sizes (last three axes) must be equal. Leading axes may differ.
func CropPair(image, label *Volume, p CropParams, imagePad, labelPad Pad) (*Volume, *Volume, error) {
	if err := sameSpatial(image, label); err != nil {
		return nil, nil, err
	}
	img, err := Crop(image, p, imagePad)
	if err != nil {
		return nil, nil, err
	}
	lbl, err := Crop(label, p, labelPad)
	if err != nil {
		return nil, nil, err
	}
	return img, lbl, nil
}

func sameSpatial(image, label *Volume) error {
	a, err := image.Spatial()
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	b, err := label.Spatial()
	if err != nil {
		return fmt.Errorf("label: %w", err)
	}
	if a != b {
		return fmt.Errorf("volume: %w: image spatial size %v differs from label %v", ErrShape, a, b)
	}
	return nil
}

// cropInto fills dst (c × Size, C order) from src (c × sp).
func cropInto(dst, src []byte, es, c int, sp [3]int, p CropParams, pad Pad, dt DType) {
	k0, k1, k2 := p.Size[0], p.Size[1], p.Size[2]
	s0, s1, s2 := p.Start[0], p.Start[1], p.Start[2]
	// Along W the source covers output columns [x0, x1).
	x0 := clampInt(-s2, 0, k2)
	x1 := clampInt(sp[2]-s2, x0, k2)
	rowBytes := k2 * es
	var padRow []byte
	if pad.Mode == PadConstant {
		padRow = make([]byte, rowBytes)
		store(dt, padRow[:es], pad.Value)
		for f := es; f < rowBytes; f *= 2 {
			copy(padRow[f:], padRow[:f])
		}
	}
	o := 0
	for ch := 0; ch < c; ch++ {
		chBase := ch * sp[0]
		for z := 0; z < k0; z++ {
			sz, zin := srcIndex(s0+z, sp[0], pad.Mode)
			for y := 0; y < k1; y++ {
				row := dst[o : o+rowBytes]
				o += rowBytes
				sy, yin := srcIndex(s1+y, sp[1], pad.Mode)
				if !zin || !yin {
					copy(row, padRow)
					continue
				}
				srow := src[((chBase+sz)*sp[1]+sy)*sp[2]*es:][:sp[2]*es]
				if x1 > x0 {
					copy(row[x0*es:x1*es], srow[(s2+x0)*es:])
				}
				if pad.Mode == PadConstant {
					copy(row[:x0*es], padRow)
					copy(row[x1*es:], padRow)
				} else {
					fill(row[:x0*es], srow[:es])
					fill(row[x1*es:], srow[len(srow)-es:])
				}
			}
		}
	}
}

// srcIndex maps a window coordinate to the source: ok is false where a
// constant pad applies; an edge pad clamps.
func srcIndex(i, n int, mode PadMode) (int, bool) {
	if i >= 0 && i < n {
		return i, true
	}
	if mode == PadEdge {
		return clampInt(i, 0, n-1), true
	}
	return 0, false
}

// fill repeats the element e across b.
func fill(b, e []byte) {
	if len(b) == 0 {
		return
	}
	copy(b, e)
	for f := len(e); f < len(b); f *= 2 {
		copy(b[f:], b[:f])
	}
}

func clampInt(x, lo, hi int) int {
	return max(lo, min(x, hi))
}

// RandomCrop draws a uniformly placed window of Size (D, H, W) voxels: the
// MLPerf reference's _rand_crop.
//
// Draws, per axis in the order D, H, W: one r.Below(max(n-k, 0)+1), where
// n is the volume's size and k the window's; start = that value -
// floor(max(k-n, 0)/2). So every position of a window inside the volume is
// equally likely (the reference's randrange(n-k) never picks the last
// one), and a window larger than the volume is centred, its padding split
// as the reference's preprocessing splits it (the smaller half first).
type RandomCrop struct {
	Size [3]int
}

// Draw returns the window for a volume of spatial size sp. It makes
// exactly three r.Below calls (see RandomCrop), none when it fails.
func (c RandomCrop) Draw(r *sampler.RNG, sp [3]int) (CropParams, error) {
	p := CropParams{Size: c.Size}
	if err := p.validate(); err != nil {
		return CropParams{}, err
	}
	for _, n := range sp {
		if n <= 0 || n > maxCoord {
			return CropParams{}, fmt.Errorf("volume: crop: %w: spatial size %v", ErrShape, sp)
		}
	}
	for a, n := range sp {
		k := c.Size[a]
		p.Start[a] = int(r.Below(uint64(max(n-k, 0)+1))) - max(k-n, 0)/2
	}
	return p, nil
}
