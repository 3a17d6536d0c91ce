package datasets

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
	"github.com/minatoloader/minatoloader/core/volume"
)

func init() {
	builders["npy_pairs"] = newVolumeSource
}

// volumeSource reads KiTS19-style pairs root/<case>_x.npy (image) and
// root/<case>_y.npy (label) and runs the 3D-UNet chain (package volume's
// Augment: crop, flips, brightness, noise, cast). Fields "image" and
// "label", both [C, D, H, W].
type volumeSource struct {
	pairs  [][2]string
	out    int64 // max_sample_bytes: each cropped volume
	read   volume.ReadOptions
	aug    volume.Augment
	fields []batch.FieldSpec
}

func (s *volumeSource) Len() int64                { return int64(len(s.pairs)) }
func (s *volumeSource) Fields() []batch.FieldSpec { return s.fields }
func (s *volumeSource) Steps() []pipeline.Step {
	return namedSteps([]pipeline.Step{{Name: "augment_3d", Fn: s.augment}}, func(i int64) string { return s.pairs[i][0] })
}

// volumePair is a sample's State between load and augment.
type volumePair struct{ image, label *volume.Volume }

func (s *volumeSource) Load(c *pipeline.Ctx, index int64, smp *pipeline.Sample) error {
	p := s.pairs[index]
	img, err := volume.ReadNpyFile(p[0], &s.read)
	if err != nil {
		return err
	}
	lbl, err := volume.ReadNpyFile(p[1], &s.read)
	if err != nil {
		return err
	}
	smp.State = volumePair{img, lbl}
	return nil
}

func (s *volumeSource) augment(c *pipeline.Ctx, smp *pipeline.Sample) error {
	p := smp.State.(volumePair)
	// The crop pads a volume smaller than its size: its output is bounded
	// by the crop size and the channels, not by the file.
	for k, v := range []*volume.Volume{p.image, p.label} {
		esize := int64(v.DType.Size())
		if k == 0 {
			esize = max(esize, 4, int64(s.aug.ImageType.Size())) // worked on in float32
		}
		n := esize
		for _, d := range v.Shape[:max(0, len(v.Shape)-3)] {
			n *= int64(d)
		}
		for _, d := range s.aug.Crop.Size {
			n *= int64(d)
		}
		if n > s.out {
			return outputError(s.pairs[smp.Index][k], "random_crop_3d", fmt.Sprintf("the crop %v of shape %v", s.aug.Crop.Size, v.Shape), n, s.out)
		}
	}
	img, lbl, _, err := s.aug.Run(&c.Rand, p.image, p.label)
	if err != nil {
		return fmt.Errorf("%q: %w", s.pairs[smp.Index][0], err)
	}
	for k, v := range []*volume.Volume{img, lbl} {
		f := &smp.Fields[k]
		// The file's own dtype, not the spec's: a label of another dtype
		// than the first file's is then caught before batching.
		f.DType, f.Data, f.Shape = dtypeOf(v.DType), v.Data, int64s(v.Shape)
	}
	return nil
}

func int64s(s []int) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

// volOp is one parsed op of a volume chain.
type volOp struct {
	Op          string   `json:"op"`
	Size        []int    `json:"size"`
	ForegroundP float64  `json:"foreground_p"`
	P           *float64 `json:"p"`
	Factor      float64  `json:"factor"`
	Std         float64  `json:"std"`
	DType       string   `json:"dtype"`
}

// volumeOrder is the order Augment applies its ops in; a chain lists a
// subsequence of it.
var volumeOrder = []string{"random_crop_3d", "random_flip_3d", "random_brightness", "gaussian_noise", "cast"}

