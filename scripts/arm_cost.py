#!/usr/bin/env python3
"""Estimated ARM cycles of the frames path's own loops, for scripts/arm-cost.sh.

Reads a qemu-user log of one patchfuse-run (`-d in_asm,exec,nochain`: every translated block's
instructions once, and one line per block executed) and the guest loader's LD_DEBUG=files lines
(where each library was mapped). Each executed block is attributed to the function of
libpatchfuse that holds it (nm), and the functions to the stages of the frames path; blocks in
libyuv (its YUV -> RGBA rows) count as conversion. llvm-mca
gives each block's cycles per execution on a core (steady state: the block repeated, as a loop
body is); the estimate is the sum over blocks of executions x cycles. A static model: no cache
misses, no branch mispredictions, no cost between blocks.

  arm_cost.py LOG LD_DEBUG_FILE LIBPATCHFUSE NM TRIPLE CPU[,CPU...]        the frames path's stages
  arm_cost.py --gemm LOG LD_DEBUG_FILE LIBPATCHFUSE NM TRIPLE CPU[,CPU...] LIBDIRS   the GEMM: every block in
      XNNPACK and pthreadpool, and libpatchfuse's gemmlowp and backend functions (setup included:
      arm-cost.sh takes the difference of two runs that differ only in rows)
  arm_cost.py --peak TRIPLE CPU INSTRUCTION ATTRS   cycles per instruction of a stream of
      independent INSTRUCTIONs (the core's peak by the same model)
  arm_cost.py --loop LIBRARY OBJDUMP FUNCTION TRIPLE CPU MNEMONIC ATTRS   a kernel not run here,
      priced from the library's own instructions: the loop in FUNCTION (disassembled) densest in
      MNEMONIC instructions, its cycles per iteration and its MNEMONIC count
Each prints one JSON object.
"""
import bisect
import collections
import json
import os
import re
import subprocess
import sys

# The frames path's stages, by the demangled name of the function a block is in (first match).
STAGES = [
    ("gather", re.compile(r"gather|emit_rows|deinterleave|NeonRow|PortableRow|Avx2Row")),
    ("resize", re.compile(r"Resizer::run|pil_horizontal|horizontal_blocks|wide_blocks|PairsLane|DotLane|pil_vertical|vertical_unrolled|vertical_tap|round_narrow8|fold_halves|fold_digits|lookup16|add_pairs|clip8")),
    # split<N>: the plane splits' shared loop (frames/kernels/planes_*.cc), where not inlined.
    ("conversion", re.compile(r"split_neon|split_rgb|split_rgba|split_portable|split<|planes_row|rgb_row|rgba_row")),
]
# The GEMM (--gemm): the libraries that compute it and libpatchfuse's functions that drive it.
GEMM_LIBRARIES = ("libXNNPACK.so.0", "libpthreadpool.so.0")
GEMM_FUNCTIONS = re.compile(r"gemmlowp|Gemmlowp|Xnnpack|xnnpack|sdot_")
# One-time work a session does at creation or on a new size (the resize's coefficients, Pillow's
# filters among them, and tables), not per frame: neither priced nor held against the guard below.
SETUP = re.compile(r"Resizer::create|build_tap_tables|build_wide_tables|pil_axis|_filter\b")
# Branches and address computations, whose absolute targets qemu prints: a label stands in for them.
_CONDITIONS = "eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al"
TARGETED = re.compile(rf"^(b|bl|blx|b\.({_CONDITIONS})|b({_CONDITIONS})|cbn?z|tbn?z|adrp?)(\.[nw])?\s")


