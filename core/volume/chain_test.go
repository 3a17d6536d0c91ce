package volume

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// augCase is one entry of testdata/numpy/aug_cases.json.
type augCase struct {
	Name         string   `json:"name"`
	Keys         []uint64 `json:"keys"`
	Size         [3]int   `json:"size"`
	CropProb     float64  `json:"crop_prob"`
	FlipProb     float64  `json:"flip_prob"`
	BrightFactor float64  `json:"bright_factor"`
	BrightProb   float64  `json:"bright_prob"`
	NoiseStd     float64  `json:"noise_std"`
	NoiseProb    float64  `json:"noise_prob"`
	ImagePad     float64  `json:"image_pad"`
	Params       Params   `json:"params"`
}

// The numpy re-implementation in testdata/numpy/make_fixtures.py, given
// only the documented draw order and the same RNG keys, picks the same
// parameters and produces the same patches.
func TestNumpyAugmentParity(t *testing.T) {
	dir := filepath.Join("testdata", "numpy")
	raw, err := os.ReadFile(filepath.Join(dir, "aug_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []augCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	image, err := ReadNpyFile(filepath.Join(dir, "aug_image.npy"), &ReadOptions{DType: Float32, Rank: 4})
	if err != nil {
		t.Fatal(err)
	}
	label, err := ReadNpyFile(filepath.Join(dir, "aug_label.npy"), &ReadOptions{DType: Uint8, Shape: image.Shape})
	if err != nil {
		t.Fatal(err)
	}
	var sawFg, sawUniform, sawBright, sawNoise, sawPad bool
	for _, c := range cases {
		a := Augment{
			Crop:       ForegroundCrop{Size: c.Size, Prob: c.CropProb},
			Flip:       RandomFlip{Prob: c.FlipProb},
			Brightness: RandomBrightness{Factor: c.BrightFactor, Prob: c.BrightProb},
			Noise:      GaussianNoise{Std: c.NoiseStd, Prob: c.NoiseProb},
			ImagePad:   Pad{Value: c.ImagePad},
			ImageType:  Float32,
			LabelType:  Uint8,
		}
		r := sampler.NewRNG(c.Keys...)
		img, lbl, p, err := a.Run(&r, image, label)
		if err != nil {
			t.Fatal(err)
		}
		if p != c.Params {
			t.Errorf("%s: params\n got  %+v\n numpy %+v", c.Name, p, c.Params)
			continue
		}
		wantImg, err := ReadNpyFile(filepath.Join(dir, c.Name+"_image.npy"), nil)
		if err != nil {
			t.Fatal(err)
		}
		wantLbl, err := ReadNpyFile(filepath.Join(dir, c.Name+"_label.npy"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !Equal(lbl, wantLbl) {
			t.Errorf("%s: label differs from numpy", c.Name)
		}
		g, w := float32s(t, img), float32s(t, wantImg)
		if len(g) != len(w) {
			t.Fatalf("%s: image has %d voxels, numpy %d", c.Name, len(g), len(w))
		}
		for i := range g {
			// numpy's log/sin/cos may differ from Go's in the last bit.
			if math.Abs(float64(g[i]-w[i])) > 1e-6*max(1, math.Abs(float64(w[i]))) {
				t.Errorf("%s: image[%d] = %v, numpy %v", c.Name, i, g[i], w[i])
				break
			}
		}
		sawFg = sawFg || p.Crop.Foreground
		sawUniform = sawUniform || !p.Crop.Foreground
		sawBright = sawBright || p.Brightness.Apply
		sawNoise = sawNoise || p.Noise.Apply
		sawPad = sawPad || p.Crop.Start[1] < 0 || p.Crop.Start[2] < 0
	}
	if !(sawFg && sawUniform && sawBright && sawNoise && sawPad) {
		t.Errorf("fixtures miss a branch: foreground %v uniform %v brightness %v noise %v padding %v", sawFg, sawUniform, sawBright, sawNoise, sawPad)
	}
}

func TestAugmentApplyReproducesRun(t *testing.T) {
	sp := [3]int{10, 12, 14}
	image := randomVolume(t, Int16, 4, 1, sp[0], sp[1], sp[2]) // CT-like, converted to float32 inside
	label := labelWith(t, Uint8, sp, map[[3]int]float64{{2, 3, 4}: 1, {9, 11, 0}: 2})
	imgOrig, lblOrig := image.Clone(), label.Clone()
	a := MLPerfAugment([3]int{8, 8, 8})
	a.Brightness.Prob, a.Noise.Prob = 0.5, 0.5
	for seed := uint64(0); seed < 40; seed++ {
		r := sampler.NewRNG(seed)
		img, lbl, p, err := a.Run(&r, image, label)
		if err != nil {
			t.Fatal(err)
		}
		if img.DType != Float32 || lbl.DType != Uint8 || len(img.Shape) != 4 || img.Shape[1] != 8 {
			t.Fatalf("got %s %v and %s %v", img.DType, img.Shape, lbl.DType, lbl.Shape)
		}
		// Params survive JSON and give the same bytes without an RNG.
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var q Params
		if err := json.Unmarshal(b, &q); err != nil || q != p {
			t.Fatalf("JSON round trip: %v %+v", err, q)
		}
		img2, lbl2, err := a.Apply(q, image, label)
		if err != nil {
			t.Fatal(err)
		}
		if !Equal(img, img2) || !Equal(lbl, lbl2) {
			t.Fatalf("seed %d: Apply(params) differs from Run", seed)
		}
		// And the same seed gives the same bytes.
		r = sampler.NewRNG(seed)
		img3, lbl3, _, err := a.Run(&r, image, label)
		if err != nil || !Equal(img, img3) || !Equal(lbl, lbl3) {
			t.Fatalf("seed %d: not deterministic (%v)", seed, err)
		}
	}
	if !Equal(image, imgOrig) || !Equal(label, lblOrig) {
		t.Error("Augment modified its inputs")
	}
}

func TestAugmentErrors(t *testing.T) {
	image := randomVolume(t, Float32, 1, 1, 6, 6, 6)
	label := labelWith(t, Uint8, [3]int{6, 6, 6}, nil)
	r := sampler.NewRNG(0)
	a := MLPerfAugment([3]int{4, 4, 4})
	if _, _, _, err := a.Run(&r, image, randomVolume(t, Uint8, 1, 1, 6, 6, 5)); !errors.Is(err, ErrShape) {
		t.Errorf("mismatched pair: got %v", err)
	}
	bad := a
	bad.ImageType = 99
	if _, _, _, err := bad.Run(&r, image, label); !errors.Is(err, ErrDType) {
		t.Errorf("bad output type: got %v", err)
	}
	bad = a
	bad.Flip.Prob = 3
	if _, _, _, err := bad.Run(&r, image, label); !errors.Is(err, ErrParams) {
		t.Errorf("bad flip prob: got %v", err)
	}
	bad = a
	bad.Noise.Std = -1
	if _, _, _, err := bad.Run(&r, image, label); !errors.Is(err, ErrParams) {
		t.Errorf("bad noise std: got %v", err)
	}
}
