/* whole_probe.c — whether whole.c's handover holds for the Lua 5.4 it is
 * built against. whole.c hands a gathered file to Lua as the memory of the
 * new string itself; that rests on how Lua 5.4 makes a long string, which
 * its manual does not promise: lua_pushlstring asks the state's allocator
 * (osize LUA_TSTRING, as the manual does promise) for one block of a
 * header of fixed size, the text and its '\0', and copies the text right
 * after the header. This program checks exactly that against the real
 * library: CMake runs it at configure time (whole.c copies instead when it
 * fails or cannot run) and ctest runs it again (whole_layout), so a Lua
 * release that changes the layout fails the test suite instead of going
 * unnoticed. Prints the header size; exit 0 when all of it holds. */
#include <lauxlib.h>
#include <lua.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct probe {
  size_t seen;  /* watching: the size of the first string allocation */
  size_t want;  /* answering: a string allocation of this size gets answer */
  char *answer;
  int taken;
} probe;

static void *probe_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  probe *p = ud;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  if (!ptr && osize == LUA_TSTRING) {
    if (p->want && nsize == p->want && !p->taken) {
      p->taken = 1;
      return p->answer;
    }
    if (!p->want && !p->seen) p->seen = nsize;
  }
  return realloc(ptr, nsize);
}

/* The bytes before a long string's text of len bytes (0: not one block of
 * header, text and '\0'). */
static size_t header_of(lua_State *L, probe *p, size_t len) {
  char *text = malloc(len);
  if (!text) return 0;
  memset(text, 'h', len);
  p->seen = 0;
  lua_pushlstring(L, text, len);
  lua_pop(L, 1);
  free(text);
  return p->seen > len + 1 && p->seen - len - 1 < 256 ? p->seen - len - 1 : 0;
}

/* A block already holding the text, handed over as that allocation, is the
 * string: same address, same bytes, terminated; Lua frees it later. */
static int handover_holds(lua_State *L, probe *p, size_t hdr) {
  size_t len = 100000;
  char *block = malloc(hdr + len + 1);
  if (!block) return 0;
  for (size_t i = 0; i < len; i++) block[hdr + i] = (char)('a' + i % 26);
  p->answer = block;
  p->want = hdr + len + 1;
  lua_pushlstring(L, block + hdr, len);
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  int ok = p->taken && s == block + hdr && n == len && s[len] == '\0';
  for (size_t i = 0; ok && i < len; i++) ok = s[i] == (char)('a' + i % 26);
  lua_pop(L, 1);
  if (!p->taken) free(block); /* Lua copied it: still ours */
  return ok;
}

int main(void) {
#if LUA_VERSION_NUM != 504
  puts("0");
  return 1;
#else
  probe p = {0};
  lua_State *L = lua_newstate(probe_alloc, &p);
  if (!L) return 1;
  size_t hdr = header_of(L, &p, 100);
  int ok = hdr && header_of(L, &p, 1000) == hdr && header_of(L, &p, 70000) == hdr && handover_holds(L, &p, hdr);
  lua_close(L); /* frees the handed-over block through probe_alloc */
  printf("%zu\n", ok ? hdr : (size_t)0);
  return ok ? 0 : 1;
#endif
}
