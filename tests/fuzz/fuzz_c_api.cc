// libFuzzer target: the C API's arguments. The models are fixed (seed models fuzz_pfb starts from,
// made by this build's converter); the input picks one, a module and the session options, and
// is then read as a program of calls whose every grid, size, stride, capacity, count, index and
// pixel format it draws, boundary values included (0, 2^20, 2^28, 2^31, 2^32, INT64_MAX,
// negatives). Buffers are exactly what the contract asks for, so AddressSanitizer sees any access
// past them, and the calls must agree with each other and with patchfuse.h:
//  - a size query that refuses (output_rows, frames_grid, images_grid, block_input_count) means
//    the run and the prepare of that size refuse too, before they touch a buffer (each gets one
//    byte); a size it takes runs and prepares, where small enough to run here;
//  - the sizes pf_model_frame_size gives are ones the frames path takes, with the grid the
//    images path computes for the original size where it takes it;
//  - a capacity, stride or buffer below what the contract asks is refused; one at it is taken;
//  - a run after pf_session_prepare of its size does no one-time work (setup_ms == 0);
//  - every refusal leaves a message.
// Any break aborts with the call and pf_last_error(). This is the fuzzer that would have found
// the grid, window-order and row-count crashes the hand probes of 2026-12-05 found.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "patchfuse/patchfuse.h"
#include "tests/fuzz/plane_layout.h"

namespace {

// The largest buffer a call gets here: larger sizes are only checked for refusals. 1 MB keeps
// the slowest input near a second under ASan (4 MB took up to 10 s: resizes, torch's above all).
constexpr uint64_t kMaxBytes = uint64_t{1} << 20;
constexpr int kMaxCalls = 24;

constexpr int64_t kBoundaries[] = {
    0, 1, 2, 3, 4, 7, 8, 13, 14, 15, 16, 27, 28, 29, 31, 32, 33, 48, 56, 64, 84, 112, 224, 256, 448, 480, 640, 720,
    1080, 1920, 4096, 8191, 32767, 32768, 32769, 65535, 65536, int64_t{1} << 20, (int64_t{1} << 20) + 1,
    (int64_t{1} << 28) - 1, int64_t{1} << 28, INT32_MAX, int64_t{1} << 31, (int64_t{1} << 32) - 1, int64_t{1} << 32,
    (int64_t{1} << 32) + 1, int64_t{1} << 40, INT64_MAX / 3, INT64_MAX - 1, INT64_MAX, -1, -2, -28, INT32_MIN,
    INT64_MIN + 1, INT64_MIN};

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_c_api: %s (pf_last_error: \"%s\")\n", what, pf_last_error());
  std::abort();
}

// A refusal with its message.
bool refused(pf_status s) {
  if (s == PF_OK) return false;
  require(pf_last_error()[0] != '\0', "a call failed without a message");
  return true;
}

