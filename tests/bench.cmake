# Benchmarks are built, not run by ctest (but for bench.smoke below): tests/bench/run.sh
# prints their figures, tests/bench/profile.py profiles a decision (tests/bench/README.md).
add_executable(bench_bare ${CMAKE_SOURCE_DIR}/tests/bench/bare.c)
target_link_libraries(bench_bare PRIVATE PkgConfig::EVENT PkgConfig::JANSSON)
add_executable(bench_load ${CMAKE_SOURCE_DIR}/tests/bench/load.c)
add_executable(bench_lua ${CMAKE_SOURCE_DIR}/tests/bench/bench_lua.c)
target_link_libraries(bench_lua PRIVATE PkgConfig::LUA)
add_executable(bench_core ${CMAKE_SOURCE_DIR}/tests/bench/bench_core.c)
target_link_libraries(bench_core PRIVATE server_lib)
add_executable(bench_plugin ${CMAKE_SOURCE_DIR}/tests/bench/bench_plugin.c)
target_link_libraries(bench_plugin PRIVATE server_lib)
# Preloaded into the server profiled under valgrind (tests/bench/profile.py).
add_library(bench_spawn_shim MODULE ${CMAKE_SOURCE_DIR}/tests/bench/spawn_shim.c)
target_link_libraries(bench_spawn_shim PRIVATE ${CMAKE_DL_LIBS})

# The benchmark's scripts do not rot: every figure produced on 10 jobs in a few seconds (the
# figures mean nothing at this size; run.sh measures).
add_test(NAME bench.smoke COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/bench/bench.py --smoke
                                  --build ${CMAKE_BINARY_DIR})
set_tests_properties(bench.smoke PROPERTIES TIMEOUT 120)
add_executable(bench_codec ${CMAKE_SOURCE_DIR}/tests/bench/bench_codec.c)
target_link_libraries(bench_codec PRIVATE server_lib)
