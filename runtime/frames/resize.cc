#include "runtime/frames/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

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
      const double v = k[x] * (1 << kPilPrecisionBits);
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

// torch's clamp then round (half to even) of a row of sums, without a call to nearbyint a value
// (a third of the torch semantics' time) and without float compares, so that the loop
// vectorizes: adding 1.5 * 2^23 to a float within +-2^22 rounds it to an integer by the default
// rounding mode (to nearest, ties to even), as nearbyint does, and leaves that integer in the
// sum's low mantissa bits; the clamp is then on ints. Every float within +-2^22 gives
// nearbyint's byte (checked one by one); the sums are bytes times normalized weights, far inside.
void round_row(const float* sums, size_t n, uint8_t* out) {
  constexpr float kRound = 12582912.0f;       // 1.5 * 2^23
  constexpr int32_t kRoundBits = 0x4B400000;  // its bits
  for (size_t x = 0; x < n; ++x) {
    const float sum = sums[x] + kRound;
    int32_t bits;
    std::memcpy(&bits, &sum, sizeof bits);
    out[x] = static_cast<uint8_t>(std::clamp(bits - kRoundBits, 0, 255));
  }
}

size_t align16(size_t n) { return (n + 15) / 16 * 16; }

// Pillow's filters have vector kernels where the level has them; nearest and torch's do not.
bool has_vector_kernel(ResizeSemantics semantics, Resample filter, const FrameKernels& kernels) {
  return semantics == ResizeSemantics::kPil && filter != Resample::kNearest && kernels.resize.horizontal != nullptr;
}

}  // namespace

const char* resize_kernel(ResizeSemantics semantics, Resample filter, const FrameKernels& kernels) {
  return has_vector_kernel(semantics, filter, kernels) ? kernels.resize.name : "portable";
}

Result<Resizer> Resizer::create(const ResizeSpec& s, const FrameKernels& kernels) {
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
  const bool simd = has_vector_kernel(s.semantics, s.filter, kernels) && halves_fit(r.h_) && halves_fit(r.v_);
  const ResizeForm& form = kernels.resize;
  r.planes_ = kernels.planes;
  if (simd) {
    r.kernel_ = form.name;
    r.horizontal_ = form.horizontal;
    r.horizontal2_ = form.horizontal2;
    r.vertical_ = form.vertical;
  }
  if (simd && r.need_h_ && r.h_.taps <= kPilKernelTaps) {  // the horizontal kernel's coefficients, 8 an output
    r.h8_.assign(s.resized_w * kPilKernelTaps, 0);
    for (size_t c = 0; c < s.resized_w; ++c) {
      std::copy_n(&r.h_.fixed[c * r.h_.taps], r.h_.count[c], &r.h8_[c * kPilKernelTaps]);
    }
    build_tap_tables(r.h_, r.col_begin_, r.col_end_, form, 1, r.tap_tables_);
    if (form.horizontal_rgb != nullptr) {
      build_tap_tables(r.h_, r.col_begin_, r.col_end_, form, 3, r.rgb_tables_);
      const auto& ok = r.rgb_tables_.ok;
      if (std::all_of(ok.begin(), ok.end(), [](uint8_t fits) { return fits != 0; })) {
        r.horizontal_rgb_ = form.horizontal_rgb;
      } else {
        r.rgb_tables_ = {};  // a block would take the scalar loop; the planes' blocks fit 64 pixels
      }
    }
  }
  if (simd && r.need_h_ && form.wide.run != nullptr &&
      build_wide_tables(r.h_, r.col_begin_, r.col_end_, form.wide, r.wide_tables_)) {
    r.wide_ = form.wide.run;
  }
  return r;
}

// rgb scratch | ring slot rows (int64 each) | ring (ring_slots rows, uint8 or float) | accumulator
// row (4 bytes a value) | the source rows' planes for the horizontal kernels (one row, or two), or
// torch's source row as floats
size_t Resizer::scratch_bytes(const ImageView& image) const {
  const size_t values = (col_end_ - col_begin_) * 3;
  const bool pil = spec_.semantics == ResizeSemantics::kPil;
  const size_t rows = horizontal2_ ? 2 : 1;
  const bool planes = (!h8_.empty() && !reads_rgb_rows(image)) || wide_ != nullptr;
  const size_t source_rows = planes ? plane_stride() * 3 * rows
                             : !pil && need_h_                ? spec_.src_w * 3 * sizeof(float)
                                                              : 0;
  return align16(rgb_row_scratch_bytes(image)) + align16(ring_slots() * sizeof(int64_t)) +
         align16(ring_slots() * values * (pil ? 1 : sizeof(float))) + align16(values * 4) + source_rows;
}

