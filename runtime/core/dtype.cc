#include "runtime/core/dtype.h"

#include <cmath>
#include <cstring>

namespace patchfuse {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
    if (name == dtype_name(d)) return d;
  }
  return std::nullopt;
}

static uint32_t f32_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

static float f32_from_bits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

float bf16_to_f32(uint16_t bits) { return f32_from_bits(uint32_t{bits} << 16); }

uint16_t f32_to_bf16(float value) {
  uint32_t b = f32_bits(value);
  if (std::isnan(value)) return static_cast<uint16_t>((b >> 16) | 0x40);  // keep sign, force quiet
  // Round to nearest even on the 16 dropped bits; a carry into the exponent gives Inf correctly.
  b += 0x7FFF + ((b >> 16) & 1);
  return static_cast<uint16_t>(b >> 16);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0x1F) return f32_from_bits(sign | 0x7F800000u | (mant << 13));  // Inf / NaN
  if (exp != 0) return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return f32_from_bits(sign);
  // Subnormal f16: value = mant * 2^-24, exactly representable in f32.
  const float v = std::ldexp(static_cast<float>(mant), -24);
  return sign ? -v : v;
}

uint16_t f32_to_f16(float value) {
  const uint32_t b = f32_bits(value);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000);
  const uint32_t abs = b & 0x7FFFFFFF;
  if (abs > 0x7F800000u) return sign | 0x7E00 | static_cast<uint16_t>((abs >> 13) & 0x3FF);  // NaN
  if (abs >= 0x477FF000u) return sign | 0x7C00;  // rounds to >= 65520: Inf
  if (abs >= 0x38800000u) {                      // normal f16 range (>= 2^-14)
    uint32_t r = abs - (112u << 23);             // rebias exponent 127 -> 15
    r += 0xFFF + ((r >> 13) & 1);                // round to nearest even on 13 dropped bits
    return sign | static_cast<uint16_t>(r >> 13);
  }
  // Subnormal or zero: f16 step is 2^-24. nearbyint rounds half to even in the default mode.
  const float scaled = std::fabs(value) * 16777216.0f;  // exact: multiply by a power of two
  return sign | static_cast<uint16_t>(std::nearbyint(scaled));
}

float load_as_f32(const uint8_t* data, DType dtype, size_t i) {
  switch (dtype) {
    case DType::kF32: {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      return v;
    }
    case DType::kF16: {
      uint16_t h;
      std::memcpy(&h, data + 2 * i, 2);
      return f16_to_f32(h);
    }
    case DType::kBF16: {
      uint16_t h;
      std::memcpy(&h, data + 2 * i, 2);
      return bf16_to_f32(h);
    }
  }
  return 0.0f;
}

void store_f32_as(uint8_t* data, DType dtype, size_t i, float v) {
  switch (dtype) {
    case DType::kF32: std::memcpy(data + 4 * i, &v, 4); return;
    case DType::kF16: {
      const uint16_t h = f32_to_f16(v);
      std::memcpy(data + 2 * i, &h, 2);
      return;
    }
    case DType::kBF16: {
      const uint16_t h = f32_to_bf16(v);
      std::memcpy(data + 2 * i, &h, 2);
      return;
    }
  }
}

// One loop per source type, the type chosen once: through load_as_f32's switch per element the
// widening of a 1280 x 1176 bf16 module took a third of an int8 session's creation. bf16 is the
// top half of an f32, so its loop is a shift the compiler vectorizes.
static void widen_to_f32(const uint8_t* src, DType from, uint8_t* dst, size_t count) {
  switch (from) {
    case DType::kF32: std::memcpy(dst, src, count * 4); return;
    case DType::kF16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        const float v = f16_to_f32(h);
        std::memcpy(dst + 4 * i, &v, 4);
      }
      return;
    case DType::kBF16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        const uint32_t bits = uint32_t{h} << 16;
        std::memcpy(dst + 4 * i, &bits, 4);
      }
      return;
  }
}

size_t convert_elements(const uint8_t* src, DType from, uint8_t* dst, DType to, size_t count) {
  if (from == to) {
    std::memcpy(dst, src, count * dtype_size(from));
    return 0;
  }
  if (to == DType::kF32) {  // widening is exact: no rounding to count
    widen_to_f32(src, from, dst, count);
    return 0;
  }
  // Every path goes through f32, which holds f16 and bf16 exactly, so there is a single rounding.
  size_t changed = 0;
  for (size_t i = 0; i < count; ++i) {
    const float v = load_as_f32(src, from, i);
    store_f32_as(dst, to, i, v);
    const float back = load_as_f32(dst, to, i);
    if (!(back == v || (std::isnan(back) && std::isnan(v)))) ++changed;
  }
  return changed;
}

float rounded_to(float value, DType dtype) {
  if (dtype == DType::kF32) return value;
  uint8_t bytes[4];
  store_f32_as(bytes, dtype, 0, value);
  return load_as_f32(bytes, dtype, 0);
}

}  // namespace patchfuse
