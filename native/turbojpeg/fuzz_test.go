package turbojpeg

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode: no input crashes or hangs the decoder, errors are typed, and
// what decodes has the size DecodeConfig and ScaledSize predict, with every
// output byte written (a decode into a dirty buffer equals a fresh one).
// Seeds: testdata/fuzz/FuzzDecode (testdata/gen/seeds.go). Without the
// turbojpeg tag it checks that every call returns ErrUnavailable.
//
//	go test -tags turbojpeg -run '^$' -fuzz FuzzDecode -fuzztime 45s ./native/turbojpeg/
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, minW, minH uint16, lenient, fast bool) {
		// The limit keeps one input's output at 12 MB, as libjpeg-turbo's own
		// fuzzers limit theirs: the fuzzer finds large headers quickly.
		opts := &Options{MinW: int(minW), MinH: int(minH), MaxPixels: 1 << 22, Lenient: lenient, FastUpsample: fast}
		w, h, pix, err := DecodeInto(nil, data, opts)
		if !Available() {
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			return
		}
		if err != nil {
			if !errors.Is(err, ErrDecode) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrDecode or ErrTooLarge", err)
			}
			if pix != nil {
				t.Fatalf("%d bytes returned with error %v", len(pix), err)
			}
			return
		}
		if w <= 0 || h <= 0 || len(pix) != w*h*3 {
			t.Fatalf("%dx%d with %d bytes", w, h, len(pix))
		}
		cfg, err := DecodeConfig(data)
		if err != nil {
			t.Fatalf("decoded, but DecodeConfig: %v", err)
		}
		if sw, sh, _ := ScaledSize(cfg.Width, cfg.Height, int(minW), int(minH)); sw != w || sh != h {
			t.Fatalf("decoded %dx%d, ScaledSize(%dx%d, min %dx%d) = %dx%d", w, h, cfg.Width, cfg.Height, minW, minH, sw, sh)
		}
		dirty := bytes.Repeat([]byte{0xa5}, len(pix))
		_, _, again, err := DecodeInto(dirty, data, opts)
		if err != nil || !bytes.Equal(again, pix) {
			t.Fatalf("second decode into a dirty buffer: err %v, equal %v", err, bytes.Equal(again, pix))
		}
	})
}
