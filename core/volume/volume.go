package volume

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Sentinel errors that callers may branch on with errors.Is. Every error
// the package returns wraps one of them and says why in its message.
var (
	// ErrFormat: the bytes are not a well-formed .npy file (bad magic,
	// malformed header, truncated, trailing bytes).
	ErrFormat = errors.New("malformed npy")
	// ErrUnsupported: a well-formed .npy this package does not read
	// (big-endian, Fortran order, structured or unknown dtype).
	ErrUnsupported = errors.New("unsupported npy")
	// ErrTooLarge: a header claims more data than the configured limit.
	ErrTooLarge = errors.New("npy too large")
	// ErrShape: a shape is invalid or is not the one the caller expected.
	ErrShape = errors.New("bad shape")
	// ErrDType: an operation got a dtype it does not take.
	ErrDType = errors.New("bad dtype")
	// ErrParams: an op's options or explicit parameters are out of range.
	ErrParams = errors.New("bad parameters")
)

// Volume is a dense array in C order: Shape[len-1] varies fastest. The
// ops read its last three axes as (D, H, W) and treat any leading axis as
// channels, so a volume is (D, H, W) or (C, D, H, W). Data holds
// NumElements()*DType.Size() bytes, little-endian.
//
// A Volume is a plain value: the package never keeps a reference to one
// after a call returns, and a Volume is safe for concurrent reads. The
// in-place ops (Flip, Brightness, AddNoise) must not run concurrently with
// anything else on the same Volume.
type Volume struct {
	Shape []int
	DType DType
	Data  []byte
}

// maxElements bounds shapes so that a byte count (elements times at most 8)
// never overflows an int.
const maxElements = math.MaxInt / 8

// numElements is the product of shape, or an error naming the problem.
func numElements(shape []int) (int, error) {
	n := 1
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("%w: dimension %d is %d (negative)", ErrShape, i, d)
		}
		if d != 0 && n > maxElements/d {
			return 0, fmt.Errorf("%w: shape %v has more than %d elements", ErrShape, shape, maxElements)
		}
		n *= d
	}
	return n, nil
}

// New returns a zero-filled volume of the given type and shape.
func New(dt DType, shape ...int) (*Volume, error) {
	if !dt.Valid() {
		return nil, fmt.Errorf("volume: %w: %v", ErrDType, dt)
	}
	n, err := numElements(shape)
	if err != nil {
		return nil, fmt.Errorf("volume: %w", err)
	}
	return &Volume{Shape: slices.Clone(shape), DType: dt, Data: make([]byte, n*dt.Size())}, nil
}

// FromFloat32 returns a Float32 volume holding a copy of data.
func FromFloat32(shape []int, data []float32) (*Volume, error) {
	v, err := New(Float32, shape...)
	if err != nil {
		return nil, err
	}
	if len(data) != v.NumElements() {
		return nil, fmt.Errorf("volume: %w: shape %v needs %d values, got %d", ErrShape, shape, v.NumElements(), len(data))
	}
	for i, x := range data {
		binary.LittleEndian.PutUint32(v.Data[4*i:], math.Float32bits(x))
	}
	return v, nil
}

// NumElements is the product of Shape (1 for a scalar).
func (v *Volume) NumElements() int {
	n, err := numElements(v.Shape)
	if err != nil {
		return 0
	}
	return n
}

// Validate checks that the type is known and that Data holds exactly the
// bytes Shape calls for.
func (v *Volume) Validate() error {
	if v == nil {
		return fmt.Errorf("volume: nil volume")
	}
	if !v.DType.Valid() {
		return fmt.Errorf("volume: %w: %v", ErrDType, v.DType)
	}
	n, err := numElements(v.Shape)
	if err != nil {
		return fmt.Errorf("volume: %w", err)
	}
	if want := n * v.DType.Size(); len(v.Data) != want {
		return fmt.Errorf("volume: %w: shape %v %s needs %d bytes, data has %d", ErrShape, v.Shape, v.DType, want, len(v.Data))
	}
	return nil
}

