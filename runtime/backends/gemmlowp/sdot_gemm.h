// The int8 GEMM for ARMv8.2 cores with the dot product (Cortex-A55, A76 and later): patchfuse's
// own kernel, which the gemmlowp backend runs there instead of gemmlowp's (scripts/arm-cost.sh
// prices both on the A55 and A76 models: docs/arm.md). gemmlowp packs both operands on every call
// and its dot-product kernel multiplies u8 by u8 with offsets; this one packs the weights once, at
// session creation, and runs SDOT on the pixels less 128 (x XOR 0x80 read as int8), with sums that
// start from 128 * sum(q) per output so that they come out as sum(x * q), exactly in int32
// (|x - 128| <= 128 and |q| <= 127: 588 products stay far below 2^31).
//
// sdot_gemm_neon_dotprod.cc is compiled with -march=armv8.2-a+dotprod into an object of its own
// (backends/gemmlowp/CMakeLists.txt) that defines nothing but these three functions (ctest
// GemmlowpVariants.SdotKernelExportsOnlyEntryPoints); the backend calls them only where
// simd_level() reports the dot product.
#pragma once

#include <cstddef>
#include <cstdint>

namespace patchfuse {

// Bytes of packed weights for `outputs` x `k` int8 weights: blocks of 16 outputs, each k rounded
// up to 16 in groups of 4 ([block][k / 4][16 outputs][4]), zeros past k and past the last output.
size_t sdot_packed_bytes_neon_dotprod(int outputs, int k);
// Packs weights q [outputs, k] (row-major) into `packed` (sdot_packed_bytes_neon_dotprod bytes)
// and writes each output's starting sum 128 * sum_k q into `start` (outputs rounded up to 16).
void sdot_pack_neon_dotprod(const int8_t* q, int outputs, int k, int8_t* packed, int32_t* start);
// acc[i][o] = sum_k rows[i][k] * q[o][k], exactly, for n rows [n, k] of uint8, row-major. Each row
// is read as k rounded up to 16 bytes (the weights past k are zero, so the next row's bytes do no
// harm): the last row needs that many readable bytes, so the caller runs the last tile (rows from
// n - 1 rounded down to 4) from a copy with 16 bytes after it.
void sdot_gemm_neon_dotprod(const int8_t* packed, const int32_t* start, int outputs, int k, const uint8_t* rows, int n,
                            int32_t* acc);

}  // namespace patchfuse
