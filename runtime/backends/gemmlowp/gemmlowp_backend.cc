#include "runtime/backends/gemmlowp/gemmlowp_backend.h"

#include <cpuinfo.h>

#include <algorithm>
#include <new>
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "runtime/backends/gemmlowp/gemmlowp_variant.h"
#include "runtime/frames/weight_transforms.h"
#ifdef PATCHFUSE_SDOT_GEMM
#include "runtime/backends/gemmlowp/sdot_gemm.h"
#include "runtime/core/cpu_features.h"
#endif

namespace patchfuse {

// The variants CMakeLists.txt compiles for this architecture, each with the CPU feature it needs;
// the first whose feature this CPU has runs.
#if defined(__aarch64__)
extern const GemmlowpVariant kGemmlowp_neon;
#elif defined(__arm__)
extern const GemmlowpVariant kGemmlowp_neon, kGemmlowp_portable;
#elif defined(__x86_64__)
extern const GemmlowpVariant kGemmlowp_avx2;
#endif

namespace {

struct Candidate {
  const GemmlowpVariant* variant;
  bool (*runs_here)();
  const char* needs;
};

#if defined(__aarch64__) || defined(__arm__)
bool always() { return true; }
#endif

const Candidate* pick_variant(std::string* why) {
  static const Candidate candidates[] = {
#if defined(__aarch64__)
      {&kGemmlowp_neon, always, ""},  // NEON is part of ARMv8-A (dot-product cores: the SDOT kernel)
#elif defined(__arm__)
      {&kGemmlowp_neon, [] { return cpuinfo_initialize() && cpuinfo_has_arm_neon(); }, "NEON"},
      {&kGemmlowp_portable, always, ""},  // Debian armhf's baseline (VFPv3-D16) has no NEON
#elif defined(__x86_64__)
      {&kGemmlowp_avx2, [] { return cpuinfo_initialize() && cpuinfo_has_x86_avx2(); }, "AVX2"},
#endif
  };
  static const Candidate* chosen = [] {
    for (const Candidate& c : candidates) {
      if (c.runs_here()) return &c;
    }
    return static_cast<const Candidate*>(nullptr);
  }();
  if (chosen == nullptr && why != nullptr) {
    *why = cat("this build's gemmlowp kernels need ", candidates[0].needs, ", which this CPU lacks");
  }
  return chosen;
}

class GemmlowpKernel final : public Kernel {
 public:
  static Result<std::unique_ptr<Kernel>> make(const KernelRequest& r) {
    PF_CHECK(r.int8 != nullptr, Code::kUnsupported, "gemmlowp backend: int8 only");
    std::string why;
    const Candidate* c = pick_variant(&why);
    PF_CHECK(c != nullptr, Code::kUnsupported, "gemmlowp backend: ", why);
    auto k = std::unique_ptr<GemmlowpKernel>(new GemmlowpKernel(*r.int8, *c->variant, r.threads));
    PF_CHECK(k->context_ != nullptr, Code::kOutOfMemory, "gemmlowp backend: out of memory for its context");
    return std::unique_ptr<Kernel>(std::move(k));
  }
  ~GemmlowpKernel() override {
    if (context_ != nullptr) variant_.destroy(context_);
  }

  Status run(const float*, size_t, float*) override {
    return make_error(Code::kInternal, "the gemmlowp kernel takes uint8 rows only");
  }

