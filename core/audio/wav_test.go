package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// wavSpec describes a WAV file for encodeWAV, the tests' own encoder.
type wavSpec struct {
	tag       int  // FormatPCM or FormatIEEEFloat (or anything, for bad files)
	ext       bool // write WAVE_FORMAT_EXTENSIBLE with tag as sub-format
	channels  int
	rate      int
	bits      int // container bits
	validBits int // extensible only; 0 means bits
	align     int // 0 means channels*bits/8
	data      []byte
	// chunks before fmt, between fmt and data, and after data.
	pre, mid, post []chunk
	noFmt, noData  bool
	dataSize       int64 // -1 means len(data)
}

type chunk struct {
	id   string
	body []byte
}

func putChunk(b []byte, id string, size int64, body []byte) []byte {
	b = append(b, id...)
	b = binary.LittleEndian.AppendUint32(b, uint32(size))
	b = append(b, body...)
	if len(body)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

func encodeWAV(s wavSpec) []byte {
	le := binary.LittleEndian
	b := []byte("RIFF\x00\x00\x00\x00WAVE")
	for _, c := range s.pre {
		b = putChunk(b, c.id, int64(len(c.body)), c.body)
	}
	if !s.noFmt {
		align := s.align
		if align == 0 {
			align = s.channels * s.bits / 8
		}
		var f []byte
		tag := s.tag
		if s.ext {
			tag = FormatExtensible
		}
		f = le.AppendUint16(f, uint16(tag))
		f = le.AppendUint16(f, uint16(s.channels))
		f = le.AppendUint32(f, uint32(s.rate))
		f = le.AppendUint32(f, uint32(s.rate*align))
		f = le.AppendUint16(f, uint16(align))
		f = le.AppendUint16(f, uint16(s.bits))
		if s.ext {
			valid := s.validBits
			if valid == 0 {
				valid = s.bits
			}
			f = le.AppendUint16(f, 22)
			f = le.AppendUint16(f, uint16(valid))
			f = le.AppendUint32(f, 0) // channel mask
			f = le.AppendUint16(f, uint16(s.tag))
			f = append(f, guidTail[:]...)
		}
		b = putChunk(b, "fmt ", int64(len(f)), f)
	}
	for _, c := range s.mid {
		b = putChunk(b, c.id, int64(len(c.body)), c.body)
	}
	if !s.noData {
		size := s.dataSize
		if size < 0 {
			size = int64(len(s.data))
		}
		b = putChunk(b, "data", size, s.data)
	}
	for _, c := range s.post {
		b = putChunk(b, c.id, int64(len(c.body)), c.body)
	}
	le.PutUint32(b[4:], uint32(len(b)-8))
	return b
}

// pcmBytes encodes integer samples little-endian in bits/8 bytes
// (8-bit: the caller passes the unsigned value).
func pcmBytes(bits int, vals []int64) []byte {
	var b []byte
	for _, v := range vals {
		for i := 0; i < bits/8; i++ {
			b = append(b, byte(uint64(v)>>(8*i)))
		}
	}
	return b
}

func float32Bytes(vals []float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func float64Bytes(vals []float64) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// intCase returns interleaved test samples for a bit depth (extremes,
// zero, a ramp) and what each should decode to.
func intCase(bits, n int) (raw []int64, want []float32) {
	full := int64(1) << (bits - 1)
	vals := []int64{-full, full - 1, 0, 1, -1, full / 2, -full / 3}
	for i := 0; len(vals) < n; i++ {
		vals = append(vals, (int64(i)*7919)%(2*full)-full)
	}
	vals = vals[:n]
	for _, v := range vals {
		if bits == 8 {
			raw = append(raw, v+128) // unsigned
		} else {
			raw = append(raw, v)
		}
		w := float32(float64(v) / float64(full))
		if w >= 1 {
			w = math.Nextafter32(1, 0)
		}
		want = append(want, w)
	}
	return raw, want
}

// planar turns interleaved samples into channel-major.
func planar(inter []float32, ch int) []float32 {
	n := len(inter) / ch
	out := make([]float32, len(inter))
	for i := range n {
		for c := range ch {
			out[c*n+i] = inter[i*ch+c]
		}
	}
	return out
}

func mixdown(inter []float32, ch int) []float32 {
	n := len(inter) / ch
	out := make([]float32, n)
	for i := range n {
		var s float32
		for c := range ch {
			s += inter[i*ch+c]
		}
		out[i] = s / float32(ch)
	}
	return out
}

func sameFloats(t *testing.T, name string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d samples, want %d", name, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: sample %d: got %v, want %v", name, i, got[i], want[i])
		}
	}
}

