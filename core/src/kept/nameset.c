/* nameset.c — a set of short names for outwatch.c: the processes whose
 * files changed since a watch started. Open addressing; it starts small and
 * doubles, so a sandbox that ran a few commands keeps a few hundred bytes,
 * and past 3/4 of E2B_NAMESET_MAX slots (or when memory runs out) it turns
 * lossy: from then on it answers "maybe" to every name, which makes a
 * reader read once instead of missing a write. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define FIRST_SLOTS 64

static size_t slot_of(const char *s, size_t len, size_t slots) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
  return h % slots;
}

/* The slot holding name, or the free one where it would go. */
static size_t find(const e2b_nameset *set, const char *name, size_t len) {
  size_t i = slot_of(name, len, set->cap);
  while (set->slots[i] && (strlen(set->slots[i]) != len || memcmp(set->slots[i], name, len) != 0))
    i = (i + 1) % set->cap;
  return i;
}

/* Room for one more name: allocates or doubles the table, moving the names
 * it holds. -1 when it may not grow further or cannot. */
static int make_room(e2b_nameset *set) {
  if (set->slots && set->count + 1 <= set->cap * 3 / 4) return 0;
  size_t cap = set->slots ? set->cap * 2 : FIRST_SLOTS;
  if (cap > E2B_NAMESET_MAX) return -1;
  char **old = set->slots;
  size_t old_cap = set->cap;
  if (!(set->slots = calloc(cap, sizeof *set->slots))) {
    set->slots = old;
    return -1;
  }
  set->cap = cap;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i]) set->slots[find(set, old[i], strlen(old[i]))] = old[i];
  free(old);
  return 0;
}

void e2b_nameset_add(e2b_nameset *set, const char *name, size_t len) {
  if (set->lossy || (set->slots && set->slots[find(set, name, len)])) return;
  if (make_room(set) != 0) {
    set->lossy = 1;
    return;
  }
  size_t i = find(set, name, len);
  if (!(set->slots[i] = strndup(name, len))) {
    set->lossy = 1;
    return;
  }
  set->count++;
}

int e2b_nameset_maybe(const e2b_nameset *set, const char *name, size_t len) {
  if (set->lossy) return 1;
  return set->slots && set->slots[find(set, name, len)] ? 1 : 0;
}

void e2b_nameset_clear(e2b_nameset *set) {
  for (size_t i = 0; set->slots && i < set->cap; i++) free(set->slots[i]);
  free(set->slots);
  memset(set, 0, sizeof *set);
}
