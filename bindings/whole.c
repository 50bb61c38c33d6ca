/* whole.c — core.buffer() (see whole.h).
 *
 * Lua copies every string it is given (lua_pushlstring, luaL_Buffer), so
 * turning a gathered file into a string would hold it twice for a moment:
 * a 200 MB read would peak at 400 MB. On Lua 5.4 the block is therefore
 * allocated with the state's own allocator, with room in front for a
 * string header, and becomes the memory of the new string itself: while
 * lua_pushlstring runs, the state's allocator is wrapped so that Lua's
 * request for exactly that string's size is answered with the block, and
 * Lua's copy of the bytes is then a copy onto themselves (same address:
 * glibc's memcpy is memmove there, and ASan skips the overlap check). The
 * header size is measured, not assumed: each buffer watches what Lua asks
 * for when it makes two probe strings, then proves the handover on a third.
 * Where any of that does not hold (another Lua, another allocator), take()
 * copies, as lua_pushlstring always does.
 *
 * The layout itself (one block: a header of fixed size, the text, '\0') is
 * Lua 5.4's implementation, not its promise, so it is checked twice: at
 * build time whole_probe.c runs against the Lua library and only when it
 * holds is E2B_WHOLE_ADOPT defined (without it this file is the plain
 * copy); and at run time, per state, by the probes above. */
#include "whole.h"
#include "auxiliar.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WHOLE_MT "e2b.core.buffer"
/* Longer than any Lua's short strings (5.4: 40 bytes), which are interned
 * and so not always allocated anew. */
#define LONG_STRING 64

struct lwhole {
  char *block; /* hdr bytes of room, len bytes of data, spare room: cap bytes */
  size_t hdr, len, cap;
  lua_Alloc f; /* the allocator the block comes from (NULL: malloc) */
  void *fud;
  int adopt; /* the handover was proven for this state */
};

static void *block_realloc(lwhole *b, void *p, size_t osize, size_t nsize) {
  if (b->f) return b->f(b->fud, p, osize, nsize);
  if (nsize == 0) {
    free(p);
    return NULL;
  }
  return realloc(p, nsize);
}

static void release(lwhole *b) {
  if (b->block) block_realloc(b, b->block, b->cap, 0);
  b->block = NULL;
  b->len = b->cap = 0;
}

int lwhole_append(lwhole *b, const void *data, size_t len) {
  if (len == 0) return 0;
  size_t need = b->hdr + b->len + len + 1;
  if (need < len) return -1;
  if (need > b->cap) {
    /* Doubling: the room past the data is never touched, so it costs
     * address space, not memory; take() gives it back. */
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < need) {
      if (cap > SIZE_MAX / 2) return -1;
      cap *= 2;
    }
    char *p = block_realloc(b, b->block, b->cap, cap);
    if (!p) return -1;
    b->block = p;
    b->cap = cap;
  }
  memcpy(b->block + b->hdr + b->len, data, len);
  b->len += len;
  return 0;
}

#if defined(E2B_WHOLE_ADOPT) && LUA_VERSION_NUM == 504

typedef struct handover {
  lua_Alloc f; /* the state's allocator, wrapped while one string is made */
  void *ud;
  const char *text;
  size_t len;
  size_t want; /* answer a string allocation of this size with block (0: only watch) */
  char *block;
  int taken;
  size_t seen; /* watching: the size of the first string allocation */
} handover;

/* 5.4 passes the new object's type as osize when ptr is NULL. */
static void *handover_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  handover *h = ud;
  if (!ptr && osize == LUA_TSTRING && !h->taken) {
    if (!h->want && !h->seen) h->seen = nsize;
    if (h->want && nsize == h->want) {
      h->taken = 1;
      return h->block;
    }
  }
  return h->f(h->ud, ptr, osize, nsize);
}

static int push_text(lua_State *L) {
  handover *h = lua_touserdata(L, 1);
  lua_pushlstring(L, h->text, h->len);
  return 1;
}

/* Pushes h->text through the wrapped allocator, protected so that the
 * state's own allocator is back whatever happens; 0, or -1 with the error
 * pushed. */
