package turbojpeg

import (
	"fmt"

	"github.com/minatoloader/minatoloader/core/imageops"
)

// Imageops adapts the decoder to imageops.JPEGDecoder, for
// imageops.DecodeOptions.JPEG. It decodes RGB itself, reusing dst.Pix, and
// hands gray output to imageops.GoJPEG. Safe for concurrent use.
type Imageops struct{}

// DecodeJPEG implements imageops.JPEGDecoder. The caller has checked the
// header against its own pixel limit, so none is applied here.
func (Imageops) DecodeJPEG(dst *imageops.Image, data []byte, mode imageops.Mode, minW, minH int) error {
	if mode != imageops.RGB {
		return imageops.GoJPEG{}.DecodeJPEG(dst, data, mode, minW, minH)
	}
	w, h, pix, err := DecodeInto(dst.Pix[:cap(dst.Pix)], data, &Options{MinW: minW, MinH: minH, MaxPixels: -1})
	if err != nil {
		return fmt.Errorf("%w: %v", imageops.ErrCorrupt, err)
	}
	dst.W, dst.H, dst.C, dst.Stride, dst.Pix = w, h, 3, w*3, pix
	return nil
}

// Name is what loaders report as their JPEG decoder.
func (Imageops) Name() string { return "libjpeg-turbo" }
