/*
 * shim.c -- the public ml_* entry points of libminatoloader.so.
 *
 * Each one is a thin C wrapper that
 *   1. returns ML_ERR_FORKED, without entering Go, in a child process forked
 *      from the process that loaded the library (the Go runtime does not
 *      survive fork; entering it there hangs);
 *   2. clears this thread's last error message;
 *   3. calls the internal Go export mlgo_* (declared in _cgo_export.h, never
 *      in the public header), which sets the message on failure through
 *      mlc_set_error on this same thread.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "_cgo_export.h"
#include "shim.h"

/* ------------------------------------------------------------ fork guard */

static pid_t load_pid;
static int forked;

static void on_fork_child(void) { __atomic_store_n(&forked, 1, __ATOMIC_RELAXED); }

/* ------------------------------------------------------------ last error
 * Two heap buffers per thread, the message and its JSON detail, grown as
 * needed and freed at thread exit by their keys' destructors. */

typedef struct {
  char* p;
  size_t len;
  size_t cap;
} tbuf;

static pthread_key_t err_key, det_key;
static int err_key_ok, det_key_ok;
static __thread tbuf err_msg, err_det;

static void free_err(void* p) { free(p); }

__attribute__((constructor)) static void mlc_init(void) {
  load_pid = getpid();
  pthread_atfork(NULL, NULL, on_fork_child);
  err_key_ok = pthread_key_create(&err_key, free_err) == 0;
  det_key_ok = pthread_key_create(&det_key, free_err) == 0;
}

/* tbuf_set stores msg[0:n) in b. When the buffer cannot grow it keeps what
 * fits if partial is set, else stores nothing. */
static void tbuf_set(tbuf* b, pthread_key_t key, int key_ok, const char* msg,
                     size_t n, int partial) {
  if (n + 1 > b->cap) {
    size_t cap = n + 1 < 256 ? 256 : n + 1;
    char* p = realloc(b->p, cap);
    if (p != NULL) {
      b->p = p;
      b->cap = cap;
      if (key_ok) pthread_setspecific(key, p);
    } else if (b->cap == 0 || !partial) {
      b->len = 0;
      return;
    } else {
      n = b->cap - 1; /* keep what fits */
    }
  }
  if (n > 0) memcpy(b->p, msg, n);
  b->p[n] = '\0';
  b->len = n;
}

/* tbuf_copy copies s[0:n) into buf with the truncation rules of
 * ml_last_error and stores n in *needed. */
static void tbuf_copy(const char* s, size_t n, char* buf, size_t len,
                      size_t* needed) {
  if (needed != NULL) *needed = n;
  if (buf != NULL && len > 0) {
    size_t c = n < len - 1 ? n : len - 1;
    if (c > 0) memcpy(buf, s, c);
    buf[c] = '\0';
  }
}

void mlc_set_error(const char* msg, size_t n) {
  tbuf_set(&err_msg, err_key, err_key_ok, msg, n, 1);
  err_det.len = 0;
}

void mlc_set_error_detail(const char* json, size_t n) {
  tbuf_set(&err_det, det_key, det_key_ok, json, n, 0);
}

void mlc_clear_error(void) {
  err_msg.len = 0;
  err_det.len = 0;
}

static int in_forked_child(void) {
  return __atomic_load_n(&forked, __ATOMIC_RELAXED) || getpid() != load_pid;
}

#define FORKED_MSG                                                          \
  "minatoloader: called in a child process after fork(); the Go runtime "   \
  "does not survive fork, so only the process that loaded the library may " \
  "use it (start workers with spawn or forkserver, or fork before first "   \
  "use)"
#define DETAIL_TAIL                                                         \
  ",\"index\":null,\"path\":null,\"step\":null,\"python\":null,"               \
  "\"worker\":null,\"pid\":null,\"init\":false,\"skipped\":null,"             \
  "\"max_skipped\":null}"

static const char forked_msg[] = FORKED_MSG;
static const char forked_detail[] =
    "{\"status\":-5,\"kind\":\"forked\",\"message\":\"" FORKED_MSG "\"" DETAIL_TAIL;
