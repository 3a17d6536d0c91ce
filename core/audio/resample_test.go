package audio

import (
	"fmt"
	"math"
	"testing"
)

// refResample is torchaudio's resampling written out directly, one output
// sample at a time over every input sample (O(out*in)): output n sits at
// time n/to, input m at m/from, and y[n] = sum_m x[m] * h(t) * base/orig
// with t = (m/orig - n/new) * base in the gcd-reduced rates, h the
// windowed sinc, zero for |t| >= width.
func refResample(x []float64, from, to int, o ResampleOptions) []float64 {
	g := gcd(from, to)
	orig, nw := float64(from/g), float64(to/g)
	base := math.Min(orig, nw) * o.Rolloff
	lpw := float64(o.LowpassFilterWidth)
	beta := o.Beta
	if beta == 0 {
		beta = kaiserBeta
	}
	out := make([]float64, int(math.Ceil(float64(len(x))*nw/orig-1e-9)))
	for n := range out {
		var s float64
		for m, v := range x {
			t := (float64(m)/orig - float64(n)/nw) * base
			if math.Abs(t) >= lpw {
				continue
			}
			var w float64
			if o.Window == SincHann {
				w = math.Pow(math.Cos(t*math.Pi/lpw/2), 2)
			} else {
				w = besselI0(beta*math.Sqrt(1-(t/lpw)*(t/lpw))) / besselI0(beta)
			}
			sinc := 1.0
			if t != 0 {
				sinc = math.Sin(math.Pi*t) / (math.Pi * t)
			}
			s += v * sinc * w * base / orig
		}
		out[n] = s
	}
	return out
}

func TestResampleMatchesReference(t *testing.T) {
	tests := []struct {
		from, to int
		o        ResampleOptions
		n        int
	}{
		{44100, 16000, ResampleDefault, 500},
		{16000, 44100, ResampleDefault, 200},
		{8000, 16000, ResampleDefault, 300},
		{48000, 16000, ResampleKaiserBest, 400},
		{22050, 16000, ResampleOptions{LowpassFilterWidth: 16, Rolloff: 0.9, Window: SincKaiser, Beta: 8}, 300},
		{3, 2, ResampleDefault, 50},
		{96001, 44099, ResampleDefault, 300}, // kernel table too large: taps computed per output
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d-%d-w%d", tt.from, tt.to, tt.o.LowpassFilterWidth), func(t *testing.T) {
			x := make([]float32, tt.n)
			x64 := make([]float64, tt.n)
			for i := range x {
				x[i] = float32(math.Sin(float64(i)*0.37) * math.Cos(float64(i)*0.011))
				x64[i] = float64(x[i])
			}
			r, err := NewResampler(tt.from, tt.to, &tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if tt.from == 96001 && r.table != nil {
				t.Fatalf("want the per-output path for %d phases x %d taps", r.new, r.stride)
			}
			got := r.Resample(nil, x)
			want := refResample(x64, tt.from, tt.to, tt.o)
			if len(got) != len(want) || len(got) != r.OutLen(tt.n) {
				t.Fatalf("got %d samples, want %d (OutLen %d)", len(got), len(want), r.OutLen(tt.n))
			}
			// float32 kernel and accumulation: a few ulps of the signal scale.
			for i := range got {
				if d := math.Abs(float64(got[i]) - want[i]); d > 2e-6 {
					t.Fatalf("sample %d: got %v, want %v (diff %g)", i, got[i], want[i], d)
				}
			}
		})
	}
}

// sineStats fits a*sin + b*cos at frequency f (Hz) to y over [lo, hi) and
// returns the amplitude and the largest deviation from the ideal sine of
// amplitude amp and zero phase.
func sineStats(y []float32, rate int, f, amp float64, lo, hi int) (gotAmp, maxErr float64) {
	var ss, sc, cc, ys, yc float64
	for n := lo; n < hi; n++ {
		ph := 2 * math.Pi * f * float64(n) / float64(rate)
		s, c := math.Sin(ph), math.Cos(ph)
		ss, sc, cc = ss+s*s, sc+s*c, cc+c*c
		ys, yc = ys+float64(y[n])*s, yc+float64(y[n])*c
		maxErr = math.Max(maxErr, math.Abs(float64(y[n])-amp*s))
	}
	det := ss*cc - sc*sc
	a := (ys*cc - yc*sc) / det
	b := (yc*ss - ys*sc) / det
	return math.Hypot(a, b), maxErr
}

