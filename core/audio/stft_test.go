package audio

import (
	"fmt"
	"math"
	"math/cmplx"
	"testing"
)

// naiveSpectrogram is torch.stft + abs().pow(power) written plainly: pad,
// window (formula inline, zero-padded to n_fft, centered), O(n^2) DFT.
func naiveSpectrogram(x []float32, o SpectrogramOptions) [][]float64 {
	sig := make([]float64, len(x))
	for i, v := range x {
		sig[i] = float64(v)
	}
	if o.Center {
		p := o.NFFT / 2
		padded := make([]float64, len(sig)+2*p)
		for i := range padded {
			j := i - p
			switch {
			case j >= 0 && j < len(sig):
				padded[i] = sig[j]
			case o.PadMode == PadConstant:
				padded[i] = 0
			case j < 0:
				padded[i] = sig[-j]
			default:
				padded[i] = sig[2*(len(sig)-1)-j]
			}
		}
		sig = padded
	}
	win := make([]float64, o.NFFT)
	left := (o.NFFT - o.WinLength) / 2
	den := float64(o.WinLength)
	if o.Symmetric {
		den--
	}
	var energy float64
	for n := range o.WinLength {
		c := math.Cos(2 * math.Pi * float64(n) / den)
		var w float64
		switch o.Window {
		case Hann:
			w = 0.5 - 0.5*c
		case Hamming:
			w = 0.54 - 0.46*c
		default:
			w = 1
		}
		if o.WinLength == 1 {
			w = 1
		}
		win[left+n] = w
		energy += w * w
	}
	var out [][]float64
	for start := 0; start+o.NFFT <= len(sig); start += o.HopLength {
		row := make([]float64, o.NFFT/2+1)
		for k := range row {
			var z complex128
			for n := range o.NFFT {
				z += complex(sig[start+n]*win[n], 0) * cmplx.Exp(complex(0, -2*math.Pi*float64(k*n)/float64(o.NFFT)))
			}
			if o.Normalized {
				z /= complex(math.Sqrt(energy), 0)
			}
			row[k] = math.Pow(cmplx.Abs(z), o.Power)
		}
		out = append(out, row)
	}
	return out
}

func testSignal(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		ph := float64(i)
		x[i] = float32(0.6*math.Sin(ph*0.21) + 0.3*math.Sin(ph*1.7+0.4) + 0.05*math.Cos(ph*ph*1e-3))
	}
	return x
}

func TestSpectrogramMatchesNaiveDFT(t *testing.T) {
	tests := []SpectrogramOptions{
		{NFFT: 400, WinLength: 400, HopLength: 200, Window: Hann, Center: true, Power: 2}, // torchaudio defaults
		{NFFT: 512, WinLength: 400, HopLength: 160, Window: Hann, Center: true, Power: 2}, // speech front ends
		{NFFT: 512, WinLength: 320, HopLength: 160, Window: Hamming, Center: true, Power: 1},
		{NFFT: 64, WinLength: 50, HopLength: 7, Window: Hann, Symmetric: true, Center: true, Power: 2}, // NeMo periodic=False
		{NFFT: 16, WinLength: 10, HopLength: 3, Window: Hann, Power: 2},                                // center=False
		{NFFT: 15, WinLength: 15, HopLength: 4, Window: Rectangular, Center: true, Power: 2},           // odd n_fft
		{NFFT: 32, WinLength: 32, HopLength: 8, Window: Hann, Center: true, PadMode: PadConstant, Power: 2},
		{NFFT: 32, WinLength: 31, HopLength: 8, Window: Hamming, Center: true, Power: 0.5, Normalized: true},
		{NFFT: 1, WinLength: 1, HopLength: 1, Window: Hann, Power: 2},
	}
	for _, o := range tests {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			x := testSignal(1000)
			got, err := Spectrogram(x, o)
			if err != nil {
				t.Fatal(err)
			}
			want := naiveSpectrogram(x, o)
			if got.Frames != len(want) || got.Bins != o.NFFT/2+1 {
				t.Fatalf("got %dx%d, want %dx%d", got.Frames, got.Bins, len(want), o.NFFT/2+1)
			}
			var peak float64
			for _, row := range want {
				for _, v := range row {
					peak = math.Max(peak, v)
				}
			}
			// float32 output: relative 1e-6 of each value, plus 1e-9 of the
			// peak for bins near zero (FFT vs DFT rounding).
			for tt, row := range want {
				for k, w := range row {
					g := float64(got.Data[tt*got.Bins+k])
					if d := math.Abs(g - w); d > 1e-6*math.Abs(w)+1e-9*peak {
						t.Fatalf("frame %d bin %d: got %v, want %v (diff %g, peak %g)", tt, k, g, w, d, peak)
					}
				}
			}
		})
	}
}

