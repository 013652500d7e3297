#!/bin/bash
# histmix.sh LABEL N: start a fresh hourglass, write 1,200 float series × 360
# points with N native histogram series per host (prom-rw2), and print the
# server's CPU ticks during the load (utime+stime from /proc/PID/stat), the
# data directory's bytes after SIGTERM, and the points and histogram samples
# accepted. docs/benchmarks.md ("The load generator's histogram mix") has the
# figures. HOURGLASS and LOADTEST name the binaries; OUT the scratch directory.
set -euo pipefail
L=$1; H=$2
HOURGLASS=${HOURGLASS:-./hourglass}; LOADTEST=${LOADTEST:-./hourglass-loadtest}; OUT=${OUT:-/tmp/histmix}
D=$OUT/data-$L; rm -rf "$D"; mkdir -p "$D"
"$HOURGLASS" -listen 127.0.0.1:0 -data-dir "$D" > "$OUT/srv-$L.log" 2>&1 &
PID=$!
A=
for _ in $(seq 100); do
	A=$(grep -o 'hourglass listening on [^ ]*' "$OUT/srv-$L.log" | awk '{print $4}' || true)
	[ -n "$A" ] && break; sleep 0.1
done
[ -n "$A" ] || { kill -TERM $PID; echo "hourglass did not start" >&2; exit 1; }
c0=$(awk '{print $14+$15}' /proc/$PID/stat)
"$LOADTEST" write -dialect prom-rw2 -url "http://$A" -series 1200 -steps 360 -interval 10s -start 1700000000 -seed 1 \
	-histograms "$H" -workers 2 -batch 1000 -duration 5m -pid -1 -json "$OUT/rep-$L.json" > "$OUT/hl-$L.log" 2>&1
c1=$(awk '{print $14+$15}' /proc/$PID/stat)
kill -TERM $PID; wait $PID || true
echo "$L histograms=$H cpu_ticks=$((c1-c0)) dir_bytes=$(du -sb "$D" | cut -f1) wal_bytes=$(du -sb "$D/wal" | cut -f1)" \
	"$(python3 -c 'import json,sys;r=json.load(open(sys.argv[1]));print("accepted",r["points_accepted"],"histogram_samples",r.get("histogram_samples",0))' "$OUT/rep-$L.json")"
