/*
 * minatoloader.h -- the C ABI of libminatoloader.so.
 *
 * This header is the contract. The library is built from Go
 * (go build -buildmode=c-shared) but no Go type appears here.
 *
 * Conventions
 *   - Every function starts with ml_ and returns an int status (ml_status);
 *     results come back through out-parameters.
 *   - On a negative status, ml_last_error() copies a message that names the
 *     argument or the sample at fault. The message is per calling thread.
 *   - Handles are opaque 64-bit integers; 0 is never a valid handle and no
 *     handle is ever reused. Destroying functions (ml_loader_close,
 *     ml_batch_release) are idempotent: closing 0 or an already closed handle
 *     returns ML_OK; a handle of the other kind gives ML_ERR_INVALID_HANDLE.
 *     Other calls on a closed loader return ML_ERR_CLOSED; on a released
 *     batch, ML_ERR_INVALID_HANDLE.
 *   - A NULL out-parameter gives ML_ERR_INVALID_ARGUMENT naming it, unless
 *     the function says it may be NULL.
 *   - Every export has a panic barrier: a bug inside the library returns
 *     ML_ERR_INTERNAL, it never aborts the host process.
 *   - After fork(), a child process gets ML_ERR_FORKED from every call
 *     (the Go runtime does not survive fork); only the parent may use the
 *     library. Start workers with spawn/forkserver, or fork before first use.
 *     Plain C stays usable in a child: ml_abi_version, ml_last_error,
 *     ml_last_error_detail, ml_dlpack_capsule_destructor and the deleters of exported tensors.
 *   - Thread safety: every function may be called from any thread. Calls on
 *     one loader are serialized internally.
 */
#ifndef MINATOLOADER_H
#define MINATOLOADER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on every incompatible change of this header. */
#define ML_ABI_VERSION 5

/* ---------------------------------------------------------------- DLPack
 * The subset of dlpack.h (v1.1) that the library produces. If the real
 * dlpack.h is included first, its identical definitions are used. */
#ifndef DLPACK_MAJOR_VERSION
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3
} DLDeviceType;
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;
typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
  kDLBool = 6
} DLDataTypeCode;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides; /* NULL: compact row-major */
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#endif /* DLPACK_MAJOR_VERSION */

/* ---------------------------------------------------------------- status */
typedef enum {
  ML_OK = 0,
  ML_END_OF_EPOCH = 1,          /* ml_loader_next: the epoch is complete */
  ML_TIMEOUT = 2,               /* ml_loader_next: no batch within timeout_ms */
  ML_ERR_INVALID_ARGUMENT = -1, /* bad argument or option; message names it */
  ML_ERR_INVALID_HANDLE = -2,   /* unknown handle, or wrong kind of handle */
  ML_ERR_SAMPLE = -3,           /* a sample failed; message names its index */
  ML_ERR_CLOSED = -4,           /* the loader was closed */
  ML_ERR_FORKED = -5,           /* called in a child after fork() */
  ML_ERR_NO_MEMORY = -6,        /* a buffer could not be allocated */
  ML_ERR_INTERNAL = -7,         /* a bug in the library (recovered panic) */
  ML_ERR_STATE = -8             /* call not valid in the current state */
} ml_status;

typedef uint64_t ml_loader_t; /* 0 is invalid */
typedef uint64_t ml_batch_t;  /* 0 is invalid */

/* Fields of a batch. A dataset declares its fields; they are numbered
 * 0..num_fields-1 in its order (ml_batch_field gives each one's name, shape
 * and dtype). The synthetic dataset's are 0 "data" and 1 "label" (int64).
 * ML_FIELD_INDICES is the dataset index of each row, in every batch. */
enum {
  ML_FIELD_DATA = 0,     /* field 0 */
  ML_FIELD_LABELS = 1,   /* field 1 */
  ML_FIELD_INDICES = -1  /* [n] int64 */
};

#define ML_MAX_NDIM 8

/* What ml_batch_info() reports. Pointers stay valid until the batch is
 * released with ml_batch_release(); a DLPack export keeps the memory alive
 * past that (see ml_batch_export). */
