#!/usr/bin/env bash
# Installs dependencies, builds everything and runs the whole test suite with ctest.
# This is the command .ci/run runs; it exits non-zero on any failure.
#   scripts/test.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

bash scripts/install-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure --no-tests=error
