#!/bin/sh
# bench/network.sh: what each client costs over a network, lua-e2b against
# the official JS SDK, both over HTTPS to one e2b-local started with
# --latency MS (a server MS ms of round trip away: every answer waits MS, a
# new connection MS more for TCP and MS more for its TLS handshake). Per
# operation: wall ms, then requests, new connections and TLS handshakes as
# the server counted them (GET /_e2b_local/stats), each per operation.
#   sh bench/network.sh [MS=20] [R=5] [h2]
# With h2, e2b-local's HTTPS port offers HTTP/2 beside HTTP/1.1 (--h2:
# nghttpx in front, as E2B's edge speaks it); without, HTTP/1.1 only.
# E2B_LOCAL_BIN picks the e2b-local (default: the one on PATH); LUA_PATH and
# LUA_CPATH the lua-e2b (default: the installed one), e.g. a build tree's:
#   LUA_PATH="$PWD/lua/?.lua;;" LUA_CPATH="$PWD/build/lib/?.so;;"
cd "$(dirname "$0")/.."
MS=${1:-20}
R=${2:-5}
H2=
case ${3:-} in h2) H2=--h2 ;; "") ;; *) echo "usage: network.sh [MS] [R] [h2]" >&2; exit 2 ;; esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# HTTPS only: without the plain URLs both clients build https://api.<domain>
# and https://49983-<id>.<domain> from E2B_DOMAIN, as against E2B.
"${E2B_LOCAL_BIN:-e2b-local}" exec --latency "$MS" $H2 -- sh -c "
  export STATS_URL=\$E2B_API_URL
  env -u E2B_API_URL -u E2B_SANDBOX_URL lua5.4 bench/network.lua $R > $out/lua &&
  env -u E2B_API_URL -u E2B_SANDBOX_URL node bench/network_sdk.mjs $R > $out/sdk
" 2>"$out/log" || { grep -v ' e2b-local: ' "$out/log" >&2; exit 1; }
echo "latency ${MS} ms, ${R} repetitions (run_true: $((R * 4))), HTTPS ${H2:+h2 and }http/1.1, commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
printf '%-17s %9s %9s | %7s %7s | %7s %7s | %7s %7s\n' op lua_ms sdk_ms lua_req sdk_req lua_new sdk_new lua_tls sdk_tls
for op in create run_true write_1mb read_1mb concurrent_20 concurrent_20_new kill; do
  l=$(awk -v o=$op '$1 == o' "$out/lua")
  s=$(awk -v o=$op '$1 == o' "$out/sdk")
  set -- $l $s
  [ $# -eq 10 ] || { echo "missing $op" >&2; exit 1; }
  printf '%-17s %9s %9s | %7s %7s | %7s %7s | %7s %7s\n' "$op" "$2" "$7" "$3" "$8" "$4" "$9" "$5" "${10}"
done
