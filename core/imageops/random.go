package imageops

import (
	"fmt"
	"math"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// The random transforms follow torchvision's get_params draw for draw, with
// torch's generator replaced by the step's *sampler.RNG (pipeline.Ctx.Rand,
// seeded per (seed, epoch, index, step)): torch.rand/uniform_ become
// a + (b-a)*rng.Float64(), torch.randint(0, n) becomes rng.Below(n). The
// parameters are exposed so that a parity test can hand the same ones to
// torchvision's functional API.

func uniform(rng *sampler.RNG, a, b float64) float64 { return a + (b-a)*rng.Float64() }

// RandomFlip is RandomHorizontalFlip(p)'s and RandomVerticalFlip(p)'s
// draw: torch.rand(1) < p. It always consumes one value.
func RandomFlip(rng *sampler.RNG, p float64) bool { return rng.Float64() < p }

// RandomResizedCrop is torchvision's RandomResizedCrop((H, W), scale,
// ratio) with BILINEAR interpolation. Zero Scale or Ratio mean
// torchvision's defaults, (0.08, 1.0) and (3/4, 4/3). It is a plain value,
// safe to share.
type RandomResizedCrop struct {
	H, W  int
	Scale [2]float64
	Ratio [2]float64
}

func (t RandomResizedCrop) ranges() (scale, ratio [2]float64) {
	scale, ratio = t.Scale, t.Ratio
	if scale == [2]float64{} {
		scale = [2]float64{0.08, 1.0}
	}
	if ratio == [2]float64{} {
		ratio = [2]float64{3.0 / 4.0, 4.0 / 3.0}
	}
	return scale, ratio
}

// Validate reports a configuration torchvision would reject or that
// cannot give a crop: a non-positive size, or a range that is empty,
// reversed or not positive.
func (t RandomResizedCrop) Validate() error {
	scale, ratio := t.ranges()
	switch {
	case t.H <= 0 || t.W <= 0:
		return fmt.Errorf("%w: RandomResizedCrop size %dx%d", ErrBadArg, t.H, t.W)
	case !(scale[0] > 0 && scale[0] <= scale[1]):
		return fmt.Errorf("%w: RandomResizedCrop scale %v", ErrBadArg, scale)
	case !(ratio[0] > 0 && ratio[0] <= ratio[1]) || math.IsInf(ratio[1], 0):
		return fmt.Errorf("%w: RandomResizedCrop ratio %v", ErrBadArg, ratio)
	}
	return nil
}

// Params is RandomResizedCrop.get_params for an imgH x imgW image: up to
// 10 tries of area*uniform(scale) and exp(uniform(log ratio)), w =
// int(round(sqrt(a*r))), h = int(round(sqrt(a/r))) (Python's round: half
// to even), accepted when 0 < w <= imgW and 0 < h <= imgH, at
// (randint(0, imgH-h), randint(0, imgW-w)); else the center crop with the
// ratio clamped. It never panics; with an invalid t (see Validate) the
// rect may be outside the image, which the ops that use it reject.
func (t RandomResizedCrop) Params(rng *sampler.RNG, imgH, imgW int) Rect {
	scale, ratio := t.ranges()
	area := float64(imgH) * float64(imgW)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		target := area * uniform(rng, scale[0], scale[1])
		aspect := math.Exp(uniform(rng, logLo, logHi))
		w := roundInt(math.Sqrt(target * aspect))
		h := roundInt(math.Sqrt(target / aspect))
		if 0 < w && w <= imgW && 0 < h && h <= imgH {
			i := int(rng.Below(uint64(imgH - h + 1)))
			j := int(rng.Below(uint64(imgW - w + 1)))
			return Rect{Top: i, Left: j, H: h, W: w}
		}
	}
	inRatio := float64(imgW) / float64(imgH)
	w, h := imgW, imgH
	switch {
	case inRatio < min(ratio[0], ratio[1]):
		h = roundInt(float64(w) / min(ratio[0], ratio[1]))
	case inRatio > max(ratio[0], ratio[1]):
		w = roundInt(float64(h) * max(ratio[0], ratio[1]))
	}
	return Rect{Top: floorDiv(imgH-h, 2), Left: floorDiv(imgW-w, 2), H: h, W: w}
}

