# 32-bit ARMv7 Linux with NEON (hard float): Raspberry Pi on a 32-bit OS and similar boards.
#   toolchains/make-sysroot.sh armhf build-armhf/sysroot
#   cmake -S . -B build-armhf -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-linux-gnueabihf.cmake \
#         -DPATCHFUSE_HOST_CONVERT=$PWD/build/converter/patchfuse-convert
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(PATCHFUSE_TRIPLE arm-linux-gnueabihf)
set(PATCHFUSE_DEB_ARCH armhf)
set(PATCHFUSE_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/cross-linux.cmake)
