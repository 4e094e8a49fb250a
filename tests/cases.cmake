# Data-driven decision cases: tests/cases/<case>/{trace.jsonl,config,expected.jsonl}.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cases COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/cases/run.py
         $<TARGET_FILE:governor>)
set_tests_properties(cases PROPERTIES TIMEOUT 300)
