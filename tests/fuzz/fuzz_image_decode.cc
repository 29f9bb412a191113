// libFuzzer target: an image file as patchfuse-run --image decodes it (JPEG, PNG, WebP, EXIF, and
// stb's formats behind our completeness checks). The pixel limit is lowered so that a small input
// claiming a large image is refused rather than allocated, which the real limit (178,956,970
// pixels) would allow.
#include "tests/fuzz/fuzz_input_file.h"
#include "tools/image_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = patchfuse::fuzz::write_input("x.img", data, size);
  patchfuse::DecodeOptions o;
  o.max_pixels = 1 << 22;
  auto img = patchfuse::decode_image(path, o);
  if (!img) return 0;
  if (img->bytes.size() != img->width * img->height * 3) __builtin_trap();
  volatile uint8_t sink = img->bytes.empty() ? 0 : img->bytes.back();
  (void)sink;
  return 0;
}
