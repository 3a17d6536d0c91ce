package volume

import (
	"errors"
	"math"
	"sort"
	"testing"
)

// halves lists every finite non-negative binary16 value in order, with
// 2^16 standing in for +Inf (the IEEE overflow rule rounds as if it
// were the next value).
var halves = func() []float64 {
	h := make([]float64, 0x7c01)
	for i := range h {
		h[i] = refHalf(uint16(i))
	}
	h[0x7c00] = 65536
	return h
}()

// nearestHalf rounds x to binary16 by search: the nearer neighbour, ties
// to the even bit pattern.
func nearestHalf(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	a := math.Abs(x)
	i := sort.SearchFloat64s(halves, a) // halves[i-1] < a <= halves[i]
	var r float64
	switch {
	case i == len(halves):
		r = math.Inf(1)
	case halves[i] == a || i == 0:
		r = halves[i]
	default:
		lo, hi := halves[i-1], halves[i]
		switch {
		case a-lo < hi-a:
			r = lo
		case a-lo > hi-a:
			r = hi
		case (i-1)%2 == 0:
			r = lo
		default:
			r = hi
		}
	}
	if r == 65536 {
		r = math.Inf(1)
	}
	return math.Copysign(r, x)
}

// refCast is Cast's documented rule for one exact source value.
func refCast(x float64, to DType) float64 {
	switch to {
	case Float64:
		return x
	case Float32:
		return float64(float32(x))
	case Float16:
		return nearestHalf(x)
	}
	if math.IsNaN(x) {
		return 0
	}
	lo, hi := to.intRange()
	return float64(int64(math.Max(lo, math.Min(hi, math.RoundToEven(x))))) // integers have no -0
}

func TestCastEveryPairMatchesReference(t *testing.T) {
	values := []float64{0, math.Copysign(0, -1), 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.1, 1.0 / 3,
		127.5, 128, 254.5, 255.5, 256, -128.5, -129, 32766.5, 32767.5, 40000, -40000,
		2147483646.5, 2147483647.5, 3e9, -3e9, 16777217, 1e-8, 6e-8, 65504, 65519, 65520, 1e10,
		-1e10, math.MaxFloat32, 1e300, math.NaN(), math.Inf(1), math.Inf(-1)}
	for from := Uint8; from <= Float64; from++ {
		src, _ := New(from, len(values))
		for i, x := range values {
			src.Set(i, x)
		}
		for to := Uint8; to <= Float64; to++ {
			got, err := Cast(src, to)
			if err != nil {
				t.Fatal(err)
			}
			for i := range values {
				x := src.At(i)
				want, g := refCast(x, to), got.At(i)
				if math.IsNaN(want) {
					if !math.IsNaN(g) {
						t.Errorf("%s %v -> %s: got %v, want NaN", from, x, to, g)
					}
					continue
				}
				if g != want || math.Signbit(g) != math.Signbit(want) {
					t.Errorf("%s %v -> %s: got %v, want %v", from, x, to, g, want)
				}
			}
		}
	}
}

func TestCastRules(t *testing.T) {
	tests := []struct {
		from DType
		in   float64
		to   DType
		want float64
	}{
		{Float32, 2.5, Uint8, 2}, // half to even
		{Float32, 3.5, Uint8, 4},
		{Float32, -1, Uint8, 0}, // saturate
		{Float32, 300, Uint8, 255},
		{Float32, math.NaN(), Uint8, 0},
		{Float32, math.Inf(1), Int16, 32767},
		{Float32, math.Inf(-1), Int16, -32768},
		{Float64, -2.5, Int8, -2},
		{Float64, 1e12, Int32, math.MaxInt32},
		{Int32, 16777217, Float32, 16777216}, // nearest even float32
		{Float32, 65520, Float16, math.Inf(1)},
		{Float32, 65519, Float16, 65504},
		{Float16, 65504, Int16, 32767},
		{Int16, -300, Uint8, 0},
		{Uint8, 200, Int8, 127},
		{Float64, 1e300, Float32, math.Inf(1)},
	}
	for _, tt := range tests {
		v, _ := New(tt.from, 1, 1, 1)
		v.Set(0, tt.in)
		got, err := Cast(v, tt.to)
		if err != nil {
			t.Fatal(err)
		}
		if g := got.At(0); g != tt.want {
			t.Errorf("%s %v -> %s: got %v, want %v", tt.from, tt.in, tt.to, g, tt.want)
		}
	}
}

func TestCastLargeVolumeAndInto(t *testing.T) {
	// More elements than one conversion block, odd count.
	v := randomVolume(t, Float32, 3, 3, 17, 41)
	for to := Uint8; to <= Float64; to++ {
		got, err := Cast(v, to)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, v.NumElements()*to.Size())
		if err := CastInto(dst, v, to); err != nil {
			t.Fatal(err)
		}
		if string(dst) != string(got.Data) {
			t.Errorf("%s: CastInto differs from Cast", to)
		}
		for i := 0; i < v.NumElements(); i++ {
			if g, want := got.At(i), refCast(v.At(i), to); g != want {
				t.Fatalf("%s [%d]: got %v, want %v", to, i, g, want)
			}
		}
	}
	if err := CastInto(make([]byte, 3), v, Float32); !errors.Is(err, ErrShape) {
		t.Errorf("short destination: got %v", err)
	}
	if _, err := Cast(v, 0); !errors.Is(err, ErrDType) {
		t.Errorf("invalid target: got %v", err)
	}
	if err := CastInto(nil, v, 42); !errors.Is(err, ErrDType) {
		t.Errorf("invalid target: got %v", err)
	}
}

func TestVolumeConstructors(t *testing.T) {
	if _, err := New(0, 1); !errors.Is(err, ErrDType) {
		t.Errorf("New invalid dtype: got %v", err)
	}
	if _, err := New(Uint8, 2, -1); !errors.Is(err, ErrShape) {
		t.Errorf("New negative: got %v", err)
	}
	if _, err := New(Uint8, 1<<40, 1<<40); !errors.Is(err, ErrShape) {
		t.Errorf("New overflow: got %v", err)
	}
	v, err := FromFloat32([]int{2, 2}, []float32{1, 2.5, -3, 4})
	if err != nil {
		t.Fatal(err)
	}
	if got := float32s(t, v); got[1] != 2.5 || got[2] != -3 {
		t.Errorf("FromFloat32 round trip: got %v", got)
	}
	if _, err := FromFloat32([]int{2, 2}, []float32{1}); !errors.Is(err, ErrShape) {
		t.Errorf("FromFloat32 wrong count: got %v", err)
	}
	if sp, err := v.Spatial(); !errors.Is(err, ErrShape) {
		t.Errorf("Spatial of rank 2: got %v %v", sp, err)
	}
}
