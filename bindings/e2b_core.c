/*
 * e2b_core.c — the Lua binding of libe2b: module "e2b.core".
 *
 * Thin by design: it converts Lua tables to libe2b option structs and results
 * back, and exposes requests as userdata. Waiting, scheduling and the public
 * API live in Lua (the files under lua/e2b/). Wrong argument types raise (programmer
 * errors); runtime failures return nil, err. No global state (hostio.c's
 * signal flags aside): everything is
 * reachable from userdata or the registry of the calling Lua state.
 *
 * hostio.c adds the signal trap and non-blocking reads the CLI uses (the
 * binding's one global state: signal dispositions are per process).
 *
 * Userdata: loop, client, sbx, req, one file each (loop.c, client.c,
 * sandbox.c, request.c) over auxiliar.c. The C objects behind them are
 * reference counted, so the garbage collector may finalise them in any order.
 */
#include "auxiliar.h"
#include "codec.h"
#include "whole.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- module functions ---- */

/* A clock in whole ms (what deadlines count in). */
static int push_clock_ms(lua_State *L, clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
  return 1;
}

static int core_now_ms(lua_State *L) { return push_clock_ms(L, CLOCK_MONOTONIC); }
static int core_time_ms(lua_State *L) { return push_clock_ms(L, CLOCK_REALTIME); }

static int core_uuid4(lua_State *L) {
  char id[E2B_UUID_SIZE];
  if (e2b_uuid4(id) != 0) return luaL_error(L, "random generator unavailable");
  lua_pushstring(L, id);
  return 1;
}

static int core_utf8_valid(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_pushboolean(L, e2b_utf8_valid(s, len));
  return 1;
}

/* set_error_metatable(mt): errors created here get mt (from lua/e2b/errors.lua). */
static int core_set_error_metatable(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushvalue(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, ERROR_MT_KEY);
  return 0;
}

/* core.DEFAULTS: what a zeroed field of libe2b means (e2b.h's E2B_DEFAULT_*),
 * so Lua's defaults and the manual's can be the core's. */
static void push_defaults(lua_State *L) {
  static const struct {
    const char *name;
    lua_Integer value;
  } numbers[] = {{"request_timeout_ms", E2B_DEFAULT_REQUEST_TIMEOUT_MS},
                 {"budget_ms", E2B_DEFAULT_BUDGET_MS},
                 {"max_retries", E2B_DEFAULT_MAX_RETRIES},
                 {"max_inflight", E2B_DEFAULT_MAX_INFLIGHT},
                 {"page_size", E2B_DEFAULT_PAGE_SIZE},
                 {"sandbox_timeout_ms", E2B_DEFAULT_SANDBOX_TIMEOUT_MS},
                 {"ready_timeout_ms", E2B_DEFAULT_READY_TIMEOUT_MS},
                 {"setup_timeout_ms", E2B_DEFAULT_SETUP_TIMEOUT_MS},
                 {"idle_timeout_ms", E2B_DEFAULT_IDLE_TIMEOUT_MS},
                 {"kill_settle_ms", E2B_DEFAULT_KILL_SETTLE_MS},
                 {"list_depth", E2B_DEFAULT_LIST_DEPTH},
                 {"max_output", (lua_Integer)E2B_DEFAULT_MAX_OUTPUT}};
  lua_createtable(L, 0, (int)(sizeof numbers / sizeof numbers[0]) + 2);
  for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
    lua_pushinteger(L, numbers[i].value);
    lua_setfield(L, -2, numbers[i].name);
  }
  lua_pushliteral(L, E2B_DEFAULT_TEMPLATE);
  lua_setfield(L, -2, "template");
  lua_pushliteral(L, E2B_DEFAULT_DOMAIN);
  lua_setfield(L, -2, "domain");
}

/* core.KINDS: every error kind the core can return (e2b_code_name of each
 * code but E2B_OK; past the last code the name is "sandbox" again), and
 * core.RETRYABLE: { [kind] = true } for those retryable by default. */
static void push_kinds(lua_State *L) {
  lua_newtable(L);
  lua_newtable(L);
  for (int c = E2B_OK + 1; c < 256; c++) {
    const char *name = e2b_code_name((e2b_code)c);
    if (c != E2B_ERR_SANDBOX && strcmp(name, e2b_code_name(E2B_ERR_SANDBOX)) == 0) break;
    lua_pushstring(L, name);
    lua_rawseti(L, -3, c);
    if (e2b_code_retryable((e2b_code)c)) {
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, name);
    }
  }
}

/* The one symbol the module exports (the rest is hidden: CMakeLists.txt). */
__attribute__((visibility("default"))) int luaopen_e2b_core(lua_State *L) {
  static const luaL_Reg functions[] = {
      {"loop", e2bL_core_loop},           {"client", e2bL_core_client},
      {"now_ms", core_now_ms},           {"time_ms", core_time_ms},
      {"uuid4", core_uuid4},             {"utf8_valid", core_utf8_valid},
      {"buffer", lwhole_new},           {"network_check", e2bL_core_network_check},
      {"lifecycle_check", e2bL_core_lifecycle_check},
      {"output", e2bL_core_output},      {"tarsafe", e2bL_core_tarsafe},
      {"set_error_metatable", core_set_error_metatable},
      {NULL, NULL}};
  e2bL_open_loop(L);
  e2bL_open_client(L);
  e2bL_open_sbx(L);
  e2bL_open_req(L);
  e2bL_open_output(L);
  e2bL_open_tarsafe(L);
  lwhole_register(L);
  luaL_newlib(L, functions);
  e2bL_open_hostio(L);
  e2bL_open_git(L);
  e2bL_open_template(L);
  lua_pushstring(L, e2b_version());
  lua_setfield(L, -2, "VERSION");
  lua_pushstring(L, E2B_META_ID);
  lua_setfield(L, -2, "META_ID");
  lua_pushstring(L, E2B_META_OWNER);
  lua_setfield(L, -2, "META_OWNER");
  lua_pushstring(L, E2B_META_PREFIX);
  lua_setfield(L, -2, "META_PREFIX");
  lua_pushinteger(L, E2B_MCP_PORT);
  lua_setfield(L, -2, "MCP_PORT");
  lua_pushstring(L, E2B_MCP_TOKEN_FILE);
  lua_setfield(L, -2, "MCP_TOKEN_FILE");
  push_defaults(L);
  lua_setfield(L, -2, "DEFAULTS");
  push_kinds(L);
  lua_setfield(L, -3, "RETRYABLE");
  lua_setfield(L, -2, "KINDS");
  return 1;
}
