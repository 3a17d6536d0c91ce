package volume

import (
	"bytes"
	"errors"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// FuzzReadNpy checks that no input panics the reader, that every accepted
// input is a valid Volume that the writer reproduces, that the stream
// reader agrees with the in-memory one, and that the ops run on whatever
// was read. Seeds: testdata/fuzz/FuzzReadNpy and the encodings below.
//
//	go test -run '^$' -fuzz FuzzReadNpy -fuzztime 60s ./core/volume/
func FuzzReadNpy(f *testing.F) {
	for dt := Uint8; dt <= Float64; dt++ {
		v := randomVolume(f, dt, uint64(dt), 1, 2, 3, 2)
		b, err := EncodeNpy(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	o := &ReadOptions{MaxBytes: 1 << 20, MaxHeaderBytes: 4096}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeNpy(data, o)
		sv, serr := ReadNpy(bytes.NewReader(data), o)
		if err != nil {
			if err.Error() == "" || !(errors.Is(err, ErrFormat) || errors.Is(err, ErrUnsupported) || errors.Is(err, ErrTooLarge)) {
				t.Fatalf("error without a reason or sentinel: %q", err)
			}
			return
		}
		if serr != nil || !Equal(v, sv) {
			t.Fatalf("DecodeNpy accepted, ReadNpy: %v", serr)
		}
		if err := v.Validate(); err != nil {
			t.Fatalf("accepted an invalid volume: %v", err)
		}
		b, err := EncodeNpy(v)
		if err != nil {
			t.Fatal(err)
		}
		w, err := DecodeNpy(b, &ReadOptions{MaxHeaderBytes: 1 << 20})
		if err != nil || !Equal(v, w) {
			t.Fatalf("re-encoding does not round-trip: %v", err)
		}
		for to := Uint8; to <= Float64; to++ {
			if _, err := Cast(v, to); err != nil {
				t.Fatalf("cast to %s: %v", to, err)
			}
		}
		sp, err := v.Spatial()
		if err != nil {
			return
		}
		r := sampler.NewRNG(uint64(len(data)))
		p, err := ForegroundCrop{Size: [3]int{2, 3, 2}, Prob: 1}.Draw(&r, v)
		if err != nil {
			t.Fatalf("foreground draw on %v: %v", v.Shape, err)
		}
		if p.Foreground && (p.Center[0] >= sp[0] || p.Center[1] >= sp[1] || p.Center[2] >= sp[2]) {
			t.Fatalf("centre %v outside %v", p.Center, sp)
		}
		c, err := Crop(v, p, Pad{Mode: PadEdge})
		if err != nil {
			t.Fatalf("crop %+v of %v: %v", p, v.Shape, err)
		}
		if err := Flip(c, FlipParams{Axes: [3]bool{true, true, true}}); err != nil {
			t.Fatal(err)
		}
	})
}