typedef struct {
  int64_t epoch;
  int64_t seq;           /* 0-based position of the batch in its epoch */
  int64_t num_samples;   /* rows in this batch (the last one may be short) */
  int64_t num_slow;      /* rows that went through the slow lane */
  int32_t num_fields;    /* fields 0..num_fields-1 (ml_batch_field) */
  DLDevice device;       /* kDLCPU today; kDLCUDA once the GPU path lands */
  int64_t* indices;      /* num_samples entries (NULL when 0 rows) */
} ml_batch_info_t;

/* What ml_batch_field() reports for one field. */
typedef struct {
  const char* name;      /* NUL-terminated; valid while the library is loaded */
  int32_t ndim;          /* including the batch dimension */
  int64_t shape[ML_MAX_NDIM]; /* shape[0] == num_samples */
  DLDataType dtype;
  DLDevice device;
  void* data;            /* 256-byte aligned, contiguous row-major */
  uint64_t bytes;
} ml_field_info_t;

/* Library-wide counters; a clean shutdown brings every live_* to 0. */
typedef struct {
  int64_t live_loaders;      /* loader handles not yet closed */
  int64_t live_batches;      /* batch handles not yet released */
  int64_t live_buffers;      /* batch memory blocks not yet freed
                                (held by batch handles or DLPack tensors) */
  int64_t live_buffer_bytes;
  int64_t live_goroutines;   /* goroutines started by loaders and running */
  int64_t total_buffers;     /* blocks ever allocated */
} ml_counters_t;

/* ---------------------------------------------------------------- calls */

/* ML_ABI_VERSION of the built library. Never fails. */
int ml_abi_version(void);

/* Copies this thread's last error message into buf (always NUL-terminated
 * when len > 0, truncated if needed) and stores the full length, without the
 * NUL, in *needed when needed is not NULL. Returns ML_OK; the message is ""
 * when the last call on this thread succeeded.
 * OWNERSHIP: buf is the caller's. */
int ml_last_error(char* buf, size_t len, size_t* needed);

/* Copies a JSON object describing this thread's last error into buf, with
 * the truncation rules of ml_last_error (a truncated copy is not valid
 * JSON: call again with a buffer of *needed + 1 bytes). Plain C: never
 * enters Go, usable in a forked child, does not change the last error.
 * Returns ML_OK. The object has every one of these keys, in this order:
 *   "status":      int, the status the failing call returned (0: none)
 *   "kind":        string; by status: "invalid_argument", "invalid_handle",
 *                  "sample", "closed", "forked", "no_memory", "internal",
 *                  "state", "timeout"; refined for ML_ERR_SAMPLE to
 *                  "python_exception" (a Python worker raised),
 *                  "worker_died" (a worker process exited or was killed) or
 *                  "skip_budget" (on_error=skip and more than max_skipped
 *                  samples failed; the last one's facts are filled in too,
 *                  and a Python exception or a dead worker keeps its kind,
 *                  with "skipped" set); "none" when the last call succeeded;
 *                  "unknown" when the detail could not be stored (no memory)
 *   "message":     string, what ml_last_error returns
 *   "index":       int|null, dataset index of the failing sample
 *   "path":        string|null, its file(s), for sources with files
 *   "step":        string|null, the failing step ("load" for the source,
 *                  "batch" for the batching checks, else a transform's name)
 *   "python":      {"module", "qualname", "traceback"}|null, the exception
 *                  a Python worker raised: its type is module.qualname, the
 *                  traceback is the worker's traceback.format_exc()
 *   "worker":      int|null, the worker's index in the pool
 *   "pid":         int|null, the worker's process id
 *   "init":        bool, the exception came from worker_init_fn or the
 *                  worker's setup (before it served any sample)
 *   "skipped":     int|null, samples skipped this epoch when the skip
 *                  budget was exceeded
 *   "max_skipped": int|null, the skip budget as a count of samples
 * Keys may be added in later versions; readers should ignore unknown keys
 * and kinds (an unknown kind is handled by its status).
 * OWNERSHIP: buf is the caller's. */
int ml_last_error_detail(char* buf, size_t len, size_t* needed);

