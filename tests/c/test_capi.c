/*
 * test_capi.c -- the C ABI of libminatoloader.so, exercised from C.
 *
 * Built and run by `make ctest`:
 *   cc -std=c11 -I include tests/c/test_capi.c -L build \
 *      -Wl,-rpath,$PWD/build -lminatoloader -lpthread -rdynamic
 * -rdynamic exports the fake PyCapsule_* functions below, which the
 * library's capsule destructor finds with dlsym(RTLD_DEFAULT, ...).
 *
 * Prints one line per failed check and ends with "N passed, M failed";
 * exits non-zero on any failure.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "minatoloader.h"

static int passed, failed;

#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (cond) {                                                   \
      passed++;                                                   \
    } else {                                                      \
      failed++;                                                   \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                               \
      fprintf(stderr, "\n");                                      \
    }                                                             \
  } while (0)

#define CHECK_RC(call, want)                                                \
  do {                                                                      \
    int rc_ = (call);                                                       \
    CHECK(rc_ == (want), "%s returned %d, want %d (%s)", #call, rc_, (want), \
          last_error());                                                    \
  } while (0)

static const char* last_error(void) {
  static __thread char buf[4096];
  ml_last_error(buf, sizeof buf, NULL);
  return buf;
}

/* last_detail is this thread's ml_last_error_detail, read through a small
 * buffer first so that the truncation path is exercised too. */
static const char* last_detail(void) {
  static __thread char buf[8192];
  char small[8];
  size_t needed = 0, needed2 = 0;
  ml_last_error_detail(small, sizeof small, &needed);
  ml_last_error_detail(buf, sizeof buf, &needed2);
  CHECK(needed == needed2 && needed == strlen(buf) && needed < sizeof buf,
        "detail needed %zu then %zu, strlen %zu", needed, needed2, strlen(buf));
  CHECK(small[sizeof small - 1] == '\0' &&
            strncmp(small, buf, sizeof small - 1) == 0,
        "truncated detail %.8s", small);
  return buf;
}

/* CHECK_DETAIL checks that the detail JSON contains fragment (compact JSON, as
 * the library writes it). */
#define CHECK_DETAIL(fragment)                                          \
  do {                                                                 \
    const char* d_ = last_detail();                                    \
    CHECK(strstr(d_, fragment) != NULL, "detail lacks %s: %s", fragment, d_); \
  } while (0)

static ml_counters_t counters(void) {
  ml_counters_t c;
  memset(&c, 0xff, sizeof c);
  int rc = ml_counters(&c);
  CHECK(rc == ML_OK, "ml_counters: %d", rc);
  return c;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------- fake Python C API
 * Just enough of PyCapsule for ml_dlpack_capsule_destructor, exported from
 * this executable (-rdynamic) so that dlsym(RTLD_DEFAULT, ...) finds it. */

typedef struct {
  const char* name;
  void* pointer;
} fake_capsule;

int fake_error_set;
int fake_clear_calls;

int PyCapsule_IsValid(void* capsule, const char* name) {
  fake_capsule* c = capsule;
  return c != NULL && c->pointer != NULL && c->name != NULL && name != NULL &&
         strcmp(c->name, name) == 0;
}

void* PyCapsule_GetPointer(void* capsule, const char* name) {
  if (!PyCapsule_IsValid(capsule, name)) {
    fake_error_set = 1;
    return NULL;
  }
  return ((fake_capsule*)capsule)->pointer;
}

void PyErr_Clear(void) {
  fake_error_set = 0;
  fake_clear_calls++;
}

/* ------------------------------------------------------------ tests */

static void test_abi_and_errors(void) {
  CHECK(ml_abi_version() == ML_ABI_VERSION, "abi %d", ml_abi_version());

  ml_loader_t l = 77;
  CHECK_RC(ml_loader_create("{", &l), ML_ERR_INVALID_ARGUMENT);
  CHECK(l == 0, "out not zeroed on failure: %llu", (unsigned long long)l);
  CHECK(strlen(last_error()) > 0, "empty message for bad JSON");

  CHECK_RC(ml_loader_create("{\"bogus_key\": 1}", &l), ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "bogus_key") != NULL, "message: %s", last_error());
  /* The detail: status and kind, the message, no sample facts. */
  CHECK_DETAIL("{\"status\":-1,\"kind\":\"invalid_argument\",\"message\":\"ml_loader_create: ");
  CHECK_DETAIL("bogus_key");
  CHECK_DETAIL("\"index\":null,\"path\":null,\"step\":null,\"python\":null,"
               "\"worker\":null,\"pid\":null,\"init\":false,\"skipped\":null,"
               "\"max_skipped\":null}");
  /* Reading the detail does not clear the error. */
  CHECK(strstr(last_error(), "bogus_key") != NULL, "message: %s", last_error());

  CHECK_RC(ml_loader_create("{\"batch_size\": 0}", &l), ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "batch_size") != NULL, "message: %s", last_error());

  CHECK_RC(ml_loader_create("{\"dataset\": {\"dtype\": \"complex7\"}}", &l),
           ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "dtype") != NULL, "message: %s", last_error());

  /* Sizes that reach an allocation are bounded: 2^40 used to abort the
   * host (Go's fatal out-of-memory); now each names its option. */
  static const char *const huge[][2] = {
      {"{\"batch_size\": 1099511627776}", "batch_size"},
      {"{\"max_inflight\": 1099511627776}", "max_inflight"},
      {"{\"prefetch_batches\": 1099511627776}", "prefetch_batches"},
      {"{\"workers\": 1099511627776}", "workers"},
      {"{\"dataset\": {\"length\": 1099511627776}}", "length"},
      {"{\"dataset\": {\"shape\": [2147483648], \"dtype\": \"float64\"}}", "shape"},
  };
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
    CHECK_RC(ml_loader_create(huge[i][0], &l), ML_ERR_INVALID_ARGUMENT);
    CHECK(strstr(last_error(), huge[i][1]) != NULL, "%s: message: %s", huge[i][0], last_error());
  }

  CHECK_RC(ml_loader_create("{}", NULL), ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "out") != NULL, "message: %s", last_error());
  CHECK_RC(ml_loader_create(NULL, &l), ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "config_json") != NULL, "message: %s", last_error());

  /* Truncation: always NUL-terminated, *needed is the full length. */
  CHECK_RC(ml_loader_create("{\"batch_size\": 0}", &l), ML_ERR_INVALID_ARGUMENT);
  char full[4096];
  size_t needed = 0;
  CHECK_RC(ml_last_error(full, sizeof full, &needed), ML_OK);
  CHECK(needed == strlen(full) && needed > 4, "needed %zu, strlen %zu", needed,
        strlen(full));
  char small[4] = {'x', 'x', 'x', 'x'};
  size_t needed2 = 0;
  CHECK_RC(ml_last_error(small, sizeof small, &needed2), ML_OK);
  CHECK(needed2 == needed, "needed %zu vs %zu", needed2, needed);
  CHECK(small[3] == '\0' && memcmp(small, full, 3) == 0, "truncated copy wrong");
  CHECK_RC(ml_last_error(NULL, 0, &needed2), ML_OK);
  CHECK(needed2 == needed, "needed with NULL buf %zu", needed2);
  char one[1] = {'x'};
  CHECK_RC(ml_last_error(one, 1, NULL), ML_OK);
  CHECK(one[0] == '\0', "len 1 must give an empty string");

  /* A successful call clears the message. */
  ml_counters_t c;
  CHECK_RC(ml_counters(&c), ML_OK);
  CHECK(strcmp(last_error(), "") == 0, "message after success: %s", last_error());
  CHECK_DETAIL("{\"status\":0,\"kind\":\"none\",\"message\":\"\",");
  CHECK_RC(ml_counters(NULL), ML_ERR_INVALID_ARGUMENT);
  CHECK_DETAIL("\"kind\":\"invalid_argument\"");
  /* A handle error has its own kind. */
  CHECK_RC(ml_loader_close(12345), ML_ERR_INVALID_HANDLE);
  CHECK_DETAIL("{\"status\":-2,\"kind\":\"invalid_handle\",");
}

