#!/bin/bash
# Issue 13's ingest cost with both runs under the same load: the backfill of
# loadtest/rollup.sh written with rollups (-rollup.intervals default, 1h)
# and without (-rollup.intervals=) at the same time, each by its own server
# and load generator into its own data directory (OUTDIR/on, OUTDIR/off), so
# that whatever else the machine runs weighs on both alike; then the server
# CPU of each (its life, start to close, by /usr/bin/time) and their ratio.
# The same variables as rollup.sh (SERIES, DAYS, INTERVAL, VMEM).
#
#   SERIES=600 DAYS=10 INTERVAL=10s nice -n 5 loadtest/rollup_pair.sh OUTDIR
set -euo pipefail
OUT=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
ONLY=rollup QUERY=0 "$here/rollup.sh" "$OUT/on" > "$OUT/on.log" 2>&1 &
on=$!
ONLY=raw QUERY=0 "$here/rollup.sh" "$OUT/off" > "$OUT/off.log" 2>&1 &
off=$!
wait "$on"; wait "$off"
read -r u1 s1 _ < "$OUT/on/write-rollup.time"
read -r u0 s0 _ < "$OUT/off/write-raw.time"
awk -v u1="$u1" -v s1="$s1" -v u0="$u0" -v s0="$s0" 'BEGIN {
  on = u1 + s1; off = u0 + s0
  printf "server CPU-s over its life (user + sys): rollups %.2f, none %.2f: rollups cost %+.1f %%\n", on, off, 100 * (on / off - 1)
}' | tee "$OUT/pair.txt"
for d in on off; do grep -h "server pid" "$OUT/$d"/write-*.txt | sed "s/^/$d: /" | tee -a "$OUT/pair.txt"; done
