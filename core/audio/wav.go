package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Errors DecodeWAV and ParseWAV wrap; the message around them says what
// exactly was found. Callers branch with errors.Is.
var (
	ErrEmpty        = errors.New("empty input")
	ErrNotWAV       = errors.New("not a RIFF/WAVE file")
	ErrTruncated    = errors.New("truncated")
	ErrFormat       = errors.New("unsupported format")
	ErrBitDepth     = errors.New("unsupported bit depth")
	ErrNoFmt        = errors.New("missing fmt chunk")
	ErrNoData       = errors.New("missing data chunk")
	ErrInconsistent = errors.New("inconsistent header")
	ErrTooLarge     = errors.New("too large")
)

// DefaultMaxSamples is the decode limit when DecodeOptions.MaxSamples is 0:
// 2^26 samples (all channels), 256 MiB of float32, 70 minutes of 16 kHz
// mono.
const DefaultMaxSamples = 1 << 26

// maxChannels bounds the channel count a header may claim.
const maxChannels = 1024

// WAV format tags (the fmt chunk's wFormatTag).
const (
	FormatPCM        = 0x0001
	FormatIEEEFloat  = 0x0003
	FormatExtensible = 0xFFFE
)

// The KSDATAFORMAT_SUBTYPE GUIDs share this tail; the first two bytes are
// the format tag.
var guidTail = [14]byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71}

// DecodeOptions configures DecodeWAV. The zero value keeps all channels
// and applies DefaultMaxSamples.
type DecodeOptions struct {
	// Mono down-mixes to one channel by averaging the channels of each
	// frame (sum / channels, in float32, as torch.mean).
	Mono bool
	// MaxSamples bounds frames*channels of the input; a header claiming
	// more is refused with ErrTooLarge before anything is allocated.
	// 0 means DefaultMaxSamples.
	MaxSamples int
}

// WAVInfo describes a WAV file's audio, as ParseWAV found it.
type WAVInfo struct {
	Format     int // FormatPCM or FormatIEEEFloat (an extensible file reports its sub-format)
	Extensible bool
	Channels   int
	Rate       int
	Bits       int // container bits per sample: 8, 16, 24, 32 or 64
	ValidBits  int // significant bits (extensible files may have fewer than Bits)
	Frames     int // samples per channel
	DataOffset int // offset of the first sample byte in the file
}

// ParseWAV reads the RIFF/WAVE header: the fmt and data chunks, skipping
// any others (with their odd-size pad byte). Scanning stops once both are
// found, so trailing chunks are not examined. It costs O(number of chunks)
// and allocates nothing. Safe for concurrent use.
func ParseWAV(data []byte, o *DecodeOptions) (WAVInfo, error) {
	var info WAVInfo
	if len(data) == 0 {
		return info, fmt.Errorf("wav: %w: zero bytes", ErrEmpty)
	}
	if len(data) < 12 {
		if len(data) >= 4 && string(data[:4]) != "RIFF" {
			return info, fmt.Errorf("wav: %w: starts with %q, want \"RIFF\"", ErrNotWAV, data[:4])
		}
		return info, fmt.Errorf("wav: %w: %d bytes, a RIFF header needs 12", ErrTruncated, len(data))
	}
	if string(data[:4]) != "RIFF" {
		if string(data[:4]) == "RF64" || string(data[:4]) == "RIFX" {
			return info, fmt.Errorf("wav: %w: %s container is not supported", ErrFormat, data[:4])
		}
		return info, fmt.Errorf("wav: %w: starts with %q, want \"RIFF\"", ErrNotWAV, data[:4])
	}
	if string(data[8:12]) != "WAVE" {
		return info, fmt.Errorf("wav: %w: RIFF form type %q, want \"WAVE\"", ErrNotWAV, data[8:12])
	}
	var (
		fmtChunk   []byte
		dataOff    = -1
		dataSize   int
		off        = 12
		haveFormat bool
	)
	for !(haveFormat && dataOff >= 0) && off < len(data) {
		if len(data)-off < 8 {
			return info, fmt.Errorf("wav: %w: chunk header at offset %d has %d of 8 bytes", ErrTruncated, off, len(data)-off)
		}
		id := data[off : off+4]
		size64 := int64(binary.LittleEndian.Uint32(data[off+4:]))
		body := off + 8
		if rest := int64(len(data) - body); size64 > rest {
			return info, fmt.Errorf("wav: %w: %q chunk at offset %d claims %d bytes, %d follow", ErrTruncated, id, off, size64, rest)
		}
		size := int(size64)
		switch {
		case string(id) == "fmt " && !haveFormat:
			fmtChunk, haveFormat = data[body:body+size], true
		case string(id) == "data" && dataOff < 0:
			dataOff, dataSize = body, size
		}
		off = body + size + size&1
	}
	if !haveFormat {
		return info, fmt.Errorf("wav: %w", ErrNoFmt)
	}
	if err := parseFmt(&info, fmtChunk); err != nil {
		return info, err
	}
	if dataOff < 0 {
		return info, fmt.Errorf("wav: %w", ErrNoData)
	}
	frame := info.Channels * info.Bits / 8
	if dataSize%frame != 0 {
		return info, fmt.Errorf("wav: %w: data chunk of %d bytes is not a whole number of %d-byte frames", ErrInconsistent, dataSize, frame)
	}
	info.Frames = dataSize / frame
	info.DataOffset = dataOff
	limit := DefaultMaxSamples
	if o != nil && o.MaxSamples > 0 {
		limit = o.MaxSamples
	}
	if n := dataSize / (info.Bits / 8); n > limit {
		return info, fmt.Errorf("wav: %w: %d samples (%d frames x %d channels) exceed the limit of %d", ErrTooLarge, n, info.Frames, info.Channels, limit)
	}
	return info, nil
}