// The input as a program: bytes, and values that are small numbers, boundaries or 16-bit numbers.
class Program {
 public:
  Program(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool done() const { return p_ == end_; }
  uint8_t byte() { return p_ < end_ ? *p_++ : 0; }
  int64_t value() {
    const uint8_t b = byte();
    if (b < 0x80) return b;
    if (b < 0x80 + std::size(kBoundaries)) return kBoundaries[b - 0x80];
    const int64_t high = byte();
    return high << 8 | byte();
  }
  pf_grid grid() { return pf_grid{value(), value(), value()}; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// a * b, or UINT64_MAX when it overflows: sizes past kMaxBytes only ever get refusal checks.
uint64_t mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

// The images path's size rule (pf_image): 1 to 32768 per side, at most 2^28 pixels.
bool image_sized(int64_t width, int64_t height) {
  return width >= 1 && height >= 1 && width <= 32768 && height <= 32768 && mul(width, height) <= (uint64_t{1} << 28);
}

struct Target {  // a session and what it was made from
  const pf_model* model;
  size_t module;
  pf_module_info info;
  pf_session* session;
  pf_session_info session_info;
  bool int8() const { return session_info.precision == PF_PRECISION_INT8; }
};

// The run after a prepare of its size did no one-time work.
void require_prepared_run(const Target& x) {
  pf_run_profile p;
  require(pf_session_last_profile(x.session, &p) == PF_OK, "pf_session_last_profile");
  require(p.setup_ms == 0, "a run of a prepared size did one-time work (setup_ms > 0)");
}

// output_rows, then run_grid and prepare of the same grid.
void rows_and_run_grid(Program& in, const Target& x) {
  const pf_grid g = in.grid();
  const bool prepare = in.byte() & 1;
  int64_t rows = 0;
  pf_input_shape shape{};
  shape.kind = PF_INPUT_PIXEL_VALUES;
  shape.grid = g;
  if (refused(pf_session_output_rows(x.session, &g, &rows))) {
    float a = 0, b = 0;
    require(refused(pf_session_run_grid(x.session, &a, &g, &b)), "run_grid took a grid output_rows refuses");
    require(refused(pf_session_prepare(x.session, &shape)), "prepare took a grid output_rows refuses");
    return;
  }
  const bool encoder = x.session_info.output_stage == PF_OUTPUT_ENCODER_INPUT;
  require(rows == g.t * ((encoder ? x.info.class_rows : 0) + g.h * g.w), "output_rows is not t * (class_rows + h * w)");
  const uint64_t in_floats = mul(mul(mul(g.t, g.h), g.w), x.info.patch_volume);
  const uint64_t out_floats = mul(rows, x.info.embed_dim);
  if (mul(in_floats, 4) > kMaxBytes || mul(out_floats, 4) > kMaxBytes) return;
  std::vector<float> input(in_floats, 0.5f), output(out_floats);
  const pf_status want = x.int8() ? PF_UNSUPPORTED : PF_OK;  // int8 takes frames only
  if (prepare) require(pf_session_prepare(x.session, &shape) == want, "prepare of a grid output_rows takes");
  require(pf_session_run_grid(x.session, input.data(), &g, output.data()) == want, "run_grid of a grid output_rows takes");
  if (prepare && want == PF_OK) require_prepared_run(x);
}

// pf_session_run on N rows.
void run_rows(Program& in, const Target& x) {
  const auto n = static_cast<uint64_t>(in.value());
  if (n == 0 || n > INT32_MAX) {
    float a = 0, b = 0;
    require(refused(pf_session_run(x.session, &a, n, &b)), "pf_session_run took N = 0 or N above 2^31 - 1");
    return;
  }
  const uint64_t in_floats = mul(n, x.info.patch_volume), out_floats = mul(n, x.info.embed_dim);
  if (mul(in_floats, 4) > kMaxBytes || mul(out_floats, 4) > kMaxBytes) return;
  std::vector<float> input(in_floats, 0.25f), output(out_floats);
  const pf_status s = pf_session_run(x.session, input.data(), n, output.data());
  if (x.int8()) {
    require(s == PF_UNSUPPORTED, "pf_session_run at int8 (frames only)");
  } else if (x.session_info.output_stage == PF_OUTPUT_ENCODER_INPUT) {
    require(refused(s), "pf_session_run on the encoder input, which needs the rows' grid");
  } else {
    require(s == PF_OK, "pf_session_run on N rows");
  }
}

// The window order with capacities at or one below the counts.
void window_order(Program& in, const Target& x) {
  const pf_grid g = in.grid();
  const uint8_t shrink = in.byte();
  size_t groups = 0, bounds = 0;
  if (refused(pf_session_window_index(x.session, &g, nullptr, nullptr, 0, nullptr, 0, &groups, &bounds))) return;
  // The block inputs of the same grid have these sizes.
  size_t count = 0;
  if (pf_session_block_input_count(x.session, &g, &count) == PF_OK) {
    for (size_t i = 0; i < count; ++i) {
      pf_block_input_info b;
      require(pf_session_block_input_info(x.session, &g, i, &b) == PF_OK, "block_input_info below the count");
      const std::string name = b.name;
      const bool index = name == "window_index" || name == "reverse_indices";
      require(!(index || name == "cu_window_seqlens") || b.shape[0] == static_cast<int64_t>(index ? groups : bounds),
              "a window block input's length differs from pf_session_window_index's count");
    }
  }
  if (mul(groups, 16) > kMaxBytes || mul(bounds, 8) > kMaxBytes) return;
  const size_t index_capacity = groups - std::min<size_t>(groups, shrink & 1);
  const size_t cu_capacity = bounds - std::min<size_t>(bounds, (shrink >> 1) & 1);
  const auto index = std::make_unique<int64_t[]>(index_capacity), reverse = std::make_unique<int64_t[]>(index_capacity),
             cu = std::make_unique<int64_t[]>(cu_capacity);
  size_t groups_again = 0, bounds_again = 0;
  const pf_status s = pf_session_window_index(x.session, &g, index.get(), reverse.get(), index_capacity, cu.get(),
                                              cu_capacity, &groups_again, &bounds_again);
  require(groups_again == groups && bounds_again == bounds, "pf_session_window_index: counts differ between calls");
  if (index_capacity < groups || cu_capacity < bounds) {
    require(refused(s), "pf_session_window_index wrote past a capacity below its counts");
    return;
  }
  require(s == PF_OK, "pf_session_window_index with capacities at the counts");
  // A permutation and its inverse; window boundaries from 0 to every row, never decreasing.
  for (size_t k = 0; k < groups; ++k) {
    require(index[k] >= 0 && static_cast<size_t>(index[k]) < groups && reverse[index[k]] == static_cast<int64_t>(k),
            "window_index is not a permutation with reverse_index its inverse");
  }
  require(bounds >= 1 && cu[0] == 0 && cu[bounds - 1] == g.t * g.h * g.w && std::is_sorted(cu.get(), cu.get() + bounds),
          "cu_window_seqlens does not rise from 0 to t * h * w");
}

// A block input by index, into a buffer of its bytes or one byte less.
void block_input(Program& in, const Target& x) {
  const pf_grid g = in.grid();
  const auto index = static_cast<size_t>(in.value());
  const bool short_buffer = in.byte() & 1;
  size_t count = 0;
  if (refused(pf_session_block_input_count(x.session, &g, &count))) {
    uint8_t b = 0;
    require(refused(pf_session_block_input(x.session, "cu_seqlens", &g, &b, 1)),
            "block_input took a grid block_input_count refuses");
    return;
  }
  uint8_t b = 0;
  require(refused(pf_session_block_input(x.session, "no_such_input", &g, &b, 1)), "block_input took an unknown name");
  pf_block_input_info info;
  if (index >= count) {
    require(refused(pf_session_block_input_info(x.session, &g, index, &info)), "block_input_info took an index past the count");
    return;
  }
  require(pf_session_block_input_info(x.session, &g, index, &info) == PF_OK, "block_input_info below the count");
  const uint64_t element = info.type == PF_ELEMENT_I64 ? 8 : 4;
  require(info.rank >= 1 && info.rank <= 2, "block input rank");
  require(info.bytes == mul(mul(info.shape[0], info.rank == 2 ? info.shape[1] : 1), element),
          "block input bytes are not its shape times its element size");
  if (info.bytes > kMaxBytes || (short_buffer && info.bytes == 0)) return;
  const size_t bytes = info.bytes - (short_buffer ? 1 : 0);
  const auto buffer = std::make_unique<uint8_t[]>(bytes);
  const pf_status s = pf_session_block_input(x.session, info.name, &g, buffer.get(), bytes);
  require(short_buffer ? refused(s) : s == PF_OK, "block_input into a buffer of its bytes (taken) or one less (refused)");
}

// uint8 RGB frames: frames_grid, then run_frames with a row stride at, above or one below width * 3.
void frames(Program& in, const Target& x) {
  const auto t = static_cast<uint64_t>(in.value()), height = static_cast<uint64_t>(in.value()),
             width = static_cast<uint64_t>(in.value());
  const uint8_t stride_pick = in.byte();
  const bool prepare = in.byte() & 1;
  pf_input_shape shape{};
  shape.kind = PF_INPUT_FRAMES;
  shape.t = t;
  shape.height = static_cast<int64_t>(height);
  shape.width = static_cast<int64_t>(width);
  pf_grid g{};
  if (refused(pf_session_frames_grid(x.session, t, height, width, &g))) {
    require(refused(pf_session_prepare(x.session, &shape)), "prepare took frames frames_grid refuses");
    if (t > 16) return;  // the run reads t frame pointers
    uint8_t pixel = 0;
    const std::vector<const uint8_t*> one_byte(std::max<uint64_t>(t, 1), &pixel);
    float out = 0;
    require(refused(pf_session_run_frames(x.session, one_byte.data(), t, height, width, mul(width, 3), &out, nullptr)),
            "run_frames took frames frames_grid refuses");
    return;
  }
  int64_t rows = 0;
  require(pf_session_output_rows(x.session, &g, &rows) == PF_OK, "output_rows refused a grid frames_grid made");
  const uint64_t row_bytes = mul(width, 3);
  const int64_t delta[] = {0, 0, 1, 5, -1};  // bytes after each row; -1: the stride is too small
  const uint64_t stride = row_bytes + static_cast<uint64_t>(delta[stride_pick % std::size(delta)]);
  const uint64_t frame_bytes = mul(stride, height - 1) + row_bytes;
  if (mul(frame_bytes, t) > kMaxBytes || mul(mul(rows, x.info.embed_dim), 4) > kMaxBytes) return;
  std::vector<std::vector<uint8_t>> pixels(t, std::vector<uint8_t>(frame_bytes));
  std::vector<const uint8_t*> pointers(t);
  for (uint64_t f = 0; f < t; ++f) {
    std::iota(pixels[f].begin(), pixels[f].end(), static_cast<uint8_t>(f * 37));
    pointers[f] = pixels[f].data();
  }
  std::vector<float> output(static_cast<size_t>(rows) * static_cast<size_t>(x.info.embed_dim));
  if (prepare) require(pf_session_prepare(x.session, &shape) == PF_OK, "prepare of frames frames_grid takes");
  pf_grid ran{};
  const pf_status s = pf_session_run_frames(x.session, pointers.data(), t, height, width, stride, output.data(), &ran);
  if (stride < row_bytes) {
    require(refused(s), "run_frames took a row stride below width * 3");
    return;
  }
  require(s == PF_OK, "run_frames of frames frames_grid takes");
  require(ran.t == g.t && ran.h == g.h && ran.w == g.w, "run_frames' grid is not frames_grid's");
  if (prepare) require_prepared_run(x);
}

// The sizes the processor resizes to, for a still image and for a video: the frames path takes
// them, with the grid the images path gives the original size.
void frame_sizes(Program& in, const Target& x) {
  const int64_t height = in.value(), width = in.value();
  const auto frames = static_cast<uint64_t>(in.value());
  // A video of one frame is sized by the video rule, an image of t = 1 by the still one: compared
  // from two frames up.
  for (const bool video : {false, true}) {
    if (video && frames < 2) continue;
    const uint64_t t = video ? frames : 1;
    int64_t h = 0, w = 0;
    const pf_status s = video ? pf_model_video_frame_size(x.model, x.module, frames, height, width, &h, &w)
                              : pf_model_frame_size(x.model, x.module, height, width, &h, &w);
    pf_grid from_images{};
    const pf_status images = pf_session_images_grid(x.session, t, height, width, &from_images);
    if (refused(s)) {
      require(refused(images), "images_grid took a size the frame size rule refuses");
      continue;
    }
    // The images path may refuse what the processor takes: images past pf_image's size rule, or
    // whose intermediate resize is past its limits (a 1 x 24403 image to shortest edge 16); a
    // caller resizes those itself, to the size given here.
    pf_grid from_frames{};
    require(h > 0 && w > 0 && pf_session_frames_grid(x.session, t, h, w, &from_frames) == PF_OK,
            "frames_grid refused the size pf_model_frame_size gave");
    const bool same = from_frames.t == from_images.t && from_frames.h == from_images.h && from_frames.w == from_images.w;
    require(images != PF_OK || same, "images_grid differs from frames_grid of the frame size");
  }
}

// An image of any format, size and strides through run_image or run_video, preprocess and prepare.
void image(Program& in, const Target& x) {
  const int format = in.byte() % 10;  // 9: not a format
  const int matrix = in.byte() % 4;   // 3: not a matrix
  const int64_t width = in.value(), height = in.value();
  const int64_t chroma_pixel_stride = in.byte() % 4;  // 0 means 1; 3 is refused (I420)
  const uint64_t t = 1 + in.byte() % 3;
  const uint8_t how = in.byte();  // bit 0: pf_image_packed; 1: run_image (t = 1); 2: prepare; 3: preprocess short
  const int64_t pick[] = {0, 0, 1, 5, -1};  // bytes after each row; -1: the stride is too small
  int64_t extra[3];
  for (int64_t& e : extra) e = pick[in.byte() % std::size(pick)];
  const bool packed = how & 1, still = t == 1 && (how & 2), prepare = how & 4, short_rgb = how & 8;

  const bool sized = image_sized(width, height);
  const bool matrix_ok = matrix < 3;
  const bool stride_ok_i420 = format != 7 || chroma_pixel_stride <= 2 || packed;
  pf_grid g{};
  const bool grid_ok = !refused(pf_session_images_grid(x.session, t, height, width, &g));
  require(!grid_ok || sized, "images_grid took a size no image path takes");
  const patchfuse::fuzz::PlaneLayout l = patchfuse::fuzz::plane_layout(format, sized ? width : 1, sized ? height : 1,
                                           packed || chroma_pixel_stride == 0 ? 1 : chroma_pixel_stride);
  bool strides_ok = true;
  uint64_t plane_bytes[3] = {0, 0, 0}, total = 0;
  for (int p = 0; p < l.planes; ++p) {
    const int64_t e = packed ? 0 : extra[p];
    strides_ok = strides_ok && e >= 0;
    plane_bytes[p] = mul(l.row_bytes[p] + e, l.rows[p] - 1) + l.row_bytes[p];
    total += plane_bytes[p];
  }
  const bool taken = grid_ok && sized && l.planes > 0 && matrix_ok && stride_ok_i420 && strides_ok;
  int64_t rows = 0;
  if (grid_ok) require(pf_session_output_rows(x.session, &g, &rows) == PF_OK, "output_rows refused a grid images_grid made");
  const bool small = sized && total <= kMaxBytes && mul(mul(rows, x.info.embed_dim), 4) <= kMaxBytes;

  // The pixels: exactly the planes, or one byte per plane for an image that must be refused.
  std::vector<std::vector<uint8_t>> planes(3, std::vector<uint8_t>(1));
  pf_image im{};
  if (small) {
    if (packed) {
      planes[0].assign(total, 128);
      const pf_status s = pf_image_packed(&im, static_cast<pf_pixel_format>(format), planes[0].data(), width, height);
      require(l.planes > 0 ? s == PF_OK : refused(s), "pf_image_packed of a format (taken) or not (refused)");
      if (s != PF_OK) return;
    } else {
      for (int p = 0; p < l.planes; ++p) {
        planes[p].assign(plane_bytes[p], static_cast<uint8_t>(p * 50 + 16));
        im.planes[p] = planes[p].data();
        im.row_stride_bytes[p] = static_cast<int64_t>(l.row_bytes[p]) + extra[p];
      }
    }
  } else if (taken) {
    return;  // too large to run here
  } else {
    for (int p = 0; p < 3; ++p) im.planes[p] = planes[p].data(), im.row_stride_bytes[p] = 1;
  }
  im.format = static_cast<pf_pixel_format>(format);
  im.matrix = static_cast<pf_color_matrix>(matrix);
  im.width = width;
  im.height = height;
  if (!packed) im.chroma_pixel_stride = chroma_pixel_stride;

  pf_input_shape shape{};
  shape.kind = PF_INPUT_IMAGES;
  shape.t = t;
  shape.height = height;
  shape.width = width;
  shape.format = im.format;
  const bool preparable = grid_ok && sized && l.planes > 0;  // prepare sees no strides or matrix
  if (prepare && (small || !preparable)) {  // a large prepare sizes real buffers: only its refusals here
    require(preparable ? pf_session_prepare(x.session, &shape) == PF_OK : refused(pf_session_prepare(x.session, &shape)),
            "prepare of images images_grid takes (taken) or not (refused)");
  }
  std::vector<float> output(taken ? static_cast<size_t>(rows) * static_cast<size_t>(x.info.embed_dim) : 1);
  const std::vector<pf_image> video(t, im);
  pf_grid ran{};
  const pf_status s = still ? pf_session_run_image(x.session, &im, output.data(), &ran)
                            : pf_session_run_video(x.session, video.data(), t, output.data(), &ran);
  if (!taken) {
    require(refused(s), "run_image/run_video took an image it must refuse");
    return;
  }
  require(s == PF_OK, "run_image/run_video of an image images_grid takes");
  require(ran.t == g.t && ran.h == g.h && ran.w == g.w, "the run's grid is not images_grid's");
  if (prepare) require_prepared_run(x);

  // The processor's pixels: the size asked with no buffer, then a buffer of it or one byte less.
  int64_t h = 0, w = 0;
  require(refused(pf_session_preprocess(x.session, &im, t, nullptr, 0, &h, &w)), "preprocess with no buffer");
  require(h > 0 && w > 0, "preprocess did not write the size it needs");
  const uint64_t rgb_bytes = mul(mul(h, w), 3) - (short_rgb ? 1 : 0);
  if (rgb_bytes > kMaxBytes) return;
  const auto rgb = std::make_unique<uint8_t[]>(rgb_bytes);
  const pf_status p = pf_session_preprocess(x.session, &im, t, rgb.get(), rgb_bytes, &h, &w);
  require(short_rgb ? refused(p) : p == PF_OK, "preprocess into its size (taken) or one byte less (refused)");
}

// The models, opened once and released at exit (LeakSanitizer checks after the static destructors).
struct ModelRelease {
  void operator()(pf_model* m) const { pf_model_release(m); }
};
using ModelHandle = std::unique_ptr<pf_model, ModelRelease>;

const std::vector<ModelHandle>& models() {
  static const std::vector<ModelHandle> opened = [] {
    std::vector<ModelHandle> m;
    for (const char* name : {"frames_qwen2_vl", "frames_qwen3_vl", "encoder_input_clip", "encoder_input_siglip",
                             "siglip_p16_bias_bf16_true", "block_inputs_qwen2_5_vl", "block_inputs_qwen3_vl",
                             "block_inputs_pixtral", "two_families_true", "qwen2_vl_f32_false"}) {
      const std::string path = std::string(PATCHFUSE_FUZZ_MODELS) + "/" + name + ".pfb";
      pf_model* model = nullptr;
      if (pf_model_open_file(path.c_str(), &model) != PF_OK) {
        std::fprintf(stderr, "fuzz_c_api: %s: %s\n", path.c_str(), pf_last_error());
        std::abort();
      }
      m.emplace_back(model);
    }
    return m;
  }();
  return opened;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Program in(data, size);
  Target x{};
  x.model = models()[in.byte() % models().size()].get();
  size_t modules = 0;
  require(pf_model_module_count(x.model, &modules) == PF_OK, "pf_model_module_count");
  x.module = in.byte() % (modules + 1);  // one past the last: refused
  pf_session_options o;
  pf_session_options_init(&o);
  o.backend = static_cast<pf_backend>(in.byte() % 6);  // 5: not a backend
  o.precision = static_cast<pf_precision>(in.byte() % 6);
  o.path = static_cast<pf_path>(in.byte() % 3);
  o.output_stage = static_cast<pf_output_stage>(in.byte() % 3);
  o.threads = static_cast<int32_t>(in.byte() % 4) - 1;  // -1, 0: refused
  const pf_status info = pf_model_get_module(x.model, x.module, &x.info);
  if (refused(pf_session_create(x.model, x.module, &o, &x.session))) return 0;
  require(info == PF_OK && pf_session_get_info(x.session, &x.session_info) == PF_OK, "a session's module and info");
  for (int call = 0; call < kMaxCalls && !in.done(); ++call) {
    switch (in.byte() % 7) {
      case 0: rows_and_run_grid(in, x); break;
      case 1: run_rows(in, x); break;
      case 2: window_order(in, x); break;
      case 3: block_input(in, x); break;
      case 4: frames(in, x); break;
      case 5: frame_sizes(in, x); break;
      case 6: image(in, x); break;
    }
  }
  pf_session_release(x.session);
  return 0;
}