/* The detail when the last call succeeded. */
static const char no_error_detail[] =
    "{\"status\":0,\"kind\":\"none\",\"message\":\"\"" DETAIL_TAIL;
/* The detail of a message whose detail could not be stored (no memory). */
static const char lost_detail[] =
    "{\"status\":0,\"kind\":\"unknown\",\"message\":\"minatoloader: the "
    "error detail could not be stored; ml_last_error has the message\"" DETAIL_TAIL;

/* ENTER is the prologue of every public call that enters Go. */
#define ENTER()                                           \
  do {                                                    \
    if (in_forked_child()) {                              \
      mlc_set_error(forked_msg, sizeof forked_msg - 1);   \
      mlc_set_error_detail(forked_detail,                 \
                           sizeof forked_detail - 1);     \
      return ML_ERR_FORKED;                               \
    }                                                     \
    mlc_clear_error();                                    \
  } while (0)

/* ------------------------------------------------------------ the calls */

int ml_abi_version(void) {
  mlc_clear_error();
  return ML_ABI_VERSION;
}

int ml_last_error(char* buf, size_t len, size_t* needed) {
  tbuf_copy(err_msg.p, err_msg.len, buf, len, needed);
  return ML_OK;
}

int ml_last_error_detail(char* buf, size_t len, size_t* needed) {
  if (err_det.len > 0) {
    tbuf_copy(err_det.p, err_det.len, buf, len, needed);
  } else if (err_msg.len == 0) {
    tbuf_copy(no_error_detail, sizeof no_error_detail - 1, buf, len, needed);
  } else {
    tbuf_copy(lost_detail, sizeof lost_detail - 1, buf, len, needed);
  }
  return ML_OK;
}

int ml_loader_create(const char* config_json, ml_loader_t* out) {
  ENTER();
  return mlgo_loader_create((char*)config_json, out);
}

int ml_loader_len(ml_loader_t loader, int64_t* batches, int64_t* samples) {
  ENTER();
  return mlgo_loader_len(loader, batches, samples);
}

int ml_loader_progress(ml_loader_t loader, int64_t* delivered, int64_t* skipped) {
  ENTER();
  return mlgo_loader_progress(loader, delivered, skipped);
}

int ml_loader_start_epoch(ml_loader_t loader, int64_t epoch) {
  ENTER();
  return mlgo_loader_start_epoch(loader, epoch);
}

int ml_loader_feed(ml_loader_t loader, const int64_t* indices, int64_t n,
                   const int64_t* sizes, int64_t nbatches, int32_t last) {
  ENTER();
  return mlgo_loader_feed(loader, (int64_t*)indices, n, (int64_t*)sizes,
                          nbatches, last);
}

int ml_loader_next(ml_loader_t loader, int64_t timeout_ms, ml_batch_t* out) {
  ENTER();
  return mlgo_loader_next(loader, timeout_ms, out);
}

int ml_dataset_info(const char* dataset_json, char* buf, size_t len,
                    size_t* needed) {
  ENTER();
  return mlgo_dataset_info((char*)dataset_json, buf, len, needed);
}

int ml_loader_stats(ml_loader_t loader, char* buf, size_t len, size_t* needed) {
  ENTER();
  return mlgo_loader_stats(loader, buf, len, needed);
}

int ml_loader_close(ml_loader_t loader) {
  ENTER();
  return mlgo_loader_close(loader);
}

int ml_batch_info(ml_batch_t batch, ml_batch_info_t* out) {
  ENTER();
  return mlgo_batch_info(batch, out);
}

int ml_batch_field(ml_batch_t batch, int32_t field, ml_field_info_t* out) {
  ENTER();
  return mlgo_batch_field(batch, field, out);
}

int ml_batch_export(ml_batch_t batch, int field, int versioned, int64_t stream,
                    void** out) {
  ENTER();
  return mlgo_batch_export(batch, field, versioned, stream, out);
}

int ml_batch_release(ml_batch_t batch) {
  ENTER();
  return mlgo_batch_release(batch);
}

int ml_counters(ml_counters_t* out) {
  ENTER();
  return mlgo_counters(out);
}
