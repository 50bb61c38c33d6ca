/* output.c — core.output: e2b_output for Process:wait, which the request's
 * collect() fills in C (request.c), so what is kept of a stream (all, tail,
 * none; max_output) is decided by the same C as e2b_run's and the bytes
 * never pass through Lua on their way to the result. */
#include "auxiliar.h"

#include <string.h>

typedef struct {
  e2b_output *o;
} output_ud;

static output_ud *check_output(lua_State *L) {
  output_ud *u = luaL_checkudata(L, 1, OUTPUT_MT);
  if (!u->o) luaL_error(L, "output is closed");
  return u;
}

/* output(max_output, keep?, chunks_stdout?, chunks_stderr?); max_output 0
 * is the core's default (E2B_DEFAULT_MAX_OUTPUT), so Lua keeps no copy of it */
int e2bL_core_output(lua_State *L) {
  lua_Integer max = luaL_checkinteger(L, 1);
  luaL_argcheck(L, max >= 0, 1, "max_output must not be negative");
  e2b_keep keep = e2bL_keep_of(L, luaL_optstring(L, 2, NULL));
  unsigned chunks = (lua_toboolean(L, 3) ? E2B_STREAM_STDOUT : 0) | (lua_toboolean(L, 4) ? E2B_STREAM_STDERR : 0);
  output_ud *u = compat_newuserdata(L, sizeof *u);
  u->o = NULL;
  luaL_setmetatable(L, OUTPUT_MT);
  if (!(u->o = e2b_output_new((size_t)max, keep, chunks))) luaL_error(L, "out of memory");
  return 1;
}

e2b_output *e2bL_check_output(lua_State *L, int idx) {
  output_ud *u = luaL_checkudata(L, idx, OUTPUT_MT);
  if (!u->o) luaL_error(L, "output is closed");
  return u->o;
}

/* A kept stream in a result that e2bL_push_run only reads. */
static int stream_of(output_ud *u, e2b_event_type t, uint8_t **data, size_t *len) {
  const uint8_t *p = e2b_output_data(u->o, t, len);
  *data = (uint8_t *)(uintptr_t)p;
  return p ? 0 : -1;
}

/* result(exit_code, status, error?, pty?) -> the table sbx:run returns */
static int output_result(lua_State *L) {
  output_ud *u = check_output(L);
  e2b_run_result r;
  memset(&r, 0, sizeof r);
  r.exit_code = (int)luaL_checkinteger(L, 2);
  r.status = (char *)(uintptr_t)luaL_optstring(L, 3, "");
  r.error = (char *)(uintptr_t)luaL_optstring(L, 4, NULL);
  r.keep = e2b_output_keep(u->o);
  r.dropped = e2b_output_dropped(u->o);
  int bad = stream_of(u, E2B_EVENT_STDOUT, &r.out, &r.out_len) != 0 ||
            stream_of(u, E2B_EVENT_STDERR, &r.err, &r.err_len) != 0 ||
            (lua_toboolean(L, 5) && stream_of(u, E2B_EVENT_PTY, &r.pty, &r.pty_len) != 0);
  if (bad) luaL_error(L, "out of memory");
  e2bL_push_run(L, &r);
  return 1;
}

static int output_gc(lua_State *L) {
  output_ud *u = luaL_checkudata(L, 1, OUTPUT_MT);
  e2b_output_free(u->o);
  u->o = NULL;
  return 0;
}

static const luaL_Reg output_methods[] = {
    {"result", output_result}, {"close", output_gc}, {NULL, NULL}};

void e2bL_open_output(lua_State *L) { e2bL_new_class(L, OUTPUT_MT, output_methods, output_gc); }
