// Weights are reordered into the primitive's preferred layout once, at creation. Primitives are
// created per batch size on first use and cached (oneDNN 2.6's fast kernels need a static M), so
// a batch size already seen never re-creates anything. Threads: the Debian build of oneDNN uses
// OpenMP, whose thread count is a per-calling-thread setting, so each run sets it for its session.
#include "runtime/backends/onednn/onednn_backend.h"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

namespace patchfuse {

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

// The batch size the weights are packed for at creation; the packed layout does not depend on
// it (checked for every batch size: each per-N primitive is created with that exact layout).
constexpr int64_t kPackingBatch = 1024;

bool cpu_has_bf16() {
  const unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

std::string version_string() {
  const dnnl_version_t* v = dnnl_version();
  return cat("oneDNN ", v->major, ".", v->minor, ".", v->patch);
}

class OneDnnKernel final : public Kernel {
 public:
  static Result<std::unique_ptr<Kernel>> make(const KernelRequest& r) {
    std::unique_ptr<OneDnnKernel> k(new OneDnnKernel(r));
    try {
      k->pack(r);
    } catch (const dnnl::error& e) {
      return make_error(Code::kInternal, cat("onednn: cannot create the ", r.fused ? "matmul" : "convolution",
                                             " for module ", r.module->path, ": ", e.what()));
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(const float* input, size_t n, float* output) override {
    try {
      omp_set_num_threads(threads_);
      Plan& p = plan_for(static_cast<int64_t>(n));
      p.user_src.set_data_handle(const_cast<float*>(input));
      p.dst.set_data_handle(output);
      if (bf16_) {
        p.to_bf16.execute(stream_, p.user_src, p.src);
      }
      std::unordered_map<int, dnnl::memory> args = {
          {DNNL_ARG_SRC, bf16_ ? p.src : p.user_src}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, p.dst}};
      if (has_bias_) args[DNNL_ARG_BIAS] = bias_;
      p.compute.execute(stream_, args);
      stream_.wait();
    } catch (const dnnl::error& e) {
      return make_error(Code::kInternal, cat("onednn: run with N = ", n, " failed: ", e.what()));
    }
    return {};
  }

  std::string detail() const override { return detail_; }
  int threads() const override { return threads_; }

 private:
  struct Plan {
    dnnl::primitive compute;
    dnnl::reorder to_bf16;  // f32 user input -> bf16 (bf16 precision only)
    dnnl::memory user_src, src, dst;
  };

  explicit OneDnnKernel(const KernelRequest& r)
      : engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_),
        g_(r.module->geometry),
        fused_(r.fused),
        bf16_(r.precision == Precision::kBF16),
        has_bias_(r.module->bias.has_value()),
        threads_(r.threads),
        k_(r.module->patch_volume) {}

  dt compute_type() const { return bf16_ ? dt::bf16 : dt::f32; }

  // Shapes of the input in the primitive's own view: [N, K] for matmul, [N, C, kt, kh, kw] for conv.
  dims src_dims(int64_t n) const {
    return fused_ ? dims{n, k_} : dims{n, g_.in_channels, g_.kernel[0], g_.kernel[1], g_.kernel[2]};
  }
  dims dst_dims(int64_t n) const { return fused_ ? dims{n, g_.embed_dim} : dims{n, g_.embed_dim, 1, 1, 1}; }
  tag plain(size_t rank) const { return rank == 2 ? tag::ab : tag::ncdhw; }

  // Descriptor of the primitive for batch n, with the weights either free (`any`, for packing)
  // or fixed to the packed layout.
  dnnl::primitive_desc_base describe(int64_t n, const dnnl::memory::desc& weights_md) const {
    const dnnl::memory::desc src(src_dims(n), compute_type(), plain(src_dims(n).size()));
    const dnnl::memory::desc dst(dst_dims(n), dt::f32, plain(dst_dims(n).size()));
    if (fused_) {
      const dnnl::memory::desc bias = has_bias_ ? dnnl::memory::desc({1, g_.embed_dim}, dt::f32, tag::ab)
                                                : dnnl::memory::desc();
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights_md, bias, dst), engine_);
    }
    const dnnl::memory::desc bias = has_bias_ ? dnnl::memory::desc({g_.embed_dim}, dt::f32, tag::a)
                                              : dnnl::memory::desc();
    const dims stride(g_.stride.begin(), g_.stride.end());
    const dims pad(g_.padding.begin(), g_.padding.end());
    dims dilation;  // oneDNN counts dilation from 0
    for (int64_t d : g_.dilation) dilation.push_back(d - 1);
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                        weights_md, bias, dst, stride, dilation, pad, pad),
        engine_);
  }

  dims weight_dims() const {
    return fused_ ? dims{k_, g_.embed_dim} : dims{g_.embed_dim, g_.in_channels, g_.kernel[0], g_.kernel[1], g_.kernel[2]};
  }

  static bool is_plain(const dnnl::memory::desc& md) {
    return md.data.format_kind == dnnl_blocked && md.data.format_desc.blocking.inner_nblks == 0;
  }

  void pack(const KernelRequest& r) {
    // The model stores W as [embed_dim, K] row-major: for matmul's [K, embed_dim] weights that is
    // the transposed ("ba") layout; for the conv it is plain oidhw. The same bytes either way.
    const dnnl::memory::desc model_md(weight_dims(), compute_type(), fused_ ? tag::ba : tag::oidhw);
    dnnl::primitive_desc_base pd = describe(kPackingBatch, dnnl::memory::desc(weight_dims(), compute_type(), tag::any));
    // A kernel that wants plain weights (gemm:jit) runs as fast on the model's own layout (measured
    // here: within 3% at N = 16..1024), so use it in place: no reorder, and zero-copy from the
    // mapped model when the dtypes match. Kernels with blocked layouts (brgemm) get a reorder.
    bool in_place = false;
    if (fused_ && is_plain(pd.weights_desc())) {
      try {
        const dnnl::primitive_desc_base direct = describe(kPackingBatch, model_md);
        in_place = std::string(direct.impl_info_str()) == pd.impl_info_str();
        if (in_place) pd = direct;
      } catch (const dnnl::error&) {
        in_place = false;  // no kernel takes that layout: reorder instead
      }
    }
    packed_md_ = pd.weights_desc();
    detail_ = cat(version_string(), fused_ ? " matmul " : " convolution ", pd.impl_info_str(), " (",
                  bf16_ ? "bf16" : "f32", in_place ? ", weights in place" : ", weights reordered", ")");
    const DType want = bf16_ ? DType::kBF16 : DType::kF32;
    void* wdata = const_cast<uint8_t*>(r.module->weight.data);  // oneDNN only reads weights
    if (r.module->weight.dtype != want) {
      converted_.resize(r.module->weight.bytes / dtype_size(r.module->weight.dtype) * dtype_size(want));
      convert_elements(r.module->weight.data, r.module->weight.dtype, converted_.data(), want,
                       r.module->weight.bytes / dtype_size(r.module->weight.dtype));
      wdata = converted_.data();
    }
    dnnl::memory model_w(model_md, engine_, wdata);
    if (in_place) {
      weights_ = model_w;
    } else {
      weights_ = dnnl::memory(packed_md_, engine_);
      dnnl::reorder(model_w, weights_).execute(stream_, model_w, weights_);
      stream_.wait();
      std::vector<uint8_t>().swap(converted_);  // the reordered copy is all that is needed now
    }
    if (has_bias_) {
      bias_values_ = tensor_as_f32(*r.module->bias);
      bias_ = dnnl::memory(fused_ ? dnnl::memory::desc({1, g_.embed_dim}, dt::f32, tag::ab)
                                  : dnnl::memory::desc({g_.embed_dim}, dt::f32, tag::a),
                           engine_, bias_values_.data());
    }
    stream_.wait();
  }

  Plan& plan_for(int64_t n) {
    auto it = plans_.find(n);
    if (it != plans_.end()) return it->second;
    const dnnl::primitive_desc_base pd = describe(n, packed_md_);
    Plan p;
    if (fused_) {
      p.compute = dnnl::matmul(dnnl::matmul::primitive_desc(pd.get()));
    } else {
      p.compute = dnnl::convolution_forward(dnnl::convolution_forward::primitive_desc(pd.get()));
    }
    const dims sd = src_dims(n);
    p.user_src = dnnl::memory(dnnl::memory::desc(sd, dt::f32, plain(sd.size())), engine_, DNNL_MEMORY_NONE);
    p.dst = dnnl::memory(pd.dst_desc(), engine_, DNNL_MEMORY_NONE);
    if (bf16_) {
      p.src = dnnl::memory(pd.src_desc(), engine_);  // owned bf16 staging buffer for this N
      p.to_bf16 = dnnl::reorder(p.user_src, p.src);
    }
    return plans_.emplace(n, std::move(p)).first->second;
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  ConvGeometry g_;
  bool fused_, bf16_, has_bias_;
  int threads_;
  int64_t k_;
  dnnl::memory::desc packed_md_;
  dnnl::memory weights_, bias_;
  std::vector<uint8_t> converted_;  // weights in the compute dtype, when the model's differ and are used in place
  std::vector<float> bias_values_;
  std::unordered_map<int64_t, Plan> plans_;
  std::string detail_;
};

bool available(std::string* why) {
#if defined(__x86_64__) || defined(_M_X64)
  (void)why;
  return true;
#else
  if (why) *why = "the oneDNN backend is for x86-64";
  return false;
#endif
}

bool supports(Precision p, bool, std::string* why) {
  switch (p) {
    case Precision::kF32: return true;
    case Precision::kBF16:
      if (cpu_has_bf16()) return true;
      if (why) *why = "this CPU has no AVX512-BF16 (oneDNN reports ISA below avx512_core_bf16)";
      return false;
    case Precision::kF16:
      if (why) *why = "the oneDNN backend offers f32 and bf16 only";
      return false;
  }
  return false;
}

}  // namespace

const Backend& onednn_backend() {
  static const Backend b{BackendId::kOneDnn, "onednn", available, supports, OneDnnKernel::make};
  return b;
}

}  // namespace patchfuse
