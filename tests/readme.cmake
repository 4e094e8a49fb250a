# The README and the pages of docs/ as a new user follows them (tests/readme/): every block run
# in order in a copy of the repository beside the quick start's server (run.py), and the
# reference tables of docs/api.md equal to `governor reference` (reference.py).
find_program(PYTHON3 python3)
if(PYTHON3)
  add_test(NAME readme.blocks
    COMMAND ${PYTHON3} ${CMAKE_SOURCE_DIR}/tests/readme/run.py $<TARGET_FILE_DIR:governor>)
  set_tests_properties(readme.blocks PROPERTIES TIMEOUT 300)
  add_test(NAME readme.reference
    COMMAND ${PYTHON3} ${CMAKE_SOURCE_DIR}/tests/readme/reference.py $<TARGET_FILE_DIR:governor>)
  set_tests_properties(readme.reference PROPERTIES TIMEOUT 60)
endif()
