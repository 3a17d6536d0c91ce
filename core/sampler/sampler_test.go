package sampler

import (
	"slices"
	"testing"
)

func TestIndicesTable(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want []int64
	}{
		{"sequential", Options{Length: 5, WorldSize: 1}, []int64{0, 1, 2, 3, 4}},
		{"empty", Options{Length: 0, WorldSize: 1}, []int64{}},
		{"rank0of2 padded", Options{Length: 5, WorldSize: 2, Rank: 0}, []int64{0, 2, 4}},
		{"rank1of2 padded", Options{Length: 5, WorldSize: 2, Rank: 1}, []int64{1, 3, 0}},
		{"world larger than n", Options{Length: 2, WorldSize: 3, Rank: 2}, []int64{0}},
	}
	for _, tt := range tests {
		got, err := Indices(tt.o, 0)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestShuffleIsPermutationAndDependsOnEpoch(t *testing.T) {
	o := Options{Length: 1000, Shuffle: true, Seed: 7, WorldSize: 1}
	a, _ := Indices(o, 0)
	b, _ := Indices(o, 0)
	c, _ := Indices(o, 1)
	if !slices.Equal(a, b) {
		t.Fatal("same (seed, epoch) gave different orders")
	}
	if slices.Equal(a, c) {
		t.Fatal("epochs 0 and 1 gave the same order")
	}
	s := slices.Clone(a)
	slices.Sort(s)
	for i, v := range s {
		if v != int64(i) {
			t.Fatalf("not a permutation: sorted[%d] = %d", i, v)
		}
	}
}

func TestRanksCoverEveryIndex(t *testing.T) {
	for _, n := range []int64{1, 7, 8, 100} {
		for _, w := range []int{1, 2, 3, 4} {
			seen := map[int64]int{}
			per := -1
			for r := 0; r < w; r++ {
				got, err := Indices(Options{Length: n, Shuffle: true, Seed: 3, Rank: r, WorldSize: w}, 2)
				if err != nil {
					t.Fatal(err)
				}
				if per >= 0 && len(got) != per {
					t.Fatalf("n=%d w=%d: ranks got %d and %d indices", n, w, per, len(got))
				}
				per = len(got)
				for _, i := range got {
					seen[i]++
				}
			}
			if int64(len(seen)) != n {
				t.Fatalf("n=%d w=%d: %d distinct indices, want %d", n, w, len(seen), n)
			}
		}
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{{Length: -1, WorldSize: 1}, {Length: 3, WorldSize: 0}, {Length: 3, WorldSize: 2, Rank: 2}} {
		if _, err := Indices(o, 0); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if _, err := Indices(Options{Length: 3, WorldSize: 1}, -1); err == nil {
		t.Error("negative epoch: no error")
	}
}

func TestBelowIsInRange(t *testing.T) {
	r := NewRNG(1, 2)
	for i := 0; i < 10000; i++ {
		if v := r.Below(7); v >= 7 {
			t.Fatalf("Below(7) = %d", v)
		}
	}
}