func TestDecodeWAVFormats(t *testing.T) {
	type format struct {
		name      string
		tag, bits int
	}
	formats := []format{
		{"pcm8", FormatPCM, 8}, {"pcm16", FormatPCM, 16}, {"pcm24", FormatPCM, 24},
		{"pcm32", FormatPCM, 32}, {"float32", FormatIEEEFloat, 32}, {"float64", FormatIEEEFloat, 64},
	}
	for _, f := range formats {
		for _, ext := range []bool{false, true} {
			for _, ch := range []int{1, 2, 3} {
				name := fmt.Sprintf("%s/ext=%v/ch=%d", f.name, ext, ch)
				t.Run(name, func(t *testing.T) {
					const frames = 301 // odd: exercises data padding for 8-bit mono
					n := frames * ch
					var data []byte
					var inter []float32
					switch {
					case f.tag == FormatIEEEFloat && f.bits == 32:
						for i := range n {
							inter = append(inter, float32(math.Sin(float64(i)))*1.25) // floats pass through, even > 1
						}
						data = float32Bytes(inter)
					case f.tag == FormatIEEEFloat:
						var d []float64
						for i := range n {
							d = append(d, math.Cos(float64(i))/3)
							inter = append(inter, float32(d[i]))
						}
						data = float64Bytes(d)
					default:
						var raw []int64
						raw, inter = intCase(f.bits, n)
						data = pcmBytes(f.bits, raw)
					}
					file := encodeWAV(wavSpec{tag: f.tag, ext: ext, channels: ch, rate: 22050, bits: f.bits, data: data, dataSize: -1,
						pre: []chunk{{"JUNK", []byte("odd")}}, mid: []chunk{{"fact", []byte{1, 2, 3, 4}}}, post: []chunk{{"LIST", []byte("INFOx")}}})
					w, err := DecodeWAV(file, nil)
					if err != nil {
						t.Fatal(err)
					}
					if w.Rate != 22050 || w.Channels != ch || w.Frames() != frames {
						t.Fatalf("got rate %d channels %d frames %d, want 22050 %d %d", w.Rate, w.Channels, w.Frames(), ch, frames)
					}
					sameFloats(t, "planar", w.Samples, planar(inter, ch))
					m, err := DecodeWAV(file, &DecodeOptions{Mono: true})
					if err != nil {
						t.Fatal(err)
					}
					if m.Channels != 1 {
						t.Fatalf("mono: got %d channels", m.Channels)
					}
					sameFloats(t, "mono", m.Samples, mixdown(inter, ch))
					if f.tag == FormatPCM {
						for i, v := range w.Samples {
							if v < -1 || v >= 1 {
								t.Fatalf("sample %d = %v outside [-1, 1)", i, v)
							}
						}
					}
				})
			}
		}
	}
}

func TestDecodeWAVExtensibleValidBits(t *testing.T) {
	tests := []struct {
		bits, valid int
		vals        []int64 // left-justified container values
		want        []float32
	}{
		{16, 12, []int64{-2048 << 4, 2047 << 4, 1 << 4}, []float32{-1, 2047.0 / 2048, 1.0 / 2048}},
		{32, 24, []int64{-(1 << 23) << 8, ((1 << 23) - 1) << 8, 5 << 8}, []float32{-1, float32(8388607.0 / 8388608), 5.0 / 8388608}},
		{24, 20, []int64{-(1 << 19) << 4, 3 << 4}, []float32{-1, 3.0 / (1 << 19)}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d-in-%d", tt.valid, tt.bits), func(t *testing.T) {
			file := encodeWAV(wavSpec{tag: FormatPCM, ext: true, channels: 1, rate: 8000, bits: tt.bits, validBits: tt.valid,
				data: pcmBytes(tt.bits, tt.vals), dataSize: -1})
			info, err := ParseWAV(file, nil)
			if err != nil {
				t.Fatal(err)
			}
			if info.ValidBits != tt.valid || !info.Extensible || info.Format != FormatPCM {
				t.Fatalf("got %+v", info)
			}
			w, err := DecodeWAV(file, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameFloats(t, "samples", w.Samples, tt.want)
		})
	}
}

func TestDecodeWAVIntoReuses(t *testing.T) {
	raw, _ := intCase(16, 1000)
	file := encodeWAV(wavSpec{tag: FormatPCM, channels: 2, rate: 16000, bits: 16, data: pcmBytes(16, raw), dataSize: -1})
	var w Waveform
	if err := DecodeWAVInto(&w, file, nil); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := DecodeWAVInto(&w, file, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per decode into a reused waveform, want 0", allocs)
	}
	for _, ch := range []int{1, 2} {
		for _, mono := range []bool{false, true} {
			empty := encodeWAV(wavSpec{tag: FormatPCM, channels: ch, rate: 16000, bits: 16, dataSize: -1})
			if err := DecodeWAVInto(&w, empty, &DecodeOptions{Mono: mono}); err != nil || w.Frames() != 0 {
				t.Fatalf("empty data chunk, %d channels, mono %v: got %d frames, err %v; want 0, nil", ch, mono, w.Frames(), err)
			}
		}
	}
}

