// Package volume is native 3D volume preprocessing for 3D-UNet (MLPerf
// image segmentation, KiTS19): an .npy reader and writer, a Volume type,
// and the reference's training augmentations on (image, label) pairs.
//
//	image.npy, label.npy --ReadNpyFile--> Volume (any dtype, C order)
//	        |
//	ForegroundCrop.Draw(label) -> CropParams --CropPair--> image, label patches
//	RandomFlip.Draw            -> FlipParams --FlipPair--> in place, both
//	Cast(image, Float32)                      (the working type)
//	RandomBrightness.Draw      -> BrightnessParams --Brightness--> image
//	GaussianNoise.Draw         -> NoiseParams --AddNoise--> image
//	Cast / CastInto                            (output types, batch rows)
//
// Augment bundles the chain; MLPerfAugment gives the reference's settings.
//
// # Volumes
//
// A Volume is Shape, DType and little-endian bytes in C order. The ops
// read the last three axes as (D, H, W) and treat leading axes as
// channels, so (D, H, W) and (C, D, H, W) both work, and image and label
// may have different channel counts. Crop and flip move bytes and work on
// every dtype exactly; brightness and noise need Float32 (Cast first);
// Cast converts between all seven types with the rules in its comment.
//
// # Randomness
//
// Every op splits into Draw, which takes a *sampler.RNG and returns a
// Params value, and an apply function that takes the Params and draws
// nothing. In a pipeline step the RNG is pipeline.Ctx.Rand, seeded from
// (seed, epoch, index, step), so a sample's bytes never depend on which
// worker ran it or when. Each Draw's comment lists exactly which RNG calls
// it makes, in order (r.Float64, r.Below(n), r.Uint64, as core/sampler
// defines them), so a reference that re-implements SplitMix64 reproduces
// the parameters; testdata/numpy/make_fixtures.py does so with numpy, and
// TestNumpyAugmentParity checks Augment against it: crop, flips and label
// bytes identical, image within float rounding. The Params types marshal
// to JSON for the other direction: Python applies Go's choices.
//
// Draw order of Augment.Draw, all from one RNG:
//
//	ForegroundCrop  Float64; then Below(classes), Below(voxels of class)
//	                or, uniform, Below(max(n-k,0)+1) for D, H, W
//	RandomFlip      Float64 for D, H, W
//	Brightness      Float64; if applied, Float64 (factor)
//	Noise           Float64; if applied, Float64 (std), Uint64 (seed)
//
// The per-voxel noise comes from its own stream, NewNormalStream(seed), so
// the number of draws never depends on the volume's size.
//
// # Differences from the MLPerf reference
//
//   - The foreground crop centres on a uniformly drawn voxel of a
//     uniformly drawn class, not on a connected component's bounding box.
//   - A uniform crop may start at n-k (the reference's randrange(n-k)
//     never does).
//   - Brightness multiplies by the drawn factor f; the reference
//     multiplies by 1+f. Brightness with Factor 1+f reproduces it.
//   - Padding is applied by the crop (constant by default, edge on
//     request), not in a separate preprocessing pass.
//
// # Reading .npy
//
// Versions 1.0, 2.0 and 3.0; descr '|u1' '|i1' '<i2' '<i4' '<f2' '<f4'
// '<f8'; C order. Big-endian data, Fortran order, structured and other
// dtypes fail with ErrUnsupported and say which. A header's claim is
// checked against ReadOptions.MaxBytes before anything is allocated, and
// a file's size against the header before the data is read. No input
// makes the reader panic (FuzzReadNpy).
//
// # Cost
//
// CPU time per call, 2-core Xeon VM (go test -bench . ./core/volume/), for
// a 128^3 float32 patch (8 MiB) cut from a 256^3 case:
//
//	ReadNpyFile 8 MiB       1.7 ms   (os.ReadFile 1.7, binary.Read 5.7)
//	Crop / CropInto         2.1 / 1.2 ms (voxel-by-voxel loop 4.6)
//	Flip, all three axes    1.7 ms   (voxel-by-voxel copy 3.2)
//	AddNoise                21 ms    (math/rand/v2 NormFloat64 8.5)
//	Brightness              2.0 ms
//	ForegroundCrop.Draw     2.2 ms on a 256^3 uint8 label (naive 42)
//	Augment (MLPerf)        10 ms per sample, averaged over draws
//
// AddNoise pays for a reproducible normal generator; at the reference's
// probability of 0.1 it adds about 2 ms per sample on average.
//
// All functions are safe for concurrent use on distinct volumes.
package volume
