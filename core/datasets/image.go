package datasets

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/batch"
	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/imageops"
	"github.com/minatoloader/minatoloader/core/pipeline"
)

func init() {
	builders["image_folder"] = func(d config.Dataset) (pipeline.Source, error) {
		exts := d.Extensions
		if len(exts) == 0 {
			exts = ImageExtensions
		}
		classes, files, err := ScanFolder(d.Root, exts)
		if err != nil {
			return nil, err
		}
		return newImageSource(d, files, classes)
	}
	builders["file_list"] = func(d config.Dataset) (pipeline.Source, error) {
		if d.Samples != nil {
			if d.List != "" {
				return nil, fmt.Errorf("config: option \"dataset.samples\": give either samples or list, not both")
			}
			files, err := ParseSamples(d.Samples)
			if err != nil {
				return nil, err
			}
			return newImageSource(d, files, nil)
		}
		if d.List == "" {
			return nil, fmt.Errorf("config: option \"dataset.list\": a file_list dataset needs the path of a .csv or .jsonl list, or samples")
		}
		files, err := ReadList(d.List)
		if err != nil {
			return nil, err
		}
		return newImageSource(d, files, nil)
	}
}

// jpegDecoder is the JPEG decoder image datasets use (nil: image/jpeg).
// The C ABI sets libjpeg-turbo's when the library was built with it.
var jpegDecoder imageops.JPEGDecoder

// UseJPEGDecoder makes image datasets opened from now on decode JPEG with
// d. Call it before opening datasets (it is not synchronized with Open).
func UseJPEGDecoder(d imageops.JPEGDecoder) { jpegDecoder = d }

// JPEGDecoderName names the decoder UseJPEGDecoder set, or "image/jpeg".
func JPEGDecoderName() string {
	if n, ok := jpegDecoder.(interface{ Name() string }); ok {
		return n.Name()
	}
	return "image/jpeg"
}

// imageSource decodes image files to RGB and runs an image chain. Its
// fields are "image" (CHW float32 after ToTensor, uint8 after PILToTensor)
// and "label" (int64).
type imageSource struct {
	files   []File
	classes []string
	limit   int64 // max_file_bytes
	out     int64 // max_sample_bytes
	dec     *imageops.Decoder
	fields  []batch.FieldSpec
	steps   []pipeline.Step
}

func (s *imageSource) Len() int64                { return int64(len(s.files)) }
func (s *imageSource) Fields() []batch.FieldSpec { return s.fields }
func (s *imageSource) Steps() []pipeline.Step    { return s.steps }
func (s *imageSource) Classes() []string         { return s.classes }

func (s *imageSource) filePath(index int64) string { return s.files[index].Path }

// Load reads the file (the chain's first step decodes it) and the label.
func (s *imageSource) Load(c *pipeline.Ctx, index int64, smp *pipeline.Sample) error {
	f := s.files[index]
	data, err := readFile(f.Path, s.limit)
	if err != nil {
		return err
	}
	smp.State = data
	binary.LittleEndian.PutUint64(smp.Fields[1].Data, uint64(f.Label))
	return nil
}

// imgOp is one parsed op of an image chain.
type imgOp struct {
	Op         string     `json:"op"`
	Size       []int      `json:"size"`
	Scale      [2]float64 `json:"scale"`
	Ratio      [2]float64 `json:"ratio"`
	P          *float64   `json:"p"`
	Brightness float64    `json:"brightness"`
	Contrast   float64    `json:"contrast"`
	Saturation float64    `json:"saturation"`
	Mean       []float64  `json:"mean"`
	Std        []float64  `json:"std"`
}

func (o imgOp) prob() float64 {
	if o.P == nil {
		return 0.5
	}
	return *o.P
}

// hw reads a [h, w] or [s] size (s: square for crops).
func (o imgOp) hw() (h, w int) {
	if len(o.Size) == 1 {
		return o.Size[0], o.Size[0]
	}
	return o.Size[0], o.Size[1]
}

