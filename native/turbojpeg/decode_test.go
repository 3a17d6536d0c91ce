//go:build turbojpeg && cgo

package turbojpeg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAvailable(t *testing.T) {
	if !Available() {
		t.Fatal("Available() = false in a turbojpeg build")
	}
}

// Both decoders read the same bits. With FastUpsample (chroma samples
// repeated, as image/jpeg does) only the IDCT and YCbCr->RGB rounding
// differ: a level or two. By default libjpeg-turbo smooths subsampled
// chroma, which moves pixels next to sharp color edges by tens of levels
// (4:4:4, gray and RGB files have nothing to upsample). The limits are the
// measured maxima (sharp red block in the 45x29 fixtures).
func TestMatchesImageJPEG(t *testing.T) {
	color := encodeJPEG(t, smoothRGBA(256, 192), 90)
	gray := encodeJPEG(t, toGray(smoothRGBA(256, 192)), 90)
	photo := encodeJPEG(t, photoRGBA(320, 240), 90)
	tests := []struct {
		name         string
		data         []byte
		fast, smooth int // max abs diff with FastUpsample, and by default
	}{
		{"image/jpeg smooth YCbCr 4:2:0", color, 3, 6},
		{"image/jpeg gray", gray, 1, 1},
		{"image/jpeg photo-like 4:2:0", photo, 3, 31},
		{"baseline.jpg 4:2:0", fixture(t, "baseline.jpg"), 2, 91},
		{"progressive.jpg", fixture(t, "progressive.jpg"), 2, 91},
		{"restart.jpg", fixture(t, "restart.jpg"), 2, 91},
		{"ycc444.jpg", fixture(t, "ycc444.jpg"), 2, 2},
		{"ycc422.jpg", fixture(t, "ycc422.jpg"), 2, 56},
		{"rgb.jpg", fixture(t, "rgb.jpg"), 1, 1},
		{"gray_progressive.jpg", fixture(t, "gray_progressive.jpg"), 1, 1},
		{"cmyk.jpg", fixture(t, "cmyk.jpg"), 2, 2},
		{"ycck.jpg 4:2:0", fixture(t, "ycck.jpg"), 3, 88},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw, gh, want := goDecode(t, tt.data)
			for _, fast := range []bool{true, false} {
				w, h, pix, err := DecodeInto(nil, tt.data, &Options{FastUpsample: fast})
				if err != nil {
					t.Fatal(err)
				}
				if w != gw || h != gh || len(pix) != w*h*3 {
					t.Fatalf("got %dx%d (%d bytes), want %dx%d (%d bytes)", w, h, len(pix), gw, gh, len(want))
				}
				maxAbs, mean := diff(pix, want)
				limit, meanLimit := tt.smooth, 5.0
				if fast {
					limit, meanLimit = tt.fast, 0.5
				}
				t.Logf("%dx%d FastUpsample=%v: max abs diff %d, mean %.3f", w, h, fast, maxAbs, mean)
				if maxAbs > limit || mean > meanLimit {
					t.Errorf("FastUpsample=%v: max abs diff %d (limit %d), mean %.3f (limit %.1f)", fast, maxAbs, limit, mean, meanLimit)
				}
			}
		})
	}
}

