// The fused GEMM is a dnnl::matmul in f32 and bf16. In int8 it is a 1x1 convolution over the N
// patches in nhwc, whose [1, K, 1, N] source and [1, O, 1, N] destination are the same bytes as
// [N, K] and [N, O] rows: oneDNN 2.6's int8 1x1 convolution kernels beat its u8 x s8 matmul on
// every ISA (docs/design.md).
// Primitives are created per batch size on first use and cached (oneDNN 2.6's fast kernels need a
// static M), each with the weights layout it prefers: a matmul's never depends on N, an int8
// convolution's takes one of two by N and thread count, and a primitive forced into another layout
// falls back to ref:any. The weights are packed into a layout once, when a first primitive asks for
// it, so a batch size already seen never re-creates anything.
// Threads: the Debian build of oneDNN uses OpenMP, whose thread count is a per-calling-thread
// setting, so each run sets it for its session.
#include "runtime/backends/onednn/onednn_backend.h"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "runtime/backends/onednn/folded_packing.h"
#include "runtime/frames/weight_transforms.h"

namespace patchfuse {

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

// The batch size whose layout the weights are packed in at creation.
constexpr int64_t kPackingBatch = 1024;

// The most rows an AMX int8 call over a K tail takes (OneDnnKernel::pack): a 720p frame's 4784
// rows run as four calls, none under 640 rows.
constexpr size_t kTailCallRows = 1280;
// The most packed weight bytes with which an AMX frames kernel runs a frame in one call (pack).
constexpr size_t kAmxL2Bytes = size_t{2} << 20;

bool cpu_has_bf16() {
  const unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

bool cpu_has_amx() {
  const unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
}

// u8 x s8 dot products into int32 (VNNI, or AMX-INT8). Without them oneDNN's int8 kernels sum
// pairs of u8 x s8 products in int16 with saturation, which 255 x 127 x 2 overflows.
bool cpu_has_vnni() {
  const unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ||
         (isa & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni;
}

// oneDNN's own names for its ISA levels (ONEDNN_MAX_CPU_ISA takes them in upper case).
const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::all: return "all";
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
  }
  return "unknown";
}

std::string version_string() {
  const dnnl_version_t* v = dnnl_version();
  return cat("oneDNN ", v->major, ".", v->minor, ".", v->patch);
}

// The session's thread count for oneDNN, around every call that makes or runs a primitive or a
// reorder: a primitive descriptor fixes its thread count from omp_get_max_threads() when it is made
// (the int8 1x1 convolution split a 1-thread session's GEMM over every core of the machine when
// only its execution was capped), and the caller's own OpenMP setting is put back afterwards.
class OmpThreads {
 public:
  explicit OmpThreads(int threads) : before_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OmpThreads() { omp_set_num_threads(before_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int before_;
};

class OneDnnKernel final : public Kernel {
 public:
  static Result<std::unique_ptr<Kernel>> make(const KernelRequest& r) {
    std::unique_ptr<OneDnnKernel> k(new OneDnnKernel(r));
    try {
      const OmpThreads threads(r.threads);
      k->pack(r);
    } catch (const dnnl::error& e) {
      return make_error(Code::kInternal, cat("onednn: cannot create the ",
                                             r.fused ? (k->gemm_as_conv() ? "1x1 convolution" : "matmul") : "convolution",
                                             " for module ", r.module->path, ": ", e.what()));
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(const float* input, size_t n, float* output) override {
    if (int8_) return make_error(Code::kInternal, "onednn: an int8 kernel takes uint8 rows");
    if (kp_ != k_) return make_error(Code::kInternal, "onednn: a kernel over padded rows takes bf16 rows");
    return execute(input, nullptr, n, output);
  }
  Status run_u8(const uint8_t* input, size_t n, float* output) override {
    if (!int8_) return Kernel::run_u8(input, n, output);
    return execute(input, nullptr, n, output);
  }

  Status prepare(size_t n, bool f32_rows) override {
    try {
      const OmpThreads threads(threads_);
      return for_each_call(n, [&](size_t, size_t rows) {
        Plan& p = plan_for(static_cast<int64_t>(rows));
        if (bf16_ && f32_rows) stage(p);
        return Status{};
      });
    } catch (const dnnl::error& e) {
      return make_error(Code::kInternal, cat("onednn: preparing N = ", n, " failed: ", e.what()));
    }
  }

  bool takes_bf16() const override { return bf16_; }
  Status run_bf16(const uint16_t* input, size_t n, float* output) override { return execute(nullptr, input, n, output); }

  void parallelize(size_t n, const std::function<void(size_t)>& task) override {
    // The same OpenMP runtime and thread count as oneDNN's own parallel regions: no new threads.
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) task(static_cast<size_t>(i));
  }

  std::pair<const uint8_t*, size_t> packed_weights() const override {
    const dnnl::memory& w = packed_.front();  // the creation-time layout, which pack() makes again
    return {static_cast<const uint8_t*>(w.get_data_handle()), w.get_desc().get_size()};
  }

  size_t row_multiple() const override { return row_multiple_; }
  bool whole_frame_calls() const override { return whole_frame_calls_; }
  size_t row_padding() const override { return static_cast<size_t>(kp_ - k_); }

  std::string detail() const override { return detail_; }
  std::string isa() const override { return isa_name(dnnl::get_effective_cpu_isa()); }
  int threads() const override { return threads_; }

 private:
  // The calls n rows run as, in order: a multiple of row_multiple() rows, then the rest; each
  // cut into near-equal calls of at most max_call_rows_ rows where the kernel has that limit.
  template <class F>
  Status for_each_call(size_t n, const F& f) const {
    const size_t head = n / row_multiple_ * row_multiple_;
    size_t first = 0;
    for (const size_t part : {head, n - head}) {
      const size_t pieces = max_call_rows_ == 0 ? 1 : (part + max_call_rows_ - 1) / max_call_rows_;
      for (size_t i = 0; i < pieces; ++i) {
        const size_t rows = part * (i + 1) / pieces - part * i / pieces;
        if (rows == 0) continue;
        PF_RETURN_IF_ERROR(f(first, rows));
        first += rows;
      }
    }
    return {};
  }

  // One run from the caller's rows in the plan's user type (f32, or u8 in int8 sessions; f32 is
  // converted to bf16 by the plan's reorder in bf16 sessions) or, in bf16 sessions, from bf16 rows
  // the caller made, which the plan's source memory then points at; in the calls of n.
  Status execute(const void* user_rows, const uint16_t* bf16_rows, size_t n, float* output) {
    const size_t user_bytes = int8_ ? 1 : sizeof(float), k = static_cast<size_t>(k_);
    return for_each_call(n, [&](size_t first, size_t rows) {
      return execute_call(user_rows == nullptr ? nullptr : static_cast<const uint8_t*>(user_rows) + first * k * user_bytes,
                          bf16_rows == nullptr ? nullptr : bf16_rows + first * static_cast<size_t>(kp_), rows,
                          output + first * static_cast<size_t>(g_.embed_dim));
    });
  }

  Status execute_call(const void* user_rows, const uint16_t* bf16_rows, size_t n, float* output) {
    try {
      const OmpThreads threads(threads_);
      Plan& p = plan_for(static_cast<int64_t>(n));
      p.dst.set_data_handle(output);
      if (bf16_rows != nullptr) {
        p.src.set_data_handle(const_cast<uint16_t*>(bf16_rows));
      } else {
        p.user_src.set_data_handle(const_cast<void*>(user_rows));
        if (bf16_) {
          stage(p);
          p.src.set_data_handle(p.staging.data());
          p.to_bf16.execute(stream_, p.user_src, p.src);
        }
      }
      p.compute.execute(stream_, p.args);
      stream_.wait();
    } catch (const dnnl::error& e) {
      return make_error(Code::kInternal, cat("onednn: run with N = ", n, " failed: ", e.what()));
    }
    return {};
  }

  struct Plan {
    dnnl::primitive compute;
    dnnl::reorder to_bf16;  // f32 user input -> bf16 (bf16 precision only)
    dnnl::memory user_src, src, dst, scratchpad;
    // bf16 sessions' staging for f32 rows (run), made on first need: frames come as bf16 rows (run_bf16).
    std::vector<uint8_t> staging;
    size_t staging_bytes = 0;
    std::unordered_map<int, dnnl::memory> args;  // built once; the handles above are re-pointed per run
  };

  explicit OneDnnKernel(const KernelRequest& r)
      : engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_),
        g_(r.module->geometry),
        fused_(r.fused),
        bf16_(r.precision == Precision::kBF16),
        int8_(r.precision == Precision::kInt8),
        has_bias_(int8_ || r.module->bias.has_value()),
        threads_(r.threads),
        k_(r.module->patch_volume),
        kp_(k_) {}

  dt src_type() const { return bf16_ ? dt::bf16 : int8_ ? dt::u8 : dt::f32; }
  dt weight_type() const { return bf16_ ? dt::bf16 : int8_ ? dt::s8 : dt::f32; }

  // The conv's spatial axes: (kt, kh, kw), or (kh, kw) when kt is 1 (a Conv2d, or a still image's
  // weights summed over time), which then runs as oneDNN's 2-D convolution.
  dims spatial(const std::vector<int64_t>& v) const { return dims(v.begin() + (g_.kernel[0] == 1 ? 1 : 0), v.end()); }
  static dims concat(dims head, const dims& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  }
  // The int8 GEMM's 1x1 convolution: N patches along the width.
  bool gemm_as_conv() const { return fused_ && int8_; }
  // Shapes in the primitive's own view: [N, K] -> [N, O] for matmul, [1, K, 1, N] -> [1, O, 1, N]
  // (nhwc) for the GEMM as a 1x1 conv, [N, C, (kt,) kh, kw] -> [N, O, (1,) 1, 1] for the conv.
  dims src_dims(int64_t n) const {
    if (gemm_as_conv()) return {1, kp_, 1, n};
    return fused_ ? dims{n, kp_} : concat({n, g_.in_channels}, spatial(g_.kernel));
  }
  dims dst_dims(int64_t n) const {
    if (gemm_as_conv()) return {1, g_.embed_dim, 1, n};
    return fused_ ? dims{n, g_.embed_dim} : concat({n, g_.embed_dim}, dims(spatial(g_.kernel).size(), 1));
  }
  static tag plain(size_t rank) { return rank == 2 ? tag::ab : rank == 4 ? tag::nchw : tag::ncdhw; }
  tag activations_tag(size_t rank) const { return gemm_as_conv() ? tag::nhwc : plain(rank); }

  // Descriptor of the primitive for batch n, in the weights layout it prefers.
  dnnl::primitive_desc_base describe(int64_t n) const {
    const dnnl::memory::desc weights_md(weight_dims(kp_), weight_type(), tag::any);
    const dnnl::memory::desc src(src_dims(n), src_type(), activations_tag(src_dims(n).size()));
    const dnnl::memory::desc dst(dst_dims(n), dt::f32, activations_tag(dst_dims(n).size()));
    const dnnl::memory::desc bias = has_bias_ ? bias_desc() : dnnl::memory::desc();
    // int8: per-output-channel scales fixed here; passed at run time instead
    // (DNNL_RUNTIME_F32_VAL), oneDNN 2.6 falls back to slower kernels.
    dnnl::primitive_attr attr;
    if (int8_) attr.set_output_scales(1 << 1, scales_);
    // The plan owns its scratchpad: oneDNN's own ("library") scratchpad is allocated and freed on
    // every execution, and glibc then hands the run fresh pages after a size was first seen, so a
    // run right after pf_session_prepare still paid their page faults.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (fused_ && !gemm_as_conv()) {
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights_md, bias, dst), attr, engine_);
    }
    dims stride{1, 1}, pad{0, 0}, dilation{0, 0};  // oneDNN counts dilation from 0
    if (!fused_) {
      stride = spatial(g_.stride);
      pad = spatial(g_.padding);
      dilation.clear();
      for (int64_t d : spatial(g_.dilation)) dilation.push_back(d - 1);
    }
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                        weights_md, bias, dst, stride, dilation, pad, pad),
        attr, engine_);
  }

  dnnl::memory::desc bias_desc() const {
    return fused_ && !gemm_as_conv() ? dnnl::memory::desc({1, g_.embed_dim}, dt::f32, tag::ab)
                                     : dnnl::memory::desc({g_.embed_dim}, dt::f32, tag::a);
  }
  dims weight_dims(int64_t k) const {
    if (gemm_as_conv()) return {g_.embed_dim, k, 1, 1};
    return fused_ ? dims{k, g_.embed_dim} : concat({g_.embed_dim, g_.in_channels}, spatial(g_.kernel));
  }

  // out[k * O + o] = w[o * K + k] in `to`, in 64 x 64 blocks so both sides stay in cache: the
  // widening (bf16/f16 -> f32) and oneDNN's plain [K, O] layout in one pass, with no second copy
  // of the weights alive beside the packed one.
  static void transpose_into(const TensorView& w, DType to, int64_t O, int64_t K, uint8_t* out) {
    constexpr int64_t kBlock = 64;
    for (int64_t o0 = 0; o0 < O; o0 += kBlock) {
      for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
        for (int64_t o = o0; o < std::min(O, o0 + kBlock); ++o) {
          for (int64_t k = k0; k < std::min(K, k0 + kBlock); ++k) {
            store_f32_as(out, to, static_cast<size_t>(k * O + o), load_as_f32(w.data, w.dtype, static_cast<size_t>(o * K + k)));
          }
        }
      }
    }
  }

  void pack(const KernelRequest& r) {
    if (int8_) scales_ = r.int8->scale;
    const dnnl::primitive_desc_base pd = describe(kPackingBatch);
    detail_ = cat(version_string(), gemm_as_conv() ? " 1x1 convolution " : fused_ ? " matmul " : " convolution ",
                  pd.impl_info_str(), " (", bf16_ ? "bf16" : int8_ ? "int8: u8 pixels x s8 weights, per-channel scales" : "f32",
                  ")");
    // oneDNN's AMX matmul (brgemm) cuts M into blocks of its largest divisor in 32..64, and tiles
    // of up to 16 rows: 46-row blocks (a 720p frame's chunks) ran at half the speed of 64-row ones
    // (docs/amx.md), so other row counts run as a multiple of 64 and a call of the rest.
    // Its int8 1x1 convolution and the AVX-512 and AVX2 kernels measured the same speed at every
    // row count there.
    const bool amx = std::strstr(pd.impl_info_str(), "amx") != nullptr;
    if (fused_ && !gemm_as_conv() && amx) row_multiple_ = 64;
    // On AMX a 720p frame ran 5-25% faster (bf16 over K = 608, int8 at 1 thread) as one kernel
    // call over the whole frame's rows, gathered first, than chunk by chunk: bf16's calls run
    // faster over more rows, and int8's, as fast at any size, gained from fewer switches between
    // the gather and its calls; at 2 threads, whose 720p frame is two chunks, int8 lost 3% (its
    // rows' trip through the L3). Where the weights do not fit a core's L2 (2 MiB on every AMX
    // Xeon so far), as bf16's video kernel's (K = 1184: 3 MB), it ran 5-20% slower, and so did the
    // AVX-512 f32 kernel: its gather became memory-bound (docs/amx.md).
    whole_frame_calls_ =
        amx && r.gathered_rows && pd.weights_desc().get_size() <= kAmxL2Bytes && (!int8_ || threads_ == 1);
    // oneDNN's AMX int8 1x1 convolution makes code in proportion to a call's rows when K is no
    // multiple of its 64-byte tiles (K = 588: 2.0-2.7 ms a size for 1472-1656 rows, 3.5 for 2392;
    // 0.1-0.3 ms at K = 576 or 640), and ran a frame as fast in calls of 736-1196 rows (K = 588
    // and 1176), but 5-13% slower in calls of 490-552 at 2 threads (docs/amx.md). So its calls
    // are cut to at most kTailCallRows rows, in near-equal parts: half the plans' code.
    if (gemm_as_conv() && amx && k_ % 64 != 0) max_call_rows_ = kTailCallRows;
    // The AMX bf16 matmul's layout stores K rounded up to its 32-row blocks, zeros past K, and
    // the product over K = 588 ran at 0.8x the speed of the same over K = 608 (docs/amx.md). So
    // where oneDNN takes those very bytes as weights over the stored K, the primitives compute
    // over it, on rows the gather pads with zeros (row_padding). Not for pixel_values, whose f32
    // rows oneDNN's reorder would copy into padded bf16 ones: that ran 1.2x slower.
    if (bf16_ && r.gathered_rows && row_multiple_ == 64) {
      const dnnl::memory::desc layout = pd.weights_desc();
      kp_ = layout.data.padded_dims[0];
      if (!(with_k(layout, kp_) == describe(kPackingBatch).weights_desc())) kp_ = k_;
      if (kp_ != k_) detail_ += cat(", K padded to ", kp_);
    }
    if (r.packed != nullptr) {  // packed by an earlier process in this very layout (the weights cache)
      if (r.packed_size != pd.weights_desc().get_size()) {
        throw dnnl::error(dnnl_invalid_arguments, "cached packed weights are not the size of this layout");
      }
      packed_.emplace_back(pd.weights_desc(), engine_, const_cast<uint8_t*>(r.packed));  // only read
      bias_values_ = int8_ ? r.int8->bias : has_bias_ ? tensor_as_f32(*r.module->bias) : std::vector<float>();
      if (has_bias_) bias_ = dnnl::memory(bias_desc(), engine_, bias_values_.data());
      return;
    }
    dnnl::memory weights(pd.weights_desc(), engine_);
    if (int8_) {  // the quantized [O, K] weights: plain oihw; the bias in accumulator units
      dnnl::memory model_w(dnnl::memory::desc(weight_dims(k_), dt::s8, tag::nchw), engine_,
                           const_cast<int8_t*>(r.int8->weight.data()));
      dnnl::reorder(model_w, weights).execute(stream_, model_w, weights);
      stream_.wait();
      bias_values_ = r.int8->bias;
    } else if (r.folded != nullptr) {
      bias_values_.resize(static_cast<size_t>(g_.embed_dim));
      pack_folded_rows(*r.folded, weights, fused_ ? 1 : 0, bias_values_.data(), engine_, stream_);
    } else {
      const DType want = bf16_ ? DType::kBF16 : DType::kF32;
      const TensorView& w = r.module->weight;
      // gemm:jit asks for plain [K, O] ("ab"), the transpose of the model's [O, K] rows: done here in
      // one pass. Blocked layouts (brgemm, the convolution) go through a oneDNN reorder from the
      // model's layout: [O, K] is "ba" for matmul's [K, O] weights and plain oi(d)hw for the conv.
      const bool plain_kxo = fused_ && weights.get_desc() == dnnl::memory::desc(weight_dims(k_), weight_type(), tag::ab);
      if (plain_kxo) {
        transpose_into(w, want, g_.embed_dim, k_, static_cast<uint8_t*>(weights.get_data_handle()));
      } else {
        // The reorder converts f32 and bf16 itself (f32 -> bf16 rounds to nearest even, as
        // convert_elements does), so only f16 weights are widened here first: a converted copy
        // cost a bf16 session 1.5 MB of fresh pages more at creation.
        std::vector<uint8_t> converted;
        void* wdata = const_cast<uint8_t*>(w.data);  // oneDNN only reads a reorder's source
        DType from = w.dtype;
        if (from == DType::kF16) {
          const size_t count = w.bytes / dtype_size(w.dtype);
          converted.resize(count * dtype_size(want));
          convert_elements(w.data, w.dtype, converted.data(), want, count);
          wdata = converted.data();
          from = want;
        }
        // Plain oi(d)hw has the same strides as plain nc(d)hw.
        dnnl::memory model_w(dnnl::memory::desc(weight_dims(k_), from == DType::kF32 ? dt::f32 : dt::bf16,
                                                fused_ ? tag::ba : plain(weight_dims(k_).size())),
                             engine_, wdata);
        dnnl::reorder(model_w, weights).execute(stream_, model_w, weights);
        stream_.wait();
      }
      if (has_bias_) bias_values_ = tensor_as_f32(*r.module->bias);
    }
    packed_.push_back(weights);
    if (has_bias_) bias_ = dnnl::memory(bias_desc(), engine_, bias_values_.data());
  }

  // A matmul weights layout with its K (dims[0]) set to k: the same bytes over the stored K.
  static dnnl::memory::desc with_k(const dnnl::memory::desc& layout, int64_t k) {
    dnnl_memory_desc_t d = layout.data;
    d.dims[0] = k;
    return dnnl::memory::desc(d);
  }

  // The weights in `layout`: packed at creation (over K, or their padded view over kp_), or
  // repacked from those on first use.
  dnnl::memory weights_in(const dnnl::memory::desc& layout) {
    for (const dnnl::memory& w : packed_) {
      if (w.get_desc() == layout) return w;
    }
    // From the creation-time bytes, seen over kp_ when padded (a reorder's dims must agree).
    dnnl::memory packed = packed_.front();
    if (kp_ != k_) packed = dnnl::memory(with_k(packed.get_desc(), kp_), engine_, packed.get_data_handle());
    if (layout == packed.get_desc()) {
      packed_.push_back(packed);
      return packed;
    }
    dnnl::memory w(layout, engine_);
    dnnl::reorder(packed, w).execute(stream_, packed, w);
    stream_.wait();
    packed_.push_back(w);
    return w;
  }

  static void stage(Plan& p) {
    if (p.staging.empty()) p.staging.resize(p.staging_bytes);
  }

  Plan& plan_for(int64_t n) {
    auto it = plans_.find(n);
    if (it != plans_.end()) return it->second;
    const dnnl::primitive_desc_base pd = describe(n);
    Plan p;
    if (fused_ && !gemm_as_conv()) {
      p.compute = dnnl::matmul(dnnl::matmul::primitive_desc(pd.get()));
    } else {
      p.compute = dnnl::convolution_forward(dnnl::convolution_forward::primitive_desc(pd.get()));
    }
    const dims sd = src_dims(n);
    p.user_src = dnnl::memory(dnnl::memory::desc(sd, int8_ ? dt::u8 : dt::f32, activations_tag(sd.size())), engine_,
                              DNNL_MEMORY_NONE);
    p.dst = dnnl::memory(pd.dst_desc(), engine_, DNNL_MEMORY_NONE);
    if (bf16_) {
      p.src = dnnl::memory(pd.src_desc(), engine_, DNNL_MEMORY_NONE);  // pointed at each run's bf16 rows
      p.staging_bytes = pd.src_desc().get_size();
      p.to_bf16 = dnnl::reorder(p.user_src, p.src);
    }
    p.args = {{DNNL_ARG_SRC, bf16_ ? p.src : p.user_src},
              {DNNL_ARG_WEIGHTS, weights_in(pd.weights_desc())},
              {DNNL_ARG_DST, p.dst}};
    if (has_bias_) p.args[DNNL_ARG_BIAS] = bias_;
    p.scratchpad = dnnl::memory(pd.scratchpad_desc(), engine_);
    p.args[DNNL_ARG_SCRATCHPAD] = p.scratchpad;
    // First touched here, where the plan is made (pf_session_prepare, or a size's first run),
    // rather than page by page inside the plan's first execution.
    if (const size_t bytes = pd.scratchpad_desc().get_size(); bytes > 0) std::memset(p.scratchpad.get_data_handle(), 0, bytes);
    return plans_.emplace(n, std::move(p)).first->second;
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  ConvGeometry g_;
  bool fused_, bf16_, int8_, has_bias_;
  int threads_;
  int64_t k_;
  int64_t kp_;  // the K the primitives compute over: k_, or k_ padded (row_padding)
  std::vector<dnnl::memory> packed_;  // one per weights layout the plans asked for; the first from creation
  dnnl::memory bias_;
  std::vector<float> bias_values_;
  std::vector<float> scales_;  // int8: per output channel
  std::unordered_map<int64_t, Plan> plans_;
  std::string detail_;
  size_t row_multiple_ = 1;
  bool whole_frame_calls_ = false;
  size_t max_call_rows_ = 0;  // 0: calls of any size
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

bool supports(Precision p, bool fused, std::string* why) {
  switch (p) {
    case Precision::kF32: return true;
    case Precision::kBF16:
      if (cpu_has_bf16()) return true;
      if (why) *why = "this CPU has no AVX512-BF16 (oneDNN reports ISA below avx512_core_bf16)";
      return false;
    case Precision::kF16:
      if (why) *why = "the oneDNN backend offers f32, bf16 and int8 only";
      return false;
    case Precision::kInt8:
      if (!fused) {
        if (why) *why = "int8 runs the fused GEMM only";
        return false;
      }
      return true;  // on every ISA, with weights it cannot saturate below VNNI (int8_weight_max)
  }
  return false;
}

// bf16 halves the rows' and weights' bytes, but at K = 588 or 1176 the product is bound by the
// multiply-adds, so bf16 is worth computing in only where they are faster than f32's: on AMX, and
// on AMD's AVX512-BF16 (the bf16 session ran 1.97x as fast as f32 on Zen 5). Intel's AVX512-BF16 cores without AMX issue
// vdpbf16ps at half the FMA's rate (43 against 88 multiply-adds a ns on a Sapphire Rapids-class
// Xeon whose AMX the VM hides: MultiplyAddRate in patchfuse-overhead-bench), where the bf16
// session ran at 0.52-0.56x f32's speed (docs/performance.md). Cooper Lake is taken to be alike,
// not measured.
bool bf16_outruns_f32(Precision p, std::string* why) {
  __builtin_cpu_init();  // idempotent; needed where this runs before libgcc's constructor
  if (p != Precision::kBF16 || cpu_has_amx() || __builtin_cpu_is("amd")) return true;
  if (why) {
    *why = "this Intel CPU runs bf16 without AMX (oneDNN reports ISA avx512_core_bf16), where a bf16 multiply-add "
           "takes twice an f32 one's time (ask for precision bf16 to run it anyway)";
  }
  return false;
}

int int8_weight_max(std::string* why) {
  if (cpu_has_vnni()) return 127;
  if (why) {
    *why = cat("int8 weights are 7-bit (-63..63): oneDNN reports ISA ", isa_name(dnnl::get_effective_cpu_isa()),
               ", without VNNI or AMX, where its u8 x s8 kernels add pairs of products in int16 with saturation "
               "(vpmaddubsw: all-255 pixels times weights of 127 came out 49% low); 2*255*63 = 32130 cannot saturate");
  }
  return 63;
}

}  // namespace

const Backend& onednn_backend() {
  static const Backend b{BackendId::kOneDnn, "onednn", available, supports, bf16_outruns_f32, OneDnnKernel::make,
                         int8_weight_max,
                         [] { return cat(version_string(), " ", isa_name(dnnl::get_effective_cpu_isa())); }};
  return b;
}

}  // namespace patchfuse
