package main

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/minatoloader/minatoloader/core/batch"
)

// cAllocator is the batch.Allocator of the C ABI: every block is C memory
// from mlc_block_alloc (one aligned_alloc, 256-byte aligned data), never Go
// heap, so it can be handed to C and Python and outlive Go's view of it.
// Safe for concurrent use; about one aligned_alloc per batch.
type cAllocator struct{}

var _ batch.Allocator = cAllocator{}

// Alloc returns a block of size bytes holding one reference, the batch's.
func (cAllocator) Alloc(size int) (batch.Block, error) {
	if size < 0 {
		return nil, fmt.Errorf("capi: negative block size %d", size)
	}
	hdr := C.mlc_block_alloc(C.size_t(size))
	if hdr == nil {
		return nil, fmt.Errorf("capi: aligned_alloc of %d bytes: %w", size, batch.ErrNoMemory)
	}
	data := C.mlc_block_data(hdr)
	return &cBlock{hdr: hdr, mem: unsafe.Slice((*byte)(data), size)}, nil
}

// cBlock is one C block seen from Go. Its Release drops the batch's
// reference; DLPack tensors hold their own, so the memory lives until the
// last of them is gone.
type cBlock struct {
	hdr      *C.mlc_block
	mem      []byte
	released atomic.Bool
}

func (b *cBlock) Bytes() []byte { return b.mem }

// Release drops the batch's reference. Safe to call more than once.
func (b *cBlock) Release() {
	if b.released.CompareAndSwap(false, true) {
		C.mlc_block_unref(b.hdr)
	}
}
