#include "runtime/frames/resize.h"

#include "runtime/core/cpu_features.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__) || defined(__arm__)
#include <arm_neon.h>
#endif

namespace patchfuse {

const char* resample_name(Resample r) {
  switch (r) {
    case Resample::kNearest: return "nearest";
    case Resample::kLanczos: return "lanczos";
    case Resample::kBilinear: return "bilinear";
    case Resample::kBicubic: return "bicubic";
    case Resample::kBox: return "box";
    case Resample::kHamming: return "hamming";
  }
  return "?";
}

const char* resize_semantics_name(ResizeSemantics s) {
  switch (s) {
    case ResizeSemantics::kPil: return "pil";
    case ResizeSemantics::kTorch: return "torch";
  }
  return "?";
}

bool torch_has_filter(Resample r) {
  return r == Resample::kNearest || r == Resample::kBilinear || r == Resample::kBicubic;
}

namespace {

// Pillow's filters (Resample.c), each with its support, in double as there. Hamming's 0.54f and
// 0.46f are floats in Pillow's source, so they are here.
double box_filter(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }
double bilinear_filter(double x) {
  x = x < 0.0 ? -x : x;
  return x < 1.0 ? 1.0 - x : 0.0;
}
double hamming_filter(double x) {
  x = x < 0.0 ? -x : x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * M_PI;
  return std::sin(x) / x * (0.54f + 0.46f * std::cos(x));
}
double bicubic_filter(double x) {
  constexpr double a = -0.5;
  x = x < 0.0 ? -x : x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}
double sinc_filter(double x) {
  if (x == 0.0) return 1.0;
  x = x * M_PI;
  return std::sin(x) / x;
}
double lanczos_filter(double x) { return -3.0 <= x && x < 3.0 ? sinc_filter(x) * sinc_filter(x / 3) : 0.0; }

struct PilFilter {
  double (*fn)(double);
  double support;
};
PilFilter pil_filter(Resample r) {
  switch (r) {
    case Resample::kBox: return {box_filter, 0.5};
    case Resample::kBilinear: return {bilinear_filter, 1.0};
    case Resample::kHamming: return {hamming_filter, 1.0};
    case Resample::kBicubic: return {bicubic_filter, 2.0};
    case Resample::kLanczos: return {lanczos_filter, 3.0};
    case Resample::kNearest: break;
  }
  return {bilinear_filter, 1.0};
}

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS

// Pillow's precompute_coeffs and normalize_coeffs_8bpc for the box (0, in_size), whose ends are
// floats there.
void pil_axis(size_t in_size, size_t out_size, Resample r, AxisFilter& a) {
  const PilFilter f = pil_filter(r);
  const double scale = static_cast<double>(static_cast<float>(in_size)) / static_cast<double>(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = f.support * filterscale;
  a.taps = static_cast<size_t>(std::ceil(support)) * 2 + 1;
  a.first.resize(out_size);
  a.count.resize(out_size);
  a.fixed.assign(out_size * a.taps, 0);
  std::vector<double> k(a.taps);
  const auto in = static_cast<int>(in_size);
  for (size_t xx = 0; xx < out_size; ++xx) {
    const double center = (static_cast<double>(xx) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in) - xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = f.fn((x + xmin - center + 0.5) * ss);
      ww += k[x];
    }
    for (int x = 0; x < xmax; ++x) {
      if (ww != 0.0) k[x] /= ww;
      const double v = k[x] * (1 << kPrecisionBits);
      a.fixed[xx * a.taps + x] = static_cast<int32_t>(k[x] < 0 ? -0.5 + v : 0.5 + v);
    }
    a.first[xx] = xmin;
    a.count[xx] = xmax;
  }
}

// torch's _compute_indices_weights_aa (aten/src/ATen/native/cpu/UpSampleKernel.cpp) in float, its
// scalar type for a float image: bilinear is the triangle, bicubic Keys' cubic with a = -0.5.
float torch_filter(Resample r, float x) {
  x = x < 0.0f ? -x : x;
  if (r == Resample::kBilinear) return x < 1.0f ? 1.0f - x : 0.0f;
  constexpr float a = -0.5f;
  if (x < 1.0f) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2.0f) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0f;
}

void torch_axis(size_t in_size, size_t out_size, Resample r, AxisFilter& a) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  const float interp = r == Resample::kBilinear ? 2.0f : 4.0f;
  const float support = scale >= 1.0f ? interp * 0.5f * scale : interp * 0.5f;
  a.taps = static_cast<size_t>(std::ceil(support)) * 2 + 1;
  a.first.resize(out_size);
  a.count.resize(out_size);
  a.weights.assign(out_size * a.taps, 0.0f);
  const auto in = static_cast<int64_t>(in_size);
  for (size_t i = 0; i < out_size; ++i) {
    const auto center = static_cast<float>(scale * (static_cast<double>(i) + 0.5));
    const float invscale = scale >= 1.0f ? static_cast<float>(1.0 / scale) : 1.0f;
    const int64_t xmin = std::max(static_cast<int64_t>(center - support + 0.5), int64_t{0});
    const int64_t xsize = std::min(static_cast<int64_t>(center + support + 0.5), in) - xmin;
    float* w = &a.weights[i * a.taps];
    float total = 0.0f;
    for (int64_t j = 0; j < xsize; ++j) {
      w[j] = torch_filter(r, static_cast<float>((static_cast<float>(j + xmin) - center + 0.5) * invscale));
      total += w[j];
    }
    for (int64_t j = 0; j < xsize; ++j) {
      if (total != 0.0f) w[j] /= total;
    }
    a.first[i] = static_cast<int32_t>(xmin);
    a.count[i] = static_cast<int32_t>(xsize);
  }
}

// NEAREST as an input index per output index. Pillow: Geometry.c's ImagingScaleAffine, which
// steps a double by in/out from half a step in; torch: floor(i * in/out) in float ("nearest").
void nearest_axis(size_t in_size, size_t out_size, ResizeSemantics s, AxisFilter& a) {
  a.taps = 1;
  a.first.resize(out_size);
  a.count.assign(out_size, 1);
  const auto last = static_cast<int32_t>(in_size - 1);
  if (s == ResizeSemantics::kPil) {
    const double step = static_cast<double>(static_cast<float>(in_size)) / static_cast<double>(out_size);
    double xo = step * 0.5;
    for (size_t x = 0; x < out_size; ++x, xo += step) a.first[x] = std::min(static_cast<int32_t>(xo), last);
    return;
  }
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  for (size_t x = 0; x < out_size; ++x) {
    if (in_size == out_size) {
      a.first[x] = static_cast<int32_t>(x);
    } else if (out_size == 2 * in_size) {
      a.first[x] = static_cast<int32_t>(x >> 1);
    } else {
      a.first[x] = std::min(static_cast<int32_t>(std::floor(static_cast<float>(x) * scale)), last);
    }
  }
}

uint8_t clip8(int32_t v) { return static_cast<uint8_t>(std::clamp(v >> kPrecisionBits, 0, 255)); }

// The pil passes' vector kernels (AVX2, AVX-512, NEON), chosen at run time like the gather's
// (core/cpu_features.h). Integer sums in another order are the same sums, so the bytes are Pillow's.
// Horizontal: each output channel is a dot product of 8 consecutive bytes of that channel's plane
// with 8 coefficients (zero past the output's tap count).
constexpr size_t kLanes = 8;  // the horizontal kernels' taps: filters with more use the scalar pass

