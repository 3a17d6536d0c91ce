// Package datasets builds the native sources a loader can run: the
// synthetic source, and file datasets whose samples are read from disk and
// run through a chain of native transforms.
//
//	kind          samples                           fields
//	synthetic     generated (package synth)         data, label
//	image_folder  root/<class>/.../<image>          image, label
//	file_list     a .csv/.jsonl of (path, label)    image, label
//	audio_folder  root/<class>/.../<file>.wav       features, length, label
//	npy_pairs     root/<case>_x.npy + <case>_y.npy  image, label (volumes)
//
// The chain is dataset.transforms, a list of {"op": name, params...}; each
// op becomes one scheduler step (so the fast/slow lanes act between ops), and
// an error names the op by its position ("dataset.transforms[2]").
package datasets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
	"github.com/minatoloader/minatoloader/core/synth"
)

// Defaults of the limits.
const (
	DefaultMaxPixels    = 89478485 // PIL's Image.MAX_IMAGE_PIXELS
	DefaultMaxFileBytes = 1 << 30
	// DefaultMaxSampleBytes bounds what a transform that can grow a sample
	// makes of it: 256 MiB, as much as the largest decoded input the other
	// defaults let through (2^26 float32 audio samples; DefaultMaxPixels
	// RGB bytes, 2^28 - 1).
	DefaultMaxSampleBytes = 1 << 28
)

// Open builds the source d describes. Errors name the option at fault.
// d.RootBytes and d.ListBytes, when set, replace d.Root and d.List (file
// names that are not UTF-8, sent from Python as bytes).
func Open(d config.Dataset) (pipeline.Source, error) {
	if d.MaxPixels == 0 {
		d.MaxPixels = DefaultMaxPixels
	}
	if d.MaxFileBytes == 0 {
		d.MaxFileBytes = DefaultMaxFileBytes
	}
	if d.MaxSampleBytes == 0 {
		d.MaxSampleBytes = DefaultMaxSampleBytes
	}
	if d.RootBytes != nil {
		d.Root = string(d.RootBytes)
	}
	if d.ListBytes != nil {
		d.List = string(d.ListBytes)
	}
	switch d.Kind {
	case "synthetic":
		if len(d.Transforms) > 0 {
			return nil, fmt.Errorf("config: option \"dataset.transforms\": the synthetic dataset takes no transforms")
		}
		return synth.New(d)
	}
	if b, ok := builders[d.Kind]; ok {
		return b(d)
	}
	return nil, fmt.Errorf("config: option \"dataset.kind\": %q is not available in this build", d.Kind)
}

// builders holds the file dataset kinds.
var builders = map[string]func(config.Dataset) (pipeline.Source, error){}

// opName reads the "op" of transforms[i].
func opName(raw json.RawMessage, i int) (string, error) {
	var head struct {
		Op string `json:"op"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return "", fmt.Errorf("config: option \"dataset.transforms[%d]\": %v", i, err)
	}
	if head.Op == "" {
		return "", fmt.Errorf("config: option \"dataset.transforms[%d]\": no \"op\"", i)
	}
	return head.Op, nil
}

// decodeOp reads transforms[i]'s parameters into params (a struct with an
// Op field), rejecting unknown keys by name.
func decodeOp(raw json.RawMessage, i int, op string, params any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(params); err != nil {
		return fmt.Errorf("config: option \"dataset.transforms[%d]\" (%s): %v", i, op, err)
	}
	return nil
}

// outputError is a sample's error for a transform whose output would be
// larger than max_sample_bytes; what describes the output.
func outputError(path, op, what string, bytes, limit int64) error {
	return fmt.Errorf("%q: %s: %s is %d bytes, more than the limit of %d (max_sample_bytes)", path, op, what, bytes, limit)
}

// namedSteps returns steps whose errors name the sample's file (quoted
// with %q, so printable) and the step, unless the message quotes the file
// already: every sample error of a file dataset then says which file, even
// where it is read without the scheduler's SampleError around it.
func namedSteps(steps []pipeline.Step, path func(index int64) string) []pipeline.Step {
	out := make([]pipeline.Step, len(steps))
	for i, st := range steps {
		fn, name := st.Fn, st.Name
		out[i] = pipeline.Step{Name: name, Fn: func(c *pipeline.Ctx, smp *pipeline.Sample) error {
			err := fn(c, smp)
			if err == nil {
				return nil
			}
			q := strconv.Quote(path(smp.Index))
			if strings.Contains(err.Error(), q) {
				return err
			}
			return fmt.Errorf("%s: %s: %w", q, name, err)
		}}
	}
	return out
}

// opError names transforms[i] in a validation error.
func opError(i int, op, format string, args ...any) error {
	return fmt.Errorf("config: option \"dataset.transforms[%d]\" (%s): %s", i, op, fmt.Sprintf(format, args...))
}

// Info describes a source: what ml_dataset_info returns as JSON.
type Info struct {
	Length  int64       `json:"length"`
	Fields  []FieldInfo `json:"fields"`
	Classes []string    `json:"classes,omitempty"`
	// ClassesBytes are the class names as bytes (base64 in JSON), given
	// when one is not UTF-8: JSON would replace its bytes with U+FFFD.
	ClassesBytes [][]byte `json:"classes_bytes,omitempty"`
	// JPEGDecoder names the JPEG decoder of image datasets.
	JPEGDecoder string `json:"jpeg_decoder,omitempty"`
}

// FieldInfo is one field of Info.
type FieldInfo struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
}

// Classer is implemented by sources whose labels are class numbers with
// names (the folder datasets).
type Classer interface {
	Classes() []string
}

// Describe returns src's Info.
func Describe(src pipeline.Source) Info {
	info := Info{Length: src.Len(), Fields: []FieldInfo{}}
	for _, f := range src.Fields() {
		info.Fields = append(info.Fields, FieldInfo{Name: f.Name, DType: config.DTypeName(f.DType), Shape: append([]int64{}, f.Shape...)})
	}
	if c, ok := src.(Classer); ok {
		info.Classes = c.Classes()
		for _, name := range info.Classes {
			if !utf8.ValidString(name) {
				for _, name := range info.Classes {
					info.ClassesBytes = append(info.ClassesBytes, []byte(name))
				}
				break
			}
		}
	}
	if _, ok := src.(*imageSource); ok {
		info.JPEGDecoder = JPEGDecoderName()
	}
	return info
}
