# The shipped simulator scenarios (tests/scenarios/*.json): one CTest test each,
# scenarios.<name>, running `governor simulate` twice through tests/scenarios/run.py (every
# policy reported, the JSON and SVG written, the same seed giving the same report). The
# simulator's own arithmetic is checked by tests/unit/test_sim.c. scenarios.readme_example
# runs the README's scenario example the same way.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
# Sanitized builds run a shortened horizon: the whole loop, every scenario, within the time
# a test may take there.
set(SIM_HORIZON "")
if(SANITIZE)
  set(SIM_HORIZON "1 h")
endif()
file(GLOB SIM_SCENARIOS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/scenarios/*.json)
foreach(f ${SIM_SCENARIOS})
  get_filename_component(name ${f} NAME_WE)
  add_test(NAME scenarios.${name} COMMAND ${Python3_EXECUTABLE}
           ${CMAKE_SOURCE_DIR}/tests/scenarios/run.py $<TARGET_FILE:governor> ${f}
           ${CMAKE_SOURCE_DIR}/policies ${CMAKE_BINARY_DIR}/scenarios/${name} ${SIM_HORIZON})
  set_tests_properties(scenarios.${name} PROPERTIES TIMEOUT 300)
endforeach()
add_test(NAME scenarios.readme_example COMMAND ${Python3_EXECUTABLE}
         ${CMAKE_SOURCE_DIR}/tests/scenarios/run.py $<TARGET_FILE:governor> ${CMAKE_SOURCE_DIR}/docs/simulate.md
         ${CMAKE_SOURCE_DIR}/policies ${CMAKE_BINARY_DIR}/scenarios/readme_example "1 h")
set_tests_properties(scenarios.readme_example PROPERTIES TIMEOUT 300)
# The governor profile's goals (tests/scenarios/goals.py): every shipped scenario against the
# flink profile, the hpa baseline and the fixed deployment, and the convergence grid of steady
# loads started at the wrong size; prints the tables, fails when a goal or a recorded bound is
# missed. The sanitized build runs a sample of the grid only.
if(SANITIZE)
  set(GOALS_ARGS --no-shipped --quick)
else()
  set(GOALS_ARGS "")
endif()
add_test(NAME scenarios.goals COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/scenarios/goals.py
         $<TARGET_FILE:governor> ${CMAKE_SOURCE_DIR}/policies ${CMAKE_BINARY_DIR}/scenarios/goals
         ${GOALS_ARGS})
set_tests_properties(scenarios.goals PROPERTIES TIMEOUT 300)
# Every decision of `governor simulate` over the scenario corpus (every shipped scenario,
# every policy, the batch scenario) checked against its action: reasons, messages, proofreading
# (tests/cases/agree.py; the case corpus gets the same checks from tests/cases/run.py).
set(AGREE_HORIZON "")
if(SANITIZE)
  set(AGREE_HORIZON "1 h")
endif()
add_test(NAME scenarios.agreement COMMAND ${Python3_EXECUTABLE}
         ${CMAKE_SOURCE_DIR}/tests/cases/agree.py $<TARGET_FILE:governor>
         ${CMAKE_SOURCE_DIR}/tests/scenarios ${CMAKE_SOURCE_DIR}/policies
         ${CMAKE_BINARY_DIR}/scenarios/agreement ${AGREE_HORIZON})
set_tests_properties(scenarios.agreement PROPERTIES TIMEOUT 300)
# A scenario where each mechanism of the governor profile (issue 23) matters, run with and
# without it (tests/scenarios/mechanisms.py), and the scorecard's quick form: a few held-out
# seeds of every family and a sample of the convergence grid (tests/scenarios/scorecard.py,
# asserting the goal verdicts that hold with margin; the full scorecard is the script).
add_test(NAME scenarios.mechanisms COMMAND ${Python3_EXECUTABLE}
         ${CMAKE_SOURCE_DIR}/tests/scenarios/mechanisms.py $<TARGET_FILE:governor>
         ${CMAKE_SOURCE_DIR}/policies ${CMAKE_BINARY_DIR}/scenarios/mechanisms)
set_tests_properties(scenarios.mechanisms PROPERTIES TIMEOUT 300)
if(SANITIZE)
  set(SCORECARD_ARGS --quick --sanitized)
else()
  set(SCORECARD_ARGS --quick)
endif()
add_test(NAME scenarios.scorecard COMMAND ${Python3_EXECUTABLE}
         ${CMAKE_SOURCE_DIR}/tests/scenarios/scorecard.py $<TARGET_FILE:governor> --check
         --policies ${CMAKE_SOURCE_DIR}/policies --work ${CMAKE_BINARY_DIR}/scenarios/scorecard
         ${SCORECARD_ARGS})
set_tests_properties(scenarios.scorecard PROPERTIES TIMEOUT 300)