/* Creates a loader from a JSON object of options (see README "Options").
 * Unknown keys and out-of-range values fail with ML_ERR_INVALID_ARGUMENT and
 * a message naming the key. "{}" (or "") gives the defaults. Every size
 * the library allocates from has an upper bound (batch_size and max_inflight
 * 2^22, prefetch_batches 2^16, worker counts 4096, a synthetic sample 2 GiB;
 * docs/failure-modes.md): a failed allocation inside Go cannot be recovered
 * (the runtime aborts the process), so sizes past a bound are refused here.
 * Returns: ML_OK, ML_ERR_INVALID_ARGUMENT, ML_ERR_NO_MEMORY, ML_ERR_FORKED,
 * ML_ERR_INTERNAL.
 * A "python" dataset ({"kind": "python", "procs": [{"fd", "pid", "arena_fd",
 * "arena_size"}...]}, docs/worker-protocol.md) is served by worker processes
 * over the given socket fds; such a loader needs "feed": true.
 * OWNERSHIP: config_json is the caller's and is not kept; *out belongs to the
 * caller, who must ml_loader_close() it. The procs' socket fds belong to the
 * library from this call on, whether it succeeds or fails (they are shut down
 * and closed by ml_loader_close or by the failure); arena fds stay the
 * caller's and must stay open while the loader lives. */
int ml_loader_create(const char* config_json, ml_loader_t* out);

/* Opens the dataset a JSON object describes (the "dataset" option of a
 * loader config) and copies a JSON object about it into buf, with the
 * truncation rules of ml_last_error: {"length": n, "fields": [{"name",
 * "dtype", "shape"}...], "classes": [...]} (classes for folder datasets).
 * Use it to validate a dataset and learn its length before a loader.
 * Returns: ML_OK, ML_ERR_INVALID_ARGUMENT (the message names the option or
 * the file at fault).
 * OWNERSHIP: both buffers are the caller's. */
int ml_dataset_info(const char* dataset_json, char* buf, size_t len,
                    size_t* needed);

/* Number of batches and of samples one epoch delivers (after rank slicing
 * and drop_last). batches or samples may be NULL.
 * Returns: ML_OK, ML_ERR_INVALID_HANDLE, ML_ERR_CLOSED. */
int ml_loader_len(ml_loader_t loader, int64_t* batches, int64_t* samples);

/* The current epoch's samples delivered (in batches ml_loader_next
 * returned) and skipped (left out under on_error "skip"); 0 and 0 before the
 * first epoch. The host of a "feed" loader keeps max_inflight samples fed
 * beyond delivered + skipped: a skipped sample frees its place in flight
 * without reaching a batch. delivered or skipped may be NULL.
 * Returns: ML_OK, ML_ERR_INVALID_HANDLE, ML_ERR_CLOSED. */
int ml_loader_progress(ml_loader_t loader, int64_t* delivered,
                       int64_t* skipped);

/* Starts epoch `epoch` (>= 0): samples are ordered by (seed, epoch) and
 * work begins at once in the background. An epoch still running is
 * cancelled first; its undelivered batches are dropped.
 * Returns: ML_OK, ML_ERR_INVALID_ARGUMENT, ML_ERR_INVALID_HANDLE,
 * ML_ERR_CLOSED. */
int ml_loader_start_epoch(ml_loader_t loader, int64_t epoch);

/* Appends whole batches to the current epoch's order, for a loader created
 * with "feed": true (the host's sampler orders the samples; a Python
 * dataset's loader always is). sizes[0..nbatches) cut indices[0..n) into
 * batches (each >= 1, at most max_inflight, summing to n); last != 0 ends the
 * epoch's order. Keep at least max_inflight samples fed beyond the samples
 * received and skipped (ml_loader_progress), or end the order, else
 * ml_loader_next waits for more.
 * Returns: ML_OK, ML_ERR_INVALID_ARGUMENT (sizes do not add up, an index out
 * of range, the order already ended, not a feed loader), ML_ERR_STATE (no
 * epoch started), ML_ERR_INVALID_HANDLE, ML_ERR_CLOSED.
 * OWNERSHIP: indices and sizes are the caller's; they are copied. */
int ml_loader_feed(ml_loader_t loader, const int64_t* indices, int64_t n,
                   const int64_t* sizes, int64_t nbatches, int32_t last);

