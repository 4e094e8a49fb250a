#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) and runs each for a bounded time over
# its seed corpus; a crash, a leak or a sanitizer report fails. Skipped without clang.
#
# usage: tests/fuzz/run.sh [SECONDS_PER_TARGET]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-30}
if ! command -v clang >/dev/null; then
    echo "fuzz: clang is not installed, skipped"
    exit 0
fi
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DFUZZ=ON -DWERROR=ON \
      -DSANITIZE='address;undefined' -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link \
      -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_decide fuzz_text fuzz_api \
      fuzz_framing fuzz_codec >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Seeds: every sample of the decision cases, a batch sample and a rebalance request, and
# hand-written texts.
mkdir -p "$work/decide" "$work/text" "$work/api" "$work/framing" "$work/codec"
n=0
for f in tests/cases/*/trace.jsonl; do
    while IFS= read -r line; do
        n=$((n + 1))
        printf '%s' "$line" >"$work/decide/seed$n"
    done <"$f"
done
cp tests/fuzz/corpus/decide/* "$work/decide/"
cp tests/fuzz/corpus/text/* "$work/text/"
cp tests/fuzz/corpus/api/* "$work/api/"
cp tests/fuzz/corpus/framing/* "$work/framing/"
cp tests/fuzz/corpus/codec/* "$work/codec/"
for t in decide text api framing codec; do
    # the framing validator is a small state machine, and the codec a small bit reader:
    # millions of inputs in a third of the time
    t_secs=$secs
    [ "$t" = framing ] || [ "$t" = codec ] && t_secs=$(((secs + 2) / 3))
    echo "== fuzz_$t: $t_secs s"
    ASAN_OPTIONS=detect_leaks=1 "build-fuzz/fuzz_$t" -max_total_time="$t_secs" -timeout=10 \
        -print_final_stats=1 "$work/$t" 2>"$work/$t.log" || { tail -40 "$work/$t.log"; exit 1; }
    grep -E "stat::number_of_executed_units|Done" "$work/$t.log" | tail -2
done
