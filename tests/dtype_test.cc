// Bit-exact dtype conversions: every f16 / bf16 value widens exactly and narrows back to itself;
// narrowing rounds to nearest even, including at the subnormal and overflow edges.
#include "runtime/core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace patchfuse {
namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(DType, NamesRoundTrip) {
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) EXPECT_EQ(dtype_from_name(dtype_name(d)), d);
  EXPECT_FALSE(dtype_from_name("F64").has_value());
  EXPECT_EQ(dtype_size(DType::kF32), 4u);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
}

TEST(DType, EveryHalfValueRoundTripsThroughF32) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const bool nan = ((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF) != 0;
    if (nan) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << h;
    } else {
      EXPECT_EQ(f32_to_f16(f), h) << "f16 bits " << h;
    }
    const float b = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(b)))) << h;
    } else {
      EXPECT_EQ(f32_to_bf16(b), h) << "bf16 bits " << h;
    }
  }
}

TEST(DType, HalfKnownValues) {
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0xC000), -2.0f);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)));
}

TEST(DType, NarrowingRoundsToNearestEven) {
  // 1 + 2^-11 is halfway between f16 1.0 and 1+2^-10: ties to even -> 1.0.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even) -> up.
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  // Just above the tie rounds up.
  EXPECT_EQ(f32_to_f16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3C01);
  // bf16: 1 + 2^-8 is the tie between 1.0 and 1+2^-7 -> even (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
}

TEST(DType, OverflowUnderflowAndSpecials) {
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);   // below the rounding threshold
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);   // rounds to Inf
  EXPECT_EQ(f32_to_f16(-1e10f), 0xFC00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);            // tie with 0 -> even (0)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);            // above the tie
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400);  // rounds up into normal
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16(from_bits(0x7F7FFFFF)), 0x7F80);  // FLT_MAX rounds to Inf in bf16
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(from_bits(0x7F800001)))));  // signalling NaN stays NaN
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(from_bits(0x7F800001)))));
}

TEST(DType, ConvertElementsCountsChangedValues) {
  const float src[4] = {1.0f, 0.5f, 1.0f + std::ldexp(1.0f, -20), 3.0f};
  uint16_t bf[4];
  EXPECT_EQ(convert_elements(reinterpret_cast<const uint8_t*>(src), DType::kF32, reinterpret_cast<uint8_t*>(bf),
                             DType::kBF16, 4),
            1u);
  float back[4];
  EXPECT_EQ(convert_elements(reinterpret_cast<const uint8_t*>(bf), DType::kBF16, reinterpret_cast<uint8_t*>(back),
                             DType::kF32, 4),
            0u);  // widening is exact
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[2], 1.0f);
  EXPECT_EQ(back[3], 3.0f);
}

// convert_elements widens in a loop per source type; every bf16 and f16 bit pattern (NaN, Inf,
// subnormals included) must come out as the scalar conversion's bits.
TEST(DType, WideningMatchesTheScalarConversionForEveryBitPattern) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> wide(all.size());
  for (DType from : {DType::kBF16, DType::kF16}) {
    ASSERT_EQ(convert_elements(reinterpret_cast<const uint8_t*>(all.data()), from, reinterpret_cast<uint8_t*>(wide.data()),
                               DType::kF32, all.size()),
              0u);
    for (size_t i = 0; i < all.size(); ++i) {
      const float want = from == DType::kBF16 ? bf16_to_f32(all[i]) : f16_to_f32(all[i]);
      ASSERT_EQ(bits(wide[i]), bits(want)) << dtype_name(from) << " 0x" << std::hex << i;
    }
  }
}

}  // namespace
}  // namespace patchfuse
