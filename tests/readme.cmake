# The README as a new user follows it (tests/readme/): every block run in order in a copy of
# the repository (run.py), and its reference tables equal to `governor reference` (reference.py).
find_program(PYTHON3 python3)
if(PYTHON3)
  add_test(NAME readme.blocks
    COMMAND ${PYTHON3} ${CMAKE_SOURCE_DIR}/tests/readme/run.py $<TARGET_FILE_DIR:governor>)
  set_tests_properties(readme.blocks PROPERTIES TIMEOUT 240)
  add_test(NAME readme.reference
    COMMAND ${PYTHON3} ${CMAKE_SOURCE_DIR}/tests/readme/reference.py $<TARGET_FILE_DIR:governor>)
  set_tests_properties(readme.reference PROPERTIES TIMEOUT 60)
endif()
