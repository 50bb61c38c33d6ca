#!/bin/sh
# bench/files_curl.sh: raw curl's side of bench/files.lua — the same /files
# upload (multipart, from a file) and download (into /dev/null) with nothing
# around them. RSS growth: curl's peak RSS (GNU time) minus that of a curl
# that fetches /health. Run under e2b-local exec.
#   sh bench/files_curl.sh [FILE_MB=1024] [READ_MB=200] [SRC=a FILE_MB MiB file] [REPS=3]
set -eu
FILE_MB=${1:-1024}
src=${3:-}
REPS=${4:-3}
api=$E2B_API_URL
now() { date +%s%3N; }
key=$(mktemp)
tok=$(mktemp)
tm=$(mktemp)
own=
[ -n "$src" ] || { src=$(mktemp); own=$src; }
trap 'rm -f "$key" "$tok" "$tm" $own' EXIT
printf 'X-API-Key: %s\n' "$E2B_API_KEY" >"$key"
size=$((FILE_MB * 1048576))
[ -z "$own" ] || head -c "$size" /dev/zero >"$src"

body=$(curl -s -X POST "$api/v2/sandboxes" -H @"$key" -H 'Content-Type: application/json' \
  -d '{"templateID":"base","timeout":300,"secure":false}')
id=$(printf '%s\n' "$body" | sed -E 's/.*"sandboxID":"([^"]+)".*/\1/')
# the sandbox's envd access token, as a header in a private file
printf '%s\n' "$body" | sed -nE 's/.*"envdAccessToken":"([^"]+)".*/X-Access-Token: \1/p' >"$tok"
envd() { # time-output-file curl-args...
  out=$1
  shift
  /usr/bin/time -f '%M' -o "$out" curl -sf -H "E2b-Sandbox-Id: $id" -H @"$tok" -H 'E2b-Sandbox-Port: 49983' -H 'Expect:' "$@"
}
envd "$tm" -o /dev/null "$E2B_SANDBOX_URL/health"
base=$(cat "$tm")
# best REPS-times: each run after a sync; the best rate, the highest growth
best() { # curl-args...
  rate=0
  grow=0
  i=0
  while [ $i -lt "$REPS" ]; do
    sync
    t0=$(now)
    envd "$tm" -o /dev/null "$@"
    ms=$(( $(now) - t0 ))
    rate=$(awk "BEGIN { r = $size / 1048576 / ($ms / 1000); print (r > $rate ? r : $rate) }")
    grow=$(awk "BEGIN { g = ($(cat "$tm") - $base) / 1024; print (g > $grow ? g : $grow) }")
    i=$((i + 1))
  done
}

best -F "file=@$src;type=application/octet-stream" \
  "$E2B_SANDBOX_URL/files?path=/tmp/big"
printf 'file_upload_mibps %.1f\nfile_upload_rss_growth_mb %.1f\n' "$rate" "$grow"
best "$E2B_SANDBOX_URL/files?path=/tmp/big"
printf 'file_download_mibps %.1f\nfile_download_rss_growth_mb %.1f\n' "$rate" "$grow"
curl -s -X DELETE "$api/sandboxes/$id" -H @"$key" >/dev/null
