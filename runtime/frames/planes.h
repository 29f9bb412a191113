// Interleaved pixels -> one plane per channel: the layout the resize's horizontal kernels and the
// frames gather read. One function per pixel size for both, with AVX2 byte shuffles where the CPU
// has them and NEON's ld3/ld4 on ARM (core/cpu_features.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace patchfuse {

// 3 bytes a pixel: byte 0 of each pixel to p0, byte 1 to p1, byte 2 to p2 (`width` bytes each).
void split_rgb_planes(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2);
// 4 bytes a pixel, the same; byte 3 (alpha) is dropped.
void split_rgba_planes(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2);

// The form both run on this CPU: "avx2", "neon" or "portable".
const char* split_planes_kernel();

}  // namespace patchfuse
