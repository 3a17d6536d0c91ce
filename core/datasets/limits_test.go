package datasets

// Regression tests of issue 9's memory cases: outputs that a transform
// grows are bounded (max_sample_bytes), reads and decodes allocate in
// proportion to the input, and every sample error names its file.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minatoloader/minatoloader/core/config"
	"github.com/minatoloader/minatoloader/core/pipeline"
	"github.com/minatoloader/minatoloader/core/volume"
)

// wav16 is a mono 16-bit PCM WAV of n samples at rate.
func wav16(rate uint32, n int) []byte {
	data := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(data[2*i:], uint16(i*37))
	}
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString("RIFF")
	binary.Write(&b, le, uint32(36+len(data)))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), rate, rate * 2, uint16(2), uint16(16)} {
		binary.Write(&b, le, v)
	}
	b.WriteString("data")
	binary.Write(&b, le, uint32(len(data)))
	b.Write(data)
	return b.Bytes()
}

// openDataset opens a dataset of kind over root with the chain ops (JSON
// objects).
func openDataset(t *testing.T, kind, root string, ops ...string) pipeline.Source {
	t.Helper()
	d := config.Dataset{Kind: kind, Root: root}
	for _, o := range ops {
		d.Transforms = append(d.Transforms, json.RawMessage(o))
	}
	src, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// runSample loads sample index and runs its steps as the scheduler does;
// it returns the error and the bytes allocated meanwhile. steps < 0: all.
func runSample(src pipeline.Source, index int64, steps int) (allocated uint64, err error) {
	smp := pipeline.NewSample(src.Fields())
	smp.Index = index
	var c pipeline.Ctx
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	defer func() {
		runtime.ReadMemStats(&after)
		allocated = after.TotalAlloc - before.TotalAlloc
	}()
	c.Reset(1, 0, index, 0, time.Time{})
	if err := src.Load(&c, index, &smp); err != nil {
		return 0, err
	}
	all := src.Steps()
	if steps >= 0 {
		all = all[:steps]
	}
	for k, st := range all {
		c.Reset(1, 0, index, k+1, time.Time{})
		if err := st.Fn(&c, &smp); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantError checks that err names the file (quoted) and says each of parts.
func wantError(t *testing.T, err error, path string, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one naming %s and %q", path, parts)
	}
	for _, p := range append(parts, strconv.Quote(path)) {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not say %q", err, p)
		}
	}
}

// A 390 KB WAV claiming 16 Hz, resampled to 16 kHz, would be 780 MB of
// float32: refused before the allocation, naming the file and the op.
func TestResampleOutputBounded(t *testing.T) {
	root := t.TempDir()
	p := writeFile(t, filepath.Join(root, "a/slow.wav"), wav16(16, 195000))
	src := openDataset(t, "audio_folder", root, `{"op":"resample","rate":16000}`, `{"op":"pad_trim","length":16000}`)
	alloc, err := runSample(src, 0, -1)
	wantError(t, err, p, "resample", "max_sample_bytes")
	if limit := uint64(8*390000 + 1<<20); alloc > limit {
		t.Fatalf("refusing the resample allocated %d bytes (limit %d: a few times the input)", alloc, limit)
	}
}

// Reading and decoding a 16-bit WAV allocates the file once and the
// float32 samples once, not a growing read buffer and copies.
func TestWAVDecodeAllocatesInProportion(t *testing.T) {
	root := t.TempDir()
	const n = 4 << 20
	b := wav16(16000, n)
	writeFile(t, filepath.Join(root, "a/long.wav"), b)
	src := openDataset(t, "audio_folder", root, fmt.Sprintf(`{"op":"pad_trim","length":%d}`, n))
	alloc, err := runSample(src, 0, 1) // load + decode_wav
	if err != nil {
		t.Fatal(err)
	}
	if limit := uint64(len(b) + 4*n + 1<<20); alloc > limit {
		t.Fatalf("reading and decoding %d bytes allocated %d (want at most file + samples + 1 MiB = %d)", len(b), alloc, limit)
	}
}

// Every step's error names the file: here a rate of 2^31-1, which the
// resampler refuses.
func TestSampleErrorsNameTheFile(t *testing.T) {
	root := t.TempDir()
	p := writeFile(t, filepath.Join(root, "a/odd.wav"), wav16(1<<31-1, 100))
	src := openDataset(t, "audio_folder", root, `{"op":"resample","rate":16000}`, `{"op":"pad_trim","length":16000}`)
	_, err := runSample(src, 0, -1)
	wantError(t, err, p, "resample", "2147483647")
}

// Resize to a smaller edge follows the aspect ratio: a 2 x 1000 image
// resized to 300 would be 300 x 150000 (135 MB of RGB): bounded by
// max_sample_bytes, checked before the allocation.
func TestResizeOutputBounded(t *testing.T) {
	root := t.TempDir()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 1000, 2))); err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, filepath.Join(root, "a/thin.png"), buf.Bytes())
	d := config.Dataset{Kind: "image_folder", Root: root, MaxSampleBytes: 64 << 20}
	for _, o := range []string{`{"op":"resize","size":[300]}`, `{"op":"center_crop","size":[8]}`, `{"op":"pil_to_tensor"}`} {
		d.Transforms = append(d.Transforms, json.RawMessage(o))
	}
	src, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := runSample(src, 0, -1)
	wantError(t, err, p, "resize", "1000x2 -> 150000x300", "max_sample_bytes")
	if alloc > 16<<20 {
		t.Fatalf("refusing the resize allocated %d bytes", alloc)
	}
	// Fixed sizes are checked when the dataset is opened.
	d.Transforms[0] = json.RawMessage(`{"op":"resize","size":[32768,32768]}`)
	if _, err := Open(d); err == nil || !strings.Contains(err.Error(), "dataset.transforms[0]") || !strings.Contains(err.Error(), "max_sample_bytes") {
		t.Fatalf("resize to 32768x32768: %v", err)
	}
}

