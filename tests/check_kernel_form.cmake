# ctest: one frames kernel form's objects (runtime/frames/kernels/<family>_<form>.cc, compiled with
# that form's ISA flags) define no global or weak symbol but the form's entry points,
# patchfuse::<name>_<form>(...): an inline or template function with external linkage there would
# be a COMDAT copy the linker may keep for callers on CPUs without the ISA (kernels.h).
# AddressSanitizer's markers for globals (__odr_asan.*) carry no code. At least one entry point
# must be there.
#   cmake -DNM= -DFORM= -DOBJECTS=<objects;...> -P this
cmake_minimum_required(VERSION 3.18)
include(${CMAKE_CURRENT_LIST_DIR}/global_definitions.cmake)
global_definitions(defined ${OBJECTS})
set(shared)
set(entries 0)
foreach(definition IN LISTS defined)
  if(definition MATCHES "^T patchfuse::[a-z0-9_]+_${FORM}\\(")
    math(EXPR entries "${entries} + 1")
  elseif(NOT definition MATCHES "^. __odr_asan\\.")
    list(APPEND shared "${definition}")
  endif()
endforeach()
if(shared)
  list(JOIN shared "\n  " listed)
  message(FATAL_ERROR "kernel form ${FORM}: global or weak definitions besides its entry points *_${FORM}, which the "
                      "linker could pick for callers on other CPUs (frames/kernels/kernels.h's rules):\n  ${listed}")
endif()
if(entries EQUAL 0)
  message(FATAL_ERROR "kernel form ${FORM}: no entry point patchfuse::*_${FORM} in ${OBJECTS}")
endif()
message(STATUS "kernel form ${FORM}: ${entries} entry points, nothing else global")