static int push_through(lua_State *L, handover *h) {
  h->f = lua_getallocf(L, &h->ud);
  lua_pushcfunction(L, push_text);
  lua_pushlightuserdata(L, h);
  lua_setallocf(L, handover_alloc, h);
  int rc = lua_pcall(L, 1, 1, 0);
  lua_setallocf(L, h->f, h->ud);
  return rc == LUA_OK ? 0 : -1;
}

/* The bytes Lua 5.4 puts before a long string's text, or 0 when unknown. */
static size_t header_size(lua_State *L, size_t len) {
  char text[LONG_STRING * 2];
  memset(text, 'h', len);
  handover h = {.text = text, .len = len};
  int rc = push_through(L, &h);
  lua_pop(L, 1);
  return rc == 0 && h.seen > len + 1 && h.seen - len - 1 < 256 ? h.seen - len - 1 : 0;
}

/* Hands b's block to Lua as a string of its len bytes (pushed); 1 when it
 * was taken (b no longer owns it), 0 when Lua made its own copy. Raises
 * what lua_pushlstring raised. */
static int hand_over(lua_State *L, lwhole *b) {
  handover h = {.text = b->block + b->hdr, .len = b->len, .want = b->hdr + b->len + 1, .block = b->block};
  int rc = push_through(L, &h);
  if (h.taken) {
    b->block = NULL;
    b->len = b->cap = 0;
  }
  if (rc != 0) lua_error(L);
  return h.taken;
}

/* Measures the header twice, then proves a handover on a small string. */
static void calibrate(lua_State *L, lwhole *b) {
  size_t hdr = header_size(L, LONG_STRING);
  if (!hdr || header_size(L, LONG_STRING + 37) != hdr) return;
  lwhole probe = {.hdr = hdr, .f = b->f, .fud = b->fud};
  char text[LONG_STRING + 17];
  for (size_t i = 0; i < sizeof text; i++) text[i] = (char)('a' + i % 26);
  if (lwhole_append(&probe, text, sizeof text) != 0) return;
  size_t size = hdr + sizeof text + 1;
  char *block = block_realloc(&probe, probe.block, probe.cap, size);
  if (!block) {
    release(&probe);
    return;
  }
  probe.block = block;
  probe.cap = size;
  const char *want = block + hdr;
  int taken = hand_over(L, &probe);
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  b->adopt = taken && s == want && n == sizeof text && memcmp(s, text, n) == 0;
  b->hdr = b->adopt ? hdr : 0;
  lua_pop(L, 1);
  release(&probe);
}

#endif

static lwhole *check_whole(lua_State *L) { return luaL_checkudata(L, 1, WHOLE_MT); }

lwhole *lwhole_test(lua_State *L, int idx) { return luaL_testudata(L, idx, WHOLE_MT); }

/* core.buffer() -> an empty buffer */
int lwhole_new(lua_State *L) {
  lwhole *b = compat_newuserdata(L, sizeof *b);
  memset(b, 0, sizeof *b);
  luaL_setmetatable(L, WHOLE_MT);
#if defined(E2B_WHOLE_ADOPT) && LUA_VERSION_NUM == 504
  b->f = lua_getallocf(L, &b->fud);
  calibrate(L, b);
#endif
  return 1;
}

/* buffer:take() -> the bytes as one string; the buffer is empty after. */
static int whole_take(lua_State *L) {
  lwhole *b = check_whole(L);
#if defined(E2B_WHOLE_ADOPT) && LUA_VERSION_NUM == 504
  void *ud;
  if (b->adopt && b->len >= LONG_STRING && lua_getallocf(L, &ud) == b->f && ud == b->fud) {
    size_t size = b->hdr + b->len + 1;
    char *block = block_realloc(b, b->block, b->cap, size); /* shrinks in place */
    if (block) {
      b->block = block;
      b->cap = size;
      if (!hand_over(L, b)) release(b);
      return 1;
    }
  }
#endif
  lua_pushlstring(L, b->block ? b->block + b->hdr : "", b->len);
  release(b);
  return 1;
}

/* buffer:size() -> bytes gathered so far */
static int whole_size(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_whole(L)->len);
  return 1;
}

static int whole_gc(lua_State *L) {
  release(check_whole(L));
  return 0;
}

void lwhole_register(lua_State *L) {
  static const luaL_Reg methods[] = {{"take", whole_take}, {"size", whole_size}, {NULL, NULL}};
  e2bL_new_class(L, WHOLE_MT, methods, whole_gc);
}
