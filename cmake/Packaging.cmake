# Debian packages with CPack, one per component, for the architecture being built (amd64 natively;
# arm64 and armhf from the cross builds):
#   libpatchfuse<SOVERSION>  the shared library           (Multi-Arch: same)
#   libpatchfuse-dev         headers, CMake package, .pc  (Multi-Arch: same)
#   patchfuse-tools          patchfuse-run, patchfuse-bench (Multi-Arch: foreign)
#   patchfuse-convert        the host converter           (Multi-Arch: foreign)
#   python3-patchfuse        the Python module (native builds with the module only)
# Build them with `cpack -G DEB` in a build folder (scripts/package.sh). Depends are written out
# rather than computed by dpkg-shlibdeps, which cannot see a cross sysroot's libraries; they name
# the Debian 12 packages of exactly the libraries each binary links (scripts/packages.sh checks
# every DT_NEEDED entry against them).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(deb_arch amd64)
elseif(CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
  set(deb_arch arm64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^arm")
  set(deb_arch armhf)
else()
  return()  # no Debian architecture known for this target: no packages
endif()

set(lib_package libpatchfuse${PATCHFUSE_SOVERSION})
set(same_version "(= ${PROJECT_VERSION})")
set(cxx_depends "libc6 (>= 2.36), libgcc-s1 (>= 3.0), libstdc++6 (>= 12)")
set(backend_depends "libxnnpack0, libpthreadpool0, libcpuinfo0")
if(PATCHFUSE_WITH_ONEDNN)
  string(APPEND backend_depends ", libdnnl2 (>= 2.6), libgomp1 (>= 4.9)")
endif()

# Every package carries the copyright file and changelog Debian policy asks for. The changelog's
# date is the release's, not the build's, and gzip -n stores no timestamp: the packages are
# reproducible.
set(release_date "Mon, 30 Nov 2026 00:00:00 +0000")
set(changelog ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog)
file(WRITE ${changelog} "patchfuse (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
     "  * Release ${PROJECT_VERSION}; see the project's README for what it holds.\n\n"
     " -- patchfuse developers <patchfuse@localhost>  ${release_date}\n")
execute_process(COMMAND gzip -9 -n -c ${changelog} OUTPUT_FILE ${changelog}.gz COMMAND_ERROR_IS_FATAL ANY)
set(name_runtime ${lib_package})
set(name_dev libpatchfuse-dev)
set(name_tools patchfuse-tools)
set(name_converter patchfuse-convert)
set(name_python python3-patchfuse)
set(components runtime dev tools converter)
if(PATCHFUSE_BUILD_PYTHON)
  list(APPEND components python)
endif()
foreach(component ${components})
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/debian/copyright ${changelog}.gz
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${name_${component}} COMPONENT ${component})
endforeach()
# The library package registers with ldconfig and publishes its shlibs (lintian's
# lacks-ldconfig-trigger and no-shlibs).
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/debian/triggers "activate-noawait ldconfig\n")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/debian/shlibs "libpatchfuse ${PATCHFUSE_SOVERSION} ${lib_package} (>= ${PROJECT_VERSION})\n")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME patchfuse)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "patchfuse")
set(CPACK_PACKAGE_CONTACT "patchfuse developers <patchfuse@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # debug info stays in the build folder
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${components})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${deb_arch})
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://localhost/patchfuse")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${lib_package})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "${cxx_depends}, ${backend_depends}, libyuv0, libxxhash0")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_MULTIARCH same)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_BINARY_DIR}/debian/triggers ${CMAKE_CURRENT_BINARY_DIR}/debian/shlibs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "patch-embedding runtime for vision-language models (library)
libpatchfuse opens .pfb models zero-copy and runs the patch embedding of
Qwen2-VL-family vision encoders as a GEMM with oneDNN (x86-64), XNNPACK (ARM)
or portable C++, from pixel_values or straight from uint8 camera frames.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libpatchfuse-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${lib_package} ${same_version}")
set(CPACK_DEBIAN_DEV_PACKAGE_MULTIARCH same)
set(CPACK_COMPONENT_DEV_DESCRIPTION "patch-embedding runtime for vision-language models (development)
Headers (C API and a C++ RAII layer), the CMake package
(find_package(patchfuse)) with patchfuse_convert() for build-time
conversion, and patchfuse.pc for pkg-config.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME patchfuse-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${lib_package} ${same_version}, libstb0, libjpeg62-turbo, libpng16-16, libwebp7, libwebpdemux2, ${cxx_depends}")
set(CPACK_DEBIAN_TOOLS_PACKAGE_MULTIARCH foreign)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "patch-embedding runtime for vision-language models (device tools)
patchfuse-run runs a .pfb model on .npy pixel_values or on images;
patchfuse-bench measures its latency per backend, precision, path,
thread count and batch size.")

set(CPACK_DEBIAN_CONVERTER_PACKAGE_NAME patchfuse-convert)
set(CPACK_DEBIAN_CONVERTER_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_CONVERTER_PACKAGE_DEPENDS "libyuv0, ${cxx_depends}")  # the runtime's frames layer, linked in
set(CPACK_DEBIAN_CONVERTER_PACKAGE_MULTIARCH foreign)
set(CPACK_COMPONENT_CONVERTER_DESCRIPTION "patch-embedding converter for vision-language models (host tool)
patchfuse-convert turns a Hugging Face checkpoint (config.json,
preprocessor_config.json and safetensors) into a verified, aligned .pfb
model and exports it back bit-exactly.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-patchfuse)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "${lib_package} ${same_version}, python3 (>= 3.11), python3 (<< 3.12), python3-numpy (<< 1:2), libyuv0, libstb0, libjpeg62-turbo, libpng16-16, libwebp7, libwebpdemux2, ${cxx_depends}")
set(CPACK_COMPONENT_PYTHON_DESCRIPTION "patch-embedding runtime for vision-language models (Python 3)
The patchfuse module: convert, inspect and export checkpoints, and run
models on NumPy pixel_values, images and camera planes without copies.")

include(CPack)
