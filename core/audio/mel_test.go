package audio

import (
	"fmt"
	"math"
	"testing"
)

func TestMelScaleKnownValues(t *testing.T) {
	tests := []struct {
		name  string
		scale MelScale
		hz    float64
		mel   float64
		tol   float64
	}{
		{"htk 0", MelHTK, 0, 0, 0},
		{"htk 1000", MelHTK, 1000, 1000, 0.02}, // 2595*log10(1+1000/700) = 999.9855
		{"htk 700", MelHTK, 700, 2595 * math.Log10(2), 1e-9},
		{"htk 8000", MelHTK, 8000, 2840.0230, 1e-4},
		{"slaney 0", MelSlaney, 0, 0, 0},
		{"slaney 500", MelSlaney, 500, 7.5, 1e-12},
		{"slaney 1000", MelSlaney, 1000, 15, 1e-12},
		{"slaney 6400", MelSlaney, 6400, 42, 1e-9}, // 15 + 27 * ln(6.4)/ln(6.4)
		{"slaney 8000", MelSlaney, 8000, 45.2456, 1e-4},
	}
	for _, tt := range tests {
		if got := HzToMel(tt.hz, tt.scale); math.Abs(got-tt.mel) > tt.tol {
			t.Errorf("%s: HzToMel got %v, want %v", tt.name, got, tt.mel)
		}
		if got := MelToHz(HzToMel(tt.hz, tt.scale), tt.scale); math.Abs(got-tt.hz) > 1e-9*(1+tt.hz) {
			t.Errorf("%s: round trip got %v Hz, want %v", tt.name, got, tt.hz)
		}
	}
}

// refFbanks is torchaudio.functional.melscale_fbanks transcribed: mel
// formulas inline, the slopes computation of _create_triangular_filterbank.
func refFbanks(nFreqs int, fMin, fMax float64, nMels, sr int, slaneyNorm bool, htk bool) [][]float64 {
	hzToMel := func(f float64) float64 {
		if htk {
			return 2595 * math.Log10(1+f/700)
		}
		m := f / (200.0 / 3)
		if f >= 1000 {
			m = 15 + math.Log(f/1000)/(math.Log(6.4)/27)
		}
		return m
	}
	melToHz := func(m float64) float64 {
		if htk {
			return 700 * (math.Pow(10, m/2595) - 1)
		}
		f := m * 200 / 3
		if m >= 15 {
			f = 1000 * math.Exp(math.Log(6.4)/27*(m-15))
		}
		return f
	}
	allFreqs := make([]float64, nFreqs)
	for i := range allFreqs {
		allFreqs[i] = float64(sr/2) * float64(i) / float64(nFreqs-1)
	}
	mMin, mMax := hzToMel(fMin), hzToMel(fMax)
	fPts := make([]float64, nMels+2)
	for i := range fPts {
		fPts[i] = melToHz(mMin + (mMax-mMin)*float64(i)/float64(nMels+1))
	}
	fb := make([][]float64, nFreqs)
	for f := range fb {
		fb[f] = make([]float64, nMels)
		for m := range nMels {
			down := -(fPts[m] - allFreqs[f]) / (fPts[m+1] - fPts[m])
			up := (fPts[m+2] - allFreqs[f]) / (fPts[m+2] - fPts[m+1])
			v := math.Max(0, math.Min(down, up))
			if slaneyNorm {
				v *= 2 / (fPts[m+2] - fPts[m])
			}
			fb[f][m] = v
		}
	}
	return fb
}

func TestMelFilterBankMatchesFormula(t *testing.T) {
	tests := []MelOptions{
		{NFreqs: 201, FMin: 0, FMax: 8000, NMels: 128, SampleRate: 16000, Scale: MelHTK}, // torchaudio MelSpectrogram defaults at 16 kHz
		{NFreqs: 257, FMin: 0, FMax: 8000, NMels: 80, SampleRate: 16000, Norm: MelNormSlaney, Scale: MelSlaney},
		{NFreqs: 257, FMin: 20, FMax: 7600, NMels: 40, SampleRate: 16000, Norm: MelNormSlaney, Scale: MelHTK},
		{NFreqs: 1025, FMin: 30, FMax: 11025, NMels: 64, SampleRate: 22050, Scale: MelSlaney},
		{NFreqs: 33, FMin: 0, FMax: 4000, NMels: 40, SampleRate: 8001, Scale: MelHTK}, // odd rate: sr//2, empty filters
	}
	for _, o := range tests {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			got, err := MelFilterBank(o)
			if err != nil {
				t.Fatal(err)
			}
			want := refFbanks(o.NFreqs, o.FMin, o.FMax, o.NMels, o.SampleRate, o.Norm == MelNormSlaney, o.Scale == MelHTK)
			for f := range o.NFreqs {
				for m := range o.NMels {
					g, w := float64(got[f*o.NMels+m]), want[f][m]
					// Same float64 formula, stored as float32.
					if math.Abs(g-w) > 1e-7*math.Abs(w)+1e-12 {
						t.Fatalf("fb[%d][%d]: got %v, want %v", f, m, g, w)
					}
				}
			}
		})
	}
}

