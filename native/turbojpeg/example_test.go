//go:build turbojpeg && cgo

package turbojpeg_test

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"

	"github.com/minatoloader/minatoloader/native/turbojpeg"
)

func ExampleDecode() {
	var buf bytes.Buffer
	_ = jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, 640, 480)), nil)

	// A 224x224 crop follows: decode at the smallest DCT scaling that still
	// covers it, so the resize only shrinks: 4/8 here (3/8 gives 240x180).
	w, h, pix, err := turbojpeg.Decode(buf.Bytes(), 224, 224)
	fmt.Println(w, h, len(pix), err)
	// Output: 320 240 230400 <nil>
}

func ExampleDecodeInto() {
	var buf bytes.Buffer
	_ = jpeg.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 64, 48)), nil)

	// One scratch buffer per worker: no allocation once it is large enough.
	scratch := make([]uint8, 0, 64*48*3)
	opts := &turbojpeg.Options{MaxPixels: 1 << 20}
	w, h, pix, err := turbojpeg.DecodeInto(scratch, buf.Bytes(), opts)
	fmt.Println(w, h, &pix[0] == &scratch[:1][0], err)

	opts.MaxPixels = 1000
	_, _, _, err = turbojpeg.DecodeInto(scratch, buf.Bytes(), opts)
	fmt.Println(errors.Is(err, turbojpeg.ErrTooLarge))
	// Output:
	// 64 48 true <nil>
	// true
}
