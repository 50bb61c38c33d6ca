#!/bin/sh
# Runs every test suite of lua-e2b and ends with one pass/fail count:
#   1. C unit tests (ctest) of a warnings-as-errors build
#   2. busted specs (spec/**), Lua 5.4, the tree's module against the tree's
#      e2b-local (one e2b-local exec per spec file, three files at a time)
#   3. the official E2B JS SDK (npm e2b 2.51.0, v2 routes) against e2b-local;
#      its versions test drives the alias e2b-2.45 (npm:e2b@2.45.0, v1 routes);
#      then the official Python SDK (PyPI e2b 2.51.0, spec/pysdk) over HTTPS
#   4. 1-3 again on a build with AddressSanitizer + UBSan (both SDK suites)
#   5. the busted specs against real E2B when E2B_LIVE=1 and E2B_API_KEY are
#      set (reported as skipped otherwise)
#   6. the binding built against LuaJIT 2.1's headers (warnings are errors),
#      loaded by luajit and lua5.1; the client's specs (spec/client, spec/ngx)
#      again under LuaJIT (e2b.sched); the OpenResty suite (spec/ngx/*_test:
#      nginx-light + lua module, e2b.ngx); `luarocks make` of a clean clone
#      for Lua 5.4 and 5.1 into one temp tree (no fight over bin/e2b-local or
#      bin/lua-e2b), `luarocks test`, `luarocks pack`
#   7. libe2b for C: installed into a temp prefix, examples/c/quickstart.c
#      built with pkg-config and with find_package(e2b), run against e2b-local
#   8. luacheck over lua/, spec/, examples/, bench/, scripts/ (.luacheckrc),
#      the shape rules of docs/architecture.md (scripts/structure.lua), and
#      the HTML reference built by ldoc from lua/ without a warning
#   9. the libFuzzer targets of fuzz/ (clang, ASan + UBSan), each replaying
#      its seed corpus and then fuzzing for FUZZ_SECONDS (default 4)
# Every suite tests the tree; the rock scripts/setup.sh installed is what
# the luarocks suite and the README's first command exercise.
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

# Counts a TAP log (busted -o TAP) into a suite's pass/fail.
record_tap() { # suite log
  pass=$(grep -c '^ok ' "$2")
  fail=$(grep -c '^not ok ' "$2")
  if ! grep -q '^1\.\.' "$2"; then fail=$((fail + 1)); fi
  [ "$fail" = 0 ] || grep -vE '^ok |^[0-9:.]+ e2b-local' "$2" | head -80
  record "$1" "$pass" "$fail"
}

