#!/usr/bin/env bash
# The camera path on ARM cores, estimated since no board is at hand.
#
# The frames path's own loops: each case runs patchfuse-run under qemu-user once per form of its
# kernels (aarch64: NEON with the dot product, as qemu's default CPU and the A55 and A76 have it,
# NEON capped to ARMv8.0's, portable; armhf: NEON, portable; PATCHFUSE_MAX_CPU_ISA caps them),
# logging every block qemu executes; scripts/arm_cost.py counts the executions of the blocks in the
# frames path's functions (conversion to planes, resize, gather) and prices each block with llvm-mca
# on each core model. Cases: 1080p NV12 -> 1092x1932 and 720p RGB -> 728x1288 into the quick
# start's Qwen2-VL-shaped model, and 720p RGB -> 384x384 into a SigLIP-shaped one (a downscale
# whose 15-tap windows take the wide horizontal pass), each with 8 output channels (keeps qemu's
# log small). The GEMM rows below are the Qwen2-VL cases'.
#
# The GEMM (the projection of those frames, rows x K 588 -> 1280): per precision, the kernel the
# session runs (XNNPACK f32 and f16, gemmlowp int8), as it runs on each core: XNNPACK picks its
# microkernels by the core named in /proc/cpuinfo, which qemu-user reads under its -L prefix, so
# each core gets a prefix whose /proc/cpuinfo is that core's. Two runs that differ only in rows
# (112x112 -> 64 patches, 224x224 -> 256) give the blocks' cost per row without the one-time
# setup (weights packing); times each case's rows, next to the core's peak by the same model
# (llvm-mca on a stream of independent FMLA / SDOT / VMLAL).
#
# Prints Markdown tables (ms at 2 GHz) and writes out/arm-cost/<arch>.json ("<case>|<form>" for the
# frames path, "gemm" for the GEMM rows).
#   scripts/arm-cost.sh [aarch64|armhf]...   (default both; needs scripts/test.sh arm's builds;
#                                            installs llvm-mca: scripts/install-deps.sh cost)
# Core models: LLVM 14 (Debian 12) has AArch64 models for cortex-a55 and cortex-a76 (the latter
# on Cortex-A57's tables) and, for AArch32, only cortex-a57's, which armhf uses.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh arm cost > /dev/null
arches=("$@")
[[ ${#arches[@]} -gt 0 ]] || arches=(aarch64 armhf)
out=out/arm-cost
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

build/converter/patchfuse-make-sample "$work/sample" --model-type qwen2_vl --embed-dim 8 --patches 0 > /dev/null
build/converter/patchfuse-convert convert "$work/sample" -o "$work/m.pfb" > /dev/null
build/converter/patchfuse-make-sample "$work/siglip" --model-type siglip --embed-dim 8 --patches 0 > /dev/null
build/converter/patchfuse-convert convert "$work/siglip" -o "$work/s.pfb" --fusion conv2d_patch_embeddings > /dev/null
build/converter/patchfuse-make-sample "$work/sample1280" --model-type qwen2_vl --embed-dim 1280 --patches 0 > /dev/null
build/converter/patchfuse-convert convert "$work/sample1280" -o "$work/m1280.pfb" > /dev/null
/usr/bin/python3 - "$work" <<'EOF'
import random, sys
random.seed(1)  # any bytes do: the loops' trip counts depend on sizes only
for name, size in (("1080p.nv12", 1920 * 1080 * 3 // 2), ("720p.rgb", 1280 * 720 * 3)):
    open(f"{sys.argv[1]}/{name}", "wb").write(random.randbytes(size))
for side in (112, 224):
    open(f"{sys.argv[1]}/{side}.ppm", "wb").write(b"P6\n%d %d\n255\n" % (side, side) + random.randbytes(side * side * 3))
EOF
# A root for qemu's -L whose /proc/cpuinfo names one Arm core (both CPUs of the machine), the rest
# being the target's own libraries.
#   fake_root DIR TRIPLE ARCHITECTURE FEATURES PART VARIANT
fake_root() {
  mkdir -p "$1/proc"
  ln -sfn "/usr/$2/lib" "$1/lib"
  : > "$1/proc/cpuinfo"
  local n
  for n in 0 1; do
    printf 'processor\t: %d\nBogoMIPS\t: 50.00\nFeatures\t: %s\nCPU implementer\t: 0x41\nCPU architecture: %s\nCPU variant\t: %s\nCPU part\t: %s\nCPU revision\t: 0\n\n' \
        "$n" "$4" "$3" "$6" "$5" >> "$1/proc/cpuinfo"
  done
}
cases=("1080p NV12 -> 1092x1932|m.pfb|--yuv $work/1080p.nv12 --format nv12 --size 1920x1080"
       "720p RGB -> 728x1288|m.pfb|--yuv $work/720p.rgb --format rgb --size 1280x720"
       "720p RGB -> SigLIP 384x384|s.pfb|--yuv $work/720p.rgb --format rgb --size 1280x720")

for arch in "${arches[@]}"; do
  case $arch in
    aarch64) triple=aarch64-linux-gnu qemu=qemu-aarch64 mca=aarch64-linux-gnu cpus=cortex-a55,cortex-a76
             forms=(neon_dotprod neon portable)
             # core: MIDR part and variant (the A55's r1, not r0, which XNNPACK treats as an A53)
             cores=(cortex-a55:0xd05:0x1 cortex-a76:0xd0b:0x4) arch_number=8
             features="fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp"
             # precision:backend:the core's instructions for it, vector and by element (the faster
             # counts):MACs per instruction
             gemms=("f32:xnnpack:fmla v{d}.4s, v0.4s, v1.4s|fmla v{d}.4s, v0.4s, v1.s[1]:4"
                    "f16:xnnpack:fmla v{d}.8h, v0.8h, v1.8h|fmla v{d}.8h, v0.8h, v1.h[1]:8"
                    "int8:gemmlowp:sdot v{d}.4s, v0.16b, v1.16b|sdot v{d}.4s, v0.16b, v1.4b[1]:16") mattr=+neon,+fullfp16,+dotprod ;;
    armhf) triple=arm-linux-gnueabihf qemu=qemu-arm mca=thumbv7a-linux-gnueabihf cpus=cortex-a57
           forms=(neon portable)
           cores=(cortex-a57:0xd07:0x1) arch_number=8
           features="half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm"
           gemms=("f32:xnnpack:vmla.f32 q{d}, q0, q1|vmla.f32 q{d}, q0, d2[1]:4" "int8:gemmlowp:vmlal.u8 q{d}, d0, d1:8")
           mattr=+neon,+vfp4 ;;
    *) echo "usage: scripts/arm-cost.sh [aarch64|armhf]..." >&2; exit 2 ;;
  esac
  dir=build-$arch sysroot=build-$arch/sysroot
  [[ -x $dir/tools/patchfuse-run ]] || { echo "arm-cost: $dir/tools/patchfuse-run missing (scripts/test.sh arm builds it)" >&2; exit 1; }
  libdirs=$sysroot/usr/lib/$triple:$sysroot/lib/$triple
  echo "{" > "$out/$arch.json"
  first=1
  for c in "${cases[@]}"; do
    IFS='|' read -r label model args <<< "$c"
    for form in "${forms[@]}"; do
      env=(-E LD_DEBUG=files)
      case $form in
        neon_dotprod) ;;
        neon) [[ $arch == armhf ]] || env+=(-E PATCHFUSE_MAX_CPU_ISA=neon) ;;
        portable) env+=(-E PATCHFUSE_MAX_CPU_ISA=baseline) ;;
      esac
      rm -f "$work/log"
      mkfifo "$work/log"
      # The log streams through a FIFO: a portable 1080p run writes gigabytes.
      /usr/bin/python3 scripts/arm_cost.py "$work/log" "$work/ld.txt" "$dir/runtime/libpatchfuse.so.0.4" "$triple-nm" "$mca" "$cpus" \
          > "$work/cost.json" &
      reader=$!
      # shellcheck disable=SC2086
      $qemu -L "/usr/$triple" -E "LD_LIBRARY_PATH=$libdirs" "${env[@]}" -d in_asm,exec,nochain -D "$work/log" \
          "$dir/tools/patchfuse-run" "$work/$model" $args --backend xnnpack --precision f32 --output "$work/o.npy" \
          > "$work/run.txt" 2> "$work/ld.txt"
      wait $reader
      grep -q "frame kernels: resize $form[ ,]" "$work/run.txt" ||
          { echo "arm-cost: $arch $form: the session did not run the expected kernels:" >&2; cat "$work/run.txt" >&2; exit 1; }
      [[ $first == 1 ]] || echo "," >> "$out/$arch.json"
      first=0
      printf '"%s|%s": ' "$label" "$form" >> "$out/$arch.json"
      rows=$(grep -oE '[0-9]+ patches' "$work/run.txt" | cut -d' ' -f1)
      /usr/bin/python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["rows"] = int(sys.argv[2]); print(json.dumps(c))' \
          "$work/cost.json" "$rows" >> "$out/$arch.json"
    done
  done

  # The GEMM, per core and precision: two runs (64 and 256 rows), one JSON line each.
  : > "$work/gemm.jsonl"
  for core in "${cores[@]}"; do
    IFS=: read -r cpu part variant <<< "$core"
    fake_root "$work/root-$cpu" "$triple" "$arch_number" "$features" "$part" "$variant"
    for g in "${gemms[@]}"; do
      IFS=: read -r precision backend instruction macs <<< "$g"
      peak=$(/usr/bin/python3 scripts/arm_cost.py --peak "$mca" "$cpu" "$instruction" "$mattr")
      for side in 112 224; do
        rm -f "$work/log"
        mkfifo "$work/log"
        /usr/bin/python3 scripts/arm_cost.py --gemm "$work/log" "$work/ld.txt" "$dir/runtime/libpatchfuse.so.0.4" "$triple-nm" \
            "$mca" "$cpu" "$libdirs" > "$work/cost.json" &
        reader=$!
        status=0
        $qemu -L "$work/root-$cpu" -E "LD_LIBRARY_PATH=$libdirs" -E LD_DEBUG=files -d in_asm,exec,nochain -D "$work/log" \
            "$dir/tools/patchfuse-run" "$work/m1280.pfb" --image "$work/$side.ppm" --backend "$backend" \
            --precision "$precision" --output "$work/o.npy" > "$work/run.txt" 2> "$work/ld.txt" || status=$?
        wait $reader || true  # a refused precision ends the run before its GEMM: its figures are not used
        /usr/bin/python3 - "$work" "$cpu" "$precision" "$backend" "$side" "$status" "$peak" "$macs" "$instruction" \
            >> "$work/gemm.jsonl" <<'EOF'
