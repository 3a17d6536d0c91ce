package turbojpeg

import (
	"errors"
	"testing"
)

func TestScaledSize(t *testing.T) {
	tests := []struct {
		w, h, minW, minH int
		wantW, wantH, wM int
	}{
		{1024, 768, 0, 0, 1024, 768, 8},
		{1024, 768, 224, 224, 384, 288, 3},
		{1024, 768, 256, 192, 256, 192, 2},
		{1024, 768, 257, 192, 384, 288, 3},
		{1024, 768, 512, 384, 512, 384, 4},
		{1024, 768, 1, 1, 128, 96, 1},
		{1024, 768, 0, 300, 512, 384, 4},
		{1024, 768, 1000, 0, 1024, 768, 8},
		{1024, 768, 2000, 2000, 1024, 768, 8}, // never enlarges
		{45, 29, 10, 10, 17, 11, 3},           // ceil(45*3/8), ceil(29*3/8)
		{45, 29, 6, 4, 6, 4, 1},
		{1, 1, 1, 1, 1, 1, 1},
		{4000, 3000, 224, 224, 500, 375, 1},
	}
	for _, tt := range tests {
		w, h, m := ScaledSize(tt.w, tt.h, tt.minW, tt.minH)
		if w != tt.wantW || h != tt.wantH || m != tt.wM {
			t.Errorf("ScaledSize(%d, %d, %d, %d) = %d, %d, %d; want %d, %d, %d",
				tt.w, tt.h, tt.minW, tt.minH, w, h, m, tt.wantW, tt.wantH, tt.wM)
		}
	}
}

func TestNegativeMinimum(t *testing.T) {
	_, _, _, err := Decode([]byte{0xff, 0xd8}, -1, 0)
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Decode with minW -1: err = %v, want an argument error", err)
	}
}
