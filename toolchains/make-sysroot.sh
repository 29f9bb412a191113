#!/usr/bin/env bash
# Assembles a target sysroot for cross builds from Debian's own packages for that architecture:
# downloads them with a private package list and unpacks them with dpkg -x. It never changes the
# machine's package configuration (no dpkg --add-architecture), and a second run with the same
# package set returns at once.
#   toolchains/make-sysroot.sh arm64|armhf SYSROOT_DIR
set -euo pipefail
arch=${1:?usage: make-sysroot.sh arm64|armhf SYSROOT_DIR}
sysroot=${2:?usage: make-sysroot.sh arm64|armhf SYSROOT_DIR}
case "$arch" in arm64|armhf) ;; *) echo "make-sysroot: architecture '$arch' must be arm64 or armhf" >&2; exit 2 ;; esac

packages=(
  libxnnpack0 libxnnpack-dev libpthreadpool0 libpthreadpool-dev libcpuinfo0 libcpuinfo-dev libgemmlowp-dev libstb0 libstb-dev
  libyuv0 libyuv-dev libxxhash0 libxxhash-dev libjpeg62-turbo libjpeg62-turbo-dev libpng16-16 libpng-dev zlib1g zlib1g-dev
  libwebp7 libwebpdemux2 libwebp-dev
  libgtest-dev libgmock-dev libbenchmark1debian libbenchmark-dev
  libflatbuffers-dev nlohmann-json3-dev libcli11-dev
)
stamp="$sysroot/.patchfuse-sysroot"
want="$arch ${packages[*]}"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "make-sysroot: $sysroot is up to date ($arch)"
  exit 0
fi

work="$sysroot.download"
rm -rf "$sysroot" "$work"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$sysroot"
apt_opts=(-o "APT::Architecture=$arch" -o "APT::Architectures=$arch" -o "Dir::State::Lists=$work/lists"
          -o "Dir::Cache=$work/cache" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
# `update` may exit 100 over a side index (e.g. a translation); the main index is what we need.
apt-get "${apt_opts[@]}" update -qq || echo "make-sysroot: apt-get update reported an error; continuing with the indexes it got"
(cd "$work/debs" && apt-get "${apt_opts[@]}" download "${packages[@]}")
for deb in "$work/debs"/*.deb; do dpkg -x "$deb" "$sysroot"; done
rm -rf "$work"
echo "$want" > "$stamp"
echo "make-sysroot: unpacked ${#packages[@]} $arch packages into $sysroot"
