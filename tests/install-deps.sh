#!/usr/bin/env bash
# Installs, from Debian 12's packages, whatever governor needs to build, run and test and is
# not there yet. Needs root when something is missing; does nothing otherwise.
set -euo pipefail
need=()
for p in build-essential cmake pkg-config clang-format liblua5.4-dev libevent-dev \
         libjansson-dev libsqlite3-dev sqlite3 tzdata curl python3 wrk clang \
         libclang-rt-14-dev chromium; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages: ${need[*]} (run as root, or install them with apt-get)" >&2
    exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
