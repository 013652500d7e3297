#!/bin/bash
# Issue 13's benchmark at its scale (docs/benchmarks.md, "Rollups (issue
# 13): queries"): SERIES series × DAYS days at INTERVAL written by the load
# generator as a backfill into a new data directory, the server restarted so
# every hour is settled, then `1h-avg` grouped by dc over the whole range
# from rollups and with ROLLUP_RAW (and the PromQL form), ROUNDS rounds
# interleaved; the disk of the data table against the rollup table. With
# RAW=1 the same backfill is written a second time with -rollup.intervals=
# (rollups off) into its own directory, for the ingest CPU and disk cost;
# FIRST=raw writes that one first (to interleave the order across runs).
# ONLY=rollup or ONLY=raw writes that one alone, QUERY=0 skips the queries:
# loadtest/rollup_pair.sh runs the two at once, so that both meet the same
# load on a shared machine.
# SKIP_WRITE=1 queries the data set an earlier run left in OUTDIR; PROM=0
# leaves out the PromQL form (at 5,000 series and 10 s its raw query passes
# the default -prom-query-max-samples: raise it with QUERY_ARGS, the extra
# flags of the server that answers the queries, e.g.
# QUERY_ARGS="-prom-query-max-samples 200000000"). WARM=1 sends each
# query once unmeasured just before it is measured (the block cache warm;
# otherwise each follows the other way's query).
# Every process runs under `ulimit -v $VMEM` (KiB).
#
#   loadtest/rollup.sh OUTDIR
#   SERIES=5000 DAYS=30 INTERVAL=60s ROUNDS=3 RAW=1 VMEM=4000000 loadtest/rollup.sh OUTDIR
set -euo pipefail
OUT=$1
SERIES=${SERIES:-5000}; DAYS=${DAYS:-30}; INTERVAL=${INTERVAL:-60s}; ROUNDS=${ROUNDS:-3}
RAW=${RAW:-0}; PROM=${PROM:-1}; VMEM=${VMEM:-4000000}; START=${START:-1763510400}; SKIP_WRITE=${SKIP_WRITE:-0}
WARM=${WARM:-0}; FIRST=${FIRST:-rollup}; ONLY=${ONLY:-}; QUERY=${QUERY:-1}
read -r -a qargs <<< "${QUERY_ARGS:-}"
secs=${INTERVAL%s}
case $INTERVAL in *m) secs=$(( ${INTERVAL%m} * 60 ));; esac
STEPS=$(( DAYS * 86400 / secs ))
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
go build -o "$OUT/hourglass" ./cmd/hourglass
go build -o "$OUT/hourglass-loadtest" ./cmd/hourglass-loadtest
ulimit -v "$VMEM"
PID=; SPID=
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; [ -n "$PID" ] && kill "$PID" 2>/dev/null || true' EXIT

start() { # name extra-flags...: starts the server on $OUT/data-name, sets ADDR and PID
  local d=$OUT/data-$1; shift
  mkdir -p "$d"
  /usr/bin/time -f '%U %S %M' -o "$d.time" "$OUT/hourglass" -listen 127.0.0.1:0 -data-dir "$d" -log-level warn "$@" \
    > "$d.out" 2> "$d.err" &
  PID=$!
  ADDR=
  for _ in $(seq 1 3000); do
    ADDR=$(sed -n 's/^hourglass listening on //p' "$d.out"); [ -n "$ADDR" ] && break; sleep 0.1
  done
  [ -n "$ADDR" ] || { echo "server $d did not start" >&2; exit 1; }
  SPID=$(pgrep -P "$PID" -x hourglass || echo "$PID")
}
stop() { kill -TERM "$SPID"; wait "$PID" || true; PID=; SPID=; }

write() { # name extra-flags...: the backfill, then a stop that settles every hour
  local name=$1; shift
  rm -rf "$OUT/data-$name"
  start "$name" "$@"
  "$OUT/hourglass-loadtest" write -url "http://$ADDR" -pid "$SPID" -series "$SERIES" -interval "$INTERVAL" \
    -steps "$STEPS" -start "$START" -duration 5h -quiet -label "$name" -json "$OUT/write-$name.json" \
    > "$OUT/write-$name.txt"
  stop
  cp "$OUT/data-$name.time" "$OUT/write-$name.time"
  echo "$name: user sys maxrss-KiB over the server's life (start, backfill, close): $(cat "$OUT/write-$name.time")"
}

if [ "$SKIP_WRITE" != 1 ] && [ -n "$ONLY" ]; then
  if [ "$ONLY" = raw ]; then write raw -rollup.intervals=; else write rollup; fi
elif [ "$SKIP_WRITE" != 1 ]; then
  if [ "$RAW" = 1 ] && [ "$FIRST" = raw ]; then
    write raw -rollup.intervals=
    write rollup
  else
    write rollup
    [ "$RAW" = 1 ] && write raw -rollup.intervals=
  fi
fi

if [ "$QUERY" = 0 ]; then exit 0; fi
start rollup "${qargs[@]}"
promflag=()
[ "$PROM" = 1 ] || promflag=(-prom "")
[ "$WARM" = 1 ] && promflag+=(-warm)
"$OUT/hourglass-loadtest" rollup -url "http://$ADDR" -pid "$SPID" -series "$SERIES" -interval "$INTERVAL" \
  -steps "$STEPS" -start "$START" -rounds "$ROUNDS" "${promflag[@]}" -json "$OUT/query.json" | tee "$OUT/query.txt"
stop
echo "disk (du -sb, bytes): data set, data table (store/data), main database (store/ less store/data: rollup + uid + index + meta)" | tee "$OUT/disk.txt"
for d in "$OUT"/data-*/; do
  all=$(du -sb "$d/store" | cut -f1); data=$(du -sb "$d/store/data" | cut -f1)
  echo "$(basename "$d") $data $(( all - data ))" | tee -a "$OUT/disk.txt"
done
