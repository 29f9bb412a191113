# ctest: one gemmlowp kernel variant's object is kept apart from the rest of the library (see
# runtime/backends/gemmlowp/gemmlowp_variant.h): every global or weak definition in it is in its
# own namespace patchfuse_gemmlowp_<variant>, except its table patchfuse::kGemmlowp_<variant> and
# the exception-handling data references (DW.ref.*, pointers the unwinder reads, no code) and, in
# sanitized builds, AddressSanitizer's markers for its globals. Also
# that the object holds the kernel its flags promise: an instruction it must have (HAS) or must
# not (LACKS), counted in its disassembly.
#   cmake -DNM= -DOBJDUMP= -DVARIANT= -DOBJECTS=<object> -DHAS=<regex> -DLACKS=<regex> -P this
cmake_minimum_required(VERSION 3.18)  # NEW policies: quoted strings in if() are not variable names
include(${CMAKE_CURRENT_LIST_DIR}/global_definitions.cmake)
global_definitions(defined ${OBJECTS})
set(shared)
set(own 0)
foreach(definition IN LISTS defined)
  string(REGEX REPLACE "^. " "" name "${definition}")
  # __odr_asan.*: AddressSanitizer's one-byte marker for a global of ours (not demangled by nm).
  if(name MATCHES "patchfuse_gemmlowp_${VARIANT}::" OR name STREQUAL "patchfuse::kGemmlowp_${VARIANT}"
     OR name MATCHES "^__odr_asan\\..*(patchfuse_gemmlowp_${VARIANT}|kGemmlowp_${VARIANT})")
    math(EXPR own "${own} + 1")
  else()
    list(APPEND shared "${definition}")
  endif()
endforeach()
if(shared)
  list(JOIN shared "\n  " listed)
  message(FATAL_ERROR "gemmlowp variant ${VARIANT}: definitions outside namespace patchfuse_gemmlowp_${VARIANT}, "
                      "which the linker could merge with another object's (built with other flags):\n  ${listed}")
endif()
execute_process(COMMAND ${OBJDUMP} -d --no-show-raw-insn ${OBJECTS} OUTPUT_VARIABLE dis RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OBJDUMP} -d ${OBJECTS} failed (${rc})")
endif()
set(report "")
foreach(kind HAS LACKS)
  if(NOT ${kind})
    continue()
  endif()
  string(REGEX MATCHALL "\t(${${kind}})[ \t\n]" found "${dis}")
  list(LENGTH found count)
  if(kind STREQUAL "HAS" AND count EQUAL 0)
    message(FATAL_ERROR "gemmlowp variant ${VARIANT}: no ${${kind}} instruction in ${OBJECTS}; its kernel is not the one its flags ask for")
  elseif(kind STREQUAL "LACKS" AND NOT count EQUAL 0)
    message(FATAL_ERROR "gemmlowp variant ${VARIANT}: ${count} ${${kind}} instructions in ${OBJECTS}, which its CPUs may lack")
  endif()
  string(APPEND report ", ${count} instructions matching ${${kind}}")
endforeach()
message(STATUS "gemmlowp variant ${VARIANT}: ${own} global definitions, all its own${report}")
