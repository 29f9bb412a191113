// Why the XNNPACK backend offers no int8 (the figure in its refusal): XNNPACK 2022's int8
// operators (qc8 convolution, qs8 fully-connected) write int8 outputs, so the output needs a
// scale fixed before any image is seen. This runs the per-channel qc8 1x1 convolution (a
// fully-connected layer) on the Qwen2-VL frames fixture's 448x448 test image, with the weights
// quantized exactly as int8 sessions do (quantize_int8), and prints max |error| / max |PyTorch|:
// for the output range that can never clip (from the weights' bound), for a range calibrated on
// this very image (a best case no session could know in advance), and for int8 weights with an
// exact accumulate and f32 output (what oneDNN and the reference backend do). Run:
//   build/tests/bench/patchfuse-xnnpack-int8-error tests/fixtures/frames/qwen2_vl
#include <xnnpack.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/npy.h"
#include "converter/convert.h"
#include "runtime/frames/gather.h"
#include "runtime/frames/weight_transforms.h"
#include "runtime/model/model_file.h"
#include "tools/image_files.h"

using namespace patchfuse;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FRAMES_FIXTURE_DIR (e.g. tests/fixtures/frames/qwen2_vl)\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  ConvertOptions o;
  o.input = dir;
  o.output = "/tmp/patchfuse-xnnpack-int8-error.pfb";
  if (auto r = convert_checkpoint(o); !r.ok()) return std::fprintf(stderr, "%s\n", r.error().message.c_str()), 1;
  auto file = open_model_file(o.output);
  auto model = Model::open_file(o.output);
  if (!model) return std::fprintf(stderr, "%s\n", model.error().c_str()), 1;
  auto frames = decode_image(dir + "/image_448.png", DecodeOptions());  // already the model's size
  auto want_npy = read_npy(dir + "/expected_image_448.npy");
  if (!file.ok() || !frames || !want_npy.ok()) return std::fprintf(stderr, "cannot load %s\n", dir.c_str()), 1;
  const ModuleView& m = file->view.modules.at(0);
  const Preprocessing& p = *m.preprocessing;
  const FoldedWeights f = fold_normalization(conv_weights(m), p, true);
  const Int8Weights q = quantize_int8(f);
  const auto k = static_cast<size_t>(f.k), out = f.bias.size();
  const FrameGrid g = frame_grid(p, 1, frames->height, frames->width).value();  // refuses any other size
  const auto n = static_cast<size_t>(g.rows());
  std::vector<uint8_t> rows(n * k);
  const uint8_t* frame = frames->bytes.data();
  gather_rows(&frame, 1, frames->width * 3, 0, g, p, 3, true, 0, gather_block_count(g, p), rows.data());
  std::vector<int8_t> x(n * k + XNN_EXTRA_BYTES);  // qs8 pixels: u8 - 128, zero point 0, scale 1
  for (size_t i = 0; i < n * k; ++i) x[i] = static_cast<int8_t>(static_cast<int>(rows[i]) - 128);
  const std::vector<double> want = want_npy->to_double();

  // y[o] = scale[o] * sum_k q * (u8 - 128) + b'[o]: XNNPACK's kernel scale is scale[o], its int32
  // bias b'[o] / scale[o]. The never-clipping range: |u8 - 128| <= 128.
  std::vector<int32_t> bias(out);
  double bound_lo = INFINITY, bound_hi = -INFINITY, ref_lo = INFINITY, ref_hi = -INFINITY, max_ref = 0;
  for (size_t o = 0; o < out; ++o) {
    bias[o] = static_cast<int32_t>(std::lrint(f.bias[o] / q.scale[o]));
    double abs_q = 0;
    for (size_t j = 0; j < k; ++j) abs_q += std::abs(q.weight[o * k + j]);
    bound_lo = std::min(bound_lo, f.bias[o] - q.scale[o] * 128 * abs_q);
    bound_hi = std::max(bound_hi, f.bias[o] + q.scale[o] * 128 * abs_q);
  }
  for (double v : want) {
    ref_lo = std::min(ref_lo, v);
    ref_hi = std::max(ref_hi, v);
    max_ref = std::max(max_ref, std::fabs(v));
  }
  if (xnn_initialize(nullptr) != xnn_status_success) return std::fprintf(stderr, "xnn_initialize failed\n"), 1;
  const std::pair<const char*, std::pair<double, double>> ranges[] = {{"output range from the weights' bound (never clips)", {bound_lo, bound_hi}},
                                                                      {"output range calibrated on this image", {ref_lo, ref_hi}}};
  for (const auto& [what, range] : ranges) {
    const auto scale = static_cast<float>((range.second - range.first) / 255);
    const int zero_point = std::clamp(static_cast<int>(std::lrint(-128 - range.first / scale)), -128, 127);
    xnn_operator_t op = nullptr;
    std::vector<int8_t> y(n * out);
    if (xnn_create_convolution2d_nhwc_qc8(0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, k, out, k, out, 0, 1.0f, q.scale.data(),
                                          q.weight.data(), bias.data(), static_cast<int8_t>(zero_point), scale, -128, 127,
                                          0, &op) != xnn_status_success ||
        xnn_setup_convolution2d_nhwc_qc8(op, n, 1, 1, x.data(), y.data(), nullptr) != xnn_status_success ||
        xnn_run_operator(op, nullptr) != xnn_status_success) {
      return std::fprintf(stderr, "xnn qc8 convolution failed\n"), 1;
    }
    xnn_delete_operator(op);
    double err = 0;
    for (size_t i = 0; i < y.size(); ++i) err = std::max(err, std::fabs(scale * (y[i] - zero_point) - want[i]));
    std::printf("XNNPACK qc8, int8 output, %s [%.3g, %.3g]: max |err| %.3g of max |ref| %.3g\n", what, range.first,
                range.second, err / max_ref, max_ref);
  }
  double err = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t o = 0; o < out; ++o) {
      int64_t acc = 0;
      for (size_t j = 0; j < k; ++j) acc += int64_t{x[i * k + j]} * q.weight[o * k + j];
      err = std::max(err, std::fabs(q.scale[o] * static_cast<double>(acc) + f.bias[o] - want[i * out + o]));
    }
  }
  std::printf("int8 weights, exact accumulate, f32 output (oneDNN, reference): max |err| %.3g of max |ref|\n", err / max_ref);
  return 0;
}
