#!/usr/bin/env bash
# compare.sh — the side-by-side benchmark: the same load and the same queries
# against hourglass (fsync before acknowledging, and -wal-fsync=interval),
# VictoriaMetrics single-node and Prometheus, one after another on this
# machine, each on loopback with a fresh data directory; one Markdown table.
#
# usage: loadtest/compare.sh [-vm PATH] [-prom PATH] [options]
#
#   -vm PATH        a victoria-metrics single-node binary (optional)
#   -prom PATH      a prometheus binary (optional)
#   -out DIR        results directory (default /tmp/hourglass-compare): each
#                   invocation writes DIR/<UTC time>/ (table.md, reports/ with
#                   every raw JSON and text report, logs/, data/) and never
#                   removes an earlier one; the binaries go in DIR/bin
#   -series N       series at any one time (default 5000)
#   -steps N        points per series (default 8640: 10 s over one day)
#   -interval D     time between points (default 10s)
#   -values MODE    decimal (default: gauges with two decimals, integer
#                   counters) or float (full-precision floats)
#   -workers N      concurrent writers (default 4)
#   -batch N        points per request (default 5000)
#   -queries N      queries of the dashboard mix per system (default 250; 0: none, writes only)
#   -concurrency N  queries in flight (default 4)
#   -only LIST      systems to run, comma-separated, of hg-fsync,hg-interval,vm,prom (default: all given)
#   -dialects LIST  write dialects, comma-separated (default: every one each system speaks)
#   -keep-data      keep each run's data directory (default: removed once measured)
#   -settle-timeout S  seconds to wait for hourglass's flusher before the queries (default 300)
#
# The peers are not part of this repository and this script neither fetches
# nor builds them. Build them yourself from their public sources, outside
# this repository:
#   VictoriaMetrics (github.com/VictoriaMetrics/VictoriaMetrics): in a checkout,
#     go build ./app/victoria-metrics   (its Makefile's "victoria-metrics" target
#     adds build info; with CGO_ENABLED=0 it builds without the vendored zstd
#     C library, as its "-pure" targets do).
#   Prometheus (github.com/prometheus/prometheus): in a checkout,
#     go build ./cmd/prometheus   (without the builtinassets tag the web UI is
#     not embedded; the HTTP API, all this script uses, works the same).
#
# What it runs, per system and write dialect: start the server on 127.0.0.1,
# write -series x -steps points (timestamps ending at the script's start,
# identical for every run) while summing the sizes of every file in the data
# directory every 0.25 s until the server exits and once just before SIGTERM
# (the running peak: writes, settling, queries and shutdown; what it holds
# in memory is not on disk yet, so a short run can show less than it will
# hold), bring it to a stated
# state, run the query mix after the first dialect (the Prometheus
# query_range API where the server has it; hourglass also with OpenTSDB
# /api/query), stop the server with SIGTERM, and measure the whole data
# directory again (every file). The state before the queries:
#   VictoriaMetrics: GET /internal/force_flush, which returns once every row
#     it accepted is in a searchable part (in-memory parts go to files
#     within its -inmemoryDataFlushInterval, 5 s); its caches off
#     (-search.disableCache).
#   hourglass: no flush forced (it has no such endpoint): the script waits
#     until its /metrics say hourglass_head_flush_queue_chunks 0 and
#     hourglass_head_late_points 0, i.e. every sealed and late chunk is in
#     the store and the head holds only the chunks still open (the newest
#     hour or so of each series, in memory and in its WAL).
#   Prometheus: nothing forced; its head keeps the newest hours in memory and
#     its WAL, compacting older ones into blocks in the background.
# Each system's /metrics (and hourglass's /api/status) at that moment is kept
# in reports/. Columns and ratios: see docs/benchmarks.md.
set -euo pipefail

