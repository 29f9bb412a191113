"""Reads one tensor of a .safetensors file into NumPy (F32, F16 and BF16), for the example's reference."""
import json
import struct

import numpy as np


def read_tensor(path, name):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        entry = header[name]
        begin, end = entry["data_offsets"]
        f.seek(8 + n + begin)
        raw = f.read(end - begin)
    if entry["dtype"] == "BF16":
        values = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
    else:
        values = np.frombuffer(raw, {"F32": np.float32, "F16": np.float16}[entry["dtype"]]).astype(np.float32)
    return values.reshape(entry["shape"])
