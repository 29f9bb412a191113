#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang 14, AddressSanitizer and UBSan, and runs
# each for SECONDS (default 60), as many at a time as there are cores, on a corpus seeded from
# the committed fixtures, seeds/ and regressions/. A crash or leak stops that fuzzer and this
# script exits 1; the input is left in build-fuzz/findings/<target>/ (commit it to
# tests/fuzz/regressions/<target>/, where ctest replays it in the native and ARM builds).
#   scripts/fuzz.sh [SECONDS]         e.g. scripts/fuzz.sh 3600 for an hour each
# The corpus grows in build-fuzz/corpus/<target>/ across runs.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
dir=build-fuzz

# -g1: line tables are all a report needs, and full debug information made the build slower
# (inspect.cc 16.9 s against 11.9 s); -O2 keeps the executions per second.
CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG' \
    -DPATCHFUSE_BUILD_TESTS=OFF -DPATCHFUSE_BUILD_FUZZERS=ON -DPATCHFUSE_SANITIZE=address,undefined > /dev/null
targets=$(cut -d'|' -f1 "$dir/tests/fuzz/fuzzers.txt" | tr '\n' ' ')
cmake --build "$dir" -j "$(nproc)" --target $targets > "$dir/build.log" 2>&1 || { tail -n 50 "$dir/build.log"; exit 1; }

# One target on its corpus; its report is printed when it ends. The targets run nproc at a time:
# each is single-threaded.
fuzz_one() {
  local target=$1 dict=$2 seeds=$3
  local corpus=$dir/corpus/$target findings=$dir/findings/$target
  mkdir -p "$corpus" "$findings"
  # Seeds keep their folder in their name: the fixtures are all called model.safetensors etc.
  for s in $seeds; do
    [[ -e $s ]] || continue
    find "$s" -maxdepth 1 -type f | while read -r f; do cp -n "$f" "$corpus/$(basename "$(dirname "$f")")_$(basename "$f")"; done
  done
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/")
  [[ -n $dict ]] && args+=(-dict="$dict")
  local files status=0
  files=$(ls "$corpus" | wc -l)
  "$dir/tests/fuzz/$target" "${args[@]}" "$corpus" > "$dir/$target.log" 2>&1 || status=1
  {
    echo "=== $target: ${seconds} s, corpus $files files"
    if ((status)); then
      echo "$target: FAILED, see $dir/$target.log and $findings/"
      tail -n 40 "$dir/$target.log"
    fi
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$dir/$target.log" | sed "s/^/$target: /"
  } > "$dir/$target.report"
  return $status
}

status=0
pids=()
while IFS='|' read -r target dict seeds; do
  if ((${#pids[@]} >= $(nproc))); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
  fuzz_one "$target" "$dict" "$seeds" &
  pids+=($!)
done < "$dir/tests/fuzz/fuzzers.txt"
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
cut -d'|' -f1 "$dir/tests/fuzz/fuzzers.txt" | while read -r target; do cat "$dir/$target.report"; done
exit $status