static void* thread_success(void* arg) {
  (void)arg;
  ml_counters_t c;
  ml_counters(&c);
  return NULL;
}

static void test_error_per_thread(void) {
  ml_loader_t l;
  CHECK_RC(ml_loader_create("{\"batch_size\": -3}", &l), ML_ERR_INVALID_ARGUMENT);
  pthread_t t;
  pthread_create(&t, NULL, thread_success, NULL);
  pthread_join(t, NULL);
  CHECK(strstr(last_error(), "batch_size") != NULL,
        "another thread's success cleared this thread's message: %s",
        last_error());
}

/* run_epoch iterates one epoch and checks every batch. */
static void run_epoch(ml_loader_t l, int64_t epoch, int64_t length,
                      int64_t batch_size, int drop_last) {
  int64_t want_batches = drop_last ? length / batch_size
                                   : (length + batch_size - 1) / batch_size;
  int64_t want_samples = drop_last ? want_batches * batch_size : length;
  int64_t nb = -1, ns = -1;
  CHECK_RC(ml_loader_len(l, &nb, &ns), ML_OK);
  CHECK(nb == want_batches && ns == want_samples,
        "len: %lld batches %lld samples, want %lld %lld", (long long)nb,
        (long long)ns, (long long)want_batches, (long long)want_samples);

  CHECK_RC(ml_loader_start_epoch(l, epoch), ML_OK);
  int* seen = calloc((size_t)length, sizeof(int));
  int64_t batches = 0, samples = 0, short_batches = 0, last_n = -1;
  for (;;) {
    ml_batch_t b = 0;
    int rc = ml_loader_next(l, 10000, &b);
    if (rc == ML_END_OF_EPOCH) {
      CHECK(b == 0, "handle on END_OF_EPOCH");
      break;
    }
    CHECK(rc == ML_OK, "next: %d (%s)", rc, last_error());
    if (rc != ML_OK) break;
    CHECK(b != 0, "zero batch handle");
    ml_batch_info_t info;
    CHECK_RC(ml_batch_info(b, &info), ML_OK);
    CHECK(info.epoch == epoch, "epoch %lld", (long long)info.epoch);
    CHECK(info.seq == batches, "seq %lld, want %lld", (long long)info.seq,
          (long long)batches);
    CHECK(info.num_samples >= 1 && info.num_samples <= batch_size, "n %lld",
          (long long)info.num_samples);
    CHECK(info.num_slow >= 0 && info.num_slow <= info.num_samples, "slow %lld",
          (long long)info.num_slow);
    CHECK(info.num_fields == 2, "num_fields %d", info.num_fields);
    CHECK(info.device.device_type == kDLCPU && info.device.device_id == 0,
          "device");
    ml_field_info_t fd, fl, fi;
    CHECK_RC(ml_batch_field(b, ML_FIELD_DATA, &fd), ML_OK);
    CHECK_RC(ml_batch_field(b, ML_FIELD_LABELS, &fl), ML_OK);
    CHECK_RC(ml_batch_field(b, ML_FIELD_INDICES, &fi), ML_OK);
    CHECK(strcmp(fd.name, "data") == 0 && strcmp(fl.name, "label") == 0 &&
              strcmp(fi.name, "indices") == 0,
          "names %s %s %s", fd.name, fl.name, fi.name);
    CHECK(fd.ndim == 2 && fd.shape[0] == info.num_samples && fd.shape[1] == 4,
          "shape ndim %d [%lld, %lld]", fd.ndim, (long long)fd.shape[0],
          (long long)fd.shape[1]);
    CHECK(fd.dtype.code == kDLFloat && fd.dtype.bits == 32 &&
              fd.dtype.lanes == 1,
          "dtype %d/%d/%d", fd.dtype.code, fd.dtype.bits, fd.dtype.lanes);
    CHECK(fl.ndim == 1 && fl.shape[0] == info.num_samples &&
              fl.dtype.code == kDLInt && fl.dtype.bits == 64,
          "label field ndim %d dtype %d/%d", fl.ndim, fl.dtype.code,
          fl.dtype.bits);
    CHECK(fd.bytes == (uint64_t)info.num_samples * 4 * sizeof(float),
          "data bytes %llu", (unsigned long long)fd.bytes);
    CHECK(fd.data && fl.data && info.indices && fi.data == info.indices,
          "NULL or inconsistent pointers");
    CHECK((uintptr_t)fd.data % 256 == 0 && (uintptr_t)fl.data % 256 == 0 &&
              (uintptr_t)info.indices % 256 == 0,
          "alignment %p %p %p", fd.data, fl.data, (void*)info.indices);
    if (info.num_samples < batch_size) short_batches++;
    last_n = info.num_samples;
    for (int64_t i = 0; info.indices && i < info.num_samples; i++) {
      int64_t ix = info.indices[i];
      CHECK(ix >= 0 && ix < length, "index %lld out of range", (long long)ix);
      if (ix >= 0 && ix < length) seen[ix]++;
      int64_t label = ((int64_t*)fl.data)[i];
      CHECK(label >= 0, "label %lld", (long long)label);
      /* Touch every data byte (ASan/valgrind would flag a bad pointer). */
      volatile float f = ((float*)fd.data)[i * 4 + 3];
      (void)f;
    }
    samples += info.num_samples;
    batches++;
    CHECK_RC(ml_batch_release(b), ML_OK);
    CHECK_RC(ml_batch_release(b), ML_OK); /* idempotent */
  }
  CHECK(batches == want_batches, "%lld batches, want %lld", (long long)batches,
        (long long)want_batches);
  CHECK(samples == want_samples, "%lld samples, want %lld", (long long)samples,
        (long long)want_samples);
  int64_t want_short = (!drop_last && length % batch_size) ? 1 : 0;
  CHECK(short_batches == want_short, "%lld short batches, want %lld",
        (long long)short_batches, (long long)want_short);
  if (want_short)
    CHECK(last_n == length % batch_size, "last batch has %lld rows",
          (long long)last_n);
  int64_t once = 0, dropped = 0;
  for (int64_t i = 0; i < length; i++) {
    if (seen[i] == 1) once++;
    if (seen[i] == 0) dropped++;
    CHECK(seen[i] <= 1, "index %lld delivered %d times", (long long)i, seen[i]);
  }
  CHECK(once == want_samples && dropped == length - want_samples,
        "%lld indices once, %lld never", (long long)once, (long long)dropped);
  free(seen);

  /* The epoch stays over. */
  ml_batch_t b = 0;
  CHECK_RC(ml_loader_next(l, 1000, &b), ML_END_OF_EPOCH);
}

