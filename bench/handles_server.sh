#!/bin/sh
# bench/handles_server.sh: bench/handles.lua (Lua 5.4, one Lua state, spawn's
# default parking; E2B_BENCH_PARK=1 or 0 parks all or none) against an
# e2b-local this script starts, sampling that server's threads, descriptors
# and RSS, the host's task count and available memory about every 2 s
# (listing /proc takes a while with 20,000 tasks: time_s is when each sample
# was taken).
#   sh bench/handles_server.sh HANDLES SANDBOXES SECONDS [E2B_LOCAL_BIN]
# Prints the bench's JSON line, then the server's samples (time_s threads fds
# rss_mb tasks host_mem_avail_mb) and their peaks. Numbers, not assertions.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
N=${1:-3000} S=${2:-100} SECS=${3:-40}
BIN=${4:-${E2B_LOCAL_BIN:-$ROOT/build/emulator/e2b-local}}
OUT=$(mktemp -d)

# Runs inside `e2b-local exec`: the server is this shell's parent.
cat >"$OUT/inner.sh" <<'EOF'
srv=$PPID
( t0=$(cut -d. -f1 /proc/uptime)
  while kill -0 "$srv" 2>/dev/null && [ ! -e "$OUT/done" ]; do
    t=$(($(cut -d. -f1 /proc/uptime) - t0))
    th=$(awk '/^Threads:/ {print $2}' /proc/$srv/status 2>/dev/null)
    rss=$(awk '/^VmRSS:/ {printf "%.1f", $2/1024}' /proc/$srv/status 2>/dev/null)
    fds=$(ls /proc/$srv/fd 2>/dev/null | wc -l)
    tasks=$(ls -d /proc/[0-9]*/task/[0-9]* 2>/dev/null | wc -l)
    avail=$(awk '/^MemAvailable:/ {printf "%d", $2/1024}' /proc/meminfo)
    echo "$t ${th:-0} $fds ${rss:-0} $tasks $avail" >>"$OUT/samples"
    sleep 2
  done ) &
lua5.4 "$ROOT/bench/handles.lua" --state "$N" "$S" "$SECS" >"$OUT/result" 2>&1
rc=$?
: >"$OUT/done"
wait
exit $rc
EOF
OUT=$OUT ROOT=$ROOT N=$N S=$S SECS=$SECS "$BIN" exec -- env E2B_BENCH_PARK="${E2B_BENCH_PARK-}" OUT="$OUT" ROOT="$ROOT" N="$N" S="$S" SECS="$SECS" \
  LUA_PATH="$ROOT/lua/?.lua;$ROOT/?.lua;;" LUA_CPATH="$ROOT/build/lib/?.so;;" sh "$OUT/inner.sh" 2>"$OUT/server.log"
rc=$?
tail -c 2000 "$OUT/result"
echo "time_s threads fds rss_mb tasks host_mem_avail_mb"
cat "$OUT/samples"
awk '{ if ($2 > t) t = $2; if ($3 > f) f = $3; if ($4 > r) r = $4; if ($5 > k) k = $5 }
     END { printf "peak: threads %d fds %d rss_mb %.1f tasks %d\n", t, f, r, k }' "$OUT/samples"
echo "server log: $(wc -l <"$OUT/server.log") lines, $OUT/server.log; exit $rc"
