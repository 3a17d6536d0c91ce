//go:build !turbojpeg || !cgo

package turbojpeg

import (
	"errors"
	"testing"
)

func TestUnavailable(t *testing.T) {
	if Available() {
		t.Fatal("Available() = true in a build without the turbojpeg tag")
	}
	data := encodeJPEG(t, smoothRGBA(16, 16), 90)
	if _, _, _, err := Decode(data, 0, 0); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Decode: err = %v, want ErrUnavailable", err)
	}
	if _, _, _, err := DecodeInto(nil, data, &Options{MinW: 8}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("DecodeInto: err = %v, want ErrUnavailable", err)
	}
	if _, err := DecodeConfig(data); !errors.Is(err, ErrUnavailable) {
		t.Errorf("DecodeConfig: err = %v, want ErrUnavailable", err)
	}
}
