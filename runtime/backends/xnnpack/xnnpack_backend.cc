// XNNPACK kernels may read up to XNN_EXTRA_BYTES past the end of an input array. Rows inside the
// caller's buffer can be over-read safely (the next row is there); the last ones cannot, so the
// last min(N, kStagedRows) rows run from a padded copy. Why that many: every extra operator call
// re-streams the packed weights once, like one more row tile; staging a block of rows instead of
// one costs a memcpy (<1% of the GEMM) and at most one partial tile, and bounds the buffer.
// Everything else the kernels read that we own is padded too. No kernel we can run was seen to
// over-read a row (x86-64 and aarch64 under qemu, row lengths 147, 294, 588, 1176, 1536, f32 and
// f16, with the staging removed: Backends.InputEndingAtAnUnmappedPageDoesNotFault still passed),
// but XNNPACK documents the over-read (XNN_EXTRA_BYTES) and other CPUs pick other kernels, so the
// staging stays.
#include "runtime/backends/xnnpack/xnnpack_backend.h"

#include <pthreadpool.h>
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif
#include <xnnpack.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

namespace patchfuse {

namespace {

#if defined(__SANITIZE_THREAD__)
void tsan_acquire(const void* addr) { __tsan_acquire(const_cast<void*>(addr)); }
void tsan_release(const void* addr) { __tsan_release(const_cast<void*>(addr)); }
#else
void tsan_acquire(const void*) {}
void tsan_release(const void*) {}
#endif

const char* status_name(xnn_status s) {
  switch (s) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "uninitialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
  }
  return "unknown status";
}

Code code_of(xnn_status s) {
  switch (s) {
    case xnn_status_out_of_memory: return Code::kOutOfMemory;
    case xnn_status_unsupported_hardware: return Code::kUnsupported;
    default: return Code::kInternal;
  }
}

// Translates an xnn_status into our Error at the boundary of this folder.
#define XNN_CHECK(call, ...)                                                                             \
  do {                                                                                                   \
    const xnn_status xnn_s_ = (call);                                                                    \
    PF_CHECK(xnn_s_ == xnn_status_success, code_of(xnn_s_), "xnnpack: ", __VA_ARGS__, ": ", status_name(xnn_s_)); \
  } while (0)

xnn_status initialize_once() {
  static std::once_flag once;
  static xnn_status status = xnn_status_uninitialized;
  std::call_once(once, [] { status = xnn_initialize(nullptr); });
  return status;
}

// Whether this build and CPU run the f16 fully-connected operator: asked of XNNPACK itself.
bool f16_supported() {
  static const bool ok = [] {
    if (initialize_once() != xnn_status_success) return false;
    const uint16_t w[4] = {0x3C00, 0x3C00, 0x3C00, 0x3C00};
    xnn_operator_t op = nullptr;
    const xnn_status s = xnn_create_fully_connected_nc_f16(2, 2, 2, 2, w, nullptr, -INFINITY, INFINITY, 0, &op);
    if (op) xnn_delete_operator(op);
    return s == xnn_status_success;
  }();
  return ok;
}

struct OperatorDeleter {
  void operator()(xnn_operator* op) const { xnn_delete_operator(op); }
};
using Operator = std::unique_ptr<xnn_operator, OperatorDeleter>;

struct PoolDeleter {
  void operator()(pthreadpool* p) const { pthreadpool_destroy(p); }
};

// A float / half buffer with XNN_EXTRA_BYTES of slack after its logical size.
template <class T>
class Padded {
 public:
  T* get(size_t count) {
    const size_t need = count + (XNN_EXTRA_BYTES + sizeof(T) - 1) / sizeof(T);
    if (buf_.size() < need) buf_.resize(need);
    return buf_.data();
  }

