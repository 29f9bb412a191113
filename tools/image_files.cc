#include "tools/image_files.h"

#include <stb_image.h>

// jpeglib.h needs FILE and size_t declared before it.
#include <cstdio>
#include <cstring>
#include <csetjmp>
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>
#include <webp/decode.h>
#include <webp/demux.h>

#include <memory>
#include <random>

#include "runtime/core/mapped_file.h"
#include "runtime/core/output_file.h"
#include "tools/exif.h"
#include "tools/stb_formats.h"

namespace patchfuse {

pf_image Image::view() const {
  pf_image v;
  pf_image_packed(&v, format, bytes.data(), static_cast<int64_t>(width), static_cast<int64_t>(height));
  return v;
}

namespace {

// Regular files only, as for models (MappedFile): a directory made the stream throw, and
// /dev/zero or a FIFO would be read until memory ran out.
Expected<std::vector<uint8_t>> read_file(const std::string& path) {
  Result<MappedFile> file = MappedFile::open(path, MappedFile::Reading::kWhole);
  if (!file.ok()) return {PF_IO_ERROR, file.error().message};
  return std::vector<uint8_t>(file->data(), file->data() + file->size());
}

std::string too_large(const std::string& path, uint64_t w, uint64_t h, uint64_t limit) {
  return path + ": " + std::to_string(w) + "x" + std::to_string(h) + " = " + std::to_string(w * h) +
         " pixels exceeds the limit of " + std::to_string(limit) + " (a decompression bomb guard, as Pillow's; " +
         "raise it with --max-pixels)";
}

// --- JPEG: libjpeg's errors longjmp back here; nothing with a destructor lives between the
// setjmp and the calls that may jump.
struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegError*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

// A truncated file is an error, as in Pillow ("image file is truncated"); libjpeg only warns and
// fills the rest with gray. Other warnings (extraneous bytes) pass, as they do in Pillow.
void jpeg_warn(j_common_ptr c, int level) {
  if (level == -1 && c->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(c);
}

// Decodes into `out` (resized by the caller from the header); returns "" or the error.
struct JpegHeader {
  size_t width = 0, height = 0;
  int channels = 0;
  std::vector<uint8_t> exif;  // the TIFF bytes of an APP1 Exif segment
};

std::string decode_jpeg(const std::vector<uint8_t>& file, uint64_t max_pixels, const std::string& path,
                        JpegHeader& header, std::vector<uint8_t>& rgb) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_warn;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return path + ": corrupt or truncated JPEG: " + err.message;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, file.data(), static_cast<unsigned long>(file.size()));
  jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xffff);
  jpeg_read_header(&cinfo, TRUE);
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m != nullptr; m = m->next) {
    if (m->marker == JPEG_APP0 + 1 && m->data_length > 6 && std::memcmp(m->data, "Exif\0\0", 6) == 0 && header.exif.empty()) {
      header.exif.assign(m->data + 6, m->data + m->data_length);
    }
  }
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return path + ": CMYK JPEGs are not supported (convert the image to RGB first)";
  }
  header.width = cinfo.image_width;
  header.height = cinfo.image_height;
  if (uint64_t{header.width} * header.height > max_pixels) {
    jpeg_destroy_decompress(&cinfo);
    return too_large(path, header.width, header.height, max_pixels);
  }
  const bool gray = cinfo.jpeg_color_space == JCS_GRAYSCALE;
  cinfo.out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;  // Pillow: mode L or RGB; defaults otherwise
  jpeg_start_decompress(&cinfo);
  header.channels = cinfo.output_components;
  rgb.resize(header.width * header.height * 3);
  std::vector<uint8_t>& out = rgb;
  while (cinfo.output_scanline < cinfo.output_height) {
    uint8_t* row = out.data() + size_t{cinfo.output_scanline} * header.width * 3;
    // Gray rows land in the last third of the RGB row, then are replicated in place.
    JSAMPROW target = gray ? row + header.width * 2 : row;
    jpeg_read_scanlines(&cinfo, &target, 1);
    if (gray) {
      for (size_t x = 0; x < header.width; ++x) row[3 * x] = row[3 * x + 1] = row[3 * x + 2] = target[x];
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return "";
}

// --- PNG
struct PngSource {
  const std::vector<uint8_t>* file;
  size_t at;
};

void png_read_mem(png_structp png, png_bytep out, png_size_t n) {
  auto* s = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > s->file->size() - s->at) png_error(png, "unexpected end of file (truncated PNG)");
  std::memcpy(out, s->file->data() + s->at, n);
  s->at += n;
}

