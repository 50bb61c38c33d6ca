/* compat.h — the few Lua C API differences between Lua 5.4 and the Lua 5.1
 * ABI (PUC Lua 5.1 and LuaJIT 2.1), so the binding compiles against each
 * unchanged.
 *
 * On the 5.1 ABI the binding only calls functions that both PUC Lua 5.1 and
 * LuaJIT export: LuaJIT's headers also declare a few 5.2 functions
 * (luaL_setfuncs, luaL_testudata, luaL_setmetatable) that PUC Lua 5.1 lacks,
 * so the 5.2-style names below are redirected to local versions. One build
 * then loads in lua5.1, luajit and OpenResty's nginx alike, whichever 5.1
 * headers it was compiled against. */
#ifndef E2B_LUA_COMPAT_H
#define E2B_LUA_COMPAT_H

#include <lauxlib.h>
#include <lua.h>

#if LUA_VERSION_NUM < 502

static inline void e2b_compat_setfuncs(lua_State *L, const luaL_Reg *l) {
  for (; l->name; l++) {
    lua_pushcfunction(L, l->func);
    lua_setfield(L, -2, l->name);
  }
}

static inline void *e2b_compat_testudata(lua_State *L, int idx, const char *tname) {
  void *p = lua_touserdata(L, idx);
  if (!p || !lua_getmetatable(L, idx)) return NULL;
  luaL_getmetatable(L, tname);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same ? p : NULL;
}

static inline void e2b_compat_setmetatable(lua_State *L, const char *tname) {
  luaL_getmetatable(L, tname);
  lua_setmetatable(L, -2);
}

/* Numbers are doubles on the 5.1 ABI: an integer is a whole number that
 * lua_Integer can hold. */
static inline int e2b_compat_isinteger(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TNUMBER) return 0;
  lua_Number n = lua_tonumber(L, idx);
  return n >= -9007199254740992.0 && n <= 9007199254740992.0 && n == (lua_Number)(lua_Integer)n;
}

#undef luaL_newlib
#define lua_rawlen(L, i) lua_objlen(L, (i))
#define luaL_setfuncs(L, l, nup) e2b_compat_setfuncs(L, (l))
#define luaL_newlib(L, l) (lua_newtable(L), e2b_compat_setfuncs(L, (l)))
#define luaL_testudata(L, i, t) e2b_compat_testudata(L, (i), (t))
#define luaL_setmetatable(L, t) e2b_compat_setmetatable(L, (t))
#define lua_isinteger(L, i) e2b_compat_isinteger(L, (i))
#define compat_newuserdata(L, size) lua_newuserdata(L, (size))

#elif LUA_VERSION_NUM < 504

#define compat_newuserdata(L, size) lua_newuserdata(L, (size))
#if LUA_VERSION_NUM < 503
static inline int e2b_compat_isinteger(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TNUMBER) return 0;
  lua_Number n = lua_tonumber(L, idx);
  return n >= -9007199254740992.0 && n <= 9007199254740992.0 && n == (lua_Number)(lua_Integer)n;
}
#define lua_isinteger(L, i) e2b_compat_isinteger(L, (i))
#endif

#else
#define compat_newuserdata(L, size) lua_newuserdatauv(L, (size), 0)
#endif

#endif
