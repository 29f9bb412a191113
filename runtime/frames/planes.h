// Interleaved RGB (3 bytes a pixel) -> one plane per channel: the layout the resize's horizontal
// kernels and the frames gather read. One function for both, with AVX2 byte shuffles where the
// CPU has them (core/cpu_features.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace patchfuse {

// R, G and B planes of `width` bytes each, `plane_stride` bytes apart from `planes` on.
void split_rgb_planes(const uint8_t* rgb, size_t width, uint8_t* planes, size_t plane_stride);

}  // namespace patchfuse