var imageOps = []string{"resize", "center_crop", "random_crop", "random_resized_crop",
	"random_horizontal_flip", "random_vertical_flip", "color_jitter", "to_tensor", "pil_to_tensor", "normalize"}

// parseImageChain reads and checks the chain, and follows the image's size
// through it: the output must have a fixed size and be a tensor. A fixed
// size that an op makes (a resize, a crop that pads) must fit in
// maxBytes as RGB bytes (max_sample_bytes); a size that depends on the
// image (resize to a smaller edge) is checked per sample.
func parseImageChain(raws []json.RawMessage, pad bool, maxBytes int64) (ops []imgOp, out batch.FieldSpec, err error) {
	h, w, known := 0, 0, false // the image size, when fixed
	tensor := ""               // "float32" after to_tensor, "uint8" after pil_to_tensor
	for i, raw := range raws {
		name, err := opName(raw, i)
		if err != nil {
			return nil, out, err
		}
		if !slices.Contains(imageOps, name) {
			return nil, out, opError(i, name, "unknown image op (known: %v)", imageOps)
		}
		var o imgOp
		if err := decodeOp(raw, i, name, &o); err != nil {
			return nil, out, err
		}
		needSize := func(allowOne bool) error {
			if len(o.Size) == 2 || (allowOne && len(o.Size) == 1) {
				for _, v := range o.Size {
					if v < 1 || v > 1<<15 {
						return opError(i, name, "size %v: every value must be in [1, 32768]", o.Size)
					}
				}
				if h, w := o.hw(); len(o.Size) == 2 || name != "resize" {
					if b := 3 * int64(h) * int64(w); b > maxBytes {
						return opError(i, name, "size %v: %d RGB bytes, more than max_sample_bytes (%d)", o.Size, b, maxBytes)
					}
				}
				return nil
			}
			return opError(i, name, "size must be [h, w]%s, got %v", map[bool]string{true: " or [s]", false: ""}[allowOne], o.Size)
		}
		if tensor != "" && name != "normalize" {
			return nil, out, opError(i, name, "comes after %s: image ops must come before the tensor conversion", map[string]string{"float32": "to_tensor", "uint8": "pil_to_tensor"}[tensor])
		}
		switch name {
		case "resize":
			if err := needSize(true); err != nil {
				return nil, out, err
			}
			if len(o.Size) == 2 {
				h, w, known = o.Size[0], o.Size[1], true
			} else {
				known = false // the smaller edge: depends on the image
			}
		case "center_crop", "random_crop", "random_resized_crop":
			if err := needSize(true); err != nil {
				return nil, out, err
			}
			h, w = o.hw()
			known = true
			if name == "random_resized_crop" {
				if err := (imageops.RandomResizedCrop{H: h, W: w, Scale: o.Scale, Ratio: o.Ratio}).Validate(); err != nil {
					return nil, out, opError(i, name, "%v", err)
				}
			}
		case "random_horizontal_flip", "random_vertical_flip":
			if p := o.prob(); !(p >= 0 && p <= 1) {
				return nil, out, opError(i, name, "p must be in [0, 1], got %v", p)
			}
		case "color_jitter":
			if err := (imageops.ColorJitter{Brightness: o.Brightness, Contrast: o.Contrast, Saturation: o.Saturation}).Validate(); err != nil {
				return nil, out, opError(i, name, "%v", err)
			}
		case "to_tensor":
			tensor = "float32"
		case "pil_to_tensor":
			tensor = "uint8"
		case "normalize":
			if tensor != "float32" {
				return nil, out, opError(i, name, "needs a float tensor: put it after to_tensor")
			}
			if _, err := imageops.NewNormalize(o.Mean, o.Std); err != nil {
				return nil, out, opError(i, name, "%v", err)
			}
			if len(o.Mean) != 3 {
				return nil, out, opError(i, name, "images are RGB: give 3 means and 3 stds, got %d", len(o.Mean))
			}
		}
		ops = append(ops, o)
	}
	if tensor == "" {
		return nil, out, fmt.Errorf("config: option \"dataset.transforms\": the chain must end with to_tensor or pil_to_tensor (optionally then normalize) so that samples can be batched")
	}
	if !known && !pad {
		return nil, out, fmt.Errorf("config: option \"dataset.transforms\": the images would not all have the same size: add center_crop, random_crop, random_resized_crop or resize to [h, w] before the tensor conversion, or set collate to \"pad\"")
	}
	out = batch.FieldSpec{Name: "image", DType: config.DTypes[tensor], Shape: []int64{3, int64(h), int64(w)}}
	if !known {
		out.Shape = []int64{3, -1, -1} // padded per batch
	}
	return ops, out, nil
}

