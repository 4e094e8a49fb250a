# Data-driven decision cases: tests/cases/<case>/{scenario.json,trace.jsonl,config,expected.jsonl}.
# One CTest test per case (cases.<case>, so a failure names its case), each replaying its trace
# three times through run.py; and cases.traces, which checks that every trace.jsonl is what
# gen.py makes of its scenario.json.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
file(GLOB CASE_EXPECTED CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/cases/*/expected.jsonl)
foreach(f ${CASE_EXPECTED})
  get_filename_component(dir ${f} DIRECTORY)
  get_filename_component(name ${dir} NAME)
  add_test(NAME cases.${name} COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/cases/run.py
           $<TARGET_FILE:governor> ${name})
  set_tests_properties(cases.${name} PROPERTIES TIMEOUT 120)
endforeach()
add_test(NAME cases.traces COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/cases/gen.py --check)
set_tests_properties(cases.traces PROPERTIES TIMEOUT 60)
