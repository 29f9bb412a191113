#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing patchfuse need. Idempotent: packages
# already present are left alone, and `apt-get update` runs only when something is missing.
#   scripts/install-deps.sh            native build + tests
#   scripts/install-deps.sh arm        also the ARM cross compilers and qemu-user (ARM builds and tests)
#   scripts/install-deps.sh sanitize   also clang 14 with libFuzzer and the sanitizer runtimes
#   scripts/install-deps.sh fixtures   also PyTorch + NumPy, to regenerate tests/fixtures/golden
#   scripts/install-deps.sh cost       also llvm-mca (LLVM 14), for scripts/arm-cost.sh
# Several sets may be named at once: scripts/install-deps.sh arm sanitize
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  flatbuffers-compiler libflatbuffers-dev   # schema/*.fbs -> C++ header, runtime verifier
  nlohmann-json3-dev libcli11-dev           # converter only: config.json / safetensors headers, CLI
  libgtest-dev libgmock-dev libbenchmark-dev
  libyuv-dev                                # runtime: camera pixel formats (NV12, I420, YUYV, ...) -> RGB
  libxxhash-dev                             # runtime: the weights cache's content hash and checksum (XXH3)
  libjpeg62-turbo-dev libpng-dev            # patchfuse-run --image: JPEG and PNG decoded as Pillow decodes them
  libwebp-dev                               # patchfuse-run --image: WebP decoded as Pillow decodes it
  libstb-dev                                # patchfuse-run --image: PPM/PGM, BMP and GIF
  libdnnl-dev                               # x86-64 backend
  libxnnpack-dev libpthreadpool-dev libcpuinfo-dev   # ARM (and x86-64) backend
  libgemmlowp-dev                           # int8 backend (ARM; also built on x86-64)
  go-md2man                                 # man pages from docs/ (cmake/ManPages.cmake)
  pybind11-dev python3-dev python3-numpy python3-pytest   # the Python module (python/) and its tests
)
for set in "$@"; do
  case "$set" in
    arm) packages+=(g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user file lintian) ;;  # lintian: the .deb checks
    sanitize) packages+=(clang-14 libclang-rt-14-dev) ;;  # GCC's libasan/libubsan/libtsan come with g++
    fixtures) packages+=(python3-torch python3-numpy python3-pil) ;;
    cost) packages+=(llvm) ;;  # llvm-mca
    *) echo "usage: scripts/install-deps.sh [arm] [sanitize] [fixtures] [cost]" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
