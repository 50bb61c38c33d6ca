/* compat.h — the few Lua C API differences between Lua 5.4 and Lua 5.1 /
 * LuaJIT 2.1, so the binding compiles against both unchanged. */
#ifndef E2B_LUA_COMPAT_H
#define E2B_LUA_COMPAT_H

#include <lauxlib.h>
#include <lua.h>

#if LUA_VERSION_NUM < 502

#define lua_rawlen(L, i) lua_objlen(L, (i))

static inline void compat_setfuncs(lua_State *L, const luaL_Reg *l) {
  for (; l->name; l++) {
    lua_pushcfunction(L, l->func);
    lua_setfield(L, -2, l->name);
  }
}
#define luaL_setfuncs(L, l, nup) compat_setfuncs(L, (l))
#define luaL_newlib(L, l) (lua_newtable(L), compat_setfuncs(L, (l)))

static inline void *luaL_testudata(lua_State *L, int idx, const char *tname) {
  void *p = lua_touserdata(L, idx);
  if (!p || !lua_getmetatable(L, idx)) return NULL;
  luaL_getmetatable(L, tname);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same ? p : NULL;
}

static inline void luaL_setmetatable(lua_State *L, const char *tname) {
  luaL_getmetatable(L, tname);
  lua_setmetatable(L, -2);
}

#define compat_newuserdata(L, size) lua_newuserdata(L, (size))

#elif LUA_VERSION_NUM < 504
#define compat_newuserdata(L, size) lua_newuserdata(L, (size))
#else
#define compat_newuserdata(L, size) lua_newuserdatauv(L, (size), 0)
#endif

#if LUA_VERSION_NUM < 503
static inline int lua_isinteger(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TNUMBER) return 0;
  lua_Number n = lua_tonumber(L, idx);
  return n == (lua_Number)(lua_Integer)n;
}
#endif

#endif
