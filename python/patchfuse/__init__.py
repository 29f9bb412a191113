"""patchfuse: Hugging Face patch embeddings as GEMMs, from Python.

Host side (build pipelines): convert() a checkpoint to a .pfb, inspect() it, export() it back,
load_image() a file as the runtime decodes it. Device side: Model (a .pfb, from a path or a
buffer without a copy) and Session (one module on one backend and precision): run() on
pixel_values, run_image() / run_planes() / run_video() on camera frames, window_index(),
block_inputs(). Arrays are read in place and must be C-contiguous of the exact dtype; outputs are
new NumPy arrays, or the caller's out= array. Failures raise patchfuse.Error (a RuntimeError)
with the C API's one-line message and .status.
"""
import numpy as _np

# pybind11 2.10 (Debian 12) reads NumPy 2's array descriptor wrongly (pybind11 #5009): refuse to
# compute with wrong strides rather than import.
if int(_np.__version__.split(".")[0]) >= 2:
    raise ImportError(f"patchfuse was built with pybind11 2.10, which does not support NumPy {_np.__version__}; "
                      "use NumPy 1.x (Debian 12's python3-numpy)")

from ._patchfuse import (Error, Model, Session, __version__, convert, export, inspect,  # noqa: E402,F401
                         load_image)

__all__ = ["Error", "Model", "Session", "convert", "export", "inspect", "load_image", "__version__"]