func TestMelBankApply(t *testing.T) {
	o := MelOptions{NFreqs: 257, FMin: 0, FMax: 8000, NMels: 80, SampleRate: 16000, Norm: MelNormSlaney, Scale: MelSlaney}
	b, err := NewMelBank(o)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Spectrogram(testSignal(4000), SpectrogramOptions{NFFT: 512, WinLength: 400, HopLength: 160, Window: Hann, Center: true, Power: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got Features
	if err := b.Apply(&got, spec); err != nil {
		t.Fatal(err)
	}
	if got.Frames != spec.Frames || got.Bins != 80 {
		t.Fatalf("got %dx%d, want %dx80", got.Frames, got.Bins, spec.Frames)
	}
	fb := b.Matrix()
	for tt := range spec.Frames {
		for m := range 80 {
			var w float64 // dense spec @ fb in float64
			for f := range 257 {
				w += float64(spec.Data[tt*257+f]) * float64(fb[f*80+m])
			}
			if g := float64(got.Data[tt*80+m]); math.Abs(g-w) > 1e-5*math.Abs(w)+1e-12 {
				t.Fatalf("frame %d mel %d: got %v, want %v", tt, m, g, w)
			}
		}
	}
	allocs := testing.AllocsPerRun(10, func() { _ = b.Apply(&got, spec) })
	if allocs != 0 {
		t.Fatalf("got %v allocations applying into reused features, want 0", allocs)
	}
	if err := b.Apply(&got, Features{Frames: 1, Bins: 3, Data: make([]float32, 3)}); err == nil {
		t.Fatal("bin mismatch: want an error")
	}
}

func TestMelEmptyFilters(t *testing.T) {
	b, err := NewMelBank(MelOptions{NFreqs: 33, FMin: 0, FMax: 8000, NMels: 128, SampleRate: 16000, Scale: MelHTK})
	if err != nil {
		t.Fatal(err)
	}
	if b.EmptyFilters() == 0 {
		t.Fatal("128 mels over 33 bins: want some empty filters")
	}
	b, _ = NewMelBank(MelOptions{NFreqs: 257, FMin: 0, FMax: 8000, NMels: 40, SampleRate: 16000, Scale: MelHTK})
	if n := b.EmptyFilters(); n != 0 {
		t.Fatalf("40 mels over 257 bins: got %d empty filters, want 0", n)
	}
}

func TestMelBadOptions(t *testing.T) {
	ok := MelOptions{NFreqs: 257, FMin: 0, FMax: 8000, NMels: 80, SampleRate: 16000}
	bad := []func(*MelOptions){
		func(o *MelOptions) { o.NFreqs = 1 },
		func(o *MelOptions) { o.NMels = 0 },
		func(o *MelOptions) { o.SampleRate = 0 },
		func(o *MelOptions) { o.FMax = 0 },
		func(o *MelOptions) { o.FMin = -1 },
		func(o *MelOptions) { o.FMax = math.Inf(1) },
		func(o *MelOptions) { o.FMin = math.NaN() },
		func(o *MelOptions) { o.Norm = 5 },
		func(o *MelOptions) { o.Scale = 5 },
		func(o *MelOptions) { o.NFreqs, o.NMels = 1<<20, 1<<16 },
	}
	for i, mod := range bad {
		o := ok
		mod(&o)
		if _, err := NewMelBank(o); err == nil {
			t.Errorf("case %d (%+v): want an error", i, o)
		}
	}
}

func TestLog(t *testing.T) {
	tests := []struct {
		mode LogMode
		eps  float64
		in   []float32
		want []float32
	}{
		{LogAdd, 1.0 / (1 << 24), []float32{0, 1, math.E - 1.0/(1<<24)}, []float32{float32(-24 * math.Ln2), float32(math.Log(1 + 1.0/(1<<24))), 1}},
		{LogClamp, 1e-10, []float32{0, 1e-12, 1, math.E}, []float32{float32(math.Log(1e-10)), float32(math.Log(1e-10)), 0, 1}},
	}
	for _, tt := range tests {
		got := append([]float32{}, tt.in...)
		if err := Log(got, tt.eps, tt.mode); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Abs(float64(got[i]-tt.want[i])) > 1e-6 {
				t.Errorf("mode %d: log(%v): got %v, want %v", tt.mode, tt.in[i], got[i], tt.want[i])
			}
		}
	}
	if err := Log(nil, 0, LogAdd); err == nil {
		t.Error("eps 0: want an error")
	}
	if err := Log(nil, 1, 7); err == nil {
		t.Error("unknown mode: want an error")
	}
}