// Outputs [c0, c1) from the planes (see pil_horizontal_avx2) one at a time: the vector kernels'
// tail, and their blocks whose windows do not fit a vector.
void pil_horizontal_k8(const uint8_t* planes, size_t stride, const int32_t* first, const int32_t* k8, size_t c0,
                       size_t c1, uint8_t* dst) {
  for (size_t c = c0; c < c1; ++c) {
    for (size_t ch = 0; ch < 3; ++ch) {
      const uint8_t* p = planes + ch * stride + first[c];
      int32_t sum = 1 << (kPrecisionBits - 1);
      for (size_t i = 0; i < kLanes; ++i) sum += p[i] * k8[c * kLanes + i];
      dst[(c - c0) * 3 + ch] = clip8(sum);
    }
  }
}

// Values [x, n) of the vertical pass one at a time: the vector kernels' tail.
void pil_vertical_from(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t x, size_t n, uint8_t* out) {
  for (; x < n; ++x) {
    int32_t sum = 1 << (kPrecisionBits - 1);
    for (int32_t i = 0; i < count; ++i) sum += rows[i][x] * k[i];
    out[x] = clip8(sum);
  }
}

#if defined(__x86_64__)
PF_TARGET_AVX2 __m128i clip8x4(__m128i sum) {
  const __m128i v = _mm_srai_epi32(_mm_add_epi32(sum, _mm_set1_epi32(1 << (kPrecisionBits - 1))), kPrecisionBits);
  return _mm_min_epi32(_mm_max_epi32(v, _mm_setzero_si128()), _mm_set1_epi32(255));
}

PF_TARGET_AVX2 __m256i dot8(const uint8_t* p, const int32_t* k) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_mullo_epi32(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k)));
}

// Four dot products sharing one reduction.
// planes: R, G, B planes of the source row, `stride` bytes apart, each with kLanes bytes of slack
// after its last pixel. k8: kLanes coefficients per output. Writes outputs [c0, c1) as RGB.
PF_TARGET_AVX2 void pil_horizontal_avx2(const uint8_t* planes, size_t stride, const int32_t* first, const int32_t* k8,
                                        size_t c0, size_t c1, uint8_t* dst) {
  size_t c = c0;
  // R0..R3 G0..G3 B0..B3 (bytes 0..11 after packing) -> R0 G0 B0 R1 G1 B1 ...
  const __m128i interleave = _mm_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1);
  for (; c + 4 <= c1; c += 4) {
    const int32_t* k = k8 + c * kLanes;
    __m128i rgb[3];
    for (size_t ch = 0; ch < 3; ++ch) {
      const uint8_t* p = planes + ch * stride;
      const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(dot8(p + first[c], k), dot8(p + first[c + 1], k + 8)),
                                          _mm256_hadd_epi32(dot8(p + first[c + 2], k + 16), dot8(p + first[c + 3], k + 24)));
      rgb[ch] = clip8x4(_mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
    }
    const __m128i bytes = _mm_shuffle_epi8(
        _mm_packus_epi16(_mm_packus_epi32(rgb[0], rgb[1]), _mm_packus_epi32(rgb[2], _mm_setzero_si128())), interleave);
    uint8_t* d = dst + (c - c0) * 3;
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d), bytes);  // 12 bytes, none past this block
    const int32_t last = _mm_extract_epi32(bytes, 2);
    std::memcpy(d + 8, &last, 4);
  }
  pil_horizontal_k8(planes, stride, first, k8, c, c1, dst + (c - c0) * 3);
}

// Rounds and shifts 8 sums given as 256 * hi + lo (see TapTables). The clamp to 0..255 is the
// saturating packs that follow (int32 -> uint16 -> uint8): exact, as a shifted sum is at most 64
// taps * 255 * 2 (|k| < 2^23) < 2^15 in magnitude, so no value wraps on the way.
PF_TARGET_AVX2 __m256i shift8x8(__m256i hi, __m256i lo) {
  const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(hi, 8), lo),
                                       _mm256_set1_epi32(1 << (kPrecisionBits - 1)));
  return _mm256_srai_epi32(sum, kPrecisionBits);
}

// The same pass two taps at a time, 8 outputs of each channel per block: each 128-bit lane holds 16
// plane bytes from its 4 outputs' first tap on; per pair of taps one byte shuffle gives the 4
// outputs' two pixels as int16, and two int16 multiply-adds (madd) with the coefficients' high and
// low parts give exact int32 sums (|hi| < 2^15, 0 <= lo < 256). A shuffle, two madds and their
// adds do what four 32-bit multiplies did. Blocks whose windows do not fit 16 bytes (scales above
// ~2) fall back to pil_horizontal_avx2.
PF_TARGET_AVX2 void pil_horizontal_pairs_avx2(const uint8_t* planes, size_t stride, const TapTables& t,
                                              const int32_t* first, const int32_t* k8, size_t c0, size_t c1,
                                              uint8_t* dst) {
  const __m256i interleave = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1));
  const size_t blocks = (c1 - c0) / 8;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t x = c0 + 8 * b;
    uint8_t* d = dst + (x - c0) * 3;
    if (!t.ok[b]) {
      pil_horizontal_avx2(planes, stride, first, k8, x, x + 8, d);
      continue;
    }
    const __m256i* idx = reinterpret_cast<const __m256i*>(&t.index[b * t.pairs * 32]);
    const __m256i* kh = reinterpret_cast<const __m256i*>(&t.hi[b * t.pairs * 16]);
    const __m256i* kl = reinterpret_cast<const __m256i*>(&t.lo[b * t.pairs * 16]);
    __m256i w[3], hi[3], lo[3];
    for (size_t ch = 0; ch < 3; ++ch) {
      const uint8_t* p = planes + ch * stride;
      w[ch] = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + first[x]))),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + first[x + 4])), 1);
      hi[ch] = lo[ch] = _mm256_setzero_si256();
    }
    for (size_t i = 0; i < t.pairs; ++i) {
      const __m256i ix = _mm256_loadu_si256(idx + i), h = _mm256_loadu_si256(kh + i), l = _mm256_loadu_si256(kl + i);
      for (size_t ch = 0; ch < 3; ++ch) {
        const __m256i px = _mm256_shuffle_epi8(w[ch], ix);
        hi[ch] = _mm256_add_epi32(hi[ch], _mm256_madd_epi16(px, h));
        lo[ch] = _mm256_add_epi32(lo[ch], _mm256_madd_epi16(px, l));
      }
    }
    // Per lane: R0..3 G0..3 B0..3 as bytes, then interleaved to 12 RGB bytes.
    const __m256i bytes = _mm256_shuffle_epi8(
        _mm256_packus_epi16(_mm256_packus_epi32(shift8x8(hi[0], lo[0]), shift8x8(hi[1], lo[1])),
                            _mm256_packus_epi32(shift8x8(hi[2], lo[2]), _mm256_setzero_si256())),
        interleave);
    const __m128i bl = _mm256_castsi256_si128(bytes), bh = _mm256_extracti128_si256(bytes, 1);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d), bl);
    const int32_t lo_last = _mm_extract_epi32(bl, 2), hi_last = _mm_extract_epi32(bh, 2);
    std::memcpy(d + 8, &lo_last, 4);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d + 12), bh);
    std::memcpy(d + 20, &hi_last, 4);
  }
  pil_horizontal_avx2(planes, stride, first, k8, c0 + 8 * blocks, c1, dst + 8 * blocks * 3);
}

// The vertical kernels' pairs of taps: each pair's two rows (an odd count's last pair repeats its
// row with k = 0) and its coefficients' halves (see TapTables) as the int16 pair (k0, k1) one
// madd multiplies the two rows' interleaved pixels with.
struct RowPairs {
  static constexpr int32_t kMax = 32;  // the kernels take up to 64 taps
  int32_t pairs;
  const uint8_t* rows[2 * kMax];
  int32_t hi[kMax], lo[kMax];
  RowPairs(const uint8_t* const* r, const int32_t* k, int32_t count) : pairs((count + 1) / 2) {
    for (int32_t i = 0; i < 2 * pairs; ++i) rows[i] = r[std::min(i, count - 1)];
    for (int32_t i = 0; i < pairs; ++i) {
      const int32_t k0 = k[2 * i], k1 = 2 * i + 1 < count ? k[2 * i + 1] : 0;
      hi[i] = static_cast<int32_t>((static_cast<uint32_t>(k1 >> 8) << 16) | static_cast<uint16_t>(k0 >> 8));
      lo[i] = ((k1 & 255) << 16) | (k0 & 255);
    }
  }
};