// Plan draws RandomResizedCrop's parameters and then, when flipP > 0,
// RandomHorizontalFlip(flipP)'s, as Compose([RandomResizedCrop(...),
// RandomHorizontalFlip(flipP)]) does, and returns the fused plan.
func (t RandomResizedCrop) Plan(rng *sampler.RNG, imgH, imgW int, flipP float64) Plan {
	p := Plan{Crop: t.Params(rng, imgH, imgW), ResizeH: t.H, ResizeW: t.W}
	if flipP > 0 {
		p.HFlip = RandomFlip(rng, flipP)
	}
	return p
}

// roundInt is Python's int(round(x)): half to even. Values outside int's
// range (from invalid inputs) saturate instead of being undefined.
func roundInt(x float64) int {
	r := math.RoundToEven(x)
	switch {
	case r != r:
		return 0
	case r >= math.MaxInt32:
		return math.MaxInt32
	case r <= math.MinInt32:
		return math.MinInt32
	}
	return int(r)
}

// floorDiv is Python's a // b for b > 0.
func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}

// RandomCropParams is RandomCrop((h, w)).get_params without padding: the
// whole image when it is exactly h x w (no draw), else a uniform offset,
// row first. An image smaller than the crop is an error, as in
// torchvision.
func RandomCropParams(rng *sampler.RNG, imgH, imgW, h, w int) (Rect, error) {
	if h <= 0 || w <= 0 || imgH < h || imgW < w {
		return Rect{}, fmt.Errorf("%w: random crop %dx%d from %dx%d image", ErrBadArg, w, h, imgW, imgH)
	}
	if imgH == h && imgW == w {
		return Rect{H: h, W: w}, nil
	}
	i := int(rng.Below(uint64(imgH - h + 1)))
	j := int(rng.Below(uint64(imgW - w + 1)))
	return Rect{Top: i, Left: j, H: h, W: w}, nil
}

// ColorJitter is torchvision's ColorJitter(brightness, contrast,
// saturation) on PIL images (no hue). A value v jitters by a factor drawn
// uniformly from [max(0, 1-v), 1+v]; 0 turns that adjustment off.
type ColorJitter struct {
	Brightness, Contrast, Saturation float64
}

// Validate rejects negative or non-finite values, as torchvision does.
func (j ColorJitter) Validate() error {
	for _, v := range [3]float64{j.Brightness, j.Contrast, j.Saturation} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: ColorJitter(%v, %v, %v)", ErrBadArg, j.Brightness, j.Contrast, j.Saturation)
		}
	}
	return nil
}

// Jitter names one of ColorJitter's adjustments.
type Jitter uint8

// The adjustments, numbered as torchvision's fn_idx numbers them.
const (
	JitterBrightness Jitter = iota
	JitterContrast
	JitterSaturation
)

// JitterParams is one draw of ColorJitter: the order to apply the three
// adjustments in and their factors. A factor of 1 leaves the image
// unchanged (and is what an adjustment that is off gets).
type JitterParams struct {
	Order                            [3]Jitter
	Brightness, Contrast, Saturation float64
}

// Params draws the order (a uniform permutation, as torch.randperm) and
// then the factors of the adjustments that are on, in torchvision's order.
func (j ColorJitter) Params(rng *sampler.RNG) JitterParams {
	p := JitterParams{Order: [3]Jitter{0, 1, 2}, Brightness: 1, Contrast: 1, Saturation: 1}
	for i := 2; i > 0; i-- {
		k := rng.Below(uint64(i + 1))
		p.Order[i], p.Order[k] = p.Order[k], p.Order[i]
	}
	draw := func(v float64) float64 {
		if v == 0 {
			return 1
		}
		return uniform(rng, max(0, 1-v), 1+v)
	}
	p.Brightness = draw(j.Brightness)
	p.Contrast = draw(j.Contrast)
	p.Saturation = draw(j.Saturation)
	return p
}

// Apply runs the adjustments on m in place, in p.Order (PIL semantics:
// each result is rounded to uint8 before the next, as torchvision on PIL
// images does).
func (p JitterParams) Apply(m *Image) error {
	for _, f := range p.Order {
		var err error
		switch f {
		case JitterBrightness:
			if p.Brightness != 1 {
				err = AdjustBrightness(m, p.Brightness)
			}
		case JitterContrast:
			if p.Contrast != 1 {
				err = AdjustContrast(m, p.Contrast)
			}
		case JitterSaturation:
			if p.Saturation != 1 {
				err = AdjustSaturation(m, p.Saturation)
			}
		default:
			err = fmt.Errorf("%w: jitter %d", ErrBadArg, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
