package audio

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

func benchWAV(b *testing.B, bits, channels, frames int) []byte {
	b.Helper()
	raw, _ := intCase(bits, frames*channels)
	return encodeWAV(wavSpec{tag: FormatPCM, channels: channels, rate: 16000, bits: bits, data: pcmBytes(bits, raw), dataSize: -1})
}

// BenchmarkDecodeWAV: 10 s of 16 kHz audio. "bulk" is DecodeWAVInto into
// a reused waveform; "naive" reads sample by sample with binary.Read, the
// per-sample interface style of go-audio/wav.
func BenchmarkDecodeWAV(b *testing.B) {
	const frames = 160000
	cases := []struct {
		name           string
		bits, channels int
		mono           bool
	}{
		{"int16-mono", 16, 1, false},
		{"int24-stereo-downmix", 24, 2, true},
		{"int16-stereo-planar", 16, 2, false},
	}
	for _, c := range cases {
		file := benchWAV(b, c.bits, c.channels, frames)
		b.Run(c.name+"/bulk", func(b *testing.B) {
			var w Waveform
			o := &DecodeOptions{Mono: c.mono}
			b.ReportAllocs()
			b.SetBytes(int64(frames * c.channels * c.bits / 8))
			for b.Loop() {
				if err := DecodeWAVInto(&w, file, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	file := benchWAV(b, 16, 1, frames)
	b.Run("int16-mono/naive-binary.Read", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(frames * 2)
		for b.Loop() {
			info, err := ParseWAV(file, nil)
			if err != nil {
				b.Fatal(err)
			}
			r := bytes.NewReader(file[info.DataOffset:])
			out := make([]float32, info.Frames)
			for i := range out {
				var v int16
				if err := binary.Read(r, binary.LittleEndian, &v); err != nil {
					b.Fatal(err)
				}
				out[i] = float32(v) / 32768
			}
		}
	})
}

// naiveDFTSpectrogram is the O(n^2) baseline: the same frames, a direct
// DFT with a precomputed twiddle table.
type naiveDFT struct {
	o        SpectrogramOptions
	win      []float64
	cos, sin []float64
}

func newNaiveDFT(o SpectrogramOptions) *naiveDFT {
	w, _ := MakeWindow(o.Window, o.WinLength, o.Symmetric)
	d := &naiveDFT{o: o, win: make([]float64, o.NFFT), cos: make([]float64, o.NFFT), sin: make([]float64, o.NFFT)}
	copy(d.win[(o.NFFT-o.WinLength)/2:], w)
	for i := range d.cos {
		d.cos[i] = math.Cos(2 * math.Pi * float64(i) / float64(o.NFFT))
		d.sin[i] = math.Sin(2 * math.Pi * float64(i) / float64(o.NFFT))
	}
	return d
}

func (d *naiveDFT) run(dst *Features, x []float32) {
	n, p := d.o.NFFT, d.o.NFFT/2
	padded := make([]float32, len(x)+2*p)
	copy(padded[p:], x)
	for i := range p {
		padded[p-1-i], padded[p+len(x)+i] = x[i+1], x[len(x)-2-i]
	}
	frames := 1 + (len(padded)-n)/d.o.HopLength
	bins := n/2 + 1
	dst.Resize(frames, bins)
	frame := make([]float64, n)
	for t := range frames {
		for i := range frame {
			frame[i] = float64(padded[t*d.o.HopLength+i]) * d.win[i]
		}
		for k := range bins {
			var re, im float64
			for i, v := range frame {
				j := (k * i) % n
				re += v * d.cos[j]
				im -= v * d.sin[j]
			}
			dst.Data[t*bins+k] = float32(re*re + im*im)
		}
	}
}

var speechSTFT = SpectrogramOptions{NFFT: 512, WinLength: 400, HopLength: 160, Window: Hann, Center: true, Power: 2}

// BenchmarkSpectrogram: gonum FFT on 1 s of 16 kHz audio (101 frames),
// against the naive DFT on 0.1 s (11 frames; MB/s compares them).
func BenchmarkSpectrogram(b *testing.B) {
	b.Run("gonum-1s", func(b *testing.B) {
		x := testSignal(16000)
		s, _ := NewSTFT(speechSTFT)
		var f Features
		b.ReportAllocs()
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			if err := s.Spectrogram(&f, x); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("naive-dft-0.1s", func(b *testing.B) {
		x := testSignal(1600)
		d := newNaiveDFT(speechSTFT)
		var f Features
		b.ReportAllocs()
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			d.run(&f, x)
		}
	})
}

func benchSpec(b *testing.B) Features {
	b.Helper()
	f, err := Spectrogram(testSignal(16000), speechSTFT)
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// BenchmarkMel: 80 Slaney mels of a 1 s spectrogram (101x257): the sparse
// MelBank against a dense spec x matrix product.
func BenchmarkMel(b *testing.B) {
	spec := benchSpec(b)
	bank, err := NewMelBank(MelOptions{NFreqs: 257, FMin: 0, FMax: 8000, NMels: 80, SampleRate: 16000, Norm: MelNormSlaney, Scale: MelSlaney})
	if err != nil {
		b.Fatal(err)
	}
	var mel Features
	b.Run("sparse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(4 * len(spec.Data)))
		for b.Loop() {
			if err := bank.Apply(&mel, spec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dense", func(b *testing.B) {
		fb := bank.Matrix()
		b.ReportAllocs()
		b.SetBytes(int64(4 * len(spec.Data)))
		for b.Loop() {
			mel.Resize(spec.Frames, 80)
			for t := range spec.Frames {
				row := spec.Row(t)
				for m := range 80 {
					var s float32
					for f, v := range row {
						s += v * fb[f*80+m]
					}
					mel.Data[t*80+m] = s
				}
			}
		}
	})
	b.Run("log", func(b *testing.B) {
		_ = bank.Apply(&mel, spec)
		data := append([]float32{}, mel.Data...)
		b.ReportAllocs()
		b.SetBytes(int64(4 * len(data)))
		for b.Loop() {
			copy(data, mel.Data)
			if err := Log(data, 1.0/(1<<24), LogAdd); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSpecAugment: 2 time masks (param 40) and 2 frequency masks
// (param 27) on 10 s of 80-mel features (1000x80), against a naive loop
// that tests every value against every mask.
func BenchmarkSpecAugment(b *testing.B) {
	o := SpecAugmentOptions{TimeMasks: 2, TimeMaskParam: 40, FreqMasks: 2, FreqMaskParam: 27, P: 1}
	f := ramp(1000, 80)
	b.Run("masks", func(b *testing.B) {
		rng := sampler.NewRNG(1)
		b.ReportAllocs()
		b.SetBytes(int64(4 * len(f.Data)))
		for b.Loop() {
			if err := SpecAugment(&f, o, &rng); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("naive", func(b *testing.B) {
		rng := sampler.NewRNG(1)
		b.ReportAllocs()
		b.SetBytes(int64(4 * len(f.Data)))
		for b.Loop() {
			type span struct{ axis, lo, hi int }
			var spans []span
			for k := range 4 {
				axis, param, size := 0, 40, f.Frames
				if k >= 2 {
					axis, param, size = 1, 27, f.Bins
				}
				w := rng.Float64() * float64(param)
				s := int(rng.Float64() * (float64(size) - w))
				spans = append(spans, span{axis, s, s + int(w)})
			}
			for t := range f.Frames {
				for c := range f.Bins {
					for _, s := range spans {
						i := t
						if s.axis == 1 {
							i = c
						}
						if i >= s.lo && i < s.hi {
							f.Data[t*f.Bins+c] = 0
						}
					}
				}
			}
		}
	})
}

// BenchmarkResample: 1 s of 44.1 kHz to 16 kHz. "naive" evaluates the
// windowed sinc for every tap of every output (no table), on 0.1 s.
func BenchmarkResample(b *testing.B) {
	for _, c := range []struct {
		name string
		o    ResampleOptions
	}{{"default", ResampleDefault}, {"kaiser_best", ResampleKaiserBest}} {
		b.Run(c.name, func(b *testing.B) {
			r, err := NewResampler(44100, 16000, &c.o)
			if err != nil {
				b.Fatal(err)
			}
			x := testSignal(44100)
			var y []float32
			b.ReportAllocs()
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				y = r.Resample(y, x)
			}
		})
	}
	b.Run("naive-0.1s", func(b *testing.B) {
		r, _ := NewResampler(44100, 16000, nil)
		x := testSignal(4410)
		y := make([]float32, r.OutLen(len(x)))
		b.ReportAllocs()
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			for o := range y {
				i, j := o/r.new, o%r.new
				var s float64
				for m := range int(r.cnt[j]) {
					k := int(r.lo[j]) + m
					if in := i*r.orig + k - r.width; in >= 0 && in < len(x) {
						s += r.coef(j, k) * float64(x[in])
					}
				}
				y[o] = float32(s)
			}
		}
	})
}

// BenchmarkChain is the Example's per-sample work for 1 s of 16 kHz
// int16 audio with reused buffers: decode, spectrogram, 80 mels, log,
// SpecAugment, normalise.
func BenchmarkChain(b *testing.B) {
	file := benchWAV(b, 16, 1, 16000)
	stft, _ := NewSTFT(speechSTFT)
	bank, _ := NewMelBank(MelOptions{NFreqs: 257, FMin: 0, FMax: 8000, NMels: 80, SampleRate: 16000, Norm: MelNormSlaney, Scale: MelSlaney})
	aug := SpecAugmentOptions{TimeMasks: 2, TimeMaskParam: 10, FreqMasks: 2, FreqMaskParam: 27, P: 1}
	var (
		w         Waveform
		spec, mel Features
	)
	b.ReportAllocs()
	b.SetBytes(int64(len(file)))
	for i := 0; b.Loop(); i++ {
		rng := sampler.NewRNG(0, 0, uint64(i), 0)
		if err := DecodeWAVInto(&w, file, nil); err != nil {
			b.Fatal(err)
		}
		if err := stft.Spectrogram(&spec, w.Samples); err != nil {
			b.Fatal(err)
		}
		if err := bank.Apply(&mel, spec); err != nil {
			b.Fatal(err)
		}
		if err := Log(mel.Data, 1.0/(1<<24), LogAdd); err != nil {
			b.Fatal(err)
		}
		if err := SpecAugment(&mel, aug, &rng); err != nil {
			b.Fatal(err)
		}
		if err := NormalizePerFeature(&mel, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}
