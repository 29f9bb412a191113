# Man pages from the tools' docs pages, so a flag is written once (docs/<page>.md) and the .debs
# carry it as `man patchfuse-run`. go-md2man (Debian's go-md2man, a build-host tool: the pages are
# the same on every architecture) turns the Markdown into roff; gzip -9n as Debian policy asks.
# Without go-md2man the build goes on with a note and installs no man pages.
find_program(PATCHFUSE_MD2MAN go-md2man)
if(NOT PATCHFUSE_MD2MAN)
  message(STATUS "go-md2man not found: no man pages (scripts/install-deps.sh installs it)")
endif()
# patchfuse_man_page(TOOL PAGE COMPONENT DESCRIPTION): man1/TOOL.1.gz from docs/PAGE, installed
# with COMPONENT's files.
function(patchfuse_man_page tool page component description)
  if(NOT PATCHFUSE_MD2MAN)
    return()
  endif()
  set(md ${CMAKE_CURRENT_BINARY_DIR}/${tool}.1.md)
  set(man ${CMAKE_CURRENT_BINARY_DIR}/${tool}.1.gz)
  string(TOUPPER ${tool} title)
  add_custom_command(OUTPUT ${man}
    # The page's own title gives way to the man header; the rest is the page as written.
    COMMAND ${CMAKE_COMMAND} -DIN=${PROJECT_SOURCE_DIR}/docs/${page} -DOUT=${md} -DTITLE=${title}
            -DNAME=${tool} "-DDESCRIPTION=${description}" -DVERSION=${PROJECT_VERSION}
            -P ${PROJECT_SOURCE_DIR}/cmake/man_page_source.cmake
    COMMAND ${PATCHFUSE_MD2MAN} -in ${md} -out ${CMAKE_CURRENT_BINARY_DIR}/${tool}.1
    COMMAND gzip -9nf ${CMAKE_CURRENT_BINARY_DIR}/${tool}.1
    DEPENDS ${PROJECT_SOURCE_DIR}/docs/${page} ${PROJECT_SOURCE_DIR}/cmake/man_page_source.cmake
    COMMENT "man page ${tool}(1) from docs/${page}" VERBATIM)
  add_custom_target(${tool}_man ALL DEPENDS ${man})
  install(FILES ${man} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
endfunction()
