/* tarsafe.c — core.tarsafe: the codec's tar filter (codec.h) for Lua, so a
 * tree that comes out of a sandbox reaches the host's `tar -x` only as an
 * archive of plain files, directories and links that stay inside. */
#include "auxiliar.h"
#include "codec.h"

typedef struct {
  e2b_tarsafe *t;
} tarsafe_ud;

static tarsafe_ud *check_tarsafe(lua_State *L) {
  tarsafe_ud *u = luaL_checkudata(L, 1, TARSAFE_MT);
  if (!u->t) luaL_error(L, "tarsafe is closed");
  return u;
}

/* tarsafe() -> a filter */
int e2bL_core_tarsafe(lua_State *L) {
  tarsafe_ud *u = compat_newuserdata(L, sizeof *u);
  u->t = NULL;
  luaL_setmetatable(L, TARSAFE_MT);
  if (!(u->t = e2b_tarsafe_new())) luaL_error(L, "out of memory");
  return 1;
}

static int add_to_buffer(void *ud, const void *data, size_t len) {
  luaL_addlstring(ud, data, len);
  return 0;
}

static int refused(lua_State *L, const tarsafe_ud *u) {
  lua_pushnil(L);
  lua_pushstring(L, e2b_tarsafe_error(u->t));
  return 2;
}

/* feed(chunk) -> the filtered bytes (maybe "") | nil, why it was refused */
static int tarsafe_feed(lua_State *L) {
  tarsafe_ud *u = check_tarsafe(L);
  size_t len;
  const char *chunk = luaL_checklstring(L, 2, &len);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  if (e2b_tarsafe_feed(u->t, chunk, len, add_to_buffer, &b) != 0) return refused(L, u);
  luaL_pushresult(&b);
  return 1;
}

/* finish() -> true | nil, why (no end-of-archive marker, or refused before) */
static int tarsafe_finish(lua_State *L) {
  tarsafe_ud *u = check_tarsafe(L);
  if (e2b_tarsafe_finish(u->t) != 0) return refused(L, u);
  lua_pushboolean(L, 1);
  return 1;
}

static int tarsafe_gc(lua_State *L) {
  tarsafe_ud *u = luaL_checkudata(L, 1, TARSAFE_MT);
  e2b_tarsafe_free(u->t);
  u->t = NULL;
  return 0;
}

static const luaL_Reg tarsafe_methods[] = {
    {"feed", tarsafe_feed}, {"finish", tarsafe_finish}, {"close", tarsafe_gc}, {NULL, NULL}};

void e2bL_open_tarsafe(lua_State *L) { e2bL_new_class(L, TARSAFE_MT, tarsafe_methods, tarsafe_gc); }