ARGS="$*"
VM_BIN="" PROM_BIN="" OUT=/tmp/hourglass-compare
SERIES=5000 STEPS=8640 INTERVAL=10s WORKERS=4 BATCH=5000 QUERIES=250 CONCURRENCY=4
ONLY="" DIALECTS="" KEEP="" VALUES=decimal SETTLE=300
while [ $# -gt 0 ]; do
  case "$1" in
    -vm) VM_BIN=$2; shift 2 ;;
    -prom) PROM_BIN=$2; shift 2 ;;
    -out) OUT=$2; shift 2 ;;
    -series) SERIES=$2; shift 2 ;;
    -steps) STEPS=$2; shift 2 ;;
    -interval) INTERVAL=$2; shift 2 ;;
    -values) VALUES=$2; shift 2 ;;
    -settle-timeout) SETTLE=$2; shift 2 ;;
    -workers) WORKERS=$2; shift 2 ;;
    -batch) BATCH=$2; shift 2 ;;
    -queries) QUERIES=$2; shift 2 ;;
    -concurrency) CONCURRENCY=$2; shift 2 ;;
    -only) ONLY=$2; shift 2 ;;
    -dialects) DIALECTS=$2; shift 2 ;;
    -keep-data) KEEP=1; shift ;;
    -h|-help|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown option $1 (see -help)" >&2; exit 2 ;;
  esac
done
for b in "$VM_BIN" "$PROM_BIN"; do
  if [ -n "$b" ] && [ ! -x "$b" ]; then echo "compare.sh: $b is not an executable" >&2; exit 2; fi
done

case $VALUES in decimal|float) ;; *) echo "compare.sh: -values $VALUES: want decimal or float" >&2; exit 2 ;; esac

REPO=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT/bin"
BIN=$(cd "$OUT/bin" && pwd)
OUT=$(cd "$OUT" && pwd)/$(date -u +%Y%m%dT%H%M%SZ)
if [ -e "$OUT" ]; then echo "compare.sh: $OUT exists; wait a second" >&2; exit 1; fi
mkdir -p "$OUT/reports" "$OUT/logs" "$OUT/data"
echo ">> building hourglass and hourglass-loadtest from $REPO; results in $OUT"
(cd "$REPO" && go build -o "$BIN/hourglass" ./cmd/hourglass && go build -o "$BIN/hourglass-loadtest" ./cmd/hourglass-loadtest)
LT="$BIN/hourglass-loadtest"
{
  echo "command: $0 $ARGS"
  echo "hourglass: $(cd "$REPO" && git rev-parse HEAD 2>/dev/null || echo unknown)$(cd "$REPO" && git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  for b in "$VM_BIN" "$PROM_BIN"; do [ -n "$b" ] && echo "peer: $b $(sha256sum "$b" | cut -c1-16)"; done
  echo "machine: $(uname -sm), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
} > "$OUT/run.txt"

# Every run writes the same points: the range ends at the script's start.
INTERVAL_S=$(( $(echo "$INTERVAL" | sed 's/s$//') ))
NOW=$(date +%s)
START=$(( NOW / INTERVAL_S * INTERVAL_S - STEPS * INTERVAL_S ))
LONG_RANGE=$(( STEPS * INTERVAL_S < 86400 ? STEPS * INTERVAL_S : 86400 ))s
GEN=(-series "$SERIES" -steps "$STEPS" -interval "$INTERVAL" -start "$START" -seed 1 -values "$VALUES")
RUNS="$OUT/reports/runs.tsv"
: > "$RUNS"
echo ">> $SERIES series x $STEPS points = $(( SERIES * STEPS )) points per run, from $(date -u -d @"$START" +%FT%TZ)"

wanted() { [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]; }
dialect_wanted() { [ -z "$DIALECTS" ] || [[ ",$DIALECTS," == *",$1,"* ]]; }

# free_port: a port below the kernel's ephemeral range (so no outgoing
# connection takes it meanwhile) on which no socket is bound.
free_port() {
  local p lo; lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  for _ in $(seq 1 100); do
    p=$(( 10000 + RANDOM % (lo > 11000 ? lo - 10000 : 1000) ))
    if ! ss -Htan "sport = :$p" | grep -q .; then echo "$p"; return; fi
  done
  echo "compare.sh: no free port found" >&2; exit 1
}

