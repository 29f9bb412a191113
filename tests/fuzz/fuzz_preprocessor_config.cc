// libFuzzer target: preprocessor_config.json and video_preprocessor_config.json, through to the
// sizes the runtime computes from them. The input is read as a Qwen2-VL and as a SigLIP image
// config, each accepted one checked against a weight of its patch size, and as the video config of
// a fixed Qwen2-VL image config; every accepted preprocessing then sizes images and videos of a
// few shapes (smart_resize on hostile bounds and sizes).
#include "converter/preprocessor_config.h"
#include "tests/fuzz/fuzz_input_file.h"

namespace {

using patchfuse::Preprocessing;

void size_frames(const Preprocessing& p) {
  for (const auto& [h, w] : {std::pair<int64_t, int64_t>{1, 1}, {27, 5000}, {480, 640}, {4032, 3024}}) {
    (void)patchfuse::resize_target(p, h, w);
    for (int64_t frames : {1, 2, 5, 768}) (void)patchfuse::video_resize_target(p, frames, h, w);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = patchfuse::fuzz::write_input("preprocessor_config.json", data, size);
  for (const char* model_type : {"qwen2_vl", "siglip"}) {
    auto p = patchfuse::load_preprocessor_config(path, model_type);
    if (!p.ok()) continue;
    if (p->patch_size == 0) p->patch_size = 14;  // a fixed-size processor takes the weight's kernel
    patchfuse::ConvGeometry g;
    const int64_t t = p->temporal_patch_size, k = p->patch_size;
    g.kernel = g.stride = t == 1 ? std::vector<int64_t>{k, k} : std::vector<int64_t>{t, k, k};
    g.padding.assign(g.kernel.size(), 0);
    g.dilation.assign(g.kernel.size(), 1);
    g.in_channels = static_cast<int64_t>(p->mean.size());
    g.embed_dim = 8;
    if (patchfuse::check_preprocessing(*p, g, "fuzz").ok()) size_frames(*p);
  }
  Preprocessing image;  // Qwen2-VL's processor defaults
  image.mean = {0.48145466f, 0.4578275f, 0.40821073f};
  image.std = {0.26862954f, 0.26130258f, 0.27577711f};
  image.min_pixels = 56 * 56;
  image.max_pixels = 28 * 28 * 1280;
  auto video = patchfuse::load_video_preprocessor_config(path, image, "image.json");
  if (video.ok()) {
    image.video = *video;
    patchfuse::ConvGeometry g;
    g.kernel = g.stride = {2, 14, 14};
    g.padding = {0, 0, 0};
    g.dilation = {1, 1, 1};
    g.in_channels = 3;
    g.embed_dim = 8;
    if (patchfuse::check_preprocessing(image, g, "fuzz").ok()) size_frames(image);
  }
  return 0;
}
