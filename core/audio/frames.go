package audio

import (
	"fmt"
	"math"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// Splice stacks `stack` consecutive frames and keeps every `subsample`-th
// result, as MLPerf RNN-T's FrameSplicing (stack_subsample_frames): output
// row i is src rows i*subsample, i*subsample+1, ..., i*subsample+stack-1
// concatenated, zeros past the last frame; there are
// ceil(Frames/subsample) rows of Bins*stack values. dst is resized
// (capacity reused) and must not share memory with src. Cost: one copy of
// the output.
func Splice(dst *Features, src Features, stack, subsample int) error {
	if err := src.check(); err != nil {
		return err
	}
	if stack < 1 || subsample < 1 {
		return fmt.Errorf("audio: splice stack and subsample must be >= 1, got %d, %d", stack, subsample)
	}
	frames := (src.Frames + subsample - 1) / subsample
	bins := src.Bins
	dst.Resize(frames, bins*stack)
	for i := range frames {
		out := dst.Data[i*bins*stack : (i+1)*bins*stack]
		for n := range stack {
			blk := out[n*bins : (n+1)*bins]
			if t := i*subsample + n; t < src.Frames {
				copy(blk, src.Data[t*bins:(t+1)*bins])
			} else {
				fill(blk, 0)
			}
		}
	}
	return nil
}

// NormalizePerFeature standardises each bin over time, in place:
// (x - mean) / (std + eps), with the unbiased std (N-1), as NeMo's and
// MLPerf RNN-T's normalize_batch "per_feature" (eps 1e-5 there). With
// fewer than 2 frames the std is taken as 0 (torch would give NaN).
// Statistics in float64. Cost: three passes over f; no allocation up to
// 512 bins (the scratch lives on the stack), 2*Bins float64 above.
func NormalizePerFeature(f *Features, eps float64) error {
	if err := f.check(); err != nil {
		return err
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("audio: normalize eps must be > 0 and finite, got %v", eps)
	}
	if f.Frames == 0 || f.Bins == 0 {
		return nil
	}
	var stack [1024]float64
	scratch := stack[:]
	if 2*f.Bins > len(stack) {
		scratch = make([]float64, 2*f.Bins)
	}
	mean, m2 := scratch[:f.Bins:f.Bins], scratch[f.Bins:2*f.Bins]
	clear(mean)
	clear(m2)
	for t := range f.Frames {
		for b, v := range f.Row(t) {
			mean[b] += float64(v)
		}
	}
	n := float64(f.Frames)
	for b := range mean {
		mean[b] /= n
	}
	for t := range f.Frames {
		for b, v := range f.Row(t) {
			d := float64(v) - mean[b]
			m2[b] += d * d
		}
	}
	for b := range m2 {
		std := 0.0
		if f.Frames > 1 {
			std = math.Sqrt(m2[b] / (n - 1))
		}
		m2[b] = 1 / (std + eps) // reuse as the scale
	}
	for t := range f.Frames {
		row := f.Row(t)
		for b, v := range row {
			row[b] = float32((float64(v) - mean[b]) * m2[b])
		}
	}
	return nil
}

// TrimMode selects which part of a too-long waveform PadTrim keeps.
type TrimMode int

const (
	// TrimStart keeps the first n samples.
	TrimStart TrimMode = iota
	// TrimRandom keeps n samples from an offset uniform in [0, len-n],
	// drawn with rng.Below.
	TrimRandom
)

// PadTrimOptions configure PadTrim.
type PadTrimOptions struct {
	Length int      // samples per channel of the result
	Value  float32  // padding value (appended at the end)
	Trim   TrimMode // what to keep when longer
}

// PadTrim makes every channel of src exactly o.Length samples long,
// writing into dst (capacity reused; must not share memory with src):
// shorter input is padded at the end with o.Value, longer input is cut to
// a window chosen by o.Trim, the same offset for all channels. rng is used
// (one draw) only by TrimRandom on a longer input, and may be nil
// otherwise. Cost: one copy.
func PadTrim(dst *Waveform, src Waveform, o PadTrimOptions, rng *sampler.RNG) error {
	if err := src.check(); err != nil {
		return err
	}
	if o.Length < 0 {
		return fmt.Errorf("audio: pad/trim length must be >= 0, got %d", o.Length)
	}
	if o.Trim != TrimStart && o.Trim != TrimRandom {
		return fmt.Errorf("audio: unknown trim mode %d", o.Trim)
	}
	n := src.Frames()
	off := 0
	if n > o.Length && o.Trim == TrimRandom {
		if rng == nil {
			return fmt.Errorf("audio: random trim needs an RNG")
		}
		off = int(rng.Below(uint64(n - o.Length + 1)))
	}
	out := grow(dst.Samples, o.Length*src.Channels)
	for c := range src.Channels {
		in := src.Channel(c)
		seg := out[c*o.Length : (c+1)*o.Length]
		k := copy(seg, in[off:])
		fill(seg[k:], o.Value)
	}
	dst.Rate, dst.Channels, dst.Samples = src.Rate, src.Channels, out
	return nil
}
