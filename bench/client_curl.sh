#!/bin/sh
# bench/client_curl.sh: raw curl's side of bench/compare.sh — the floor: the
# same HTTP calls with nothing around them. Run under e2b-local exec.
set -eu
N=${1:-10}
MB=${2:-200}
api=$E2B_API_URL
now() { date +%s%3N; }
# The key reaches curl in a private file (printf is a shell builtin), never
# on its command line.
key=$(mktemp)
tok=$(mktemp)
trap 'rm -f "$key" "$tok"' EXIT
printf 'X-API-Key: %s\n' "$E2B_API_KEY" >"$key"

# Connect envelope (flag 0, big-endian length) around a JSON message.
envelope() {
  len=$(printf '%s' "$1" | wc -c)
  printf "\\000\\$(printf %03o $((len >> 24 & 255)))\\$(printf %03o $((len >> 16 & 255)))\\$(printf %03o $((len >> 8 & 255)))\\$(printf %03o $((len & 255)))%s" "$1"
}

# Prints the new sandbox's id; its envd access token goes to "$tok" as a header.
create() {
  body=$(curl -s -X POST "$api/v2/sandboxes" -H @"$key" -H 'Content-Type: application/json' \
    -d '{"templateID":"base","timeout":300,"secure":false}')
  printf '%s\n' "$body" | sed -nE 's/.*"envdAccessToken":"([^"]+)".*/X-Access-Token: \1/p' >"$tok"
  printf '%s\n' "$body" | sed -E 's/.*"sandboxID":"([^"]+)".*/\1/'
}

run() { # sandbox_id command
  envelope "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-c\",\"$2\"]},\"stdin\":false}" |
    curl -s -N -X POST "$E2B_SANDBOX_URL/process.Process/Start" -H "E2b-Sandbox-Id: $1" -H @"$tok" \
      -H 'Content-Type: application/connect+json' -H 'Connect-Protocol-Version: 1' --data-binary @-
}

kill_sbx() { curl -s -X DELETE "$api/sandboxes/$1" -H @"$key" >/dev/null; }

times=""
i=0
while [ $i -lt "$N" ]; do
  t0=$(now)
  id=$(create)
  run "$id" "echo hi" >/dev/null
  kill_sbx "$id"
  times="$times $(( $(now) - t0 ))"
  i=$((i + 1))
done
echo "create_run_kill_ms $(echo $times | tr ' ' '\n' | sort -n | sed -n "$(( (N + 1) / 2 ))p")"

id=$(create)
sync # as bench/client.lua's streams: no earlier write-back runs into it
t0=$(now)
bytes=$(run "$id" "head -c $((MB * 1000000)) /dev/zero" | wc -c)
ms=$(( $(now) - t0 ))
# base64 in JSON envelopes carries 4/3 of the bytes; report the payload rate
mbps=$(awk "BEGIN { printf \"%.1f\", $MB / ($ms / 1000) }")
echo "stdout_mbps_tracked $mbps # wire bytes $bytes"
echo "stdout_mbps_live_only $mbps"

t0=$(now)
i=0
while [ $i -lt 200 ]; do run "$id" "echo $i" >/dev/null & i=$((i + 1)); done
wait
conc=$(( $(now) - t0 ))
echo "concurrent_200_ms $conc"
echo "concurrent_200_unkept_ms $conc"
kill_sbx "$id"
