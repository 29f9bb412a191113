#!/usr/bin/python3
"""How far apart transformers' two resize backends are on the camera fixtures: Pillow's
Image.resize (the pil semantics) against torch's float32 antialiased interpolation with round and
clamp (the torch semantics), in pixels and in Qwen2-VL-shaped embeddings (the frames fixture's
Conv3d). docs/camera.md quotes what this prints."""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
sys.path.insert(0, os.path.join(ROOT, "frames"))
sys.path.insert(0, os.path.join(ROOT, "images"))
import make_frames  # noqa: E402
import make_images  # noqa: E402,F401  (its picture() made the images)

q = os.path.join(ROOT, "frames", "qwen2_vl")
pre = json.load(open(os.path.join(q, "preprocessor_config.json")))
with open(os.path.join(q, "model.safetensors"), "rb") as f:
    n = int.from_bytes(f.read(8), "little")
    header = json.loads(f.read(n))
    data = f.read()
(name, meta), = [(k, v) for k, v in header.items() if k != "__metadata__"]
a, b = meta["data_offsets"]
weight = torch.from_numpy(np.frombuffer(data[a:b], np.float32).reshape(meta["shape"]).copy()).double()


def embed(rgb):
    pv, _ = make_frames.pixel_values(rgb[None], 14, pre["image_mean"], pre["image_std"])
    x = torch.from_numpy(pv.astype(np.float64)).reshape(-1, 3, 2, 14, 14)
    return F.conv3d(x, weight, stride=(2, 14, 14)).reshape(x.shape[0], -1)


for image in ("camera_1280x720.jpg", "photo_480x640.png"):
    src = Image.open(os.path.join(ROOT, "images", "e2e", image)).convert("RGB")
    w, h = src.size
    th, tw = make_frames.smart_resize_qwen(h, w, 28, pre["min_pixels"], pre["max_pixels"])
    pil = np.asarray(src.resize((tw, th), Image.Resampling.BICUBIC, reducing_gap=None))
    t = torch.from_numpy(np.array(src)).permute(2, 0, 1)[None].float()
    tor = F.interpolate(t, size=(th, tw), mode="bicubic", antialias=True, align_corners=False)
    tor = tor.clamp(0, 255).round().to(torch.uint8)[0].permute(1, 2, 0).numpy()
    d = np.abs(pil.astype(int) - tor.astype(int))
    ep, et = embed(pil), embed(tor)
    rel = float((ep - et).abs().max() / ep.abs().max())
    print(f"{image} -> {th}x{tw} bicubic: pixels max |pil - torch| {d.max()} levels, {100 * (d > 0).mean():.1f}% of "
          f"bytes differ, mean {d.mean():.3f}; embeddings max |diff| = {rel:.2e} of max |ref|")