/* Waits for the next batch of the current epoch. timeout_ms < 0 waits
 * without limit (the wait can still be ended by ml_loader_close from another
 * thread, which makes it return ML_ERR_CLOSED). timeout_ms = 0 polls: a
 * batch that is ready is always returned.
 * Returns: ML_OK (*out is a new batch handle), ML_END_OF_EPOCH (every
 * sample was delivered; 0 in *out), ML_TIMEOUT, ML_ERR_SAMPLE (the message
 * names the sample; the epoch is over), ML_ERR_STATE (no epoch started),
 * ML_ERR_INVALID_ARGUMENT (out is NULL), ML_ERR_INVALID_HANDLE,
 * ML_ERR_CLOSED, ML_ERR_NO_MEMORY.
 * OWNERSHIP: *out belongs to the caller: release it with ml_batch_release. */
int ml_loader_next(ml_loader_t loader, int64_t timeout_ms, ml_batch_t* out);

/* Copies a JSON object of the loader's stats (samples, fast/slow counts,
 * threshold, workers, queue depths, consumer wait) into buf, with the same
 * truncation rules as ml_last_error (buf may be NULL when len is 0, to ask
 * for *needed). Returns: ML_OK, ML_ERR_INVALID_HANDLE, ML_ERR_CLOSED.
 * OWNERSHIP: buf is the caller's. */
int ml_loader_stats(ml_loader_t loader, char* buf, size_t len, size_t* needed);

/* Stops every goroutine of the loader and waits for them, at most
 * "stop_timeout_ms" (default 2000): a goroutine inside a read that never
 * returns (a stuck network file system) is abandoned, counted in the stats
 * ("abandoned_stops"), and frees what it holds when the read returns. The
 * same bound applies to ml_loader_start_epoch stopping the running epoch.
 * Pending batches are freed. Batches already handed out stay valid until
 * released. A concurrent ml_loader_next returns ML_ERR_CLOSED.
 * Idempotent. Returns: ML_OK, ML_ERR_INVALID_HANDLE (a batch handle). */
int ml_loader_close(ml_loader_t loader);

/* Fills *out. Returns: ML_OK, ML_ERR_INVALID_ARGUMENT (out is NULL),
 * ML_ERR_INVALID_HANDLE. */
int ml_batch_info(ml_batch_t batch, ml_batch_info_t* out);

/* Fills *out with field `field` (0..num_fields-1, or ML_FIELD_INDICES).
 * Returns: ML_OK, ML_ERR_INVALID_ARGUMENT (out is NULL or no such field),
 * ML_ERR_INVALID_HANDLE. */
int ml_batch_field(ml_batch_t batch, int32_t field, ml_field_info_t* out);

/* Exports one field of a batch as a DLPack managed tensor.
 * versioned != 0 gives a DLManagedTensorVersioned*, else a DLManagedTensor*.
 * stream is the consumer's stream for device batches (DLPack __dlpack__
 * semantics); it must be -1 or 0 for CPU batches.
 * field is 0..num_fields-1 or ML_FIELD_INDICES (shapes and dtypes as
 * ml_batch_field reports them). The tensor is C-contiguous (strides NULL)
 * on {kDLCPU, 0}. A versioned tensor has version {1, 1}, flags 0.
 * Returns: ML_OK, ML_ERR_INVALID_ARGUMENT (field, stream, or out NULL),
 * ML_ERR_INVALID_HANDLE, ML_ERR_NO_MEMORY.
 * OWNERSHIP: the caller owns *out and must call its deleter exactly once
 * (a DLPack consumer does). The tensor keeps the batch memory alive on its
 * own: the batch handle may be released before or after. The deleter is
 * plain C: it may run on any thread, without Python's GIL. */
int ml_batch_export(ml_batch_t batch, int field, int versioned, int64_t stream,
                    void** out);

/* Releases a batch handle. The memory is freed once every DLPack tensor
 * exported from it has been deleted as well. Idempotent.
 * Returns: ML_OK, ML_ERR_INVALID_HANDLE (a loader handle). */
int ml_batch_release(ml_batch_t batch);

/* A PyCapsule destructor, for Python bindings that wrap ml_batch_export's
 * result in a capsule named "dltensor" or "dltensor_versioned". When the
 * capsule was never consumed (its name is unchanged) it calls the tensor's
 * deleter; a consumed capsule ("used_dltensor...") is left alone. Python's
 * C API is looked up at run time; the library does not link libpython. */
void ml_dlpack_capsule_destructor(void* capsule);

/* Fills *out with the library-wide counters.
 * Returns: ML_OK, ML_ERR_INVALID_ARGUMENT (out is NULL). */
int ml_counters(ml_counters_t* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MINATOLOADER_H */
