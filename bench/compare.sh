#!/bin/sh
# bench/compare.sh: lua-e2b against the official JS SDK and against raw curl,
# on the same e2b-local, in one run. Prints each measurement and lua-e2b's
# ratio to the others (for times, CPU and memory lower is better; for MB/s,
# higher). The SDK and curl keep no output: their one number stands in the
# tracked and the live-only (keep_output = false) rows alike. Each client's
# whole run (commands, then files) is measured by GNU time: its CPU seconds
# (user + sys, children included) and the peak RSS of its largest process.
# Last, file transfers paired with curl's (bench/files_paired.lua).
#   sh bench/compare.sh [N=10] [MB=200] [FILE_MB=1024]
set -eu
cd "$(dirname "$0")/.."
N=${1:-10}
MB=${2:-200}
FILE_MB=${3:-1024}
[ -x /usr/bin/time ] || { echo "compare.sh needs GNU time (/usr/bin/time)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The upload source is made once, outside every client's measurement.
head -c $((FILE_MB * 1048576)) /dev/zero >"$out/src"
sync
files="$FILE_MB $MB $out/src"
e2b-local exec -- sh -c "
  /usr/bin/time -f '%U %S %M' -o $out/lua.time sh -c 'lua5.4 bench/client.lua $N $MB && lua5.4 bench/files.lua $files' > $out/lua &&
  /usr/bin/time -f '%U %S %M' -o $out/sdk.time sh -c 'node bench/client_sdk.mjs $N $MB && node bench/files_sdk.mjs $files' > $out/sdk &&
  /usr/bin/time -f '%U %S %M' -o $out/curl.time sh -c 'sh bench/client_curl.sh $N $MB && sh bench/files_curl.sh $files' > $out/curl &&
  lua5.4 bench/files_paired.lua $FILE_MB $out/src 4 > $out/paired
" 2>"$out/log" || { grep -v ' e2b-local: ' "$out/log" >&2; exit 1; }
for c in lua sdk curl; do
  awk '{ printf "cpu_s %.2f\npeak_rss_mb %.1f\n", $1 + $2, $3 / 1024 }' "$out/$c.time" >>"$out/$c"
done
printf '%-28s %12s %12s %12s %10s %10s\n' measurement lua-e2b sdk curl lua/sdk lua/curl
for m in create_run_kill_ms run_true_ms stdout_mbps_tracked stdout_mbps_live_only stdout_mbps_polled concurrent_200_ms \
  concurrent_200_unkept_ms file_upload_mibps file_upload_rss_growth_mb file_download_mibps \
  file_download_rss_growth_mb file_read_whole_mibps file_read_whole_peak_x cpu_s peak_rss_mb; do
  l=$(awk -v m=$m '$1 == m { print $2 }' $out/lua)
  s=$(awk -v m=$m '$1 == m { print $2 }' $out/sdk)
  c=$(awk -v m=$m '$1 == m { print $2 }' $out/curl)
  printf '%-28s %12s %12s %12s %10s %10s\n' "$m" "${l:--}" "${s:--}" "${c:--}" \
    "$( [ -n "$l" ] && [ -n "$s" ] && awk "BEGIN { printf \"%.2f\", $l / $s }" || echo -)" \
    "$( [ -n "$l" ] && [ -n "$c" ] && awk "BEGIN { printf \"%.2f\", $l / $c }" || echo -)"
done
# The same transfers with lua-e2b and curl back to back (bench/files_paired.lua):
# the ratio the disk's swings between the rows above do not decide.
echo
cat "$out/paired"