static const char* cfg_small =
    "{\"batch_size\":8,\"dataset\":{\"length\":100,\"shape\":[4],"
    "\"dtype\":\"float32\"},\"workers\":2,\"seed\":1,\"shuffle\":true}";

static void test_epochs(void) {
  ml_loader_t l = 0;
  CHECK_RC(ml_loader_create(cfg_small, &l), ML_OK);
  CHECK(l != 0, "zero loader handle");
  ml_batch_t b = 5;
  CHECK_RC(ml_loader_next(l, 100, &b), ML_ERR_STATE);
  CHECK(b == 0, "out not zeroed");
  CHECK_RC(ml_loader_next(l, 100, NULL), ML_ERR_INVALID_ARGUMENT);
  CHECK_RC(ml_loader_start_epoch(l, -1), ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "epoch") != NULL, "message: %s", last_error());

  run_epoch(l, 0, 100, 8, 0);
  run_epoch(l, 1, 100, 8, 0);

  char stats[8192];
  size_t needed = 0;
  CHECK_RC(ml_loader_stats(l, stats, sizeof stats, &needed), ML_OK);
  CHECK(needed == strlen(stats) && stats[0] == '{' && stats[needed - 1] == '}',
        "stats: %s", stats);
  char tiny[2];
  size_t needed2 = 0;
  CHECK_RC(ml_loader_stats(l, tiny, sizeof tiny, &needed2), ML_OK);
  CHECK(needed2 == needed && tiny[0] == '{' && tiny[1] == '\0',
        "truncated stats");
  CHECK_RC(ml_loader_stats(l, NULL, 0, &needed2), ML_OK);

  CHECK_RC(ml_loader_close(l), ML_OK);
  CHECK_RC(ml_loader_close(l), ML_OK);
  CHECK_RC(ml_loader_next(l, 100, &b), ML_ERR_CLOSED);
  CHECK_RC(ml_loader_start_epoch(l, 0), ML_ERR_CLOSED);

  ml_loader_t d = 0;
  CHECK_RC(ml_loader_create(
               "{\"batch_size\":8,\"dataset\":{\"length\":100,\"shape\":[4],"
               "\"dtype\":\"float32\"},\"workers\":2,\"seed\":1,"
               "\"shuffle\":true,\"drop_last\":true}",
               &d),
           ML_OK);
  run_epoch(d, 0, 100, 8, 1);
  CHECK_RC(ml_loader_close(d), ML_OK);
}