 private:
  std::vector<T> buf_;
};

class XnnpackKernel final : public Kernel {
 public:
  static Result<std::unique_ptr<Kernel>> make(const KernelRequest& r) {
    std::unique_ptr<XnnpackKernel> k(new XnnpackKernel(r));
    PF_RETURN_IF_ERROR(k->create_operators(r));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(const float* input, size_t n, float* output) override {
    if (!fused_) return run_conv(input, n, output);
    if (!f16_) {
      return run_rows(input, n, k_, [&](const float* in, size_t rows, size_t first) -> Status {
        return setup_and_run_fc(in, rows, output + first * out_);
      });
    }
    uint16_t* in16 = in16_.get(n * k_);
    uint16_t* out16 = out16_.get(n * out_);
    PF_RETURN_IF_ERROR(run_rows(input, n, k_, [&](const float* in, size_t rows, size_t first) -> Status {
      XNN_CHECK(xnn_setup_convert_nc_f32_f16(to_f16_.get(), rows, in, in16 + first * k_, pool_.get()), "setup f32->f16");
      XNN_CHECK(xnn_run_operator(to_f16_.get(), pool_.get()), "run f32->f16");
      return Status();
    }));
    XNN_CHECK(xnn_setup_fully_connected_nc_f16(op_.get(), n, in16, out16, pool_.get()), "setup fully-connected f16");
    XNN_CHECK(xnn_run_operator(op_.get(), pool_.get()), "run fully-connected f16");
    XNN_CHECK(xnn_setup_convert_nc_f16_f32(to_f32_.get(), n, out16, output, pool_.get()), "setup f16->f32");
    XNN_CHECK(xnn_run_operator(to_f32_.get(), pool_.get()), "run f16->f32");
    return {};
  }

  Status prepare(size_t n, bool /*f32_rows*/) override {  // the buffers a run of n rows uses
    staged_.get(std::min(n, kStagedRows) * k_);
    if (!fused_) nhwc_.get(n * k_);
    if (f16_) {
      in16_.get(n * k_);
      out16_.get(n * out_);
    }
    return {};
  }

  std::string isa() const override { return ""; }  // XNNPACK 2022 does not report its microkernel choice
  std::string detail() const override {
    return fused_ ? cat("XNNPACK fully-connected ", f16_ ? "f16" : "f32")
                  : "XNNPACK convolution2d NHWC f32 (kt folded into channels)";
  }
  int threads() const override { return threads_; }

  void parallelize(size_t n, const std::function<void(size_t)>& task) override {
    if (!pool_) return Kernel::parallelize(n, task);
    // pthreadpool hands out the tasks and waits for them with synchronization ThreadSanitizer
    // cannot see (Debian's library is not instrumented), so under TSan the fork and the join are
    // told to it explicitly; elsewhere these are no-ops.
    tsan_release(&task);
    pthreadpool_parallelize_1d(
        pool_.get(),
        [](void* t, size_t i) {
          tsan_acquire(t);
          (*static_cast<const std::function<void(size_t)>*>(t))(i);
          tsan_release(t);
        },
        const_cast<std::function<void(size_t)>*>(&task), n, 0);
    tsan_acquire(&task);
  }

 private:
  explicit XnnpackKernel(const KernelRequest& r)
      : g_(r.module->geometry),
        fused_(r.fused),
        f16_(r.precision == Precision::kF16),
        threads_(r.threads),
        k_(static_cast<size_t>(r.module->patch_volume)),
        out_(static_cast<size_t>(g_.embed_dim)) {}

  Status create_operators(const KernelRequest& r) {
    PF_CHECK(initialize_once() == xnn_status_success, Code::kUnsupported, "xnnpack: xnn_initialize failed: ",
             status_name(initialize_once()));
    if (threads_ > 1) pool_.reset(pthreadpool_create(static_cast<size_t>(threads_)));
    xnn_operator_t op = nullptr;
    if (fused_ && f16_) {
      std::vector<uint16_t> b;
      const std::vector<uint16_t> w = request_weights<uint16_t>(r, DType::kF16, &b);
      XNN_CHECK(xnn_create_fully_connected_nc_f16(k_, out_, k_, out_, w.data(), b.empty() ? nullptr : b.data(), -INFINITY,
                                                  INFINITY, 0, &op),
                "create fully-connected f16 ", k_, " -> ", out_);
      op_.reset(op);
      XNN_CHECK(xnn_create_convert_nc_f32_f16(k_, k_, k_, 0, &op), "create convert f32->f16");
      to_f16_.reset(op);
      XNN_CHECK(xnn_create_convert_nc_f16_f32(out_, out_, out_, 0, &op), "create convert f16->f32");
      to_f32_.reset(op);
      return {};
    }
    std::vector<float> b;
    const std::vector<float> w = request_weights<float>(r, DType::kF32, &b);
    if (fused_) {
      XNN_CHECK(xnn_create_fully_connected_nc_f32(k_, out_, k_, out_, w.data(), b.empty() ? nullptr : b.data(), -INFINITY,
                                                  INFINITY, 0, &op),
                "create fully-connected f32 ", k_, " -> ", out_);
      op_.reset(op);
      return {};
    }
    // Unfused: a 2-D conv over (kh, kw) with C*kt input channels. XNNPACK wants OHWI weights;
    // ours are [O, C*kt, kh, kw], so move the channel axis innermost (once, here).
    const size_t ck = static_cast<size_t>(g_.in_channels * g_.kernel[0]);
    const size_t kh = static_cast<size_t>(g_.kernel[1]), kw = static_cast<size_t>(g_.kernel[2]);
    std::vector<float> ohwi(w.size());
    for (size_t o = 0; o < out_; ++o)
      for (size_t c = 0; c < ck; ++c)
        for (size_t h = 0; h < kh; ++h)
          for (size_t x = 0; x < kw; ++x) ohwi[((o * kh + h) * kw + x) * ck + c] = w[((o * ck + c) * kh + h) * kw + x];
    XNN_CHECK(xnn_create_convolution2d_nhwc_f32(0, 0, 0, 0, static_cast<uint32_t>(kh), static_cast<uint32_t>(kw),
                                                static_cast<uint32_t>(g_.stride[1]), static_cast<uint32_t>(g_.stride[2]),
                                                static_cast<uint32_t>(g_.dilation[1]),
                                                static_cast<uint32_t>(g_.dilation[2]), 1, ck, out_, ck, out_, ohwi.data(),
                                                b.empty() ? nullptr : b.data(), -INFINITY, INFINITY, 0, &op),
              "create convolution2d f32");
    op_.reset(op);
    return {};
  }

  Status setup_and_run_fc(const float* in, size_t rows, float* out) {
    XNN_CHECK(xnn_setup_fully_connected_nc_f32(op_.get(), rows, in, out, pool_.get()), "setup fully-connected f32");
    XNN_CHECK(xnn_run_operator(op_.get(), pool_.get()), "run fully-connected f32");
    return {};
  }

  // Runs `step(in, rows, first_row)` on the leading rows in place and on the last
  // min(n, kStagedRows) rows from a padded copy, so no read goes past the caller's buffer.
  template <class Step>
  Status run_rows(const float* input, size_t n, size_t row, Step step) {
    const size_t staged = std::min(n, kStagedRows);
    const size_t in_place = n - staged;
    if (in_place > 0) PF_RETURN_IF_ERROR(step(input, in_place, 0));
    float* tail = staged_.get(staged * row);
    std::memcpy(tail, input + in_place * row, staged * row * sizeof(float));
    return step(tail, staged, in_place);
  }

  Status run_conv(const float* input, size_t n, float* output) {
    // NCHW (C = C*kt) -> NHWC into our padded buffer; the conv then writes [n, 1, 1, O] = [n, O].
    const size_t ck = static_cast<size_t>(g_.in_channels * g_.kernel[0]);
    const size_t hw = static_cast<size_t>(g_.kernel[1] * g_.kernel[2]);
    float* nhwc = nhwc_.get(n * k_);
    for (size_t i = 0; i < n; ++i) {
      const float* src = input + i * k_;
      float* dst = nhwc + i * k_;
      for (size_t c = 0; c < ck; ++c)
        for (size_t p = 0; p < hw; ++p) dst[p * ck + c] = src[c * hw + p];
    }
    XNN_CHECK(xnn_setup_convolution2d_nhwc_f32(op_.get(), n, static_cast<size_t>(g_.kernel[1]),
                                               static_cast<size_t>(g_.kernel[2]), nhwc, output, pool_.get()),
              "setup convolution2d f32");
    XNN_CHECK(xnn_run_operator(op_.get(), pool_.get()), "run convolution2d f32");
    return {};
  }

  ConvGeometry g_;
  bool fused_, f16_;
  int threads_;
  size_t k_, out_;
  std::unique_ptr<pthreadpool, PoolDeleter> pool_;  // null: run on the calling thread
  Operator op_, to_f16_, to_f32_;
  static constexpr size_t kStagedRows = 256;
  Padded<float> staged_, nhwc_;
  Padded<uint16_t> in16_, out16_;
};

// Why int8 is not offered: it would have to be within 2e-2 of max |ref| like oneDNN's, and is not.
// The figure comes from tests/bench/xnnpack_int8_error.cc (qc8 convolution, measured on x86-64).
constexpr const char* kNoInt8 =
    "XNNPACK (2022) int8 operators write int8 outputs, whose scale must be fixed before any image is seen; the "
    "range that never clips (from the weights' bound) gave max |err| 4.4e-2 of max |ref| on the Qwen2-VL 448x448 "
    "test image (qc8 convolution), above the 2e-2 int8 bound";

bool available(std::string* why) {
  if (initialize_once() == xnn_status_success) return true;
  if (why) *why = cat("xnn_initialize failed: ", status_name(initialize_once()));
  return false;
}

// f16 is worth computing in only where the core has f16 arithmetic: ARMv8.2 FP16 does twice f32's
// lanes a vector (2.3x the f32 GEMM's speed on the A55 model, docs/arm.md). On x86-64 XNNPACK's
// f16 GEMM widens every value to f32 (F16C): 5.7x slower than its f32 GEMM on an AVX-512 Xeon.
bool f16_outruns_f32(Precision p, std::string* why) {
#if defined(__x86_64__) || defined(_M_X64)
  if (p == Precision::kF16) {
    if (why) *why = "XNNPACK's f16 kernels on x86-64 widen every value to f32 (F16C) and ran 5.7x slower than its f32 ones";
    return false;
  }
#endif
  (void)p;
  (void)why;
  return true;
}

bool supports(Precision p, bool fused, std::string* why) {
  switch (p) {
    case Precision::kF32: return true;
    case Precision::kF16:
      if (!fused) {
        if (why) *why = "the xnnpack unfused (convolution) path runs in f32 only";
        return false;
      }
      if (f16_supported()) return true;
      if (why) *why = "XNNPACK reports no f16 arithmetic on this CPU (ARM needs ARMv8.2 FP16)";
      return false;
    case Precision::kBF16:
      if (why) *why = "the xnnpack backend has no bf16 kernels";
      return false;
    case Precision::kInt8:
      if (why) *why = kNoInt8;
      return false;
  }
  return false;
}

}  // namespace

const Backend& xnnpack_backend() {
  static const Backend b{BackendId::kXnnpack, "xnnpack", available, supports, f16_outruns_f32, XnnpackKernel::make,
                         [](std::string*) { return 127; },  // never asked: supports() refuses int8
                         // Debian's 2022 XNNPACK takes no packed weights back: the cache keeps the folded ones.
                         [] { return std::string("XNNPACK (packs at creation: the cache keeps the folded weights)"); }};
  return b;
}

}  // namespace patchfuse
