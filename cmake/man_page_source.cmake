# The Markdown go-md2man reads for a man page: a pandoc title block and NAME section, then the
# docs page without its first heading. cmake -DIN= -DOUT= -DTITLE= -DNAME= -DDESCRIPTION= -DVERSION= -P this
file(READ ${IN} page)
string(REGEX REPLACE "^# [^\n]*\n" "" page "${page}")
# Links to other pages mean nothing in a terminal: keep their text.
string(REGEX REPLACE "\\[([^]]*)\\]\\([^)]*\\)" "\\1" page "${page}")
file(WRITE ${OUT} "% ${TITLE} 1 \"\" \"patchfuse ${VERSION}\" \"User Commands\"\n\n# NAME\n\n${NAME} - ${DESCRIPTION}\n\n# DESCRIPTION\n${page}")