func newImageSource(d config.Dataset, files []File, classes []string) (*imageSource, error) {
	ops, out, err := parseImageChain(d.Transforms, d.Collate == "pad", d.MaxSampleBytes)
	if err != nil {
		return nil, err
	}
	s := &imageSource{
		files:   files,
		classes: classes,
		limit:   d.MaxFileBytes,
		out:     d.MaxSampleBytes,
		dec:     imageops.NewDecoder(&imageops.DecodeOptions{MaxPixels: d.MaxPixels, Mode: imageops.RGB, JPEG: jpegDecoder}),
		fields:  []batch.FieldSpec{out, {Name: "label", DType: config.DTypes["int64"]}},
	}
	if d.DecodeScale {
		if step, ok := s.scaledFused(ops); ok {
			// Two steps, as the unscaled chain has: the fused step draws
			// from the same generator (step 2) and so the same parameters.
			s.steps = namedSteps([]pipeline.Step{{Name: "decode_header", Fn: s.decodeHeader}, step}, s.filePath)
			return s, nil
		}
	}
	s.steps = namedSteps(append([]pipeline.Step{{Name: "decode", Fn: s.decode}}, s.compileImageOps(ops)...), s.filePath)
	return s, nil
}

// scaledFused is the fused chain with the decode folded in: the plan is
// drawn on the header's full size (as torchvision draws it), the JPEG is
// decoded at the smallest DCT scale that keeps the plan's crop at or above
// the output resolution, and the crop is mapped onto it. ok is false when
// the chain has no fused form.
func (s *imageSource) scaledFused(ops []imgOp) (pipeline.Step, bool) {
	fused := s.compileImageOps(ops)
	if len(fused) != 1 || !strings.HasSuffix(fused[0].Name, "(fused)") {
		return pipeline.Step{}, false
	}
	var norm *imageops.Normalize
	if last := ops[len(ops)-1]; last.Op == "normalize" {
		norm, _ = imageops.NewNormalize(last.Mean, last.Std)
	}
	var plan func(c *pipeline.Ctx, h, w int) imageops.Plan
	if ops[0].Op == "random_resized_crop" {
		oh, ow := ops[0].hw()
		rrc := imageops.RandomResizedCrop{H: oh, W: ow, Scale: ops[0].Scale, Ratio: ops[0].Ratio}
		flipP := 0.0
		if ops[1].Op == "random_horizontal_flip" {
			flipP = ops[1].prob()
		}
		plan = func(c *pipeline.Ctx, h, w int) imageops.Plan { return rrc.Plan(&c.Rand, h, w, flipP) }
	} else {
		size := ops[0].Size[0]
		ch, cw := ops[1].hw()
		plan = func(c *pipeline.Ctx, h, w int) imageops.Plan {
			return imageops.ResizeCenterCropPlan(h, w, size, ch, cw)
		}
	}
	return pipeline.Step{Name: "decode+" + fused[0].Name + " (DCT-scaled)", Fn: func(c *pipeline.Ctx, smp *pipeline.Sample) error {
		hd, ok := smp.State.(encoded)
		if !ok {
			return fmt.Errorf("decode: no parsed header (internal)")
		}
		data, info, path := hd.data, hd.info, s.files[smp.Index].Path
		p := plan(c, info.H, info.W)
		// The crop must keep at least ResizeH x ResizeW pixels.
		scale := min(1, max(float64(p.ResizeH)/float64(p.Crop.H), float64(p.ResizeW)/float64(p.Crop.W)))
		minW, minH := int(math.Ceil(float64(info.W)*scale)), int(math.Ceil(float64(info.H)*scale))
		img := &imageops.Image{}
		if _, err := s.dec.DecodeScaled(img, data, minW, minH); err != nil {
			return fmt.Errorf("%q: %w", path, err)
		}
		return fusedInto(smp, img, p.ScaleCrop(info.H, info.W, img.H, img.W), norm)
	}}, true
}

