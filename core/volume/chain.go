package volume

import (
	"fmt"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// Params is every random choice of one run of Augment. It marshals to
// JSON, so a Python reference can apply the same crop, flips, scale and
// noise std with numpy (see CropParams and FlipParams for the numpy
// spelling).
type Params struct {
	Crop       CropParams       `json:"crop"`
	Flip       FlipParams       `json:"flip"`
	Brightness BrightnessParams `json:"brightness"`
	Noise      NoiseParams      `json:"noise"`
}

// Augment is the 3D-UNet (KiTS19) training chain of the MLPerf reference:
// foreground-biased crop, flips, brightness, noise, then a cast of each
// output. Crop and flip apply to image and label alike; brightness and
// noise to the image only, in float32. An Augment is a value: safe for
// concurrent use.
type Augment struct {
	Crop       ForegroundCrop
	Flip       RandomFlip
	Brightness RandomBrightness
	Noise      GaussianNoise
	// ImagePad and LabelPad are what a crop larger than the volume reads.
	ImagePad, LabelPad Pad
	// ImageType and LabelType are the output types; 0 keeps the type the
	// step before produced (Float32 for the image, the label's own type).
	ImageType, LabelType DType
}

// MLPerfAugment returns the reference's settings for a patch of size
// (D, H, W): oversampling 0.4, flip 1/3 per axis, brightness factor 0.3
// with prob 0.1, noise std up to 0.1 with prob 0.1; float32 image, uint8
// label, constant zero padding.
func MLPerfAugment(size [3]int) Augment {
	return Augment{
		Crop:       ForegroundCrop{Size: size, Prob: 0.4},
		Flip:       RandomFlip{Prob: 1.0 / 3},
		Brightness: RandomBrightness{Factor: 0.3, Prob: 0.1},
		Noise:      GaussianNoise{Mean: 0, Std: 0.1, Prob: 0.1},
		ImageType:  Float32,
		LabelType:  Uint8,
	}
}

// Draw makes every random choice, in this order: ForegroundCrop.Draw (on
// label), RandomFlip.Draw, RandomBrightness.Draw, GaussianNoise.Draw; each
// op's comment lists its draws. Only the crop looks at the data.
func (a Augment) Draw(r *sampler.RNG, label *Volume) (Params, error) {
	var p Params
	var err error
	if p.Crop, err = a.Crop.Draw(r, label); err != nil {
		return Params{}, err
	}
	if p.Flip, err = a.Flip.Draw(r); err != nil {
		return Params{}, err
	}
	if p.Brightness, err = a.Brightness.Draw(r); err != nil {
		return Params{}, err
	}
	if p.Noise, err = a.Noise.Draw(r); err != nil {
		return Params{}, err
	}
	return p, nil
}

// Apply runs the chain with explicit parameters; it draws nothing, so the
// same Params give the same bytes. Inputs are not modified. The image is
// converted to Float32 after the crop (exactly, but for Float64 or large
// Int32 values) for brightness and noise.
func (a Augment) Apply(p Params, image, label *Volume) (img, lbl *Volume, err error) {
	for _, t := range []DType{a.ImageType, a.LabelType} {
		if t != 0 && !t.Valid() {
			return nil, nil, fmt.Errorf("volume: augment: %w: output type %v", ErrDType, t)
		}
	}
	if img, lbl, err = CropPair(image, label, p.Crop, a.ImagePad, a.LabelPad); err != nil {
		return nil, nil, err
	}
	if err = FlipPair(img, lbl, p.Flip); err != nil {
		return nil, nil, err
	}
	if img.DType != Float32 {
		if img, err = Cast(img, Float32); err != nil {
			return nil, nil, err
		}
	}
	if err = Brightness(img, p.Brightness); err != nil {
		return nil, nil, err
	}
	if err = AddNoise(img, p.Noise); err != nil {
		return nil, nil, err
	}
	if a.ImageType != 0 && a.ImageType != img.DType {
		if img, err = Cast(img, a.ImageType); err != nil {
			return nil, nil, err
		}
	}
	if a.LabelType != 0 && a.LabelType != lbl.DType {
		if lbl, err = Cast(lbl, a.LabelType); err != nil {
			return nil, nil, err
		}
	}
	return img, lbl, nil
}

// Run is Draw then Apply.
func (a Augment) Run(r *sampler.RNG, image, label *Volume) (img, lbl *Volume, p Params, err error) {
	if err = sameSpatial(image, label); err != nil {
		return nil, nil, Params{}, err
	}
	if p, err = a.Draw(r, label); err != nil {
		return nil, nil, Params{}, err
	}
	img, lbl, err = a.Apply(p, image, label)
	return img, lbl, p, err
}
