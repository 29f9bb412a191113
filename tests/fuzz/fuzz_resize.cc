// libFuzzer target: pixel-format conversion + resize + crop with every size, format, filter and
// semantics drawn from the input. The first 16 bytes choose them; the rest are the pixels (cycled
// to fill the planes). Half the inputs go through frame_resize_spec with a fixed-size processor
// (shortest edge or exact resize, then a centre crop that may pad), the other half through a
// spec of their own. The output's every byte is written; the frame has no padding after it.
#include <cstring>
#include <vector>

#include "runtime/frames/pixel_formats.h"
#include "runtime/frames/preprocessing.h"
#include "runtime/frames/resize.h"
#include "tests/fuzz/plane_layout.h"

using namespace patchfuse;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 16) return 0;
  const uint8_t* b = data;
  ImageView v;
  v.format = static_cast<PixelFormat>(b[0] % 9);
  v.matrix = static_cast<ColorMatrix>(b[1] % 3);
  v.width = 1 + b[2] % 64;
  v.height = 1 + b[3] % 64;
  v.chroma_pixel_stride = 1 + (b[4] & 1);
  const size_t pad = b[4] >> 4;  // extra bytes per row
  // Planes of exactly their rows (the last without padding), in separate buffers.
  const fuzz::PlaneLayout l = fuzz::plane_layout(static_cast<int>(v.format), v.width, v.height, v.chroma_pixel_stride);
  std::vector<std::vector<uint8_t>> planes(3);
  const uint8_t* pixels = data + 16;
  const size_t n = size - 16;
  for (int p = 0; p < l.planes; ++p) {
    v.row_stride[p] = l.row_bytes[p] + pad;
    planes[p].resize(v.row_stride[p] * (l.rows[p] - 1) + l.row_bytes[p]);
    for (size_t i = 0; i < planes[p].size(); ++i) planes[p][i] = n ? pixels[(i * 7 + p) % n] : static_cast<uint8_t>(i);
    v.planes[p] = planes[p].data();
  }
  if (!check_image(v, "fuzz").ok()) return 0;

  Result<ResizeSpec> spec = make_error(Code::kInvalidArgument, "");
  if (b[5] & 1) {
    Preprocessing p;
    p.resize = ResizeVariant::kFixed;
    p.temporal_patch_size = p.merge_size = 1;
    p.fixed_height = 1 + b[6] % 96;
    p.fixed_width = 1 + b[7] % 96;
    p.shortest_edge = (b[5] & 2) ? 1 + b[8] % 96 : 0;
    if (!p.shortest_edge && (b[5] & 4)) p.resize_height = 1 + b[8] % 96, p.resize_width = 1 + b[9] % 96;
    p.resample = static_cast<Resample>(b[10] % 6);
    p.image_semantics = (b[11] & 1) && torch_has_filter(p.resample) ? ResizeSemantics::kTorch : ResizeSemantics::kPil;
    spec = frame_resize_spec(p, 0, v.height, v.width);
  } else {
    ResizeSpec s;
    s.src_h = v.height;
    s.src_w = v.width;
    s.resized_h = 1 + b[6] % 96;
    s.resized_w = 1 + b[7] % 96;
    s.out_h = 1 + b[8] % 96;
    s.out_w = 1 + b[9] % 96;
    s.top = static_cast<int8_t>(b[12]) % 48;
    s.left = static_cast<int8_t>(b[13]) % 48;
    s.filter = static_cast<Resample>(b[10] % 7);  // 6: out of range, refused
    s.semantics = static_cast<ResizeSemantics>(b[11] % 3);
    spec = s;
  }
  if (!spec.ok()) return 0;
  auto r = Resizer::create(*spec);
  if (!r.ok()) return 0;
  std::vector<uint8_t> out(spec->out_h * spec->out_w * 3);
  std::vector<uint8_t> scratch(r->scratch_bytes(v));
  const size_t split = spec->out_h * (b[14] % 8) / 8;  // two bands, as two threads would
  r->run(v, 0, split, scratch.data(), out.data());
  r->run(v, split, spec->out_h, scratch.data(), out.data() + split * spec->out_w * 3);  // row `split` first
  volatile uint8_t sink = out.back();
  (void)sink;
  return 0;
}