void png_fail(png_structp png, png_const_charp message) {
  auto* text = static_cast<char*>(png_get_error_ptr(png));
  std::snprintf(text, 200, "%s", message);
  png_longjmp(png, 1);
}

void png_warn(png_structp, png_const_charp) {}

std::string decode_png(const std::vector<uint8_t>& file, uint64_t max_pixels, const std::string& path,
                       JpegHeader& header, std::vector<uint8_t>& rgb) {
  char message[200] = "";
  PngSource src{&file, 0};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, message, png_fail, png_warn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (png == nullptr || info == nullptr) {
    png_destroy_read_struct(&png, &info, nullptr);
    return path + ": out of memory for the PNG decoder";
  }
  std::vector<uint8_t>* out = &rgb;
  std::vector<uint8_t> rows_storage;  // constructed before setjmp: a longjmp does not skip it
  std::vector<png_bytep> row_pointers;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return path + ": corrupt or truncated PNG: " + message;
  }
  png_set_read_fn(png, &src, png_read_mem);
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  if (uint64_t{w} * h > max_pixels) {
    png_destroy_read_struct(&png, &info, nullptr);
    return too_large(path, w, h, max_pixels);
  }
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  // Pillow opens 16-bit gray as mode I and converts it to RGB by clamping to 255; every other
  // 16-bit mode keeps the high byte (its ;16B raw modes), which png_set_strip_16 does.
  const bool gray16 = color == PNG_COLOR_TYPE_GRAY && depth == 16;
  if (!gray16) {
    png_set_expand(png);  // palette -> RGB(A), gray < 8 bits scaled to 8, tRNS -> alpha (dropped below)
    png_set_strip_16(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const size_t channels = png_get_channels(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  rows_storage.resize(row_bytes * h);
  row_pointers.resize(h);
  for (size_t y = 0; y < h; ++y) row_pointers[y] = rows_storage.data() + y * row_bytes;
  png_read_image(png, row_pointers.data());
  png_bytep exif = nullptr;
  png_uint_32 exif_size = 0;
  png_read_end(png, info);
  if (png_get_eXIf_1(png, info, &exif_size, &exif) != 0 && exif != nullptr) header.exif.assign(exif, exif + exif_size);
  png_destroy_read_struct(&png, &info, nullptr);

  header.width = w;
  header.height = h;
  header.channels = static_cast<int>(channels);
  out->resize(size_t{w} * h * 3);
  for (size_t y = 0; y < h; ++y) {
    const uint8_t* s = rows_storage.data() + y * row_bytes;
    uint8_t* d = out->data() + y * w * 3;
    for (size_t x = 0; x < w; ++x, d += 3) {
      if (gray16) {
        const unsigned v = s[2 * x] << 8 | s[2 * x + 1];
        d[0] = d[1] = d[2] = static_cast<uint8_t>(v > 255 ? 255 : v);
      } else if (channels <= 2) {  // gray, gray + alpha
        d[0] = d[1] = d[2] = s[x * channels];
      } else {                     // RGB, RGBA: alpha dropped
        std::memcpy(d, s + x * channels, 3);
      }
    }
  }
  return "";
}

// --- WebP: through libwebp's animation decoder for stills and animations alike, as Pillow's
// WebP plugin reads every file: its first frame composited on a transparent canvas, RGBA, alpha
// then dropped (convert("RGB")). A file that ends early or whose chunks are corrupt is refused by
// the demuxer or the frame decoder.
std::string decode_webp(const std::vector<uint8_t>& file, uint64_t max_pixels, const std::string& path,
                        JpegHeader& header, std::vector<uint8_t>& rgb) {
  int w = 0, h = 0;
  if (!WebPGetInfo(file.data(), file.size(), &w, &h)) return path + ": corrupt or truncated WebP: its header does not parse";
  if (uint64_t(w) * uint64_t(h) > max_pixels) return too_large(path, static_cast<uint64_t>(w), static_cast<uint64_t>(h), max_pixels);
  const WebPData data{file.data(), file.size()};
  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) return path + ": the WebP decoder library does not match its headers";
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  std::unique_ptr<WebPAnimDecoder, void (*)(WebPAnimDecoder*)> decoder(WebPAnimDecoderNew(&data, &options),
                                                                       WebPAnimDecoderDelete);
  if (!decoder) return path + ": corrupt or truncated WebP: its chunks do not parse (the file may end early)";
  WebPAnimInfo info;
  uint8_t* frame = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetInfo(decoder.get(), &info) || !WebPAnimDecoderGetNext(decoder.get(), &frame, &timestamp)) {
    return path + ": corrupt or truncated WebP: its first frame does not decode";
  }
  header.width = info.canvas_width;
  header.height = info.canvas_height;
  header.channels = 4;
  rgb.resize(header.width * header.height * 3);
  for (size_t i = 0; i < header.width * header.height; ++i) std::memcpy(rgb.data() + 3 * i, frame + 4 * i, 3);
  WebPChunkIterator exif;
  if (WebPDemuxGetChunk(WebPAnimDecoderGetDemuxer(decoder.get()), "EXIF", 1, &exif)) {
    const uint8_t* bytes = exif.chunk.bytes;
    size_t size = exif.chunk.size;
    if (size >= 6 && std::memcmp(bytes, "Exif\0\0", 6) == 0) bytes += 6, size -= 6;  // as Pillow, with or without the prefix
    header.exif.assign(bytes, bytes + size);
    WebPDemuxReleaseChunkIterator(&exif);
  }
  return "";
}

}  // namespace

