#!/bin/bash
# bench/wrapper_cost.sh: runs inside a sandbox (bench/wrapper.lua puts it
# there). Times, in µs per run (wall, and the CPU its processes used), what
# a kept `run("true")` costs the sandbox against what the SDK's costs it (one
# `bash -l -c true`), and with `trace` where the wrapper's time goes, step
# by step.
#   bash wrapper_cost.sh DIR RUNS [trace]
# DIR holds argv and environ, copied from /proc of a live kept wrapper, so
# this replays exactly what the client sends.
dir=$1 runs=${2:-300} mode=${3:-}
mapfile -d '' argv <"$dir/argv"
# the script and the texts it evaluates only when needed (the sweep, the own plan's fallback)
while IFS= read -r -d '' kv; do
  case $kv in E2B_PROC=*) proc=${kv#E2B_PROC=} ;; E2B_SWEEP=*) sweep=${kv#E2B_SWEEP=} ;; E2B_SH=*) sh=${kv#E2B_SH=} ;; esac
done <"$dir/environ"
if [ -z "$proc" ] || [ "${argv[4]}" != e2b-sh ]; then
  echo "not the wrapper of a kept command string" >&2
  exit 2
fi
files=$dir/files
mkdir -p "$files"

plain() { bash -l -c true; }
subshell() { bash -l -c '(true)'; }
kept() { E2B_PROC=$proc E2B_SWEEP=$sweep E2B_SH=$sh "${argv[@]:0:5}" "$files/k$1" true >/dev/null; }

# Interleaved rounds, so a slow moment of the machine is shared by all three.
# The CPU of the runs: what the runs' processes, reaped by this shell, used
# (its children's user and system ticks in /proc/$$/stat).
hz=$(getconf CLK_TCK)
reaped() { local s; read -r s </proc/$$/stat; s=(${s##*) }); R=$(( (s[13] + s[14]) * 1000000 / hz )); }
declare -A total cpu
rounds=5 per=$(( (runs + 4) / 5 ))
for ((r = 0; r < rounds; r++)); do
  for v in plain subshell kept; do
    reaped; c=$R s=$EPOCHREALTIME
    for ((i = 0; i < per; i++)); do $v "$r.$i"; done
    e=$EPOCHREALTIME
    total[$v]=$(( ${total[$v]:-0} + ${e/./} - ${s/./} ))
    reaped; cpu[$v]=$(( ${cpu[$v]:-0} + R - c ))
  done
  rm -f "$files"/k*
done
n=$((rounds * per))
p=$((total[plain] / n)) sub=$((total[subshell] / n)) k=$((total[kept] / n))
pc=$((cpu[plain] / n)) subc=$((cpu[subshell] / n)) kc=$((cpu[kept] / n))
echo "inside one sandbox, $n runs of each, in $rounds interleaved rounds; µs per run, wall and CPU"
printf '%-34s %6d %6d\n' "bash -l -c true (the SDK's run)" "$p" "$pc"
printf '%-34s %6d %6d  %+d %+d: the fork, exit and wait of a subshell\n' "bash -l -c '(true)'" "$sub" "$subc" \
  $((sub - p)) $((subc - pc))
printf '%-34s %6d %6d  %+d %+d: the wrapper in all\n' "kept wrapper running true" "$k" "$kc" $((k - p)) $((kc - pc))

[ "$mode" = trace ] || exit 0
# xtrace with a clock: the time from one traced step to the next, charged to
# the first (so a fork shows on the line before the subshell's first step).
for ((i = 0; i < runs; i++)); do
  E2B_PROC=$proc E2B_SWEEP=$sweep E2B_SH=$sh BASH_XTRACEFD=7 "${argv[@]:0:3}" "PS4='+\${EPOCHREALTIME} '; set -x; ${argv[3]}" \
    e2b-sh "$files/t$i" true >/dev/null 2>&1 7>"$files/trace.$i"
done
echo
echo "where the wrapper's time goes (xtrace, which adds its own cost to each step); µs per run"
for ((i = 0; i < runs; i++)); do cat "$files/trace.$i"; echo "+END"; done | awk -v runs="$runs" '
  /^\++[0-9]/ { t = $1; sub(/^\++/, "", t)
    if (have) d[key] += (t - prev) * 1e6
    $1 = ""; key = substr($0, 2, 60); prev = t; have = 1; next }
  /^\+END/ { have = 0 }
  END { for (k in d) printf "%8.1f  %s\n", d[k] / runs, k }' | sort -rn | head -15
rm -rf "$files"
