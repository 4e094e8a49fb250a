# api.cmake - the schema embedded into the binary (schema/schema.cmake; the top-level
# CMakeLists.txt may include it directly, include_guard makes that harmless) and the API
# tests of `governor serve`: Python 3 (stdlib only) scripts that start the real binary on a
# free 127.0.0.1 port with a temporary database and speak HTTP to it.
include(${CMAKE_SOURCE_DIR}/schema/schema.cmake)

find_program(PYTHON3 python3)
if(PYTHON3)
  file(GLOB API_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/api/test_*.py)
  foreach(t ${API_TESTS})
    get_filename_component(name ${t} NAME_WE)
    add_test(NAME api.${name} COMMAND ${PYTHON3} ${t} $<TARGET_FILE:governor>)
    set_tests_properties(api.${name} PROPERTIES TIMEOUT 180
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
endif()
