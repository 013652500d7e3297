#!/usr/bin/env bash
# soak.sh — the soak of issue 11: build hourglass and hourglass-loadtest,
# start the server on a fresh temporary data directory and an ephemeral
# loopback port (under a memory limit), then run "hourglass-loadtest soak"
# against it: the maximum ingest measured by running the soak's own writer
# (same dialect, series, workers, batch size, live timestamps) flat out for
# SOAK_MEASURE_WARMUP untimed then SOAK_MEASURE timed, with the query mix
# running over the data written (its ranges ending at the newest point,
# sized to read what the soak's read; SOAK_MEASURE_QUERIES=false: the
# writer alone), then writes paced
# at SOAK_FRACTION of it with live timestamps for SOAK_DURATION while the
# query mix runs in both dialects, the server's RSS sampled every
# SOAK_SAMPLE. Exits 1 on any write or query error, when the writes reach
# less than SOAK_MIN_ACHIEVED of the target, or when RSS after the warm-up
# is not flat (slope ≤ SOAK_MAX_SLOPE MB/min
# and the largest sample ≤ (1+SOAK_MAX_SPREAD) × the median).
#
# The warm-up: the longest query range (10 minutes: until then a query's
# range still holds the measure's data and the points each query reads grow
# with the soak's; -warmup-ranges), at least SOAK_WARMUP, then on until the
# server's block cache is full
# (hourglass_store_block_cache_bytes and _memtable_bytes at 90 % of
# _block_cache_capacity_bytes on its /metrics), SOAK_CACHE_WARMUP_MAX into
# the soak at the latest. The cache is bounded (-store-cache-bytes plus the
# memtables' share) but fills only as the queries read blocks, minutes into
# the soak at this load; until then RSS rises by design. After the warm-up
# any growth fails, the cache's included (it cannot grow past its
# capacity). The report says when and why the warm-up ended. With the
# defaults 10 minutes are judged, and the whole run takes about 25.
#
# Environment (defaults): SOAK_DURATION (20m), SOAK_MEASURE (60s),
# SOAK_MEASURE_WARMUP (2m), SOAK_MEASURE_QUERIES (true), SOAK_FRACTION
# (0.8), SOAK_MIN_ACHIEVED (0.95), SOAK_WARMUP (2m), SOAK_CACHE_WARMUP_MAX
# (6m; 0: the warm-up is SOAK_WARMUP alone), SOAK_SAMPLE (5s),
# SOAK_SERIES (20000), SOAK_DIALECT (prom-rw1), SOAK_MAX_SLOPE (5),
# SOAK_MAX_SPREAD (0.2), SOAK_VMEM_KB (the server's ulimit -v, 4000000),
# SOAK_OUT (where
# the report, the JSON and the server's log go: /tmp/hourglass-soak),
# SOAK_ARGS (more flags for hourglass-loadtest soak), SOAK_SERVER_ARGS (more
# flags for hourglass, e.g. -debug.pprof to take heap profiles during the run),
# SOAK_GOMEMLIMIT (the server's GOMEMLIMIT, e.g. 1GiB; default none).
# Every query answer with no series is recorded in SOAK_OUT/empty-answers.jsonl
# (the request, when it was sent, the newest point sent by then, the answer;
# the first 500), to be sent again.
set -euo pipefail

: "${SOAK_DURATION:=20m}" "${SOAK_CACHE_WARMUP_MAX:=6m}" "${SOAK_MEASURE:=60s}" "${SOAK_FRACTION:=0.8}" "${SOAK_WARMUP:=2m}"
: "${SOAK_SAMPLE:=5s}" "${SOAK_SERIES:=20000}" "${SOAK_DIALECT:=prom-rw1}" "${SOAK_MAX_SLOPE:=5}"
: "${SOAK_MEASURE_QUERIES:=true}" "${SOAK_MEASURE_WARMUP:=2m}" "${SOAK_MIN_ACHIEVED:=0.95}"
: "${SOAK_MAX_SPREAD:=0.2}" "${SOAK_VMEM_KB:=4000000}" "${SOAK_OUT:=/tmp/hourglass-soak}" "${SOAK_ARGS:=}" "${SOAK_SERVER_ARGS:=}" "${SOAK_GOMEMLIMIT:=}"

