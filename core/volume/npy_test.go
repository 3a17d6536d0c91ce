package volume

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// npyBytes builds an .npy file by hand: any version, the header text as
// given (no padding added), then data.
func npyBytes(major byte, header string, data []byte) []byte {
	b := append([]byte("\x93NUMPY"), major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(header)))
	}
	b = append(b, header...)
	return append(b, data...)
}

// randomVolume fills a volume of type dt with values that type holds
// exactly, from seed.
func randomVolume(t testing.TB, dt DType, seed uint64, shape ...int) *Volume {
	t.Helper()
	v, err := New(dt, shape...)
	if err != nil {
		t.Fatal(err)
	}
	r := sampler.NewRNG(seed)
	for i := 0; i < v.NumElements(); i++ {
		x := float64(int(r.Below(200)) - 100)
		if dt.IsFloat() {
			x += float64(r.Below(4)) / 4
		}
		v.Set(i, x)
	}
	return v
}

func TestNpyRoundTrip(t *testing.T) {
	shapes := [][]int{{}, {0}, {5}, {2, 3}, {1, 4, 5, 6}, {2, 0, 3}}
	dir := t.TempDir()
	for dt := Uint8; dt <= Float64; dt++ {
		for _, shape := range shapes {
			v := randomVolume(t, dt, uint64(dt), shape...)
			b, err := EncodeNpy(v)
			if err != nil {
				t.Fatal(err)
			}
			if len(b)-len(v.Data) != 128 && len(b)-len(v.Data) != 64 {
				t.Errorf("%s %v: header is %d bytes, want a multiple of 64", dt, shape, len(b)-len(v.Data))
			}
			got, err := DecodeNpy(b, nil)
			if err != nil {
				t.Fatalf("%s %v: %v", dt, shape, err)
			}
			if !Equal(got, v) {
				t.Errorf("%s %v: decode: got %v %s, want %v", dt, shape, got.Shape, got.DType, v.Shape)
			}
			path := filepath.Join(dir, "a.npy")
			if err := WriteNpyFile(path, v); err != nil {
				t.Fatal(err)
			}
			got, err = ReadNpyFile(path, nil)
			if err != nil {
				t.Fatalf("%s %v: %v", dt, shape, err)
			}
			if !Equal(got, v) {
				t.Errorf("%s %v: file: got %v, want %v", dt, shape, got.Shape, v.Shape)
			}
		}
	}
}

func TestReadNpyStreamReadsOneArrayAtATime(t *testing.T) {
	a := randomVolume(t, Float32, 1, 2, 3, 4)
	b := randomVolume(t, Uint8, 2, 3, 4, 5)
	var buf bytes.Buffer
	if err := WriteNpy(&buf, a); err != nil {
		t.Fatal(err)
	}
	if err := WriteNpy(&buf, b); err != nil {
		t.Fatal(err)
	}
	for i, want := range []*Volume{a, b} {
		got, err := ReadNpy(&buf, nil)
		if err != nil {
			t.Fatalf("array %d: %v", i, err)
		}
		if !Equal(got, want) {
			t.Errorf("array %d: got %v %s, want %v %s", i, got.Shape, got.DType, want.Shape, want.DType)
		}
	}
	if _, err := ReadNpy(&buf, nil); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "empty input") {
		t.Errorf("after the last array: got %v, want an empty-input error", err)
	}
}