wait_http() { # URL [seconds]
  for _ in $(seq 1 $(( ${2:-60} * 10 ))); do
    if curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; then return 0; fi
    if [ -n "$SERVER_PID" ] && ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi # it exited
    sleep 0.1
  done
  echo "compare.sh: $1 did not answer" >&2; return 1
}

SERVER_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"
    for _ in $(seq 1 1200); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$SERVER_PID" 2>/dev/null; then echo "compare.sh: pid $SERVER_PID did not stop in 120s; killing it" >&2; kill -KILL "$SERVER_PID"; fi
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}
trap stop_server EXIT

# start_SYSTEM DATA_DIR LOG: start the server in the background and set
# SERVER_PID, HTTP_URL (writes and queries), PUT_URL (/api/put), TELNET_ADDR
# (telnet put, empty if none), TELNET_SYNC.
start_hg() { # extra hourglass flags follow
  local dir=$1 log=$2; shift 2
  "$BIN/hourglass" -listen 127.0.0.1:0 -data-dir "$dir" -log-level warn "$@" > "$log.out" 2> "$log" &
  SERVER_PID=$!
  for _ in $(seq 1 600); do grep -q '^hourglass listening on ' "$log.out" 2>/dev/null && break; sleep 0.1; done
  local addr; addr=$(sed -n 's/^hourglass listening on //p' "$log.out")
  [ -n "$addr" ] || { echo "compare.sh: hourglass did not start, see $log" >&2; exit 1; }
  HTTP_URL="http://$addr" PUT_URL="http://$addr" TELNET_ADDR=$addr TELNET_SYNC=true TELNET_CONFIRM=()
}
start_vm() { # three ports picked up front: another process may take one meanwhile, so try thrice
  local try
  for try in 1 2 3; do
    start_vm_once "$@" && return 0
    stop_server
    echo "   VictoriaMetrics did not start (try $try): $(tail -n1 "$2")" >&2
    rm -rf "$1"
  done
  exit 1
}
start_vm_once() {
  local dir=$1 log=$2 p1 p2 p3; p1=$(free_port); p2=$(free_port); p3=$(free_port)
  # -search.disableCache: every query is computed, as hourglass computes it.
  "$VM_BIN" -storageDataPath="$dir" -httpListenAddr="127.0.0.1:$p1" \
    -opentsdbHTTPListenAddr="127.0.0.1:$p2" -opentsdbListenAddr="127.0.0.1:$p3" \
    -retentionPeriod=1y -search.disableCache -loggerLevel=WARN > "$log" 2>&1 &
  SERVER_PID=$!
  wait_http "http://127.0.0.1:$p1/health" || return 1
  HTTP_URL="http://127.0.0.1:$p1" PUT_URL="http://127.0.0.1:$p2" TELNET_ADDR="127.0.0.1:$p3" TELNET_SYNC=false
  # Its telnet answers nothing: the run ends when its counter of rows read says all arrived.
  TELNET_CONFIRM=(-confirm-url "$HTTP_URL/metrics" -confirm-series 'vm_rows_inserted_total{type="opentsdb"}')
}
start_prom() {
  local dir=$1 log=$2 p; p=$(free_port)
  mkdir -p "$dir"
  printf 'global:\n  scrape_interval: 1h\n' > "$dir.yml" # no scrape targets: remote write only
  "$PROM_BIN" --config.file="$dir.yml" --storage.tsdb.path="$dir" --web.listen-address="127.0.0.1:$p" \
    --web.enable-remote-write-receiver --storage.tsdb.retention.time=1y --log.level=warn > "$log" 2>&1 &
  SERVER_PID=$!
  wait_http "http://127.0.0.1:$p/-/ready" 120
  HTTP_URL="http://127.0.0.1:$p" PUT_URL="" TELNET_ADDR="" TELNET_SYNC=false TELNET_CONFIRM=()
}

# metric_value URL NAME: the value of an unlabelled sample on a /metrics page.
metric_value() {
  curl -fsS --max-time 10 "$1/metrics" | awk -v n="$2" '$1 == n { print $2; found = 1 } END { if (!found) exit 1 }'
}