/* A fed loader: the host supplies the order in whole batches of any size
 * (as a Python sampler does); in_order gives exactly those batches. */
static void test_feed(void) {
  ml_loader_t l = 0;
  CHECK_RC(ml_loader_create(
               "{\"feed\":true,\"in_order\":true,\"batch_size\":4,"
               "\"max_inflight\":16,\"workers\":2,\"dataset\":{\"length\":50,"
               "\"shape\":[2],\"dtype\":\"float32\"}}",
               &l),
           ML_OK);
  int64_t idx[] = {7, 3, 9, 1, 0, 44, 12, 5, 6};
  int64_t sizes1[] = {3, 1};
  int64_t sizes2[] = {5};
  CHECK_RC(ml_loader_feed(l, idx, 4, sizes1, 2, 0), ML_ERR_STATE);
  CHECK_RC(ml_loader_start_epoch(l, 0), ML_OK);
  int64_t bad_sizes[] = {3};
  CHECK_RC(ml_loader_feed(l, idx, 4, bad_sizes, 1, 0), ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "add up") != NULL, "message: %s", last_error());
  int64_t out_of_range[] = {50};
  int64_t one[] = {1};
  CHECK_RC(ml_loader_feed(l, out_of_range, 1, one, 1, 0), ML_ERR_INVALID_ARGUMENT);
  CHECK_RC(ml_loader_feed(l, NULL, 1, one, 1, 0), ML_ERR_INVALID_ARGUMENT);
  CHECK_RC(ml_loader_feed(l, idx, 4, sizes1, 2, 0), ML_OK);
  CHECK_RC(ml_loader_feed(l, idx + 4, 5, sizes2, 1, 1), ML_OK);
  CHECK_RC(ml_loader_feed(l, idx, 1, one, 1, 1), ML_ERR_INVALID_ARGUMENT);
  const int64_t want_n[] = {3, 1, 5};
  int at = 0;
  for (int k = 0; k < 3; k++) {
    ml_batch_t b = 0;
    CHECK_RC(ml_loader_next(l, 10000, &b), ML_OK);
    ml_batch_info_t bi;
    CHECK_RC(ml_batch_info(b, &bi), ML_OK);
    CHECK(bi.num_samples == want_n[k], "batch %d: %lld samples", k,
          (long long)bi.num_samples);
    for (int64_t i = 0; i < bi.num_samples && at < 9; i++, at++)
      CHECK(bi.indices[i] == idx[at], "batch %d row %lld: index %lld", k,
            (long long)i, (long long)bi.indices[i]);
    CHECK_RC(ml_batch_release(b), ML_OK);
  }
  ml_batch_t b = 0;
  CHECK_RC(ml_loader_next(l, 10000, &b), ML_END_OF_EPOCH);
  CHECK_RC(ml_loader_close(l), ML_OK);
  /* Skipped samples are reported, so that the host feeds beyond them. */
  CHECK_RC(ml_loader_create(
               "{\"feed\":true,\"batch_size\":4,\"max_inflight\":8,"
               "\"on_error\":\"skip\",\"workers\":2,\"dataset\":{"
               "\"length\":20,\"shape\":[2],\"dtype\":\"float32\","
               "\"fail_indices\":[1,2,3,5]}}",
               &l),
           ML_OK);
  int64_t delivered = -1, skipped = -1;
  CHECK_RC(ml_loader_progress(l, &delivered, &skipped), ML_OK);
  CHECK(delivered == 0 && skipped == 0, "before an epoch: %lld, %lld",
        (long long)delivered, (long long)skipped);
  CHECK_RC(ml_loader_start_epoch(l, 0), ML_OK);
  int64_t order[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int64_t fours[2] = {4, 4};
  CHECK_RC(ml_loader_feed(l, order, 8, fours, 2, 1), ML_OK);
  int64_t got = 0;
  for (;;) {
    ml_batch_t fb = 0;
    int rc = ml_loader_next(l, 10000, &fb);
    if (rc == ML_END_OF_EPOCH) break;
    CHECK_RC(rc, ML_OK);
    if (rc != ML_OK) break;
    ml_batch_info_t bi;
    CHECK_RC(ml_batch_info(fb, &bi), ML_OK);
    got += bi.num_samples;
    CHECK_RC(ml_batch_release(fb), ML_OK);
  }
  CHECK_RC(ml_loader_progress(l, &delivered, NULL), ML_OK);
  CHECK_RC(ml_loader_progress(l, NULL, &skipped), ML_OK);
  CHECK(got == 4 && delivered == 4 && skipped == 4,
        "got %lld, progress %lld delivered, %lld skipped", (long long)got,
        (long long)delivered, (long long)skipped);
  CHECK_RC(ml_loader_close(l), ML_OK);
  CHECK_RC(ml_loader_progress(l, &delivered, &skipped), ML_ERR_CLOSED);
  /* A loader that orders itself refuses a feed. */
  CHECK_RC(ml_loader_create(cfg_small, &l), ML_OK);
  CHECK_RC(ml_loader_start_epoch(l, 0), ML_OK);
  CHECK_RC(ml_loader_feed(l, idx, 1, one, 1, 1), ML_ERR_INVALID_ARGUMENT);
  CHECK_RC(ml_loader_close(l), ML_OK);
}