func newVolumeSource(d config.Dataset) (pipeline.Source, error) {
	s := &volumeSource{out: d.MaxSampleBytes, read: volume.ReadOptions{MaxBytes: d.MaxFileBytes}}
	entries, err := os.ReadDir(d.Root)
	if err != nil {
		return nil, fmt.Errorf("dataset root %q: %w", d.Root, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, "_x.npy") {
			continue
		}
		y := filepath.Join(d.Root, strings.TrimSuffix(name, "_x.npy")+"_y.npy")
		if _, err := os.Stat(y); err != nil {
			return nil, fmt.Errorf("dataset root %q: %s has no label %s", d.Root, name, filepath.Base(y))
		}
		s.pairs = append(s.pairs, [2]string{filepath.Join(d.Root, name), y})
	}
	if len(s.pairs) == 0 {
		return nil, fmt.Errorf("dataset root %q: no <case>_x.npy / <case>_y.npy pairs", d.Root)
	}
	// Every op off unless listed; the image is worked on in float32.
	s.aug = volume.Augment{ImageType: volume.Float32}
	last := -1
	haveCrop := false
	for i, raw := range d.Transforms {
		name, err := opName(raw, i)
		if err != nil {
			return nil, err
		}
		pos := slices.Index(volumeOrder, name)
		if pos < 0 {
			return nil, opError(i, name, "unknown volume op (known, in this order: %v)", volumeOrder)
		}
		if pos <= last {
			return nil, opError(i, name, "volume ops run in the order %v; list each at most once, in that order", volumeOrder)
		}
		last = pos
		var o volOp
		if err := decodeOp(raw, i, name, &o); err != nil {
			return nil, err
		}
		p := 0.5
		if o.P != nil {
			p = *o.P
		}
		if !(p >= 0 && p <= 1) {
			return nil, opError(i, name, "p must be in [0, 1], got %v", p)
		}
		switch name {
		case "random_crop_3d":
			if len(o.Size) != 3 || o.Size[0] < 1 || o.Size[1] < 1 || o.Size[2] < 1 {
				return nil, opError(i, name, "size must be [d, h, w] of ints >= 1, got %v", o.Size)
			}
			if o.Size[0] > 1<<15 || o.Size[1] > 1<<15 || o.Size[2] > 1<<15 ||
				4*int64(o.Size[0])*int64(o.Size[1])*int64(o.Size[2]) > d.MaxSampleBytes {
				return nil, opError(i, name, "size %v: more than max_sample_bytes (%d) as float32", o.Size, d.MaxSampleBytes)
			}
			if !(o.ForegroundP >= 0 && o.ForegroundP <= 1) {
				return nil, opError(i, name, "foreground_p must be in [0, 1], got %v", o.ForegroundP)
			}
			s.aug.Crop = volume.ForegroundCrop{Size: [3]int{o.Size[0], o.Size[1], o.Size[2]}, Prob: o.ForegroundP}
			haveCrop = true
		case "random_flip_3d":
			s.aug.Flip = volume.RandomFlip{Prob: p}
		case "random_brightness":
			if !(o.Factor >= 0 && o.Factor <= 1) {
				return nil, opError(i, name, "factor must be in [0, 1], got %v", o.Factor)
			}
			s.aug.Brightness = volume.RandomBrightness{Factor: o.Factor, Prob: p}
		case "gaussian_noise":
			if !(o.Std >= 0) {
				return nil, opError(i, name, "std must be >= 0, got %v", o.Std)
			}
			s.aug.Noise = volume.GaussianNoise{Std: o.Std, Prob: p}
		case "cast":
			t, err := volume.ParseDType(o.DType)
			if err != nil {
				return nil, opError(i, name, "%v", err)
			}
			s.aug.ImageType = t
		}
	}
	if !haveCrop {
		return nil, fmt.Errorf("config: option \"dataset.transforms\": volumes differ in size: the chain needs random_crop_3d to make them uniform")
	}
	// Field shapes: the first pair's channels and dtypes, the crop's size.
	img, err := header(s.pairs[0][0], &s.read)
	if err != nil {
		return nil, err
	}
	lbl, err := header(s.pairs[0][1], &s.read)
	if err != nil {
		return nil, err
	}
	if len(img.Shape) < 3 || len(lbl.Shape) < 3 {
		return nil, fmt.Errorf("%q: volumes need at least 3 dimensions (D, H, W), got %v and %v", s.pairs[0][0], img.Shape, lbl.Shape)
	}
	shape := func(h volume.NpyHeader) []int64 {
		out := int64s(h.Shape[:len(h.Shape)-3])
		return append(out, int64s(s.aug.Crop.Size[:])...)
	}
	s.fields = []batch.FieldSpec{
		{Name: "image", DType: dtypeOf(s.aug.ImageType), Shape: shape(img)},
		{Name: "label", DType: dtypeOf(lbl.DType), Shape: shape(lbl)},
	}
	if err := batch.Validate(s.fields); err != nil {
		return nil, err
	}
	return s, nil
}

func header(path string, o *volume.ReadOptions) (volume.NpyHeader, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return volume.NpyHeader{}, err
	}
	defer f.Close()
	h, err := volume.ReadNpyHeader(f, o)
	if err != nil {
		return h, fmt.Errorf("%q: %w", path, err)
	}
	return h, nil
}

// dtypeOf maps a volume dtype to the batch's.
func dtypeOf(t volume.DType) config.DType {
	d, ok := config.DTypes[t.String()]
	if !ok {
		return config.DType{}
	}
	return d
}
