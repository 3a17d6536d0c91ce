/*
 * shim.h -- the C helpers of the capi package, shared by the Go files
 * (through cgo) and by shim.c / block.c. Not installed: the public contract
 * is include/minatoloader.h, and nothing here is part of it.
 *
 * Everything declared here is pure C and never enters Go, so it is safe on
 * any thread, in a forked child, and without Python's GIL.
 */
#ifndef MINATOLOADER_CAPI_SHIM_H
#define MINATOLOADER_CAPI_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "minatoloader.h"

/* The helpers are internal to the .so: not exported from it. */
#define MLC_INTERNAL __attribute__((visibility("hidden")))

/* ------------------------------------------------------------ last error */

/* mlc_set_error stores msg[0:n) as the calling thread's last error message.
 * The message is copied; the caller keeps msg. */
MLC_INTERNAL void mlc_set_error(const char* msg, size_t n);

/* mlc_set_error_detail stores json[0:n) as the calling thread's last error
 * detail (ml_last_error_detail), after mlc_set_error stored its message.
 * Copied; the caller keeps json. */
MLC_INTERNAL void mlc_set_error_detail(const char* json, size_t n);

/* mlc_clear_error makes the calling thread's last error message "" and
 * drops its detail. */
MLC_INTERNAL void mlc_clear_error(void);

/* ---------------------------------------------------------------- blocks
 * One batch's memory: a single aligned_alloc(ML_BLOCK_ALIGN, ...) whose
 * first ML_BLOCK_ALIGN bytes hold this header and the rest the data, so the
 * data is ML_BLOCK_ALIGN-aligned. The block is freed when its reference
 * count reaches zero: one reference belongs to the batch (dropped by
 * Block.Release in Go), one to every DLPack tensor exported from it. */
#define ML_BLOCK_ALIGN 256

typedef struct mlc_block {
  int64_t refs; /* accessed only with __atomic builtins */
  size_t size;  /* data bytes, as requested */
} mlc_block;

/* mlc_block_alloc returns a block with one reference, or NULL when the
 * memory cannot be allocated. */
MLC_INTERNAL mlc_block* mlc_block_alloc(size_t size);

/* mlc_block_data returns the first data byte of blk (ML_BLOCK_ALIGN-aligned). */
MLC_INTERNAL void* mlc_block_data(mlc_block* blk);

/* mlc_block_ref adds a reference to blk. */
MLC_INTERNAL void mlc_block_ref(mlc_block* blk);

/* mlc_block_unref drops a reference; the last one frees the block. */
MLC_INTERNAL void mlc_block_unref(mlc_block* blk);

/* mlc_counters reads the library-wide block counters. */
MLC_INTERNAL void mlc_counters(int64_t* live_blocks, int64_t* live_bytes,
                  int64_t* total_blocks);

/* ---------------------------------------------------------------- DLPack */

/* mlc_export builds a DLPack managed tensor (DLManagedTensorVersioned when
 * versioned != 0, else DLManagedTensor) over data, which lies inside blk.
 * It adopts one reference on blk that the caller has already taken: on
 * success the tensor's deleter drops it; on failure (NULL, out of memory)
 * the caller still owns it. shape has ndim entries (ndim <= ML_MAX_NDIM) and
 * is copied. */
MLC_INTERNAL void* mlc_export(mlc_block* blk, void* data, int versioned, int32_t ndim,
                 const int64_t* shape, uint8_t code, uint8_t bits);

#endif /* MINATOLOADER_CAPI_SHIM_H */
