# The server's folders as layers: every include points down (tests/layers/check.py).
add_test(NAME layers COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/layers/check.py)