# settle_hg URL TAG: wait until hourglass's flusher has written every sealed
# and late chunk (no flush endpoint to force it); log how long it took.
settle_hg() {
  local t0 q l; t0=$(date +%s.%N)
  for _ in $(seq 1 $(( SETTLE * 5 ))); do
    q=$(metric_value "$1" hourglass_head_flush_queue_chunks || echo ?)
    l=$(metric_value "$1" hourglass_head_late_points || echo ?)
    if [ "$q" = 0 ] && [ "$l" = 0 ]; then
      echo "   hourglass settled in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s: flush queue empty, no late points" | tee "$OUT/reports/$2.settle.txt"
      return 0
    fi
    sleep 0.2
  done
  echo "   hourglass did not settle in ${SETTLE}s (flush queue $q chunks, $l late points): querying anyway" | tee "$OUT/reports/$2.settle.txt"
}

# state_before_queries STARTFN URL TAG: bring the server to the stated state
# and keep what it says of itself.
state_before_queries() {
  case $1 in
    start_vm) curl -fsS -o /dev/null --max-time 600 "$2/internal/force_flush" && echo "   VictoriaMetrics: /internal/force_flush done" ;;
    start_hg) settle_hg "$2" "$3"; curl -fsS --max-time 10 "$2/api/status" > "$OUT/reports/$3.status.json" || true ;;
  esac
  curl -fsS --max-time 10 "$2/metrics" > "$OUT/reports/$3.metrics-before-queries.txt" || true
}

has_path() { # URL METHOD: anything but 404
  local code; code=$(curl -s -o /dev/null -w '%{http_code}' -X "$2" -H 'Content-Type: application/x-protobuf' --max-time 10 "$1" || true)
  [ "$code" != 404 ] && [ "$code" != 000 ]
}

