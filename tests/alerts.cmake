# alerts.cmake - the README's example Prometheus alert rules, checked with promtool (Debian's
# prometheus package) against series scraped from a real governor
# (tests/alerts/test_*.py). Skipped (exit 77) when promtool is not installed.
find_program(PYTHON3 python3)
if(PYTHON3)
  file(GLOB ALERT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/alerts/test_*.py)
  foreach(t ${ALERT_TESTS})
    get_filename_component(name ${t} NAME_WE)
    add_test(NAME alerts.${name} COMMAND ${PYTHON3} ${t} $<TARGET_FILE:governor>)
    set_tests_properties(alerts.${name} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
endif()
