#!/bin/sh
# Runs every test suite of lua-e2b and ends with one pass/fail count:
#   1. C unit tests (ctest) of a warnings-as-errors build
#   2. busted conformance specs, Lua 5.4, against an e2b-local this script
#      starts and stops (e2b-local exec, free loopback port)
#   3. the official E2B JS SDK against e2b-local, twice: npm e2b (2.51.0, v2
#      create/connect routes) and the alias e2b-2.45 (npm:e2b@2.45.0, v1 routes)
#   4. 1-3 again on a build with AddressSanitizer + UBSan
#   5. the same busted specs against real E2B when E2B_LIVE=1 and E2B_API_KEY
#      are set (reported as skipped otherwise)
# Suites 1-3 use what scripts/setup.sh installed (the rock and e2b-local).
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
LOGS="$ROOT/build/test-logs"
mkdir -p "$LOGS"

total_pass=0
total_fail=0
summary=""

record() { # suite pass fail
  total_pass=$((total_pass + $2))
  total_fail=$((total_fail + $3))
  summary="$summary$(printf '  %-44s %5d passed %5d failed' "$1" "$2" "$3")
"
  printf '%s: %d passed, %d failed\n' "$1" "$2" "$3"
}

build() { # dir extra-cmake-args...
  dir=$1
  shift
  cmake -S "$ROOT" -B "$dir" -DE2B_WERROR=ON -DE2B_BUILD_TESTS=ON -DE2B_BUILD_BINDING=ON \
    -DE2B_BUILD_EMULATOR=ON -DLUA_VERSION=5.4 "$@" >"$LOGS/$(basename "$dir")-configure.log" 2>&1 &&
    cmake --build "$dir" -j2 >"$LOGS/$(basename "$dir")-build.log" 2>&1
}

run_ctest() { # suite dir
  log="$LOGS/$(basename "$2")-ctest.log"
  (cd "$2" && ctest --output-on-failure) >"$log" 2>&1
  line=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$log")
  failed=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/')
  all=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) tests failed out of ([0-9]+).*/\2/')
  if [ -z "$line" ]; then failed=1; all=1; cat "$log"; fi
  [ "$failed" = 0 ] || cat "$log"
  record "$1" $((all - failed)) "$failed"
}

run_busted() { # suite e2b-local-binary [env...]
  suite=$1
  bin=$2
  shift 2
  log="$LOGS/busted-$(echo "$suite" | tr -c 'a-zA-Z0-9\n' '-').log"
  if [ "$bin" = live ]; then
    timeout 1800 env "$@" busted --lua=lua5.4 -o TAP spec >"$log" 2>&1
  else
    timeout 900 "$bin" exec -- env "$@" busted --lua=lua5.4 -o TAP spec >"$log" 2>&1
  fi
  pass=$(grep -c '^ok ' "$log")
  fail=$(grep -c '^not ok ' "$log")
  if ! grep -q '^1\.\.' "$log"; then fail=$((fail + 1)); fi
  [ "$fail" = 0 ] || grep -vE '^ok |^[0-9:.]+ e2b-local' "$log" | head -80
  record "$suite" "$pass" "$fail"
}

run_sdk() { # suite e2b-local-binary [sdk-package]
  log="$LOGS/sdk-$(basename "$(dirname "$2")")-$(echo "$1" | tr -c 'a-zA-Z0-9\n' '-').log"
  E2B_SDK=${3:-e2b} E2B_LOCAL_BIN=$2 timeout 900 node --test spec/sdk/ >"$log" 2>&1
  pass=$(sed -nE 's/^# pass ([0-9]+)$/\1/p' "$log" | tail -1)
  fail=$(sed -nE 's/^# fail ([0-9]+)$/\1/p' "$log" | tail -1)
  if [ -z "$pass" ] || [ -z "$fail" ]; then pass=${pass:-0}; fail=$((${fail:-0} + 1)); fi
  [ "$fail" = 0 ] || grep -E 'not ok|Error|expected|actual' "$log" | head -60
  record "$1" "$pass" "$fail"
}

echo "== installing the official SDK for the compatibility suite"
npm ci --prefix spec/sdk --no-audit --no-fund --loglevel=error >"$LOGS/npm.log" 2>&1 || cat "$LOGS/npm.log"

echo "== build (warnings are errors)"
if build "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
  run_ctest "C unit tests (ctest)" "$ROOT/build"
else
  tail -40 "$LOGS/build-configure.log" "$LOGS/build-build.log" 2>/dev/null
  record "build" 0 1
fi

echo "== busted specs, Lua 5.4, installed rock, against e2b-local"
run_busted "busted specs (Lua 5.4)" "$(command -v e2b-local)"

echo "== official JS SDK e2b@$(node -p 'require("./spec/sdk/package.json").dependencies.e2b') against e2b-local"
run_sdk "official SDK compatibility" "$(command -v e2b-local)"
echo "== official JS SDK $(node -p 'require("./spec/sdk/package.json").dependencies["e2b-2.45"]') (v1 routes) against e2b-local"
run_sdk "official SDK compatibility (e2b 2.45)" "$(command -v e2b-local)" e2b-2.45

echo "== AddressSanitizer + UBSan build"
ASAN_LIB=$(gcc -print-file-name=libasan.so)
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
if build "$ROOT/build-asan" -DE2B_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug; then
  run_ctest "C unit tests (ASan+UBSan)" "$ROOT/build-asan"
  run_busted "busted specs (ASan+UBSan)" "$ROOT/build-asan/emulator/e2b-local" \
    LD_PRELOAD="$ASAN_LIB" ASAN_OPTIONS="$ASAN_OPTIONS" \
    LUA_PATH="$ROOT/lua/?.lua;;" LUA_CPATH="$ROOT/build-asan/lib/?.so;;"
  run_sdk "official SDK compatibility (ASan+UBSan)" "$ROOT/build-asan/emulator/e2b-local"
  run_sdk "official SDK compatibility (e2b 2.45, ASan+UBSan)" "$ROOT/build-asan/emulator/e2b-local" e2b-2.45
else
  tail -40 "$LOGS/build-asan-configure.log" "$LOGS/build-asan-build.log" 2>/dev/null
  record "ASan build" 0 1
fi

if [ "${E2B_LIVE:-}" = 1 ] && [ -n "${E2B_API_KEY:-}" ]; then
  echo "== busted specs against real E2B"
  run_busted "busted specs (live E2B)" live E2B_LIVE=1
else
  echo "== live E2B suite: skipped (set E2B_LIVE=1 and E2B_API_KEY to run it)"
fi

printf '\nSummary:\n%s' "$summary"
printf 'TOTAL: %d passed, %d failed\n' "$total_pass" "$total_fail"
[ "$total_fail" = 0 ]
