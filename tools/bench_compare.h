// patchfuse-bench compare A.json B.json: two devices' (or builds') --json results side by side,
// row by row, as the ratio of B's p50 to A's with a noise band (each row's own p90/p50 spread).
#pragma once

namespace patchfuse {

// argv[1] is "compare"; returns the process's exit status (0, 1 on a file error, 2 on usage).
int bench_compare(int argc, char** argv);

}  // namespace patchfuse