  // The exact int32 sums, then int8_output() as the reference backend applies it, so the two agree
  // bit for bit. The epilogue is split over the threads by rows.
  Status run_u8(const uint8_t* input, size_t n, float* output) override {
    PF_RETURN_IF_ERROR(gemm(input, n));
    const int parts = static_cast<int>(std::min<size_t>(n, static_cast<size_t>(threads_)));
    if (parts == 0) return {};
    Epilogue e{this, n, static_cast<size_t>(parts), output};
    variant_.parallel_for(context_, parts, &Epilogue::run, &e);
    return {};
  }
  // gemmlowp sizes its packing buffers on a GEMM's first call, so the GEMM of n blank rows runs
  // once here, into the accumulators a run uses (no epilogue, no output).
  Status prepare(size_t n, bool /*f32_rows*/) override {
    const std::vector<uint8_t> blank(n * static_cast<size_t>(int8_.k));
    return gemm(blank.data(), n);
  }
  void parallelize(size_t n, const std::function<void(size_t)>& task) override {
    if (n <= 1) {
      if (n == 1) task(0);
      return;
    }
    variant_.parallel_for(context_, static_cast<int>(n), [](void* f, int i) {
      (*static_cast<const std::function<void(size_t)>*>(f))(static_cast<size_t>(i));
    }, const_cast<std::function<void(size_t)>*>(&task));
  }
  std::string detail() const override {
    if (sdot_) return "patchfuse SDOT int8 GEMM, 4x16 tiles (exact int32 sums; gemmlowp's thread pool)";
    return cat("gemmlowp u8 GEMM (DefaultL8R8BitDepthParams, exact int32 sums), kernel \"", variant_.kernel(),
               "\" (", variant_.name, " variant)");
  }
  std::string isa() const override { return sdot_ ? "neon_dotprod" : variant_.name; }
  int threads() const override { return threads_; }

 private:
  GemmlowpKernel(const Int8Weights& w, const GemmlowpVariant& v, int threads)
      : int8_(w), variant_(v), threads_(threads), outputs_(w.scale.size()), context_(v.create(threads)) {
#if defined(__aarch64__)
    bias_f64_.assign(w.bias.begin(), w.bias.end());
    scale_f64_.assign(w.scale.begin(), w.scale.end());
#endif
#ifdef PATCHFUSE_SDOT_GEMM
    sdot_ = simd_level() >= SimdLevel::kNeonDotprod;
    if (sdot_) {
      const int outputs = static_cast<int>(outputs_), k = static_cast<int>(w.k);
      sdot_weights_.resize(sdot_packed_bytes_neon_dotprod(outputs, k));
      sdot_start_.resize((outputs_ + 15) / 16 * 16);
      sdot_pack_neon_dotprod(w.weight.data(), outputs, k, sdot_weights_.data(), sdot_start_.data());
      return;
    }
#endif
    // gemmlowp's inputs are uint8 with an offset: q + 128 with offset -128 is q again.
    weights_.resize(w.weight.size());
    std::transform(w.weight.begin(), w.weight.end(), weights_.begin(),
                   [](int8_t q) { return static_cast<uint8_t>(static_cast<int>(q) + 128); });
  }

  // acc_ = the exact int32 sums of n rows.
  Status gemm(const uint8_t* input, size_t n) {
    PF_CHECK(n <= static_cast<size_t>(INT32_MAX / std::max<int64_t>(int8_.k, 1)), Code::kInvalidArgument,
             "gemmlowp backend: ", n, " rows exceed its int sizes");
    if (acc_.size() < n * outputs_) acc_.resize(n * outputs_);
#ifdef PATCHFUSE_SDOT_GEMM
    if (sdot_) {
      // Whole 4-row tiles per thread.
      const size_t tiles = (n + 3) / 4, parts = std::min(tiles, static_cast<size_t>(threads_));
      SdotPart part{this, input, n, tiles, parts};
      if (parts > 0) variant_.parallel_for(context_, static_cast<int>(parts), &SdotPart::run, &part);
      return {};
    }
#endif
    PF_CHECK(variant_.gemm(context_, weights_.data(), input, static_cast<int>(outputs_), static_cast<int>(n),
                           static_cast<int>(int8_.k), acc_.data()),
             Code::kOutOfMemory, "gemmlowp backend: out of memory running ", n, " rows");
    return {};
  }

#ifdef PATCHFUSE_SDOT_GEMM
  void sdot_rows(const uint8_t* rows, size_t first, size_t n) {
    sdot_gemm_neon_dotprod(sdot_weights_.data(), sdot_start_.data(), static_cast<int>(outputs_), static_cast<int>(int8_.k),
                           rows, static_cast<int>(n), acc_.data() + first * outputs_);
  }

