# patchfuse_convert(TARGET <name> OUTPUT <model.pfb> INPUT <checkpoint dir or .safetensors>
#                   [ARGS <extra patchfuse-convert arguments>...] [DEPENDS <files>...])
#
# Converts a checkpoint at build time, as a build step of a consuming project. Conversion is a
# host step: in a native build it uses this project's patchfuse-convert target; when
# cross-compiling, set PATCHFUSE_HOST_CONVERT to a patchfuse-convert built for the host (for
# example <native build>/converter/patchfuse-convert). <name> becomes a target that builds the
# model with `all`.
set(PATCHFUSE_HOST_CONVERT "" CACHE FILEPATH "Host patchfuse-convert used for build-time conversion when cross-compiling")

function(patchfuse_convert)
  cmake_parse_arguments(PF "" "TARGET;OUTPUT;INPUT" "ARGS;DEPENDS" ${ARGN})
  if(NOT PF_TARGET OR NOT PF_OUTPUT OR NOT PF_INPUT)
    message(FATAL_ERROR "patchfuse_convert: TARGET, OUTPUT and INPUT are required")
  endif()
  if(CMAKE_CROSSCOMPILING)
    if(NOT PATCHFUSE_HOST_CONVERT OR NOT EXISTS "${PATCHFUSE_HOST_CONVERT}")
      message(FATAL_ERROR "patchfuse_convert: cross-compiling needs a host converter; build patchfuse natively "
                          "and pass -DPATCHFUSE_HOST_CONVERT=<native build>/converter/patchfuse-convert "
                          "(now: '${PATCHFUSE_HOST_CONVERT}')")
    endif()
    set(tool "${PATCHFUSE_HOST_CONVERT}")
    set(tool_dep "${PATCHFUSE_HOST_CONVERT}")
  else()
    set(tool "$<TARGET_FILE:patchfuse-convert>")
    set(tool_dep patchfuse-convert)
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