// zeroCrossFreq estimates a sine's frequency from its first and last
// rising zero crossings (linear interpolation).
func zeroCrossFreq(y []float32, rate, lo, hi int) float64 {
	first, last, count := -1.0, -1.0, 0
	for n := lo; n+1 < hi; n++ {
		if y[n] < 0 && y[n+1] >= 0 {
			x := float64(n) + float64(-y[n])/float64(y[n+1]-y[n])
			if first < 0 {
				first = x
			}
			last = x
			count++
		}
	}
	return float64(count-1) * float64(rate) / (last - first)
}

func rms(y []float32, lo, hi int) float64 {
	var s float64
	for _, v := range y[lo:hi] {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(hi-lo))
}

func sine(rate int, f, amp float64, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(amp * math.Sin(2*math.Pi*f*float64(i)/float64(rate)))
	}
	return x
}

// TestResampleQuality measures accuracy against an ideal resampler (the
// exact sine at the new rate), the figures quoted on ResampleDefault and
// ResampleKaiserBest: 44.1 kHz -> 16 kHz, 1 s, edges (one filter length)
// excluded.
func TestResampleQuality(t *testing.T) {
	tests := []struct {
		name                    string
		o                       ResampleOptions
		maxAmpErr, maxFreqErr   float64 // 1 kHz passband sine, relative
		maxPointErr, maxAliasDB float64 // point error vs ideal; 10 kHz sine leak
	}{
		{"default", ResampleDefault, 1e-3, 1e-6, 5e-4, -40},
		{"kaiser_best", ResampleKaiserBest, 1e-6, 1e-6, 1e-6, -120},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewResampler(44100, 16000, &tt.o)
			if err != nil {
				t.Fatal(err)
			}
			const amp = 0.5
			y := r.Resample(nil, sine(44100, 1000, amp, 44100))
			if len(y) != 16000 {
				t.Fatalf("got %d samples, want 16000", len(y))
			}
			edge := r.width*16000/44100 + 2
			gotAmp, pointErr := sineStats(y, 16000, 1000, amp, edge, len(y)-edge)
			f := zeroCrossFreq(y, 16000, edge, len(y)-edge)
			alias := r.Resample(nil, sine(44100, 10000, amp, 44100))
			leakDB := 20 * math.Log10(rms(alias, edge, len(alias)-edge)/(amp/math.Sqrt2))
			t.Logf("amplitude error %.2e, frequency error %.2e, max point error %.2e, 10 kHz leak %.1f dB",
				math.Abs(gotAmp-amp)/amp, math.Abs(f-1000)/1000, pointErr, leakDB)
			if e := math.Abs(gotAmp-amp) / amp; e > tt.maxAmpErr {
				t.Errorf("amplitude: got %v, want %v within %g", gotAmp, amp, tt.maxAmpErr)
			}
			if e := math.Abs(f-1000) / 1000; e > tt.maxFreqErr {
				t.Errorf("frequency: got %v Hz, want 1000 within %g", f, tt.maxFreqErr)
			}
			if pointErr > tt.maxPointErr {
				t.Errorf("max deviation from the ideal sine: got %g, want <= %g", pointErr, tt.maxPointErr)
			}
			if leakDB > tt.maxAliasDB {
				t.Errorf("10 kHz leak: got %.1f dB, want <= %.1f dB", leakDB, tt.maxAliasDB)
			}
		})
	}
}

