#!/usr/bin/python3
"""Pillow's Image.resize on the camera issue's sizes and SigLIP's (1 thread: Pillow does not thread a resize),
BICUBIC, reducing_gap=None as transformers calls it; prints the median of --runs in ms. Run
alternately with patchfuse-overhead-bench's Resize/pil benchmarks (tests/bench/resize_vs_pillow.sh)."""
import statistics
import sys
import time

import numpy as np
from PIL import Image

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
rng = np.random.default_rng(11)
SIZES = (((1280, 720), (1288, 728)), ((1920, 1080), (1316, 728)),  # Qwen2-VL's smart resize
         ((1280, 720), (384, 384)), ((1920, 1080), (384, 384)), ((1920, 1080), (224, 224)),  # SigLIP's
         ((3840, 2160), (224, 224)), ((4032, 3024), (224, 224)), ((3024, 4032), (224, 224)))  # past 64 taps
for (w, h), (tw, th) in SIZES:
    img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")
    img.resize((tw, th), Image.Resampling.BICUBIC, reducing_gap=None)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        img.resize((tw, th), Image.Resampling.BICUBIC, reducing_gap=None)
        times.append((time.perf_counter() - t) * 1e3)
    print(f"Pillow {Image.__version__} resize {w}x{h}->{th}x{tw} bicubic: median {statistics.median(times):.2f} ms")
