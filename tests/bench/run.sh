#!/usr/bin/env bash
# The decide benchmark: prints every performance figure beside its baseline from the same run
# (tests/bench/README.md). `--quick` takes a couple of minutes, `--scale` adds the 100,000-job
# figures (long); `--help` lists the options.
#
# usage: tests/bench/run.sh [--build DIR] [--quick] [--seconds S] [--repeat N] [--scale] ...
set -euo pipefail
exec python3 "$(dirname "$0")/bench.py" "$@"