def read_log(path):
    """Executions per block start address, and each block's instruction texts."""
    counts = collections.Counter()
    blocks = {}
    current, start = None, None
    with open(path, errors="replace") as f:
        for line in f:
            c = line[:1]
            if c == "T" and line.startswith("Trace "):
                counts[int(line[line.index("[") + 1:].split("/")[1], 16)] += 1
            elif c == "I" and line.startswith("IN:"):
                current, start = [], None
            elif current is not None:
                if c == "0":
                    # "0xADDR:  HEX[ HEX]  mnemonic operands": two spaces end the encoding
                    # (a 32-bit Thumb instruction is printed as two halfwords).
                    addr, rest = line.split(":", 1)
                    parts = rest.strip().split("  ", 1)
                    if start is None:
                        start = int(addr, 16)
                    current.append(parts[1].strip() if len(parts) > 1 else "")
                else:
                    if start is not None and start not in blocks:
                        blocks[start] = current
                    current = None
    return counts, blocks


def library_map(ld_debug, name):
    """Where the guest's loader mapped a library: (base, size)."""
    lines = open(ld_debug, errors="replace").read().splitlines()
    for i, line in enumerate(lines):
        if f"file={name} [0];  generating link map" in line:
            m = re.search(r"base: (0x[0-9a-f]+)\s+size: (0x[0-9a-f]+)", lines[i + 1])
            return int(m.group(1), 16), int(m.group(2), 16)
    sys.exit(f"arm_cost.py: {ld_debug}: no link map for {name}")


def functions(nm, library):
    out = subprocess.run([nm, "-C", "--defined-only", "-S", library], check=True, capture_output=True, text=True).stdout
    table = []
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[2] in "tTwW":
            table.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    table.sort()
    return table


def exported(nm, name, libdirs):
    """A lookup from an offset in a library (found in `libdirs`) to the exported function holding it."""
    path = next((f"{d}/{name}" for d in libdirs if os.path.exists(f"{d}/{name}")), None)
    if path is None:
        sys.exit(f"arm_cost.py: {name} is in none of {':'.join(libdirs)}")
    out = subprocess.run([nm, "-D", "--defined-only", "-S", path], check=True, capture_output=True, text=True).stdout
    table = sorted((int(p[0], 16), int(p[1], 16), p[3]) for p in (line.split() for line in out.splitlines())
                   if len(p) == 4 and p[2] in "tTwW")
    starts = [t[0] for t in table]

    def lookup(offset):
        i = bisect.bisect_right(starts, offset) - 1
        return table[i][2] if i >= 0 and offset < table[i][0] + table[i][1] else None
    return lookup


def short_name(name):
    """A demangled name without its arguments, template arguments, return type or the anonymous namespace."""
    name = name.replace("(anonymous namespace)::", "")
    while re.search(r"<[^<>]*>", name):
        name = re.sub(r"<[^<>]*>", "", name)
    return re.sub(r"\(.*", "", name).split(" ")[-1]


def stage_of(name):
    for stage, pattern in STAGES:
        if pattern.search(name):
            return stage
    return None


def mca_source(insns):
    """The block as llvm-mca input: branch targets (absolute addresses in qemu's text) become a label."""
    lines = []
    for text in insns:
        if TARGETED.match(text + " "):
            text = re.sub(r"#0x[0-9a-f]+$", ".Ltarget", text)
        lines.append(text)
    return lines


def cycles_per_block(blocks, triple, cpu, comment):
    """llvm-mca's cycles per execution of each block, one run for all (a region per block)."""
    src = [".Ltarget:"]
    for start, insns in blocks.items():
        src.append(f"{comment} LLVM-MCA-BEGIN b{start:x}")
        src.extend(mca_source(insns))
        src.append(f"{comment} LLVM-MCA-END")
    attrs = ["-mattr=+neon"] if triple.startswith(("arm", "thumb")) else []
    r = subprocess.run(["llvm-mca", f"-mtriple={triple}", f"-mcpu={cpu}", "-iterations=100", "-all-stats=false",
                        "-instruction-info=false", "-resource-pressure=false"] + attrs,
                       input="\n".join(src) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"arm_cost.py: llvm-mca -mcpu={cpu} failed:\n{r.stderr[:2000]}")
    cycles = {}
    for m in re.finditer(r"Code Region - b([0-9a-f]+)\s+Iterations:\s+(\d+)\s+Instructions:\s+\d+\s+Total Cycles:\s+(\d+)",
                         r.stdout):
        cycles[int(m.group(1), 16)] = int(m.group(3)) / int(m.group(2))
    return cycles


