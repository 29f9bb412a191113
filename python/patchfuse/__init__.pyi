# Type stubs for the patchfuse Python module (python/patchfuse_module.cc).
from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str
Grid = Tuple[int, int, int]
StrPath = Union[str, "PathLike[str]"]

class Error(RuntimeError):
    """A runtime or converter failure: the C API's one-line message."""
    status: str  # "invalid_argument", "invalid_model", "unsupported", "io_error", "out_of_memory", "internal"

def convert(src: str, out: str, *, fusion: Sequence[str] = ..., dtype: str = "keep", config: str = "",
            preprocessor: str = "", video_preprocessor: str = "", resize: str = "", video_resize: str = "",
            geometry: str = "", strict: bool = False) -> Dict[str, Any]:
    """Converts a Hugging Face checkpoint to a .pfb; returns {"output", "written", "notes", "gaps"}."""
def inspect(path: str) -> Dict[str, Any]:
    """What `patchfuse-convert inspect --json` prints, as Python objects."""
def export(pfb: str, out: str) -> List[str]:
    """Writes the original-layout safetensors back; returns the tensors written."""
def load_image(path: str, *, exif: bool = True, max_pixels: int = ...) -> npt.NDArray[np.uint8]:
    """The H x W x 3 uint8 RGB pixels the runtime decodes, as Pillow decodes them."""

class Model:
    """A .pfb model, opened zero-copy from a path or a bytes-like buffer (kept alive)."""
    def __init__(self, source: Union[StrPath, bytes, bytearray, memoryview, npt.NDArray[np.uint8]]) -> None: ...
    @property
    def module_count(self) -> int: ...
    @property
    def modules(self) -> List[Dict[str, Any]]: ...

class Session:
    """One module of a model on one backend, precision and output stage."""
    def __init__(self, model: Model, module: Union[int, str] = 0, *, backend: str = "auto", precision: str = "auto",
                 threads: int = 1, output_stage: str = "patches", path: str = "fused",
                 weights_cache: Optional[StrPath] = None) -> None: ...
    @property
    def info(self) -> Dict[str, Any]: ...
    @property
    def module(self) -> Dict[str, Any]: ...
    @property
    def last_profile(self) -> Dict[str, float]: ...
    @property
    def block_schedule(self) -> Dict[str, Any]: ...
    def prepare(self, *, grid: Optional[Grid] = None, image: Optional[Tuple[int, int]] = None, frames: int = 1,
                format: str = "rgb") -> None: ...
    def run(self, pixel_values: npt.NDArray[np.float32], *, grid: Optional[Grid] = None,
            out: Optional[npt.NDArray[np.float32]] = None) -> npt.NDArray[np.float32]: ...
    def run_image(self, image: npt.NDArray[np.uint8], *, format: str = "",
                  out: Optional[npt.NDArray[np.float32]] = None) -> Tuple[npt.NDArray[np.float32], Grid]: ...
    def run_planes(self, format: str, planes: Sequence[npt.NDArray[np.uint8]], width: int, height: int, *,
                   row_strides: Sequence[int] = ..., chroma_pixel_stride: int = 1, matrix: str = "bt601_full",
                   out: Optional[npt.NDArray[np.float32]] = None) -> Tuple[npt.NDArray[np.float32], Grid]: ...
    def run_video(self, frames: Sequence[npt.NDArray[np.uint8]], *, format: str = "",
                  out: Optional[npt.NDArray[np.float32]] = None) -> Tuple[npt.NDArray[np.float32], Grid]: ...
    def window_index(self, grid: Grid) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
    def block_inputs(self, grid: Grid) -> Dict[str, npt.NDArray[Any]]: ...
