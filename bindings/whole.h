/* whole.h — core.buffer(): bytes gathered in one growing block that becomes
 * one Lua string (files:read of a whole file), so the file is held once, not
 * as a list of chunks and then again as their concatenation. */
#ifndef E2B_LUA_WHOLE_H
#define E2B_LUA_WHOLE_H

#include <stddef.h>

#include "compat.h"

typedef struct lwhole lwhole;

/* Registers the buffer's metatable; core.buffer is lwhole_new. */
void lwhole_register(lua_State *L);
int lwhole_new(lua_State *L);
/* The buffer at idx, or NULL when it is something else. */
lwhole *lwhole_test(lua_State *L, int idx);
/* Appends len bytes: 0, or -1 when memory ran out (the buffer is unchanged). */
int lwhole_append(lwhole *b, const void *data, size_t len);

#endif
