#!/usr/bin/env bash
# Installs what is missing, builds (plain -Werror, then ASan+UBSan) and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tests/install-deps.sh --test

jobs=$(nproc 2>/dev/null || echo 2)

echo "== format check"
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find server tests -name '*.[ch]')
[ -n "$files" ] && clang-format --dry-run -Werror $files

echo "== plain build (-Werror)"
cmake -S . -B build -DWERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs")

echo "== sanitized build (address;undefined)"
cmake -S . -B build-san -DWERROR=ON -DSANITIZE='address;undefined' \
      -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-san -j "$jobs"
(cd build-san && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j "$jobs")

echo "== fuzz (libFuzzer, ASan+UBSan, bounded)"
bash tests/fuzz/run.sh 30
