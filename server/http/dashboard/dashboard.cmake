# dashboard.cmake - embeds the dashboard (GET /) into the binary, so that `governor
# serve` serves it from any working directory with no file beside it: index.html (the page),
# page.css, page.js and timeline.js. Generates ${CMAKE_BINARY_DIR}/dashboard_<name>.c for each
# (const unsigned char dashboard_<name>[], the file as NUL-terminated bytes; const unsigned
# long dashboard_<name>_len, its length without the NUL; <name> is the file name with '.' as
# '_'), read by server/http/api_dashboard.c, and adds them to gov_http. Included by the
# top-level CMakeLists.txt after gov_http is defined.
include_guard(GLOBAL)

foreach(f index.html page.css page.js timeline.js)
  string(REPLACE "." "_" name ${f})
  if(f STREQUAL "index.html")
    set(name html) # dashboard_html, as before the page had files of its own
  endif()
  set(in ${CMAKE_SOURCE_DIR}/server/http/dashboard/${f})
  set(out ${CMAKE_BINARY_DIR}/dashboard_${name}.c)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DIN=${in} -DNAME=dashboard_${name}
            -P ${CMAKE_SOURCE_DIR}/server/http/dashboard/embed.cmake
    DEPENDS ${in} ${CMAKE_SOURCE_DIR}/server/http/dashboard/embed.cmake
    COMMENT "Embedding server/http/dashboard/${f}"
    VERBATIM)
  target_sources(gov_http PRIVATE ${out})
endforeach()
