#!/bin/sh
# bench/compare.sh: lua-e2b against the official JS SDK and against raw curl,
# on the same e2b-local, in one run. Prints each measurement and lua-e2b's
# ratio to the others (for times, lower is better; for MB/s, higher). The
# SDK and curl keep no output: their one number stands in the tracked and
# the live-only (keep_output = false) rows alike.
#   sh bench/compare.sh [N=10] [MB=200]
set -eu
cd "$(dirname "$0")/.."
N=${1:-10}
MB=${2:-200}
out=$(mktemp -d)
e2b-local exec -- sh -c "
  lua5.4 bench/client.lua $N $MB > $out/lua &&
  node bench/client_sdk.mjs $N $MB > $out/sdk &&
  sh bench/client_curl.sh $N $MB > $out/curl
" 2>"$out/log" || { grep -v ' e2b-local: ' "$out/log" >&2; exit 1; }
printf '%-24s %12s %12s %12s %10s %10s\n' measurement lua-e2b sdk curl lua/sdk lua/curl
for m in create_run_kill_ms run_true_ms stdout_mbps_tracked stdout_mbps_live_only stdout_mbps_polled concurrent_200_ms concurrent_200_unkept_ms; do
  l=$(awk -v m=$m '$1 == m { print $2 }' $out/lua)
  s=$(awk -v m=$m '$1 == m { print $2 }' $out/sdk)
  c=$(awk -v m=$m '$1 == m { print $2 }' $out/curl)
  printf '%-24s %12s %12s %12s %10s %10s\n' "$m" "${l:--}" "${s:--}" "${c:--}" \
    "$( [ -n "$l" ] && [ -n "$s" ] && awk "BEGIN { printf \"%.2f\", $l / $s }" || echo -)" \
    "$( [ -n "$l" ] && [ -n "$c" ] && awk "BEGIN { printf \"%.2f\", $l / $c }" || echo -)"
done
rm -rf "$out"
