# flink.cmake - the tests of `governor flink` (tests/flink/): Python 3 (stdlib only) scripts
# that run the binary against a fake Flink JobManager (tests/flink/fakejm.py) serving the
# shapes of Flink's REST responses, for jobs of the simulator's model.
find_program(PYTHON3 python3)
if(PYTHON3)
  file(GLOB FLINK_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/flink/test_*.py)
  foreach(t ${FLINK_TESTS})
    get_filename_component(name ${t} NAME_WE)
    add_test(NAME flink.${name} COMMAND ${PYTHON3} ${t} $<TARGET_FILE:governor>)
    set_tests_properties(flink.${name} PROPERTIES TIMEOUT 240
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
endif()
