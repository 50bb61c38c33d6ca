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

dependencies = {
  "lua >= 5.1",
  "lua-cjson",   -- the lua-e2b command's --json output
}

external_dependencies = {
  CURL = { library = "curl" },
  JANSSON = { header = "jansson.h" },
  MBEDTLS = { header = "mbedtls/sha256.h" },
  MICROHTTPD = { header = "microhttpd.h" },
}

build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    LUA_INCDIR = "$(LUA_INCDIR)",
    LUADIR = "$(LUADIR)",
    LIBDIR = "$(LIBDIR)",
    BINDIR = "$(BINDIR)",
    E2B_BUILD_TESTS = "OFF",
  },
  -- The command-line tool; LuaRocks wraps it for the rock's interpreter.
  install = {
    bin = { ["lua-e2b"] = "bin/lua-e2b" },
  },
}