func TestResampleWaveform(t *testing.T) {
	src := Waveform{Rate: 22050, Channels: 2, Samples: append(sine(22050, 440, 0.5, 2205), sine(22050, 880, 0.25, 2205)...)}
	got, err := Resample(src, 16000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rate != 16000 || got.Channels != 2 || got.Frames() != 1600 {
		t.Fatalf("got rate %d channels %d frames %d, want 16000 2 1600", got.Rate, got.Channels, got.Frames())
	}
	r, _ := NewResampler(22050, 16000, nil)
	for c := range 2 {
		sameFloats(t, fmt.Sprint("channel ", c), got.Channel(c), r.Resample(nil, src.Channel(c)))
	}
	same, err := Resample(src, 22050, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameFloats(t, "identity", same.Samples, src.Samples)
	var dst Waveform
	if err := r.ResampleWaveform(&dst, Waveform{Rate: 8000, Channels: 1, Samples: make([]float32, 3)}); err == nil {
		t.Fatal("rate mismatch: want an error")
	}
	allocs := testing.AllocsPerRun(10, func() { _ = r.ResampleWaveform(&dst, src) })
	if allocs != 0 {
		t.Fatalf("got %v allocations resampling into a reused waveform, want 0", allocs)
	}
}

func TestResampleOutLen(t *testing.T) {
	tests := []struct{ from, to, n, want int }{
		{44100, 16000, 44100, 16000},
		{44100, 16000, 44101, 16001}, // ceil(16000.36)
		{44100, 16000, 1, 1},
		{44100, 16000, 0, 0},
		{8000, 16000, 7, 14},
		{16000, 8000, 7, 4},
		{3, 2, 5, 4},
	}
	for _, tt := range tests {
		r, err := NewResampler(tt.from, tt.to, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.OutLen(tt.n); got != tt.want {
			t.Errorf("OutLen(%d) for %d->%d: got %d, want %d", tt.n, tt.from, tt.to, got, tt.want)
		}
		if got := len(r.Resample(nil, make([]float32, tt.n))); got != tt.want {
			t.Errorf("len(Resample) of %d for %d->%d: got %d, want %d", tt.n, tt.from, tt.to, got, tt.want)
		}
	}
}

func TestResampleBadOptions(t *testing.T) {
	tests := []struct {
		name     string
		from, to int
		o        ResampleOptions
	}{
		{"zero rate", 0, 16000, ResampleDefault},
		{"huge rate", 1 << 30, 16000, ResampleDefault},
		{"upsample too far", 8, 16000, ResampleDefault},
		{"zero width", 44100, 16000, ResampleOptions{Rolloff: 0.9}},
		{"rolloff > 1", 44100, 16000, ResampleOptions{LowpassFilterWidth: 6, Rolloff: 1.5}},
		{"rolloff NaN", 44100, 16000, ResampleOptions{LowpassFilterWidth: 6, Rolloff: math.NaN()}},
		{"window", 44100, 16000, ResampleOptions{LowpassFilterWidth: 6, Rolloff: 0.9, Window: 7}},
		{"beta", 44100, 16000, ResampleOptions{LowpassFilterWidth: 6, Rolloff: 0.9, Window: SincKaiser, Beta: -1}},
		{"filter too long", 1 << 24, 1, ResampleDefault},
		{"rolloff tiny", 44100, 16000, ResampleOptions{LowpassFilterWidth: 6, Rolloff: 1e-12}},
	}
	for _, tt := range tests {
		if _, err := NewResampler(tt.from, tt.to, &tt.o); err == nil {
			t.Errorf("%s: want an error", tt.name)
		}
	}
}

func TestBesselI0(t *testing.T) {
	// Reference values from numpy.i0.
	tests := []struct{ x, want float64 }{{0, 1}, {1, 1.2660658777520082}, {5, 27.239871823604442}, {14.769656459379492, 271903.6406814566}}
	for _, tt := range tests {
		if got := besselI0(tt.x); math.Abs(got-tt.want) > 1e-12*tt.want {
			t.Errorf("I0(%v): got %v, want %v", tt.x, got, tt.want)
		}
	}
}
