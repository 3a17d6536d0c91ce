package volume_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/minatoloader/minatoloader/core/sampler"
	"github.com/minatoloader/minatoloader/core/volume"
)

// writeCase writes a (1, 40, 48, 56) float32 image and a uint8 label with
// a small "kidney" of class 1 holding a "tumour" of class 2, as a KiTS19
// case preprocessed to .npy would be.
func writeCase(dir string) (imagePath, labelPath string) {
	image, _ := volume.New(volume.Float32, 1, 40, 48, 56)
	label, _ := volume.New(volume.Uint8, 1, 40, 48, 56)
	for i := 0; i < image.NumElements(); i++ {
		image.Set(i, float64(i%97)/97)
	}
	for z := 30; z < 36; z++ {
		for y := 5; y < 12; y++ {
			for x := 40; x < 50; x++ {
				label.Set((z*48+y)*56+x, 1)
			}
		}
	}
	label.Set((33*48+8)*56+45, 2)
	imagePath, labelPath = filepath.Join(dir, "imaging.npy"), filepath.Join(dir, "segmentation.npy")
	if err := volume.WriteNpyFile(imagePath, image); err != nil {
		panic(err)
	}
	if err := volume.WriteNpyFile(labelPath, label); err != nil {
		panic(err)
	}
	return imagePath, labelPath
}

// The 3D-UNet chain one op at a time: read an .npy pair, crop around the
// foreground, flip, scale brightness, add noise, cast for the batch.
func Example() {
	dir, err := os.MkdirTemp("", "volume-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	imagePath, labelPath := writeCase(dir)

	// Read the pair, checking types and that the shapes agree.
	image, err := volume.ReadNpyFile(imagePath, &volume.ReadOptions{DType: volume.Float32, Rank: 4})
	if err != nil {
		panic(err)
	}
	label, err := volume.ReadNpyFile(labelPath, &volume.ReadOptions{DType: volume.Uint8, Shape: image.Shape})
	if err != nil {
		panic(err)
	}

	// In a pipeline step this RNG is the step's Ctx.Rand, seeded from
	// (seed, epoch, index, step).
	r := sampler.NewRNG(42, 0, 7, 0)

	crop, err := volume.ForegroundCrop{Size: [3]int{32, 32, 32}, Prob: 1}.Draw(&r, label)
	if err != nil {
		panic(err)
	}
	img, lbl, err := volume.CropPair(image, label, crop, volume.Pad{}, volume.Pad{})
	if err != nil {
		panic(err)
	}
	flip, _ := volume.RandomFlip{Prob: 0.5}.Draw(&r)
	if err := volume.FlipPair(img, lbl, flip); err != nil {
		panic(err)
	}
	bright, _ := volume.RandomBrightness{Factor: 0.3, Prob: 1}.Draw(&r)
	if err := volume.Brightness(img, bright); err != nil {
		panic(err)
	}
	noise, _ := volume.GaussianNoise{Std: 0.1, Prob: 1}.Draw(&r)
	if err := volume.AddNoise(img, noise); err != nil {
		panic(err)
	}

	// Cast the image straight into a float16 batch row; the label to int32.
	row := make([]byte, img.NumElements()*volume.Float16.Size())
	if err := volume.CastInto(row, img, volume.Float16); err != nil {
		panic(err)
	}
	lbl, err = volume.Cast(lbl, volume.Int32)
	if err != nil {
		panic(err)
	}

	fg := 0
	for i := 0; i < lbl.NumElements(); i++ {
		if lbl.At(i) > 0 {
			fg++
		}
	}
	fmt.Printf("crop start %v size %v, centred on foreground voxel %v: %v\n", crop.Start, crop.Size, crop.Center, crop.Foreground)
	fmt.Printf("flip (D, H, W) %v\n", flip.Axes)
	fmt.Printf("brightness x%.4f, noise std %.4f\n", bright.Factor, noise.Std)
	fmt.Printf("image row %d bytes (float16), label %v %s with %d foreground voxels\n", len(row), lbl.Shape, lbl.DType, fg)
	// Output:
	// crop start [8 0 24] size [32 32 32], centred on foreground voxel [35 11 44]: true
	// flip (D, H, W) [true false true]
	// brightness x1.0989, noise std 0.0092
	// image row 65536 bytes (float16), label [1 32 32 32] int32 with 420 foreground voxels
}

// Augment runs the same chain with the MLPerf reference's settings and
// returns its parameters, which marshal to JSON for a numpy reference.
func ExampleAugment() {
	dir, err := os.MkdirTemp("", "volume-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	imagePath, labelPath := writeCase(dir)
	image, err := volume.ReadNpyFile(imagePath, nil)
	if err != nil {
		panic(err)
	}
	label, err := volume.ReadNpyFile(labelPath, nil)
	if err != nil {
		panic(err)
	}

	a := volume.MLPerfAugment([3]int{32, 32, 32})
	r := sampler.NewRNG(1, 0, 5, 0)
	img, lbl, p, err := a.Run(&r, image, label)
	if err != nil {
		panic(err)
	}
	js, _ := json.Marshal(p.Crop)
	fmt.Println(img.Shape, img.DType, lbl.Shape, lbl.DType)
	fmt.Println(string(js))
	// Output:
	// [1 32 32 32] float32 [1 32 32 32] uint8
	// {"start":[8,0,24],"size":[32,32,32],"foreground":true,"center":[33,8,45]}
}
