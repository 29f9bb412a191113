#pragma once
// What the overhead benchmarks share (overhead_bench.cc, frame_gemm_bench.cc): a Qwen2-VL-shaped
// patch embedding (3 x 2 x 14 x 14 = 1176 -> 1280, f32 weights) built with the converter, with or
// without the processor's image preprocessing, and seeded inputs.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "patchfuse/patchfuse.hpp"
#include "runtime/frames/preprocessing.h"

namespace bench {

constexpr int64_t kK = 1176, kOut = 1280;  // Qwen2-VL: 3 x 2 x 14 x 14 -> 1280

std::vector<float> values(size_t n, uint32_t seed);        // in [-0.5, 0.5), seeded
std::vector<uint8_t> random_bytes(size_t n, uint32_t seed);  // seeded
const std::vector<float>& weights();                        // [kOut, kK]
const std::vector<uint8_t>& model_bytes();                  // the model, without preprocessing
const std::vector<uint8_t>& frames_model_bytes();           // with it, so the frames path can run
patchfuse::Preprocessing preprocessing();                   // Qwen2-VL's, as frames_model_bytes stores it
bool bf16_available();                                      // oneDNN runs bf16 sessions on this CPU
// A session on module 0 of `bytes`, model_bytes() or frames_model_bytes() (each opened once, as
// a session needs its model to outlive it).
patchfuse::Expected<patchfuse::Session> open_session(const std::vector<uint8_t>& bytes, pf_backend backend,
                                                     pf_precision precision, int threads);

}  // namespace bench
