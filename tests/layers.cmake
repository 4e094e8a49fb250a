# The server's folders as layers: every include points down (tests/layers/check.py).
add_test(NAME layers COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layers/check.py)
# No run of six lines or more written twice in server/ beyond a budget (tests/layers/dups.py
# lists them: identical runs, whitespace, blank lines, lone braces and includes aside).
add_test(NAME layers.dups COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layers/dups.py --quiet --max 30)