// dims validates v as an op input: rank 3 (D, H, W) or more, with the
// leading axes folded into c, and every spatial size positive.
func (v *Volume) dims() (c int, sp [3]int, err error) {
	if err := v.Validate(); err != nil {
		return 0, sp, err
	}
	r := len(v.Shape)
	if r < 3 {
		return 0, sp, fmt.Errorf("volume: %w: ops need rank >= 3 (D, H, W), got shape %v", ErrShape, v.Shape)
	}
	c = 1
	for _, d := range v.Shape[:r-3] {
		c *= d
	}
	copy(sp[:], v.Shape[r-3:])
	for _, d := range sp {
		if d == 0 {
			return 0, sp, fmt.Errorf("volume: %w: spatial size 0 in shape %v", ErrShape, v.Shape)
		}
	}
	return c, sp, nil
}

// Spatial returns the last three dimensions (D, H, W).
func (v *Volume) Spatial() ([3]int, error) {
	_, sp, err := v.dims()
	return sp, err
}

// Clone returns a deep copy.
func (v *Volume) Clone() *Volume {
	return &Volume{Shape: slices.Clone(v.Shape), DType: v.DType, Data: slices.Clone(v.Data)}
}

// At returns element i (flat C-order index) as a float64, exactly. It
// panics if i is out of range, as a slice index does.
func (v *Volume) At(i int) float64 {
	s := v.DType.Size()
	return load(v.DType, v.Data[i*s:i*s+s])
}

// Set stores x into element i with Cast's conversion rules (round to
// nearest even and saturate for integers). It panics if i is out of range.
func (v *Volume) Set(i int, x float64) {
	s := v.DType.Size()
	store(v.DType, v.Data[i*s:i*s+s], x)
}

// Float32s returns the elements converted to float32 (the working type of
// the intensity ops) in a new slice. Float64 values round to nearest even;
// every other type converts exactly, except Int32 beyond 2^24.
func (v *Volume) Float32s() ([]float32, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	w, err := Cast(v, Float32)
	if err != nil {
		return nil, err
	}
	out := make([]float32, w.NumElements())
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(w.Data[4*i:]))
	}
	return out, nil
}

// Equal reports whether a and b have the same shape, type and bytes.
func Equal(a, b *Volume) bool {
	return a.DType == b.DType && slices.Equal(a.Shape, b.Shape) && string(a.Data) == string(b.Data)
}

func load(t DType, b []byte) float64 {
	switch t {
	case Uint8:
		return float64(b[0])
	case Int8:
		return float64(int8(b[0]))
	case Int16:
		return float64(int16(binary.LittleEndian.Uint16(b)))
	case Int32:
		return float64(int32(binary.LittleEndian.Uint32(b)))
	case Float16:
		return float64(HalfToFloat32(binary.LittleEndian.Uint16(b)))
	case Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return 0
}

func store(t DType, b []byte, x float64) {
	switch t {
	case Uint8, Int8, Int16, Int32:
		n := toInt(t, x)
		switch t.Size() {
		case 1:
			b[0] = byte(n)
		case 2:
			binary.LittleEndian.PutUint16(b, uint16(n))
		default:
			binary.LittleEndian.PutUint32(b, uint32(n))
		}
	case Float16:
		binary.LittleEndian.PutUint16(b, Float64ToHalf(x))
	case Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(x)))
	case Float64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(x))
	}
}

// toInt is Cast's rule for an integer target: NaN -> 0, round half to
// even, then saturate to the type's range.
func toInt(t DType, x float64) int64 {
	if x != x {
		return 0
	}
	lo, hi := t.intRange()
	x = math.RoundToEven(x)
	if x < lo {
		x = lo
	} else if x > hi {
		x = hi
	}
	return int64(x)
}