// encoded is a file whose header was read, waiting for a scaled decode.
type encoded struct {
	data []byte
	info imageops.Info
}

// decodeHeader reads and checks the image header (format, size against the
// pixel limit); the pixels are decoded by the next, fused step.
func (s *imageSource) decodeHeader(c *pipeline.Ctx, smp *pipeline.Sample) error {
	data, ok := smp.State.([]byte)
	if !ok {
		return fmt.Errorf("decode: no encoded bytes (internal)")
	}
	info, err := s.dec.Config(data)
	if err != nil {
		return fmt.Errorf("%q: %w", s.files[smp.Index].Path, err)
	}
	smp.State = encoded{data, info}
	return nil
}

func (s *imageSource) decode(c *pipeline.Ctx, smp *pipeline.Sample) error {
	data, ok := smp.State.([]byte)
	if !ok {
		return fmt.Errorf("decode: no encoded bytes (internal)")
	}
	img := &imageops.Image{}
	if _, err := s.dec.Decode(img, data); err != nil {
		return fmt.Errorf("%q: %w", s.files[smp.Index].Path, err)
	}
	if isGray16PNG(data) {
		if err := clipGray16(img, data); err != nil {
			return fmt.Errorf("%q: %w", s.files[smp.Index].Path, err)
		}
	}
	smp.State = img
	return nil
}

// isGray16PNG: a PNG whose IHDR says 16-bit grayscale (color type 0),
// which PIL opens as mode "I;16".
func isGray16PNG(data []byte) bool {
	return imageops.Sniff(data) == imageops.FormatPNG && len(data) >= 26 &&
		string(data[12:16]) == "IHDR" && data[24] == 16 && data[25] == 0
}

// clipGray16 rewrites img (decoded RGB of a 16-bit gray PNG, high bytes) as
// PIL's convert("RGB") of mode "I;16" does: every value above 255 is 255,
// not its high byte. The file is decoded again with image/png (rare files).
func clipGray16(img *imageops.Image, data []byte) error {
	m, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("decode png: %w", err)
	}
	b := m.Bounds()
	if b.Dx() != img.W || b.Dy() != img.H || img.C != 3 {
		return fmt.Errorf("decode png: 16-bit gray: %dx%d, decoded %dx%dx%d (internal)", b.Dx(), b.Dy(), img.W, img.H, img.C)
	}
	var value func(x, y int) uint16
	switch g := m.(type) {
	case *image.Gray16:
		value = func(x, y int) uint16 { return g.Gray16At(b.Min.X+x, b.Min.Y+y).Y }
	case *image.NRGBA64: // with a tRNS chunk: the gray value, alpha aside
		value = func(x, y int) uint16 { return g.NRGBA64At(b.Min.X+x, b.Min.Y+y).R }
	default:
		return fmt.Errorf("decode png: 16-bit gray decoded as %T (internal)", m)
	}
	for y := 0; y < img.H; y++ {
		row := img.Row(y)
		for x := 0; x < img.W; x++ {
			v := uint8(min(value(x, y), 255))
			row[3*x], row[3*x+1], row[3*x+2] = v, v, v
		}
	}
	return nil
}