/* next_batch starts epoch 0 of a fresh loader and returns its first batch. */
static ml_batch_t first_batch(ml_loader_t* lp) {
  ml_batch_t b = 0;
  CHECK_RC(ml_loader_create(cfg_small, lp), ML_OK);
  CHECK_RC(ml_loader_start_epoch(*lp, 0), ML_OK);
  CHECK_RC(ml_loader_next(*lp, 10000, &b), ML_OK);
  return b;
}

static void check_tensor(const DLTensor* t, ml_batch_t b, int field) {
  ml_field_info_t fi;
  CHECK_RC(ml_batch_field(b, field, &fi), ML_OK);
  CHECK(t->device.device_type == kDLCPU && t->device.device_id == 0, "device");
  CHECK(t->strides == NULL && t->byte_offset == 0, "strides/offset");
  CHECK(t->dtype.lanes == 1, "lanes");
  CHECK(t->data == fi.data, "field %d pointer", field);
  CHECK(t->ndim == fi.ndim, "field %d ndim %d", field, t->ndim);
  for (int i = 0; i < t->ndim && i < fi.ndim; i++)
    CHECK(t->shape[i] == fi.shape[i], "field %d shape[%d]", field, i);
  CHECK(t->dtype.code == fi.dtype.code && t->dtype.bits == fi.dtype.bits,
        "field %d dtype", field);
  if (field == ML_FIELD_DATA)
    CHECK(t->dtype.code == kDLFloat && t->dtype.bits == 32, "data dtype");
  else
    CHECK(t->ndim == 1 && t->dtype.code == kDLInt && t->dtype.bits == 64,
          "field %d: 1-D int64", field);
}

static void test_dlpack(void) {
  ml_loader_t l = 0;
  ml_batch_t b = first_batch(&l);
  ml_batch_info_t info;
  CHECK_RC(ml_batch_info(b, &info), ML_OK);
  ml_field_info_t fd;
  CHECK_RC(ml_batch_field(b, ML_FIELD_DATA, &fd), ML_OK);
  CHECK_RC(ml_batch_field(b, 2, &fd), ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "field 2") != NULL, "message: %s", last_error());
  CHECK_RC(ml_batch_field(b, ML_FIELD_DATA, NULL), ML_ERR_INVALID_ARGUMENT);
  CHECK_RC(ml_batch_field(b, ML_FIELD_DATA, &fd), ML_OK);
  /* After close only the batch handed out keeps a block. */
  CHECK_RC(ml_loader_close(l), ML_OK);
  ml_counters_t c = counters();
  CHECK(c.live_buffers == 1 && c.live_batches == 1 && c.live_loaders == 0,
        "after close: buffers %lld batches %lld loaders %lld",
        (long long)c.live_buffers, (long long)c.live_batches,
        (long long)c.live_loaders);
  CHECK(c.live_goroutines == 0, "goroutines %lld after close",
        (long long)c.live_goroutines);
  CHECK(c.live_buffer_bytes >= (int64_t)fd.bytes, "bytes %lld",
        (long long)c.live_buffer_bytes);
  /* The batch stays readable after its loader is closed. */
  CHECK_RC(ml_batch_info(b, &info), ML_OK);
  CHECK(info.indices[0] >= 0 && info.indices[0] < 100, "index after close");

  void* p = NULL;
  CHECK_RC(ml_batch_export(b, 3, 1, -1, &p), ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "field") != NULL, "message: %s", last_error());
  CHECK_RC(ml_batch_export(b, -2, 1, -1, &p), ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "field") != NULL, "message: %s", last_error());
  CHECK_RC(ml_batch_export(b, ML_FIELD_DATA, 1, 7, &p), ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "stream") != NULL, "message: %s", last_error());
  CHECK_RC(ml_batch_export(b, ML_FIELD_DATA, 1, 0, NULL), ML_ERR_INVALID_ARGUMENT);

  /* Versioned, data: release the batch first, then the deleter. */
  DLManagedTensorVersioned* v = NULL;
  CHECK_RC(ml_batch_export(b, ML_FIELD_DATA, 1, -1, (void**)&v), ML_OK);
  CHECK(v != NULL, "NULL tensor");
  DLManagedTensor* lab = NULL;
  CHECK_RC(ml_batch_export(b, ML_FIELD_LABELS, 0, 0, (void**)&lab), ML_OK);
  DLManagedTensor* idx = NULL;
  CHECK_RC(ml_batch_export(b, ML_FIELD_INDICES, 0, -1, (void**)&idx), ML_OK);
  if (v) {
    CHECK(v->version.major == 1 && v->version.minor == 1, "version %u.%u",
          v->version.major, v->version.minor);
    CHECK(v->flags == 0, "flags");
    CHECK(v->deleter != NULL && v->manager_ctx != NULL, "deleter/ctx");
    check_tensor(&v->dl_tensor, b, ML_FIELD_DATA);
  }
  if (lab) check_tensor(&lab->dl_tensor, b, ML_FIELD_LABELS);
  if (idx) check_tensor(&idx->dl_tensor, b, ML_FIELD_INDICES);

  CHECK_RC(ml_batch_release(b), ML_OK);
  c = counters();
  CHECK(c.live_batches == 0 && c.live_buffers == 1,
        "tensors keep the block: batches %lld buffers %lld",
        (long long)c.live_batches, (long long)c.live_buffers);
  CHECK_RC(ml_batch_info(b, &info), ML_ERR_INVALID_HANDLE);
  CHECK_RC(ml_batch_export(b, ML_FIELD_DATA, 1, -1, &p), ML_ERR_INVALID_HANDLE);
  /* The memory is still readable through the tensors. */
  if (idx) {
    int64_t ix = ((int64_t*)idx->dl_tensor.data)[0];
    CHECK(ix >= 0 && ix < 100, "index through tensor %lld", (long long)ix);
  }
  if (v) v->deleter(v);
  if (lab) lab->deleter(lab);
  c = counters();
  CHECK(c.live_buffers == 1, "one tensor left, buffers %lld",
        (long long)c.live_buffers);
  if (idx) idx->deleter(idx);
  c = counters();
  CHECK(c.live_buffers == 0 && c.live_buffer_bytes == 0,
        "after last deleter: buffers %lld bytes %lld",
        (long long)c.live_buffers, (long long)c.live_buffer_bytes);

  /* Legacy: deleter first, then release. */
  b = first_batch(&l);
  DLManagedTensor* t = NULL;
  CHECK_RC(ml_batch_export(b, ML_FIELD_DATA, 0, -1, (void**)&t), ML_OK);
  CHECK_RC(ml_batch_info(b, &info), ML_OK);
  if (t) {
    check_tensor(&t->dl_tensor, b, ML_FIELD_DATA);
    t->deleter(t);
  }
  CHECK_RC(ml_batch_info(b, &info), ML_OK); /* still valid */
  CHECK(info.indices[0] >= 0 && info.indices[0] < 100, "index after deleter");
  CHECK_RC(ml_loader_close(l), ML_OK);
  c = counters();
  CHECK(c.live_buffers == 1, "batch still holds its block: %lld",
        (long long)c.live_buffers);
  CHECK_RC(ml_batch_release(b), ML_OK);
  c = counters();
  CHECK(c.live_buffers == 0, "buffers %lld", (long long)c.live_buffers);

  /* Capsule destructor, through the fake PyCapsule API above. */
  b = first_batch(&l);
  CHECK_RC(ml_loader_close(l), ML_OK);
  DLManagedTensorVersioned* cv = NULL;
  DLManagedTensor* cl = NULL;
  DLManagedTensorVersioned* used = NULL;
  CHECK_RC(ml_batch_export(b, ML_FIELD_DATA, 1, -1, (void**)&cv), ML_OK);
  CHECK_RC(ml_batch_export(b, ML_FIELD_LABELS, 0, -1, (void**)&cl), ML_OK);
  CHECK_RC(ml_batch_export(b, ML_FIELD_INDICES, 1, -1, (void**)&used), ML_OK);
  CHECK_RC(ml_batch_release(b), ML_OK);
  fake_capsule cap_v = {"dltensor_versioned", cv};
  fake_capsule cap_l = {"dltensor", cl};
  fake_capsule cap_used = {"used_dltensor_versioned", used};
  ml_dlpack_capsule_destructor(&cap_used); /* consumed: left alone */
  ml_dlpack_capsule_destructor(NULL);
  c = counters();
  CHECK(c.live_buffers == 1, "consumed capsule freed the block? %lld",
        (long long)c.live_buffers);
  ml_dlpack_capsule_destructor(&cap_v);
  ml_dlpack_capsule_destructor(&cap_l);
  CHECK(fake_error_set == 0, "destructor left a Python error set");
  c = counters();
  CHECK(c.live_buffers == 1, "the consumer's tensor keeps the block: %lld",
        (long long)c.live_buffers);
  if (used) used->deleter(used); /* what the consumer does */
  c = counters();
  CHECK(c.live_buffers == 0, "buffers %lld", (long long)c.live_buffers);
}

