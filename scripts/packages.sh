#!/usr/bin/env bash
# Consumes patchfuse the way a device team does, from the build folders scripts/test.sh made
# (build/, build-aarch64/, build-armhf/):
#   1. .deb packages with CPack for amd64, arm64 and armhf; dpkg-deb -I of each; lintian on each
#   2. examples/embed built with find_package against the native install tree, then run
#   3. the same C program built with pkg-config against the amd64 .debs unpacked with dpkg -x, run
#   4. examples/embed cross-built for aarch64 against the aarch64 install tree (the host converter
#      found on PATH by patchfuse_convert), run under qemu-aarch64
#   5. the same program cross-built for aarch64 and armhf with the cross gcc and pkg-config alone
#      (docs/first-hour.md's lines), run under qemu
# Each run checks its embeddings against the reference backend and fails on a mismatch.
#   scripts/packages.sh [OUT_DIR]     (default out/packages)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-out/packages}")
rm -rf "$out" && mkdir -p "$out"
checkpoint=$PWD/tests/fixtures/frames/qwen2_vl   # has a preprocessor_config.json: the frames path runs

echo "--- 1. packages"
for build in build build-aarch64 build-armhf; do
  [[ -d $build ]] || { echo "packages: $build is missing; run scripts/test.sh first" >&2; exit 1; }
  (cd "$build" && cpack -G DEB -B "$out/debs-$build" > "$out/cpack-$build.log") || { cat "$out/cpack-$build.log"; exit 1; }
done
# Depends must name the package of every library a binary in the package links (DT_NEEDED).
declare -A provider=([libpatchfuse.so.0.4]=libpatchfuse0.4 [libxxhash.so.0]=libxxhash0 [libdnnl.so.2]=libdnnl2 [libXNNPACK.so.0]=libxnnpack0
  [libpthreadpool.so.0]=libpthreadpool0 [libcpuinfo.so.0]=libcpuinfo0 [libgomp.so.1]=libgomp1 [libstb.so.0]=libstb0
  [libwebp.so.7]=libwebp7 [libwebpdemux.so.2]=libwebpdemux2 [libjpeg.so.62]=libjpeg62-turbo [libpng16.so.16]=libpng16-16
  [libyuv.so.0]=libyuv0 [libstdc++.so.6]=libstdc++6 [libgcc_s.so.1]=libgcc-s1 [libc.so.6]=libc6 [libm.so.6]=libc6)
for deb in "$out"/debs-*/*.deb; do
  echo "== $(basename "$deb")"
  dpkg-deb -I "$deb" | grep -E '^ (Package|Version|Architecture|Multi-Arch|Depends|Section):'
  depends=$(dpkg-deb -f "$deb" Depends)
  rm -rf "$out/check" && dpkg-deb -x "$deb" "$out/check"
  for elf in $(find "$out/check" -type f \( -name '*.so*' -o -path '*/bin/*' \)); do
    for needed in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      [[ $needed == ld-linux* ]] && continue
      pkg=${provider[$needed]:-}
      # A library missing from the table fails too (an empty name would match any ", ").
      [[ -n $pkg ]] && [[ ",$depends," == *", $pkg"[\ ,]* || ",$depends," == *",$pkg"[\ ,]* ]] || {
        echo "packages: $(basename "$deb"): ${elf#$out/check} needs $needed (package '${pkg:-unknown}') but Depends is: $depends" >&2
        exit 1
      }
    done
  done
done
echo "== lintian (every tag it reports is listed with the reason in docs/packaging.md)"
lintian --tag-display-limit 0 "$out"/debs-*/*.deb | sort | uniq -c | tee "$out/lintian.txt" || true

