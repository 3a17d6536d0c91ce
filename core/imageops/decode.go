package imageops

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
)

// What a decode failed on. Decode wraps exactly one of these (test with
// errors.Is) together with the underlying decoder's error, so the message
// names the format, the reason and the detail:
//
//	imageops: decode png: truncated input: unexpected EOF
var (
	ErrEmpty         = errors.New("empty input (zero bytes)")
	ErrTruncated     = errors.New("truncated input")
	ErrCorrupt       = errors.New("corrupt data")
	ErrUnsupported   = errors.New("unsupported format or feature")
	ErrTooManyPixels = errors.New("too many pixels")
)

// DefaultMaxPixels is the decompression-bomb limit when DecodeOptions
// leaves MaxPixels zero: PIL's Image.MAX_IMAGE_PIXELS (1024*1024*1024/4/3,
// about 89.5 megapixels; PIL warns above it and refuses at twice it).
const DefaultMaxPixels = 89_478_485

// Format is an encoded image format.
type Format uint8

// The formats Sniff recognizes.
const (
	FormatUnknown Format = iota
	FormatJPEG
	FormatPNG
)

func (f Format) String() string {
	switch f {
	case FormatJPEG:
		return "jpeg"
	case FormatPNG:
		return "png"
	}
	return "unknown"
}

var (
	jpegMagic = []byte{0xFF, 0xD8, 0xFF}
	pngMagic  = []byte("\x89PNG\r\n\x1a\n")
)

// Sniff names the format of data from its first bytes.
func Sniff(data []byte) Format {
	switch {
	case bytes.HasPrefix(data, jpegMagic):
		return FormatJPEG
	case bytes.HasPrefix(data, pngMagic):
		return FormatPNG
	}
	return FormatUnknown
}

// Mode is the pixel layout a decode produces.
type Mode uint8

const (
	// RGB gives 3 channels, as PIL's Image.convert("RGB") (torchvision's
	// default loader): gray is replicated, alpha is dropped (not
	// composited), CMYK is converted with PIL's formula.
	RGB Mode = iota
	// Gray gives 1 channel, as PIL's Image.convert("L"):
	// L = (19595*R + 38470*G + 7471*B + 32768) >> 16.
	Gray
)

// Channels is the channel count of images decoded in mode m.
func (m Mode) Channels() int {
	if m == Gray {
		return 1
	}
	return 3
}

// JPEGDecoder turns JPEG bytes into pixels; GoJPEG (image/jpeg) is the
// default, and a libjpeg-turbo decoder can be plugged in through
// DecodeOptions.JPEG. Implementations must be safe for concurrent use.
type JPEGDecoder interface {
	// DecodeJPEG decodes data into dst (dst.Reset, reusing dst.Pix) with
	// mode's channel count. When minW or minH is positive the caller
	// allows DCT-scaled decoding: the decoder may return an image scaled
	// by a factor N/8 as long as it is still at least minW x minH (or the
	// full size when that is smaller); it may also ignore the hint. The
	// caller has already checked the header's size against its pixel
	// limit. Errors should wrap ErrTruncated, ErrCorrupt or
	// ErrUnsupported where the reason is known.
	DecodeJPEG(dst *Image, data []byte, mode Mode, minW, minH int) error
}

// GoJPEG decodes with the standard library's image/jpeg and converts to
// RGB or gray without per-pixel interface calls (FromImage). It ignores
// the DCT-scaling hint. Safe for concurrent use.
//
// Chroma upsampling and color conversion are libjpeg-turbo's (what PIL
// decodes with), so the output differs from PIL's only where image/jpeg's
// IDCT rounds differently from libjpeg's: by a few levels at most.
type GoJPEG struct{}

// DecodeJPEG implements JPEGDecoder.
func (GoJPEG) DecodeJPEG(dst *Image, data []byte, mode Mode, minW, minH int) error {
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return FromImage(dst, img, mode)
}

// DecodeOptions configures a Decoder. The zero value means: RGB output,
// DefaultMaxPixels, image/jpeg.
type DecodeOptions struct {
	// MaxPixels refuses images whose header declares more than this many
	// pixels, before any pixel memory is allocated. 0 means
	// DefaultMaxPixels; negative means no limit.
	MaxPixels int64
	Mode      Mode
	// JPEG decodes JPEG data; nil means GoJPEG.
	JPEG JPEGDecoder
}

// Decoder decodes JPEG and PNG data into Images. It is immutable and safe
// for concurrent use.
type Decoder struct {
	maxPixels int64
	mode      Mode
	jpeg      JPEGDecoder
}

// NewDecoder returns a decoder; nil options mean the defaults.
func NewDecoder(o *DecodeOptions) *Decoder {
	d := &Decoder{maxPixels: DefaultMaxPixels, jpeg: GoJPEG{}}
	if o != nil {
		d.mode = o.Mode
		if o.MaxPixels != 0 {
			d.maxPixels = o.MaxPixels
		}
		if o.JPEG != nil {
			d.jpeg = o.JPEG
		}
	}
	return d
}