// parseFmt fills info's format fields from the fmt chunk body.
func parseFmt(info *WAVInfo, b []byte) error {
	if len(b) < 16 {
		return fmt.Errorf("wav: %w: fmt chunk of %d bytes, need 16", ErrTruncated, len(b))
	}
	le := binary.LittleEndian
	tag := int(le.Uint16(b[0:]))
	info.Channels = int(le.Uint16(b[2:]))
	rate := le.Uint32(b[4:])
	align := int(le.Uint16(b[12:]))
	info.Bits = int(le.Uint16(b[14:]))
	info.ValidBits = info.Bits
	if tag == FormatExtensible {
		if len(b) < 40 {
			return fmt.Errorf("wav: %w: extensible fmt chunk of %d bytes, need 40", ErrTruncated, len(b))
		}
		if cb := le.Uint16(b[16:]); cb < 22 {
			return fmt.Errorf("wav: %w: extensible fmt has cbSize %d, need 22", ErrInconsistent, cb)
		}
		info.Extensible = true
		info.ValidBits = int(le.Uint16(b[18:]))
		guid := b[24:40]
		if [14]byte(guid[2:]) != guidTail {
			return fmt.Errorf("wav: %w: extensible sub-format GUID % x is not PCM or IEEE float", ErrFormat, guid)
		}
		tag = int(le.Uint16(guid))
	}
	info.Format = tag
	switch tag {
	case FormatPCM:
		switch info.Bits {
		case 8, 16, 24, 32:
		default:
			return fmt.Errorf("wav: %w: %d-bit PCM (supported: 8, 16, 24, 32)", ErrBitDepth, info.Bits)
		}
	case FormatIEEEFloat:
		if info.Bits != 32 && info.Bits != 64 {
			return fmt.Errorf("wav: %w: %d-bit IEEE float (supported: 32, 64)", ErrBitDepth, info.Bits)
		}
	default:
		return fmt.Errorf("wav: %w: format tag 0x%04x (%s); supported: PCM, IEEE float, extensible", ErrFormat, tag, formatName(tag))
	}
	if info.Extensible && (info.ValidBits == 0 || info.ValidBits > info.Bits) {
		return fmt.Errorf("wav: %w: %d valid bits in a %d-bit container", ErrInconsistent, info.ValidBits, info.Bits)
	}
	if info.Channels < 1 || info.Channels > maxChannels {
		return fmt.Errorf("wav: %w: %d channels (supported: 1 to %d)", ErrInconsistent, info.Channels, maxChannels)
	}
	if rate == 0 || rate > math.MaxInt32 {
		return fmt.Errorf("wav: %w: sample rate %d", ErrInconsistent, rate)
	}
	info.Rate = int(rate)
	if want := info.Channels * info.Bits / 8; align != want {
		return fmt.Errorf("wav: %w: block align %d, want %d for %d channels of %d bits", ErrInconsistent, align, want, info.Channels, info.Bits)
	}
	return nil
}

func formatName(tag int) string {
	switch tag {
	case 0x0002:
		return "Microsoft ADPCM"
	case 0x0006:
		return "A-law"
	case 0x0007:
		return "mu-law"
	case 0x0011:
		return "IMA ADPCM"
	case 0x0055:
		return "MPEG layer 3"
	case 0x0000:
		return "unknown"
	}
	return "unrecognised"
}

