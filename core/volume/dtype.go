package volume

import (
	"fmt"
	"math"
)

// DType is the element type of a Volume. Values are stored little-endian
// whatever the host. The zero DType is invalid.
type DType uint8

// The element types a Volume holds and an .npy file may carry.
const (
	Uint8   DType = iota + 1 // npy '|u1'
	Int8                     // npy '|i1'
	Int16                    // npy '<i2'
	Int32                    // npy '<i4'
	Float16                  // npy '<f2', IEEE 754 binary16
	Float32                  // npy '<f4'
	Float64                  // npy '<f8'
)

var dtypeInfo = [...]struct {
	name  string
	descr string
	size  int
}{
	Uint8:   {"uint8", "|u1", 1},
	Int8:    {"int8", "|i1", 1},
	Int16:   {"int16", "<i2", 2},
	Int32:   {"int32", "<i4", 4},
	Float16: {"float16", "<f2", 2},
	Float32: {"float32", "<f4", 4},
	Float64: {"float64", "<f8", 8},
}

// Valid reports whether t is one of the declared types.
func (t DType) Valid() bool { return t >= Uint8 && t <= Float64 }

// String is the numpy/torch name ("float32"), which is also the key of
// config.DTypes.
func (t DType) String() string {
	if !t.Valid() {
		return fmt.Sprintf("DType(%d)", uint8(t))
	}
	return dtypeInfo[t].name
}

// Size is the element size in bytes; 0 for an invalid type.
func (t DType) Size() int {
	if !t.Valid() {
		return 0
	}
	return dtypeInfo[t].size
}

// Descr is the npy type string written for t ('<f4').
func (t DType) Descr() string {
	if !t.Valid() {
		return ""
	}
	return dtypeInfo[t].descr
}

// IsFloat reports whether t is a floating-point type.
func (t DType) IsFloat() bool { return t == Float16 || t == Float32 || t == Float64 }

// ParseDType returns the type named name (as String spells it).
func ParseDType(name string) (DType, error) {
	for t := Uint8; t <= Float64; t++ {
		if dtypeInfo[t].name == name {
			return t, nil
		}
	}
	return 0, fmt.Errorf("volume: unknown dtype %q (known: %s)", name, dtypeList())
}

func dtypeList() string {
	return "uint8, int8, int16, int32, float16, float32, float64"
}

// bounds of the integer types, for saturating conversions.
func (t DType) intRange() (lo, hi float64) {
	switch t {
	case Uint8:
		return 0, math.MaxUint8
	case Int8:
		return math.MinInt8, math.MaxInt8
	case Int16:
		return math.MinInt16, math.MaxInt16
	case Int32:
		return math.MinInt32, math.MaxInt32
	}
	return 0, 0
}

// HalfToFloat32 converts IEEE 754 binary16 bits to float32. The conversion
// is exact for every input: subnormals become normal float32 values,
// infinities stay infinite, and a NaN keeps its sign and payload (shifted
// into the top of the float32 significand).
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	case man == 0: // signed zero
		return math.Float32frombits(sign)
	}
	// Subnormal: man * 2^-24. Normalise so the leading one is bit 10.
	e := uint32(127 - 15 + 1)
	for man&0x400 == 0 {
		man <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
}

// Float64ToHalf converts f to IEEE 754 binary16 bits, rounding to nearest
// with ties to even in a single step (no double rounding through float32).
// Magnitudes that round above 65504 become infinity; values below half the
// smallest subnormal (2^-25) become signed zero. A NaN stays a NaN with the
// sign and the top ten payload bits, as numpy's astype(float16) does.
func Float64ToHalf(f float64) uint16 {
	b := math.Float64bits(f)
	sign := uint16(b>>48) & 0x8000
	exp := int(b>>52) & 0x7ff
	man := b & (1<<52 - 1)
	if exp == 0x7ff {
		if man == 0 {
			return sign | 0x7c00
		}
		h := uint16(0x7c00 | man>>42)
		if h == 0x7c00 {
			h++
		}
		return sign | h
	}
	e := exp - 1023
	if e > 15 {
		return sign | 0x7c00
	}
	if e >= -14 {
		// Normal range: keep 10 of 52 significand bits; a carry out of
		// the significand correctly bumps the exponent (and may reach Inf).
		// Round half to even without a branch: add one when rem is above
		// half, or at half with h odd.
		h := uint64(e+15)<<10 | man>>42
		rem := man & (1<<42 - 1)
		h += (rem + h&1 + (1<<41 - 1)) >> 42
		return sign | uint16(h)
	}
	if exp == 0 {
		return sign // float64 subnormals are far below the half range
	}
	// Half subnormal: the result is round(sig * 2^(e-52) / 2^-24).
	sig := man | 1<<52
	shift := uint(28 - e) // >= 43
	if shift > 53 {
		return sign
	}
	h := sig >> shift
	rem := sig & (1<<shift - 1)
	half := uint64(1) << (shift - 1)
	if rem > half || (rem == half && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

// float32ToHalf is Float64ToHalf(float64(f)) for every non-NaN float32,
// working on the float32 bits; the normal range is small enough to
// inline. A NaN stays a NaN with its sign and top payload bits, as numpy's
// float32 to float16 conversion keeps them.
func float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	if exp := b >> 23 & 0xff; exp-113 < 30 { // 2^-14 <= |f| < 2^16
		h := (exp-112)<<10 | b>>13&0x3ff
		h += (b&0x1fff + h&1 + 0xfff) >> 13 // round half to even, no branch
		return uint16(b>>16)&0x8000 | uint16(h)
	}
	return float32ToHalfSlow(b)
}

// float32ToHalfSlow handles Inf, NaN, overflow and the half subnormals.
func float32ToHalfSlow(b uint32) uint16 {
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	switch {
	case exp == 0xff:
		if man == 0 {
			return sign | 0x7c00
		}
		h := uint16(0x7c00 | man>>13)
		if h == 0x7c00 {
			h++
		}
		return sign | h
	case exp > 127+15:
		return sign | 0x7c00
	}
	// Half subnormal: round(sig * 2^(e-23) / 2^-24), e = exp-127 <= -15.
	shift := uint(126 - exp) // -(e+1) >= 14
	if exp == 0 || shift > 24 {
		return sign
	}
	sig := man | 1<<23
	h := sig >> shift
	rem := sig & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}
