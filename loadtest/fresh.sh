#!/bin/bash
# Issue 14 on the Bigtable emulator (docs/benchmarks.md, "Freshness across
# nodes"): the load generator through one node, then through three nodes at
# once; then points kept in one node's head queried on it and on another
# node (the peer read path).
#
#   loadtest/fresh.sh OUTDIR [EMULATOR_PORT]
#
# Starts its own emulator (cloud.google.com/go/bigtable/cmd/emulator) and
# its own nodes on loopback; stops them all at the end.
set -euo pipefail
OUT=$1; PORT=${2:-9135}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
go build -o "$OUT/hourglass" ./cmd/hourglass
go build -o "$OUT/hourglass-loadtest" ./cmd/hourglass-loadtest
go build -o "$OUT/emulator" cloud.google.com/go/bigtable/cmd/emulator
"$OUT/emulator" -host 127.0.0.1 -port "$PORT" > "$OUT/emulator.log" 2>&1 &
EMU=$!
PIDS=()
trap 'kill "${PIDS[@]}" $EMU 2>/dev/null || true' EXIT
export BIGTABLE_EMULATOR_HOST=127.0.0.1:$PORT
sleep 1
LT=$OUT/hourglass-loadtest

startnode() { # prefix writer: starts a node, sets ADDR
  local d=$OUT/data-$1-$2; rm -rf "$d"; mkdir -p "$d"
  "$OUT/hourglass" -listen 127.0.0.1:0 -data-dir "$d" -storage bigtable -bigtable.project p -bigtable.instance i \
     -bigtable.table-prefix "$1" -writer-id "$2" -log-level warn > "$d.out" 2> "$d.err" &
  echo $! > "$d.pid"; PIDS+=($!)
  ADDR=
  for _ in $(seq 1 600); do
    ADDR=$(sed -n 's/^hourglass listening on //p' "$d.out"); [ -n "$ADDR" ] && return; sleep 0.1
  done
  echo "node $1/$2 did not start" >&2; exit 1
}
stopnode() {
  local p; p=$(cat "$OUT/data-$1-$2.pid"); kill -TERM "$p"
  while kill -0 "$p" 2>/dev/null; do sleep 0.2; done
}
W="-series 5000 -steps 360 -workers 4 -batch 5000 -quiet"
ts=$(date +%s)

# 1. One node: write 1.8 M points (an hour of 5,000 series, 6 hours ago), then the query mix.
startnode one$ts 1; A=$ADDR
$LT write -url "http://$A" $W -start -6h -label one-node -json "$OUT/one-write.json"
$LT query -url "http://$A" -series 5000 -steps 360 -start -6h -queries 100 -quiet -label one-node-query -json "$OUT/one-query.json"
stopnode one$ts 1

# 2. Three nodes, a load generator each at once (the same series, other hours).
startnode three$ts 1; A1=$ADDR; startnode three$ts 2; A2=$ADDR; startnode three$ts 3; A3=$ADDR
sleep 3
$LT write -url "http://$A1" $W -start -6h -label node1 -json "$OUT/three-write-1.json" & w1=$!
$LT write -url "http://$A2" $W -start -5h -label node2 -json "$OUT/three-write-2.json" & w2=$!
$LT write -url "http://$A3" $W -start -4h -label node3 -json "$OUT/three-write-3.json" & w3=$!
wait $w1 $w2 $w3
$LT query -url "http://$A1" -series 5000 -steps 360 -start -6h -queries 100 -quiet -label three-node-query -json "$OUT/three-query.json"
curl -s "http://$A1/metrics" | grep -E '^hourglass_peer' | grep -v bucket > "$OUT/three-node1-metrics.txt"
stopnode three$ts 1; stopnode three$ts 2; stopnode three$ts 3

# 3. Points in one node's head (the last 50 minutes, unsealed), queried on
#    that node and on another, in turns.
startnode heads$ts 1; A1=$ADDR; startnode heads$ts 2; startnode heads$ts 3; A3=$ADDR
sleep 3
G="-series 5000 -steps 300 -start -50m"
$LT write -url "http://$A3" $G -workers 4 -batch 5000 -quiet -label node3-last-50m -json "$OUT/heads-write.json"
sleep 2
for r in 1 2; do
  $LT query -url "http://$A3" $G -queries 100 -quiet -label "round$r on node3 (its own head)" -json "$OUT/heads-q3-$r.json"
  $LT query -url "http://$A1" $G -queries 100 -quiet -label "round$r on node1 (node3's head through the peer path)" -json "$OUT/heads-q1-$r.json"
done
curl -s "http://$A1/metrics" | grep -E '^hourglass_peer' | grep -v bucket > "$OUT/heads-node1-metrics.txt"
curl -s "http://$A3/metrics" | grep -E '^hourglass_(peer|head_chunks_written)' | grep -v bucket > "$OUT/heads-node3-metrics.txt"
stopnode heads$ts 1; stopnode heads$ts 2; stopnode heads$ts 3
echo done