// Progressive and arithmetic coding are lossless re-codings of the same
// quantized coefficients: the pixels must be identical (image/jpeg cannot
// read arithmetic coding at all).
func TestCodingsAgree(t *testing.T) {
	_, _, base, err := Decode(fixture(t, "baseline.jpg"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"progressive.jpg", "arithmetic.jpg", "restart.jpg"} {
		_, _, pix, err := Decode(fixture(t, name), 0, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(pix, base) {
			maxAbs, _ := diff(pix, base)
			t.Errorf("%s: differs from baseline.jpg (max abs diff %d), want identical", name, maxAbs)
		}
	}
}

func TestScaledDecode(t *testing.T) {
	src := smoothRGBA(1024, 768)
	data := encodeJPEG(t, src, 90)
	fx := fixture(t, "baseline.jpg")
	tests := []struct {
		data         []byte
		minW, minH   int
		wantW, wantH int
	}{
		{data, 0, 0, 1024, 768},
		{data, 224, 224, 384, 288},
		{data, 256, 192, 256, 192},
		{data, 100, 100, 256, 192},
		{data, 1, 1, 128, 96},
		{data, 0, 300, 512, 384},
		{data, 640, 480, 640, 480},
		{data, 641, 480, 768, 576},
		{data, 4096, 4096, 1024, 768},
		{fx, 10, 10, 17, 11},
		{fx, 1, 1, 6, 4},
	}
	for _, tt := range tests {
		w, h, pix, err := Decode(tt.data, tt.minW, tt.minH)
		if err != nil {
			t.Fatalf("Decode(min %dx%d): %v", tt.minW, tt.minH, err)
		}
		if w != tt.wantW || h != tt.wantH || len(pix) != w*h*3 {
			t.Errorf("Decode(min %dx%d) = %dx%d (%d bytes), want %dx%d", tt.minW, tt.minH, w, h, len(pix), tt.wantW, tt.wantH)
		}
		cfg, err := DecodeConfig(tt.data)
		if err != nil {
			t.Fatal(err)
		}
		if sw, sh, _ := ScaledSize(cfg.Width, cfg.Height, tt.minW, tt.minH); sw != w || sh != h {
			t.Errorf("ScaledSize(%dx%d, min %dx%d) = %dx%d, the decoder gave %dx%d", cfg.Width, cfg.Height, tt.minW, tt.minH, sw, sh, w, h)
		}
	}

	// The 1/2 decode is the same picture: compare with 2x2 means of the
	// full-size decode.
	_, _, full, err := Decode(data, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, h, half, err := Decode(data, 512, 384)
	if err != nil {
		t.Fatal(err)
	}
	box := make([]uint8, len(half))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for c := 0; c < 3; c++ {
				s := 0
				for _, o := range [4]int{0, 3, 1024 * 3, 1024*3 + 3} {
					s += int(full[(2*y*1024+2*x)*3+c+o])
				}
				box[(y*w+x)*3+c] = uint8((s + 2) / 4)
			}
		}
	}
	maxAbs, mean := diff(half, box)
	t.Logf("1/2 scaled decode vs 2x2 box of the full decode: max abs diff %d, mean %.3f", maxAbs, mean)
	if maxAbs > 8 || mean > 1 {
		t.Errorf("1/2 scaled decode vs 2x2 box: max abs diff %d (limit 8), mean %.3f (limit 1)", maxAbs, mean)
	}
}

func TestDecodeConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		want Config
	}{
		{"baseline.jpg", Config{45, 29, 3}},
		{"gray_progressive.jpg", Config{45, 29, 1}},
		{"cmyk.jpg", Config{45, 29, 4}},
		{"ycck.jpg", Config{45, 29, 4}},
	} {
		got, err := DecodeConfig(fixture(t, tt.name))
		if err != nil || got != tt.want {
			t.Errorf("DecodeConfig(%s) = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

// withSize returns a copy of a baseline JPEG whose SOF0 says w x h.
func withSize(t *testing.T, data []byte, w, h uint16) []byte {
	t.Helper()
	out := bytes.Clone(data)
	i := bytes.Index(out, []byte{0xff, 0xc0})
	if i < 0 {
		t.Fatal("no SOF0 marker")
	}
	binary.BigEndian.PutUint16(out[i+5:], h)
	binary.BigEndian.PutUint16(out[i+7:], w)
	return out
}

func TestErrors(t *testing.T) {
	good := encodeJPEG(t, smoothRGBA(64, 48), 90)
	sos := bytes.Index(good, []byte{0xff, 0xda})
	precision12 := bytes.Clone(good)
	precision12[bytes.Index(good, []byte{0xff, 0xc0})+4] = 12
	tests := []struct {
		name    string
		data    []byte
		opts    *Options
		want    error
		message string
	}{
		{"zero bytes", []byte{}, nil, ErrDecode, "empty input"},
		{"nil", nil, nil, ErrDecode, "empty input"},
		{"not a JPEG", []byte("GIF89a not a jpeg at all"), nil, ErrDecode, "Not a JPEG file"},
		{"SOI only", []byte{0xff, 0xd8}, nil, ErrDecode, ""},
		{"header, no scan", good[:sos], nil, ErrDecode, ""},
		{"truncated in the scan", good[:sos+40], nil, ErrDecode, "Premature end of JPEG file"},
		{"truncated, half", good[:len(good)/2], nil, ErrDecode, "warning"},
		{"12-bit", precision12, nil, ErrDecode, "precision 12"},
		{"huge header 60000x60000", withSize(t, good, 60000, 60000), nil, ErrTooLarge, "60000x60000 is 3600000000 pixels"},
		{"above a set limit", good, &Options{MaxPixels: 64*48 - 1}, ErrTooLarge, "above the limit of 3071"},
		{"zero width", withSize(t, good, 0, 48), nil, ErrDecode, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, _, pix, err := DecodeInto(nil, tt.data, tt.opts)
			if !errors.Is(err, tt.want) || !strings.Contains(fmt.Sprint(err), tt.message) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.want, tt.message)
			}
			if pix != nil {
				t.Errorf("pix has %d bytes on error, want nil", len(pix))
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v to refuse", d)
			}
			t.Logf("%v", err)
		})
	}

	// At the limit it decodes; leniently a truncated file decodes too.
	if _, _, _, err := DecodeInto(nil, good, &Options{MaxPixels: 64 * 48}); err != nil {
		t.Errorf("MaxPixels = width*height: %v", err)
	}
	if w, h, pix, err := DecodeInto(nil, good[:sos+40], &Options{Lenient: true}); err != nil || w != 64 || h != 48 || len(pix) != 64*48*3 {
		t.Errorf("lenient truncated decode = %dx%d, %d bytes, %v; want 64x48", w, h, len(pix), err)
	}
}

