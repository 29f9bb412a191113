#!/usr/bin/python3
"""The camera-to-embeddings steps done the way transformers does them, 1 thread, on a 1280x720
frame for Qwen2-VL (real geometry: Conv3d 3 -> 1280, kernel 2x14x14, f32): Pillow's resize to
smart_resize's 728x1288 (BICUBIC), the processor's rescale/normalize/patchify in NumPy
(tests/fixtures/frames/make_frames.py's copy of it), then PyTorch's nn.Conv3d on pixel_values.
Prints the median of each step over --runs; set beside `patchfuse-bench --image 720x1280
--threads 1` on a Qwen2-VL-shaped model (docs/performance.md)."""
import os
import statistics
import sys
import time

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "frames"))
import make_frames  # noqa: E402

torch.set_num_threads(1)
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
rng = np.random.default_rng(3)
image = Image.fromarray(rng.integers(0, 256, (720, 1280, 3), dtype=np.uint8), "RGB")
conv = torch.nn.Conv3d(3, 1280, (2, 14, 14), stride=(2, 14, 14), bias=False)
steps = {"pillow_resize": [], "numpy_preprocess": [], "torch_conv3d": []}
with torch.no_grad():
    for r in range(runs + 1):
        t0 = time.perf_counter()
        resized = np.asarray(image.resize((1288, 728), Image.Resampling.BICUBIC, reducing_gap=None))
        t1 = time.perf_counter()
        pv, _ = make_frames.pixel_values(resized[None], 14, make_frames.CLIP_MEAN, make_frames.CLIP_STD)
        t2 = time.perf_counter()
        conv(torch.from_numpy(pv).reshape(-1, 3, 2, 14, 14))
        t3 = time.perf_counter()
        if r:  # the first run warms up
            for k, v in zip(steps, (t1 - t0, t2 - t1, t3 - t2)):
                steps[k].append(v * 1e3)
med = {k: statistics.median(v) for k, v in steps.items()}
print("transformers-style pipeline, 1 thread, 1280x720 -> 728x1288 (4784 patches): " +
      ", ".join(f"{k} {v:.1f} ms" for k, v in med.items()) + f"; total {sum(med.values()):.1f} ms")
