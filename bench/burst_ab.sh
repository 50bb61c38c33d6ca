#!/bin/sh
# bench/burst_ab.sh: what a kept burst costs with one lua-e2b build against
# another, on loopback: 200 run("echo i") at once on one sandbox, three
# bursts per process, with A = OLD_TREE kept, B = this tree kept and U = this
# tree with keep_output = false, interleaved in one e2b-local (the order
# turns each round). Per side, min/median/max over all bursts of the wall
# ms, the client's CPU, e2b-local's CPU with its sandboxes (where a kept
# wrapper's work lands) and the whole machine's CPU, then in how many bursts
# B took longer than A. CPU moves less with the machine's load than wall.
#   sh bench/burst_ab.sh OLD_TREE [ROUNDS=6]
# OLD_TREE: e.g. `git worktree add --detach /tmp/old COMMIT`, built as this
# one (its build/lib/e2b/core.so). E2B_LOCAL_BIN picks the e2b-local
# (default: the one on PATH).
set -eu
cd "$(dirname "$0")/.."
OLD=$(cd "${1:?usage: burst_ab.sh OLD_TREE [ROUNDS]}" && pwd)
NEW=$(pwd)
ROUNDS=${2:-6}
for t in "$OLD" "$NEW"; do
  [ -f "$t/build/lib/e2b/core.so" ] || { echo "$t: build it first (build/lib/e2b/core.so)" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"${E2B_LOCAL_BIN:-e2b-local}" exec -- sh -c "
  export SRV_PID=\$PPID DRV_PID=\$\$
  side() {
    [ \$1 = A ] && t=$OLD || t=$NEW
    [ \$1 = U ] && how=unkept || how=kept
    LUA_PATH=\"\$t/lua/?.lua;;\" LUA_CPATH=\"\$t/build/lib/?.so;;\" lua5.4 bench/burst_ab.lua \$1 \$2 \$how
  }
  r=1
  while [ \$r -le $ROUNDS ]; do
    case \$((r % 3)) in 1) order='A B U';; 2) order='B U A';; *) order='U A B';; esac
    for s in \$order; do side \$s \$r >> $out/raw || exit 1; done
    r=\$((r + 1))
  done
" 2>"$out/log" || { grep -v ' e2b-local: ' "$out/log" >&2; exit 1; }
echo "200 run(\"echo i\") at once, 3 bursts x $ROUNDS rounds per side; A = $OLD at $(git -C "$OLD" rev-parse --short HEAD) kept, B = $NEW at $(git rev-parse --short HEAD) kept, U = B unkept; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "min/median/max over the bursts, ms"
awk '
  function spread(side, k,    a, n, i, j, t) {
    n = 0
    for (x = 1; x <= N; x++) if (s[x] == side) a[++n] = v[x, k]
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n ? sprintf("%d/%d/%d", a[1], n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2, a[n]) : "-"
  }
  { N++; s[N] = $1; for (k = 1; k <= 4; k++) v[N, k] = $(k + 3); w[$1, $2, $3] = $4 }
  END {
    printf "%-5s %16s %16s %16s %16s\n", "side", "wall", "client_cpu", "server_cpu", "machine_cpu"
    split("A B U", sides, " ")
    for (i = 1; i <= 3; i++)
      printf "%-5s %16s %16s %16s %16s\n", sides[i], spread(sides[i], 1), spread(sides[i], 2), spread(sides[i], 3), spread(sides[i], 4)
    slower = total = 0
    for (key in w) { split(key, p, SUBSEP); if (p[1] == "B" && (("A", p[2], p[3]) in w)) { total++; if (w[key] > w["A", p[2], p[3]]) slower++ } }
    printf "B took longer than A in %d of %d bursts\n", slower, total
  }' "$out/raw"
echo
echo "raw: side round burst wall_ms client_cpu_ms server_cpu_ms machine_cpu_ms"
cat "$out/raw"