// A progressive file with 600 copies of its last scan is refused at scan
// 501 (TJFLAG_LIMITSCANS): each scan re-walks the whole coefficient buffer,
// so scan floods are a cheap way to make a small file cost minutes.
func TestScanLimit(t *testing.T) {
	data := fixture(t, "progressive.jpg")
	last := bytes.LastIndex(data, []byte{0xff, 0xda})
	eoi := len(data) - 2
	if last < 0 || !bytes.Equal(data[eoi:], []byte{0xff, 0xd9}) {
		t.Fatal("progressive.jpg: no final scan before EOI")
	}
	flood := bytes.Clone(data[:eoi])
	for i := 0; i < 600; i++ {
		flood = append(flood, data[last:eoi]...)
	}
	flood = append(flood, 0xff, 0xd9)
	_, _, _, err := DecodeInto(nil, flood, &Options{Lenient: true})
	if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "more than 500 scans") {
		t.Errorf("600 scans, lenient: err = %v, want ErrDecode about 500 scans", err)
	}
	// 20 repeats stay under the limit and decode leniently.
	few := append(bytes.Clone(data[:eoi]), bytes.Repeat(data[last:eoi], 20)...)
	if _, _, _, err := DecodeInto(nil, append(few, 0xff, 0xd9), &Options{Lenient: true}); err != nil {
		t.Errorf("20 repeated scans, lenient: %v", err)
	}
}

// Flipping bytes anywhere never crashes; what decodes has a consistent size.
func TestCorruptBytes(t *testing.T) {
	good := encodeJPEG(t, smoothRGBA(64, 48), 90)
	fails := 0
	for i := 2; i < len(good); i += 3 {
		for _, lenient := range []bool{false, true} {
			bad := bytes.Clone(good)
			bad[i] ^= 0x5a
			w, h, pix, err := DecodeInto(nil, bad, &Options{Lenient: lenient, MaxPixels: 1 << 22})
			if err != nil {
				fails++
				if !errors.Is(err, ErrDecode) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("byte %d: err = %v, want ErrDecode or ErrTooLarge", i, err)
				}
				continue
			}
			if len(pix) != w*h*3 {
				t.Fatalf("byte %d: %dx%d with %d bytes", i, w, h, len(pix))
			}
		}
	}
	t.Logf("%d of %d corrupted decodes returned an error", fails, 2*((len(good)-2+2)/3))
}

func TestDecodeIntoReusesBuffer(t *testing.T) {
	data := encodeJPEG(t, smoothRGBA(320, 240), 90)
	dst := make([]uint8, 320*240*3+17)
	w, h, pix, err := DecodeInto(dst, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w != 320 || h != 240 || &pix[0] != &dst[0] || len(pix) != w*h*3 {
		t.Fatalf("got %dx%d, %d bytes, shares dst: %v; want 320x240 in dst", w, h, len(pix), &pix[0] == &dst[0])
	}
	_, _, fresh, _ := Decode(data, 0, 0)
	if !bytes.Equal(pix, fresh) {
		t.Error("decode into dst differs from a fresh decode")
	}
	opts := &Options{MinW: 100, MinH: 100}
	if allocs := testing.AllocsPerRun(20, func() {
		if _, _, _, err := DecodeInto(dst, data, opts); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("DecodeInto with room: %v allocations, want 0", allocs)
	}
	// Too small: a new buffer, dst untouched.
	small := make([]uint8, 10)
	_, _, pix, err = DecodeInto(small, data, nil)
	if err != nil || &pix[0] == &small[0] || !bytes.Equal(small, make([]uint8, 10)) {
		t.Errorf("small dst: err %v, reused %v, dst written %v", err, &pix[0] == &small[0], small)
	}
}

// Many goroutines decoding at once give the serial results (run with -race).
func TestConcurrentDecodes(t *testing.T) {
	inputs := [][]byte{
		encodeJPEG(t, smoothRGBA(200, 150), 90),
		fixture(t, "progressive.jpg"),
		fixture(t, "cmyk.jpg"),
		fixture(t, "gray_progressive.jpg"),
		fixture(t, "arithmetic.jpg"),
	}
	want := make([][]uint8, len(inputs))
	for i, in := range inputs {
		_, _, pix, err := Decode(in, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = pix
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []uint8
			for k := 0; k < 40; k++ {
				i := (g + k) % len(inputs)
				_, _, pix, err := DecodeInto(buf, inputs[i], nil)
				if err == nil && !bytes.Equal(pix, want[i]) {
					err = fmt.Errorf("input %d: result differs from the serial decode", i)
				}
				if err != nil {
					errs <- err
					return
				}
				buf = pix
				// A failing decode on another goroutine must not disturb this one.
				if _, _, _, err := Decode(inputs[i][:len(inputs[i])/3], 0, 0); err == nil {
					errs <- errors.New("truncated input decoded without error")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
