# dashboard.cmake - the browser test of the dashboard page (GET /): headless Chromium renders
# the page against the real server and the test reads the DOM it dumps
# (tests/dashboard/test_dashboard_*.py). Skipped (exit 77) when Chromium is not installed; the
# page's server-side test, tests/api/test_dashboard.py, is registered by api.cmake.
find_program(PYTHON3 python3)
if(PYTHON3)
  file(GLOB DASHBOARD_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/dashboard/test_*.py)
  foreach(t ${DASHBOARD_TESTS})
    get_filename_component(name ${t} NAME_WE)
    add_test(NAME dashboard.${name} COMMAND ${PYTHON3} ${t} $<TARGET_FILE:governor>)
    set_tests_properties(dashboard.${name} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
endif()