# Runs spec files SPEC_JOBS at a time (default 4), each under its own
# e2b-local (a pass waits on sandboxes far more than it computes: about 90%
# of its wall time is idle), the tree's module first on the paths; the
# largest files (which tend to run longest) go first. One TAP log per file, one count per suite;
# a file whose log holds a sanitizer report (scripts/sanitizer_reports.sh) counts one failure,
# and one whose leak check did not run (LeakSanitizer's tracer crashed) runs once more.
run_busted() { # suite e2b-local-binary lua lua-path lua-cpath files... (env: SPEC_ENV)
  suite=$1
  dir="$LOGS/busted-$(echo "$suite" | tr -c 'a-zA-Z0-9\n' '-')"
  rm -rf "$dir"
  mkdir -p "$dir"
  BIN=$2 LUA_BIN=$3 SPEC_LUA_PATH=$4 SPEC_LUA_CPATH=$5 DIR=$dir
  # shellcheck disable=SC2016,SC2089,SC2090
  RUN_ONE='timeout 600 "$BIN" exec -- env LUA_PATH="$SPEC_LUA_PATH" \
      LUA_CPATH="$SPEC_LUA_CPATH" ${SPEC_ENV:-} busted --lua="$LUA_BIN" -o TAP "$1" \
      >"$DIR/$(echo "$1" | tr / -).log" 2>&1'
  export BIN LUA_BIN SPEC_LUA_PATH SPEC_LUA_CPATH DIR RUN_ONE
  shift 5
  for f in "$@"; do echo "$(wc -c <"$f") $f"; done | sort -rn | cut -d' ' -f2 |
    xargs -P "${SPEC_JOBS:-4}" -I{} sh -fc "$RUN_ONE" _ {}
  fail=0
  for f in "$@"; do
    log="$dir/$(echo "$f" | tr / -).log"
    sh "$ROOT/scripts/sanitizer_reports.sh" "$log" >/dev/null 2>&1
    if [ $? = 3 ]; then
      echo "leak check did not run for $f (LeakSanitizer's tracer crashed): running it once more"
      mv "$log" "$log.unchecked"
      sh -fc "$RUN_ONE" _ "$f"
    fi
    grep -q '^1\.\.' "$log" || { fail=$((fail + 1)); echo "no plan (crashed or timed out): $log"; tail -n 20 "$log"; }
    # a report (a leak at the Lua process's or e2b-local's exit) fails its
    # file even when every test of it passed; so does a second unchecked run
    sh "$ROOT/scripts/sanitizer_reports.sh" "$log" || fail=$((fail + 1))
  done
  cat "$dir"/*.log >"$dir.log"
  pass=$(cat "$dir"/*.log | grep -c '^ok ')
  fail=$((fail + $(cat "$dir"/*.log | grep -c '^not ok ')))
  [ "$fail" = 0 ] || grep -hvE '^ok |^[0-9:.]+ e2b-local' "$dir"/*.log | head -80
  record "$suite" "$pass" "$fail"
}

# The official Python SDK (spec/pysdk, pytest): each module starts its own
# e2b-local and reaches it over HTTPS; three modules at a time (xdist). It
# runs beside the JS SDK's pass (both mostly wait on sandboxes): pysdk_start
# puts it in the background, pysdk_finish waits for it and counts.
pysdk_start() { # suite e2b-local-binary
  PYSDK_LOG="$LOGS/pysdk-$(echo "$1" | tr -c 'a-zA-Z0-9\n' '-').log"
  PYTHONDONTWRITEBYTECODE=1 E2B_LOCAL_BIN=$2 timeout 600 spec/pysdk/.venv/bin/python -m pytest -q -rfE \
    spec/pysdk >"$PYSDK_LOG" 2>&1 &
  PYSDK_PID=$!
}

pysdk_finish() { # suite
  log=$PYSDK_LOG
  wait "$PYSDK_PID"
  rc=$?
  last=$(tail -n 1 "$log")
  pass=$(echo "$last" | grep -oE '[0-9]+ passed' | cut -d' ' -f1)
  fail=$(echo "$last" | grep -oE '[0-9]+ failed' | cut -d' ' -f1)
  errors=$(echo "$last" | grep -oE '[0-9]+ errors?' | cut -d' ' -f1)
  fail=$((${fail:-0} + ${errors:-0}))
  # no count, or a failing run that counted no failure (a crash, a timeout)
  if [ -z "$pass$fail" ] || { [ "$rc" != 0 ] && [ "$fail" = 0 ]; }; then fail=$((fail + 1)); fi
  [ "$fail" = 0 ] || grep -E '^(FAILED|ERROR) |Error|assert' "$log" | head -60
  record "$1" "${pass:-0}" "$fail"
}

run_sdk() { # suite e2b-local-binary [sdk-package]
  log="$LOGS/sdk-$(basename "$(dirname "$2")")-$(echo "$1" | tr -c 'a-zA-Z0-9\n' '-').log"
  # each test file starts its own e2b-local: three files at a time
  E2B_SDK=${3:-e2b} E2B_LOCAL_BIN=$2 timeout 900 node --test --test-concurrency=3 spec/sdk/*.test.mjs >"$log" 2>&1
  pass=$(sed -nE 's/^# pass ([0-9]+)$/\1/p' "$log" | tail -1)
  fail=$(sed -nE 's/^# fail ([0-9]+)$/\1/p' "$log" | tail -1)
  if [ -z "$pass" ] || [ -z "$fail" ]; then pass=${pass:-0}; fail=$((${fail:-0} + 1)); fi
  [ "$fail" = 0 ] || grep -E 'not ok|Error|expected|actual' "$log" | head -60
  record "$1" "$pass" "$fail"
}

echo "== installing the official SDKs for the compatibility suites"
npm ci --prefix spec/sdk --no-audit --no-fund --loglevel=error >"$LOGS/npm.log" 2>&1 || cat "$LOGS/npm.log"
# spec/pysdk/.venv: what scripts/setup.sh makes, brought to the pinned
# requirements (nothing is fetched when they are already met)
{ [ -x spec/pysdk/.venv/bin/python ] || python3 -m venv spec/pysdk/.venv; } >"$LOGS/pip.log" 2>&1 &&
  spec/pysdk/.venv/bin/pip install --disable-pip-version-check --require-hashes \
    -r spec/pysdk/requirements.txt >>"$LOGS/pip.log" 2>&1 || cat "$LOGS/pip.log"

echo "== build (warnings are errors)"
if build "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
  run_ctest "C unit tests (ctest)" "$ROOT/build"
else
  tail -n 40 "$LOGS/build-configure.log" "$LOGS/build-build.log" 2>/dev/null
  record "build" 0 1
fi

echo "== libe2b for C: install into a temp prefix, build examples/c against it, run it"
# One check per way of consuming the installed library: pkg-config (shared
# libe2b.so) and find_package(e2b) (target e2b::e2b), each built and run.
if [ -x "$ROOT/build/emulator/e2b-local" ]; then
  cdir=$(mktemp -d /tmp/lua-e2b-c.XXXXXX)
  c_pass=0
  c_fail=0
  clog="$LOGS/libe2b-c.log"
  : >"$clog"
  if cmake --install "$ROOT/build" --prefix "$cdir/prefix" >>"$clog" 2>&1 &&
    (cd "$cdir" && cc -Wall -Wextra -Werror -o quickstart "$ROOT/examples/c/quickstart.c" \
      $(PKG_CONFIG_PATH="$cdir/prefix/lib/pkgconfig" pkg-config --cflags --libs e2b)) >>"$clog" 2>&1 &&
    (cd "$cdir" && timeout 120 "$ROOT/build/emulator/e2b-local" exec -- \
      env LD_LIBRARY_PATH="$cdir/prefix/lib" ./quickstart) >>"$clog" 2>&1 &&
    grep -q '^killed ' "$clog"; then
    c_pass=$((c_pass + 1))
  else
    c_fail=$((c_fail + 1))
    tail -n 30 "$clog"
  fi
  if cmake -S "$ROOT/examples/c" -B "$cdir/cmake" -DCMAKE_PREFIX_PATH="$cdir/prefix" >>"$clog" 2>&1 &&
    cmake --build "$cdir/cmake" >>"$clog" 2>&1 &&
    timeout 120 "$ROOT/build/emulator/e2b-local" exec -- "$cdir/cmake/quickstart" >"$cdir/cmake.out" 2>>"$clog" &&
    grep -q '^killed ' "$cdir/cmake.out"; then
    c_pass=$((c_pass + 1))
  else
    c_fail=$((c_fail + 1))
    tail -n 30 "$clog" "$cdir/cmake.out"
  fi
  rm -rf "$cdir"
  record "libe2b for C (pkg-config, find_package)" $c_pass $c_fail
else
  record "libe2b for C (no e2b-local built)" 0 1
fi

echo "== luacheck"
if command -v luacheck >/dev/null 2>&1; then
  if luacheck --no-color . >"$LOGS/luacheck.log" 2>&1; then
    record "luacheck" 1 0
  else
    grep -vE '^Checking .* OK$' "$LOGS/luacheck.log" | head -40
    record "luacheck" 0 1
  fi
else
  echo "luacheck is missing (scripts/setup.sh installs lua-check)"
  record "luacheck (missing)" 0 1
fi

echo "== structure: short functions, small binding files, no include or call circles, file tables"
if lua5.4 scripts/structure.lua >"$LOGS/structure.log" 2>&1; then
  record "structure (scripts/structure.lua)" 1 0
else
  cat "$LOGS/structure.log"
  record "structure (scripts/structure.lua)" 0 1
fi

echo "== the HTML reference builds from lua/ without a warning (ldoc)"
# docs/api/ is generated (sh scripts/docs.sh), not kept in git: a warning
# here means an LDoc comment no longer matches its function.
if command -v ldoc >/dev/null 2>&1; then
  api=$(mktemp -d /tmp/lua-e2b-api.XXXXXX)
  if ldoc -d "$api" . >"$LOGS/ldoc.log" 2>&1 && [ -s "$api/index.html" ]; then
    record "API reference builds (ldoc)" 1 0
  else
    tail -n 20 "$LOGS/ldoc.log"
    record "API reference builds (ldoc)" 0 1
  fi
  rm -rf "$api"
else
  echo "ldoc is missing (scripts/setup.sh installs lua-ldoc)"
  record "API reference (ldoc missing)" 0 1
fi

# Every pass below tests the tree (lua/ and the builds here); the installed
# rock is what the luarocks suite and the README's first command test.
ALL_SPECS=$(find spec -name '*_spec.lua' | sort)
echo "== busted specs, Lua 5.4, the tree, against its e2b-local"
# shellcheck disable=SC2086
run_busted "busted specs (Lua 5.4)" "$ROOT/build/emulator/e2b-local" lua5.4 \
  "$ROOT/lua/?.lua;;" "$ROOT/build/lib/?.so;;" $ALL_SPECS

# One pass of the newer SDK: its versions test drives the older one (v1
# routes) through create, connect, commands, files, pause, list and kill.
echo "== official JS SDK e2b@$(node -p 'require("./spec/sdk/package.json").dependencies.e2b') (and 2.45's routes) against e2b-local"
echo "== beside it, the official Python SDK e2b==$(sed -nE 's/^e2b==([^ ]+).*/\1/p' spec/pysdk/requirements.txt) (sync and async clients, HTTPS)"
pysdk_start "official Python SDK compatibility" "$ROOT/build/emulator/e2b-local"
run_sdk "official SDK compatibility" "$ROOT/build/emulator/e2b-local"
pysdk_finish "official Python SDK compatibility"

echo "== binding against LuaJIT 2.1's headers (warnings are errors)"
if build "$ROOT/build-luajit" -DLUA_VERSION=5.1 -DE2B_BUILD_TESTS=OFF -DE2B_BUILD_EMULATOR=OFF; then
  load=0
  for lua in luajit lua5.1; do
    LUA_PATH="$ROOT/lua/?.lua;;" LUA_CPATH="$ROOT/build-luajit/lib/?.so;;" \
      $lua -e 'assert(require("e2b").client{ api_key = "k" })' >>"$LOGS/build-luajit-load.log" 2>&1 ||
      { load=$((load + 1)); echo "e2b.core does not load in $lua"; cat "$LOGS/build-luajit-load.log"; }
  done
  record "binding for LuaJIT (builds, loads in luajit+lua5.1)" $((2 - load)) $load
else
  tail -n 40 "$LOGS/build-luajit-configure.log" "$LOGS/build-luajit-build.log" 2>/dev/null
  record "binding for LuaJIT (build)" 0 1
fi

# What the interpreter can change is the client's: spec/client (and the
# ngx adapter's behaviour) under LuaJIT; e2b-local's and E2B's rules do not
# depend on the client's Lua and run once, above.
echo "== busted specs of the client, LuaJIT, the tree (e2b.sched), against e2b-local"
luajit_specs=""
only54=""
for f in spec/client/*_spec.lua spec/ngx/*_spec.lua; do
  if luajit -bl "$f" >/dev/null 2>&1; then luajit_specs="$luajit_specs $f"; else only54="$only54 $f"; fi
done
[ -z "$only54" ] || echo "Lua 5.4-only syntax, run by the Lua 5.4 suites only:$only54"
# shellcheck disable=SC2086
run_busted "busted specs of the client (LuaJIT)" "$ROOT/build/emulator/e2b-local" luajit \
  "$ROOT/lua/?.lua;;" "$ROOT/build-luajit/lib/?.so;;" $luajit_specs

echo "== OpenResty: nginx-light + libnginx-mod-http-lua, e2b.ngx, the tree"
E2B_NGX_LUA_PATH="$ROOT/lua/?.lua;" E2B_NGX_LUA_CPATH="$ROOT/build-luajit/lib/?.so;" \
  timeout 900 "$ROOT/build/emulator/e2b-local" exec -- busted --lua=lua5.4 -o TAP --pattern=_test spec/ngx \
  >"$LOGS/openresty.log" 2>&1
record_tap "OpenResty (nginx + LuaJIT, e2b.ngx)" "$LOGS/openresty.log"

echo "== luarocks from a clean clone: make for Lua 5.1 and 5.4 into one tree, test, remove, pack"
rocks=$(mktemp -d /tmp/lua-e2b-rocks.XXXXXX)
git clone -q "$ROOT" "$rocks/src"
rock_pass=0
rock_fail=0
rock_check() { # what command...: one check of the rock suite
  what=$1
  shift
  if "$@" >>"$LOGS/rock.log" 2>&1; then
    rock_pass=$((rock_pass + 1))
  else
    rock_fail=$((rock_fail + 1))
    echo "rock check failed: $what"
    tail -n 30 "$LOGS/rock.log"
  fi
}
rock_make() { # lua-version
  (cd "$rocks/src" && luarocks --lua-version="$1" --tree="$rocks/tree" make --deps-mode=none \
    rockspec/lua-e2b-scm-1.rockspec)
}
rock_loads() { # lua-version interpreter
  LUA_PATH="$rocks/tree/share/lua/$1/?.lua;;" LUA_CPATH="$rocks/tree/lib/lua/$1/?.so;;" \
    $2 -e 'local e = require("e2b"); assert(e._VERSION == "lua-e2b " .. e.VERSION)'
}
: >"$LOGS/rock.log"
# The 5.1 rock first: the 5.4 one then leaves its build in build.luarocks/
# for `luarocks test`.
rock_check "make 5.1" rock_make 5.1
rock_check "5.1 rock loads in luajit" rock_loads 5.1 luajit
rock_check "make 5.4" rock_make 5.4
rock_check "5.4 rock loads in lua5.4" rock_loads 5.4 lua5.4
# Both rocks in one tree, each with its own command: neither moved aside.
rock_check "bin: e2b-local(-5.1) and lua-e2b(-5.1), nothing moved aside" \
  test "$(ls "$rocks/tree/bin" | tr '\n' ' ')" = "e2b-local e2b-local-5.1 lua-e2b lua-e2b-5.1 "
rock_check "lua-e2b runs from the 5.4 rock, lua-e2b-5.1 from the 5.1 rock" sh -c \
  "'$rocks/tree/bin/lua-e2b' --version && '$rocks/tree/bin/lua-e2b-5.1' --version"
# `luarocks test` runs the checkout's specs under e2b-local exec; busted
# and lua-cjson come from Debian, declared as provided (no registry).
echo 'rocks_provided = { busted = "2.1.1-1", ["lua-cjson"] = "2.1.0-1" }' >"$rocks/config.lua"
rock_check "luarocks test" sh -c "cd '$rocks/src' && LUAROCKS_CONFIG='$rocks/config.lua' timeout 300 \
  luarocks --lua-version=5.4 --tree='$rocks/tree' test -- -o TAP spec/client/client_spec.lua"
# Removing the 5.1 rock leaves the 5.4 rock's e2b-local working.
rock_check "remove 5.1, e2b-local still runs" sh -c "luarocks --lua-version=5.1 --tree='$rocks/tree' \
  remove lua-e2b && '$rocks/tree/bin/e2b-local' --help && '$rocks/tree/bin/lua-e2b' --version &&
  ! test -e '$rocks/tree/bin/e2b-local-5.1' && ! test -e '$rocks/tree/bin/lua-e2b-5.1'"
# `luarocks pack` of the scm rockspec, its source URL pointed at the clone
# (no network): the .src.rock holds the sources the build needs.
mkdir "$rocks/pack"
sed "s|^  url = .*|  url = \"git+file://$rocks/src\",|" "$rocks/src/rockspec/lua-e2b-scm-1.rockspec" \
  >"$rocks/pack/lua-e2b-scm-1.rockspec"
rock_check "luarocks pack" sh -c "cd '$rocks/pack' && luarocks pack lua-e2b-scm-1.rockspec &&
  unzip -l lua-e2b-scm-1.src.rock | grep -q ' src/core/include/e2b.h\$' &&
  unzip -l lua-e2b-scm-1.src.rock | grep -q ' src/CMakeLists.txt\$'"
rock_check "luarocks lint (scm, 0.1.0)" sh -c "luarocks lint '$ROOT/rockspec/lua-e2b-scm-1.rockspec' &&
  luarocks lint '$ROOT/rockspec/lua-e2b-0.1.0-1.rockspec'"
rm -rf "$rocks"
record "luarocks (make 5.1+5.4, test, remove, pack)" $rock_pass $rock_fail

echo "== fuzz targets (clang, libFuzzer + ASan + UBSan), a few seconds each"
# Each target replays its seed corpus (fuzz/corpus/<target>: valid inputs and
# past crashes), then mutates for FUZZ_SECONDS; any crash, leak, UB or broken
# property fails it. New inputs go to a temp dir, never into the repo.
FUZZ_SECONDS=${FUZZ_SECONDS:-4}
# One target: "ok", or "failed" and what its log says (for xargs: a script,
# not a function).
FUZZ_ONE='work=$(mktemp -d /tmp/lua-e2b-fuzz.XXXXXX)
  log="$LOGS/fuzz-$1.log"
  if UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$ROOT/fuzz/ubsan.supp" \
    ASAN_OPTIONS="detect_leaks=1:halt_on_error=1" timeout $((FUZZ_SECONDS + 60)) \
    "$ROOT/build-fuzz/fuzz/fuzz_$1" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$LOGS/fuzz-$1-" "$work" "$ROOT/fuzz/corpus/$1" >"$log" 2>&1; then
    echo ok
  else
    echo failed
    grep -E "ERROR|runtime error|SUMMARY|artifact|#[0-9] " "$log" | head -30
  fi
  rm -rf "$work"'
if build "$ROOT/build-fuzz" -DCMAKE_C_COMPILER=clang -DE2B_BUILD_FUZZERS=ON -DE2B_BUILD_TESTS=OFF \
  -DE2B_BUILD_BINDING=OFF -DE2B_BUILD_EMULATOR=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
  # two targets at a time (one core each), recorded in order
  for f in "$ROOT"/fuzz/fuzz_*.c; do
    t=$(basename "$f" .c)
    echo "${t#fuzz_}"
  done | ROOT=$ROOT LOGS=$LOGS FUZZ_SECONDS=$FUZZ_SECONDS FUZZ_ONE=$FUZZ_ONE xargs -P 2 -I{} \
    sh -c 'eval "$FUZZ_ONE" >"$LOGS/fuzz-$1.verdict"' _ {}
  for f in "$ROOT"/fuzz/fuzz_*.c; do
    t=$(basename "$f" .c)
    t=${t#fuzz_}
    if [ "$(head -n 1 "$LOGS/fuzz-$t.verdict")" = ok ]; then
      record "fuzz_$t (${FUZZ_SECONDS}s)" 1 0
    else
      tail -n +2 "$LOGS/fuzz-$t.verdict"
      record "fuzz_$t (${FUZZ_SECONDS}s)" 0 1
    fi
  done
else
  tail -n 40 "$LOGS/build-fuzz-configure.log" "$LOGS/build-fuzz-build.log" 2>/dev/null
  record "fuzz targets (build)" 0 1
fi

echo "== AddressSanitizer + UBSan build"
ASAN_LIB=$(gcc -print-file-name=libasan.so)
# A small quarantine keeps RSS meaningful for the bounded-memory specs.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0:quarantine_size_mb=4:thread_local_quarantine_size_kb=64"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
if build "$ROOT/build-asan" -DE2B_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug; then
  run_ctest "C unit tests (ASan+UBSan)" "$ROOT/build-asan"
  # Lua unloads e2b.core (dlclose) as it closes, before LeakSanitizer looks,
  # so a leak of the binding or libe2b had no names in its report; memory
  # only a module's globals held was reported too. A dlclose that does
  # nothing keeps every module mapped: names, and only real leaks.
  PRELOAD=$ASAN_LIB
  printf 'int dlclose(void *h) { (void)h; return 0; }\n' |
    cc -shared -fPIC -x c -o "$ROOT/build-asan/keep-mapped.so" - &&
    PRELOAD="$ASAN_LIB:$ROOT/build-asan/keep-mapped.so"
  # shellcheck disable=SC2086
  SPEC_ENV="LD_PRELOAD=$PRELOAD ASAN_OPTIONS=$ASAN_OPTIONS" run_busted "busted specs (ASan+UBSan)" \
    "$ROOT/build-asan/emulator/e2b-local" lua5.4 "$ROOT/lua/?.lua;;" "$ROOT/build-asan/lib/?.so;;" $ALL_SPECS
  pysdk_start "official Python SDK compatibility (ASan+UBSan)" "$ROOT/build-asan/emulator/e2b-local"
  run_sdk "official SDK compatibility (ASan+UBSan)" "$ROOT/build-asan/emulator/e2b-local"
  pysdk_finish "official Python SDK compatibility (ASan+UBSan)"
else
  tail -n 40 "$LOGS/build-asan-configure.log" "$LOGS/build-asan-build.log" 2>/dev/null
  record "ASan build" 0 1
fi

if [ "${E2B_LIVE:-}" = 1 ] && [ -n "${E2B_API_KEY:-}" ]; then
  echo "== busted specs against real E2B"
  log="$LOGS/busted-live.log"
  E2B_LIVE=1 timeout 1800 busted --lua=lua5.4 -o TAP spec >"$log" 2>&1
  record_tap "busted specs (live E2B)" "$log"
else
  echo "== live E2B suite: skipped (set E2B_LIVE=1 and E2B_API_KEY to run it)"
fi

printf '\nSummary:\n%s' "$summary"
printf 'TOTAL: %d passed, %d failed\n' "$total_pass" "$total_fail"
[ "$total_fail" = 0 ]