func TestSpectrogramPeakAtToneBin(t *testing.T) {
	// A sine at exactly bin 32 of a 512-point FFT at 16 kHz (1000 Hz).
	x := sine(16000, 1000, 0.5, 16000)
	f, err := Spectrogram(x, SpectrogramOptions{NFFT: 512, WinLength: 512, HopLength: 256, Window: Hann, Center: true, Power: 1})
	if err != nil {
		t.Fatal(err)
	}
	for tt := 2; tt < f.Frames-2; tt++ {
		row := f.Row(tt)
		best := 0
		for k := range row {
			if row[k] > row[best] {
				best = k
			}
		}
		// Hann-windowed magnitude at the tone bin: amp * N/4.
		if best != 32 || math.Abs(float64(row[32])-0.5*512/4) > 1e-3 {
			t.Fatalf("frame %d: peak at bin %d = %v, want bin 32 = %v", tt, best, row[best], 0.5*512/4)
		}
	}
}

func TestSpectrogramReusesBuffers(t *testing.T) {
	s, err := NewSTFT(SpectrogramOptions{NFFT: 512, WinLength: 400, HopLength: 160, Window: Hann, Center: true, Power: 2})
	if err != nil {
		t.Fatal(err)
	}
	x := testSignal(16000)
	var f Features
	if err := s.Spectrogram(&f, x); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := s.Spectrogram(&f, x); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per spectrogram with reused buffers, want 0", allocs)
	}
	if f.Frames != 101 {
		t.Fatalf("got %d frames for 1 s at hop 160, want 101", f.Frames)
	}
}

func TestSpectrogramErrors(t *testing.T) {
	ok := SpectrogramOptions{NFFT: 400, WinLength: 400, HopLength: 160, Window: Hann, Center: true, Power: 2}
	bad := []struct {
		name string
		mod  func(*SpectrogramOptions)
	}{
		{"n_fft 0", func(o *SpectrogramOptions) { o.NFFT = 0 }},
		{"win > n_fft", func(o *SpectrogramOptions) { o.WinLength = 401 }},
		{"hop 0", func(o *SpectrogramOptions) { o.HopLength = 0 }},
		{"power 0", func(o *SpectrogramOptions) { o.Power = 0 }},
		{"power NaN", func(o *SpectrogramOptions) { o.Power = math.NaN() }},
		{"window", func(o *SpectrogramOptions) { o.Window = 9 }},
		{"pad mode", func(o *SpectrogramOptions) { o.PadMode = 9 }},
	}
	for _, b := range bad {
		o := ok
		b.mod(&o)
		if _, err := NewSTFT(o); err == nil {
			t.Errorf("%s: want an error", b.name)
		}
	}
	short := []struct {
		name string
		o    SpectrogramOptions
		n    int
	}{
		{"reflect needs > n_fft/2", ok, 200},
		{"empty", ok, 0},
		{"no center, shorter than n_fft", SpectrogramOptions{NFFT: 400, WinLength: 400, HopLength: 160, Power: 2}, 399},
	}
	for _, s := range short {
		if _, err := Spectrogram(make([]float32, s.n), s.o); err == nil {
			t.Errorf("%s: want an error", s.name)
		}
	}
	if f, err := Spectrogram(make([]float32, 321), ok); err != nil || f.Frames != 3 {
		t.Errorf("321 samples: got %d frames, err %v; want 3, nil", f.Frames, err)
	}
}
