# Renders a tool's page of docs/ (Markdown, read on GitHub) as its man page, so that the
# two are one text: the page's title line "# NAME(1): summary" becomes the man page's
# title block, the rest goes to go-md2man as it is.
#   cmake -DMD2MAN=go-md2man -DIN=docs/mwrun.md -DOUT=share/man/man1/mwrun.1
#         -DVERSION=0.1 -P man.cmake
file(READ ${IN} text)
if(NOT text MATCHES "^# ([a-z]+)\\(([1-9])\\)")
  message(FATAL_ERROR "${IN} does not start with a title line '# name(N): summary'")
endif()
string(TOUPPER ${CMAKE_MATCH_1} name)
set(section ${CMAKE_MATCH_2})
string(REGEX REPLACE "^# [^\n]*\n" "% ${name} ${section} \"\" \"Midway ${VERSION}\" \"Midway Manual\"\n" text "${text}")
get_filename_component(out_dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${out_dir})
file(WRITE ${OUT}.md "${text}")
execute_process(COMMAND ${MD2MAN} -in ${OUT}.md -out ${OUT} RESULT_VARIABLE rc)
file(REMOVE ${OUT}.md)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${MD2MAN} failed on ${IN}")
endif()
