package volume

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestDTypeTable(t *testing.T) {
	tests := []struct {
		t     DType
		name  string
		descr string
		size  int
		float bool
	}{
		{Uint8, "uint8", "|u1", 1, false},
		{Int8, "int8", "|i1", 1, false},
		{Int16, "int16", "<i2", 2, false},
		{Int32, "int32", "<i4", 4, false},
		{Float16, "float16", "<f2", 2, true},
		{Float32, "float32", "<f4", 4, true},
		{Float64, "float64", "<f8", 8, true},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.name {
			t.Errorf("String: got %q, want %q", got, tt.name)
		}
		if got := tt.t.Descr(); got != tt.descr {
			t.Errorf("%s Descr: got %q, want %q", tt.name, got, tt.descr)
		}
		if got := tt.t.Size(); got != tt.size {
			t.Errorf("%s Size: got %d, want %d", tt.name, got, tt.size)
		}
		if got := tt.t.IsFloat(); got != tt.float {
			t.Errorf("%s IsFloat: got %v, want %v", tt.name, got, tt.float)
		}
		if got, err := ParseDType(tt.name); err != nil || got != tt.t {
			t.Errorf("ParseDType(%q): got %v, %v", tt.name, got, err)
		}
	}
	for _, bad := range []DType{0, 8, 255} {
		if bad.Valid() || bad.Size() != 0 || bad.Descr() != "" {
			t.Errorf("DType(%d) should be invalid", bad)
		}
	}
	if _, err := ParseDType("complex64"); err == nil {
		t.Error("ParseDType(complex64): no error")
	}
}

// refHalf decodes binary16 by its definition.
func refHalf(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10)&0x1f, float64(h&0x3ff)
	switch e {
	case 0:
		return sign * math.Ldexp(m, -24)
	case 31:
		if m == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1+m/1024, e-15)
}

func TestHalfToFloat32AllValues(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got, want := float64(HalfToFloat32(h)), refHalf(h)
		if math.IsNaN(want) {
			if !math.IsNaN(got) {
				t.Fatalf("%#04x: got %v, want NaN", h, got)
			}
			continue
		}
		if got != want || math.Signbit(got) != math.Signbit(want) {
			t.Fatalf("%#04x: got %v, want %v", h, got, want)
		}
	}
}

func TestFloat64ToHalfRoundTripsEveryHalf(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := float64(HalfToFloat32(h))
		got := Float64ToHalf(f)
		if math.IsNaN(f) {
			if got&0x7c00 != 0x7c00 || got&0x3ff == 0 || got&0x8000 != h&0x8000 {
				t.Fatalf("NaN %#04x: got %#04x", h, got)
			}
			continue
		}
		if got != h {
			t.Fatalf("%#04x (%v): got %#04x", h, f, got)
		}
	}
}

// Between every two adjacent finite halves, the midpoint goes to the even
// one and anything off the midpoint to the nearer one.
func TestFloat64ToHalfRoundsToNearestEven(t *testing.T) {
	for i := 0; i < 0x7bff; i++ {
		for _, sign := range []uint16{0, 0x8000} {
			lo, hi := uint16(i)|sign, uint16(i+1)|sign
			a, b := refHalf(lo), refHalf(hi)
			mid := (a + b) / 2 // exact in float64
			even := lo
			if lo&1 == 1 {
				even = hi
			}
			if got := Float64ToHalf(mid); got != even {
				t.Fatalf("midpoint of %#04x,%#04x (%v): got %#04x, want %#04x", lo, hi, mid, got, even)
			}
			if got := Float64ToHalf(math.Nextafter(mid, a)); got != lo {
				t.Fatalf("just below midpoint of %#04x,%#04x: got %#04x", lo, hi, got)
			}
			if got := Float64ToHalf(math.Nextafter(mid, b)); got != hi {
				t.Fatalf("just above midpoint of %#04x,%#04x: got %#04x", lo, hi, got)
			}
		}
	}
}

func TestFloat64ToHalfEdges(t *testing.T) {
	tests := []struct {
		in   float64
		want uint16
	}{
		{0, 0x0000},
		{math.Copysign(0, -1), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65519.99, 0x7bff},
		{65520, 0x7c00}, // tie between 65504 (odd) and 2^16: rounds to Inf
		{1e300, 0x7c00},
		{-1e300, 0xfc00},
		{math.Inf(1), 0x7c00},
		{math.Inf(-1), 0xfc00},
		{math.Ldexp(1, -24), 0x0001}, // smallest subnormal
		{math.Ldexp(1, -25), 0x0000}, // tie with 0: even
		{math.Nextafter(math.Ldexp(1, -25), 1), 0x0001},   // just above the tie
		{math.Ldexp(3, -25), 0x0002},                      // 1.5 ulp: tie to even 2
		{math.Ldexp(1, -14) - math.Ldexp(1, -25), 0x0400}, // tie into the normals
		{math.Ldexp(1, -14), 0x0400},                      // smallest normal
		{math.SmallestNonzeroFloat64, 0x0000},             // float64 subnormal
		{-math.SmallestNonzeroFloat64, 0x8000},
		{math.Ldexp(1, -26), 0x0000},
	}
	for _, tt := range tests {
		if got := Float64ToHalf(tt.in); got != tt.want {
			t.Errorf("Float64ToHalf(%v): got %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
	if got := Float64ToHalf(math.NaN()); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("NaN: got %#04x, want a NaN", got)
	}
}

// The float32 fast path agrees with Float64ToHalf: every exponent that
// matters, with the significand bits around each rounding boundary, plus
// a sweep of the whole range.
func TestFloat32ToHalfMatchesFloat64Path(t *testing.T) {
	var all []float32
	check := func(b uint32) {
		f := math.Float32frombits(b)
		all = append(all, f)
		got, want := float32ToHalf(f), Float64ToHalf(float64(f))
		if math.IsNaN(float64(f)) {
			if got&0x7c00 != 0x7c00 || got&0x3ff == 0 || got&0x8000 != want&0x8000 {
				t.Fatalf("NaN %#08x: got %#04x", b, got)
			}
			return
		}
		if got != want {
			t.Fatalf("%#08x (%v): got %#04x, want %#04x", b, f, got, want)
		}
	}
	for b := uint64(0); b < 1<<32; b += 65521 {
		check(uint32(b))
	}
	for _, sign := range []uint32{0, 1 << 31} {
		for exp := uint32(0); exp < 256; exp++ {
			for top := uint32(0); top < 1<<10; top++ {
				for _, low := range []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff} {
					check(sign | exp<<23 | top<<13 | low)
				}
			}
		}
	}
	// Cast's float32 to float16 loop writes the fast path out by hand.
	v, err := FromFloat32([]int{len(all)}, all)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Cast(v, Float16)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range all {
		if got, want := binary.LittleEndian.Uint16(h.Data[2*i:]), float32ToHalf(f); got != want {
			t.Fatalf("Cast of %#08x: got %#04x, want %#04x", math.Float32bits(f), got, want)
		}
	}
}
