package turbojpeg

import (
	"errors"
	"fmt"
)

// DefaultMaxPixels is the source-size limit (width*height of the file's
// frame header) used when Options.MaxPixels is 0: 100 megapixels, about a
// 12000x8000 photo. The limit is checked after the header and before any
// pixel memory is allocated; a file at the limit costs up to 300 MB of RGB
// output, plus 8 bytes per pixel of coefficients when it is progressive.
const DefaultMaxPixels = 100_000_000

var (
	// ErrUnavailable is returned by every decode in a build without the
	// turbojpeg tag (or without cgo): fall back to image/jpeg.
	ErrUnavailable = errors.New("turbojpeg: not in this build (it needs cgo, -tags turbojpeg and libjpeg-turbo's static libjpeg.a; see native/turbojpeg/detect.sh)")

	// ErrTooLarge: the header announces more pixels than the limit; nothing
	// was decoded or allocated.
	ErrTooLarge = errors.New("turbojpeg: image above the pixel limit")

	// ErrDecode: libjpeg-turbo refused the data (corrupt, truncated, an
	// unsupported variant such as 12-bit samples, or a warning in strict
	// mode). The wrapped message is libjpeg-turbo's.
	ErrDecode = errors.New("turbojpeg: cannot decode")
)

// Options tune one decode. The zero value decodes at full size, refuses
// images above DefaultMaxPixels and treats warnings as errors.
type Options struct {
	// MinW and MinH ask for DCT-scaled decoding: the output is the smallest
	// of libjpeg-turbo's scalings M/8 (M = 1..8) that is still at least
	// MinW x MinH, so a later resize only shrinks. 0 leaves that side
	// unconstrained; both 0 decode at full size. A source smaller than the
	// minimum decodes at full size (factors above 1 add pixels, not detail).
	MinW, MinH int

	// MaxPixels limits the source's width*height; 0 means
	// DefaultMaxPixels, a negative value means no limit.
	MaxPixels int64

	// Lenient decodes through libjpeg-turbo's warnings (a truncated file,
	// bytes before a marker, a corrupt entropy segment) as PIL does,
	// filling what is missing. The default stops at the first warning, the
	// equivalent of TurboJPEG's TJFLAG_STOPONWARNING, which matches
	// image/jpeg's refusal of such files.
	Lenient bool

	// FastUpsample repeats subsampled chroma samples, as image/jpeg does,
	// instead of libjpeg-turbo's default smoothing filter: colors then
	// match image/jpeg to within IDCT rounding (TestMatchesImageJPEG), at
	// some cost in color-edge quality.
	FastUpsample bool
}

// Config is what the frame header says.
type Config struct {
	Width, Height int
	Components    int // 1 (gray), 3 (YCbCr or RGB) or 4 (CMYK or YCCK)
}

// Available reports whether this build decodes with libjpeg-turbo. When it
// is false every decode returns ErrUnavailable.
func Available() bool { return available }

// Decode decodes a baseline, progressive or arithmetic-coded JPEG (gray,
// YCbCr, RGB, CMYK or YCCK) to 8-bit RGB, rows of w*3 bytes (HWC), with
// DCT scaling to at least minW x minH (see Options.MinW) and the defaults
// of Options otherwise. pix is newly allocated Go memory of len w*h*3.
//
// Decode is safe for concurrent use: each call has its own decoder state.
// Cost (CPU time, 1024x768 photo-like, BenchmarkDecode): 4.4 ms at full
// size with its fresh buffer, 2.8 ms through DecodeInto with a reused one;
// image/jpeg takes 9.3 ms before any RGB conversion.
func Decode(data []byte, minW, minH int) (w, h int, pix []uint8, err error) {
	return DecodeInto(nil, data, &Options{MinW: minW, MinH: minH})
}

// DecodeInto is Decode with Options (nil means the zero Options) into dst
// when cap(dst) >= w*h*3: pix is then dst[:w*h*3] and the call allocates
// nothing. Otherwise pix is newly allocated. dst's contents beyond the
// result are left as they were.
func DecodeInto(dst []uint8, data []byte, opts *Options) (w, h int, pix []uint8, err error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MinW < 0 || o.MinH < 0 {
		return 0, 0, nil, fmt.Errorf("turbojpeg: negative minimum size %dx%d", o.MinW, o.MinH)
	}
	if o.MaxPixels == 0 {
		o.MaxPixels = DefaultMaxPixels
	}
	if !available {
		return 0, 0, nil, ErrUnavailable
	}
	if len(data) == 0 {
		return 0, 0, nil, fmt.Errorf("%w: empty input", ErrDecode)
	}
	return decode(dst, data, &o)
}

// DecodeConfig reads the frame header only (microseconds), without a pixel
// limit and ignoring warnings.
func DecodeConfig(data []byte) (Config, error) {
	if !available {
		return Config{}, ErrUnavailable
	}
	if len(data) == 0 {
		return Config{}, fmt.Errorf("%w: empty input", ErrDecode)
	}
	return decodeConfig(data)
}

// ScaledSize returns the output size Decode gives a w x h source for a
// minimum of minW x minH, and the chosen factor as eighths (1..8): the
// smallest M with ceil(w*M/8) >= minW and ceil(h*M/8) >= minH, else 8. It
// is libjpeg-turbo's arithmetic, usable without the library (a resize
// planner may call it with DecodeConfig's size).
func ScaledSize(w, h, minW, minH int) (sw, sh, eighths int) {
	if minW <= 0 && minH <= 0 {
		return w, h, 8
	}
	for m := 1; m <= 8; m++ {
		sw, sh = (w*m+7)/8, (h*m+7)/8
		if (minW <= 0 || sw >= minW) && (minH <= 0 || sh >= minH) {
			return sw, sh, m
		}
	}
	return w, h, 8
}
