"""The Python module against the CLI tools on the same inputs (bit for bit with the same backend and
threads), Pillow's decoded pixels (the committed fixtures), PyTorch's block inputs (the committed
fixtures), and its own contracts: no silent copies, out=, errors, lifetime, threads, leaks.
Run by ctest (Python.pytest) with PYTHONPATH at the build tree's python/ and the tools' paths in
the environment."""
import json
import os
import subprocess
import threading
import time

import numpy as np
import pytest

import patchfuse

RUN = os.environ["PATCHFUSE_RUN_BIN"]
CONVERT = os.environ["PATCHFUSE_CONVERT_BIN"]
MAKE_SAMPLE = os.environ["PATCHFUSE_MAKE_SAMPLE_BIN"]
FIXTURES = os.environ["PATCHFUSE_FIXTURES"]
PHOTO = os.path.join(FIXTURES, "images", "e2e", "photo_480x640.png")


def tool(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """A Qwen2-VL-shaped checkpoint (random weights, its preprocessor config) and its .pfb from the CLI."""
    d = tmp_path_factory.mktemp("sample")
    tool(MAKE_SAMPLE, str(d / "ckpt"), "--model-type", "qwen2_vl", "--embed-dim", "32", "--patches", "24")
    tool(CONVERT, "convert", str(d / "ckpt"), "-o", str(d / "cli.pfb"))
    return d


def test_version_is_the_librarys():
    assert patchfuse.__version__ == tool(RUN, "--version").split()[-1]


def test_convert_inspect_export_match_the_cli(sample, tmp_path):
    report = patchfuse.convert(str(sample / "ckpt"), str(tmp_path / "py.pfb"))
    assert report["output"] == str(tmp_path / "py.pfb")
    assert report["written"] and report["written"][0].startswith("visual.patch_embed: fused_linear")
    assert (tmp_path / "py.pfb").read_bytes() == (sample / "cli.pfb").read_bytes()
    assert patchfuse.inspect(str(sample / "cli.pfb")) == json.loads(tool(CONVERT, "inspect", str(sample / "cli.pfb"), "--json"))
    patchfuse.export(str(tmp_path / "py.pfb"), str(tmp_path / "py.safetensors"))
    tool(CONVERT, "export", str(sample / "cli.pfb"), "-o", str(tmp_path / "cli.safetensors"))
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "cli.safetensors").read_bytes()


def test_convert_errors_keep_their_message_and_write_nothing(sample, tmp_path):
    with pytest.raises(patchfuse.Error) as e:
        patchfuse.convert(str(tmp_path / "missing"), str(tmp_path / "x.pfb"))
    assert e.value.status == "invalid_argument" and "missing: not a folder, a .safetensors file" in str(e.value)
    assert isinstance(e.value, RuntimeError)
    assert not (tmp_path / "x.pfb").exists()
    with pytest.raises(ValueError, match="dtype 'f64'"):
        patchfuse.convert(str(sample / "ckpt"), str(tmp_path / "x.pfb"), dtype="f64")
    with pytest.raises(patchfuse.Error, match="not a patchfuse model"):
        patchfuse.inspect(str(sample / "ckpt" / "config.json"))


@pytest.mark.parametrize("backend", ["reference", "auto"])
def test_run_matches_the_cli_bit_for_bit(sample, tmp_path, backend):
    x = np.load(sample / "ckpt" / "pixel_values.npy")
    out = tmp_path / "y.npy"
    tool(RUN, str(sample / "cli.pfb"), "--input", str(sample / "ckpt" / "pixel_values.npy"), "--output", str(out),
         "--backend", backend)
    s = patchfuse.Session(patchfuse.Model(str(sample / "cli.pfb")), backend=backend)
    y = s.run(x)
    assert y.dtype == np.float32 and y.shape == (24, 32)
    assert np.array_equal(y, np.load(out))