Expected<Image> decode_image(const std::string& path, const DecodeOptions& options) {
  auto file = read_file(path);
  if (!file) return {file.status(), file.error()};
  Image img;
  JpegHeader header;
  std::string err;
  const std::vector<uint8_t>& f = *file;
  if (f.size() >= 3 && f[0] == 0xFF && f[1] == 0xD8 && f[2] == 0xFF) {
    err = decode_jpeg(f, options.max_pixels, path, header, img.bytes);
  } else if (f.size() >= 8 && std::memcmp(f.data(), "\x89PNG\r\n\x1a\n", 8) == 0) {
    err = decode_png(f, options.max_pixels, path, header, img.bytes);
  } else if (f.size() >= 12 && std::memcmp(f.data(), "RIFF", 4) == 0 && std::memcmp(f.data() + 8, "WEBP", 4) == 0) {
    err = decode_webp(f, options.max_pixels, path, header, img.bytes);
  } else {
    const auto starts = [&](const char* magic) { return f.size() >= std::strlen(magic) && std::memcmp(f.data(), magic, std::strlen(magic)) == 0; };
    int w = 0, h = 0, channels = 0;
    const bool stb_format = starts("P5") || starts("P6") || starts("BM") || starts("GIF87a") || starts("GIF89a");
    // The pixel limit first (from the header alone), then whether the file holds the whole first
    // image: stb_image pads what is missing.
    const StbFileCheck check = stb_format ? check_stb_file(f, path) : StbFileCheck();
    if (!stb_format || f.size() > INT32_MAX || !stbi_info_from_memory(f.data(), static_cast<int>(f.size()), &w, &h, &channels)) {
      if (!check.error.empty()) return {PF_INVALID_ARGUMENT, check.error};
      return {PF_INVALID_ARGUMENT, path + ": not an image this tool decodes (JPEG, PNG, WebP, binary PPM/PGM, BMP, GIF)" +
                                       (stb_format ? std::string(": ") + stbi_failure_reason() : std::string())};
    }
    if (uint64_t(w) * uint64_t(h) > options.max_pixels) return {PF_INVALID_ARGUMENT, too_large(path, w, h, options.max_pixels)};
    if (!check.error.empty()) return {PF_INVALID_ARGUMENT, check.error};
    if (w <= 0 || h <= 0) return {PF_INVALID_ARGUMENT, path + ": the image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels"};
    // RGBA, so a GIF's transparent pixels (alpha 0) can take the colour Pillow gives them.
    std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
        stbi_load_from_memory(f.data(), static_cast<int>(f.size()), &w, &h, &channels, 4), stbi_image_free);
    if (!pixels) return {PF_INVALID_ARGUMENT, path + ": cannot decode the image: " + stbi_failure_reason()};
    header.width = static_cast<size_t>(w);
    header.height = static_cast<size_t>(h);
    img.bytes.resize(header.width * header.height * 3);
    size_t undrawn = 0;
    for (size_t i = 0; i < header.width * header.height; ++i) {
      const stbi_uc* p = pixels.get() + 4 * i;
      undrawn += p[3] == 0;
      std::memcpy(img.bytes.data() + 3 * i, check.transparent && p[3] == 0 ? check.transparent_rgb : p, 3);
    }
    // stb_image leaves a GIF's pixels that its LZW codes never reach at alpha 0 (with a zero
    // background index, as Pillow writes): in a GIF without a transparent index they are pixels
    // the data does not cover, which Pillow refuses ("image file is truncated").
    const bool gif = starts("GIF87a") || starts("GIF89a");
    if (gif && !check.transparent && undrawn > 0) {
      return {PF_INVALID_ARGUMENT, path + ": truncated GIF: its image data covers " +
                                       std::to_string(header.width * header.height - undrawn) + " of " +
                                       std::to_string(header.width * header.height) + " pixels"};
    }
  }
  if (!err.empty()) return {PF_INVALID_ARGUMENT, err};
  img.width = header.width;
  img.height = header.height;
  if (options.exif && !header.exif.empty()) {
    img.orientation = exif_orientation(header.exif.data(), header.exif.size());
    apply_orientation(img.orientation, img.width, img.height, img.bytes);
  }
  return img;
}

