/* loop.c — the loop userdata: one core loop per Lua state, stepped by the scheduler adapters. */
#include "auxiliar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- loop ---- */

int e2bL_core_loop(lua_State *L) {
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  if (!loop) return e2bL_push_fail(L, &err);
  lloop *l = calloc(1, sizeof *l);
  if (!l) {
    e2b_loop_release(loop);
    return luaL_error(L, "out of memory");
  }
  l->refs = 1;
  l->loop = loop;
  loop_ud *u = compat_newuserdata(L, sizeof *u);
  u->l = l;
  luaL_setmetatable(L, LOOP_MT);
  return 1;
}

loop_ud *e2bL_check_loop(lua_State *L, int idx) {
  loop_ud *u = luaL_checkudata(L, idx, LOOP_MT);
  if (!u->l) luaL_error(L, "loop is closed");
  return u;
}

/* step(timeout_ms) -> array of notified request ids (or nil), running transfers */
static int loop_step(lua_State *L) {
  loop_ud *u = e2bL_check_loop(L, 1);
  lua_Integer timeout = luaL_optinteger(L, 2, 0);
  lloop *l = u->l;
  int running = e2b_loop_step(l->loop, timeout > 0 ? (long)timeout : 0);
  if (l->ready_len == 0) {
    lua_pushnil(L);
  } else {
    lua_createtable(L, (int)l->ready_len, 0);
    for (size_t i = 0; i < l->ready_len; i++) {
      lua_pushinteger(L, l->ready[i]);
      lua_rawseti(L, -2, (int)i + 1);
    }
    l->ready_len = 0;
  }
  lua_pushinteger(L, running);
  return 2;
}

static int loop_active(lua_State *L) {
  loop_ud *u = e2bL_check_loop(L, 1);
  lua_pushinteger(L, e2b_loop_active(u->l->loop));
  return 1;
}

/* timeout() -> ms until the loop must be stepped even without socket
 * activity (0: now, -1: only sockets or new work); e2b_loop_timeout. */
static int loop_timeout(lua_State *L) {
  loop_ud *u = e2bL_check_loop(L, 1);
  lua_pushinteger(L, e2b_loop_timeout(u->l->loop));
  return 1;
}

/* bridge() -> a unix socket path to connect to once (see
 * e2b_loop_bridge_open: one byte arrives whenever one of curl's sockets is
 * ready, again only after a step), or nil, error table. */
static int loop_bridge(lua_State *L) {
  loop_ud *u = e2bL_check_loop(L, 1);
  char path[E2B_BRIDGE_PATH_SIZE];
  e2b_error err;
  if (!e2b_loop_bridge_open(u->l->loop, path, sizeof path, &err)) return e2bL_push_fail(L, &err);
  lua_pushstring(L, path);
  return 1;
}

/* bridge_close(): stops the bridge's thread (closing the loop does too). */
static int loop_bridge_close(lua_State *L) {
  loop_ud *u = e2bL_check_loop(L, 1);
  e2b_loop_bridge_close(u->l->loop);
  return 0;
}

/* Closing a loop (at the latest, when the Lua state closes) first sends
 * what finalizers left unattended (a kill of a process group, the removal
 * of kept output), for as long as the core allows (e2b_loop_settle). */
static int loop_gc(lua_State *L) {
  loop_ud *u = luaL_checkudata(L, 1, LOOP_MT);
  if (u->l) {
    e2b_loop_settle(u->l->loop, 0);
    e2bL_lloop_release(u->l);
    u->l = NULL;
  }
  return 0;
}

static const luaL_Reg loop_methods[] = {
    {"step", loop_step},     {"active", loop_active},
    {"timeout", loop_timeout}, {"bridge", loop_bridge},
    {"bridge_close", loop_bridge_close}, {"close", loop_gc},
    {NULL, NULL}};

void e2bL_open_loop(lua_State *L) { e2bL_new_class(L, LOOP_MT, loop_methods, loop_gc); }
