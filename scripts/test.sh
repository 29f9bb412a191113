#!/usr/bin/env bash
# Installs dependencies, builds and runs the whole test suite with ctest: natively, then for
# 64-bit and 32-bit ARM under qemu. This is what .ci/run runs; it exits non-zero on any failure.
#   scripts/test.sh            native + aarch64 + armhf
#   scripts/test.sh native     native only (the quick loop while developing)
# Build folders: build/, build-aarch64/, build-armhf/ (the ARM sysroots live inside them).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
case "$what" in all|native) ;; *) echo "usage: scripts/test.sh [all|native]" >&2; exit 2 ;; esac
jobs=$(nproc)

step() {  # step NAME COMMAND...: runs and reports how long it took
  local name=$1 start=$SECONDS
  shift
  echo "=== $name"
  "$@"
  echo "=== $name: $((SECONDS - start)) s"
}

if [[ $what == all ]]; then step "install dependencies" bash scripts/install-deps.sh arm; else step "install dependencies" bash scripts/install-deps.sh; fi
step "native: configure + build" bash -c "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j $jobs"
step "native: ctest" ctest --test-dir build -j "$jobs" --output-on-failure --no-tests=error
# The ISA matrix: the same suite with oneDNN capped to AVX2, so on an AVX-512/AMX machine both
# kernel families run (OneDnnIsa asserts from the session info which one did).
step "native: ctest, ONEDNN_MAX_CPU_ISA=AVX2" env ONEDNN_MAX_CPU_ISA=AVX2 ctest --test-dir build -j "$jobs" --output-on-failure --no-tests=error
[[ $what == all ]] || exit 0

# Cross builds: the host's flatc and the native patchfuse-convert do the host-side steps.
for target in aarch64-linux-gnu:arm64:build-aarch64 arm-linux-gnueabihf:armhf:build-armhf; do
  IFS=: read -r triple arch dir <<< "$target"
  step "$arch: sysroot" toolchains/make-sysroot.sh "$arch" "$dir/sysroot"
  step "$arch: configure + build" bash -c "cmake -S . -B $dir -DCMAKE_TOOLCHAIN_FILE=toolchains/$triple.cmake \
      -DPATCHFUSE_HOST_CONVERT=$PWD/build/converter/patchfuse-convert && cmake --build $dir -j $jobs"
  step "$arch: ctest under qemu" ctest --test-dir "$dir" -j "$jobs" --output-on-failure --no-tests=error
done