echo "--- 2. find_package against the native install tree"
cmake --install build --prefix "$out/prefix" > /dev/null
cmake -S examples/embed -B "$out/example" -DCMAKE_PREFIX_PATH="$out/prefix" -DEXAMPLE_CHECKPOINT="$checkpoint" > /dev/null
cmake --build "$out/example" > /dev/null
libdir=$(cd "$out/prefix" && ls -d lib/*-linux-gnu)
LD_LIBRARY_PATH="$out/prefix/$libdir" "$out/example/patchfuse-example" "$out/example/model.pfb"

echo "--- 3. pkg-config against the amd64 packages unpacked with dpkg -x"
for deb in "$out"/debs-build/*.deb; do dpkg -x "$deb" "$out/debroot"; done
export PKG_CONFIG_PATH="$out/debroot/usr/$libdir/pkgconfig"
cc -o "$out/example-pkgconfig" examples/embed/main.c $(pkg-config --cflags --libs patchfuse) -lm
"$out/debroot/usr/bin/patchfuse-convert" convert "$checkpoint" -o "$out/model-deb.pfb" > /dev/null
LD_LIBRARY_PATH="$out/debroot/usr/$libdir" "$out/example-pkgconfig" "$out/model-deb.pfb"
unset PKG_CONFIG_PATH
# The Python module from python3-patchfuse, as Debian's python3 imports it once the .deb is installed.
PYTHONPATH="$out/debroot/usr/lib/python3/dist-packages" LD_LIBRARY_PATH="$out/debroot/usr/$libdir" /usr/bin/python3 -c \
  "import patchfuse, sys; help(patchfuse.Session); print(patchfuse.Model(sys.argv[1]).modules[0]['path'], file=sys.stderr)" \
  "$out/model-deb.pfb" > /dev/null

echo "--- 4. aarch64: cross-built against the aarch64 install tree, run under qemu"
cmake --install build-aarch64 --prefix "$out/prefix-arm64" > /dev/null
PATH="$out/prefix/bin:$PATH" cmake -S examples/embed -B "$out/example-arm64" \
    -DCMAKE_TOOLCHAIN_FILE="$PWD/toolchains/aarch64-linux-gnu.cmake" -DPATCHFUSE_SYSROOT="$PWD/build-aarch64/sysroot" \
    -Dpatchfuse_DIR="$out/prefix-arm64/lib/aarch64-linux-gnu/cmake/patchfuse" -DEXAMPLE_CHECKPOINT="$checkpoint" > /dev/null
PATH="$out/prefix/bin:$PATH" cmake --build "$out/example-arm64" > /dev/null
file "$out/example-arm64/patchfuse-example" | sed 's/, BuildID.*//'
qemu-aarch64 -L /usr/aarch64-linux-gnu \
    -E LD_LIBRARY_PATH="$out/prefix-arm64/lib/aarch64-linux-gnu:$PWD/build-aarch64/sysroot/usr/lib/aarch64-linux-gnu" \
    "$out/example-arm64/patchfuse-example" "$out/example-arm64/model.pfb"

echo "--- 5. the same C program cross-built without CMake (docs/first-hour.md), run under qemu"
for target in aarch64-linux-gnu:arm64:build-aarch64:qemu-aarch64 arm-linux-gnueabihf:armhf:build-armhf:qemu-arm; do
  IFS=: read -r triple arch build qemu <<< "$target"
  cmake --install "$build" --prefix "$out/plain-$arch" > /dev/null
  "$triple-gcc" -o "$out/app-$arch" examples/embed/main.c \
      $(PKG_CONFIG_LIBDIR="$out/plain-$arch/lib/$triple/pkgconfig" pkg-config --cflags --libs patchfuse) -lm \
      -Wl,-rpath-link,"$build/sysroot/usr/lib/$triple"
  "$qemu" -L "/usr/$triple" -E LD_LIBRARY_PATH="$out/plain-$arch/lib/$triple:$PWD/$build/sysroot/usr/lib/$triple" \
      "$out/app-$arch" "$out/example-arm64/model.pfb"
done
echo "packages: all consumers built and ran"