namespace {

// The bytes of one tightly packed frame (pf_image_packed's layout): the end of its last plane.
Expected<size_t> packed_size(pf_pixel_format format, size_t width, size_t height) {
  pf_image probe;
  static const uint8_t base = 0;
  if (pf_image_packed(&probe, format, &base, static_cast<int64_t>(width), static_cast<int64_t>(height)) != PF_OK) {
    return {PF_INVALID_ARGUMENT, pf_last_error()};
  }
  size_t end = 0;
  for (int p = 0; p < 3; ++p) {
    if (probe.planes[p] == nullptr) continue;
    const size_t rows = p > 0 ? (height + 1) / 2 : height;  // only 4:2:0 formats have planes 1 and 2
    end = std::max(end, static_cast<size_t>(probe.planes[p] - &base) + rows * static_cast<size_t>(probe.row_stride_bytes[p]));
  }
  return end;
}

}  // namespace

Expected<Image> read_raw_image(const std::string& path, pf_pixel_format format, size_t width, size_t height) {
  Image img;
  img.format = format;
  img.width = width;
  img.height = height;
  auto size = packed_size(format, width, height);
  if (!size) return {size.status(), path + ": " + size.error()};
  const size_t expected = *size;
  auto file = read_file(path);
  if (!file) return {file.status(), file.error()};
  if (file->size() != expected) {
    return {PF_INVALID_ARGUMENT, path + ": " + std::to_string(file->size()) + " bytes, but one packed " +
                                     std::to_string(width) + "x" + std::to_string(height) + " frame of this format is " +
                                     std::to_string(expected) + " bytes"};
  }
  img.bytes = std::move(*file);
  return img;
}

std::string write_png(const std::string& path, const uint8_t* rgb, size_t width, size_t height) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_RGB;
  // The resized frame is for inspection on the device: speed over size (a 1288x728 frame 2.3 MB in
  // about 0.1 s against 1.3 MB in 0.8 s), and one pass into a buffer of libpng's upper bound
  // (png_image_write_get_memory_size would compress the frame twice).
  image.flags = PNG_IMAGE_FLAG_FAST;
  png_alloc_size_t size = PNG_IMAGE_PNG_SIZE_MAX(image);
  std::vector<uint8_t> bytes(size);
  if (!png_image_write_to_memory(&image, bytes.data(), &size, 0, rgb, 0, nullptr)) {
    return path + ": cannot encode PNG: " + image.message;
  }
  bytes.resize(size);
  const Status s = write_file_atomically(path, bytes);
  return s.ok() ? "" : s.error().message;
}

Image synthetic_image(pf_pixel_format format, size_t height, size_t width, uint32_t seed) {
  Image img;
  img.format = format;
  img.width = width;
  img.height = height;
  auto size = packed_size(format, width, height);
  img.bytes.resize(size ? *size : 0);
  std::mt19937 rng(seed);
  for (uint8_t& v : img.bytes) v = static_cast<uint8_t>(rng() >> 24);
  return img;
}

}  // namespace patchfuse
