# patchfuse_convert(TARGET <name> OUTPUT <model.pfb> INPUT <checkpoint dir or .safetensors>
#                   [ARGS <extra patchfuse-convert arguments>...] [DEPENDS <files>...])
#
# Converts a checkpoint at build time, as a build step of a consuming project. Conversion is a
# host step. The converter used is, in this order: PATCHFUSE_HOST_CONVERT when set; in a native
# build, this project's own patchfuse-convert target (in-tree) or the installed
# patchfuse::patchfuse-convert (find_package(patchfuse COMPONENTS convert)); when cross-compiling,
# a patchfuse-convert found on the host's PATH (Debian package patchfuse-convert). <name> becomes
# a target that builds the model with `all`. Shipped with the CMake package (patchfuseConfig).
set(PATCHFUSE_HOST_CONVERT "" CACHE FILEPATH "Host patchfuse-convert for build-time conversion (default: see PatchfuseConvert.cmake)")

function(patchfuse_convert)
  cmake_parse_arguments(PF "" "TARGET;OUTPUT;INPUT" "ARGS;DEPENDS" ${ARGN})
  if(NOT PF_TARGET OR NOT PF_OUTPUT OR NOT PF_INPUT)
    message(FATAL_ERROR "patchfuse_convert: TARGET, OUTPUT and INPUT are required")
  endif()
  if(PATCHFUSE_HOST_CONVERT)
    set(tool "${PATCHFUSE_HOST_CONVERT}")
  elseif(NOT CMAKE_CROSSCOMPILING AND TARGET patchfuse-convert)
    set(tool patchfuse-convert)
  elseif(NOT CMAKE_CROSSCOMPILING AND TARGET patchfuse::patchfuse-convert)
    set(tool patchfuse::patchfuse-convert)
  else()
    find_program(PATCHFUSE_HOST_CONVERT_FOUND patchfuse-convert NO_CMAKE_FIND_ROOT_PATH)
    set(tool "${PATCHFUSE_HOST_CONVERT_FOUND}")
  endif()
  if(NOT tool)
    message(FATAL_ERROR "patchfuse_convert: no host patchfuse-convert: install the patchfuse-convert package, "
                        "or pass -DPATCHFUSE_HOST_CONVERT=<native build>/converter/patchfuse-convert")
  endif()
  if(TARGET ${tool})
    set(tool_dep ${tool})
    set(tool "$<TARGET_FILE:${tool}>")
  else()
    if(NOT EXISTS "${tool}")
      message(FATAL_ERROR "patchfuse_convert: PATCHFUSE_HOST_CONVERT '${tool}' does not exist")
    endif()
    set(tool_dep "${tool}")
  endif()
  file(GLOB inputs "${PF_INPUT}/*.json" "${PF_INPUT}/*.safetensors")
  get_filename_component(out_dir "${PF_OUTPUT}" DIRECTORY)
  add_custom_command(
    OUTPUT "${PF_OUTPUT}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${out_dir}"
    COMMAND "${tool}" convert "${PF_INPUT}" -o "${PF_OUTPUT}" ${PF_ARGS}
    DEPENDS ${tool_dep} ${inputs} ${PF_INPUT} ${PF_DEPENDS}
    COMMENT "patchfuse-convert (host): ${PF_INPUT} -> ${PF_OUTPUT}"
    VERBATIM)
  add_custom_target(${PF_TARGET} ALL DEPENDS "${PF_OUTPUT}")
endfunction()
