// Command capi is libminatoloader.so, the C ABI of minatoloader, built with
//
//	go build -buildmode=c-shared -o build/libminatoloader.so ./capi
//
// It is the only package with cgo and does translation only: handles,
// status codes, copies and DLPack structs. The contract is
// include/minatoloader.h.
//
// Layout of a call:
//
//	ml_loader_next (shim.c)          fork guard, clears the last error
//	  -> mlgo_loader_next (Go)        panic barrier, handle lookup
//	       -> sched.Loader.Next       the scheduler (core/sched)
//	  <- status; on failure the message was stored with mlc_set_error
//
// The public ml_* symbols are C functions in shim.c; the Go exports they
// call (mlgo_*) are internal and not declared in the public header. Batch
// memory is C memory (block.c): one aligned_alloc per batch with an atomic
// reference count, shared by the batch handle and every DLPack tensor
// exported from it, so DLPack deleters run without entering Go.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -std=gnu11 -Wall -Wextra -Wno-unused-parameter
*/
import "C"

import (
	"os"
	"runtime"

	"github.com/minatoloader/minatoloader/core/datasets"
	"github.com/minatoloader/minatoloader/native/turbojpeg"
)

// With -tags turbojpeg (set by the build when native/turbojpeg/detect.sh
// finds a static libjpeg-turbo), image datasets decode JPEG with it; else
// with image/jpeg. No I/O: Available is a constant of the build.
func init() {
	if turbojpeg.Available() {
		datasets.UseJPEGDecoder(turbojpeg.Imageops{})
	}
	// Twice as many Ps as the CPUs Go would use (unless the GOMAXPROCS
	// environment variable says otherwise): with one P per core, workers
	// spinning on CPU-bound steps hold every P, and the batch builder and
	// the host's ml_loader_next calls wait for Go's 10 ms preemption. With
	// spare Ps the OS time-slices them instead. Measured (bench/speech.py,
	// speech-busy, 2 workers, consumer at 1/1.2 of the loader's rate):
	// consumer wait 7-9% -> 0.3-0.4%, loader-alone epoch 2% slower.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0))
	}
}

// main is required by -buildmode=c-shared and never runs.
func main() {}