void Resizer::run(const ImageView& image, size_t row_begin, size_t row_end, uint8_t* scratch, uint8_t* out) const {
  const ResizeSpec& s = spec_;
  const size_t c0 = col_begin_, c1 = col_end_, values = (c1 - c0) * 3, out_row = s.out_w * 3;
  const size_t x0 = static_cast<size_t>(static_cast<int64_t>(c0) - s.left) * 3;  // where kept columns start in a row
  const bool pil = s.semantics == ResizeSemantics::kPil;
  uint8_t* rgb_scratch = scratch;
  const size_t slots = ring_slots();
  auto* slot_row = reinterpret_cast<int64_t*>(scratch + align16(rgb_row_scratch_bytes(image)));
  uint8_t* ring = reinterpret_cast<uint8_t*>(slot_row) + align16(slots * sizeof(int64_t));
  auto* ring_f = reinterpret_cast<float*>(ring);
  auto* acc_i = reinterpret_cast<int32_t*>(ring + align16(slots * values * (pil ? 1 : sizeof(float))));
  auto* acc_f = reinterpret_cast<float*>(acc_i);
  uint8_t* planes = reinterpret_cast<uint8_t*>(acc_i) + align16(values * 4);
  auto* source_f = reinterpret_cast<float*>(planes);
  std::fill(slot_row, slot_row + slots, int64_t{-1});
  const TapTablesView tables = tap_tables_.view(), rgb_tables = rgb_tables_.view();
  const bool rgb_rows = reads_rgb_rows(image);
  const size_t red = image.format == PixelFormat::kBgr ? 2 : 0;
  // Source rows j.. (1 or 2) through the RGB rows' pass.
  const auto rgb_pass = [&](size_t j, size_t rows, uint8_t* const* dst) {
    horizontal_rgb_(image.planes[0] + j * image.row_stride[0], image.row_stride[0], rows, s.src_w, red,
                    rgb_tables, h_.first.data(), h8_.data(), c0, c1, dst);
  };

  // Source row j, horizontally resampled over the kept columns: uint8 (pil) or float (torch).
  const auto h_row_u8 = [&](size_t j, uint8_t* dst) {
    if (rgb_rows) return rgb_pass(j, 1, &dst);
    if (!h8_.empty()) {  // need_h_: the planes straight from the source row
      planes_row(image, j, rgb_scratch, planes, plane_stride(), planes_);
      horizontal_(planes, plane_stride(), tables, h_.first.data(), h8_.data(), c0, c1, dst);
      return;
    }
    if (wide_ != nullptr) {
      planes_row(image, j, rgb_scratch, planes, plane_stride(), planes_);
      wide_(planes, plane_stride(), wide_tables_.view(), c1 - c0, dst);
      return;
    }
    const uint8_t* src = rgb_row(image, j, rgb_scratch);
    if (!need_h_) {
      std::memcpy(dst, src + c0 * 3, values);
      return;
    }
    pil_horizontal_rgb_portable(src, s.src_w, 0, h_.first.data(), h_.fixed.data(), h_.taps, c0, c1, dst);
  };
  // Source rows j and j + 1 at once (the forms that take two rows a call), into dst[0] and dst[1].
  const bool two_rows = rgb_rows || (horizontal2_ != nullptr && !h8_.empty());
  const auto h_two_rows_u8 = [&](size_t j, uint8_t* const* dst) {
    if (rgb_rows) return rgb_pass(j, 2, dst);
    const size_t stride = plane_stride();
    planes_row(image, j, rgb_scratch, planes, stride, planes_);
    planes_row(image, j + 1, rgb_scratch, planes + 3 * stride, stride, planes_);
    horizontal2_(planes, stride, tables, h_.first.data(), h8_.data(), c0, c1, dst[0], dst[1]);
  };
  const auto h_row_f32 = [&](size_t j, float* dst) {
    const uint8_t* src = rgb_row(image, j, rgb_scratch);
    if (!need_h_) {
      for (size_t i = 0; i < values; ++i) dst[i] = src[c0 * 3 + i];
      return;
    }
    // The row as floats once, where converting each pixel for each window it is in took most of
    // the pass (5 windows a pixel for bicubic upscales). The sums are the same.
    for (size_t i = 0; i < s.src_w * 3; ++i) source_f[i] = src[i];
    for (size_t c = c0; c < c1; ++c) {
      const float* p = source_f + static_cast<size_t>(h_.first[c]) * 3;
      const float* w = &h_.weights[c * h_.taps];
      float s0 = 0, s1 = 0, s2 = 0;
      for (int32_t i = 0; i < h_.count[c]; ++i, p += 3) {
        s0 += p[0] * w[i];
        s1 += p[1] * w[i];
        s2 += p[2] * w[i];
      }
      float* d = dst + (c - c0) * 3;
      d[0] = s0;
      d[1] = s1;
      d[2] = s2;
    }
  };
  // The ring slot holding source row j, filled on first use, with row j + 1 where the form takes
  // two rows a call. A vertical window has at most taps consecutive rows and the ring one slot
  // more, so neither row evicts a row the window still needs.
  const auto ring_slot = [&](size_t j) {
    const size_t slot = j % slots, next = (j + 1) % slots;
    if (slot_row[slot] == static_cast<int64_t>(j)) return slot;
    if (!pil) {
      h_row_f32(j, ring_f + slot * values);
    } else if (two_rows && j + 1 < s.src_h && slot_row[next] != static_cast<int64_t>(j + 1)) {
      uint8_t* const dst[2] = {ring + slot * values, ring + next * values};
      h_two_rows_u8(j, dst);
      slot_row[next] = static_cast<int64_t>(j + 1);
    } else {
      h_row_u8(j, ring + slot * values);
    }
    slot_row[slot] = static_cast<int64_t>(j);
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
        round_row(acc_f, values, d);
      }
      continue;
    }
    const auto first = static_cast<size_t>(v_.first[ry]);
    const int32_t count = v_.count[ry];
    if (pil) {
      const int32_t* k = &v_.fixed[ry * v_.taps];
      if (vertical_ != nullptr) {
        const uint8_t* rows[kPilMaxTaps];
        // The kernels' range; every Pillow window has a tap.
        if (count >= 1 && count <= static_cast<int32_t>(kPilMaxTaps)) {
          for (int32_t i = 0; i < count; ++i) rows[i] = ring + ring_slot(first + static_cast<size_t>(i)) * values;
          vertical_(rows, k, count, values, d);
          continue;
        }
      }
      std::fill(acc_i, acc_i + values, 1 << (kPilPrecisionBits - 1));
      for (int32_t i = 0; i < count; ++i) {
        const uint8_t* row = ring + ring_slot(first + static_cast<size_t>(i)) * values;
        const int32_t ki = k[i];
        for (size_t x = 0; x < values; ++x) acc_i[x] += row[x] * ki;
      }
      for (size_t x = 0; x < values; ++x) d[x] = pil_clip8(acc_i[x]);
    } else {
      const float* w = &v_.weights[ry * v_.taps];
      const auto row_f = [&](int32_t i) { return ring_f + ring_slot(first + static_cast<size_t>(i)) * values; };
      std::fill(acc_f, acc_f + values, 0.0f);
      int32_t i = 0;
      for (; i + 1 < count; i += 2) {  // two taps a pass over the row: the same sums, half the passes
        const float *r0 = row_f(i), *r1 = row_f(i + 1);
        const float w0 = w[i], w1 = w[i + 1];
        for (size_t x = 0; x < values; ++x) acc_f[x] = (acc_f[x] + r0[x] * w0) + r1[x] * w1;
      }
      if (i < count) {
        const float* r0 = row_f(i);
        const float w0 = w[i];
        for (size_t x = 0; x < values; ++x) acc_f[x] += r0[x] * w0;
      }
      round_row(acc_f, values, d);
    }
  }
}

}  // namespace patchfuse
