package audio

import (
	"math"
	"slices"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// refSplice is MLPerf RNN-T's stack_subsample_frames on a (feature, time)
// matrix: shifted copies (zero-filled) stacked along features, then every
// subsample-th column.
func refSplice(x [][]float32, stack, sub int) [][]float32 { // x[feature][time]
	feat, T := len(x), len(x[0])
	var seq [][]float32 // stacked features x time
	for n := range stack {
		for h := range feat {
			row := make([]float32, T)
			for t := 0; t+n < T; t++ {
				row[t] = x[h][t+n]
			}
			seq = append(seq, row)
		}
	}
	out := make([][]float32, len(seq))
	for h := range seq {
		for t := 0; t < T; t += sub {
			out[h] = append(out[h], seq[h][t])
		}
	}
	return out
}

func TestSpliceMatchesMLPerf(t *testing.T) {
	tests := []struct{ frames, bins, stack, sub int }{
		{10, 3, 3, 3}, {11, 4, 3, 3}, {7, 2, 1, 1}, {5, 2, 4, 2}, {1, 3, 3, 3}, {9, 2, 2, 5},
	}
	for _, tt := range tests {
		src := ramp(tt.frames, tt.bins)
		var got Features
		if err := Splice(&got, src, tt.stack, tt.sub); err != nil {
			t.Fatal(err)
		}
		x := make([][]float32, tt.bins)
		for h := range x {
			for t := range tt.frames {
				x[h] = append(x[h], src.Data[t*tt.bins+h])
			}
		}
		want := refSplice(x, tt.stack, tt.sub)
		if got.Bins != tt.bins*tt.stack || got.Frames != len(want[0]) {
			t.Fatalf("%+v: got %dx%d, want %dx%d", tt, got.Frames, got.Bins, len(want[0]), tt.bins*tt.stack)
		}
		for ti := range got.Frames {
			for h := range got.Bins {
				if g, w := got.Data[ti*got.Bins+h], want[h][ti]; g != w {
					t.Fatalf("%+v: frame %d feature %d: got %v, want %v", tt, ti, h, g, w)
				}
			}
		}
	}
	if err := Splice(&Features{}, ramp(2, 2), 0, 1); err == nil {
		t.Fatal("stack 0: want an error")
	}
}

func TestNormalizePerFeature(t *testing.T) {
	f := Features{Frames: 4, Bins: 2, Data: []float32{1, 10, 2, 10, 3, 10, 6, 10}}
	if err := NormalizePerFeature(&f, 1e-5); err != nil {
		t.Fatal(err)
	}
	// Bin 0: mean 3, unbiased std sqrt((4+1+0+9)/3).
	std := math.Sqrt(14.0 / 3)
	want := []float64{-2, 0, -1, 0, 0, 0, 3, 0}
	for i, v := range f.Data {
		w := want[i]
		if i%2 == 0 {
			w /= std + 1e-5
		}
		if math.Abs(float64(v)-w) > 1e-6 {
			t.Fatalf("value %d: got %v, want %v", i, v, w)
		}
	}
	one := Features{Frames: 1, Bins: 2, Data: []float32{5, -3}}
	if err := NormalizePerFeature(&one, 1e-5); err != nil || one.Data[0] != 0 || one.Data[1] != 0 {
		t.Fatalf("one frame: got %v, err %v; want zeros", one.Data, err)
	}
	if err := NormalizePerFeature(&f, 0); err == nil {
		t.Fatal("eps 0: want an error")
	}
}

func TestPadTrim(t *testing.T) {
	src := Waveform{Rate: 8000, Channels: 2, Samples: []float32{1, 2, 3, 4, 5, -1, -2, -3, -4, -5}}
	tests := []struct {
		name string
		o    PadTrimOptions
		want []float32
	}{
		{"pad", PadTrimOptions{Length: 7, Value: 9}, []float32{1, 2, 3, 4, 5, 9, 9, -1, -2, -3, -4, -5, 9, 9}},
		{"exact", PadTrimOptions{Length: 5}, src.Samples},
		{"trim start", PadTrimOptions{Length: 3}, []float32{1, 2, 3, -1, -2, -3}},
		{"empty", PadTrimOptions{Length: 0}, []float32{}},
	}
	for _, tt := range tests {
		var got Waveform
		if err := PadTrim(&got, src, tt.o, nil); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got.Rate != 8000 || got.Channels != 2 || !slices.Equal(got.Samples, tt.want) {
			t.Fatalf("%s: got %+v, want samples %v", tt.name, got, tt.want)
		}
	}
}

func TestPadTrimRandom(t *testing.T) {
	n := 20
	src := Waveform{Rate: 8000, Channels: 2, Samples: make([]float32, 2*n)}
	for i := range n {
		src.Samples[i], src.Samples[n+i] = float32(i), float32(-i)
	}
	o := PadTrimOptions{Length: 5, Trim: TrimRandom}
	seen := map[float32]int{}
	for index := range uint64(2000) {
		rng := sampler.NewRNG(9, 0, index, 1)
		twin := rng
		var got Waveform
		if err := PadTrim(&got, src, o, &rng); err != nil {
			t.Fatal(err)
		}
		off := int(twin.Below(uint64(n - 5 + 1)))
		for i := range 5 {
			if got.Samples[i] != float32(off+i) || got.Samples[5+i] != float32(-(off+i)) {
				t.Fatalf("index %d: got %v, want offset %d on both channels", index, got.Samples, off)
			}
		}
		var again Waveform
		rng = sampler.NewRNG(9, 0, index, 1)
		_ = PadTrim(&again, src, o, &rng)
		if !slices.Equal(again.Samples, got.Samples) {
			t.Fatal("same RNG key: got a different offset")
		}
		seen[got.Samples[0]]++
	}
	if len(seen) != n-5+1 {
		t.Fatalf("got %d distinct offsets, want all %d", len(seen), n-5+1)
	}
	if err := PadTrim(&Waveform{}, src, o, nil); err == nil {
		t.Fatal("random trim without an RNG: want an error")
	}
}

func TestNormalizePerFeatureNoAlloc(t *testing.T) {
	for _, bins := range []int{80, 512, 513} {
		f := ramp(50, bins)
		allocs := testing.AllocsPerRun(10, func() { _ = NormalizePerFeature(&f, 1e-5) })
		want := 0.0 // scratch on the stack
		if bins > 512 {
			want = 1
		}
		if allocs != want {
			t.Errorf("%d bins: got %v allocations, want %v", bins, allocs, want)
		}
	}
}