// Info describes encoded data: its format and the size its header
// declares (the full size, also when a decode was DCT-scaled).
type Info struct {
	Format Format
	W, H   int
}

// Config reads only the header: format, size, and the pixel-limit check.
func (d *Decoder) Config(data []byte) (Info, error) {
	if len(data) == 0 {
		return Info{}, fmt.Errorf("imageops: decode: %w", ErrEmpty)
	}
	f := Sniff(data)
	var cfg image.Config
	var err error
	switch f {
	case FormatJPEG:
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(data))
	case FormatPNG:
		cfg, err = png.DecodeConfig(bytes.NewReader(data))
	default:
		if len(data) < len(pngMagic) && (bytes.HasPrefix(pngMagic, data) || bytes.HasPrefix(jpegMagic, data)) {
			return Info{}, fmt.Errorf("imageops: decode: %w: %d bytes, a prefix of a JPEG or PNG signature", ErrTruncated, len(data))
		}
		return Info{}, fmt.Errorf("imageops: decode: %w: not JPEG or PNG (first bytes % x)", ErrUnsupported, data[:min(len(data), 8)])
	}
	if err != nil {
		return Info{Format: f}, classify(f, nil, err)
	}
	info := Info{Format: f, W: cfg.Width, H: cfg.Height}
	if info.W <= 0 || info.H <= 0 {
		return info, fmt.Errorf("imageops: decode %s: %w: header declares %dx%d", f, ErrCorrupt, info.W, info.H)
	}
	if px := int64(info.W) * int64(info.H); d.maxPixels > 0 && px > d.maxPixels {
		return info, fmt.Errorf("imageops: decode %s: %w: header declares %dx%d = %d pixels, limit %d",
			f, ErrTooManyPixels, info.W, info.H, px, d.maxPixels)
	}
	return info, nil
}

// Decode decodes data into dst (dst.Reset, reusing dst.Pix) at full size.
// The header is checked against the pixel limit before anything is
// decoded. Errors wrap one of ErrEmpty, ErrTruncated, ErrCorrupt,
// ErrUnsupported, ErrTooManyPixels.
//
// Cost (1024x768 4:2:0 JPEG, GoJPEG): see BenchmarkDecodeJPEG; image/jpeg
// itself allocates its YCbCr planes on every call.
func (d *Decoder) Decode(dst *Image, data []byte) (Info, error) {
	return d.DecodeScaled(dst, data, 0, 0)
}

// DecodeScaled is Decode that lets the JPEG decoder scale down by a DCT
// factor while staying at least minW x minH (see JPEGDecoder). The result's
// size is dst.W x dst.H; Info has the full size, which is what
// torchvision's random parameters must be drawn from. PNG is always
// decoded at full size.
func (d *Decoder) DecodeScaled(dst *Image, data []byte, minW, minH int) (Info, error) {
	info, err := d.Config(data)
	if err != nil {
		return info, err
	}
	switch info.Format {
	case FormatJPEG:
		err = d.jpeg.DecodeJPEG(dst, data, d.mode, minW, minH)
	case FormatPNG:
		// Common PNGs stream into dst (decodePNGRows); the rest, and any
		// file it finds malformed, go through image/png.
		if err = decodePNGRows(dst, data, d.mode); err == nil {
			break
		}
		var img image.Image
		if img, err = png.Decode(bytes.NewReader(data)); err == nil {
			err = FromImage(dst, img, d.mode)
		}
	}
	if err != nil {
		return info, classify(info.Format, data, err)
	}
	return info, nil
}

// classify wraps a decoder's error with the reason callers branch on.
// data is the whole input when err came from decoding pixels, nil when it
// came from parsing the header (where a format error means a bad header).
func classify(f Format, data []byte, err error) error {
	for _, known := range []error{ErrEmpty, ErrTruncated, ErrCorrupt, ErrUnsupported, ErrTooManyPixels, ErrBadArg} {
		if errors.Is(err, known) {
			return fmt.Errorf("imageops: decode %s: %w", f, err)
		}
	}
	var reason error
	var ju jpeg.UnsupportedError
	var pu png.UnsupportedError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		reason = ErrTruncated
	case errors.As(err, &ju) || errors.As(err, &pu):
		reason = ErrUnsupported
	case data != nil && !hasEndMarker(f, data):
		// A format error with the file's end marker missing: the decoder
		// ran out of data mid-stream (image/jpeg reports short entropy
		// data as a FormatError).
		reason = ErrTruncated
	default:
		reason = ErrCorrupt
	}
	return fmt.Errorf("imageops: decode %s: %w: %w", f, reason, err)
}

// hasEndMarker reports whether data ends as a complete file of format f
// does: JPEG with EOI (FF D9, trailing zero padding allowed), PNG with its
// IEND chunk.
func hasEndMarker(f Format, data []byte) bool {
	switch f {
	case FormatJPEG:
		return bytes.HasSuffix(bytes.TrimRight(data, "\x00"), []byte{0xFF, 0xD9})
	case FormatPNG:
		return bytes.HasSuffix(data, []byte("IEND\xAE\x42\x60\x82"))
	}
	return false
}
