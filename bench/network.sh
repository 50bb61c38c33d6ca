#!/bin/sh
# bench/network.sh: what each client costs over a network, lua-e2b against
# the official JS SDK, both over HTTPS to one e2b-local started with
# --latency MS (a server MS ms of round trip away: every answer waits MS, a
# new connection MS more for TCP and MS more for its TLS handshake). Per
# operation: wall ms, then requests, new connections and TLS handshakes as
# the server counted them (GET /_e2b_local/stats), each per operation. ROUNDS
# rounds, each running lua-e2b then the SDK (R repetitions of each operation
# per round), so drift hits both alike: wall ms is min/median/max over the
# rounds, the counts are their medians.
#   sh bench/network.sh [MS=20] [R=5] [ROUNDS=3] [h2]
# With h2, e2b-local's HTTPS port offers HTTP/2 beside HTTP/1.1 (--h2:
# nghttpx in front, as E2B's edge speaks it); without, HTTP/1.1 only.
# E2B_LOCAL_BIN picks the e2b-local (default: the one on PATH); LUA_PATH and
# LUA_CPATH the lua-e2b (default: the installed one), e.g. a build tree's:
#   LUA_PATH="$PWD/lua/?.lua;;" LUA_CPATH="$PWD/build/lib/?.so;;"
set -eu
cd "$(dirname "$0")/.."
MS=${1:-20}
R=${2:-5}
ROUNDS=${3:-3}
H2=
case ${4:-} in h2) H2=--h2 ;; "") ;; *) echo "usage: network.sh [MS] [R] [ROUNDS] [h2]" >&2; exit 2 ;; esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# HTTPS only: without the plain URLs both clients build https://api.<domain>
# and https://49983-<id>.<domain> from E2B_DOMAIN, as against E2B.
"${E2B_LOCAL_BIN:-e2b-local}" exec --latency "$MS" $H2 -- sh -c "
  export STATS_URL=\$E2B_API_URL
  r=1
  while [ \$r -le $ROUNDS ]; do
    env -u E2B_API_URL -u E2B_SANDBOX_URL lua5.4 bench/network.lua $R | sed \"s/^/lua \$r /\" >> $out/raw &&
    env -u E2B_API_URL -u E2B_SANDBOX_URL node bench/network_sdk.mjs $R | sed \"s/^/sdk \$r /\" >> $out/raw || exit 1
    r=\$((r + 1))
  done
" 2>"$out/log" || { grep -v ' e2b-local: ' "$out/log" >&2; exit 1; }
echo "latency ${MS} ms, ${R} repetitions (run_true: $((R * 4))), ${ROUNDS} rounds, HTTPS ${H2:+h2 and }http/1.1, commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
echo "wall ms: min/median/max over the rounds; counts per operation: medians"
awk -v R="$ROUNDS" '
  function spread(c, o, k, fmt,    r, a, n, i, j, t) {
    n = 0
    for (r = 1; r <= R; r++) if ((c, r, o) in v) a[++n] = v[c, r, o, k]
    if (!n) return "-"
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    med = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    return fmt == "all" ? sprintf("%.1f/%.1f/%.1f", a[1], med, a[n]) : sprintf("%.2f", med)
  }
  { v[$1, $2, $3] = 1; for (k = 1; k <= 4; k++) v[$1, $2, $3, k] = $(k + 3) }
  END {
    printf "%-18s %20s %20s | %7s %7s | %7s %7s | %7s %7s\n", "op", "lua_ms", "sdk_ms", "lua_req", "sdk_req", "lua_new", "sdk_new", "lua_tls", "sdk_tls"
    n = split("create run_true write_1mb read_1mb stream_10mb stream_10mb_unkept concurrent_20 concurrent_20_new connect list_2_pages pause resume kill", ops, " ")
    for (i = 1; i <= n; i++) {
      o = ops[i]
      printf "%-18s %20s %20s | %7s %7s | %7s %7s | %7s %7s\n", o, spread("lua", o, 1, "all"), spread("sdk", o, 1, "all"),
        spread("lua", o, 2), spread("sdk", o, 2), spread("lua", o, 3), spread("sdk", o, 3), spread("lua", o, 4), spread("sdk", o, 4)
    }
  }' "$out/raw"
