// The EXIF orientation tag (0x0112 in IFD0) and the transpose ImageOps.exif_transpose applies for
// it. The parser reads a TIFF structure (what follows "Exif\0\0" in a JPEG's APP1, or a PNG's
// eXIf chunk) with every offset checked against its size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace patchfuse {

// 1..8, or 1 when the data has no valid orientation (as Pillow treats it: nothing to undo).
int exif_orientation(const uint8_t* tiff, size_t size);

// Applies orientation 2..8 to an RGB image in place (width and height swap for 5..8):
// 2 FLIP_LEFT_RIGHT, 3 ROTATE_180, 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE, 6 ROTATE_270, 7 TRANSVERSE,
// 8 ROTATE_90 (Pillow's names; rotations counter-clockwise).
void apply_orientation(int orientation, size_t& width, size_t& height, std::vector<uint8_t>& rgb);

}  // namespace patchfuse
