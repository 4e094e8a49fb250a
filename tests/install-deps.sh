#!/usr/bin/env bash
# Installs, from Debian 12's packages, what governor needs and is not there yet: to build and
# run it and follow the README (no argument: with curl and the sqlite3 shell), or to build it
# and run every test (--test: adds the formatter, clang and libFuzzer, python3, wrk, Chromium,
# and promtool from prometheus). Needs root when something is missing; does nothing otherwise.
set -euo pipefail
pkgs=(build-essential cmake pkg-config liblua5.4-dev libevent-dev libjansson-dev
      libsqlite3-dev libpq-dev tzdata curl sqlite3)
if [ "${1:-}" = "--test" ]; then
    pkgs+=(clang-format clang libclang-rt-14-dev python3 wrk chromium prometheus)
fi
need=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages: ${need[*]} (run as root, or install them with apt-get)" >&2
    exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
