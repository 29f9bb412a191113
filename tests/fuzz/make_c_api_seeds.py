#!/usr/bin/python3
"""Writes tests/fuzz/seeds/fuzz_c_api/: one readable program per model and call family, in the
input encoding fuzz_c_api.cc reads (keep the two in step; run this after changing that encoding).
   /usr/bin/python3 tests/fuzz/make_c_api_seeds.py
"""
import pathlib

# fuzz_c_api.cc's kBoundaries, in order: a value byte 0x80 + i stands for BOUNDARIES[i].
BOUNDARIES = [0, 1, 2, 3, 4, 7, 8, 13, 14, 15, 16, 27, 28, 29, 31, 32, 33, 48, 56, 64, 84, 112, 224, 256, 448, 480,
              640, 720, 1080, 1920, 4096, 8191, 32767, 32768, 32769, 65535, 65536, 1 << 20, (1 << 20) + 1,
              (1 << 28) - 1, 1 << 28, 2**31 - 1, 1 << 31, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, 1 << 40,
              (2**63 - 1) // 3, 2**63 - 2, 2**63 - 1, -1, -2, -28, -2**31, -2**63 + 1, -2**63]
# fuzz_c_api.cc's models(), in order.
MODELS = ["frames_qwen2_vl", "frames_qwen3_vl", "encoder_input_clip", "encoder_input_siglip",
          "siglip_p16_bias_bf16_true", "block_inputs_qwen2_5_vl", "block_inputs_qwen3_vl", "block_inputs_pixtral",
          "two_families_true", "qwen2_vl_f32_false"]


def value(x):
    """A value: a byte below 0x80 is itself, 0x80 + i a boundary, 0xff then two bytes a 16-bit number."""
    if 0 <= x < 0x80:
        return [x]
    if x in BOUNDARIES:
        return [0x80 + BOUNDARIES.index(x)]
    assert 0 <= x < 65536, x
    return [0xff, x >> 8, x & 255]


def values(*xs):
    return [b for x in xs for b in value(x)]


def session(model, module=0, backend=0, precision=0, path=0, stage=0, threads=1):
    """The header: model, module index, then pf_session_options' enums as their values and threads + 1."""
    return [MODELS.index(model), module, backend, precision, path, stage, threads + 1]


# The calls: an opcode byte (fuzz_c_api.cc's switch), then what that function reads, in order.
def rows(t, h, w, prepare=0): return [0] + values(t, h, w) + [prepare]
def run(n): return [1] + values(n)
def window(t, h, w, shrink=0): return [2] + values(t, h, w) + [shrink]
def block(t, h, w, index, short=0): return [3] + values(t, h, w, index) + [short]
def frames(t, h, w, stride=0, prepare=0): return [4] + values(t, h, w) + [stride, prepare]
def sizes(h, w, video_frames): return [5] + values(h, w, video_frames)


def image(fmt, matrix, w, h, chroma_pixel_stride, t, how, extra=(0, 0, 0)):
    """how: bit 0 pf_image_packed, 1 run_image (t = 1), 2 prepare, 3 preprocess one byte short."""
    return [6, fmt, matrix] + values(w, h) + [chroma_pixel_stride, t - 1, how] + list(extra)


RGB, RGBA, BGRA, GRAY8, NV12, I420, YUYV = 0, 2, 3, 4, 5, 7, 8
SEEDS = {
    "qwen2_vl_frames": session("frames_qwen2_vl") + frames(1, 56, 56, 0, 1) + image(RGB, 0, 100, 60, 0, 1, 2 | 4)
    + sizes(480, 640, 4) + rows(1, 4, 4, 1) + run(10) + frames(2, 56, 84, 4),
    "qwen3_vl_video": session("frames_qwen3_vl") + image(NV12, 1, 33, 17, 0, 2, 1)
    + image(I420, 2, 64, 48, 2, 3, 4, (1, 2, 3)) + sizes(720, 1280, 8) + frames(3, 64, 64, 2, 1),
    "clip_encoder_input": session("encoder_input_clip", stage=1) + rows(1, 4, 4, 1)
    + image(I420, 0, 31, 29, 2, 1, 2 | 4 | 8) + frames(2, 16, 16) + image(YUYV, 0, 9, 7, 0, 1, 2),
    "siglip_int8": session("siglip_p16_bias_bf16_true", precision=4) + frames(1, 64, 48, 0, 1)
    + image(YUYV, 1, 65, 49, 0, 1, 2 | 4) + image(BGRA, 0, 48, 64, 0, 2, 0) + rows(1, 4, 3),
    "siglip_encoder_input": session("encoder_input_siglip", backend=1, stage=1) + rows(2, 4, 4, 1)
    + image(GRAY8, 0, 17, 16, 0, 1, 2) + frames(1, 16, 16, 4, 0),
    "qwen2_5_vl_blocks": session("block_inputs_qwen2_5_vl", backend=1, stage=1) + window(1, 8, 8) + window(2, 12, 16, 3)
    + block(1, 8, 8, 0) + block(1, 8, 8, 3, 1) + block(1, 8, 8, 9) + rows(1, 8, 8, 1),
    "qwen3_vl_blocks": session("block_inputs_qwen3_vl") + block(1, 4, 4, 0) + block(2, 4, 8, 1) + block(1, 4, 4, 2)
    + rows(1, 4, 4, 1),
    "pixtral_blocks": session("block_inputs_pixtral", backend=1) + block(1, 3, 5, 0) + block(1, 3, 5, 1)
    + rows(1, 3, 5, 1),
    "two_families": session("two_families_true", module=1, backend=3) + run(5) + rows(1, 2, 2, 1),
    "unfused": session("qwen2_vl_f32_false", path=1) + run(3) + rows(1, 2, 4, 1) + window(1, 2, 2),
    "boundaries": session("frames_qwen2_vl", backend=1) + rows(1, 1 << 20, 4096) + rows(1, (1 << 20) + 1, 1)
    + run(2**31 - 1) + run(1 << 31) + run(-1) + frames(-1, 56, 56) + frames(1, 1 << 32, 56)
    + image(RGB, 0, 32768, 32768, 0, 1, 2) + image(RGB, 0, -1, 5, 0, 1, 2) + sizes(2**63 - 1, 1, 1 << 32)
    + sizes(1, 200 * 28 + 28, 2) + window(1, -1, 4) + block(0, 4, 4, 0),
    "bad_options": session("frames_qwen2_vl", backend=5) + run(1),
}

out = pathlib.Path(__file__).resolve().parent / "seeds" / "fuzz_c_api"
out.mkdir(parents=True, exist_ok=True)
for name, program in SEEDS.items():
    (out / f"{name}.bin").write_bytes(bytes(program))
