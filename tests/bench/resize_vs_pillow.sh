#!/usr/bin/env bash
# The runtime's resize beside Pillow's, alternately, ROUNDS times (default 5), so both see the same
# machine noise: medians of each round, to compare round by round.
#   tests/bench/resize_vs_pillow.sh [ROUNDS]    (after a build: build/tests/bench/patchfuse-overhead-bench)
set -euo pipefail
cd "$(dirname "$0")/../.."
for ((i = 0; i < ${1:-5}; ++i)); do
  echo "--- round $i"
  build/tests/bench/patchfuse-overhead-bench --benchmark_filter='^Resize/' --benchmark_repetitions=5 \
      --benchmark_report_aggregates_only=true 2>/dev/null | grep median
  /usr/bin/python3 tests/bench/pillow_resize.py 20
done
