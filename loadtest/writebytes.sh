#!/usr/bin/env bash
# writebytes.sh — what one write run costs the disk: start hourglass on a
# fresh data directory, write SERIES x STEPS points (10 s apart, ending now)
# over remote write 1.0 with hourglass-loadtest, stop it with SIGTERM, and
# print the server's bytes written (/proc/PID/io: write_bytes, what reached
# the block layer; wchar, what it passed to write calls) and CPU ticks as
# they were just before it exited, the data directory's peak while it ran
# (sampled every 0.5 s), its size after stop and the part of that in Pebble
# .log files. Issue 17 uses it for "a point written to disk once".
#
# usage: loadtest/writebytes.sh HOURGLASS_BIN LOADTEST_BIN TAG SERIES STEPS [decimal|float]
set -eu
BIN=$1 LT=$2 TAG=$3 SERIES=$4 STEPS=$5 VALUES=${6:-decimal}
D=$(mktemp -d "${TMPDIR:-/tmp}/writebytes.XXXXXX")
"$BIN" -listen 127.0.0.1:0 -data-dir "$D/data" -log-level warn > "$D/out" 2> "$D/log" &
PID=$!
for _ in $(seq 1 300); do grep -q '^hourglass listening on ' "$D/out" 2>/dev/null && break; sleep 0.1; done
ADDR=$(sed -n 's/^hourglass listening on //p' "$D/out")
[ -n "$ADDR" ] || { echo "writebytes.sh: hourglass did not start, see $D/log" >&2; exit 1; }
( while kill -0 "$PID" 2>/dev/null; do find "$D/data" -type f -printf '%s\n' 2>/dev/null | awk '{ n += $1 } END { print n + 0 }'; sleep 0.5; done ) > "$D/du" &
DU=$!
"$LT" write -series "$SERIES" -steps "$STEPS" -interval 10s -seed 1 -values "$VALUES" -dialect prom-rw1 \
  -url "http://$ADDR" -workers 4 -batch 5000 -duration 1h -pid "$PID" -quiet > "$D/write.txt" 2>&1 || cat "$D/write.txt"
sleep 2
last=""
kill -TERM "$PID"
while kill -0 "$PID" 2>/dev/null; do
  l=$(awk '/^write_bytes/ { w = $2 } /^wchar/ { c = $2 } END { print w, c }' "/proc/$PID/io" 2>/dev/null || true)
  c=$(awk '{ print $14 + $15 }' "/proc/$PID/stat" 2>/dev/null || true)
  [ -n "$l" ] && [ -n "$c" ] && last="$l $c"
  sleep 0.05
done
wait "$DU" || true
read -r wb wc ticks <<< "$last"
peak=$(sort -n "$D/du" | tail -n1)
after=$(find "$D/data" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }')
logs=$(find "$D/data" -type f -name '*.log' -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }')
pts=$((SERIES * STEPS))
awk -v tag="$TAG" -v p="$pts" -v wb="$wb" -v wc="$wc" -v t="$ticks" -v peak="$peak" -v after="$after" -v logs="$logs" -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
  printf "%s points=%d write_bytes/point=%.2f wchar/point=%.2f cpu_ticks=%d peak_dir_bytes=%d after_stop_bytes=%d pebble_log_bytes=%d load=%s\n", tag, p, wb / p, wc / p, t, peak, after, logs, load }'
grep -h 'server pid' "$D/write.txt" | sed 's/^ */   /'
rm -rf "$D"
