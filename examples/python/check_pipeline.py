#!/usr/bin/python3
"""A build pipeline's parity check in one script: convert a Hugging Face checkpoint with patchfuse,
run a camera frame through the .pfb, and compare with a PyTorch re-implementation of the model's
patch embedding (the Qwen2-VL processor's pixel_values through nn.Conv3d) on the same frame.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/check_pipeline.py CHECKPOINT_DIR [IMAGE]

CHECKPOINT_DIR: a Qwen2-VL-family checkpoint with its preprocessor_config.json (e.g. one written by
build/converter/patchfuse-make-sample DIR --model-type qwen2_vl). IMAGE: any image file; without
one, a synthetic 448x448 frame. Needs python3-torch for the reference (Debian's package)."""
import json
import os
import sys
import tempfile

import numpy as np
import torch

import patchfuse

src = sys.argv[1]
out = os.path.join(tempfile.mkdtemp(), "model.pfb")
report = patchfuse.convert(src, out)                                  # the converter, as the CLI runs it
print("\n".join(report["written"] + ["note: " + n for n in report["notes"]]))

model = patchfuse.Model(out)
session = patchfuse.Session(model, precision="f32")                   # the device path, on this CPU's backend
frame = (patchfuse.load_image(sys.argv[2]) if len(sys.argv) > 2
         else np.random.default_rng(0).integers(0, 256, (448, 448, 3), dtype=np.uint8))
y, (t, h, w) = session.run_image(frame)                              # resized and normalized as HF does

# The reference: the processor's pixel_values at patchfuse's resized size, through the original Conv3d.
pre = json.load(open(os.path.join(src, "preprocessor_config.json")))
vision = json.load(open(os.path.join(src, "config.json")))["vision_config"]
p, tp, m = vision["patch_size"], vision["temporal_patch_size"], pre.get("merge_size", 2)
resized = frame if frame.shape[:2] == (h * p, w * p) else None
assert resized is not None, "pass an image already at the processor's size, or none (a 448x448 frame is)"
x = (resized.astype(np.float32) * np.float32(pre["rescale_factor"]) - np.float32(pre["image_mean"])) / np.float32(pre["image_std"])
x = np.repeat(x.transpose(2, 0, 1)[None], tp, axis=0)                  # a still image: its frame repeated
rows = x.reshape(1, tp, 3, h // m, m, p, w // m, m, p).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8).reshape(-1, 3, tp, p, p)
export = os.path.join(os.path.dirname(out), "original.safetensors")
patchfuse.export(out, export)                                          # the original conv weights, bit-exactly
from safetensors_reader import read_tensor  # noqa: E402  (examples/python/safetensors_reader.py)
weight = read_tensor(export, "visual.patch_embed.proj.weight")
conv = torch.nn.Conv3d(3, weight.shape[0], (tp, p, p), stride=(tp, p, p), bias=False)
conv.weight.data = torch.from_numpy(weight).float()
with torch.no_grad():
    ref = conv(torch.from_numpy(np.ascontiguousarray(rows))).reshape(len(rows), -1).numpy()
err = np.max(np.abs(y - ref)) / np.max(np.abs(ref))
print(f"{session.info['backend']} {session.info['precision']}: grid {(t, h, w)}, max |patchfuse - torch| = {err:.2e} of max |torch|")
sys.exit(0 if err < 1e-4 else 1)