static void test_handles(void) {
  ml_loader_t l = 0;
  ml_batch_t b = first_batch(&l);
  ml_batch_t b2 = 0;
  ml_batch_info_t info;

  /* Wrong kind. */
  CHECK_RC(ml_loader_next((ml_loader_t)b, 100, &b2), ML_ERR_INVALID_HANDLE);
  CHECK_RC(ml_loader_len((ml_loader_t)b, NULL, NULL), ML_ERR_INVALID_HANDLE);
  CHECK_RC(ml_loader_start_epoch((ml_loader_t)b, 0), ML_ERR_INVALID_HANDLE);
  CHECK_RC(ml_loader_close((ml_loader_t)b), ML_ERR_INVALID_HANDLE);
  CHECK_RC(ml_batch_info((ml_batch_t)l, &info), ML_ERR_INVALID_HANDLE);
  CHECK_RC(ml_batch_release((ml_batch_t)l), ML_ERR_INVALID_HANDLE);
  /* Zero and never issued. */
  CHECK_RC(ml_batch_info(0, &info), ML_ERR_INVALID_HANDLE);
  CHECK_RC(ml_loader_next(0, 100, &b2), ML_ERR_INVALID_HANDLE);
  CHECK_RC(ml_loader_next(0x7fff0000ull, 100, &b2), ML_ERR_INVALID_HANDLE);
  CHECK_RC(ml_batch_info(~0ull, &info), ML_ERR_INVALID_HANDLE);
  CHECK_RC(ml_batch_info(b, NULL), ML_ERR_INVALID_ARGUMENT);
  /* Idempotent destruction. */
  CHECK_RC(ml_loader_close(0), ML_OK);
  CHECK_RC(ml_batch_release(0), ML_OK);
  CHECK_RC(ml_batch_release(b), ML_OK);
  CHECK_RC(ml_batch_release(b), ML_OK);
  CHECK_RC(ml_batch_info(b, &info), ML_ERR_INVALID_HANDLE);
  CHECK_RC(ml_loader_close(l), ML_OK);
  CHECK_RC(ml_loader_close(l), ML_OK);
  CHECK_RC(ml_loader_len(l, NULL, NULL), ML_ERR_CLOSED);

  /* Handles are never reused. */
  ml_loader_t l2 = 0;
  CHECK_RC(ml_loader_create("{}", &l2), ML_OK);
  CHECK(l2 != l && l2 != 0, "handle reused");
  CHECK_RC(ml_loader_close(l2), ML_OK);
}

