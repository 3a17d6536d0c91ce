/*
 * block.c -- batch memory, DLPack tensors and the PyCapsule destructor.
 *
 * All reference counting and freeing of batch memory happens here, in C, so
 * that a DLPack deleter can run on any thread (a Python finalizer, a torch
 * worker, a forked child) without the GIL and without entering Go.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* ---------------------------------------------------------------- blocks */

static int64_t live_blocks;
static int64_t live_bytes;
static int64_t total_blocks;

mlc_block* mlc_block_alloc(size_t size) {
  /* aligned_alloc wants a multiple of the alignment; refuse sizes whose
   * rounding would overflow. */
  if (size > SIZE_MAX - 2 * ML_BLOCK_ALIGN) return NULL;
  size_t total = ML_BLOCK_ALIGN + (size + ML_BLOCK_ALIGN - 1) / ML_BLOCK_ALIGN *
                                      ML_BLOCK_ALIGN;
  mlc_block* blk = aligned_alloc(ML_BLOCK_ALIGN, total);
  if (blk == NULL) return NULL;
  blk->size = size;
  __atomic_store_n(&blk->refs, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&live_bytes, (int64_t)size, __ATOMIC_RELAXED);
  __atomic_add_fetch(&total_blocks, 1, __ATOMIC_RELAXED);
  return blk;
}

void* mlc_block_data(mlc_block* blk) {
  return (char*)blk + ML_BLOCK_ALIGN;
}

void mlc_block_ref(mlc_block* blk) {
  __atomic_add_fetch(&blk->refs, 1, __ATOMIC_RELAXED);
}

void mlc_block_unref(mlc_block* blk) {
  if (blk == NULL) return;
  /* Release on every drop, acquire on the last: every write to the block
   * happens before its free. */
  if (__atomic_sub_fetch(&blk->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  __atomic_sub_fetch(&live_bytes, (int64_t)blk->size, __ATOMIC_RELAXED);
  __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
  free(blk);
}

void mlc_counters(int64_t* lb, int64_t* lbytes, int64_t* tb) {
  *lb = __atomic_load_n(&live_blocks, __ATOMIC_RELAXED);
  *lbytes = __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
  *tb = __atomic_load_n(&total_blocks, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- DLPack
 * One malloc per tensor: the managed struct first (so free(self) frees it
 * all), then the manager context with the block reference and the shape. */

typedef struct {
  mlc_block* blk;
  int64_t shape[ML_MAX_NDIM];
} mlc_tensor_ctx;

typedef struct {
  DLManagedTensorVersioned t;
  mlc_tensor_ctx ctx;
} mlc_versioned;

typedef struct {
  DLManagedTensor t;
  mlc_tensor_ctx ctx;
} mlc_legacy;

static void versioned_deleter(DLManagedTensorVersioned* self) {
  if (self == NULL) return;
  mlc_tensor_ctx* ctx = self->manager_ctx;
  mlc_block_unref(ctx->blk);
  free(self);
}

static void legacy_deleter(DLManagedTensor* self) {
  if (self == NULL) return;
  mlc_tensor_ctx* ctx = self->manager_ctx;
  mlc_block_unref(ctx->blk);
  free(self);
}

static void fill_tensor(DLTensor* t, mlc_tensor_ctx* ctx, void* data,
                        int32_t ndim, const int64_t* shape, uint8_t code,
                        uint8_t bits) {
  memcpy(ctx->shape, shape, (size_t)ndim * sizeof(int64_t));
  t->data = data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = ndim;
  t->dtype.code = code;
  t->dtype.bits = bits;
  t->dtype.lanes = 1;
  t->shape = ctx->shape;
  t->strides = NULL;
  t->byte_offset = 0;
}

void* mlc_export(mlc_block* blk, void* data, int versioned, int32_t ndim,
                 const int64_t* shape, uint8_t code, uint8_t bits) {
  if (ndim < 0 || ndim > ML_MAX_NDIM) return NULL;
  if (versioned) {
    mlc_versioned* m = calloc(1, sizeof *m);
    if (m == NULL) return NULL;
    m->ctx.blk = blk;
    m->t.version.major = 1;
    m->t.version.minor = 1;
    m->t.manager_ctx = &m->ctx;
    m->t.deleter = versioned_deleter;
    m->t.flags = 0;
    fill_tensor(&m->t.dl_tensor, &m->ctx, data, ndim, shape, code, bits);
    return m;
  }
  mlc_legacy* m = calloc(1, sizeof *m);
  if (m == NULL) return NULL;
  m->ctx.blk = blk;
  m->t.manager_ctx = &m->ctx;
  m->t.deleter = legacy_deleter;
  fill_tensor(&m->t.dl_tensor, &m->ctx, data, ndim, shape, code, bits);
  return m;
}

/* ------------------------------------------------------ PyCapsule destructor
 * Python's C API is looked up at run time with dlsym(RTLD_DEFAULT, ...), so
 * the library never links libpython. The lookup is cached once it succeeds;
 * a process without Python finds nothing and the destructor does nothing. */

typedef int (*capsule_is_valid_fn)(void* capsule, const char* name);
typedef void* (*capsule_get_pointer_fn)(void* capsule, const char* name);
typedef void (*err_clear_fn)(void);

static capsule_is_valid_fn py_is_valid;
static capsule_get_pointer_fn py_get_pointer;
static err_clear_fn py_err_clear;

static int resolve_python(void) {
  if (__atomic_load_n(&py_get_pointer, __ATOMIC_ACQUIRE) != NULL) return 1;
  capsule_is_valid_fn iv =
      (capsule_is_valid_fn)dlsym(RTLD_DEFAULT, "PyCapsule_IsValid");
  capsule_get_pointer_fn gp =
      (capsule_get_pointer_fn)dlsym(RTLD_DEFAULT, "PyCapsule_GetPointer");
  err_clear_fn ec = (err_clear_fn)dlsym(RTLD_DEFAULT, "PyErr_Clear");
  if (iv == NULL || gp == NULL || ec == NULL) return 0;
  /* Racing resolvers store the same values. */
  __atomic_store_n(&py_is_valid, iv, __ATOMIC_RELAXED);
  __atomic_store_n(&py_err_clear, ec, __ATOMIC_RELAXED);
  __atomic_store_n(&py_get_pointer, gp, __ATOMIC_RELEASE);
  return 1;
}

void ml_dlpack_capsule_destructor(void* capsule) {
  if (capsule == NULL || !resolve_python()) return;
  capsule_is_valid_fn is_valid = __atomic_load_n(&py_is_valid, __ATOMIC_RELAXED);
  capsule_get_pointer_fn get_pointer =
      __atomic_load_n(&py_get_pointer, __ATOMIC_RELAXED);
  err_clear_fn err_clear = __atomic_load_n(&py_err_clear, __ATOMIC_RELAXED);
  /* PyCapsule_IsValid never sets an error; a consumed capsule was renamed
   * "used_dltensor..." by its consumer, which now owns the tensor. */
  if (is_valid(capsule, "dltensor_versioned")) {
    DLManagedTensorVersioned* t = get_pointer(capsule, "dltensor_versioned");
    if (t == NULL) {
      err_clear();
      return;
    }
    if (t->deleter != NULL) t->deleter(t);
  } else if (is_valid(capsule, "dltensor")) {
    DLManagedTensor* t = get_pointer(capsule, "dltensor");
    if (t == NULL) {
      err_clear();
      return;
    }
    if (t->deleter != NULL) t->deleter(t);
  }
}