import json, re, sys
work, cpu, precision, backend, side, status, peak, macs, instruction = sys.argv[1:]
run = open(f"{work}/run.txt").read()
line = {"core": cpu, "precision": precision, "backend": backend, "side": int(side),
        "peak": {"instruction": instruction.replace("{d}", "0"), "macs": int(macs), **json.loads(peak)}}
if status != "0":
    errors = [l for l in open(f"{work}/ld.txt").read().splitlines() if "patchfuse-run" in l]
    line["skipped"] = errors[-1] if errors else f"patchfuse-run exited {status}"
else:
    line["kernel"] = re.search(r"backend \S+ \[(.*)\], precision", run).group(1)
    line["rows"] = int(re.search(r"(\d+) patches", run).group(1))
    line["cost"] = json.load(open(f"{work}/cost.json"))
print(json.dumps(line))
EOF
      done
    done
  done
  echo "}" >> "$out/$arch.json"
  /usr/bin/python3 - "$work/gemm.jsonl" "$out/$arch.json" <<'EOF'
import json, sys
K, N = 588, 1280  # the quick start's Qwen2-VL geometry, still images: 3 x 14 x 14 -> 1280
lines = [json.loads(l) for l in open(sys.argv[1])]
doc = json.load(open(sys.argv[2]))
cases = dict(sorted({key.split("|")[0]: value["rows"] for key, value in doc.items() if "SigLIP" not in key}.items(),
                    key=lambda c: -c[1]))