func TestDecodeWAVErrors(t *testing.T) {
	pcm := func(mod func(*wavSpec)) []byte {
		s := wavSpec{tag: FormatPCM, channels: 1, rate: 16000, bits: 16, data: make([]byte, 40), dataSize: -1}
		mod(&s)
		return encodeWAV(s)
	}
	// A chunk before fmt that claims far more than the file holds.
	good := encodeWAV(wavSpec{tag: FormatPCM, channels: 1, rate: 16000, bits: 16, data: make([]byte, 4), dataSize: -1})
	hugeJunk := append(append(append([]byte{}, good[:12]...), "JUNK\xf0\xff\xff\x7f"...), good[12:]...)
	// The data chunk ahead of the fmt chunk.
	dataFirst := encodeWAV(wavSpec{tag: FormatPCM, channels: 1, rate: 16000, bits: 16, noData: true,
		pre: []chunk{{"data", pcmBytes(16, []int64{100, -100})}}})
	tests := []struct {
		name string
		in   []byte
		opts *DecodeOptions
		want error
		msg  string // substring the message must contain
	}{
		{"zero bytes", nil, nil, ErrEmpty, "zero bytes"},
		{"not riff", []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00"), nil, ErrNotWAV, `"OggS"`},
		{"short not riff", []byte("ID3"), nil, ErrTruncated, "3 bytes"},
		{"not wave", []byte("RIFF\x04\x00\x00\x00AVI "), nil, ErrNotWAV, `"AVI "`},
		{"rf64", []byte("RF64\xff\xff\xff\xffWAVEds64"), nil, ErrFormat, "RF64"},
		{"adpcm", pcm(func(s *wavSpec) { s.tag = 2; s.bits = 4; s.align = 256 }), nil, ErrFormat, "0x0002 (Microsoft ADPCM)"},
		{"mu-law", pcm(func(s *wavSpec) { s.tag = 7; s.bits = 8 }), nil, ErrFormat, "mu-law"},
		{"12-bit pcm", pcm(func(s *wavSpec) { s.bits = 12; s.align = 2 }), nil, ErrBitDepth, "12-bit PCM"},
		{"16-bit float", pcm(func(s *wavSpec) { s.tag = FormatIEEEFloat }), nil, ErrBitDepth, "16-bit IEEE float"},
		{"20-bit extensible", pcm(func(s *wavSpec) { s.ext = true; s.bits = 20; s.align = 3 }), nil, ErrBitDepth, "20-bit"},
		{"unknown guid", pcm(func(s *wavSpec) { s.ext = true; s.tag = 0x55 }), nil, ErrFormat, "0x0055"},
		{"valid bits > container", pcm(func(s *wavSpec) { s.ext = true; s.validBits = 17 }), nil, ErrInconsistent, "17 valid bits"},
		{"huge data size", pcm(func(s *wavSpec) { s.dataSize = 0xFFFFFFFF }), nil, ErrTruncated, "claims 4294967295 bytes, 40 follow"},
		{"huge junk size", hugeJunk, nil, ErrTruncated, `"JUNK" chunk at offset 12 claims 2147483632 bytes`},
		{"over the sample limit", pcm(func(s *wavSpec) {}), &DecodeOptions{MaxSamples: 19}, ErrTooLarge, "20 samples"},
		{"partial frame", pcm(func(s *wavSpec) { s.channels = 2; s.data = make([]byte, 42) }), nil, ErrInconsistent, "42 bytes is not a whole number of 4-byte frames"},
		{"bad block align", pcm(func(s *wavSpec) { s.align = 4 }), nil, ErrInconsistent, "block align 4, want 2"},
		{"zero channels", pcm(func(s *wavSpec) { s.channels = 0; s.align = 2 }), nil, ErrInconsistent, "0 channels"},
		{"zero rate", pcm(func(s *wavSpec) { s.rate = 0 }), nil, ErrInconsistent, "sample rate 0"},
		{"no data", pcm(func(s *wavSpec) { s.noData = true }), nil, ErrNoData, "missing data"},
		{"no fmt", pcm(func(s *wavSpec) { s.noFmt = true }), nil, ErrNoFmt, "missing fmt"},
		{"data before fmt is fine", dataFirst, nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := DecodeWAV(tt.in, tt.opts)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if w.Frames() != 2 {
					t.Fatalf("got %d frames, want 2", w.Frames())
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got error %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got message %q, want it to contain %q", err, tt.msg)
			}
		})
	}
}

