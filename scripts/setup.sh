#!/bin/sh
# Set-up for a fresh Debian 12 machine, as root: installs the Debian packages
# lua-e2b needs (only those missing), then builds and installs the rock the
# way a LuaRocks user would, so that `e2b-local` is on PATH and
# `lua5.4 -l e2b` finds the module. Safe to run again.
set -eu
cd "$(dirname "$0")/.."

# clang + libclang-rt-14-dev build the libFuzzer targets: the runtime is only
# a recommendation of clang, and recommendations are not installed here.
# luajit2/libluajit2-5.1-dev are OpenResty's LuaJIT branch: the one Debian's
# libnginx-mod-http-lua is built against (plain luajit conflicts with it).
# nghttp2-proxy is nghttpx, e2b-local's HTTP/2 front (--h2, bench/network.sh).
PACKAGES="build-essential cmake pkg-config git ca-certificates curl procps python3 python3-venv
  lua5.4 liblua5.4-dev lua-cjson lua-busted luarocks lua-ldoc
  libcurl4-openssl-dev libmbedtls-dev libjansson-dev libmicrohttpd-dev zlib1g-dev bubblewrap
  luajit2 libluajit2-5.1-dev nginx-light libnginx-mod-http-lua lua-socket lua-check
  libnss-myhostname clang libclang-rt-14-dev libseccomp-dev nghttp2-proxy"

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
# Logs go to a private file (mktemp: mode 0600), shown only when a step fails.
LOG=$(mktemp /tmp/lua-e2b-setup.XXXXXX)
fail() {
  echo "setup: $1 failed; its log ($LOG):"
  tail -n 50 "$LOG"
  exit 1
}

if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  apt-get update -qq >>"$LOG" 2>&1 || fail "apt-get update"
  # One line per package as it is set up; apt's status comes back by a file.
  status=$(mktemp /tmp/lua-e2b-setup-status.XXXXXX)
  { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing 2>&1
    echo $? >"$status"; } | tee -a "$LOG" | sed -n 's/^Setting up \([^ ]*\).*/setup:   set up \1/p'
  rc=$(cat "$status")
  rm -f "$status"
  [ "$rc" = 0 ] || fail "apt-get install"
fi

# The official SDKs the tests run declare node ">=20.18.1 <21 || >=22";
# Debian 12's nodejs is 18. When the node on PATH is older, npm installs a
# Node.js 22 from the npm registry (the `node` package) into /usr/local,
# ahead of /usr/bin on PATH.
NODE_PIN=22.12.0
node_fits() {
  node -e 'const [a, b, c] = process.versions.node.split(".").map(Number);
    process.exit(a >= 22 || (a === 20 && (b > 18 || (b === 18 && c >= 1))) ? 0 : 1)' 2>/dev/null
}
if ! node_fits; then
  echo "setup: node $(node --version 2>/dev/null) is older than the SDKs need (>=20.18.1 <21 or >=22):" \
    "installing Node.js $NODE_PIN from the npm registry (npm install -g node@$NODE_PIN)"
  npm install -g --no-audit --no-fund --loglevel=error "node@$NODE_PIN" >>"$LOG" 2>&1 ||
    fail "npm install -g node@$NODE_PIN"
  hash -r 2>/dev/null || true
  node_fits || fail "Node.js $NODE_PIN (node on PATH is still $(node --version 2>/dev/null))"
  echo "setup: node $(node --version) at $(command -v node)"
fi

# The official Python SDK the tests run (spec/pysdk): a venv holding exactly
# the pinned requirements, their hashes checked, from PyPI (python3-venv
# gives Debian's python3 its venv module and pip).
PYSDK=spec/pysdk/.venv
echo "setup: the official Python SDK for spec/pysdk (python3 -m venv $PYSDK, pip install -r spec/pysdk/requirements.txt)"
[ -x "$PYSDK/bin/python" ] || python3 -m venv "$PYSDK" >>"$LOG" 2>&1 || fail "python3 -m venv $PYSDK"
"$PYSDK/bin/pip" install --disable-pip-version-check --require-hashes -r spec/pysdk/requirements.txt >>"$LOG" 2>&1 ||
  fail "pip install -r spec/pysdk/requirements.txt"

# e2b-local's HTTPS names (api.e2b.localhost, <port>-<id>.e2b.localhost) are
# under .localhost, which nss-myhostname resolves to loopback (RFC 6761) --
# once "myhostname" is on the hosts line, before dns so no query leaves.
NSS=${NSSWITCH_CONF:-/etc/nsswitch.conf}
if ! grep -Eq '^hosts:.*[[:space:]]myhostname([[:space:]]|$)' "$NSS" 2>/dev/null; then
  echo "setup: adding myhostname to the hosts line of $NSS"
  if grep -Eq '^hosts:[[:space:]]+files([[:space:]]|$)' "$NSS"; then
    sed -i -E 's/^(hosts:[[:space:]]+files)([[:space:]]|$)/\1 myhostname\2/' "$NSS"
  elif grep -Eq '^hosts:' "$NSS"; then
    sed -i -E 's/^(hosts:[[:space:]]+)/\1myhostname /' "$NSS"
  else
    echo "hosts:          files myhostname dns" >>"$NSS"
  fi
fi
getent hosts 49983-setup.e2b.localhost >/dev/null ||
  echo "setup: warning: *.e2b.localhost does not resolve (check the hosts line of $NSS)"

# LuaRocks' own registry is not needed: dependencies come from Debian.
# The rock for LuaJIT (Lua 5.1 ABI): what OpenResty's nginx and `luajit`
# load; it installs e2b-local-5.1. It goes first: on a machine set up before
# the two rocks stopped sharing bin/e2b-local, replacing it may delete the
# e2b-local it once owned, which the 5.4 rock then installs again.
echo "setup: building and installing the rock (luarocks make, Lua 5.1/LuaJIT)"
luarocks --lua-version=5.1 make --deps-mode=none rockspec/lua-e2b-scm-1.rockspec >>"$LOG" 2>&1 ||
  fail "luarocks make (Lua 5.1)"
echo "setup: building and installing the rock (luarocks make, Lua 5.4)"
luarocks --lua-version=5.4 make --deps-mode=none rockspec/lua-e2b-scm-1.rockspec >>"$LOG" 2>&1 ||
  fail "luarocks make (Lua 5.4)"
# libe2b for C programs (a rock installs none of it): e2b.h, the libraries,
# e2b.pc and the CMake package under /usr/local, so that
# `cc quickstart.c $(pkg-config --cflags --libs e2b)` works (docs/c.md).
echo "setup: building and installing libe2b for C (cmake --install, prefix /usr/local)"
CBUILD=$(mktemp -d)
{ cmake -S . -B "$CBUILD" -DCMAKE_BUILD_TYPE=Release -DE2B_BUILD_BINDING=OFF -DE2B_BUILD_EMULATOR=OFF \
    -DE2B_BUILD_TESTS=OFF && cmake --build "$CBUILD" -j"$(nproc)" && cmake --install "$CBUILD"; } >>"$LOG" 2>&1 ||
  fail "libe2b install"
rm -rf "$CBUILD"
ldconfig
pkg-config --exists e2b || fail "pkg-config does not find the installed e2b.pc"
echo "setup: e2b-local at $(command -v e2b-local); module at $(lua5.4 -e 'print(package.searchpath("e2b", package.path))')"
rm -f "$LOG"
