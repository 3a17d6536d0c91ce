// Package turbojpeg decodes JPEG with libjpeg-turbo through cgo, to 8-bit
// RGB rows (HWC), with DCT-scaled decoding for a minimum output size. It
// lives outside core/ because it imports "C"; core/imageops reaches it
// through a decoder hook and falls back to image/jpeg where it is absent.
//
//	data --header--> pixel limit --pick M/8 >= min--> libjpeg-turbo --> RGB rows
//	                 (ErrTooLarge)                    (gray, YCbCr, RGB converted inside;
//	                                                   CMYK/YCCK converted here)
//
// # Builds
//
// The cgo code builds only with the build tag turbojpeg (and cgo);
// otherwise Available reports false and every decode returns
// ErrUnavailable, so the default build needs no C library. detect.sh
// prints the tag when the machine can link it: it compiles decode.c and
// links it with libjpeg-turbo's static libjpeg.a into a shared object the
// way `go build -buildmode=c-shared` does. The archive is linked
// statically (#cgo LDFLAGS: -l:libjpeg.a), so libminatoloader.so still
// needs only libc.
//
// It is the libjpeg API of libjpeg-turbo (Debian's libjpeg62-turbo-dev),
// not the TurboJPEG API (libturbojpeg0-dev): Debian's libturbojpeg.a
// cannot go into a shared object (its turbojpeg.c.o keeps the error string
// in local-exec TLS, R_X86_64_TPOFF32, and the linker refuses it). Both
// APIs run the same SIMD decoder; this package does what tjDecompress2
// adds (scaling choice, stop on warning, a 500-scan limit, error strings)
// itself.
//
// # Behaviour
//
// Strict by default: the first libjpeg-turbo warning (truncated data, bytes
// before a marker, a corrupt entropy segment) is an ErrDecode, as with
// TJFLAG_STOPONWARNING; Options.Lenient decodes through them. Progressive
// files with more than 500 scans are refused (TJFLAG_LIMITSCANS). The pixel
// limit (Options.MaxPixels, DefaultMaxPixels) is checked on the header
// before anything is allocated. Corrupt input returns an error, never a
// crash (FuzzDecode, TestCorruptBytes).
//
// # Concurrency and cost
//
// Every function is safe for concurrent use: each call creates its own
// libjpeg decompressor (no handle pool, no global state; about 1 µs).
// A call holds its OS thread for the decode, like any cgo call.
//
// Measured CPU time per 1024x768 quality-90 photo-like JPEG (214 KB) on the
// project's 2-core machine (BenchmarkDecode, cpu-ms/img): 2.8 ms at full
// size into a reused buffer, 4.4 ms into a fresh one (page faults on 2.4 MB
// of new memory: reuse buffers with DecodeInto), 2.4 ms scaled for a
// 224x224 minimum (3/8), against 9.3 ms for image/jpeg alone and 14 ms with
// its conversion to RGB. Scaled IDCTs at 5/8, 3/4 and 7/8 have no SIMD and
// cost 3.2-4.2 ms, more than full size; they still win once the resize
// that follows is counted, since it works on fewer pixels.
package turbojpeg
