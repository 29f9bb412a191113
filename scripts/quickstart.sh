#!/usr/bin/env bash
# The first minute with patchfuse: build, make a Qwen2-VL-shaped checkpoint (bf16, two shards,
# with its preprocessor_config.json), convert it to a .pfb, show what it holds, run it on
# pixel_values and on an image against the reference backend, export it back to the original
# layout, do the same image through a SigLIP-shaped (Conv2d) model, and time fused against
# unfused and frames against pixel_values.
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/quickstart

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" > /dev/null
rm -rf "$out" && mkdir -p "$out"

run() { echo "+ $*"; "$@"; }
run build/converter/patchfuse-make-sample "$out/qwen2-vl-sample" --model-type qwen2_vl --dtype bf16 --shards 2
run build/converter/patchfuse-convert convert "$out/qwen2-vl-sample" -o "$out/qwen2-vl.pfb"
run build/converter/patchfuse-convert inspect "$out/qwen2-vl.pfb"
run build/tools/patchfuse-run "$out/qwen2-vl.pfb" --input "$out/qwen2-vl-sample/pixel_values.npy" \
    --output "$out/embeddings.npy" --compare-reference
# Frames in: a 448x448 RGB picture (a PPM made here; PNG and JPEG work the same) through the
# model's own preprocessing, folded into the weights.
{ printf 'P6\n448 448\n255\n'; head -c $((448 * 448 * 3)) /dev/urandom; } > "$out/camera.ppm"
run build/tools/patchfuse-run "$out/qwen2-vl.pfb" --image "$out/camera.ppm" --output "$out/image_embeddings.npy" \
    --compare-reference
run build/converter/patchfuse-convert export "$out/qwen2-vl.pfb" -o "$out/roundtrip.safetensors"
# The Conv2d family: a SigLIP-shaped checkpoint (1152x3x14x14 + bias) names its family with
# --fusion; the picture is resized to SigLIP's fixed 384x384 and cut into 27x27 patches.
run build/converter/patchfuse-make-sample "$out/siglip-sample" --model-type siglip --patches 0
run build/converter/patchfuse-convert convert "$out/siglip-sample" -o "$out/siglip.pfb" --fusion conv2d_patch_embeddings
run build/tools/patchfuse-run "$out/siglip.pfb" --image "$out/camera.ppm" --output "$out/siglip_embeddings.npy" \
    --compare-reference
# The point of the project in one table: the fused GEMM against the original convolution, timed
# alternately on the default backend.
run build/tools/patchfuse-bench "$out/qwen2-vl.pfb" --path both --patches 256 --warmup 3 --runs 20
# Still images at half the work: the frames path against pixel_values on the same 1024 patches.
run build/tools/patchfuse-bench "$out/qwen2-vl.pfb" --image 448x448 --warmup 3 --runs 10
echo "quickstart: done; files are in $out/"
