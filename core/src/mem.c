/* mem.c — owned-memory helpers every layer of libe2b uses: growing arrays
 * and byte buffers (growbuf), NULL-safe copies, freeing a struct's owned
 * fields, wiping secrets. They call nothing else in the library, so any
 * file may call them without making a circle (scripts/structure.lua
 * checks). */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

char *e2b_strdup0(const char *s) { return s ? strdup(s) : NULL; }

char *e2b_dup_cut(const char *s, size_t max) {
  if (!s) return NULL;
  size_t n = strlen(s);
  if (n > max) {
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
  }
  char *out = malloc(n + 1);
  if (out) {
    memcpy(out, s, n);
    out[n] = 0;
  }
  return out;
}

void *e2b_grow(void *items, size_t *cap, size_t size, size_t first) {
  size_t n = *cap ? *cap * 2 : first;
  if (n < *cap || n > SIZE_MAX / size) return NULL;
  void *p = realloc(items, n * size);
  if (p) *cap = n;
  return p;
}

void e2b_free_secret(char *secret) {
  if (secret) memset(secret, 0, strlen(secret));
  free(secret);
}

void e2b_free_fields(void *obj, const size_t *offsets) {
  for (const size_t *at = offsets; at && *at != E2B_FIELDS_END; at++) free(*(void **)((char *)obj + *at));
}

void e2b_free_owned(void *obj, const size_t *offsets) {
  if (!obj) return;
  e2b_free_fields(obj, offsets);
  free(obj);
}

int e2b_growbuf_append(growbuf *b, const void *data, size_t len) {
  if (len == 0) return 0;
  if (b->len + len + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + len + 1) cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
  }
  memcpy(b->data + b->len, data, len);
  b->len += len;
  b->data[b->len] = 0;
  return 0;
}

void e2b_growbuf_free(growbuf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}