// 16 output values at a time, two rows (taps) at a time: the rows' bytes widened to int16 and
// interleaved, so one madd per coefficient half (see TapTables) adds both rows' products exactly.
PF_TARGET_AVX2 void pil_vertical_avx2(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n,
                                      uint8_t* out) {
  const RowPairs rp(rows, k, count);
  const int32_t pairs = rp.pairs;
  const uint8_t* const* r = rp.rows;
  __m256i kh[RowPairs::kMax], kl[RowPairs::kMax];
  for (int32_t i = 0; i < pairs; ++i) {
    kh[i] = _mm256_set1_epi32(rp.hi[i]);
    kl[i] = _mm256_set1_epi32(rp.lo[i]);
  }
  size_t x = 0;
  for (; x + 16 <= n; x += 16) {
    __m256i hi_a = _mm256_setzero_si256(), lo_a = hi_a, hi_b = hi_a, lo_b = hi_a;
    for (int32_t i = 0; i < pairs; ++i) {
      const __m256i a = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[2 * i] + x)));
      const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[2 * i + 1] + x)));
      const __m256i ab_lo = _mm256_unpacklo_epi16(a, b), ab_hi = _mm256_unpackhi_epi16(a, b);  // x 0-3|8-11, 4-7|12-15
      hi_a = _mm256_add_epi32(hi_a, _mm256_madd_epi16(ab_lo, kh[i]));
      lo_a = _mm256_add_epi32(lo_a, _mm256_madd_epi16(ab_lo, kl[i]));
      hi_b = _mm256_add_epi32(hi_b, _mm256_madd_epi16(ab_hi, kh[i]));
      lo_b = _mm256_add_epi32(lo_b, _mm256_madd_epi16(ab_hi, kl[i]));
    }
    // packus_epi32 per lane: x 0-3, 4-7 | 8-11, 12-15, so the words are in order.
    const __m256i words = _mm256_packus_epi32(shift8x8(hi_a, lo_a), shift8x8(hi_b, lo_b));
    const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + x), bytes);
  }
  pil_vertical_from(rows, k, count, x, n, out);
}

// The same two passes on 512-bit vectors (AVX-512 F, BW and VL), where the CPU has them: twice the
// outputs per instruction, the same integer sums, so the same bytes.
PF_AVX512_INTRINSICS_BEGIN

PF_TARGET_AVX512 __m512i shift8x16(__m512i hi, __m512i lo) {  // shift8x8's, 16 sums
  const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(hi, 8), lo),
                                       _mm512_set1_epi32(1 << (kPrecisionBits - 1)));
  return _mm512_srai_epi32(sum, kPrecisionBits);
}

// acc + the int16 pairs' multiply-adds: two instructions, or one (vpdpwssd) where the CPU has
// AVX512-VNNI. The kernels below are written once over this; the wrappers at the end compile each
// form for its own target (flatten inlines all of it there).
template <bool Vnni>
struct MaddAdd;
template <>
struct MaddAdd<false> {
  PF_TARGET_AVX512 static __m512i apply(__m512i acc, __m512i a, __m512i b) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
  }
};
template <>
struct MaddAdd<true> {
  PF_TARGET_AVX512_VNNI static __m512i apply(__m512i acc, __m512i a, __m512i b) {
    return _mm512_dpwssd_epi32(acc, a, b);
  }
};

// pil_horizontal_pairs_avx2 with four lanes of 4 outputs: 16 outputs a block (TapTables.block 16).
template <bool Vnni>
PF_TARGET_AVX512 void horizontal_pairs_avx512(const uint8_t* planes, size_t stride, const TapTables& t,
                                              const int32_t* first, const int32_t* k8, size_t c0, size_t c1,
                                              uint8_t* dst) {
  const __m512i interleave =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1));
  // Each lane's 12 RGB bytes are its first three dwords: these put the 48 bytes together.
  const __m512i compact = _mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 0, 0, 0, 0);
  const size_t blocks = (c1 - c0) / 16;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t x = c0 + 16 * b;
    uint8_t* d = dst + (x - c0) * 3;
    if (!t.ok[b]) {
      pil_horizontal_avx2(planes, stride, first, k8, x, x + 16, d);
      continue;
    }
    const uint8_t* idx = &t.index[b * t.pairs * 64];
    const int16_t* kh = &t.hi[b * t.pairs * 32];
    const int16_t* kl = &t.lo[b * t.pairs * 32];
    __m512i w[3], hi[3], lo[3];
    for (size_t ch = 0; ch < 3; ++ch) {
      const uint8_t* p = planes + ch * stride;
      __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + first[x])));
      v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + first[x + 4])), 1);
      v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + first[x + 8])), 2);
      w[ch] = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + first[x + 12])), 3);
      hi[ch] = lo[ch] = _mm512_setzero_si512();
    }
    for (size_t i = 0; i < t.pairs; ++i) {
      const __m512i ix = _mm512_loadu_si512(idx + 64 * i), h = _mm512_loadu_si512(kh + 32 * i),
                    l = _mm512_loadu_si512(kl + 32 * i);
      for (size_t ch = 0; ch < 3; ++ch) {
        const __m512i px = _mm512_shuffle_epi8(w[ch], ix);
        hi[ch] = MaddAdd<Vnni>::apply(hi[ch], px, h);
        lo[ch] = MaddAdd<Vnni>::apply(lo[ch], px, l);
      }
    }
    const __m512i bytes = _mm512_shuffle_epi8(
        _mm512_packus_epi16(_mm512_packus_epi32(shift8x16(hi[0], lo[0]), shift8x16(hi[1], lo[1])),
                            _mm512_packus_epi32(shift8x16(hi[2], lo[2]), _mm512_setzero_si512())),
        interleave);
    _mm512_mask_storeu_epi32(d, 0x0FFF, _mm512_permutexvar_epi32(compact, bytes));
  }
  pil_horizontal_avx2(planes, stride, first, k8, c0 + 16 * blocks, c1, dst + 16 * blocks * 3);
}

// pil_vertical_avx2 on 32 values at a time; the last, shorter step masks its loads and stores.
template <bool Vnni>
PF_TARGET_AVX512 void vertical_avx512(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n,
                                      uint8_t* out) {
  const RowPairs rp(rows, k, count);
  const int32_t pairs = rp.pairs;
  const uint8_t* const* r = rp.rows;
  __m512i kh[RowPairs::kMax], kl[RowPairs::kMax];
  for (int32_t i = 0; i < pairs; ++i) {
    kh[i] = _mm512_set1_epi32(rp.hi[i]);
    kl[i] = _mm512_set1_epi32(rp.lo[i]);
  }
  for (size_t x = 0; x < n; x += 32) {
    const size_t m = std::min<size_t>(32, n - x);
    const auto mask = static_cast<__mmask32>(m == 32 ? ~0u : (1u << m) - 1);
    __m512i hi_a = _mm512_setzero_si512(), lo_a = hi_a, hi_b = hi_a, lo_b = hi_a;
    for (int32_t i = 0; i < pairs; ++i) {
      const __m512i a = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, r[2 * i] + x));
      const __m512i b = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, r[2 * i + 1] + x));
      const __m512i ab_lo = _mm512_unpacklo_epi16(a, b), ab_hi = _mm512_unpackhi_epi16(a, b);
      hi_a = MaddAdd<Vnni>::apply(hi_a, ab_lo, kh[i]);
      lo_a = MaddAdd<Vnni>::apply(lo_a, ab_lo, kl[i]);
      hi_b = MaddAdd<Vnni>::apply(hi_b, ab_hi, kh[i]);
      lo_b = MaddAdd<Vnni>::apply(lo_b, ab_hi, kl[i]);
    }
    // packus_epi32 per lane puts each lane's 8 words in order, as in the AVX2 pass.
    const __m512i words = _mm512_packus_epi32(shift8x16(hi_a, lo_a), shift8x16(hi_b, lo_b));
    _mm256_mask_storeu_epi8(out + x, mask, _mm512_cvtusepi16_epi8(words));  // saturating, as packus_epi16
  }
}

