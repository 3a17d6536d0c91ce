// Package imageops is minatoloader's native image preprocessing: JPEG and
// PNG decoding and torchvision's transforms, with torchvision's semantics
// on PIL images (transforms v1 / v2 with PIL inputs), in pure Go.
//
// A sample goes through three stages, each reusing per-worker memory:
//
//	encoded bytes
//	     |  Decoder.Decode: Sniff, header + pixel limit (Config), then
//	     |  image/png, or a JPEGDecoder (GoJPEG: image/jpeg with
//	     v  libjpeg-turbo's chroma upsampling and color conversion)
//	Image (HWC uint8, RGB or gray; Pix reused across samples)
//	     |  RandomResizedCrop.Plan(rng) / ResizeCenterCropPlan /
//	     v  a hand-made Plan: crop, resize, window, flips
//	Plan
//	     |  Scratch.Fused: crop -> PIL bilinear resize of only the rows
//	     |  and columns the window needs -> flips -> ToTensor + Normalize
//	     v  (one table lookup per sample) -> CHW
//	[]float32 batch slot (or []uint8 with FusedUint8)
//
// The same ops exist one at a time (View, Resize, CenterCrop, HFlip,
// VFlip, ColorJitter, ToTensor, Normalize, PILToTensor) and give the same
// values as the fused path, bit for bit (TestFusedEqualsUnfused).
//
// # Parity with torchvision and PIL
//
// Resize is Pillow's Image.resize(BILINEAR) reimplemented: the same
// coefficients (triangle filter, support widened by the downscale factor,
// so downscaling is antialiased), the same 22-bit fixed point, the same
// uint8 rounding between passes and the same pass order (Pillow 13 runs
// the vertical pass first when the height shrinks by more than twice the
// width). Compared with Pillow 13.0.0 and torchvision 0.29.2 on 509 cases
// (resizes of RGB and gray images from 1x1 to 1024x768, center crops with
// padding, ColorJitter orders and factors, RandomResizedCrop + flips +
// ToTensor + Normalize and Resize + CenterCrop chains, padded too), every
// value was equal: 0 levels on uint8, 0.0 on float32. torchvision v2's
// antialiased resize of uint8 tensors is its own kernel; it differs from
// PIL, and so from this package, by at most 1 level (mean 0.003). Color
// jitter follows PIL's formulas, not v2's tensor ones. The go tests check
// the same against a transcription of Resample.c (TestResizeMatchesPILReference)
// and against values taken from Pillow (TestAdjustMatchesPillow, TestCMYK,
// TestGrayConversion).
//
// Decoding is where Go and PIL differ. PNG decodes to the same pixels
// (alpha dropped, as convert("RGB") does; 16-bit samples keep their high
// byte, except that PIL clips 16-bit gray, mode "I;16", to 255 instead).
// JPEG: GoJPEG converts image/jpeg's planes exactly as libjpeg-turbo does
// (fancy upsampling, integer YCbCr->RGB), so what remains is image/jpeg's
// IDCT rounding: within 3 levels of PIL, mean 0.05, over 105 files. A
// libjpeg-turbo JPEGDecoder removes that difference.
//
// Random parameters are torchvision's get_params draw for draw, with
// torch's generator replaced by a *sampler.RNG (pipeline.Ctx.Rand): a
// sample's transform depends only on (seed, epoch, index, step), never on
// the worker. The distributions match torchvision's
// (TestRandomResizedCropStatistics); the values, from another generator,
// do not. Params are exposed so a parity test can hand them to
// torchvision's functional API.
//
// # Concurrency and cost
//
// Decoder, Normalize and the transform configs are immutable and safe to
// share. Scratch and Image are per worker. Nothing fans out to other
// goroutines: the loader's workers are the parallelism. Measured on one
// core of this project's 2-core machine (go test -bench, 1024x768):
// decoding a JPEG about 12 ms (image/jpeg itself; libjpeg-turbo is 3-4x
// faster), Resize to 224x224 about 3.3 ms with no allocation, and the
// fused RandomResizedCrop(224) + flip + Normalize about 1.7 ms with no
// allocation.
package imageops
