// Package sampler orders a dataset's indices for one epoch: sequential or a
// seeded shuffle, then sliced by rank as torch's DistributedSampler does.
//
// The order is a pure function of (options, epoch); it costs O(n) time and
// one []int64 of n/world_size entries per epoch.
package sampler

import "fmt"

// Options configures a Sampler.
type Options struct {
	Length    int64
	Shuffle   bool
	Seed      int64
	Rank      int
	WorldSize int
}

// Indices returns the dataset indices one rank sees in epoch, in order.
//
// With WorldSize > 1 the order is padded by wrapping around to a multiple
// of WorldSize (DistributedSampler with drop_last=False), so every rank gets
// the same count; then rank r takes positions r, r+W, r+2W, ...
func Indices(o Options, epoch int64) ([]int64, error) {
	if o.Length < 0 {
		return nil, fmt.Errorf("sampler: length must be >= 0, got %d", o.Length)
	}
	if o.WorldSize < 1 || o.Rank < 0 || o.Rank >= o.WorldSize {
		return nil, fmt.Errorf("sampler: rank %d not in [0, world_size=%d)", o.Rank, o.WorldSize)
	}
	if epoch < 0 {
		return nil, fmt.Errorf("sampler: epoch must be >= 0, got %d", epoch)
	}
	n := o.Length
	order := make([]int64, n)
	for i := range order {
		order[i] = int64(i)
	}
	if o.Shuffle && n > 1 {
		rng := NewRNG(uint64(o.Seed), uint64(epoch))
		for i := n - 1; i > 0; i-- {
			j := int64(rng.Below(uint64(i + 1)))
			order[i], order[j] = order[j], order[i]
		}
	}
	w := int64(o.WorldSize)
	if w == 1 {
		return order, nil
	}
	if n == 0 {
		return []int64{}, nil
	}
	per := (n + w - 1) / w
	out := make([]int64, 0, per)
	for p := int64(o.Rank); p < per*w; p += w {
		out = append(out, order[p%n])
	}
	return out, nil
}

// RNG is a small, fast, seedable generator (SplitMix64 over a mixed
// state). It is not safe for concurrent use.
type RNG struct{ s uint64 }

// NewRNG returns a generator whose stream is a function of the keys only.
func NewRNG(keys ...uint64) RNG {
	s := uint64(0x9E3779B97F4A7C15)
	for _, k := range keys {
		s = Mix(s ^ Mix(k+0x632BE59BD9B4E019))
	}
	return RNG{s: s}
}

// Uint64 returns the next value.
func (r *RNG) Uint64() uint64 {
	r.s += 0x9E3779B97F4A7C15
	return Mix(r.s)
}

// Below returns a value in [0, n) without modulo bias; n must be > 0.
func (r *RNG) Below(n uint64) uint64 {
	limit := -n % n // (2^64 - n) % n
	for {
		v := r.Uint64()
		if v >= limit {
			return v % n
		}
	}
}

// Float64 returns a value in [0, 1).
func (r *RNG) Float64() float64 { return float64(r.Uint64()>>11) / (1 << 53) }

// Mix is the SplitMix64 finalizer: a bijective 64-bit hash.
func Mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}