var scratchPool = sync.Pool{New: func() any { return new(imageops.Scratch) }}

// compileImageOps turns the parsed chain into steps. Two common chains run
// fused, in one pass that writes the batch slot (same values, see
// imageops.Scratch.Fused): RandomResizedCrop [+ RandomHorizontalFlip] +
// ToTensor [+ Normalize] (training) and Resize(s) + CenterCrop + ToTensor
// [+ Normalize] (evaluation). Each other op is one step.
func (s *imageSource) compileImageOps(ops []imgOp) []pipeline.Step {
	names := make([]string, len(ops))
	for i, o := range ops {
		names[i] = o.Op
	}
	norm := func(tail []imgOp) *imageops.Normalize {
		if len(tail) > 0 && tail[len(tail)-1].Op == "normalize" {
			n, _ := imageops.NewNormalize(tail[len(tail)-1].Mean, tail[len(tail)-1].Std) // checked by parse
			return n
		}
		return nil
	}
	isTail := func(rest []string) bool {
		return slices.Equal(rest, []string{"to_tensor"}) || slices.Equal(rest, []string{"to_tensor", "normalize"})
	}
	switch {
	case len(ops) >= 2 && names[0] == "random_resized_crop" && (isTail(names[1:]) || (names[1] == "random_horizontal_flip" && isTail(names[2:]))):
		h, w := ops[0].hw()
		rrc := imageops.RandomResizedCrop{H: h, W: w, Scale: ops[0].Scale, Ratio: ops[0].Ratio}
		flipP := 0.0
		if names[1] == "random_horizontal_flip" {
			flipP = ops[1].prob()
		}
		n := norm(ops)
		return []pipeline.Step{{Name: "random_resized_crop+flip+to_tensor (fused)", Fn: func(c *pipeline.Ctx, smp *pipeline.Sample) error {
			img := smp.State.(*imageops.Image)
			plan := rrc.Plan(&c.Rand, img.H, img.W, flipP)
			return fusedInto(smp, img, plan, n)
		}}}
	case len(ops) >= 3 && names[0] == "resize" && len(ops[0].Size) == 1 && names[1] == "center_crop" && isTail(names[2:]):
		size := ops[0].Size[0]
		h, w := ops[1].hw()
		n := norm(ops)
		return []pipeline.Step{{Name: "resize+center_crop+to_tensor (fused)", Fn: func(c *pipeline.Ctx, smp *pipeline.Sample) error {
			img := smp.State.(*imageops.Image)
			return fusedInto(smp, img, imageops.ResizeCenterCropPlan(img.H, img.W, size, h, w), n)
		}}}
	}
	var steps []pipeline.Step
	for i := 0; i < len(ops); i++ {
		o := ops[i]
		if o.Op == "to_tensor" {
			var n *imageops.Normalize
			if i+1 < len(ops) {
				n = norm(ops[i+1:])
				i++
			}
			steps = append(steps, pipeline.Step{Name: "to_tensor", Fn: func(c *pipeline.Ctx, smp *pipeline.Sample) error {
				img := smp.State.(*imageops.Image)
				sized(smp, img, 4)
				dst := floats(smp.Fields[0].Data)
				if err := imageops.ToTensor(dst, img); err != nil {
					return err
				}
				if n != nil {
					return n.Apply(dst)
				}
				return nil
			}})
			continue
		}
		steps = append(steps, pipeline.Step{Name: o.Op, Fn: s.imageStep(o)})
	}
	return steps
}

// sized gives the image field a buffer of img's size when the field's size
// varies (the padding collate); a fixed field keeps its pooled buffer.
func sized(smp *pipeline.Sample, img *imageops.Image, esize int) {
	f := &smp.Fields[0]
	if slices.Contains(f.Shape, -1) {
		f.Shape = []int64{int64(img.C), int64(img.H), int64(img.W)}
		f.Data = make([]byte, img.C*img.H*img.W*esize)
	}
}