rows = []
for small in (l for l in lines if l["side"] == 112):
    large = next(l for l in lines if l["side"] == 224 and l["core"] == small["core"] and l["precision"] == small["precision"])
    base = {"core": small["core"], "backend": small["backend"], "precision": small["precision"]}
    if "skipped" in small or "skipped" in large:
        rows.append({**base, "skipped": small.get("skipped") or large.get("skipped")})
        continue
    cpu = small["core"]
    # Cycles per row: the difference of the two runs (the setup cancels) over their difference in rows.
    per_row = (large["cost"]["cycles"][cpu]["gemm"] - small["cost"]["cycles"][cpu]["gemm"]) / (large["rows"] - small["rows"])
    peak = small["peak"]
    macs_per_cycle = peak["macs"] / peak["cycles_per_instruction"]
    for case, m in cases.items():
        estimated, at_peak = per_row * m / 2e6, m * K * N / macs_per_cycle / 2e6
        rows.append({**base, "case": case, "rows": m, "kernel": small["kernel"],
                     "top_functions": large["cost"]["functions"][cpu], "estimated_ms": round(estimated, 1),
                     "peak_ms": round(at_peak, 1), "estimated_over_peak": round(estimated / at_peak, 2),
                     "peak_instruction": peak["instruction"], "peak_macs_per_cycle": round(macs_per_cycle, 2)})