// Headers as other writers (older numpy, Python 2, hand-written) spell them.
func TestNpyHeaderVariants(t *testing.T) {
	data := make([]byte, 2*3*4)
	for i := range data {
		data[i] = byte(i)
	}
	tests := []struct {
		name   string
		major  byte
		header string
		shape  []int
		dt     DType
	}{
		{"numpy 1.0", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }          \n", []int{2, 3}, Float32},
		{"version 2.0", 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", []int{2, 3}, Float32},
		{"version 3.0", 3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", []int{2, 3}, Float32},
		{"no trailing comma", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", []int{2, 3}, Float32},
		{"tight", 1, "{'descr':'<f4','fortran_order':False,'shape':(2,3)}", []int{2, 3}, Float32},
		{"trailing comma in shape", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3,), }", []int{2, 3}, Float32},
		{"spaces everywhere", 1, " {  'shape' : ( 2 ,\t3 , ) ,\n 'descr' : '<f4' , 'fortran_order' : False , } \n", []int{2, 3}, Float32},
		{"double quotes", 1, `{"descr": "<f4", "fortran_order": False, "shape": (2, 3)}`, []int{2, 3}, Float32},
		{"python 2 longs", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", []int{2, 3}, Float32},
		{"one dim", 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (24,), }", []int{24}, Uint8},
		{"scalar", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", []int{}, Float64},
		{"uint8 little", 1, "{'descr': '<u1', 'fortran_order': False, 'shape': (24,), }", []int{24}, Uint8},
		{"int8 big-endian mark is harmless", 1, "{'descr': '>i1', 'fortran_order': False, 'shape': (24,), }", []int{24}, Int8},
		{"int16", 1, "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 4), }", []int{3, 4}, Int16},
		{"float16", 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (12,), }", []int{12}, Float16},
		{"int32", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }", []int{6}, Int32},
		{"escaped quote", 1, `{'descr': '<f4', 'fortran_order': False, 'sh\ape': (2, 3)}`, []int{2, 3}, Float32},
	}
	for _, tt := range tests {
		n := 1
		for _, d := range tt.shape {
			n *= d
		}
		b := npyBytes(tt.major, tt.header, data[:n*tt.dt.Size()])
		got, err := DecodeNpy(b, nil)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !slices.Equal(got.Shape, tt.shape) || got.DType != tt.dt || !bytes.Equal(got.Data, data[:len(got.Data)]) {
			t.Errorf("%s: got %v %s, want %v %s", tt.name, got.Shape, got.DType, tt.shape, tt.dt)
		}
	}
}

func TestNpyBadInputs(t *testing.T) {
	f4 := func(shape string) string {
		return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }"
	}
	good := npyBytes(1, f4("(2, 3)"), make([]byte, 24))
	tests := []struct {
		name string
		in   []byte
		want error
		why  string // a substring of the message
	}{
		{"zero bytes", nil, ErrFormat, "empty input"},
		{"bad magic", append([]byte("\x93NUMPZ"), good[6:]...), ErrFormat, "bad magic"},
		{"text file", []byte("hello, world, this is not npy"), ErrFormat, "bad magic"},
		{"version 4.0", append(append([]byte{}, good[:6]...), append([]byte{4, 0}, good[8:]...)...), ErrUnsupported, "version 4.0"},
		{"version 1.1", append(append([]byte{}, good[:6]...), append([]byte{1, 1}, good[8:]...)...), ErrUnsupported, "version 1.1"},
		{"big-endian", npyBytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", make([]byte, 24)), ErrUnsupported, "big-endian"},
		{"big-endian int16", npyBytes(1, "{'descr': '>i2', 'fortran_order': False, 'shape': (2, 3), }", make([]byte, 12)), ErrUnsupported, "big-endian"},
		{"native order", npyBytes(1, "{'descr': '=f4', 'fortran_order': False, 'shape': (2, 3), }", make([]byte, 24)), ErrUnsupported, "byte order"},
		{"no order", npyBytes(1, "{'descr': 'f4', 'fortran_order': False, 'shape': (2, 3), }", make([]byte, 24)), ErrUnsupported, "byte order"},
		{"fortran order", npyBytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", make([]byte, 24)), ErrUnsupported, "fortran_order"},
		{"bool", npyBytes(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", make([]byte, 6)), ErrUnsupported, "'|b1'"},
		{"complex", npyBytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", make([]byte, 16)), ErrUnsupported, "'<c8'"},
		{"uint16", npyBytes(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", make([]byte, 4)), ErrUnsupported, "'<u2'"},
		{"structured", npyBytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", make([]byte, 8)), ErrUnsupported, "structured"},
		{"short descr", npyBytes(1, "{'descr': '<', 'fortran_order': False, 'shape': (2,), }", nil), ErrFormat, "not a type string"},
		{"data too short", npyBytes(1, f4("(2, 3)"), make([]byte, 23)), ErrFormat, "truncated: shape (2, 3) <f4 needs 24 data bytes"},
		{"data too long", npyBytes(1, f4("(2, 3)"), make([]byte, 25)), ErrFormat, "trailing bytes"},
		{"shape disagrees with data", npyBytes(1, f4("(3, 3)"), make([]byte, 24)), ErrFormat, "needs 36 data bytes"},
		{"huge shape", npyBytes(1, f4("(1048576, 1048576, 1024)"), nil), ErrTooLarge, "4503599627370496 bytes, over the limit"},
		{"overflowing shape", npyBytes(1, f4("(4294967296, 4294967296, 4294967296)"), nil), ErrTooLarge, "elements"},
		{"huge dimension", npyBytes(1, f4("(99999999999999999999999,)"), nil), ErrTooLarge, "too large"},
		{"negative dimension", npyBytes(1, f4("(-1, 3)"), nil), ErrFormat, "negative"},
		{"shape is an int", npyBytes(1, f4("(6)"), make([]byte, 24)), ErrFormat, "not a tuple"},
		{"shape is a list", npyBytes(1, f4("[2, 3]"), make([]byte, 24)), ErrFormat, "must be a tuple"},
		{"shape without commas", npyBytes(1, f4("(2 3)"), make([]byte, 24)), ErrFormat, "expected ',' or ')'"},
		{"shape not closed", npyBytes(1, f4("(2, 3"), make([]byte, 24)), ErrFormat, "expected an integer"},
		{"shape has a word", npyBytes(1, f4("(2, x)"), make([]byte, 24)), ErrFormat, "expected an integer"},
		{"missing key", npyBytes(1, "{'descr': '<f4', 'shape': (2, 3), }", make([]byte, 24)), ErrFormat, "no 'fortran_order' key"},
		{"unknown key", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", make([]byte, 24)), ErrFormat, `unexpected key "x"`},
		{"repeated key", npyBytes(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", make([]byte, 24)), ErrFormat, "repeated"},
		{"fortran_order not bool", npyBytes(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}", make([]byte, 24)), ErrFormat, "True or False"},
		{"no brace", npyBytes(1, "'descr': '<f4'", nil), ErrFormat, "start with '{'"},
		{"unclosed dict", npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", make([]byte, 24)), ErrFormat, "expected ',' or '}'"},
		{"text after dict", npyBytes(1, f4("(2, 3)")+" x", make([]byte, 24)), ErrFormat, "after the closing"},
		{"unterminated string", npyBytes(1, "{'descr: '<f4'}", nil), ErrFormat, "expected ':'"},
		{"string runs off", npyBytes(1, "{'descr", nil), ErrFormat, "unterminated string"},
		{"key not a string", npyBytes(1, "{descr: '<f4'}", nil), ErrFormat, "expected a quoted string"},
		{"empty header", npyBytes(1, "", nil), ErrFormat, "start with '{'"},
		{"empty dict", npyBytes(1, "{}", nil), ErrFormat, "no 'descr' key"},
		{"header length past the end", append(append([]byte{}, good[:8]...), 0xff, 0x00, '{'), ErrFormat, "header claims 255 bytes"},
		{"huge header length", npyBytes(2, "", nil)[:8:8], ErrFormat, "truncated"},
	}
	huge := append([]byte("\x93NUMPY\x02\x00"), 0xff, 0xff, 0xff, 0x7f)
	tests = append(tests, struct {
		name string
		in   []byte
		want error
		why  string
	}{"header over the limit", huge, ErrTooLarge, "header length 2147483647 exceeds"})
	for _, tt := range tests {
		v, err := DecodeNpy(tt.in, nil)
		if err == nil {
			t.Errorf("%s: got %v, want an error", tt.name, v.Shape)
			continue
		}
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("%s: got %q, want %v containing %q", tt.name, err, tt.want, tt.why)
		}
		if _, err2 := ReadNpy(bytes.NewReader(tt.in), nil); err2 == nil && tt.want != ErrFormat {
			t.Errorf("%s: ReadNpy accepted it", tt.name)
		}
	}
}

// Every proper prefix of a valid file is an error that says it is
// truncated (or empty), from a byte slice, a stream and a file.
func TestNpyTruncatedAtEveryOffset(t *testing.T) {
	dir := t.TempDir()
	for _, dt := range []DType{Uint8, Float32} {
		v := randomVolume(t, dt, 3, 2, 3)
		full, err := EncodeNpy(v)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "t.npy")
		for n := 0; n < len(full); n++ {
			b := full[:n]
			for _, read := range []struct {
				name string
				fn   func() (*Volume, error)
			}{
				{"decode", func() (*Volume, error) { return DecodeNpy(b, nil) }},
				{"stream", func() (*Volume, error) { return ReadNpy(bytes.NewReader(b), nil) }},
				{"file", func() (*Volume, error) {
					if err := os.WriteFile(path, b, 0o644); err != nil {
						t.Fatal(err)
					}
					return ReadNpyFile(path, nil)
				}},
			} {
				_, err := read.fn()
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("%s %s cut at %d of %d: got %v, want ErrFormat", dt, read.name, n, len(full), err)
				}
				msg := err.Error()
				if !strings.Contains(msg, "truncated") && !(n == 0 && strings.Contains(msg, "empty")) {
					t.Fatalf("%s %s cut at %d: %q does not say truncated", dt, read.name, n, msg)
				}
			}
		}
	}
}

func TestReadOptionsChecks(t *testing.T) {
	v := randomVolume(t, Float32, 4, 1, 4, 5, 6)
	b, _ := EncodeNpy(v)
	tests := []struct {
		name string
		o    ReadOptions
		want error // nil: accepted
		why  string
	}{
		{"any", ReadOptions{}, nil, ""},
		{"dtype ok", ReadOptions{DType: Float32}, nil, ""},
		{"dtype wrong", ReadOptions{DType: Uint8}, ErrDType, "dtype is float32, want uint8"},
		{"rank ok", ReadOptions{Rank: 4}, nil, ""},
		{"rank wrong", ReadOptions{Rank: 3}, ErrShape, "rank 4 (shape (1, 4, 5, 6)), want rank 3"},
		{"shape ok", ReadOptions{Shape: []int{1, 4, 5, 6}}, nil, ""},
		{"shape wildcards", ReadOptions{Shape: []int{-1, -1, 5, -1}}, nil, ""},
		{"shape wrong", ReadOptions{Shape: []int{1, 4, 5, 7}}, ErrShape, "shape (1, 4, 5, 6), want (1, 4, 5, 7)"},
		{"shape rank wrong", ReadOptions{Shape: []int{4, 5, 6}}, ErrShape, "want (4, 5, 6)"},
		{"limit ok", ReadOptions{MaxBytes: 480}, nil, ""},
		{"limit", ReadOptions{MaxBytes: 479}, ErrTooLarge, "480 bytes, over the limit of 479"},
		{"header limit", ReadOptions{MaxHeaderBytes: 100}, ErrTooLarge, "header length 118 exceeds the limit of 100"},
	}
	for _, tt := range tests {
		_, err := DecodeNpy(b, &tt.o)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("%s: got %v, want %v containing %q", tt.name, err, tt.want, tt.why)
		}
	}
}

func TestReadNpyFileErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "case_00042.npy")
	if err := os.WriteFile(path, npyBytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,)}", make([]byte, 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadNpyFile(path, nil)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "big-endian") {
		t.Errorf("got %v, want the path and big-endian", err)
	}
	_, err = ReadNpyFile(filepath.Join(dir, "missing.npy"), nil)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.npy") {
		t.Errorf("missing file: got %v", err)
	}
	_, err = ReadNpyFile(dir, nil)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("directory: got %v", err)
	}
}

// A stream whose header claims 3 GiB but holds a few bytes must fail
// without allocating the claim.
func TestReadNpyDoesNotAllocateTheClaim(t *testing.T) {
	b := npyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1024, 1024, 768), }", make([]byte, 100))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadNpy(io.MultiReader(bytes.NewReader(b)), nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "found 100") {
		t.Fatalf("got %v, want truncated with 100 bytes found", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
		t.Errorf("allocated %d bytes for a 100-byte stream", d)
	}
	// And the file and in-memory readers check the size before allocating.
	_, err = DecodeNpy(b, nil)
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("decode: got %v", err)
	}
}

func TestReadNpyHeader(t *testing.T) {
	v := randomVolume(t, Int16, 5, 3, 4)
	b, _ := EncodeNpy(v)
	r := bytes.NewReader(b)
	h, err := ReadNpyHeader(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Major != 1 || h.Minor != 0 || h.DType != Int16 || !slices.Equal(h.Shape, []int{3, 4}) || h.DataOffset != 128 || h.DataBytes() != 24 {
		t.Errorf("got %+v", h)
	}
	if r.Len() != 24 {
		t.Errorf("reader left %d bytes, want the 24 data bytes", r.Len())
	}
}

func TestEncodeNpyLargeHeaderUsesVersion2(t *testing.T) {
	shape := make([]int, 30000)
	for i := range shape {
		shape[i] = 1
	}
	v, err := New(Uint8, shape...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeNpy(v)
	if err != nil {
		t.Fatal(err)
	}
	if b[6] != 2 {
		t.Fatalf("version %d.%d, want 2.0", b[6], b[7])
	}
	got, err := DecodeNpy(b, &ReadOptions{MaxHeaderBytes: 1 << 20})
	if err != nil || !Equal(got, v) {
		t.Fatalf("round trip: %v", err)
	}
}

func TestEncodeNpyRejectsInvalidVolumes(t *testing.T) {
	for _, v := range []*Volume{
		nil,
		{Shape: []int{2}, DType: 0, Data: make([]byte, 2)},
		{Shape: []int{2}, DType: Float32, Data: make([]byte, 7)},
		{Shape: []int{-2}, DType: Uint8},
	} {
		if _, err := EncodeNpy(v); err == nil {
			t.Errorf("EncodeNpy(%+v): no error", v)
		}
	}
}

// Files numpy itself wrote (testdata/numpy/make_fixtures.py).
func TestReadsNumpyFiles(t *testing.T) {
	want := func(dt DType, i int) float64 {
		x := float64(i) - 7.5
		switch dt {
		case Uint8:
			return math.Trunc(x + 8)
		case Int8, Int16, Int32:
			return math.Trunc(x) // numpy's astype truncates
		}
		return x
	}
	for _, name := range []string{"u1", "i1", "i2", "i4", "f2", "f4", "f8", "f4_v2", "f4_v3"} {
		v, err := ReadNpyFile(filepath.Join("testdata", "numpy", "arange_"+name+".npy"), &ReadOptions{Shape: []int{2, 3, 4}})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for i := 0; i < 24; i++ {
			if got := v.At(i); got != want(v.DType, i) {
				t.Errorf("%s[%d]: got %v, want %v", name, i, got, want(v.DType, i))
				break
			}
		}
	}
	if v, err := ReadNpyFile("testdata/numpy/scalar_f8.npy", nil); err != nil || len(v.Shape) != 0 || v.At(0) != 2.5 {
		t.Errorf("scalar: %v %v", v, err)
	}
	if v, err := ReadNpyFile("testdata/numpy/empty_f4.npy", nil); err != nil || !slices.Equal(v.Shape, []int{0, 3}) || len(v.Data) != 0 {
		t.Errorf("empty: %v %v", v, err)
	}
	for name, why := range map[string]string{
		"bigendian_f4.npy": "big-endian dtype '>f4'",
		"fortran_f4.npy":   "'fortran_order': True",
		"bool.npy":         "'|b1'",
	} {
		_, err := ReadNpyFile(filepath.Join("testdata", "numpy", name), nil)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: got %v, want %q", name, err, why)
		}
	}
}

// numpy's astype(float16) and Float64ToHalf agree bit for bit.
func TestFloat16MatchesNumpy(t *testing.T) {
	in, err := ReadNpyFile("testdata/numpy/half_in_f4.npy", &ReadOptions{DType: Float32, Rank: 1})
	if err != nil {
		t.Fatal(err)
	}
	out, err := ReadNpyFile("testdata/numpy/half_out_u2.npy", &ReadOptions{DType: Int32, Shape: []int{in.Shape[0]}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Cast(in, Float16)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < in.NumElements(); i++ {
		got := binary.LittleEndian.Uint16(h.Data[2*i:])
		if want := uint16(out.At(i)); got != want {
			t.Errorf("%v: got %#04x, numpy %#04x", in.At(i), got, want)
		}
	}
}

// A reader that fails (not one that ends) is reported as such, wrapping
// its error, wherever it fails.
func TestReadNpyReaderFailure(t *testing.T) {
	full, _ := EncodeNpy(randomVolume(t, Float32, 6, 4, 4))
	boom := errors.New("disk on fire")
	for _, n := range []int{0, 3, 9, 50, len(full) - 10} {
		_, err := ReadNpy(io.MultiReader(bytes.NewReader(full[:n]), iotest.ErrReader(boom)), nil)
		if !errors.Is(err, boom) || !errors.Is(err, ErrFormat) {
			t.Errorf("failing after %d bytes: got %v, want it to wrap %v", n, err, boom)
		}
	}
}
