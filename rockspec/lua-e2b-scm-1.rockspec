rockspec_format = "3.0"
package = "lua-e2b"
version = "scm-1"

source = {
  url = "git+https://github.com/lua-e2b/lua-e2b.git",
}

description = {
  summary = "Drive E2B cloud sandboxes from Lua, with a local E2B-compatible server",
  detailed = [[
lua-e2b creates E2B sandboxes, runs commands with byte-exact output, moves
files and manages their lifecycle, from plain Lua (coroutine tasks) or
OpenResty. It ships e2b-local, an E2B-compatible server that runs sandboxes
as isolated local processes, so everything works without an account.
]],
  license = "MIT",
  homepage = "https://github.com/lua-e2b/lua-e2b",
}

-- Sandboxes are Linux (bubblewrap for e2b-local); the client is only built
-- and tested there.
supported_platforms = { "linux" }

dependencies = {
  "lua >= 5.1",
  "lua-cjson", -- the spec helpers and the command-line tool
}

-- What libe2b links. libmicrohttpd, zlib and libseccomp are e2b-local's alone, and
-- e2b-local is optional: a rock can declare no optional dependency, so they
-- are not listed, and CMake builds e2b-local only where all are found
-- (saying so at configure time when they are not).
external_dependencies = {
  CURL = { library = "curl" }, -- (Debian keeps curl.h under a multiarch directory LuaRocks does not search)
  JANSSON = { header = "jansson.h", library = "jansson" },
  MBEDTLS = { header = "mbedtls/sha256.h", library = "mbedcrypto" },
  ZLIB = { header = "zlib.h", library = "z" },
}

build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    LUA_INCDIR = "$(LUA_INCDIR)",
    LUA_LIBDIR = "$(LUA_LIBDIR)", -- whole_probe.c checks Lua 5.4 against its library
    LUADIR = "$(LUADIR)",
    LIBDIR = "$(LIBDIR)",
    BINDIR = "$(BINDIR)",
    E2B_BUILD_TESTS = "OFF",
    -- A rock is the Lua module and e2b-local, not libe2b for C programs.
    E2B_BUILD_SHARED = "OFF",
    E2B_INSTALL_LIBRARY = "OFF",
    E2B_BUILD_EMULATOR = "AUTO",
    -- Rocks for two Lua versions share one bin directory: the 5.4 rock
    -- installs e2b-local and lua-e2b, a 5.1 (LuaJIT) rock e2b-local-5.1 and
    -- lua-e2b-5.1 (LuaRocks wraps the Lua script for the rock's interpreter).
    E2B_LOCAL_SUFFIX_ABI = "ON",
  },
}

-- `luarocks test` after `luarocks make`: the specs of this checkout against
-- a fresh e2b-local (scripts/rock_test.lua says which it uses). Arguments
-- after `--` go to busted, e.g. `luarocks test -- spec/client/client_spec.lua`.
test_dependencies = {
  "busted",
}

test = {
  type = "command",
  script = "scripts/rock_test.lua",
}
