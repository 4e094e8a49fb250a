# `governor test` over the shipped policies and the hostile plugins, through the CLI.
add_test(NAME policy.shipped COMMAND $<TARGET_FILE:governor> test ${CMAKE_SOURCE_DIR}/policies)
add_test(NAME policy.hostile COMMAND $<TARGET_FILE:governor> test ${CMAKE_SOURCE_DIR}/tests/policy)
set_tests_properties(policy.shipped policy.hostile PROPERTIES TIMEOUT 300)