REPO=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$SOAK_OUT/bin"
OUT=$(cd "$SOAK_OUT" && pwd)
echo ">> building hourglass and hourglass-loadtest from $REPO ($(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?'))"
(cd "$REPO" && go build -o "$OUT/bin/hourglass" ./cmd/hourglass && go build -o "$OUT/bin/hourglass-loadtest" ./cmd/hourglass-loadtest)

DATA=$(mktemp -d "${TMPDIR:-/tmp}/hourglass-soak-data.XXXXXX")
LOG="$OUT/server.log"
# Emptied before the server starts: the loop below must not read the
# address of an earlier run's server from a reused SOAK_OUT.
: >"$LOG"
PID=""
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 1 600); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PID" 2>/dev/null || true
  fi
  rm -rf "$DATA"
}
trap cleanup EXIT

# The subshell sets the limit and becomes the server: $! is its pid.
# shellcheck disable=SC2086 # SOAK_SERVER_ARGS is a list of flags
( ulimit -v "$SOAK_VMEM_KB"; [ -z "$SOAK_GOMEMLIMIT" ] || export GOMEMLIMIT="$SOAK_GOMEMLIMIT"
  exec "$OUT/bin/hourglass" -listen 127.0.0.1:0 -data-dir "$DATA" $SOAK_SERVER_ARGS ) >"$LOG" 2>&1 &
PID=$!
ADDR=""
for _ in $(seq 1 300); do
  ADDR=$(sed -n 's/.*hourglass listening on \([0-9.:]*\).*/\1/p' "$LOG" | head -1)
  [ -n "$ADDR" ] && break
  kill -0 "$PID" 2>/dev/null || { echo "soak.sh: the server exited:" >&2; cat "$LOG" >&2; exit 2; }
  sleep 0.1
done
[ -n "$ADDR" ] || { echo "soak.sh: no 'hourglass listening on' line in 30 s" >&2; exit 2; }
echo ">> server pid $PID on $ADDR (ulimit -v $SOAK_VMEM_KB kB, GOMEMLIMIT ${SOAK_GOMEMLIMIT:-unset}), data in $DATA; load average: $(cut -d' ' -f1-3 /proc/loadavg)"

rc=0
# shellcheck disable=SC2086 # SOAK_ARGS is a list of flags
"$OUT/bin/hourglass-loadtest" soak -url "http://$ADDR" -pid "$PID" -dialect "$SOAK_DIALECT" \
  -series "$SOAK_SERIES" -measure "$SOAK_MEASURE" -measure-warmup "$SOAK_MEASURE_WARMUP" -measure-queries="$SOAK_MEASURE_QUERIES" -fraction "$SOAK_FRACTION" \
  -min-achieved "$SOAK_MIN_ACHIEVED" -duration "$SOAK_DURATION" \
  -warmup "$SOAK_WARMUP" -cache-warmup-max "$SOAK_CACHE_WARMUP_MAX" -sample "$SOAK_SAMPLE" -max-slope "$SOAK_MAX_SLOPE" -max-spread "$SOAK_MAX_SPREAD" \
  -json "$OUT/soak.json" -empty-log "$OUT/empty-answers.jsonl" $SOAK_ARGS >"$OUT/soak.txt" 2>"$OUT/soak-progress.txt" || rc=$?
cat "$OUT/soak.txt"
[ "$rc" -eq 0 ] || tail -5 "$OUT/soak-progress.txt" >&2
kill -0 "$PID" 2>/dev/null || { echo "soak.sh: the server died during the soak; its log: $LOG" >&2; rc=1; }
echo ">> load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); report in $OUT/soak.txt and $OUT/soak.json, server log $LOG"
exit "$rc"
