#!/usr/bin/env bash
# Installs dependencies, builds and runs the whole test suite with ctest. This is what .ci/run
# runs; it exits non-zero on any failure.
#   scripts/test.sh            everything below, in this order (CI)
#   scripts/test.sh native     native build; the suite as the CPU is, then with oneDNN capped to AVX2
#   scripts/test.sh sanitize   the suite under ASan+UBSan; the concurrency tests under TSan
#   scripts/test.sh fuzz [S]   every libFuzzer target for S seconds, one a core (default 20: nine targets in
#                              CI's time budget; the corpus starts from the seeds and committed regressions)
#   scripts/test.sh arm        aarch64 and armhf cross builds, the suite under qemu (needs native)
#   scripts/test.sh packages   .debs, lintian, and examples/embed against installs and packages
#                              (needs the native and ARM build folders: scripts/packages.sh)
# Build folders: build/, build-asan/, build-tsan/, build-fuzz/, build-aarch64/, build-armhf/.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
case "$what" in all|native|sanitize|fuzz|arm|packages) ;; *) echo "usage: scripts/test.sh [all|native|sanitize|fuzz [SECONDS]|arm|packages]" >&2; exit 2 ;; esac
jobs=$(nproc)

step() {  # step NAME COMMAND...: runs and reports how long it took
  local name=$1 start=$SECONDS
  shift
  echo "=== $name"
  "$@"
  echo "=== $name: $((SECONDS - start)) s"
}
wants() { [[ $what == all || $what == "$1" ]]; }

case "$what" in
  all) step "install dependencies" bash scripts/install-deps.sh arm sanitize ;;
  arm|packages) step "install dependencies" bash scripts/install-deps.sh arm ;;
  sanitize|fuzz) step "install dependencies" bash scripts/install-deps.sh sanitize ;;
  *) step "install dependencies" bash scripts/install-deps.sh ;;
esac

if wants native || [[ $what == arm ]]; then
  step "native: configure + build" bash -c "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j $jobs"
fi
if wants native; then
  step "native: ctest" ctest --test-dir build -j "$jobs" --output-on-failure --no-tests=error
  # The ISA matrix: the same suite with oneDNN capped to AVX2, so on an AVX-512/AMX machine both
  # kernel families run (OneDnnIsa asserts from the session info which one did).
  step "native: ctest, ONEDNN_MAX_CPU_ISA=AVX2" env ONEDNN_MAX_CPU_ISA=AVX2 ctest --test-dir build -j "$jobs" --output-on-failure --no-tests=error
fi

if wants sanitize; then
  # Every report aborts the test (-fno-sanitize-recover); the CLI tests' tools are sanitized too.
  # -O1 -g1: the optimization ASan is made for and line tables for its reports, not full debug
  # information; the benchmarks are not built (nothing runs them there).
  step "asan+ubsan: configure + build" bash -c "cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG' -DPATCHFUSE_BUILD_BENCHMARKS=OFF \
      -DPATCHFUSE_SANITIZE=address,undefined && cmake --build build-asan -j $jobs"
  step "asan+ubsan: ctest" env ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir build-asan -j "$jobs" --output-on-failure --no-tests=error
  # oneDNN is left out: Debian's build threads with OpenMP, which TSan cannot see into, so its
  # reports would be about libgomp, not us. The runtime's own sharing (models, sessions, errors)
  # is covered with the reference and XNNPACK backends (pthreadpool included).
  step "tsan: configure + build" bash -c "cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG' -DPATCHFUSE_SANITIZE=thread -DPATCHFUSE_WITH_ONEDNN=OFF && cmake --build build-tsan -j $jobs --target runtime_threads_test"
  # Read the dynamic section instead of piping ldd into grep -q: under pipefail, grep exiting at
  # the first match can kill ldd with SIGPIPE and fail the check on a binary that is fine.
  needed=$(readelf -d build-tsan/tests/runtime_threads_test)
  [[ $needed == *libtsan* ]] || { echo "tsan: runtime_threads_test is not linked with libtsan; its NEEDED entries:" >&2; echo "$needed" >&2; exit 1; }
  step "tsan: runtime_threads_test" env TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/tests/runtime_threads_test
fi

if wants fuzz; then
  step "fuzz: every target" bash scripts/fuzz.sh "${2:-20}"
fi

if wants arm; then
  # Cross builds: the host's flatc and the native patchfuse-convert do the host-side steps.
  for target in aarch64-linux-gnu:arm64:build-aarch64 arm-linux-gnueabihf:armhf:build-armhf; do
    IFS=: read -r triple arch dir <<< "$target"
    step "$arch: sysroot" toolchains/make-sysroot.sh "$arch" "$dir/sysroot"
    step "$arch: configure + build" bash -c "cmake -S . -B $dir -DCMAKE_TOOLCHAIN_FILE=toolchains/$triple.cmake \
        -DPATCHFUSE_HOST_CONVERT=$PWD/build/converter/patchfuse-convert && cmake --build $dir -j $jobs"
    step "$arch: ctest under qemu" ctest --test-dir "$dir" -j "$jobs" --output-on-failure --no-tests=error
  done
fi

if wants packages; then
  step "packages and consumers" bash scripts/packages.sh out/packages
fi