# run_system NAME START_FN START_ARGS... -- DIALECTS...
run_system() {
  local name=$1 startfn=$2; shift 2
  local sargs=() dialects=() queried=""
  while [ "$1" != -- ]; do sargs+=("$1"); shift; done; shift
  dialects=("$@")
  for d in "${dialects[@]}"; do
    dialect_wanted "$d" || continue
    local tag="$name-$d" dir="$OUT/data/$name-$d" log="$OUT/logs/$name-$d.log"
    echo ">> $name: $d (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    "$startfn" "$dir" "$log" "${sargs[@]}"
    # The data directory's files, summed every 0.25 s from now until the
    # server has exited: the peak while it ran (writes, settling, queries
    # and its own shutdown).
    "$LT" du -dir "$dir" -pid "$SERVER_PID" -every 250ms -json "$OUT/reports/$tag.disk-running.json" > "$OUT/reports/$tag.disk-running.txt" 2>&1 &
    local du_pid=$!
    local url=$HTTP_URL extra=()
    case $d in
      opentsdb-put) url=$PUT_URL ;;
      telnet) extra=("${TELNET_CONFIRM[@]}") ;;
      prom-rw1|prom-rw2) if ! has_path "$HTTP_URL/api/v1/write" POST; then echo "   $name has no /api/v1/write: skipped"; stop_server; continue; fi ;;
    esac
    "$LT" write "${GEN[@]}" -dialect "$d" -url "$url" -telnet-addr "$TELNET_ADDR" -telnet-sync="$TELNET_SYNC" \
      -workers "$WORKERS" -batch "$BATCH" -duration 2h -pid "$SERVER_PID" -label "$tag" -progress 10s "${extra[@]}" \
      -json "$OUT/reports/$tag.write.json" | tee "$OUT/reports/$tag.write.txt"
    local qrep="-"
    if [ -z "$queried" ] && [ "$QUERIES" -gt 0 ]; then # -queries 0: writes only
      queried=1
      state_before_queries "$startfn" "$HTTP_URL" "$tag"
      local qd=prom
      has_path "$HTTP_URL/api/v1/query_range" GET || qd=opentsdb
      "$LT" query "${GEN[@]}" -query-dialect "$qd" -url "$HTTP_URL" -queries "$QUERIES" -concurrency "$CONCURRENCY" \
        -long-range "$LONG_RANGE" -duration 30m -pid "$SERVER_PID" -label "$tag" -progress 10s \
        -json "$OUT/reports/$tag.query.json" | tee "$OUT/reports/$tag.query.txt"
      qrep="$tag.query.json"
      if [ "$startfn" = start_hg ] && [ "$qd" = prom ]; then
        "$LT" query "${GEN[@]}" -query-dialect opentsdb -url "$HTTP_URL" -queries "$QUERIES" -concurrency "$CONCURRENCY" \
          -long-range "$LONG_RANGE" -duration 30m -pid "$SERVER_PID" -label "$tag" -progress 10s \
          -json "$OUT/reports/$tag.query-opentsdb.json" | tee "$OUT/reports/$tag.query-opentsdb.txt"
        printf '%s\t%s\t-\t%s\t-\n' "$name" "query: OpenTSDB /api/query" "$tag.query-opentsdb.json" >> "$RUNS.extra"
      fi
    fi
    # One more sample just before SIGTERM, so that a run shorter than a few
    # sampling periods still counts its state at the end.
    local last; last=$(find "$dir" -type f -printf '%s\n' 2>/dev/null | awk '{ n += $1 } END { print n + 0 }')
    stop_server
    local peak; wait "$du_pid" || true; peak=$(head -n1 "$OUT/reports/$tag.disk-running.txt")
    [[ "$peak" =~ ^[0-9]+$ ]] || peak=0
    peak=$(( last > peak ? last : peak ))
    echo "$last" > "$OUT/reports/$tag.disk-before-stop.txt"
    # Bytes on disk after stop: the sizes of every file in the data
    # directory (logs, WALs and tables alike), as du sampled them. Preallocated
    # space shows in the allocated figure (du -k), logged beside it; every
    # file is listed in reports/TAG.files.tsv.
    find "$dir" -type f -printf '%s\t%P\n' | sort -k2 > "$OUT/reports/$tag.files.tsv"
    local bytes alloc logs; bytes=$(awk -F'\t' '{ n += $1 } END { print n + 0 }' "$OUT/reports/$tag.files.tsv")
    alloc=$(( $(du -sk "$dir" | cut -f1) * 1024 ))
    logs=$(awk -F'\t' '$2 ~ /(^|\/)(wal\/|[0-9]+\.log$)/ { n += $1 } END { print n + 0 }' "$OUT/reports/$tag.files.tsv")
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$d" "$bytes" "$alloc" "$logs" >> "$OUT/reports/disk.tsv"
    echo "   data directory: peak $peak bytes while running; after stop $bytes bytes in files ($logs in write-ahead logs), $alloc allocated"
    [ -n "$KEEP" ] || rm -rf "$dir"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$d" "$tag.write.json" "$qrep" "$bytes" "$peak" >> "$RUNS"
  done
  if [ -f "$RUNS.extra" ]; then cat "$RUNS.extra" >> "$RUNS"; rm "$RUNS.extra"; fi
}

HG_DIALECTS=(prom-rw1 opentsdb-put telnet prom-rw2)
wanted hg-fsync && run_system "hourglass (fsync)" start_hg -wal-fsync=always -- "${HG_DIALECTS[@]}"
wanted hg-interval && run_system "hourglass (interval)" start_hg -wal-fsync=interval -- "${HG_DIALECTS[@]}"
# VictoriaMetrics reads remote write 1.0 only.
[ -n "$VM_BIN" ] && wanted vm && run_system "VictoriaMetrics" start_vm -- prom-rw1 opentsdb-put telnet
[ -n "$PROM_BIN" ] && wanted prom && run_system "Prometheus" start_prom -- prom-rw1 prom-rw2

{
  echo "<!-- $(date -u +%FT%TZ) $(uname -sm), $(nproc) cores; $SERIES series x $STEPS points every $INTERVAL ($VALUES values), $WORKERS writers, $BATCH points per request; $QUERIES queries at concurrency $CONCURRENCY -->"
  "$LT" table "$RUNS"
} > "$OUT/table.md"
echo
cat "$OUT/table.md"
echo ">> reports in $OUT/reports, logs in $OUT/logs"