static void test_sample_error(void) {
  ml_loader_t l = 0;
  CHECK_RC(ml_loader_create("{\"batch_size\":4,\"workers\":2,\"dataset\":"
                            "{\"length\":16,\"shape\":[2],\"fail_indices\":[5]}}",
                            &l),
           ML_OK);
  CHECK_RC(ml_loader_start_epoch(l, 0), ML_OK);
  int rc;
  int n = 0;
  for (;;) {
    ml_batch_t b = 0;
    rc = ml_loader_next(l, 10000, &b);
    if (rc != ML_OK) break;
    ml_batch_release(b);
    n++;
  }
  CHECK(rc == ML_ERR_SAMPLE, "rc %d after %d batches (%s)", rc, n, last_error());
  CHECK(strstr(last_error(), "5") != NULL, "message does not name sample 5: %s",
        last_error());
  /* The detail names the sample and step as fields; a synthetic sample
   * has no file and no Python exception. */
  CHECK_DETAIL("{\"status\":-3,\"kind\":\"sample\",\"message\":\"ml_loader_next: sample 5");
  CHECK_DETAIL("\"index\":5,\"path\":null,\"step\":\"load\",\"python\":null,");
  CHECK_DETAIL("\"skipped\":null,\"max_skipped\":null}");
  CHECK_RC(ml_loader_close(l), ML_OK);

  /* Over the skip budget: the sample that went over it, and the counts. */
  CHECK_RC(ml_loader_create("{\"batch_size\":4,\"workers\":1,\"on_error\":\"skip\","
                            "\"max_skipped\":2,\"in_order\":true,\"dataset\":"
                            "{\"length\":16,\"shape\":[2],\"fail_indices\":[1,2,3]}}",
                            &l),
           ML_OK);
  CHECK_RC(ml_loader_start_epoch(l, 0), ML_OK);
  for (n = 0;; n++) {
    ml_batch_t b = 0;
    rc = ml_loader_next(l, 10000, &b);
    if (rc != ML_OK) break;
    ml_batch_release(b);
  }
  CHECK(rc == ML_ERR_SAMPLE, "rc %d after %d batches (%s)", rc, n, last_error());
  CHECK_DETAIL("{\"status\":-3,\"kind\":\"skip_budget\",");
  CHECK_DETAIL("max_skipped=2");
  CHECK_DETAIL("\"step\":\"load\"");
  CHECK_DETAIL("\"skipped\":2,\"max_skipped\":2}");
  CHECK_RC(ml_loader_close(l), ML_OK);
}

typedef struct {
  ml_loader_t l;
  long delay_ms;
  int rc;
} closer_arg;

static void* closer(void* p) {
  closer_arg* a = p;
  sleep_ms(a->delay_ms);
  a->rc = ml_loader_close(a->l);
  return NULL;
}

static void test_timeout_and_close(void) {
  ml_loader_t l = 0;
  /* Every sample sleeps 1.5 s: no batch can come within the timeouts. */
  CHECK_RC(ml_loader_create(
               "{\"batch_size\":2,\"workers\":1,\"timeout_ms\":60000,"
               "\"dataset\":{\"length\":4,\"shape\":[1],"
               "\"light_cost_us\":1500000,\"cost_kind\":\"sleep\"}}",
               &l),
           ML_OK);
  CHECK_RC(ml_loader_start_epoch(l, 0), ML_OK);
  ml_batch_t b = 0;
  double t0 = now_s();
  CHECK_RC(ml_loader_next(l, 30, &b), ML_TIMEOUT);
  double dt = now_s() - t0;
  CHECK(dt >= 0.025 && dt < 1.0, "timeout took %.3f s", dt);

  /* A close from another thread ends an unbounded wait. */
  closer_arg a = {l, 100, -99};
  pthread_t t;
  pthread_create(&t, NULL, closer, &a);
  t0 = now_s();
  CHECK_RC(ml_loader_next(l, -1, &b), ML_ERR_CLOSED);
  dt = now_s() - t0;
  pthread_join(t, NULL);
  CHECK(a.rc == ML_OK, "close from thread: %d", a.rc);
  CHECK(dt < 1.4, "close took %.3f s to end the wait", dt);
  ml_counters_t c = counters();
  CHECK(c.live_goroutines == 0 && c.live_loaders == 0,
        "goroutines %lld loaders %lld", (long long)c.live_goroutines,
        (long long)c.live_loaders);
}

typedef struct {
  ml_loader_t l;
  pthread_mutex_t* mu;
  int* seen;
  int64_t length;
  int bad_rc;
  int exported;
} consumer_arg;

/* consumer takes batches until the end of the epoch; every other batch it
 * also exports and deletes a DLPack tensor, racing the other consumers. */
static void* consumer(void* p) {
  consumer_arg* a = p;
  for (int k = 0;; k++) {
    ml_batch_t b = 0;
    int rc = ml_loader_next(a->l, 10000, &b);
    if (rc == ML_END_OF_EPOCH) return NULL;
    if (rc != ML_OK) {
      a->bad_rc = rc;
      return NULL;
    }
    ml_batch_info_t info;
    if (ml_batch_info(b, &info) != ML_OK) a->bad_rc = -100;
    DLManagedTensorVersioned* t = NULL;
    if (k % 2 == 0 && ml_batch_export(b, ML_FIELD_INDICES, 1, -1, (void**)&t) == ML_OK)
      a->exported++;
    pthread_mutex_lock(a->mu);
    for (int64_t i = 0; i < info.num_samples; i++) {
      int64_t ix = info.indices[i];
      if (ix >= 0 && ix < a->length) a->seen[ix]++;
    }
    pthread_mutex_unlock(a->mu);
    ml_batch_release(b);
    if (t) t->deleter(t);
  }
}

