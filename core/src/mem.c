/* mem.c — owned-memory helpers every layer of libe2b uses: growing arrays,
 * NULL-safe copies, freeing a struct's owned fields, wiping secrets. They
 * call nothing else in the library, so any file may call them without
 * making a circle (scripts/structure.lua checks). */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

char *e2b_strdup0(const char *s) { return s ? strdup(s) : NULL; }

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
