package audio

import (
	"fmt"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// Axis names a Features dimension for masking.
type Axis int

const (
	// AxisTime masks frames (rows).
	AxisTime Axis = iota
	// AxisFreq masks bins (columns).
	AxisFreq
)

// MaskAlongAxis applies one mask with torchaudio.functional.mask_along_axis
// semantics: with param' = param (p == 1) or min(param, int(size*p)),
// nothing happens when param' < 1; otherwise width = U*param',
// start = int(U'*(size-width)), and positions [start, start+int(width)),
// clipped to the axis, are set to fill. So the width is uniform in
// [0, param') and the start uniform over the positions where it fits.
// U, U' are two rng.Float64 draws, in that order. p must be in [0, 1].
// Cost: O(masked area), no allocation.
func MaskAlongAxis(f *Features, axis Axis, param int, p float64, fillValue float32, rng *sampler.RNG) error {
	if err := f.check(); err != nil {
		return err
	}
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("audio: mask proportion p must be in [0, 1], got %v", p)
	}
	if param < 0 {
		return fmt.Errorf("audio: mask param must be >= 0, got %d", param)
	}
	if axis != AxisTime && axis != AxisFreq {
		return fmt.Errorf("audio: unknown mask axis %d", axis)
	}
	if rng == nil {
		return fmt.Errorf("audio: masking needs an RNG")
	}
	size := f.Frames
	if axis == AxisFreq {
		size = f.Bins
	}
	if p != 1 {
		param = min(param, int(float64(size)*p))
	}
	if param < 1 {
		return nil
	}
	width := rng.Float64() * float64(param)
	start := int(rng.Float64() * (float64(size) - width)) // truncates toward zero, as .long()
	end := start + int(width)
	start, end = max(start, 0), min(end, size)
	if start >= end {
		return nil
	}
	if axis == AxisTime {
		fill(f.Data[start*f.Bins:end*f.Bins], fillValue)
		return nil
	}
	for t := range f.Frames {
		fill(f.Data[t*f.Bins+start:t*f.Bins+end], fillValue)
	}
	return nil
}

func fill(s []float32, v float32) {
	for i := range s {
		s[i] = v
	}
}

// SpecAugmentOptions are torchaudio.transforms.SpecAugment's parameters.
type SpecAugmentOptions struct {
	TimeMasks     int // n_time_masks
	TimeMaskParam int // time_mask_param: widths uniform in [0, param)
	FreqMasks     int // n_freq_masks
	FreqMaskParam int // freq_mask_param
	// P is the largest fraction of an axis one mask may cover (torchaudio
	// p), in (0, 1]; 1 (torchaudio's default) means no limit beyond the
	// param. 0 is refused rather than read as "no masks".
	P float64
	// Value fills the masks, unless MeanValue (torchaudio
	// zero_masking=False) fills them with the mean of the input features.
	Value     float32
	MeanValue bool
}

// SpecAugment masks f in place: TimeMasks time masks, then FreqMasks
// frequency masks (torchaudio's order), each by MaskAlongAxis, all draws
// from rng, so the same rng state gives the same masks. Cost: O(masked
// area), no allocation.
func SpecAugment(f *Features, o SpecAugmentOptions, rng *sampler.RNG) error {
	if o.TimeMasks < 0 || o.FreqMasks < 0 {
		return fmt.Errorf("audio: mask counts must be >= 0, got %d time, %d freq", o.TimeMasks, o.FreqMasks)
	}
	if !(o.P > 0 && o.P <= 1) {
		return fmt.Errorf("audio: SpecAugment p must be in (0, 1] (torchaudio's default is 1), got %v", o.P)
	}
	if err := f.check(); err != nil {
		return err
	}
	v := o.Value
	if o.MeanValue && len(f.Data) > 0 {
		var s float64
		for _, x := range f.Data {
			s += float64(x)
		}
		v = float32(s / float64(len(f.Data)))
	}
	for range o.TimeMasks {
		if err := MaskAlongAxis(f, AxisTime, o.TimeMaskParam, o.P, v, rng); err != nil {
			return err
		}
	}
	for range o.FreqMasks {
		if err := MaskAlongAxis(f, AxisFreq, o.FreqMaskParam, o.P, v, rng); err != nil {
			return err
		}
	}
	return nil
}
