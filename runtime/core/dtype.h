// Element types of patch-embedding weights and the exact bit-level conversions between them.
// The numeric values match schema/patchfuse.fbs (fb::DType); model_view.cc checks the mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace patchfuse {

enum class DType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2 };

size_t dtype_size(DType dtype);
// "F32", "F16", "BF16": the spelling safetensors uses.
const char* dtype_name(DType dtype);
// Accepts the safetensors spelling; nullopt for anything else.
std::optional<DType> dtype_from_name(std::string_view name);

// bf16 and f16 widen to f32 exactly. Narrowing rounds to nearest, ties to even; NaN stays NaN
// (quiet), overflow becomes +-Inf, f16 keeps subnormals.
float bf16_to_f32(uint16_t bits);
float f16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);
uint16_t f32_to_f16(float value);

// Reads element `i` of a little-endian buffer of `dtype` as float (exact).
float load_as_f32(const uint8_t* data, DType dtype, size_t i);
// Writes `value` as element `i` of a buffer of `dtype` (rounding as above).
void store_f32_as(uint8_t* data, DType dtype, size_t i, float value);
// `value` as `dtype` holds it, read back (rounding as above; f32 as is).
float rounded_to(float value, DType dtype);

// Converts `count` elements; returns how many values changed (0 means the conversion was exact).
// `dst` must hold count * dtype_size(to) bytes and must not overlap `src`.
size_t convert_elements(const uint8_t* src, DType from, uint8_t* dst, DType to, size_t count);

}  // namespace patchfuse