doc["gemm"] = rows
open(sys.argv[2], "w").write(json.dumps(doc, indent=1) + "\n")
EOF
  /usr/bin/python3 - "$out/$arch.json" "$arch" <<'EOF'
import json, sys
runs = json.load(open(sys.argv[1]))
gemm = runs.pop("gemm")
stages = ("conversion", "resize", "gather")
cases = list(dict.fromkeys(key.split("|")[0] for key in runs))
forms = list(dict.fromkeys(key.split("|")[1] for key in runs))[::-1]  # portable first
names = " / ".join(forms)
print(f"\n{sys.argv[2]}: estimated ms at 2 GHz of the frames path's own loops, {names}\n")
print("| case | core | " + " | ".join(stages) + " | total | portable / each |")
print("|---|---|" + "---|" * (len(stages) + 2))
for case in cases:
    cycles = [runs[f"{case}|{form}"]["cycles"] for form in forms]
    for cpu in cycles[0]:
        cells = [" / ".join(f"{c[cpu][s] / 2e6:.1f}" for c in cycles) for s in stages]
        totals = [sum(c[cpu].values()) for c in cycles]
        ratios = " / ".join(f"{totals[0] / t:.1f}x" for t in totals[1:])
        print(f"| {case} | {cpu} | " + " | ".join(cells) + " | " + " / ".join(f"{t / 2e6:.1f}" for t in totals)
              + f" | {ratios} |")
print(f"\n{sys.argv[2]}: the GEMM, estimated ms at 2 GHz, and at the core's peak by the same model\n")
print("| case | core | precision | kernel | estimated | at peak | estimated / peak |")
print("|---|---|---|---|---|---|---|")
for r in gemm:
    if "skipped" in r:
        print(f"| | {r['core']} | {r['precision']} | skipped: {r['skipped']} | | | |")
    else:
        print(f"| {r['case']} | {r['core']} | {r['precision']} | {r['kernel']} | {r['estimated_ms']} | {r['peak_ms']} "
              f"| {r['estimated_over_peak']}x |")
EOF
done
