# dashboard.cmake - embeds server/dashboard/index.html (the page of GET /, DESIGN 3.3) into the
# binary, so that `governor serve` serves it from any working directory with no file beside it.
# Generates ${CMAKE_BINARY_DIR}/dashboard_html.c (const unsigned char dashboard_html[], the page
# as NUL-terminated bytes; const unsigned long dashboard_html_len, its length without the NUL),
# read by server/api_dashboard.c, and adds it to server_lib. Included by the top-level
# CMakeLists.txt after server_lib is defined.
include_guard(GLOBAL)

set(GOVERNOR_DASHBOARD_HTML ${CMAKE_SOURCE_DIR}/server/dashboard/index.html)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/dashboard_html.c
  COMMAND ${CMAKE_COMMAND} -DOUT=${CMAKE_BINARY_DIR}/dashboard_html.c
          -DIN=${GOVERNOR_DASHBOARD_HTML} -P ${CMAKE_SOURCE_DIR}/server/dashboard/embed.cmake
  DEPENDS ${GOVERNOR_DASHBOARD_HTML} ${CMAKE_SOURCE_DIR}/server/dashboard/embed.cmake
  COMMENT "Embedding server/dashboard/index.html"
  VERBATIM)
target_sources(server_lib PRIVATE ${CMAKE_BINARY_DIR}/dashboard_html.c)