PF_TARGET_AVX512 __attribute__((flatten)) void pil_horizontal_pairs_avx512(
    const uint8_t* planes, size_t stride, const TapTables& t, const int32_t* first, const int32_t* k8, size_t c0,
    size_t c1, uint8_t* dst) {
  horizontal_pairs_avx512<false>(planes, stride, t, first, k8, c0, c1, dst);
}
PF_TARGET_AVX512_VNNI __attribute__((flatten)) void pil_horizontal_pairs_avx512_vnni(
    const uint8_t* planes, size_t stride, const TapTables& t, const int32_t* first, const int32_t* k8, size_t c0,
    size_t c1, uint8_t* dst) {
  horizontal_pairs_avx512<true>(planes, stride, t, first, k8, c0, c1, dst);
}
PF_TARGET_AVX512 __attribute__((flatten)) void pil_vertical_avx512(const uint8_t* const* rows, const int32_t* k,
                                                                   int32_t count, size_t n, uint8_t* out) {
  vertical_avx512<false>(rows, k, count, n, out);
}
PF_TARGET_AVX512_VNNI __attribute__((flatten)) void pil_vertical_avx512_vnni(
    const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n, uint8_t* out) {
  vertical_avx512<true>(rows, k, count, n, out);
}
PF_AVX512_INTRINSICS_END
#elif defined(__aarch64__) || defined(__arm__)
// The pil passes with NEON: the same int16 halves of the coefficients (TapTables), multiplied by
// int16 pixels with widening multiply-adds (smlal) into int32, so the sums are the x86 kernels'.

// tbl over a 16-byte window (indices of 16 and more read 0, as pshufb's 0x80 does); armhf's vtbl
// looks up 8 indices at a time.
PF_TARGET_NEON inline int16x8_t lookup16(uint8x16_t window, uint8x16_t index) {
#if defined(__aarch64__)
  return vreinterpretq_s16_u8(vqtbl1q_u8(window, index));
#else
  const uint8x8x2_t w = {{vget_low_u8(window), vget_high_u8(window)}};
  return vreinterpretq_s16_u8(vcombine_u8(vtbl2_u8(w, vget_low_u8(index)), vtbl2_u8(w, vget_high_u8(index))));
#endif
}

// Adjacent lanes summed: (a0 + a1, a2 + a3, b0 + b1, b2 + b3).
PF_TARGET_NEON inline int32x4_t add_pairs(int32x4_t a, int32x4_t b) {
#if defined(__aarch64__)
  return vpaddq_s32(a, b);
#else
  return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)), vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
}

// acc + the high 4 lanes of a times lane Lane of c: one smlal2 on aarch64 (GCC moved the high
// half out first for vget_high_s16); armhf's halves are registers already.
template <int Lane>
PF_TARGET_NEON inline int32x4_t mlal_high_lane(int32x4_t acc, int16x8_t a, int16x4_t c) {
#if defined(__aarch64__)
  return vmlal_high_lane_s16(acc, a, c, Lane);
#else
  return vmlal_lane_s16(acc, vget_high_s16(a), c, Lane);
#endif
}

// acc + the high 4 lanes of a times those of b: smlal2 (GCC moves both high halves out first for
// vget_high_s16 when several products share them).
PF_TARGET_NEON inline int32x4_t mlal_high(int32x4_t acc, int16x8_t a, int16x8_t b) {
#if defined(__aarch64__)
  return vmlal_high_s16(acc, a, b);
#else
  return vmlal_s16(acc, vget_high_s16(a), vget_high_s16(b));
#endif
}

// 8 sums rounded and shifted right by Shift, saturated to 0..255 (clip8): the rounding shift is
// part of the narrowing to uint16 (sqrshrun), then uqxtn.
template <int Shift>
PF_TARGET_NEON inline uint8x8_t round_narrow8(int32x4_t s0, int32x4_t s1) {
  return vqmovn_u16(vcombine_u16(vqrshrun_n_s32(s0, Shift), vqrshrun_n_s32(s1, Shift)));
}

// Pillow's rounded shift, (256 * hi + lo + 2^21) >> 22, without forming 256 * hi:
// floor((hi + lo / 256 + 2^13) / 2^14) = floor((hi + floor(lo / 256) + 2^13) / 2^14) for integer
// hi, so ssra adds lo >> 8 to hi (fold_halves) and a rounding shift by kHalvesShift finishes.
constexpr int kHalvesShift = kPrecisionBits - 8;
PF_TARGET_NEON inline int32x4_t fold_halves(int32x4_t hi, int32x4_t lo) { return vsraq_n_s32(hi, lo, 8); }

// The high 4 lanes of a times those of b: smull2 on aarch64.
PF_TARGET_NEON inline int32x4_t mull_high(int16x8_t a, int16x8_t b) {
#if defined(__aarch64__)
  return vmull_high_s16(a, b);
#else
  return vmull_s16(vget_high_s16(a), vget_high_s16(b));
#endif
}

// One tap pair of a lane of 4 outputs, for the three channels: tbl places each output's two
// pixels as int16 (idx: the pair's shuffle), smlal multiplies them by the halves (kh, kl), leaving
// each output's two products in adjacent lanes. The first pair starts the sums (smull).
template <bool First>
PF_TARGET_NEON inline void horizontal_pair(const uint8x16_t (&w)[3], const uint8_t* idx, const int16_t* kh,
                                           const int16_t* kl, int32x4_t (&h)[3][2], int32x4_t (&l)[3][2]) {
  const uint8x16_t index = vld1q_u8(idx);
  const int16x8_t kh8 = vld1q_s16(kh), kl8 = vld1q_s16(kl);
  for (size_t ch = 0; ch < 3; ++ch) {
    const int16x8_t px = lookup16(w[ch], index);
    if constexpr (First) {
      h[ch][0] = vmull_s16(vget_low_s16(px), vget_low_s16(kh8));
      h[ch][1] = mull_high(px, kh8);
      l[ch][0] = vmull_s16(vget_low_s16(px), vget_low_s16(kl8));
      l[ch][1] = mull_high(px, kl8);
    } else {
      h[ch][0] = vmlal_s16(h[ch][0], vget_low_s16(px), vget_low_s16(kh8));
      h[ch][1] = mlal_high(h[ch][1], px, kh8);
      l[ch][0] = vmlal_s16(l[ch][0], vget_low_s16(px), vget_low_s16(kl8));
      l[ch][1] = mlal_high(l[ch][1], px, kl8);
    }
  }
}

// A lane's pairs, unrolled for a fixed count (sizeof...(I)).
template <size_t... I>
PF_TARGET_NEON inline void horizontal_pairs_unrolled(const uint8x16_t (&w)[3], const uint8_t* idx, const int16_t* kh,
                                                     const int16_t* kl, int32x4_t (&h)[3][2], int32x4_t (&l)[3][2],
                                                     std::index_sequence<I...>) {
  (horizontal_pair<I == 0>(w, idx + 32 * I, kh + 16 * I, kl + 16 * I, h, l), ...);
}

