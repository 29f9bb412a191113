#!/usr/bin/env bash
# A mutation pass of our own (no C++ mutation tool is packaged in Debian 12): each one-line mutant
# of tests/mutants.txt is applied alone to a scratch copy of the tree, rebuilt incrementally and
# run against ctest; the script prints every mutant the suite misses and the kill rate. Minutes
# per mutant (a rebuild and the suite), so not part of CI.
#   scripts/mutants.sh [SCRATCH_DIR] [CTEST_REGEX]   # the regex narrows the tests run per mutant
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=${1:-/tmp/patchfuse-mutants}
regex=${2:-}
jobs=$(nproc)
mkdir -p "$scratch/src"
# The working tree as it is (committed or not), without build folders.
tar --exclude='./build*' --exclude='./.git' --exclude='./out' -cf - . | (cd "$scratch/src" && tar -xf -)
cmake -S "$scratch/src" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release > "$scratch/configure.log"
cmake --build "$scratch/build" -j "$jobs" > "$scratch/build.log" 2>&1 || { echo "mutants: the unmutated tree does not build ($scratch/build.log)" >&2; exit 1; }

total=0 killed=0
survivors=()
while IFS= read -r line; do
  [[ -z $line || $line == \#* ]] && continue
  # Fields are split on " @@ " and stripped, so TEXT and REPLACEMENT start at their first non-blank.
  IFS=$'\x1f' read -r file old new why < <(/usr/bin/python3 -c 'import sys; print("\x1f".join(f.strip() for f in sys.argv[1].split(" @@ ")))' "$line")
  # "[arm] ..." mutants change NEON code, which only ARM builds compile: this host cannot kill them
  # (they were seen killed by the suite under qemu, scripts/test.sh arm).
  if [[ $why == "[arm]"* && $(uname -m) != a* ]]; then
    echo "mutant -: skipped on $(uname -m): $file: $why"
    continue
  fi
  # "[amx] ..." mutants change what oneDNN's AMX bf16 matmul alone runs (K padding).
  if [[ $why == "[amx]"* ]] && ! grep -qw amx_bf16 /proc/cpuinfo; then
    echo "mutant -: skipped without AMX-BF16: $file: $why"
    continue
  fi
  # "[intel-bf16] ..." mutants change what auto computes a bf16 model in on Intel's AVX512-BF16
  # (an AMX host reaches it through the suite's AVX512_CORE_BF16 cap); AMD's runs bf16 anyway.
  if [[ $why == "[intel-bf16]"* ]] && ! { grep -qw avx512_bf16 /proc/cpuinfo && grep -q GenuineIntel /proc/cpuinfo; }; then
    echo "mutant -: skipped without Intel's AVX512-BF16: $file: $why"
    continue
  fi
  total=$((total + 1))
  target="$scratch/src/$file"
  count=$(/usr/bin/python3 -c 'import sys; print(open(sys.argv[1]).read().count(sys.argv[2]))' "$target" "$old")
  if [[ $count != 1 ]]; then
    echo "mutants: stale mutant ($count matches in $file): $why" >&2
    exit 1
  fi
  cp "$target" "$scratch/original"
  /usr/bin/python3 -c 'import sys; p, a, b = sys.argv[1:]; s = open(p).read(); open(p, "w").write(s.replace(a, b))' "$target" "$old" "$new"
  verdict=survived
  if ! cmake --build "$scratch/build" -j "$jobs" > "$scratch/mutant.log" 2>&1; then
    verdict="killed (does not build)"
  elif ! ctest --test-dir "$scratch/build" -j "$jobs" --no-tests=error ${regex:+-R "$regex"} --timeout 600 > "$scratch/ctest.log" 2>&1; then
    verdict="killed ($(grep -c '(Failed)\|(SEGFAULT)\|(Subprocess aborted)\|(Timeout)' "$scratch/ctest.log") tests failed)"
  fi
  cp "$scratch/original" "$target"
  [[ $verdict == survived ]] && survivors+=("$file: $why") || killed=$((killed + 1))
  echo "mutant $total: $verdict: $file: $why"
done < tests/mutants.txt
cmake --build "$scratch/build" -j "$jobs" > /dev/null  # leave the scratch build unmutated
echo "mutants: $killed of $total killed"
for s in "${survivors[@]}"; do echo "SURVIVED: $s"; done
((${#survivors[@]} == 0))