def test_run_image_matches_the_cli_and_load_image_matches_pillow(sample, tmp_path):
    image = patchfuse.load_image(PHOTO)
    assert image.dtype == np.uint8 and image.shape == (480, 640, 3)
    for name in ["png_rgba.png", "jpeg_420.jpg", "exif_6.jpg"]:  # Pillow's pixels, committed
        path = os.path.join(FIXTURES, "images", "decode", name)
        assert np.array_equal(patchfuse.load_image(path), np.load(path + ".npy")), name
    out = tmp_path / "y.npy"
    tool(RUN, str(sample / "cli.pfb"), "--image", PHOTO, "--output", str(out), "--backend", "reference")
    s = patchfuse.Session(patchfuse.Model(str(sample / "cli.pfb")), backend="reference")
    y, grid = s.run_image(image)
    assert np.array_equal(y, np.load(out))
    assert grid[1] * grid[2] == y.shape[0]
    # A crop of a larger frame (strided rows) is read in place, as the C API takes it.
    wide = np.zeros((480, 700, 3), np.uint8)
    wide[:, 30:670] = image
    y2, _ = s.run_image(wide[:, 30:670])
    assert np.array_equal(y2, y)


def test_camera_planes_match_the_cli(sample, tmp_path):
    rng = np.random.default_rng(5)
    w, h = 96, 64
    nv12 = rng.integers(0, 256, w * h * 3 // 2, dtype=np.uint8)
    (tmp_path / "f.nv12").write_bytes(nv12.tobytes())
    out = tmp_path / "y.npy"
    tool(RUN, str(sample / "cli.pfb"), "--yuv", str(tmp_path / "f.nv12"), "--format", "nv12", "--size", f"{w}x{h}",
         "--output", str(out), "--backend", "reference")
    s = patchfuse.Session(patchfuse.Model(str(sample / "cli.pfb")), backend="reference")
    y_plane, uv_plane = nv12[: w * h].reshape(h, w), nv12[w * h:].reshape(h // 2, w)
    y, _ = s.run_planes("nv12", [y_plane, uv_plane], w, h)
    assert np.array_equal(y, np.load(out))
    with pytest.raises(ValueError, match="plane 1 of a 96x64 nv12 image spans"):
        s.run_planes("nv12", [y_plane, uv_plane[:10]], w, h)
    with pytest.raises(ValueError, match="has 2 plane"):
        s.run_planes("nv12", [y_plane], w, h)
    # Signed numbers are shown as given, not as the 0 they would clamp to.
    with pytest.raises(patchfuse.Error, match="row stride -96 of plane 0 is negative"):
        s.run_planes("nv12", [y_plane[::-1], uv_plane], w, h)
    with pytest.raises(patchfuse.Error, match="image size -96x64"):
        s.run_planes("nv12", [y_plane, uv_plane], -w, h)


def test_no_silent_copies_and_out(sample):
    s = patchfuse.Session(patchfuse.Model(str(sample / "cli.pfb")), backend="reference")
    x = np.load(sample / "ckpt" / "pixel_values.npy")
    with pytest.raises(TypeError, match="dtype float64 must be float32"):
        s.run(x.astype(np.float64))
    with pytest.raises(ValueError, match="not C-contiguous"):
        s.run(np.asfortranarray(x))
    with pytest.raises(ValueError, match=r"must be \(N, 1176\)"):
        s.run(x[:, :100].copy())
    out = np.full((24, 32), np.nan, np.float32)
    assert s.run(x, out=out) is out
    assert np.array_equal(out, s.run(x))
    with pytest.raises(ValueError, match=r"out: shape \(24, 31\) must be \(24, 32\)"):
        s.run(x, out=np.zeros((24, 31), np.float32))
    with pytest.raises(TypeError):
        s.run(x, out=np.zeros((24, 32), np.float64))
    with pytest.raises(ValueError, match="backend 'gpu' is not one of"):
        patchfuse.Session(patchfuse.Model(str(sample / "cli.pfb")), backend="gpu")
    with pytest.raises(patchfuse.Error) as e:
        patchfuse.Session(patchfuse.Model(str(sample / "cli.pfb")), precision="int8").run(x)
    assert e.value.status == "unsupported"
    # Arguments of the wrong type name themselves (pybind11's cast error named neither).
    with pytest.raises(TypeError, match="module must be an index >= 0 or a module path, got -1"):
        patchfuse.Session(patchfuse.Model(str(sample / "cli.pfb")), -1)
    with pytest.raises(TypeError, match=r"grid must be \(t, h, w\) of ints, got 'abc'"):
        s.prepare(grid="abc")
    with pytest.raises(TypeError, match=r"grid must be \(t, h, w\) of ints, got \(1, 2, 2.5\)"):
        s.run(x, grid=(1, 2, 2.5))
    with pytest.raises(TypeError, match=r"image must be \(height, width\) of ints, got 'x'"):
        s.prepare(image="x")


def test_model_from_a_buffer_and_lifetime(sample):
    data = (sample / "cli.pfb").read_bytes()
    x = np.load(sample / "ckpt" / "pixel_values.npy")
    want = patchfuse.Session(patchfuse.Model(str(sample / "cli.pfb")), backend="reference").run(x)
    model = patchfuse.Model(data)
    s = patchfuse.Session(model, "visual.patch_embed", backend="reference")
    del model, data  # the session keeps the model, and the model its buffer
    assert np.array_equal(s.run(x), want)
    assert s.module["embed_dim"] == 32 and s.info["backend"] == "reference"
    with pytest.raises(patchfuse.Error) as e:
        patchfuse.Model(b"\0" * 64)
    assert e.value.status == "invalid_model"


def test_block_inputs_and_window_index_match_pytorch(tmp_path):
    fixture = os.path.join(FIXTURES, "block_inputs", "qwen2_5_vl")
    patchfuse.convert(fixture, str(tmp_path / "m.pfb"))
    s = patchfuse.Session(patchfuse.Model(str(tmp_path / "m.pfb")), backend="reference")
    got = s.block_inputs((1, 12, 20))
    for name, value in got.items():
        want = np.load(os.path.join(fixture, f"uneven.{name}.npy"))
        assert value.dtype == want.dtype and value.shape == want.shape, name
        if value.dtype == np.float32:
            assert np.max(np.abs(value - want)) <= 1e-5, name  # the block inputs' bound for cos/sin
        else:
            assert np.array_equal(value, want), name
    window, reverse, cu = s.window_index((1, 12, 20))
    assert np.array_equal(window, got["window_index"]) and np.array_equal(reverse, got["reverse_indices"])
    assert np.array_equal(cu, got["cu_window_seqlens"])
    assert s.block_schedule["depth"] == 4


def test_two_sessions_run_in_parallel_and_one_session_serializes(sample):
    """The GIL is released during a run: while another thread runs a long call, this thread keeps
    running Python (its largest pause stays well below the call's length). One session used from
    two threads at once gives the same outputs as one thread."""
    model = patchfuse.Model(str(sample / "cli.pfb"))
    image = np.random.default_rng(1).integers(0, 256, (2000, 2000, 3), dtype=np.uint8)
    worker = patchfuse.Session(model, backend="reference")
    for _ in range(3):  # a shared machine may stall this thread once; three tries
        go, done, took = threading.Event(), threading.Event(), []

        def long_call():
            go.wait()  # this thread is already timing its own loop when the call starts
            t0 = time.perf_counter()
            worker.run_image(image)
            took.append(time.perf_counter() - t0)
            done.set()

        t = threading.Thread(target=long_call)
        t.start()
        last, longest, laps = time.perf_counter(), 0.0, 0
        go.set()
        while not done.is_set():
            now = time.perf_counter()
            longest, last, laps = max(longest, now - last), now, laps + 1
        t.join()
        if longest < took[0] / 2:
            break
    assert laps > 0 and took[0] > 0.005, "the call must be long enough to see a pause"
    assert longest < took[0] / 2, f"this thread paused {longest:.3f} s during a {took[0]:.3f} s run"

    shared = patchfuse.Session(model, backend="reference")
    x = np.load(sample / "ckpt" / "pixel_values.npy")
    want = shared.run(x)
    results = [None] * 4

    def use(i):
        results[i] = [shared.run(x) for _ in range(20)]

    threads = [threading.Thread(target=use, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(y, want) for r in results for y in r)


def test_thousands_of_calls_do_not_grow_memory(sample):
    s = patchfuse.Session(patchfuse.Model(str(sample / "cli.pfb")), backend="reference")
    x = np.load(sample / "ckpt" / "pixel_values.npy")[:1]
    out = np.zeros((1, 32), np.float32)

    def rss_kib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

    for _ in range(500):
        s.run(x)
    before = rss_kib()
    for i in range(5000):
        s.run(x, out=out) if i % 2 else s.run(x)
        try:
            s.run(x.astype(np.float64))
        except TypeError:
            pass
    grown = rss_kib() - before
    assert grown < 2048, f"resident memory grew by {grown} KiB over 5000 calls and 5000 refusals"
