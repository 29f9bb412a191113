// A resize axis's coefficients and the vector kernels' tables built from them (resize.h's
// Resizer makes both; frames/kernels/ reads the tables through TapTablesView).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/frames/kernels/kernels.h"

namespace patchfuse {

// One axis: for each output index the first input index, the tap count and the taps (fixed point
// for kPil, float for kTorch), or for NEAREST the input index alone.
struct AxisFilter {
  size_t taps = 0;                 // the most taps any output index has
  std::vector<int32_t> first, count;
  std::vector<int32_t> fixed;      // kPil: taps * outputs
  std::vector<float> weights;      // kTorch: taps * outputs
};

// The horizontal kernels' tables (empty for the scalar pass), owned; view() is what the kernels
// read (kernels.h's TapTablesView documents the two forms):
struct TapTables {
  size_t block = 8;              // outputs a block: 8 (AVX2, NEON) or 16 (AVX-512)
  std::vector<uint8_t> ok;       // per block: its windows fit the kernel
  size_t pairs = 0;
  std::vector<uint8_t> index;    // per block and pair: 4 shuffle bytes an output
  std::vector<int16_t> hi, lo;   // per block and pair: 2 coefficient halves an output (its 2 taps)
  size_t groups = 0;
  std::vector<uint8_t> quad_index;  // per block and group: 4 tbl indices an output
  std::vector<int8_t> digits;       // per block, group and digit (d0, d1, d2): 4 bytes an output
  std::vector<int32_t> bias;        // per output of a block: 128 * its coefficients' sum
  TapTablesView view() const {
    return {block, ok.data(), pairs, index.data(), hi.data(), lo.data(), groups, quad_index.data(), digits.data(), bias.data()};
  }
};


// The horizontal kernels' tables (TapTables) for columns [c0, c1) of axis h in `form`'s layout:
// `block` outputs a block (8 for the AVX2 and NEON kernels, 16 for the AVX-512 ones) in lanes of
// 4, as pairs or, for the dot-product kernels, quads, each index counted from the first pixel of
// its window (the `window` outputs that share one load: a lane's 16 bytes, or VBMI's 64). Output
// j's taps go to bytes 4j.. of its block: pairs put the two pixels of a pair at 4j and 4j + 2 as
// int16 (index 0x80 between: pshufb and tbl write a zero; the VBMI kernel masks those bytes),
// quads a group's four pixels at 4j..4j + 3. A tap past an output's last reads a zero or any
// pixel with coefficient 0. Pairs and
// groups cover the most taps an output has, not the table width: that is one less (2 *
// ceil(support) + 1 rounds the window up), a pair fewer for the bicubic scales camera frames see.
// A block is not ok (the kernels run it with the 8-tap scalar loop) where a window's taps do not
// fit its 4 * window source bytes (scales above ~2 for 16), or a coefficient its quad digits (|k| < 2^23 fits
// pairs; quads need -128 <= d2 <= 127 and |128 * sum| < 2^30, which normalized filters meet).
// The last block is padded where c1 - c0 is no multiple of `block`: its outputs past c1 have no
// taps. The RGB pass runs it as a block; the planes' passes run whole blocks and the scalar loop
// on the rest.
// pixel_bytes: 1 for planes; 3 for the interleaved rows of ResizeForm.horizontal_rgb (window 16),
// whose indices count a pixel's first byte and whose windows fit 64 bytes, 21 pixels.
void build_tap_tables(const AxisFilter& h, size_t c0, size_t c1, const ResizeForm& form, size_t pixel_bytes,
                      TapTables& t);

// The wide kernel's tables (WideTablesView documents them), owned.
struct WideTables {
  size_t chunks = 0, groups = 0, windows = 0;
  std::vector<int32_t> first;
  std::vector<uint8_t> index;
  std::vector<int8_t> digits;
  std::vector<int16_t> halves;
  std::vector<int32_t> bias;
  WideTablesView view() const {
    return {chunks, groups, windows, first.data(), index.data(), digits.data(), halves.data(), bias.data()};
  }
};
// WideTables for columns [c0, c1) of axis h, whose windows have 9 to kPilMaxTaps taps, in `form`'s layout
// (blocks where the form takes them and every block fits, else quads or pairs): false (the scalar
// pass) where they have fewer or more, or for digits where a coefficient's do not fit
// (pil_digits) or the bias could leave int32 with the sums (pairs take every |k| < 2^23,
// resize.cc's bound).
bool build_wide_tables(const AxisFilter& h, size_t c0, size_t c1, const WidePass& form, WideTables& t);

}  // namespace patchfuse