// The NEON horizontal kernels' blocks of 8 outputs (TapTables.block 8), a lane of 4 at a time
// with its three channels together, so each tap group's lookup and coefficients are loaded once
// for R, G and B: Lane::sums gives the lane's 4 sums per channel from the channels' 16 source
// bytes, to be rounded and shifted by Lane::kShift, and st3 interleaves the block's R, G, B.
// Blocks that do not fit and the tail run the scalar loop.
template <class Lane>
PF_TARGET_NEON inline void horizontal_blocks_neon(const uint8_t* planes, size_t stride, const TapTables& t,
                                                  const int32_t* first, const int32_t* k8, size_t c0, size_t c1,
                                                  uint8_t* dst) {
  const size_t blocks = (c1 - c0) / 8;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t x = c0 + 8 * b;
    uint8_t* d = dst + (x - c0) * 3;
    if (!t.ok[b]) {
      pil_horizontal_k8(planes, stride, first, k8, x, x + 8, d);
      continue;
    }
    int32x4_t sums[2][3];  // per lane (outputs 0-3, 4-7) and channel
    for (size_t lane = 0; lane < 2; ++lane) {
      uint8x16_t w[3];
      for (size_t ch = 0; ch < 3; ++ch) w[ch] = vld1q_u8(planes + ch * stride + first[x + 4 * lane]);
      Lane::sums(t, b, lane, w, sums[lane]);
    }
    uint8x8x3_t rgb;
    for (size_t ch = 0; ch < 3; ++ch) rgb.val[ch] = round_narrow8<Lane::kShift>(sums[0][ch], sums[1][ch]);
    vst3_u8(d, rgb);
  }
  pil_horizontal_k8(planes, stride, first, k8, c0 + 8 * blocks, c1, dst + 8 * blocks * 3);
}

// A lane of pil_horizontal_pairs_avx2's tables: per tap pair a tbl and four smlal a channel, each
// output's two products summed once at the end. 12 accumulators, which armhf's 16 registers spill
// a little (priced 3% more there than a channel at a time, against 24% less on the A55; a channel
// and a lane at a time was 32% more on armhf: scripts/arm-cost.sh). Pairs: the table's pair
// count, unrolled.
template <size_t Pairs>
struct PairsLane {
  static constexpr int kShift = kHalvesShift;
  PF_TARGET_NEON static void sums(const TapTables& t, size_t b, size_t lane, const uint8x16_t (&w)[3],
                                  int32x4_t (&out)[3]) {
    const uint8_t* idx = &t.index[b * t.pairs * 32 + 16 * lane];
    const int16_t* kh = &t.hi[b * t.pairs * 16 + 8 * lane];
    const int16_t* kl = &t.lo[b * t.pairs * 16 + 8 * lane];
    int32x4_t h[3][2], l[3][2];  // per channel: outputs 0-1 and 2-3 of the lane
    horizontal_pairs_unrolled(w, idx, kh, kl, h, l, std::make_index_sequence<Pairs>{});
    for (size_t ch = 0; ch < 3; ++ch) out[ch] = fold_halves(add_pairs(h[ch][0], h[ch][1]), add_pairs(l[ch][0], l[ch][1]));
  }
};

PF_TARGET_NEON void pil_horizontal_pairs_neon(const uint8_t* planes, size_t stride, const TapTables& t,
                                              const int32_t* first, const int32_t* k8, size_t c0, size_t c1,
                                              uint8_t* dst) {
  static_assert(kLanes == 8, "tables exist for at most 8 taps: 1 to 4 pairs");
  switch (t.pairs) {  // at least 1: every output has a tap
    case 1: return horizontal_blocks_neon<PairsLane<1>>(planes, stride, t, first, k8, c0, c1, dst);
    case 2: return horizontal_blocks_neon<PairsLane<2>>(planes, stride, t, first, k8, c0, c1, dst);
    case 3: return horizontal_blocks_neon<PairsLane<3>>(planes, stride, t, first, k8, c0, c1, dst);
    default: return horizontal_blocks_neon<PairsLane<4>>(planes, stride, t, first, k8, c0, c1, dst);
  }
}

#if defined(__aarch64__)
// Three sums of digit products, S0 + 256 * S1 + 65536 * S2 (TapTables' quads), ready for Pillow's
// rounded shift, (sum + 2^21) >> 22, without forming the sum: A = S1 + floor(S0 / 256) and
// B = S2 + floor(A / 256) leave sum = 65536 * B + r with 0 <= r < 65536, so the result is
// floor((B + 32) / 64), a rounding shift of B by kDigitsShift. Every step is exact in int32
// (|S0| < 2^30: the bias).
constexpr int kDigitsShift = kPrecisionBits - 16;
PF_TARGET_NEON inline int32x4_t fold_digits(int32x4_t s0, int32x4_t s1, int32x4_t s2) {
  return vsraq_n_s32(s2, vsraq_n_s32(s1, s0, 8), 8);
}

// A lane of the quads with ARMv8.2's sdot: per group of 4 taps one tbl places each output's 4
// pixels (less 128: eor) in its int32 lane, and three sdot multiply them by the coefficients'
// three signed bytes: a channel's 4 taps of 4 outputs take a tbl and three sdot where pairs took
// two tbl and eight smlal. The first digit's sums start from the bias, which adds the 128s back.
// Groups: the table's group count (1 or 2), unrolled.
template <size_t Groups>
struct DotLane {
  static constexpr int kShift = kDigitsShift;
  PF_TARGET_NEON_DOTPROD static void sums(const TapTables& t, size_t b, size_t lane, const uint8x16_t (&window)[3],
                                          int32x4_t (&out)[3]) {
    int8x16_t w[3];
    for (size_t ch = 0; ch < 3; ++ch) w[ch] = vreinterpretq_s8_u8(veorq_u8(window[ch], vdupq_n_u8(0x80)));
    const int32x4_t bias = vld1q_s32(&t.bias[8 * b + 4 * lane]);
    int32x4_t s[3][3];  // per channel, per digit
    for (size_t ch = 0; ch < 3; ++ch) {
      s[ch][0] = bias;
      s[ch][1] = s[ch][2] = vdupq_n_s32(0);
    }
    for (size_t g = 0; g < Groups; ++g) {
      const size_t group = b * Groups + g;
      const uint8x16_t index = vld1q_u8(&t.quad_index[32 * group + 16 * lane]);
      int8x16_t digit[3];
      for (size_t i = 0; i < 3; ++i) digit[i] = vld1q_s8(&t.digits[32 * (3 * group + i) + 16 * lane]);
      for (size_t ch = 0; ch < 3; ++ch) {
        const int8x16_t px = vqtbl1q_s8(w[ch], index);
        for (size_t i = 0; i < 3; ++i) s[ch][i] = vdotq_s32(s[ch][i], px, digit[i]);
      }
    }
    for (size_t ch = 0; ch < 3; ++ch) out[ch] = fold_digits(s[ch][0], s[ch][1], s[ch][2]);
  }
};

// flatten: the blocks and their lanes are inlined here, so all of it is compiled with dotprod.
PF_TARGET_NEON_DOTPROD __attribute__((flatten)) void pil_horizontal_dot_neon(
    const uint8_t* planes, size_t stride, const TapTables& t, const int32_t* first, const int32_t* k8, size_t c0,
    size_t c1, uint8_t* dst) {
  static_assert(kLanes == 8, "tables exist for at most 8 taps: 1 or 2 groups");
  if (t.groups == 1) return horizontal_blocks_neon<DotLane<1>>(planes, stride, t, first, k8, c0, c1, dst);
  horizontal_blocks_neon<DotLane<2>>(planes, stride, t, first, k8, c0, c1, dst);
}
#endif

