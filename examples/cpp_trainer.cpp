// cpp_trainer.cpp -- a small C++17 "trainer" on the minatoloader C ABI.
//
// RAII wrappers own the loader and batch handles; two epochs of a synthetic
// dataset are read, a checksum of the data is computed per epoch (a stand-in
// for a training step) and the throughput is printed.
//
// Built and run by `make ctest`, which runs
//   g++ -std=c++17 -I include examples/cpp_trainer.cpp -L build
//       -Wl,-rpath,$PWD/build -lminatoloader
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

#include "minatoloader.h"

namespace ml {

// Error carries a failed call's status and ml_last_error message.
class Error : public std::runtime_error {
 public:
  Error(int status, const std::string& msg)
      : std::runtime_error(msg + " (status " + std::to_string(status) + ")"),
        status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

inline std::string last_error() {
  size_t needed = 0;
  ml_last_error(nullptr, 0, &needed);
  std::string s(needed + 1, '\0');
  ml_last_error(s.data(), s.size(), nullptr);
  s.resize(needed);
  return s;
}

inline void check(int status) {
  if (status < 0) throw Error(status, last_error());
}

// Batch owns a batch handle; the memory it points to is valid while the
// Batch lives.
class Batch {
 public:
  explicit Batch(ml_batch_t h) : h_(h) {
    check(ml_batch_info(h_, &info_));
    check(ml_batch_field(h_, ML_FIELD_DATA, &data_));
  }
  Batch(Batch&& o) noexcept
      : h_(std::exchange(o.h_, 0)), info_(o.info_), data_(o.data_) {}
  Batch& operator=(Batch&& o) noexcept {
    if (this != &o) {
      ml_batch_release(h_);
      h_ = std::exchange(o.h_, 0);
      info_ = o.info_;
      data_ = o.data_;
    }
    return *this;
  }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch() { ml_batch_release(h_); }

  const ml_batch_info_t& info() const { return info_; }
  const float* data() const { return static_cast<const float*>(data_.data); }
  int64_t rows() const { return info_.num_samples; }
  int64_t row_elems() const {
    int64_t n = 1;
    for (int i = 1; i < data_.ndim; i++) n *= data_.shape[i];
    return n;
  }

 private:
  ml_batch_t h_;
  ml_batch_info_t info_{};
  ml_field_info_t data_{};  // field 0, "data"
};

// Loader owns a loader handle.
class Loader {
 public:
  explicit Loader(const std::string& config_json) {
    check(ml_loader_create(config_json.c_str(), &h_));
  }
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;
  ~Loader() { ml_loader_close(h_); }

  std::pair<int64_t, int64_t> len() const {
    int64_t b = 0, s = 0;
    check(ml_loader_len(h_, &b, &s));
    return {b, s};
  }
  void start_epoch(int64_t epoch) { check(ml_loader_start_epoch(h_, epoch)); }

  // next returns false at the end of the epoch.
  bool next(ml_batch_t* out, int64_t timeout_ms = -1) {
    int rc = ml_loader_next(h_, timeout_ms, out);
    if (rc == ML_END_OF_EPOCH) return false;
    if (rc == ML_TIMEOUT) throw Error(rc, "no batch within the timeout");
    check(rc);
    return true;
  }

  std::string stats() const {
    size_t needed = 0;
    check(ml_loader_stats(h_, nullptr, 0, &needed));
    std::string s(needed + 1, '\0');
    check(ml_loader_stats(h_, s.data(), s.size(), &needed));
    s.resize(needed < s.size() ? needed : s.size() - 1);
    return s;
  }

 private:
  ml_loader_t h_ = 0;
};

}  // namespace ml

int main() {
  if (ml_abi_version() != ML_ABI_VERSION) {
    std::fprintf(stderr, "ABI mismatch: library %d, header %d\n",
                 ml_abi_version(), ML_ABI_VERSION);
    return 1;
  }
  try {
    const int64_t length = 4096;
    ml::Loader loader(
        "{\"batch_size\":64,\"workers\":4,\"seed\":7,\"shuffle\":true,"
        "\"dataset\":{\"length\":" +
        std::to_string(length) +
        ",\"shape\":[3,16,16],\"dtype\":\"float32\"}}");
    auto [want_batches, want_samples] = loader.len();
    for (int64_t epoch = 0; epoch < 2; epoch++) {
      loader.start_epoch(epoch);
      auto t0 = std::chrono::steady_clock::now();
      int64_t batches = 0, samples = 0;
      double checksum = 0;
      ml_batch_t h = 0;
      while (loader.next(&h)) {
        ml::Batch b(h);
        const float* x = b.data();
        const int64_t n = b.rows() * b.row_elems();
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += x[i];
        checksum += s;
        samples += b.rows();
        batches++;
      }
      double secs = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
      std::printf("epoch %lld: %lld batches, %lld samples, checksum %.6g, "
                  "%.1f batches/s\n",
                  static_cast<long long>(epoch),
                  static_cast<long long>(batches),
                  static_cast<long long>(samples), checksum,
                  secs > 0 ? batches / secs : 0.0);
      if (batches != want_batches || samples != want_samples) {
        std::fprintf(stderr, "epoch %lld: got %lld/%lld, want %lld/%lld\n",
                     static_cast<long long>(epoch),
                     static_cast<long long>(batches),
                     static_cast<long long>(samples),
                     static_cast<long long>(want_batches),
                     static_cast<long long>(want_samples));
        return 1;
      }
    }
    std::printf("stats: %s\n", loader.stats().c_str());
  } catch (const ml::Error& e) {
    std::fprintf(stderr, "cpp_trainer: %s\n", e.what());
    return 1;
  }
  ml_counters_t c{};
  if (ml_counters(&c) != ML_OK) return 1;
  if (c.live_loaders || c.live_batches || c.live_buffers) {
    std::fprintf(stderr, "leak: loaders %lld batches %lld buffers %lld\n",
                 static_cast<long long>(c.live_loaders),
                 static_cast<long long>(c.live_batches),
                 static_cast<long long>(c.live_buffers));
    return 1;
  }
  return 0;
}