// A 3D crop pads a volume smaller than its size: 300 channels of 4^3
// voxels (77 KB) cropped to 64^3 would be 315 MB.
func TestVolumeCropOutputBounded(t *testing.T) {
	root := t.TempDir()
	img := &volume.Volume{Shape: []int{300, 4, 4, 4}, DType: volume.Float32, Data: make([]byte, 300*64*4)}
	lbl := &volume.Volume{Shape: []int{1, 4, 4, 4}, DType: volume.Uint8, Data: make([]byte, 64)}
	px := filepath.Join(root, "c_x.npy")
	if err := volume.WriteNpyFile(px, img); err != nil {
		t.Fatal(err)
	}
	if err := volume.WriteNpyFile(filepath.Join(root, "c_y.npy"), lbl); err != nil {
		t.Fatal(err)
	}
	src := openDataset(t, "npy_pairs", root, `{"op":"random_crop_3d","size":[64,64,64]}`)
	alloc, err := runSample(src, 0, -1)
	wantError(t, err, px, "random_crop_3d", "max_sample_bytes")
	if alloc > 16<<20 {
		t.Fatalf("refusing the crop allocated %d bytes", alloc)
	}
	if _, err := Open(config.Dataset{Kind: "npy_pairs", Root: root, Transforms: []json.RawMessage{
		json.RawMessage(`{"op":"random_crop_3d","size":[1024,1024,1024]}`)}}); err == nil || !strings.Contains(err.Error(), "max_sample_bytes") {
		t.Fatalf("crop of 1024^3: %v", err)
	}
}

// Spectrogram frames grow with a small hop; mel and splicing likewise.
func TestSpectrogramOutputBounded(t *testing.T) {
	root := t.TempDir()
	p := writeFile(t, filepath.Join(root, "a/x.wav"), wav16(16000, 16000))
	d := config.Dataset{Kind: "audio_folder", Root: root, MaxSampleBytes: 1 << 20}
	for _, o := range []string{`{"op":"pad_trim","length":16000}`, `{"op":"spectrogram","n_fft":400,"win_length":400,"hop_length":1}`} {
		d.Transforms = append(d.Transforms, json.RawMessage(o))
	}
	src, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	_, err = runSample(src, 0, -1)
	wantError(t, err, p, "spectrogram", "16001 frames x 201 bins", "max_sample_bytes")
}
