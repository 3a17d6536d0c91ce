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
}

// main is required by -buildmode=c-shared and never runs.
func main() {}
