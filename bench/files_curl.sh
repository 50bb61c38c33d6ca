#!/bin/sh
# bench/files_curl.sh: raw curl's side of bench/files.lua — the same /files
# upload (multipart, from a file) and download (into /dev/null) with nothing
# around them. RSS growth: curl's peak RSS (GNU time) minus that of a curl
# that fetches /health. Run under e2b-local exec.
#   sh bench/files_curl.sh [FILE_MB=1024] [READ_MB=200] [SRC=a FILE_MB MiB file]
set -eu
FILE_MB=${1:-1024}
src=${3:-}
api=$E2B_API_URL
now() { date +%s%3N; }
key=$(mktemp)
tm=$(mktemp)
own=
[ -n "$src" ] || { src=$(mktemp); own=$src; }
trap 'rm -f "$key" "$tm" $own' EXIT
printf 'X-API-Key: %s\n' "$E2B_API_KEY" >"$key"
size=$((FILE_MB * 1048576))
[ -z "$own" ] || head -c "$size" /dev/zero >"$src"

id=$(curl -s -X POST "$api/v2/sandboxes" -H @"$key" -H 'Content-Type: application/json' \
  -d '{"templateID":"base","timeout":300,"secure":false}' | sed -E 's/.*"sandboxID":"([^"]+)".*/\1/')
envd() { # time-output-file curl-args...
  out=$1
  shift
  /usr/bin/time -f '%M' -o "$out" curl -sf -H "E2b-Sandbox-Id: $id" -H 'E2b-Sandbox-Port: 49983' -H 'Expect:' "$@"
}
envd "$tm" -o /dev/null "$E2B_SANDBOX_URL/health"
base=$(cat "$tm")
mibps() { awk "BEGIN { printf \"%.1f\", $size / 1048576 / ($1 / 1000) }"; }
growth() { awk "BEGIN { printf \"%.1f\", ($(cat "$tm") - $base) / 1024 }"; }

t0=$(now)
envd "$tm" -o /dev/null -F "file=@$src;type=application/octet-stream" "$E2B_SANDBOX_URL/files?path=/tmp/big"
echo "file_upload_mibps $(mibps $(( $(now) - t0 )))"
echo "file_upload_rss_growth_mb $(growth)"

t0=$(now)
envd "$tm" -o /dev/null "$E2B_SANDBOX_URL/files?path=/tmp/big"
echo "file_download_mibps $(mibps $(( $(now) - t0 )))"
echo "file_download_rss_growth_mb $(growth)"
curl -s -X DELETE "$api/sandboxes/$id" -H @"$key" >/dev/null
