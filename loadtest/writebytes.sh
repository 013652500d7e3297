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
# The directory is also sampled by part every 0.25 s, and the second line of
# the output gives each part at the directory's peak and its own largest
# value over the run (MB): wal (series WAL segments), data (the data table's
# SSTables, store/data/*.sst), dmeta (the data database's MANIFEST, OPTIONS
# and other files), main (the main database's SSTables), mlog (its Pebble
# .log files), other (MANIFESTs, OPTIONS, snapshots, anything else).
#
# usage: loadtest/writebytes.sh HOURGLASS_BIN LOADTEST_BIN TAG SERIES STEPS [decimal|float]
# environment: HG_FLAGS, more flags for the server; KEEP=DIR, copy the
# samples (parts.tsv: seconds since start and the six parts in bytes) and
# the server's log into DIR.
set -eu
BIN=$1 LT=$2 TAG=$3 SERIES=$4 STEPS=$5 VALUES=${6:-decimal}
D=$(mktemp -d "${TMPDIR:-/tmp}/writebytes.XXXXXX")
# shellcheck disable=SC2086 # HG_FLAGS is split into flags on purpose
"$BIN" -listen 127.0.0.1:0 -data-dir "$D/data" -log-level warn ${HG_FLAGS:-} > "$D/out" 2> "$D/log" &
PID=$!
for _ in $(seq 1 300); do grep -q '^hourglass listening on ' "$D/out" 2>/dev/null && break; sleep 0.1; done
ADDR=$(sed -n 's/^hourglass listening on //p' "$D/out")
[ -n "$ADDR" ] || { echo "writebytes.sh: hourglass did not start, see $D/log" >&2; exit 1; }
( while kill -0 "$PID" 2>/dev/null; do find "$D/data" -type f -printf '%s\n' 2>/dev/null | awk '{ n += $1 } END { print n + 0 }'; sleep 0.5; done ) > "$D/du" &
DU=$!
( t0=$(date +%s.%N); while kill -0 "$PID" 2>/dev/null; do
    find "$D/data" -type f -printf '%s\t%P\n' 2>/dev/null | awk -F'\t' -v t="$(date +%s.%N)" -v t0="$t0" '
      $2 ~ /^wal\/[0-9]+$/ { wal += $1; next }
      $2 ~ /^store\/data\/[^\/]*\.sst$/ { data += $1; next }
      $2 ~ /^store\/data\// { dmeta += $1; next }
      $2 ~ /^store\/[^\/]*\.sst$/ { main += $1; next }
      $2 ~ /^store\/[^\/]*\.log$/ { mlog += $1; next }
      { other += $1 }
      END { printf "%.2f\t%d\t%d\t%d\t%d\t%d\t%d\n", t - t0, wal, data, dmeta, main, mlog, other }'
    sleep 0.25
  done ) > "$D/parts" &
PARTS=$!
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
wait "$DU" "$PARTS" || true
read -r wb wc ticks <<< "$last"
peak=$(sort -n "$D/du" | tail -n1)
after=$(find "$D/data" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }')
logs=$(find "$D/data" -type f -name '*.log' -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }')
pts=$((SERIES * STEPS))
awk -v tag="$TAG" -v p="$pts" -v wb="$wb" -v wc="$wc" -v t="$ticks" -v peak="$peak" -v after="$after" -v logs="$logs" -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
  printf "%s points=%d write_bytes/point=%.2f wchar/point=%.2f cpu_ticks=%d peak_dir_bytes=%d after_stop_bytes=%d pebble_log_bytes=%d load=%s\n", tag, p, wb / p, wc / p, t, peak, after, logs, load }'
awk -F'\t' '{ s = $2 + $3 + $4 + $5 + $6 + $7; if (s > peak) { peak = s; at = $0 }
    for (i = 2; i <= 7; i++) if ($i > mx[i]) mx[i] = $i }
  END { split(at, p, "\t"); n = split("wal data dmeta main mlog other", name, " ")
    printf "   parts MB at the peak (%.2f MB, %.1f s) / largest:", peak / 1e6, p[1]
    for (i = 1; i <= n; i++) printf " %s %.2f/%.2f", name[i], p[i + 1] / 1e6, mx[i + 1] / 1e6
    printf "\n" }' "$D/parts"
grep -h 'server pid' "$D/write.txt" | sed 's/^ */   /'
if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$D/parts" "$KEEP/parts.tsv"; cp "$D/log" "$KEEP/server.log"; fi
rm -rf "$D"
