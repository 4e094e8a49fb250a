#!/usr/bin/env bash
# The decide benchmark: wrk POSTs the same samples to a bare libevent server (parse the JSON,
# answer) and to `governor serve`, and prints requests/s and latency for both and their ratio.
# Machines are shared and noisy: only the ratio within one run means anything.
#
# usage: tests/bench/run.sh [BUILD_DIR] [SECONDS] [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
secs=${2:-5}
conns=${3:-16}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
[ -x "$build/bench_bare" ] || { echo "build $build first (bench_bare missing)" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }

run_wrk() { # url -> "rps p50_ms p99_ms"
    wrk -t2 -c"$conns" -d"${secs}s" --latency -s tests/bench/post.lua "$1" >"$tmp/wrk.txt"
    local rps p50 p99
    rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk.txt")
    p50=$(awk '$1=="50%" {print $2}' "$tmp/wrk.txt")
    p99=$(awk '$1=="99%" {print $2}' "$tmp/wrk.txt")
    grep -q "Non-2xx" "$tmp/wrk.txt" && { echo "non-2xx answers:" >&2; cat "$tmp/wrk.txt" >&2; }
    echo "$rps $p50 $p99"
}

port=$(free_port)
"$build/bench_bare" "$port" & pids+=($!)
wait_port "$port"
read -r bare_rps bare_p50 bare_p99 <<<"$(run_wrk "http://127.0.0.1:$port")"

for sync in FULL NORMAL; do
    port=$(free_port)
    "$build/governor" serve --listen "127.0.0.1:$port" --db "$tmp/bench-$sync.db" \
        --synchronous "$sync" --log-level warn & pids+=($!)
    wait_port "$port"
    read -r rps p50 p99 <<<"$(run_wrk "http://127.0.0.1:$port")"
    printf 'governor (synchronous=%s): %8.0f req/s  p50 %s  p99 %s\n' "$sync" "$rps" "$p50" "$p99"
    printf '  ratio to bare libevent+jansson: %.3f of its throughput\n' \
        "$(python3 -c "print($rps / $bare_rps)")"
done
printf 'bare libevent+jansson:        %8.0f req/s  p50 %s  p99 %s\n' "$bare_rps" "$bare_p50" "$bare_p99"
