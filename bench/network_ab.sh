#!/bin/sh
# bench/network_ab.sh: is a lua-e2b build slower at latency than another, or
# is it the machine? Two built trees' lua-e2b (A = OLD_TREE, B = this tree)
# and the official JS SDK, interleaved in one e2b-local started with
# --latency MS, each round a fresh process per side (A and B swap places
# every round): per operation wall ms (min/median/max over the rounds), the
# client's CPU, e2b-local's CPU with its sandboxes, and the requests and new
# connections the server counted (medians), then in how many rounds B's
# batch took longer than A's. Counts and CPU do not move with the machine's
# load; wall ms does, for every side alike.
#   sh bench/network_ab.sh OLD_TREE [MS=20] [ROUNDS=12]
# OLD_TREE: e.g. `git worktree add --detach /tmp/old COMMIT` built as this one
# (its build/lib/e2b/core.so). E2B_LOCAL_BIN picks the e2b-local (default:
# the one on PATH).
set -eu
cd "$(dirname "$0")/.."
OLD=$(cd "${1:?usage: network_ab.sh OLD_TREE [MS] [ROUNDS]}" && pwd)
NEW=$(pwd)
MS=${2:-20}
ROUNDS=${3:-12}
for t in "$OLD" "$NEW"; do
  [ -f "$t/build/lib/e2b/core.so" ] || { echo "$t: build it first (build/lib/e2b/core.so)" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"${E2B_LOCAL_BIN:-e2b-local}" exec --latency "$MS" -- sh -c "
  export STATS_URL=\$E2B_API_URL SRV_PID=\$PPID DRV_PID=\$\$
  side() {
    if [ \$1 = sdk ]; then node bench/network_ab_sdk.mjs \"sdk \$2\"
    else
      [ \$1 = A ] && t=$OLD || t=$NEW
      LUA_PATH=\"\$t/lua/?.lua;;\" LUA_CPATH=\"\$t/build/lib/?.so;;\" lua5.4 bench/network_ab.lua \"\$1 \$2\"
    fi
  }
  unset E2B_API_URL E2B_SANDBOX_URL
  r=1
  while [ \$r -le $ROUNDS ]; do
    if [ \$((r % 2)) = 1 ]; then order='A B sdk'; else order='B A sdk'; fi
    for s in \$order; do side \$s \$r >> $out/raw || exit 1; done
    r=\$((r + 1))
  done
" 2>"$out/log" || { grep -v ' e2b-local: ' "$out/log" >&2; exit 1; }
echo "latency ${MS} ms, ${ROUNDS} rounds; A = $OLD at $(git -C "$OLD" rev-parse --short HEAD), B = $NEW at $(git rev-parse --short HEAD); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "wall ms: min/median/max over the rounds; CPU ms and counts: medians per operation (a concurrent op: per batch of 20)"
awk -v R="$ROUNDS" '
  function sorted(side, op, k, a,    r, n, i, j, t) {
    n = 0
    for (r = 1; r <= R; r++) if ((side, r, op, k) in v) a[++n] = v[side, r, op, k]
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n
  }
  function med(side, op, k,    a, n) {
    n = sorted(side, op, k, a)
    return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : 0
  }
  function spread(side, op,    a, n) {
    n = sorted(side, op, 1, a)
    return n ? sprintf("%.1f/%.1f/%.1f", a[1], med(side, op, 1), a[n]) : "-"
  }
  { for (k = 1; k <= 5; k++) v[$1, $2, $3, k] = $(k + 3) }
  END {
    printf "%-19s %-4s %20s %10s %10s %8s %8s\n", "op", "side", "wall_ms", "client_cpu", "server_cpu", "requests", "new_conn"
    split("concurrent_20 concurrent_20_warm run_true", ops, " ")
    split("A B sdk", sides, " ")
    for (i = 1; i <= 3; i++) for (s = 1; s <= 3; s++)
      printf "%-19s %-4s %20s %10.1f %10.1f %8.2f %8.2f\n", ops[i], sides[s], spread(sides[s], ops[i]),
        med(sides[s], ops[i], 2), med(sides[s], ops[i], 5), med(sides[s], ops[i], 3), med(sides[s], ops[i], 4)
    for (i = 1; i <= 2; i++) {
      slower = 0
      for (r = 1; r <= R; r++) if (v["B", r, ops[i], 1] > v["A", r, ops[i], 1]) slower++
      printf "%s: B took longer than A in %d of %d rounds\n", ops[i], slower, R
    }
  }' "$out/raw"