// TestDecodeWAVTruncatedEverywhere cuts a valid stereo 24-bit file at
// every offset: each prefix must fail with a reason, never panic.
func TestDecodeWAVTruncatedEverywhere(t *testing.T) {
	raw, _ := intCase(24, 2*50)
	file := encodeWAV(wavSpec{tag: FormatPCM, ext: true, channels: 2, rate: 48000, bits: 24, data: pcmBytes(24, raw), dataSize: -1,
		pre: []chunk{{"JUNK", []byte("pad")}}})
	dataAt := len(file) - len(raw)*3
	for cut := range len(file) {
		_, err := DecodeWAV(file[:cut], nil)
		var want error
		switch {
		case cut == 0:
			want = ErrEmpty
		case cut > dataAt-8:
			want = ErrTruncated // inside the data chunk or its header
		}
		if err == nil {
			t.Fatalf("cut at %d of %d: no error", cut, len(file))
		}
		if want != nil && !errors.Is(err, want) {
			t.Fatalf("cut at %d: got %v, want %v", cut, err, want)
		}
		if !isKnown(err) {
			t.Fatalf("cut at %d: error %v wraps no sentinel", cut, err)
		}
	}
}

func isKnown(err error) bool {
	for _, e := range []error{ErrEmpty, ErrNotWAV, ErrTruncated, ErrFormat, ErrBitDepth, ErrNoFmt, ErrNoData, ErrInconsistent, ErrTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// FuzzDecodeWAV checks that no input panics, that every error wraps a
// sentinel, and that a successful decode is well formed. Seeds:
// testdata/fuzz/FuzzDecodeWAV plus the files below.
func FuzzDecodeWAV(f *testing.F) {
	raw, _ := intCase(16, 8)
	f.Add(encodeWAV(wavSpec{tag: FormatPCM, channels: 2, rate: 16000, bits: 16, data: pcmBytes(16, raw), dataSize: -1}))
	f.Add(encodeWAV(wavSpec{tag: FormatIEEEFloat, ext: true, channels: 1, rate: 8000, bits: 32, data: float32Bytes([]float32{0.5, -2}), dataSize: -1}))
	f.Add(encodeWAV(wavSpec{tag: FormatPCM, channels: 3, rate: 11025, bits: 8, data: []byte{1, 2, 3}, dataSize: -1, pre: []chunk{{"LIST", []byte("x")}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mono := range []bool{false, true} {
			w, err := DecodeWAV(data, &DecodeOptions{Mono: mono, MaxSamples: 1 << 20})
			if err != nil {
				if !isKnown(err) {
					t.Fatalf("error %v wraps no sentinel", err)
				}
				continue
			}
			if w.Rate < 1 || w.Channels < 1 || len(w.Samples)%w.Channels != 0 || (mono && w.Channels != 1) {
				t.Fatalf("malformed waveform: rate %d channels %d samples %d", w.Rate, w.Channels, len(w.Samples))
			}
			info, err := ParseWAV(data, nil)
			if err != nil {
				t.Fatalf("DecodeWAV succeeded, ParseWAV failed: %v", err)
			}
			if w.Frames() != info.Frames {
				t.Fatalf("got %d frames, header says %d", w.Frames(), info.Frames)
			}
			if info.Format == FormatPCM {
				for i, v := range w.Samples {
					if !(v >= -1 && v < 1) {
						t.Fatalf("PCM sample %d = %v outside [-1, 1)", i, v)
					}
				}
			}
		}
	})
}

// TestTestdataTone pins testdata/tone440_22050.wav (used by Example): 0.5 s
// of round(0.5*32767*sin(2*pi*440*t)) at 22050 Hz, 16-bit mono.
func TestTestdataTone(t *testing.T) {
	data, err := os.ReadFile("testdata/tone440_22050.wav")
	if err != nil {
		t.Fatal(err)
	}
	w, err := DecodeWAV(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.Rate != 22050 || w.Channels != 1 || w.Frames() != 11025 {
		t.Fatalf("got rate %d channels %d frames %d, want 22050 1 11025", w.Rate, w.Channels, w.Frames())
	}
	for i, v := range w.Samples {
		want := float32(math.Round(0.5*32767*math.Sin(2*math.Pi*440*float64(i)/22050)) / 32768)
		if v != want {
			t.Fatalf("sample %d: got %v, want %v", i, v, want)
		}
	}
}
