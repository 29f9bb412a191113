# 64-bit ARM Linux: phones, Jetson, Raspberry Pi 4/5 on a 64-bit OS.
#   toolchains/make-sysroot.sh arm64 build-aarch64/sysroot
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake \
#         -DPATCHFUSE_HOST_CONVERT=$PWD/build/converter/patchfuse-convert
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(PATCHFUSE_TRIPLE aarch64-linux-gnu)
set(PATCHFUSE_DEB_ARCH arm64)
set(PATCHFUSE_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/cross-linux.cmake)
