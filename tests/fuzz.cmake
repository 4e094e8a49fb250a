# libFuzzer targets (clang only): cmake -DCMAKE_C_COMPILER=clang -DFUZZ=ON builds every
# source with coverage instrumentation and links tests/fuzz/fuzz_*.c with libFuzzer.
# tests/fuzz/run.sh builds and runs them for a bounded time over the seed corpora.
option(FUZZ "Build the libFuzzer targets (needs clang)" OFF)
if(FUZZ)
  file(GLOB FUZZ_TARGETS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
  foreach(src ${FUZZ_TARGETS})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_link_libraries(${name} PRIVATE server_lib)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  endforeach()
endif()
