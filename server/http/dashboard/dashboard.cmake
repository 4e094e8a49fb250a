# dashboard.cmake - embeds server/http/dashboard/index.html (the page of GET /) into the
# binary, so that `governor serve` serves it from any working directory with no file beside it.
# Generates ${CMAKE_BINARY_DIR}/dashboard_html.c (const unsigned char dashboard_html[], the page
# as NUL-terminated bytes; const unsigned long dashboard_html_len, its length without the NUL),
# read by server/http/api_dashboard.c, and adds it to gov_http. Included by the top-level
# CMakeLists.txt after gov_http is defined.
include_guard(GLOBAL)

set(GOVERNOR_DASHBOARD_HTML ${CMAKE_SOURCE_DIR}/server/http/dashboard/index.html)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/dashboard_html.c
  COMMAND ${CMAKE_COMMAND} -DOUT=${CMAKE_BINARY_DIR}/dashboard_html.c
          -DIN=${GOVERNOR_DASHBOARD_HTML} -P ${CMAKE_SOURCE_DIR}/server/http/dashboard/embed.cmake
  DEPENDS ${GOVERNOR_DASHBOARD_HTML} ${CMAKE_SOURCE_DIR}/server/http/dashboard/embed.cmake
  COMMENT "Embedding server/http/dashboard/index.html"
  VERBATIM)
target_sources(gov_http PRIVATE ${CMAKE_BINARY_DIR}/dashboard_html.c)