// DecodeWAV decodes a whole WAV file held in memory into float32 samples,
// planar: integers scaled by 2^-(bits-1) (8-bit is unsigned, offset 128),
// so in [-1, 1); 32-bit integers that round to 1.0 in float32 are clamped
// to the largest float32 below 1. Float files are passed through unchanged
// (their values may lie outside [-1, 1]). With o.Mono, channels are
// averaged. o may be nil (defaults).
//
// It never panics; every failure wraps one of the Err* values above. Cost:
// one allocation of the output, and a bulk loop over the data, about
// 1 ns per 16-bit sample (BenchmarkDecodeWAV). Safe for concurrent use.
func DecodeWAV(data []byte, o *DecodeOptions) (Waveform, error) {
	var w Waveform
	err := DecodeWAVInto(&w, data, o)
	return w, err
}

// DecodeWAVInto is DecodeWAV writing into dst, reusing dst.Samples'
// capacity when it suffices (then it allocates nothing). On error dst is
// left unchanged.
func DecodeWAVInto(dst *Waveform, data []byte, o *DecodeOptions) error {
	info, err := ParseWAV(data, o)
	if err != nil {
		return err
	}
	ch := info.Channels
	mono := o != nil && o.Mono && ch > 1
	outCh := ch
	if mono {
		outCh = 1
	}
	out := grow(dst.Samples, info.Frames*outCh)
	raw := data[info.DataOffset : info.DataOffset+info.Frames*ch*info.Bits/8]
	switch {
	case ch == 1:
		decodeInterleaved(out, raw, info)
	case mono:
		downmix(out, raw, info)
	default:
		deinterleave(out, raw, info)
	}
	dst.Rate, dst.Channels, dst.Samples = info.Rate, outCh, out
	return nil
}

// maxBelowOne is the largest float32 below 1.
const maxBelowOne = float32(1 - 1.0/(1<<24))

// decodeInterleaved converts len(out) consecutive samples of raw.
func decodeInterleaved(out []float32, raw []byte, info WAVInfo) {
	decodeStrided(out, raw, info.Bits/8, info)
}

// decodeStrided converts len(out) samples, sample i at raw[i*step:].
func decodeStrided(out []float32, raw []byte, step int, info WAVInfo) {
	n := len(out)
	if n == 0 {
		return
	}
	raw = raw[:(n-1)*step+info.Bits/8]
	le := binary.LittleEndian
	switch {
	case info.Format == FormatIEEEFloat && info.Bits == 32:
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[i*step:]))
		}
	case info.Format == FormatIEEEFloat:
		for i := range out {
			out[i] = float32(math.Float64frombits(le.Uint64(raw[i*step:])))
		}
	case info.Bits == 8:
		for i := range out {
			out[i] = (float32(raw[i*step]) - 128) * (1.0 / 128)
		}
	case info.Bits == 16:
		for i := range out {
			out[i] = float32(int16(le.Uint16(raw[i*step:]))) * (1.0 / (1 << 15))
		}
	case info.Bits == 24:
		for i := range out {
			b := raw[i*step : i*step+3]
			v := int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24) >> 8
			out[i] = float32(v) * (1.0 / (1 << 23))
		}
	default: // 32-bit PCM
		for i := range out {
			out[i] = min(float32(int32(le.Uint32(raw[i*step:])))*(1.0/(1<<31)), maxBelowOne)
		}
	}
}

// chunkFrames bounds the scratch used by downmix and deinterleave.
const chunkFrames = 256

// downmix decodes interleaved multi-channel raw into mono out, averaging.
func downmix(out []float32, raw []byte, info WAVInfo) {
	ch := info.Channels
	bps := info.Bits / 8
	var buf [chunkFrames * 8]float32
	step := len(buf) / ch // frames per chunk (ch <= 1024, so >= 2)
	inv := float32(ch)
	for f := 0; f < len(out); f += step {
		nf := min(step, len(out)-f)
		tmp := buf[:nf*ch]
		decodeInterleaved(tmp, raw[f*ch*bps:], info)
		for i := range nf {
			s := float32(0)
			for _, v := range tmp[i*ch : (i+1)*ch] {
				s += v
			}
			out[f+i] = s / inv
		}
	}
}

// deinterleave decodes interleaved raw into planar out, one channel at a
// time.
func deinterleave(out []float32, raw []byte, info WAVInfo) {
	ch := info.Channels
	bps := info.Bits / 8
	frames := len(out) / ch
	if frames == 0 {
		return // raw may be empty: raw[c*bps:] would be out of range
	}
	for c := range ch {
		decodeStrided(out[c*frames:(c+1)*frames], raw[c*bps:], ch*bps, info)
	}
}