// acc = the high 4 lanes of a times lane Lane of c (smull2 by element on aarch64).
template <int Lane>
PF_TARGET_NEON inline int32x4_t mull_high_lane(int16x8_t a, int16x4_t c) {
#if defined(__aarch64__)
  return vmull_high_lane_s16(a, c, Lane);
#else
  return vmull_lane_s16(vget_high_s16(a), c, Lane);
#endif
}

// One tap of the vertical pass on 16 values: the row's bytes widened to int16 and multiplied by
// the tap's coefficient halves, lanes Hi and Hi + 1 of c (smlal by element), into four int32
// vectors per half. The first tap starts the sums (smull), so they need no zeroing.
template <bool First, int Hi>
PF_TARGET_NEON inline void vertical_tap(const uint8_t* row, int16x4_t c, int32x4_t (&h)[4], int32x4_t (&l)[4]) {
  const uint8x16_t b = vld1q_u8(row);
  const int16x8_t a0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(b)));
  const int16x8_t a1 = vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(b)));
  if constexpr (First) {
    h[0] = vmull_lane_s16(vget_low_s16(a0), c, Hi);
    h[1] = mull_high_lane<Hi>(a0, c);
    h[2] = vmull_lane_s16(vget_low_s16(a1), c, Hi);
    h[3] = mull_high_lane<Hi>(a1, c);
    l[0] = vmull_lane_s16(vget_low_s16(a0), c, Hi + 1);
    l[1] = mull_high_lane<Hi + 1>(a0, c);
    l[2] = vmull_lane_s16(vget_low_s16(a1), c, Hi + 1);
    l[3] = mull_high_lane<Hi + 1>(a1, c);
  } else {
    h[0] = vmlal_lane_s16(h[0], vget_low_s16(a0), c, Hi);
    h[1] = mlal_high_lane<Hi>(h[1], a0, c);
    h[2] = vmlal_lane_s16(h[2], vget_low_s16(a1), c, Hi);
    h[3] = mlal_high_lane<Hi>(h[3], a1, c);
    l[0] = vmlal_lane_s16(l[0], vget_low_s16(a0), c, Hi + 1);
    l[1] = mlal_high_lane<Hi + 1>(l[1], a0, c);
    l[2] = vmlal_lane_s16(l[2], vget_low_s16(a1), c, Hi + 1);
    l[3] = mlal_high_lane<Hi + 1>(l[3], a1, c);
  }
}

PF_TARGET_NEON inline void store_vertical16(uint8_t* out, const int32x4_t (&h)[4], const int32x4_t (&l)[4]) {
  vst1q_u8(out, vcombine_u8(round_narrow8<kHalvesShift>(fold_halves(h[0], l[0]), fold_halves(h[1], l[1])),
                            round_narrow8<kHalvesShift>(fold_halves(h[2], l[2]), fold_halves(h[3], l[3]))));
}

// Blocks of 16 values a loop iteration of vertical_unrolled: aarch64's 32 registers hold two
// blocks' sums, so an in-order core (the A55) has the second block's work to issue while the
// first's sums finish (llvm-mca, 4 taps: 60 -> 49 cycles per 16 values); armhf's 16 hold one.
#if defined(__aarch64__)
constexpr size_t kVerticalBlocks = 2;
#else
constexpr size_t kVerticalBlocks = 1;
#endif

// The vertical pass for a fixed tap count (sizeof...(I)): the row pointers and coefficient halves
// stay in registers across the row, and the taps are unrolled (by-element lanes are immediates).
// Returns the values done (multiples of 16).
template <size_t... I>
PF_TARGET_NEON size_t vertical_unrolled(const uint8_t* const* rows, const int16_t* halves, size_t n, uint8_t* out,
                                        std::index_sequence<I...>) {
  const uint8_t* const r[] = {rows[I]...};
  int16x4_t c[(sizeof...(I) + 1) / 2];  // (hi, lo) of taps 2j and 2j + 1
  for (size_t j = 0; j < (sizeof...(I) + 1) / 2; ++j) c[j] = vld1_s16(halves + 4 * j);
  size_t x = 0;
  for (; x + 16 * kVerticalBlocks <= n; x += 16 * kVerticalBlocks) {
    int32x4_t h[kVerticalBlocks][4], l[kVerticalBlocks][4];
    for (size_t b = 0; b < kVerticalBlocks; ++b) {
      (vertical_tap<I == 0, 2 * (I % 2)>(r[I] + x + 16 * b, c[I / 2], h[b], l[b]), ...);
    }
    for (size_t b = 0; b < kVerticalBlocks; ++b) store_vertical16(out + x + 16 * b, h[b], l[b]);
  }
  for (; x + 16 <= n; x += 16) {  // aarch64's last 16 values, if any
    int32x4_t h[4], l[4];
    (vertical_tap<I == 0, 2 * (I % 2)>(r[I] + x, c[I / 2], h, l), ...);
    store_vertical16(out + x, h, l);
  }
  return x;
}

// 16 output values at a time. Tap counts up to 8 (every upscale and downscales below about 2.7x
// with bicubic: camera frames into a VLM's processor) run unrolled, with their coefficients in
// registers (5 taps: 11 instructions a tap instead of 15); longer windows loop over the taps,
// each tap's halves one 8-byte load.
PF_TARGET_NEON void pil_vertical_neon(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n,
                                      uint8_t* out) {
  int16_t halves[2 * 64 + 2];  // (hi, lo) per tap (count <= 64), and the last load's 2 spare lanes
  for (int32_t i = 0; i < count; ++i) {
    halves[2 * i] = static_cast<int16_t>(k[i] >> 8);
    halves[2 * i + 1] = static_cast<int16_t>(k[i] & 255);
  }
  halves[2 * count] = halves[2 * count + 1] = 0;
  size_t x = 0;
  switch (count) {
    case 1: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<1>{}); break;
    case 2: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<2>{}); break;
    case 3: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<3>{}); break;
    case 4: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<4>{}); break;
    case 5: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<5>{}); break;
    case 6: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<6>{}); break;
    case 7: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<7>{}); break;
    case 8: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<8>{}); break;
    default:
      for (; x + 16 <= n; x += 16) {
        int32x4_t h[4], l[4];
        vertical_tap<true, 0>(rows[0] + x, vld1_s16(halves), h, l);
        for (int32_t i = 1; i < count; ++i) vertical_tap<false, 0>(rows[i] + x, vld1_s16(halves + 2 * i), h, l);
        store_vertical16(out + x, h, l);
      }
  }
  pil_vertical_from(rows, k, count, x, n, out);
}
#endif
uint8_t round8(float v) { return static_cast<uint8_t>(std::nearbyint(std::clamp(v, 0.0f, 255.0f))); }

size_t align16(size_t n) { return (n + 15) / 16 * 16; }

