#include "runtime/backends/reference/reference_backend.h"

#include "runtime/frames/weight_transforms.h"
#include "runtime/rules/fusion_rules.h"

namespace patchfuse {

namespace {

class ReferenceKernel final : public Kernel {
 public:
  explicit ReferenceKernel(const KernelRequest& r)
      : g_(r.module->geometry),
        fused_(r.fused),
        k_(static_cast<size_t>(r.module->patch_volume)),
        out_(static_cast<size_t>(g_.embed_dim)),
        int8_(r.int8) {
    if (int8_ != nullptr) return;
    weight_ = request_weights<float>(r, DType::kF32, &bias_);
    if (bias_.empty()) bias_.assign(out_, 0.0f);
  }

  Status run(const float* input, size_t n, float* output) override {
    for (size_t i = 0; i < n; ++i) {
      const float* x = input + i * k_;
      for (size_t o = 0; o < out_; ++o) {
        output[i * out_ + o] = bias_[o] + (fused_ ? dot(x, &weight_[o * k_]) : conv_at_origin(x, &weight_[o * k_]));
      }
    }
    return {};
  }
  // int8: the exact integer sum, then scale * (acc + bias) in double, the oracle for the int8
  // kernels of the other backends (which round only where their f32 epilogue does).
  Status run_u8(const uint8_t* input, size_t n, float* output) override {
    if (int8_ == nullptr) return Kernel::run_u8(input, n, output);
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* x = input + i * k_;
      for (size_t o = 0; o < out_; ++o) {
        const int8_t* w = &int8_->weight[o * k_];
        int64_t acc = 0;
        for (size_t j = 0; j < k_; ++j) acc += static_cast<int64_t>(x[j]) * w[j];
        output[i * out_ + o] = int8_output(*int8_, o, acc);
      }
    }
    return {};
  }
  std::string isa() const override { return ""; }  // whatever the compiler targeted
  std::string detail() const override {
    if (int8_) return "reference GEMM (int8 weights, exact integer accumulate)";
    return fused_ ? "reference GEMM (f32 accumulate)" : "reference direct Conv3d (f32 accumulate)";
  }
  int threads() const override { return 1; }

 private:
  // Eight partial sums: still f32 accumulation, and the compiler can vectorize it.
  float dot(const float* x, const float* w) const {
    float acc[8] = {};
    size_t j = 0;
    for (; j + 8 <= k_; j += 8) {
      for (size_t u = 0; u < 8; ++u) acc[u] += x[j + u] * w[j + u];
    }
    for (; j < k_; ++j) acc[0] += x[j] * w[j];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  }

  // The conv's output voxel (0,0,0) computed from the conv definition: input [C, T, H, W] with
  // (T, H, W) = kernel, weight [C, kt, kh, kw], tap (kt,kh,kw) reads input position
  // out * stride - padding + tap * dilation. With an eligible geometry that is the whole patch.
  float conv_at_origin(const float* x, const float* w) const {
    const int64_t T = g_.kernel[0], H = g_.kernel[1], W = g_.kernel[2];
    float acc = 0.0f;
    for (int64_t c = 0; c < g_.in_channels; ++c) {
      for (int64_t kt = 0; kt < g_.kernel[0]; ++kt) {
        const int64_t t = kt * g_.dilation[0] - g_.padding[0];
        for (int64_t kh = 0; kh < g_.kernel[1]; ++kh) {
          const int64_t h = kh * g_.dilation[1] - g_.padding[1];
          for (int64_t kw = 0; kw < g_.kernel[2]; ++kw) {
            const int64_t ww = kw * g_.dilation[2] - g_.padding[2];
            if (t < 0 || t >= T || h < 0 || h >= H || ww < 0 || ww >= W) continue;  // zero padding
            acc += x[((c * T + t) * H + h) * W + ww] * w[((c * g_.kernel[0] + kt) * g_.kernel[1] + kh) * g_.kernel[2] + kw];
          }
        }
      }
    }
    return acc;
  }

  ConvGeometry g_;
  bool fused_;
  size_t k_, out_;
  std::vector<float> weight_, bias_;
  const Int8Weights* int8_;  // int8 sessions: the quantized weights (outlive the kernel)
};

bool available(std::string*) { return true; }

bool supports(Precision p, bool fused, std::string* why) {
  if (p == Precision::kF32 || (p == Precision::kInt8 && fused)) return true;
  if (why) *why = p == Precision::kInt8 ? "int8 runs the fused GEMM only" : "the reference backend computes in f32 (and int8 on frames) only";
  return false;
}

Result<std::unique_ptr<Kernel>> create(const KernelRequest& r) {
  PF_CHECK(r.module->geometry.kernel.size() == 3, Code::kUnsupported, "reference backend: module ", r.module->path,
           " has spatial rank ", r.module->geometry.kernel.size(), "; only Conv3d patch embeddings are implemented");
  return std::unique_ptr<Kernel>(new ReferenceKernel(r));
}

}  // namespace

const Backend& reference_backend() {
  static const Backend b{BackendId::kReference, "reference", available, supports,
                         [](Precision, std::string*) { return true; },  // f32 only: never asked for another
                         create,
                         [](std::string*) { return 127; },  // exact int32 sums
                         [] { return std::string("reference (no packing: the cache keeps the folded weights)"); }};
  return b;
}

}  // namespace patchfuse
