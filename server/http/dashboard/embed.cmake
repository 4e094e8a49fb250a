# embed.cmake - script mode (cmake -P): writes OUT, a C file holding the bytes of IN (a file of
# the dashboard) as an unsigned char array NAME with a terminating NUL, and their count
# NAME_len. The bytes
# go in as hex so that no character of the page (quotes, backslashes, "??" trigraphs,
# semicolons that CMake would take for list separators, UTF-8) needs escaping.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n2)
math(EXPR n "${n2} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# 16 bytes (80 characters of "0xNN,") a line; CMake regexes have at most 9 groups, so one.
string(REGEX REPLACE "(0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],)" "\\1\n    " bytes "${bytes}")
if(NOT NAME)
  set(NAME dashboard_html)
endif()
get_filename_component(base ${IN} NAME)
set(body "/* Generated from server/http/dashboard/${base} by server/http/dashboard/embed.cmake. Do not edit. */\n")
string(APPEND body "const unsigned char ${NAME}[] = {\n    ${bytes}0x00};\n")
string(APPEND body "const unsigned long ${NAME}_len = ${n};\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