static void test_concurrent_consumers(void) {
  enum { threads = 4, length = 1000 };
  ml_loader_t l = 0;
  CHECK_RC(ml_loader_create("{\"batch_size\":7,\"workers\":3,\"shuffle\":true,"
                            "\"dataset\":{\"length\":1000,\"shape\":[8]}}",
                            &l),
           ML_OK);
  CHECK_RC(ml_loader_start_epoch(l, 0), ML_OK);
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  int* seen = calloc(length, sizeof(int));
  consumer_arg args[threads];
  pthread_t tid[threads];
  for (int i = 0; i < threads; i++) {
    args[i] = (consumer_arg){l, &mu, seen, length, 0, 0};
    pthread_create(&tid[i], NULL, consumer, &args[i]);
  }
  int exported = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tid[i], NULL);
    CHECK(args[i].bad_rc == 0, "consumer %d: rc %d", i, args[i].bad_rc);
    exported += args[i].exported;
  }
  CHECK(exported > 0, "no exports");
  int once = 0;
  for (int i = 0; i < length; i++) once += seen[i] == 1;
  CHECK(once == length, "%d of %d indices exactly once", once, (int)length);
  free(seen);
  CHECK_RC(ml_loader_close(l), ML_OK);
}

static void test_fork(void) {
  /* The parent has used the Go runtime by now. */
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10); /* a hang kills the child with SIGALRM */
    int ok = 1;
    ml_loader_t l = 0;
    char msg[512];
    if (ml_loader_create("{}", &l) != ML_ERR_FORKED) ok = 0;
    ml_last_error(msg, sizeof msg, NULL);
    if (strstr(msg, "fork") == NULL) ok = 0;
    char det[1024];
    ml_last_error_detail(det, sizeof det, NULL);
    if (strstr(det, "{\"status\":-5,\"kind\":\"forked\",\"message\":\"minatoloader: called in a child") == NULL) ok = 0;
    if (ml_loader_close(l) != ML_ERR_FORKED) ok = 0;
    ml_counters_t c;
    if (ml_counters(&c) != ML_ERR_FORKED) ok = 0;
    if (ml_abi_version() != ML_ABI_VERSION) ok = 0;
    _exit(ok ? 0 : 3);
  }
  CHECK(pid > 0, "fork failed");
  if (pid <= 0) return;
  int st = 0;
  pid_t w = waitpid(pid, &st, 0);
  CHECK(w == pid, "waitpid");
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "child: exited %d status %d signaled %d sig %d", WIFEXITED(st),
        WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st),
        WIFSIGNALED(st) ? WTERMSIG(st) : -1);
  /* The parent still works. */
  ml_loader_t l = 0;
  CHECK_RC(ml_loader_create("{}", &l), ML_OK);
  CHECK_RC(ml_loader_close(l), ML_OK);
}

static void test_dataset_info(void) {
  char buf[512];
  size_t needed = 0;
  CHECK_RC(ml_dataset_info("{\"length\": 5, \"shape\": [2, 3]}", buf, sizeof buf,
                           &needed),
           ML_OK);
  CHECK(needed < sizeof buf && strstr(buf, "\"length\":5") != NULL &&
            strstr(buf, "\"name\":\"data\"") != NULL &&
            strstr(buf, "\"shape\":[2,3]") != NULL &&
            strstr(buf, "\"name\":\"label\"") != NULL,
        "info %s", buf);
  /* Truncated copy, full length reported. */
  char small[8];
  CHECK_RC(ml_dataset_info("{\"length\": 5}", small, sizeof small, &needed),
           ML_OK);
  CHECK(strlen(small) == sizeof small - 1 && needed > sizeof small,
        "truncation: %s, needed %zu", small, needed);
  CHECK_RC(ml_dataset_info("{\"kind\": \"video\"}", buf, sizeof buf, NULL),
           ML_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_error(), "dataset.kind") != NULL, "message: %s",
        last_error());
  CHECK_RC(ml_dataset_info("{\"kind\": \"image_folder\", \"root\": \"/nonexistent\"}",
                           buf, sizeof buf, NULL),
           ML_ERR_INVALID_ARGUMENT);
  CHECK_RC(ml_dataset_info(NULL, buf, sizeof buf, NULL), ML_ERR_INVALID_ARGUMENT);
}

int main(void) {
  test_abi_and_errors();
  test_dataset_info();
  test_error_per_thread();
  test_epochs();
  test_feed();
  test_dlpack();
  test_handles();
  test_sample_error();
  test_timeout_and_close();
  test_concurrent_consumers();
  test_fork();

  ml_counters_t c = counters();
  CHECK(c.live_loaders == 0 && c.live_batches == 0 && c.live_buffers == 0 &&
            c.live_buffer_bytes == 0 && c.live_goroutines == 0,
        "leak: loaders %lld batches %lld buffers %lld bytes %lld goroutines "
        "%lld",
        (long long)c.live_loaders, (long long)c.live_batches,
        (long long)c.live_buffers, (long long)c.live_buffer_bytes,
        (long long)c.live_goroutines);
  CHECK(c.total_buffers > 0, "total_buffers %lld", (long long)c.total_buffers);

  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
