package volume

import (
	"encoding/binary"
	"fmt"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// FlipParams says which of the spatial axes (D, H, W) to reverse.
// numpy: np.flip(a, axis=[a.ndim-3+i for i in range(3) if axes[i]]).
type FlipParams struct {
	Axes [3]bool `json:"axes"`
}

// Flip reverses v in place along the chosen spatial axes, every leading
// (channel) axis alike. Exact (bytes move, nothing converts), one pass
// over the data whatever the number of axes, no allocation: 1.7 ms for
// 128^3 float32 on all three axes, 0.35 ms on D alone (BenchmarkFlip*).
func Flip(v *Volume, p FlipParams) error {
	c, sp, err := v.dims()
	if err != nil {
		return err
	}
	if p.Axes == [3]bool{} {
		return nil
	}
	es := v.DType.Size()
	rowBytes := sp[2] * es
	fz, fy, fx := p.Axes[0], p.Axes[1], p.Axes[2]
	for ch := 0; ch < c; ch++ {
		base := ch * sp[0] * sp[1]
		for z := 0; z < sp[0]; z++ {
			pz := z
			if fz {
				pz = sp[0] - 1 - z
			}
			for y := 0; y < sp[1]; y++ {
				py := y
				if fy {
					py = sp[1] - 1 - y
				}
				// Rows pair up (an involution): handle each pair once.
				r, q := base+z*sp[1]+y, base+pz*sp[1]+py
				if q < r {
					continue
				}
				a := v.Data[r*rowBytes : (r+1)*rowBytes]
				switch {
				case q == r && fx:
					reverseRow(a, es)
				case q == r:
				case fx:
					swapReverseRows(a, v.Data[q*rowBytes:(q+1)*rowBytes], es)
				default:
					swapRows(a, v.Data[q*rowBytes:(q+1)*rowBytes])
				}
			}
		}
	}
	return nil
}

// FlipPair flips image and label alike; their spatial sizes must match.
// Passing one *Volume as both flips it once.
func FlipPair(image, label *Volume, p FlipParams) error {
	if err := sameSpatial(image, label); err != nil {
		return err
	}
	if err := Flip(image, p); err != nil || label == image {
		return err
	}
	return Flip(label, p)
}

func swapRows(a, b []byte) {
	var tmp [512]byte
	for i := 0; i < len(a); i += len(tmp) {
		n := copy(tmp[:], a[i:])
		copy(a[i:i+n], b[i:])
		copy(b[i:i+n], tmp[:n])
	}
}

// swapReverseRows sets a = reverse(b) and b = reverse(a), element-wise.
func swapReverseRows(a, b []byte, es int) {
	n := len(a) / es
	switch es {
	case 1:
		for i := 0; i < n; i++ {
			j := n - 1 - i
			a[i], b[j] = b[j], a[i]
		}
	case 2:
		for i := 0; i < n; i++ {
			j := n - 1 - i
			x, y := binary.LittleEndian.Uint16(a[2*i:]), binary.LittleEndian.Uint16(b[2*j:])
			binary.LittleEndian.PutUint16(a[2*i:], y)
			binary.LittleEndian.PutUint16(b[2*j:], x)
		}
	case 4:
		for i := 0; i < n; i++ {
			j := n - 1 - i
			x, y := binary.LittleEndian.Uint32(a[4*i:]), binary.LittleEndian.Uint32(b[4*j:])
			binary.LittleEndian.PutUint32(a[4*i:], y)
			binary.LittleEndian.PutUint32(b[4*j:], x)
		}
	default:
		for i := 0; i < n; i++ {
			j := n - 1 - i
			x, y := binary.LittleEndian.Uint64(a[8*i:]), binary.LittleEndian.Uint64(b[8*j:])
			binary.LittleEndian.PutUint64(a[8*i:], y)
			binary.LittleEndian.PutUint64(b[8*j:], x)
		}
	}
}

func reverseRow(a []byte, es int) {
	n := len(a) / es
	switch es {
	case 1:
		for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
			a[i], a[j] = a[j], a[i]
		}
	case 2:
		for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
			x, y := binary.LittleEndian.Uint16(a[2*i:]), binary.LittleEndian.Uint16(a[2*j:])
			binary.LittleEndian.PutUint16(a[2*i:], y)
			binary.LittleEndian.PutUint16(a[2*j:], x)
		}
	case 4:
		for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
			x, y := binary.LittleEndian.Uint32(a[4*i:]), binary.LittleEndian.Uint32(a[4*j:])
			binary.LittleEndian.PutUint32(a[4*i:], y)
			binary.LittleEndian.PutUint32(a[4*j:], x)
		}
	default:
		for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
			x, y := binary.LittleEndian.Uint64(a[8*i:]), binary.LittleEndian.Uint64(a[8*j:])
			binary.LittleEndian.PutUint64(a[8*i:], y)
			binary.LittleEndian.PutUint64(a[8*j:], x)
		}
	}
}

// RandomFlip is the MLPerf reference's RandFlip: each spatial axis is
// reversed with probability Prob (the reference uses 1/3).
//
// Draws: three r.Float64(), for D, H, W in that order; axis i flips when
// its value is < Prob.
type RandomFlip struct {
	Prob float64
}

// Draw returns the axes to flip.
func (f RandomFlip) Draw(r *sampler.RNG) (FlipParams, error) {
	if !(f.Prob >= 0 && f.Prob <= 1) {
		return FlipParams{}, fmt.Errorf("volume: flip: %w: prob %v not in [0, 1]", ErrParams, f.Prob)
	}
	var p FlipParams
	for a := range p.Axes {
		p.Axes[a] = r.Float64() < f.Prob
	}
	return p, nil
}