  struct SdotPart {
    GemmlowpKernel* k;
    const uint8_t* input;
    size_t n, tiles, parts;
    static void run(void* arg, int part) {
      const auto& s = *static_cast<const SdotPart*>(arg);
      const size_t p = static_cast<size_t>(part), first = std::min(s.n, s.tiles * p / s.parts * 4),
                   last = std::min(s.n, s.tiles * (p + 1) / s.parts * 4);
      // The kernel reads each row as k rounded up to 16: the last tile comes from a padded copy.
      const size_t k = static_cast<size_t>(s.k->int8_.k), tail = (s.n - 1) / 4 * 4, in_place = std::min(last, tail);
      if (in_place > first) s.k->sdot_rows(s.input + first * k, first, in_place - first);
      if (last == s.n) {
        std::vector<uint8_t>& copy = s.k->sdot_tail_;
        copy.assign((s.n - tail) * k + 16, 0);
        std::copy(s.input + tail * k, s.input + s.n * k, copy.begin());
        s.k->sdot_rows(copy.data(), tail, s.n - tail);
      }
    }
  };
#endif


  struct Epilogue {
    const GemmlowpKernel* k;
    size_t n, parts;
    float* output;
    static void run(void* arg, int part) {
      const auto& e = *static_cast<const Epilogue*>(arg);
      const size_t o_count = e.k->outputs_, p = static_cast<size_t>(part);
      const Int8Weights& w = e.k->int8_;
      for (size_t i = e.n * p / e.parts; i < e.n * (p + 1) / e.parts; ++i) {
        const int32_t* acc = e.k->acc_.data() + i * o_count;
        float* out = e.output + i * o_count;
        size_t o = 0;
#if defined(__aarch64__)
        // int8_output four outputs at a time, in two float64x2: the same double operations, so the
        // same bits (SCVTF is exact below 2^53, FCVTN rounds to nearest as the cast does), on the
        // bias and scale widened once. Two chains, for an in-order core.
        const double* bias = e.k->bias_f64_.data();
        const double* scale = e.k->scale_f64_.data();
        for (; o + 4 <= o_count; o += 4) {
          const int32x4_t a = vld1q_s32(acc + o);
          const float64x2_t lo = vaddq_f64(vcvtq_f64_s64(vmovl_s32(vget_low_s32(a))), vld1q_f64(bias + o));
          const float64x2_t hi = vaddq_f64(vcvtq_f64_s64(vmovl_high_s32(a)), vld1q_f64(bias + o + 2));
          vst1q_f32(out + o, vcvt_high_f32_f64(vcvt_f32_f64(vmulq_f64(vld1q_f64(scale + o), lo)),
                                               vmulq_f64(vld1q_f64(scale + o + 2), hi)));
        }
#endif
        for (; o < o_count; ++o) out[o] = int8_output(w, o, acc[o]);
      }
    }
  };

  const Int8Weights& int8_;  // outlives the kernel (KernelRequest)
  const GemmlowpVariant& variant_;
  int threads_;
  size_t outputs_;
  std::vector<uint8_t> weights_;  // gemmlowp's: [outputs, k], q + 128
#if defined(__aarch64__)
  std::vector<double> bias_f64_, scale_f64_;  // the epilogue's, widened once
#endif
  bool sdot_ = false;             // the SDOT kernel runs instead (dot-product cores)
#ifdef PATCHFUSE_SDOT_GEMM
  std::vector<int8_t> sdot_weights_;  // sdot_gemm.h's layout
  std::vector<int32_t> sdot_start_;
  std::vector<uint8_t> sdot_tail_;  // the last tile's rows, with 16 bytes after them
#endif
  std::vector<int32_t> acc_;
  GemmlowpContext* context_;
};

bool available(std::string* why) { return pick_variant(why) != nullptr; }

bool supports(Precision p, bool fused, std::string* why) {
  if (p == Precision::kInt8 && fused) return true;
  if (why) *why = p == Precision::kInt8 ? "int8 runs the fused GEMM only" : "gemmlowp is an integer GEMM: int8 (frames) only";
  return false;
}

}  // namespace

const Backend& gemmlowp_backend() {
  static const Backend b{BackendId::kGemmlowp, "gemmlowp", available, supports,
                         [](Precision, std::string*) { return true; },  // int8 only, which auto never picks
                         GemmlowpKernel::make,
                         [](std::string*) { return 127; },  // exact int32 sums on every variant
                         [] { return std::string("gemmlowp (packs on every call: the cache keeps the int8 weights)"); }};
  return b;
}

}  // namespace patchfuse
