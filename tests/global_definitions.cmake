# global_definitions(OUT OBJECTS...): "TYPE NAME" for each global or weak definition in the
# objects (nm -C; ${NM} is the toolchain's nm), local ones left out, as they cannot be merged
# with another object's. Also left out: the exception-handling data references (DW.ref.*, pointers
# the unwinder reads, no code) and AddressSanitizer's one-byte markers for globals (__odr_asan.*),
# which the caller names if it wants them. For the checks that an object built with other ISA
# flags shares no code with the rest of the library.
function(global_definitions out)
  execute_process(COMMAND ${NM} -C --defined-only ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} -C --defined-only ${ARGN} failed (${rc})")
  endif()
  string(REGEX MATCHALL "[^\n]+" lines "${text}")
  set(found)
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-f]+ ([TDBRWVu]) (.*)$")
      set(definition "${CMAKE_MATCH_1} ${CMAKE_MATCH_2}")  # the next MATCHES resets CMAKE_MATCH_*
      if(NOT definition MATCHES "^. DW\\.ref\\.")
        list(APPEND found "${definition}")
      endif()
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()
