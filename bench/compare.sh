#!/bin/sh
# bench/compare.sh: lua-e2b against the official JS SDK and against raw curl,
# on the same e2b-local, over R rounds. Each round runs the three clients one
# after the other (lua-e2b, SDK, curl), so whatever drifts on a shared machine
# (its load, the disk's write-back) hits each of them alike; every client's
# commands and then its files run as one process measured by GNU time: its CPU
# seconds (user + sys, children included) and the peak RSS of its largest
# process. Per measurement the table gives min / median / max over the rounds,
# and lua-e2b's ratio to the others taken within each round, then its min /
# median / max (times, CPU and memory: lower is better; MB/s: higher). The
# SDK and curl keep no output: their one number stands in the tracked and the
# live-only (keep_output = false) rows alike. Last, once, file transfers
# paired with curl's (bench/files_paired.lua) and 200 commands at once
# paired with the SDK's (bench/burst_paired.mjs): this machine's speed moves
# within seconds, and a round's clients run tens of seconds apart. The
# rounds' raw lines follow.
#   sh bench/compare.sh [N=10] [MB=200] [FILE_MB=1024] [R=5]
set -eu
cd "$(dirname "$0")/.."
N=${1:-10}
MB=${2:-200}
FILE_MB=${3:-1024}
R=${4:-5}
[ -x /usr/bin/time ] || { echo "compare.sh needs GNU time (/usr/bin/time)" >&2; exit 1; }
out=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
# The upload source is made once, outside every client's measurement.
head -c $((FILE_MB * 1048576)) /dev/zero >"$out/src"
sync
files="$FILE_MB $MB $out/src"
# one client's round: client.time (user sys rss) and its lines, into $out
cat >"$out/one" <<SH
set -eu
case \$1 in
  lua) cmd='lua5.4 bench/client.lua $N $MB && lua5.4 bench/files.lua $files' ;;
  sdk) cmd='node bench/client_sdk.mjs $N $MB && node bench/files_sdk.mjs $files' ;;
  curl) cmd='sh bench/client_curl.sh $N $MB && sh bench/files_curl.sh $files' ;;
esac
/usr/bin/time -f '%U %S %M' -o $out/\$1.time sh -c "\$cmd" >$out/\$1.lines
awk '{ printf "cpu_s %.2f\npeak_rss_mb %.1f\n", \$1 + \$2, \$3 / 1024 }' $out/\$1.time >>$out/\$1.lines
awk -v c=\$1 -v r=\$2 'NF >= 2 { print c, r, \$1, \$2 }' $out/\$1.lines >>$out/raw
SH
e2b-local exec -- sh -c "
  r=1
  while [ \$r -le $R ]; do
    for c in lua sdk curl; do sh $out/one \$c \$r || exit 1; done
    r=\$((r + 1))
  done
  lua5.4 bench/files_paired.lua $FILE_MB $out/src 4 > $out/paired
  node bench/burst_paired.mjs 8 >> $out/paired
" 2>"$out/log" || { grep -v ' e2b-local: ' "$out/log" >&2; exit 1; }
echo "$R rounds of N=$N MB=$MB FILE_MB=$FILE_MB at $(git rev-parse --short HEAD 2>/dev/null || echo ?)," \
  "$(date -u '+%F %H:%M') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "each cell: min / median / max over the rounds; a ratio is taken within each round"
awk -v R="$R" -v list="create_run_kill_ms run_true_ms stdout_mbps_tracked stdout_mbps_live_only \
stdout_mbps_polled tracked_requests tracked_cpu_ms concurrent_200_ms concurrent_200_unkept_ms \
file_upload_mibps file_upload_rss_growth_mb file_download_mibps file_download_rss_growth_mb \
file_read_whole_mibps file_read_whole_peak_x cpu_s peak_rss_mb" '
  function spread(a, n,    i, j, t) { # a[1..n] sorted in place; "min / med / max"
    if (n == 0) return "-"
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return sprintf(a[n] >= 100 ? "%.0f/%.0f/%.0f" : "%.2f/%.2f/%.2f", a[1], n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2, a[n])
  }
  function cell(c, m,    r, a, n) { n = 0; for (r = 1; r <= R; r++) if ((c, r, m) in v) a[++n] = v[c, r, m]; return spread(a, n) }
  function ratio(c, m,    r, a, n) {
    n = 0
    for (r = 1; r <= R; r++) if (("lua", r, m) in v && (c, r, m) in v && v[c, r, m] > 0) a[++n] = v["lua", r, m] / v[c, r, m]
    return spread(a, n)
  }
  { v[$1, $2, $3] = $4 }
  END {
    printf "%-26s %20s %20s %20s %16s %16s\n", "measurement", "lua-e2b", "sdk", "curl", "lua/sdk", "lua/curl"
    n = split(list, ms, " ")
    for (i = 1; i <= n; i++) {
      m = ms[i]
      printf "%-26s %20s %20s %20s %16s %16s\n", m, cell("lua", m), cell("sdk", m), cell("curl", m), ratio("sdk", m), ratio("curl", m)
    }
  }' "$out/raw"
# The same transfers with lua-e2b and curl back to back (bench/files_paired.lua),
# and bursts with lua-e2b and the SDK (bench/burst_paired.mjs): the ratios the
# disk's and the CPU's swings between the rows above do not decide.
echo
cat "$out/paired"
echo
echo "raw: client round measurement value"
sort -k3,3 -k2,2n -k1,1 "$out/raw"
