# Benchmarks are built, not run by ctest: tests/bench/run.sh prints their figures.
add_executable(bench_bare ${CMAKE_SOURCE_DIR}/tests/bench/bare.c)
target_link_libraries(bench_bare PRIVATE PkgConfig::EVENT PkgConfig::JANSSON)
add_executable(bench_core ${CMAKE_SOURCE_DIR}/tests/bench/bench_core.c)
target_link_libraries(bench_core PRIVATE server_lib)
add_executable(bench_plugin ${CMAKE_SOURCE_DIR}/tests/bench/bench_plugin.c)
target_link_libraries(bench_plugin PRIVATE server_lib)