def peak(triple, cpu, instructions, attrs):
    """Cycles per instruction of 32 independent copies of the fastest of `instructions` (forms
    separated by "|"; `{d}` is the destination register number, the sources are shared, so only
    throughput limits it)."""
    return min(stream_cycles(triple, cpu, form, attrs) for form in instructions.split("|"))


def stream_cycles(triple, cpu, instruction, attrs):
    # Destinations above the sources: AArch32 q8-q15, AArch64 v16-v31.
    registers = [f"{d}" for d in (range(8, 16) if triple.startswith(("arm", "thumb")) else range(16, 32))]
    src = [instruction.format(d=registers[d % len(registers)]) for d in range(32)]
    r = subprocess.run(["llvm-mca", f"-mtriple={triple}", f"-mcpu={cpu}", "-iterations=200", f"-mattr={attrs}"],
                       input="\n".join(src) + "\n", capture_output=True, text=True)
    m = re.search(r"Instructions:\s+(\d+)\s+Total Cycles:\s+(\d+)", r.stdout)
    if r.returncode != 0 or not m:
        sys.exit(f"arm_cost.py: llvm-mca -mcpu={cpu} on {instruction!r} failed:\n{r.stderr[:2000]}")
    return int(m.group(2)) / int(m.group(1))


def loop(library, objdump, function, triple, cpu, mnemonic, attrs):
    """The loop of `function` densest in `mnemonic` instructions (its inner loop): its body (from the target of
    its backward branch to the branch) priced by llvm-mca as a loop body."""
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", f"--disassemble={function}", library], check=True,
                         capture_output=True, text=True).stdout
    insns = []  # (address, text)
    for line in out.splitlines():
        m = re.match(r"\s+([0-9a-f]+):\s+(\S.*?)\s*(//.*)?$", line)
        if m:
            insns.append((int(m.group(1), 16), re.sub(r"\s+<[^>]*>", "", m.group(2)).replace("\t", " ")))
    if not insns:
        sys.exit(f"arm_cost.py: {library}: no function {function}")
    best = None
    for i, (address, text) in enumerate(insns):
        m = re.match(r"(b\.\w+|cbn?z|tbn?z)\s.*?([0-9a-f]+)$", text)
        if not m or int(m.group(2), 16) >= address:
            continue
        start = next(j for j, (a, _) in enumerate(insns) if a == int(m.group(2), 16))
        body = [t for _, t in insns[start:i + 1]]
        count = sum(t.split()[0] == mnemonic for t in body)
        # The inner loop: the densest in MNEMONIC (an outer loop holds it plus its set-up and stores).
        if count and (best is None or count / len(body) > best[0] / len(best[1])):
            best = (count, body)
    if best is None:
        sys.exit(f"arm_cost.py: {function} has no loop with {mnemonic}")
    count, body = best
    body = [".Ltarget:"] + [re.sub(r"[0-9a-f]+$", ".Ltarget", t) if re.match(r"(b\.\w+|cbn?z|tbn?z)\s", t) else t
                            for t in body]
    r = subprocess.run(["llvm-mca", f"-mtriple={triple}", f"-mcpu={cpu}", "-iterations=200", f"-mattr={attrs}"],
                       input="\n".join(body) + "\n", capture_output=True, text=True)
    m = re.search(r"Iterations:\s+(\d+)\s+Instructions:\s+\d+\s+Total Cycles:\s+(\d+)", r.stdout)
    if r.returncode != 0 or not m:
        sys.exit(f"arm_cost.py: llvm-mca -mcpu={cpu} on {function}'s loop failed:\n{r.stderr[:2000]}")
    return {"cycles_per_iteration": int(m.group(2)) / int(m.group(1)), "instructions": count, "body": len(body) - 1}