// The horizontal kernels' tables (TapTables) for columns [c0, c1) of axis h, `block` outputs a
// block (8 for the AVX2 and NEON kernels, 16 for the AVX-512 one) in lanes of 4, as pairs or, for
// the dot-product kernel, quads. Output j's taps go to bytes 4j.. of its lane: pairs put the two
// pixels of a pair at 4j and 4j + 2 as int16 (zeros between), quads a group's four pixels at
// 4j..4j + 3. A tap past an output's last reads a zero or any pixel with coefficient 0. Pairs and
// groups cover the most taps an output has, not the table width: that is one less (2 *
// ceil(support) + 1 rounds the window up), a pair fewer for the bicubic scales camera frames see.
// A block is not ok (the kernels run it with the 8-tap scalar loop) where a lane's windows do not
// fit its 16 source bytes (scales above ~2), or a coefficient its quad digits (|k| < 2^23 fits
// pairs; quads need -128 <= d2 <= 127 and |128 * sum| < 2^30, which normalized filters meet).
void build_tap_tables(const AxisFilter& h, size_t c0, size_t c1, size_t block, bool quads, TapTables& t) {
  const auto taps = static_cast<size_t>(*std::max_element(h.count.begin(), h.count.end()));
  const size_t blocks = (c1 - c0) / block, lanes = block / 4;
  t.block = block;
  t.ok.assign(blocks, 1);
  if (quads) {
    t.groups = (taps + 3) / 4;
    t.quad_index.assign(blocks * t.groups * 16 * lanes, 0x80);
    t.digits.assign(blocks * t.groups * 3 * 16 * lanes, 0);
    t.bias.assign(blocks * block, 0);
  } else {
    t.pairs = (taps + 1) / 2;
    t.index.assign(blocks * t.pairs * 16 * lanes, 0x80);
    t.hi.assign(blocks * t.pairs * 8 * lanes, 0);
    t.lo.assign(blocks * t.pairs * 8 * lanes, 0);
  }
  for (size_t b = 0; b < blocks; ++b) {
    const size_t x = c0 + block * b;
    for (size_t j = 0; j < block && t.ok[b]; ++j) {
      const int32_t offset = h.first[x + j] - h.first[x + j / 4 * 4];
      if (offset + static_cast<int32_t>(taps) > 16) t.ok[b] = 0;
      int64_t sum = 0;
      for (size_t i = 0; i < taps && t.ok[b]; ++i) {
        const int32_t k = h.fixed[(x + j) * h.taps + i];
        const auto at = static_cast<uint8_t>(offset + static_cast<int32_t>(i));
        sum += k;
        if (!quads) {
          const size_t pair = b * t.pairs + i / 2;
          t.index[pair * 16 * lanes + 4 * j + 2 * (i % 2)] = at;
          t.hi[pair * 8 * lanes + 2 * j + i % 2] = static_cast<int16_t>(k >> 8);
          t.lo[pair * 8 * lanes + 2 * j + i % 2] = static_cast<int16_t>(k & 255);
          continue;
        }
        const size_t group = b * t.groups + i / 4;
        t.quad_index[group * 16 * lanes + 4 * j + i % 4] = at;
        int32_t rest = k;
        for (size_t digit = 0; digit < 3; ++digit) {
          const int32_t d = digit < 2 ? ((rest + 128) & 255) - 128 : rest;  // -128..127, the last one checked
          if (d < -128 || d > 127) t.ok[b] = 0;
          t.digits[(3 * group + digit) * 16 * lanes + 4 * j + i % 4] = static_cast<int8_t>(d);
          rest = (rest - d) / 256;
        }
      }
      if (quads && t.ok[b]) {
        if (128 * std::abs(sum) >= (int64_t{1} << 30)) t.ok[b] = 0;
        t.bias[block * b + j] = static_cast<int32_t>(128 * sum);
      }
    }
  }
}

// Pillow's filters have vector kernels where the CPU has a SIMD level; nearest and torch's do not.
bool has_vector_kernel(ResizeSemantics semantics, Resample filter) {
  return semantics == ResizeSemantics::kPil && filter != Resample::kNearest && simd_level() > SimdLevel::kBaseline;
}

}  // namespace

const char* resize_kernel(ResizeSemantics semantics, Resample filter) {
  return has_vector_kernel(semantics, filter) ? simd_level_name(simd_level()) : "portable";
}

Result<Resizer> Resizer::create(const ResizeSpec& s) {
  for (size_t side : {s.src_h, s.src_w, s.resized_h, s.resized_w, s.out_h, s.out_w}) {
    PF_CHECK(side >= 1 && side <= kMaxImageSide, Code::kInvalidArgument, "resize: ", s.src_h, "x", s.src_w, " -> ",
             s.resized_h, "x", s.resized_w, " -> ", s.out_h, "x", s.out_w, " has a side outside 1..", kMaxImageSide);
  }
  PF_CHECK(uint64_t{s.resized_h} * s.resized_w <= kMaxImagePixels && uint64_t{s.out_h} * s.out_w <= kMaxImagePixels,
           Code::kInvalidArgument, "resize: ", s.resized_h, "x", s.resized_w, " exceeds ", kMaxImagePixels, " pixels");
  PF_CHECK(s.filter <= Resample::kHamming, Code::kInvalidArgument, "resize: resample ", static_cast<int>(s.filter),
           " is not one of Pillow's filters 0 (nearest) to 5 (hamming)");
  PF_CHECK(s.semantics <= ResizeSemantics::kTorch, Code::kInvalidArgument, "resize: semantics ",
           static_cast<int>(s.semantics), " is not pil (0) or torch (1)");
  PF_CHECK(s.semantics == ResizeSemantics::kPil || torch_has_filter(s.filter), Code::kUnsupported,
           "resize: torch's interpolation has no ", resample_name(s.filter),
           " filter (nearest, bilinear, bicubic); use the pil semantics");
  PF_CHECK(std::abs(s.top) <= static_cast<int64_t>(kMaxImageSide) && std::abs(s.left) <= static_cast<int64_t>(kMaxImageSide),
           Code::kInvalidArgument, "resize: crop offset ", s.top, ", ", s.left, " is out of range");
  Resizer r;
  r.spec_ = s;
  r.need_h_ = s.resized_w != s.src_w;
  r.need_v_ = s.resized_h != s.src_h;
  const auto axis = [&](size_t in, size_t out, AxisFilter& a) {
    if (s.filter == Resample::kNearest) {
      nearest_axis(in, out, s.semantics, a);
    } else if (s.semantics == ResizeSemantics::kPil) {
      pil_axis(in, out, s.filter, a);
    } else {
      torch_axis(in, out, s.filter, a);
    }
  };
  axis(s.src_w, s.resized_w, r.h_);
  axis(s.src_h, s.resized_h, r.v_);
  const auto keep = [](int64_t v, size_t size) { return static_cast<size_t>(std::clamp<int64_t>(v, 0, static_cast<int64_t>(size))); };
  r.col_begin_ = keep(s.left, s.resized_w);
  r.col_end_ = keep(s.left + static_cast<int64_t>(s.out_w), s.resized_w);
  // The kernels split coefficients into int16 halves (TapTables): |k| < 2^23, i.e. below 2.0, which
  // Pillow's normalized filters never reach; the check keeps the scalar pass for any that would.
  const auto halves_fit = [](const AxisFilter& a) {
    return std::all_of(a.fixed.begin(), a.fixed.end(), [](int32_t k) { return k >= -(1 << 23) && k < (1 << 23); });
  };
  const bool simd = has_vector_kernel(s.semantics, s.filter) && halves_fit(r.h_) && halves_fit(r.v_);
  size_t block = 8;     // TapTables.block
  bool quads = false;   // TapTables' form: the dot-product kernel's quads, or pairs
  if (simd) {
    r.kernel_ = resize_kernel(s.semantics, s.filter);
#if defined(__x86_64__)
    const bool avx512 = cpu_has_avx512(), vnni = cpu_has_avx512_vnni();
    r.horizontal_ = vnni ? pil_horizontal_pairs_avx512_vnni : avx512 ? pil_horizontal_pairs_avx512 : pil_horizontal_pairs_avx2;
    r.vertical_ = vnni ? pil_vertical_avx512_vnni : avx512 ? pil_vertical_avx512 : pil_vertical_avx2;
    block = avx512 ? 16 : 8;
#else
    r.horizontal_ = pil_horizontal_pairs_neon;
#if defined(__aarch64__)
    quads = cpu_has_neon_dotprod();
    if (quads) r.horizontal_ = pil_horizontal_dot_neon;
#endif
    r.vertical_ = pil_vertical_neon;
#endif
  }
  if (simd && r.need_h_ && r.h_.taps <= kLanes) {  // the horizontal kernel's coefficients, kLanes per output
    r.h8_.assign(s.resized_w * kLanes, 0);
    for (size_t c = 0; c < s.resized_w; ++c) {
      std::copy_n(&r.h_.fixed[c * r.h_.taps], r.h_.count[c], &r.h8_[c * kLanes]);
    }
    build_tap_tables(r.h_, r.col_begin_, r.col_end_, block, quads, r.tap_tables_);
  }
  return r;
}

