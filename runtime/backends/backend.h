// The one small interface every backend implements (after ExecuTorch's backend interface and
// ggml's backend registry). Core code sees only this header; registry.cc is the single place
// that names the backends. A backend's own error types never leave its folder: each translates
// them into Error at its boundary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/model/model_view.h"

namespace patchfuse {

struct Int8Weights;  // runtime/frames/weight_transforms.h

enum class BackendId { kReference, kOneDnn, kXnnpack, kGemmlowp };
enum class Precision { kF32, kBF16, kF16, kInt8 };  // kInt8: frames only (uint8 rows, int8 weights)
const char* backend_id_name(BackendId id);
const char* precision_name(Precision p);

// A frames kernel's weights: the model's, folded into the normalization (NormalizationFold in
// frames/weight_transforms.h), made a block of output channels at a time: rows [first, first +
// count) into `weight` (count x patch_volume f32) and their biases into `bias`. A backend packs
// them block by block, so no f32 copy of the whole [O, K] matrix is made beside its packed one
// (3 MB of fresh pages for Qwen2-VL, most of a bf16 session's creation). Each row once, any order.
using FoldedRows = std::function<void(int64_t first, int64_t count, float* weight, float* bias)>;
// Output channels a backend asks the fold for at a time (oneDNN: a multiple of its layout's block
// of output channels near this), 150 KB of f32 at K = 588.
constexpr int64_t kFoldedBlock = 64;

// What a session asks a backend to build. The module's geometry has passed the fusion rules, so
// its weight bytes are both the fused [embed_dim, patch_volume] matrix and the conv
// [embed_dim, C, kt, kh, kw] tensor: only the view differs.
struct KernelRequest {
  const ModuleView* module = nullptr;  // read while the kernel is created: keep a copy of what it needs
  bool fused = true;                   // GEMM, or the backend's convolution on the conv view
  Precision precision = Precision::kF32;
  int threads = 1;
  // kInt8 only: the quantized weights, scales and bias (the module then gives the geometry); they
  // outlive the kernel. int8 kernels take uint8 rows (run_u8).
  const Int8Weights* int8 = nullptr;
  // The bytes Kernel::packed_weights() gave for this same request in an earlier process (the
  // weights cache), to use in place of packing; they outlive the kernel. A backend that cannot
  // take them, or finds them the wrong size, fails creation (the session then packs afresh).
  const uint8_t* packed = nullptr;
  size_t packed_size = 0;
  // Frames kernels in f32, bf16 and f16: the weights and bias come from here, and the module's
  // weight and bias views (which then have no data) give their shapes only.
  const FoldedRows* folded = nullptr;
  // Frames kernels: their rows are the gather's, which writes any padding the kernel asks for
  // (Kernel::row_padding) at no cost. Others (pixel_values) get the caller's rows, to be copied.
  bool gathered_rows = false;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // input: n * patch_volume floats, output: n * embed_dim floats. Neither has padding after it:
  // a kernel whose library may over-read must stage the bytes it cannot read in place.
  virtual Status run(const float* input, size_t n, float* output) = 0;
  virtual std::string detail() const = 0;  // library and kernel, for the session info
  // The instruction set the library dispatched to, in its own words ("avx512_core_bf16"), or ""
  // where the library does not say which it chose.
  virtual std::string isa() const = 0;
  virtual int threads() const = 0;         // threads actually used
  // The weights as packed at creation, for the weights cache to keep; {nullptr, 0} where the
  // backend cannot take them back (KernelRequest::packed).
  virtual std::pair<const uint8_t*, size_t> packed_weights() const { return {nullptr, 0}; }
  // Does now what the first run of n rows would do once, without running: the library's plan for
  // n (oneDNN's primitive and its JIT code), the kernel's buffers for n, first touched. `f32_rows`:
  // the runs will call run() (f32 rows) rather than run_bf16 or run_u8. Kernels with nothing per
  // n keep the default.
  virtual Status prepare(size_t /*n*/, bool /*f32_rows*/) { return {}; }
  // bf16 kernels may also take rows already in bf16 (raw bits), so a caller that makes its rows
  // itself, like the frames gather, skips the f32 -> bf16 conversion. Others keep the default.
  // These rows are patch_volume + row_padding() values apart, the padding zero.
  virtual bool takes_bf16() const { return false; }
  // Zero values after each row run_bf16 takes: where the library computes faster over a K padded
  // with zeros (oneDNN's AMX bf16 matmul, to its 32-row blocks) and the rows are gathered
  // (KernelRequest::gathered_rows). run() and run_u8 take rows without padding.
  virtual size_t row_padding() const { return 0; }
  virtual Status run_bf16(const uint16_t* /*input*/, size_t /*n*/, float* /*output*/) {
    return make_error(Code::kInternal, "this kernel takes f32 rows only");
  }
  // int8 kernels take the uint8 pixels themselves, in the gather's order.
  virtual Status run_u8(const uint8_t* /*input*/, size_t /*n*/, float* /*output*/) {
    return make_error(Code::kInternal, "this kernel takes no uint8 rows");
  }
  // Calls of a multiple of this many rows run at the library's full speed; the kernel runs another
  // count as such a call and one of the rest, so the frames path makes its calls multiples (the
  // rest carried to the next chunk) but a frame's last. 1: any count is as fast.
  virtual size_t row_multiple() const { return 1; }
  // The frames path gathers a whole frame's rows before one call over them, rather than running
  // each chunk's rows while they are in cache: where going back and forth between the gather and
  // the kernel costs more than the rows' trip through memory (oneDNN's AMX kernels, docs/amx.md).
  virtual bool whole_frame_calls() const { return false; }
  // Calls task(i) for every i in [0, n) on the threads the kernel computes on (its library's own
  // pool, already warm), so work a session does before a run, like the frames gather, scales with
  // the session's threads too. `task` must not throw. Single-threaded kernels keep the default.
  virtual void parallelize(size_t n, const std::function<void(size_t)>& task) {
    for (size_t i = 0; i < n; ++i) task(i);
  }
};

struct Backend {
  BackendId id;
  const char* name;
  // Usable on this CPU; otherwise `why` says what is missing.
  bool (*available)(std::string* why);
  // Computes natively in `precision` on this path and CPU; otherwise `why` says why not.
  bool (*supports)(Precision precision, bool fused, std::string* why);
  // For `auto`, which computes in the model's dtype where the backend supports it: whether that
  // dtype also runs faster than f32 on this CPU. Otherwise `why` says why not and auto computes
  // in f32, which holds bf16 and f16 weights exactly.
  bool (*outruns_f32)(Precision precision, std::string* why);
  // Packs the weights; called once per session.
  Result<std::unique_ptr<Kernel>> (*create)(const KernelRequest& request);
  // int8: the largest |q| the backend's int8 kernels sum exactly on this CPU (127 for exact int32
  // accumulation; 63 where u8 x s8 pairs are added in int16 with saturation, since 2*255*63 =
  // 32130 < 32767). Below 127 `why` says why. The session quantizes the weights to this.
  int (*int8_weight_max)(std::string* why);
  // The library version and the CPU state its packed layouts depend on ("oneDNN 2.6.3
  // avx512_core_bf16"), for the weights cache's key.
  std::string (*identity)();
};

// The backends built into this library, in the order `auto` prefers them; reference is last and
// always present.
const std::vector<const Backend*>& registered_backends();
const Backend* find_backend(BackendId id);  // nullptr when not built

// Shared by the backends: a weight or bias tensor in the dtype a kernel packs from.
std::vector<float> tensor_as_f32(const TensorView& t);
// The request's [O, K] weights as T (float, or uint16_t holding `to`: kF16 or kBF16) and its bias
// into `bias` (empty: none), from the module's tensors or, a block at a time, the folded rows: for
// backends that need the whole matrix before they pack it.
template <class T>
std::vector<T> request_weights(const KernelRequest& r, DType to, std::vector<T>* bias);

}  // namespace patchfuse
