#!/usr/bin/env bash
# pgo.sh — refresh cmd/hourglass/default.pgo, the CPU profile that go build
# uses for profile-guided optimisation (PGO) of the server: build hourglass
# without it, then for each write dialect start it on a fresh data directory
# with -debug.pprof, write SERIES x STEPS points with hourglass-loadtest and
# take a CPU profile of the server while it writes; merge the profiles.
#
# usage: loadtest/pgo.sh [SERIES [STEPS [SECONDS]]]   (defaults 5000 2880 8)
#
# Run it from the repository's root on a machine doing nothing else of note;
# it writes cmd/hourglass/default.pgo (commit it with the figures that show
# the new profile is no worse: docs/benchmarks.md, issue 17).
set -euo pipefail
SERIES=${1:-5000} STEPS=${2:-2880} SECS=${3:-8}
W=$(mktemp -d "${TMPDIR:-/tmp}/hourglass-pgo.XXXXXX")
trap 'rm -rf "$W"' EXIT
go build -pgo=off -o "$W/hourglass" ./cmd/hourglass
go build -o "$W/loadtest" ./cmd/hourglass-loadtest
profiles=()
for d in prom-rw1 prom-rw2 opentsdb-put telnet; do
  "$W/hourglass" -listen 127.0.0.1:0 -data-dir "$W/data-$d" -log-level warn -debug.pprof > "$W/$d.out" 2> "$W/$d.log" &
  pid=$!
  for _ in $(seq 1 300); do grep -q '^hourglass listening on ' "$W/$d.out" 2>/dev/null && break; sleep 0.1; done
  addr=$(sed -n 's/^hourglass listening on //p' "$W/$d.out")
  [ -n "$addr" ] || { echo "pgo.sh: hourglass did not start, see $W/$d.log" >&2; exit 1; }
  ( sleep 2; curl -sf -o "$W/$d.prof" "http://$addr/debug/pprof/profile?seconds=$SECS" ) &
  prof=$!
  "$W/loadtest" write -series "$SERIES" -steps "$STEPS" -interval 10s -seed 1 -dialect "$d" -url "http://$addr" \
    -workers 4 -batch 5000 -telnet-sync -duration 1h -pid "$pid" -quiet > "$W/$d.write.txt" 2>&1 || { cat "$W/$d.write.txt"; exit 1; }
  wait "$prof"
  kill -TERM "$pid"; wait "$pid" || true
  profiles+=("$W/$d.prof")
done
go tool pprof -proto "${profiles[@]}" > cmd/hourglass/default.pgo
echo "pgo.sh: wrote cmd/hourglass/default.pgo from ${#profiles[@]} profiles ($SERIES series x $STEPS points each)"
