# Shared by the ARM toolchain files, which set PATCHFUSE_TRIPLE, PATCHFUSE_DEB_ARCH, PATCHFUSE_QEMU.
# Compilers and libc come from Debian's cross toolchain (/usr/<triple>); every other target
# library comes from the sysroot made by toolchains/make-sysroot.sh.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${PATCHFUSE_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${PATCHFUSE_TRIPLE}-g++)
set(PATCHFUSE_SYSROOT "${CMAKE_BINARY_DIR}/sysroot" CACHE PATH "Target libraries unpacked from Debian packages")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES PATCHFUSE_SYSROOT PATCHFUSE_TRIPLE PATCHFUSE_DEB_ARCH PATCHFUSE_QEMU)
if(NOT EXISTS "${PATCHFUSE_SYSROOT}/.patchfuse-sysroot")
  message(FATAL_ERROR "No ${PATCHFUSE_DEB_ARCH} sysroot at ${PATCHFUSE_SYSROOT}. Create it with:\n"
                      "  toolchains/make-sysroot.sh ${PATCHFUSE_DEB_ARCH} ${PATCHFUSE_SYSROOT}")
endif()
set(CMAKE_FIND_ROOT_PATH "${PATCHFUSE_SYSROOT}")
set(CMAKE_LIBRARY_ARCHITECTURE ${PATCHFUSE_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)  # host tools: flatc, qemu
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Packages put libraries in usr/lib/<triple> and, a few (zlib1g), in lib/<triple>.
set(_libdir "${PATCHFUSE_SYSROOT}/usr/lib/${PATCHFUSE_TRIPLE}")
set(_rootlibdir "${PATCHFUSE_SYSROOT}/lib/${PATCHFUSE_TRIPLE}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_libdir}:${_rootlibdir}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_libdir}:${_rootlibdir}")
set(CMAKE_CROSSCOMPILING_EMULATOR ${PATCHFUSE_QEMU} -L /usr/${PATCHFUSE_TRIPLE} -E LD_LIBRARY_PATH=${_libdir}:${_rootlibdir})