// rgb scratch | ring slot rows (int64 each) | ring (taps rows, uint8 or float) | accumulator row
// (4 bytes a value) | the source row's planes for the AVX2 horizontal kernel
size_t Resizer::scratch_bytes(const ImageView& image) const {
  const size_t values = (col_end_ - col_begin_) * 3;
  const size_t elem = spec_.semantics == ResizeSemantics::kPil ? 1 : sizeof(float);
  return align16(rgb_row_scratch_bytes(image)) + align16(v_.taps * sizeof(int64_t)) + align16(v_.taps * values * elem) +
         align16(values * 4) + (h8_.empty() ? 0 : plane_stride() * 3);
}

void Resizer::run(const ImageView& image, size_t row_begin, size_t row_end, uint8_t* scratch, uint8_t* out) const {
  const ResizeSpec& s = spec_;
  const size_t c0 = col_begin_, c1 = col_end_, values = (c1 - c0) * 3, out_row = s.out_w * 3;
  const size_t x0 = static_cast<size_t>(static_cast<int64_t>(c0) - s.left) * 3;  // where kept columns start in a row
  const bool pil = s.semantics == ResizeSemantics::kPil;
  uint8_t* rgb_scratch = scratch;
  auto* slot_row = reinterpret_cast<int64_t*>(scratch + align16(rgb_row_scratch_bytes(image)));
  uint8_t* ring = reinterpret_cast<uint8_t*>(slot_row) + align16(v_.taps * sizeof(int64_t));
  auto* ring_f = reinterpret_cast<float*>(ring);
  auto* acc_i = reinterpret_cast<int32_t*>(ring + align16(v_.taps * values * (pil ? 1 : sizeof(float))));
  auto* acc_f = reinterpret_cast<float*>(acc_i);
  uint8_t* planes = reinterpret_cast<uint8_t*>(acc_i) + align16(values * 4);
  std::fill(slot_row, slot_row + v_.taps, int64_t{-1});

  // Source row j, horizontally resampled over the kept columns: uint8 (pil) or float (torch).
  const auto h_row_u8 = [&](size_t j, uint8_t* dst) {
    if (!h8_.empty()) {  // need_h_: the planes straight from the source row
      planes_row(image, j, rgb_scratch, planes, plane_stride());
      horizontal_(planes, plane_stride(), tap_tables_, h_.first.data(), h8_.data(), c0, c1, dst);
      return;
    }
    const uint8_t* src = rgb_row(image, j, rgb_scratch);
    if (!need_h_) {
      std::memcpy(dst, src + c0 * 3, values);
      return;
    }
    for (size_t c = c0; c < c1; ++c) {
      const uint8_t* p = src + static_cast<size_t>(h_.first[c]) * 3;
      const int32_t* k = &h_.fixed[c * h_.taps];
      int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      for (int32_t i = 0; i < h_.count[c]; ++i, p += 3) {
        s0 += p[0] * k[i];
        s1 += p[1] * k[i];
        s2 += p[2] * k[i];
      }
      uint8_t* d = dst + (c - c0) * 3;
      d[0] = clip8(s0);
      d[1] = clip8(s1);
      d[2] = clip8(s2);
    }
  };
  const auto h_row_f32 = [&](size_t j, float* dst) {
    const uint8_t* src = rgb_row(image, j, rgb_scratch);
    if (!need_h_) {
      for (size_t i = 0; i < values; ++i) dst[i] = src[c0 * 3 + i];
      return;
    }
    for (size_t c = c0; c < c1; ++c) {
      const uint8_t* p = src + static_cast<size_t>(h_.first[c]) * 3;
      const float* w = &h_.weights[c * h_.taps];
      float s0 = 0, s1 = 0, s2 = 0;
      for (int32_t i = 0; i < h_.count[c]; ++i, p += 3) {
        s0 += static_cast<float>(p[0]) * w[i];
        s1 += static_cast<float>(p[1]) * w[i];
        s2 += static_cast<float>(p[2]) * w[i];
      }
      float* d = dst + (c - c0) * 3;
      d[0] = s0;
      d[1] = s1;
      d[2] = s2;
    }
  };
  // The ring slot holding source row j, filled on first use; a vertical window has at most
  // taps consecutive rows, so rows it still needs are never overwritten.
  const auto ring_slot = [&](size_t j) {
    const size_t slot = j % v_.taps;
    if (slot_row[slot] != static_cast<int64_t>(j)) {
      if (pil) {
        h_row_u8(j, ring + slot * values);
      } else {
        h_row_f32(j, ring_f + slot * values);
      }
      slot_row[slot] = static_cast<int64_t>(j);
    }
    return slot;
  };

  for (size_t oy = row_begin; oy < row_end; ++oy) {
    uint8_t* dst = out + (oy - row_begin) * out_row;
    const int64_t r = static_cast<int64_t>(oy) + s.top;
    if (r < 0 || r >= static_cast<int64_t>(s.resized_h) || values == 0) {
      std::memset(dst, 0, out_row);
      continue;
    }
    std::memset(dst, 0, x0);
    std::memset(dst + x0 + values, 0, out_row - x0 - values);
    uint8_t* d = dst + x0;
    const auto ry = static_cast<size_t>(r);
    if (s.filter == Resample::kNearest) {
      const uint8_t* src = rgb_row(image, static_cast<size_t>(v_.first[ry]), rgb_scratch);
      for (size_t c = c0; c < c1; ++c) std::memcpy(d + (c - c0) * 3, src + static_cast<size_t>(h_.first[c]) * 3, 3);
      continue;
    }
    if (!need_v_) {
      if (pil) {
        h_row_u8(ry, d);
      } else {
        h_row_f32(ry, acc_f);
        for (size_t i = 0; i < values; ++i) d[i] = round8(acc_f[i]);
      }
      continue;
    }
    const auto first = static_cast<size_t>(v_.first[ry]);
    const int32_t count = v_.count[ry];
    if (pil) {
      const int32_t* k = &v_.fixed[ry * v_.taps];
      if (vertical_ != nullptr) {
        const uint8_t* rows[64];
        if (count >= 1 && count <= 64) {  // the kernels' range; every Pillow window has a tap
          for (int32_t i = 0; i < count; ++i) rows[i] = ring + ring_slot(first + static_cast<size_t>(i)) * values;
          vertical_(rows, k, count, values, d);
          continue;
        }
      }
      std::fill(acc_i, acc_i + values, 1 << (kPrecisionBits - 1));
      for (int32_t i = 0; i < count; ++i) {
        const uint8_t* row = ring + ring_slot(first + static_cast<size_t>(i)) * values;
        const int32_t ki = k[i];
        for (size_t x = 0; x < values; ++x) acc_i[x] += row[x] * ki;
      }
      for (size_t x = 0; x < values; ++x) d[x] = clip8(acc_i[x]);
    } else {
      const float* w = &v_.weights[ry * v_.taps];
      std::fill(acc_f, acc_f + values, 0.0f);
      for (int32_t i = 0; i < count; ++i) {
        const float* row = ring_f + ring_slot(first + static_cast<size_t>(i)) * values;
        const float wi = w[i];
        for (size_t x = 0; x < values; ++x) acc_f[x] += row[x] * wi;
      }
      for (size_t x = 0; x < values; ++x) d[x] = round8(acc_f[x]);
    }
  }
}

}  // namespace patchfuse
