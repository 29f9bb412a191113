#!/usr/bin/env bash
# The camera path's own loops on ARM cores, estimated since no board is at hand: each case runs
# patchfuse-run under qemu-user once per form of its kernels (aarch64: NEON with the dot product,
# as qemu's default CPU and the A55 and A76 have it, NEON capped to ARMv8.0's, portable; armhf:
# NEON, portable; PATCHFUSE_MAX_CPU_ISA caps them), logging every block qemu executes; scripts/arm_cost.py counts
# the executions of the blocks in the frames path's functions (conversion to planes, resize,
# gather) and prices each block with llvm-mca on each core model. Prints a Markdown table (ms at
# 2 GHz per stage and form, and portable/form ratios) and writes out/arm-cost/<arch>.json.
#   scripts/arm-cost.sh [aarch64|armhf]...   (default both; needs scripts/test.sh arm's builds;
#                                            installs llvm-mca: scripts/install-deps.sh cost)
# Cases: 1080p NV12 -> 1092x1932 and 720p RGB -> 728x1288 into the quick start's Qwen2-VL-shaped
# model with 8 output channels (the GEMM is not what is measured; 8 keeps qemu's log small).
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
python3 - "$work" <<'EOF'
import random, sys
random.seed(1)  # any bytes do: the loops' trip counts depend on sizes only
for name, size in (("1080p.nv12", 1920 * 1080 * 3 // 2), ("720p.rgb", 1280 * 720 * 3)):
    open(f"{sys.argv[1]}/{name}", "wb").write(random.randbytes(size))
EOF
cases=("1080p NV12 -> 1092x1932|--yuv $work/1080p.nv12 --format nv12 --size 1920x1080"
       "720p RGB -> 728x1288|--yuv $work/720p.rgb --format rgb --size 1280x720")

for arch in "${arches[@]}"; do
  case $arch in
    aarch64) triple=aarch64-linux-gnu qemu=qemu-aarch64 mca=aarch64-linux-gnu cpus=cortex-a55,cortex-a76
             forms=(neon_dotprod neon portable) ;;
    armhf) triple=arm-linux-gnueabihf qemu=qemu-arm mca=thumbv7a-linux-gnueabihf cpus=cortex-a57
           forms=(neon portable) ;;
    *) echo "usage: scripts/arm-cost.sh [aarch64|armhf]..." >&2; exit 2 ;;
  esac
  dir=build-$arch sysroot=build-$arch/sysroot
  [[ -x $dir/tools/patchfuse-run ]] || { echo "arm-cost: $dir/tools/patchfuse-run missing (scripts/test.sh arm builds it)" >&2; exit 1; }
  libdirs=$sysroot/usr/lib/$triple:$sysroot/lib/$triple
  echo "{" > "$out/$arch.json"
  first=1
  for c in "${cases[@]}"; do
    IFS='|' read -r label args <<< "$c"
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
      python3 scripts/arm_cost.py "$work/log" "$work/ld.txt" "$dir/runtime/libpatchfuse.so.0.4" "$triple-nm" "$mca" "$cpus" \
          > "$work/cost.json" &
      reader=$!
      # shellcheck disable=SC2086
      $qemu -L "/usr/$triple" -E "LD_LIBRARY_PATH=$libdirs" "${env[@]}" -d in_asm,exec,nochain -D "$work/log" \
          "$dir/tools/patchfuse-run" "$work/m.pfb" $args --backend xnnpack --precision f32 --output "$work/o.npy" \
          > "$work/run.txt" 2> "$work/ld.txt"
      wait $reader
      grep -q "frame kernels: resize $form[ ,]" "$work/run.txt" ||
          { echo "arm-cost: $arch $form: the session did not run the expected kernels:" >&2; cat "$work/run.txt" >&2; exit 1; }
      [[ $first == 1 ]] || echo "," >> "$out/$arch.json"
      first=0
      printf '"%s|%s": ' "$label" "$form" >> "$out/$arch.json"
      cat "$work/cost.json" >> "$out/$arch.json"
    done
  done
  echo "}" >> "$out/$arch.json"
  python3 - "$out/$arch.json" "$arch" <<'EOF'
import json, sys
runs = json.load(open(sys.argv[1]))
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
EOF
done