def main():
    if sys.argv[1] == "--loop":
        json.dump(loop(*sys.argv[2:9]), sys.stdout)
        print()
        return
    if sys.argv[1] == "--peak":
        triple, cpu, instruction, attrs = sys.argv[2:6]
        json.dump({"cycles_per_instruction": peak(triple, cpu, instruction, attrs)}, sys.stdout)
        print()
        return
    gemm = sys.argv[1] == "--gemm"
    log, ld_debug, library, nm, triple, cpus = sys.argv[2:8] if gemm else sys.argv[1:7]
    libdirs = sys.argv[8].split(":") if gemm else []
    counts, blocks = read_log(log)
    base, _ = library_map(ld_debug, library.rsplit("/", 1)[-1])
    table = functions(nm, library)
    starts = [t[0] for t in table]
    stage_blocks, function_of = {}, {}  # start -> stage, start -> function name (without arguments)
    unattributed = collections.Counter()  # executions of libpatchfuse's other functions
    if gemm:
        # XNNPACK exports its assembly microkernels only (its C kernels and packing are hidden), so
        # a block is named by the exported function that holds it, or by its library.
        libraries = []
        for name in GEMM_LIBRARIES:
            lib_base, lib_size = library_map(ld_debug, name)
            libraries.append((name, lib_base, lib_size, exported(nm, name, libdirs)))
    else:
        # libyuv's YUV -> RGBA rows (its own NEON in both runs) count as conversion, whole.
        yuv_base, yuv_size = library_map(ld_debug, "libyuv.so.0")
    for pc in counts:
        if pc not in blocks:
            continue
        if gemm:
            lib = next((l for l in libraries if l[1] <= pc < l[1] + l[2]), None)
            if lib:
                stage_blocks[pc], function_of[pc] = "gemm", lib[3](pc - lib[1]) or lib[0]
                continue
        elif yuv_base <= pc < yuv_base + yuv_size:
            stage_blocks[pc], function_of[pc] = "conversion", "libyuv"
            continue
        i = bisect.bisect_right(starts, pc - base) - 1
        if i >= 0 and pc - base < table[i][0] + max(table[i][1], 1):
            if gemm:
                if GEMM_FUNCTIONS.search(table[i][2]):
                    stage_blocks[pc], function_of[pc] = "gemm", short_name(table[i][2])
                continue
            stage = stage_of(table[i][2])
            if stage:
                stage_blocks[pc] = stage
                function_of[pc] = short_name(table[i][2])
            elif not SETUP.search(table[i][2]):
                unattributed[short_name(table[i][2])] += counts[pc]
    # A renamed kernel would silently drop out of its stage: no function outside the stages may run
    # a tenth as many blocks as the stages do (the rest of a run is setup, folding and the GEMM's glue).
    attributed = sum(counts[pc] for pc in stage_blocks)
    for name, n in unattributed.most_common(3):
        if n > attributed / 10:
            sys.exit(f"arm_cost.py: {name} ran {n} blocks against {attributed} in the stages; add it to STAGES "
                     "or say why it is not the frames path's")
    comment = "@" if triple.startswith(("arm", "thumb")) else "#"
    stages = ["gemm"] if gemm else [stage for stage, _ in STAGES]
    result = {"executions": {}, "cycles": {}, "functions": {}}
    for stage in stages:
        result["executions"][stage] = sum(counts[pc] for pc, s in stage_blocks.items() if s == stage)
    for cpu in cpus.split(","):
        per_block = cycles_per_block({pc: blocks[pc] for pc in stage_blocks}, triple, cpu, comment)
        missing = [pc for pc in stage_blocks if pc not in per_block]
        if missing:
            sys.exit(f"arm_cost.py: llvm-mca gave no figure for {len(missing)} blocks")
        result["cycles"][cpu] = {stage: sum(counts[pc] * per_block[pc] for pc, s in stage_blocks.items() if s == stage)
                                 for stage in stages}
        by_function = collections.Counter()
        for pc in stage_blocks:
            by_function[function_of[pc]] += counts[pc] * per_block[pc]
        result["functions"][cpu] = dict(by_function.most_common(6))
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
