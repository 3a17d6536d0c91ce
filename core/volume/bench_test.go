package volume

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/minatoloader/minatoloader/core/sampler"
)

// Sizes: a 256^3 float32 image (64 MiB) and uint8 label, 128^3 patches,
// the 3D-UNet patch size.
const (
	benchN     = 256
	benchPatch = 128
)

func benchImage(b *testing.B, n int) *Volume {
	b.Helper()
	v, err := New(Float32, 1, n, n, n)
	if err != nil {
		b.Fatal(err)
	}
	r := sampler.NewRNG(1)
	for i := 0; i < len(v.Data); i += 4 {
		binary.LittleEndian.PutUint32(v.Data[i:], math.Float32bits(float32(r.Float64())))
	}
	return v
}

// benchLabel is a 256^3 label with a ball of class 1 (about 3% of the
// voxels) holding a smaller ball of class 2, like a kidney and a tumour.
func benchLabel(b *testing.B) *Volume {
	b.Helper()
	v, err := New(Uint8, 1, benchN, benchN, benchN)
	if err != nil {
		b.Fatal(err)
	}
	for z := 0; z < benchN; z++ {
		for y := 0; y < benchN; y++ {
			for x := 0; x < benchN; x++ {
				d2 := (z-100)*(z-100) + (y-140)*(y-140) + (x-80)*(x-80)
				switch {
				case d2 < 12*12:
					v.Data[(z*benchN+y)*benchN+x] = 2
				case d2 < 50*50:
					v.Data[(z*benchN+y)*benchN+x] = 1
				}
			}
		}
	}
	return v
}

func f32s(v *Volume) []float32 {
	out := make([]float32, len(v.Data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(v.Data[4*i:]))
	}
	return out
}

func writeBenchFile(b *testing.B, v *Volume) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "image.npy")
	if err := WriteNpyFile(path, v); err != nil {
		b.Fatal(err)
	}
	return path
}

