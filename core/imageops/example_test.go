package imageops_test

import (
	"fmt"
	"os"

	"github.com/minatoloader/minatoloader/core/imageops"
	"github.com/minatoloader/minatoloader/core/sampler"
)

// The ImageNet training transform, fused: decode -> RandomResizedCrop(224)
// -> RandomHorizontalFlip(0.5) -> ToTensor -> Normalize, written straight
// into the sample's slot of a CHW float32 batch.
func ExampleScratch_Fused() {
	data, err := os.ReadFile("testdata/sample_320x240.jpg")
	if err != nil {
		panic(err)
	}

	// Once per loader: immutable, shared by every worker.
	dec := imageops.NewDecoder(nil) // RGB, PIL's pixel limit, image/jpeg
	rrc := imageops.RandomResizedCrop{H: 224, W: 224}
	norm, err := imageops.NewNormalize([]float64{0.485, 0.456, 0.406}, []float64{0.229, 0.224, 0.225})
	if err != nil {
		panic(err)
	}

	// Once per worker: reused for every sample, so steady state allocates
	// only inside image/jpeg.
	var img imageops.Image
	var scratch imageops.Scratch

	// Per sample. In a pipeline.Step the generator is the step's c.Rand,
	// seeded from (seed, epoch, index, step).
	rng := sampler.NewRNG(42, 0, 7, 1)
	info, err := dec.Decode(&img, data)
	if err != nil {
		panic(err)
	}
	plan := rrc.Plan(&rng, img.H, img.W, 0.5)
	slot := make([]float32, 3*224*224) // the sample's row of the batch
	if err := scratch.Fused(slot, &img, plan, norm); err != nil {
		panic(err)
	}
	fmt.Println(info.Format, info.W, "x", info.H)
	fmt.Printf("crop %+v, flip %v\n", plan.Crop, plan.HFlip)
	fmt.Println(len(slot), "floats, CHW")
	// Output:
	// jpeg 320 x 240
	// crop {Top:56 Left:43 H:183 W:202}, flip false
	// 150528 floats, CHW
}

// The evaluation transform: Resize(256) -> CenterCrop(224), deterministic.
func ExampleResizeCenterCropPlan() {
	p := imageops.ResizeCenterCropPlan(375, 500, 256, 224, 224)
	fmt.Printf("resize to %dx%d, keep %+v\n", p.ResizeW, p.ResizeH, p.Window)
	// Output:
	// resize to 341x256, keep {Top:16 Left:58 H:224 W:224}
}