// fusedInto runs a fused plan into the sample's image field.
func fusedInto(smp *pipeline.Sample, img *imageops.Image, plan imageops.Plan, n *imageops.Normalize) error {
	s := scratchPool.Get().(*imageops.Scratch)
	defer scratchPool.Put(s)
	return s.Fused(floats(smp.Fields[0].Data), img, plan, n)
}

// floats views a float32 field's bytes.
func floats(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// imageStep is one unfused op on the sample's *imageops.Image.
func (s *imageSource) imageStep(o imgOp) func(c *pipeline.Ctx, smp *pipeline.Sample) error {
	return func(c *pipeline.Ctx, smp *pipeline.Sample) error {
		img := smp.State.(*imageops.Image)
		switch o.Op {
		case "resize":
			h, w := o.hw()
			if len(o.Size) == 1 {
				h, w = imageops.ResizeSize(img.H, img.W, o.Size[0])
				// The longer edge follows the aspect ratio: a 1 x 100000
				// image resized to a smaller edge of 1000 would be 1000 x
				// 10^8.
				if b := int64(img.C) * int64(h) * int64(w); b > s.out {
					return outputError(s.files[smp.Index].Path, o.Op, fmt.Sprintf("%dx%d -> %dx%d", img.W, img.H, w, h), b, s.out)
				}
			}
			return replace(smp, func(dst *imageops.Image) error {
				s := scratchPool.Get().(*imageops.Scratch)
				defer scratchPool.Put(s)
				return s.Resize(dst, img, h, w)
			})
		case "center_crop":
			h, w := o.hw()
			return replace(smp, func(dst *imageops.Image) error { return imageops.CenterCrop(dst, img, h, w) })
		case "random_crop":
			h, w := o.hw()
			r, err := imageops.RandomCropParams(&c.Rand, img.H, img.W, h, w)
			if err != nil {
				return err
			}
			return crop(smp, img, r)
		case "random_resized_crop":
			h, w := o.hw()
			r := imageops.RandomResizedCrop{H: h, W: w, Scale: o.Scale, Ratio: o.Ratio}.Params(&c.Rand, img.H, img.W)
			view, err := img.View(r)
			if err != nil {
				return err
			}
			return replace(smp, func(dst *imageops.Image) error {
				s := scratchPool.Get().(*imageops.Scratch)
				defer scratchPool.Put(s)
				return s.Resize(dst, &view, h, w)
			})
		case "random_horizontal_flip":
			if imageops.RandomFlip(&c.Rand, o.prob()) {
				return imageops.HFlip(img)
			}
		case "random_vertical_flip":
			if imageops.RandomFlip(&c.Rand, o.prob()) {
				return imageops.VFlip(img)
			}
		case "color_jitter":
			j := imageops.ColorJitter{Brightness: o.Brightness, Contrast: o.Contrast, Saturation: o.Saturation}
			return j.Params(&c.Rand).Apply(img)
		case "pil_to_tensor":
			sized(smp, img, 1)
			return imageops.PILToTensor(smp.Fields[0].Data, img)
		default:
			return fmt.Errorf("image op %q cannot run here (internal)", o.Op)
		}
		return nil
	}
}

// replace sets the sample's image to what f writes into a new image.
func replace(smp *pipeline.Sample, f func(dst *imageops.Image) error) error {
	dst := &imageops.Image{}
	if err := f(dst); err != nil {
		return err
	}
	smp.State = dst
	return nil
}

// crop keeps rect r of img.
func crop(smp *pipeline.Sample, img *imageops.Image, r imageops.Rect) error {
	view, err := img.View(r)
	if err != nil {
		return err
	}
	return replace(smp, func(dst *imageops.Image) error { return view.CopyTo(dst) })
}