func BenchmarkReadNpyFile(b *testing.B) {
	v := benchImage(b, benchPatch)
	path := writeBenchFile(b, v)
	b.SetBytes(int64(len(v.Data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ReadNpyFile(path, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// Floor: the bytes alone, no parsing or checks.
func BenchmarkReadNpyFileBaselineOSReadFile(b *testing.B) {
	v := benchImage(b, benchPatch)
	path := writeBenchFile(b, v)
	b.SetBytes(int64(len(v.Data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := os.ReadFile(path); err != nil {
			b.Fatal(err)
		}
	}
}

// Naive: skip a fixed-size header, binary.Read into []float32 through bufio.
func BenchmarkReadNpyFileBaselineBinaryRead(b *testing.B) {
	v := benchImage(b, benchPatch)
	path := writeBenchFile(b, v)
	b.SetBytes(int64(len(v.Data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r := bufio.NewReader(f)
		if _, err := io.CopyN(io.Discard, r, 128); err != nil {
			b.Fatal(err)
		}
		out := make([]float32, len(v.Data)/4)
		if err := binary.Read(r, binary.LittleEndian, out); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

func BenchmarkCrop(b *testing.B) {
	v := benchImage(b, benchN)
	p := CropParams{Start: [3]int{60, 70, 80}, Size: [3]int{benchPatch, benchPatch, benchPatch}}
	b.SetBytes(int64(benchPatch * benchPatch * benchPatch * 4))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Crop(v, p, Pad{}); err != nil {
			b.Fatal(err)
		}
	}
}

// Into a reused buffer (a batch row): no allocation, no zeroing.
func BenchmarkCropInto(b *testing.B) {
	v := benchImage(b, benchN)
	p := CropParams{Start: [3]int{60, 70, 80}, Size: [3]int{benchPatch, benchPatch, benchPatch}}
	dst := make([]byte, benchPatch*benchPatch*benchPatch*4)
	b.SetBytes(int64(len(dst)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := CropInto(dst, v, p, Pad{}); err != nil {
			b.Fatal(err)
		}
	}
}

// Half the window outside the volume on every axis.
func BenchmarkCropPadded(b *testing.B) {
	v := benchImage(b, benchPatch)
	p := CropParams{Start: [3]int{-64, 64, -64}, Size: [3]int{benchPatch, benchPatch, benchPatch}}
	b.SetBytes(int64(benchPatch * benchPatch * benchPatch * 4))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Crop(v, p, Pad{Value: -1}); err != nil {
			b.Fatal(err)
		}
	}
}

// Naive: one voxel at a time on []float32, full index arithmetic.
func BenchmarkCropBaselineNaive(b *testing.B) {
	src := f32s(benchImage(b, benchN))
	const n, k = benchN, benchPatch
	s := [3]int{60, 70, 80}
	b.SetBytes(k * k * k * 4)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := make([]float32, k*k*k)
		for z := 0; z < k; z++ {
			for y := 0; y < k; y++ {
				for x := 0; x < k; x++ {
					out[(z*k+y)*k+x] = src[((s[0]+z)*n+s[1]+y)*n+s[2]+x]
				}
			}
		}
	}
}

func BenchmarkFlip(b *testing.B) {
	v := benchImage(b, benchPatch)
	p := FlipParams{Axes: [3]bool{true, true, true}}
	b.SetBytes(int64(len(v.Data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Flip(v, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFlipDepthOnly(b *testing.B) {
	v := benchImage(b, benchPatch)
	p := FlipParams{Axes: [3]bool{true, false, false}}
	b.SetBytes(int64(len(v.Data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Flip(v, p); err != nil {
			b.Fatal(err)
		}
	}
}

// Naive: np.flip(...).copy() done one voxel at a time.
func BenchmarkFlipBaselineNaive(b *testing.B) {
	src := f32s(benchImage(b, benchPatch))
	const k = benchPatch
	b.SetBytes(k * k * k * 4)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := make([]float32, k*k*k)
		for z := 0; z < k; z++ {
			for y := 0; y < k; y++ {
				for x := 0; x < k; x++ {
					out[(z*k+y)*k+x] = src[((k-1-z)*k+k-1-y)*k+k-1-x]
				}
			}
		}
	}
}

func BenchmarkNoise(b *testing.B) {
	v := benchImage(b, benchPatch)
	p := NoiseParams{Apply: true, Std: 0.1, Seed: 3}
	b.SetBytes(int64(len(v.Data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := AddNoise(v, p); err != nil {
			b.Fatal(err)
		}
	}
}

// Baseline: math/rand/v2's ziggurat NormFloat64 over the same RNG, on
// []float32 (faster, but its algorithm is Go's to change and numpy's to
// not reproduce).
func BenchmarkNoiseBaselineNormFloat64(b *testing.B) {
	x := f32s(benchImage(b, benchPatch))
	b.SetBytes(int64(len(x) * 4))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rng := sampler.NewRNG(3)
		r := rand.New(&rng)
		for j := range x {
			x[j] += float32(0.1 * r.NormFloat64())
		}
	}
}

func BenchmarkBrightness(b *testing.B) {
	v := benchImage(b, benchPatch)
	p := BrightnessParams{Apply: true, Factor: 1.0000001}
	b.SetBytes(int64(len(v.Data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Brightness(v, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCastFloat32ToFloat16(b *testing.B) {
	v := benchImage(b, benchPatch)
	dst := make([]byte, len(v.Data)/2)
	b.SetBytes(int64(len(v.Data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := CastInto(dst, v, Float16); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCastUint8ToFloat32(b *testing.B) {
	v, _ := New(Uint8, 1, benchPatch, benchPatch, benchPatch)
	dst := make([]byte, len(v.Data)*4)
	b.SetBytes(int64(len(v.Data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := CastInto(dst, v, Float32); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkForegroundDraw(b *testing.B) {
	label := benchLabel(b)
	c := ForegroundCrop{Size: [3]int{benchPatch, benchPatch, benchPatch}, Prob: 1}
	b.SetBytes(int64(len(label.Data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := sampler.NewRNG(uint64(i))
		if _, err := c.Draw(&r, label); err != nil {
			b.Fatal(err)
		}
	}
}

// Naive: np.unique(label[label > 0]) then np.flatnonzero(label == c),
// one voxel at a time.
func BenchmarkForegroundDrawBaselineNaive(b *testing.B) {
	label := benchLabel(b)
	b.SetBytes(int64(len(label.Data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := sampler.NewRNG(uint64(i))
		seen := map[byte]bool{}
		var classes []byte
		for _, x := range label.Data {
			if x > 0 && !seen[x] {
				seen[x] = true
				classes = append(classes, x)
			}
		}
		c := classes[r.Below(uint64(len(classes)))]
		var at []int
		for j, x := range label.Data {
			if x == c {
				at = append(at, j)
			}
		}
		_ = at[r.Below(uint64(len(at)))]
	}
}

// The whole chain on a 256^3 case with the reference's settings: about
// 40% foreground crops, brightness and noise on 10% of samples each.
func BenchmarkAugmentMLPerf(b *testing.B) {
	image, label := benchImage(b, benchN), benchLabel(b)
	a := MLPerfAugment([3]int{benchPatch, benchPatch, benchPatch})
	b.SetBytes(int64(benchPatch * benchPatch * benchPatch * 5))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := sampler.NewRNG(uint64(i))
		if _, _, _, err := a.Run(&r, image, label); err != nil {
			b.Fatal(err)
		}
	}
}
