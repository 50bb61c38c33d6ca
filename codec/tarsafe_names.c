/* tarsafe_names.c — the name rules of the tar filter: what a member may be
 * called, where a symlink may point, and which names lie under a symlink
 * (see tarsafe_names.h). */
#include "tarsafe_names.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TARSAFE_MAX_LINKS 65536u

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

int tarsafe_set_init(tarsafe_set *s) {
  s->cap = 64;
  s->count = 0;
  s->slots = calloc(s->cap, sizeof *s->slots);
  return s->slots ? 0 : -1;
}

void tarsafe_set_free(tarsafe_set *s) {
  for (size_t i = 0; s->slots && i < s->cap; i++) free(s->slots[i]);
  free(s->slots);
  s->slots = NULL;
}

/* The slot holding name[0..n), or the empty one where it would go. */
static size_t slot_of(char *const *slots, size_t cap, const char *name, size_t n) {
  size_t i = (size_t)hash(name, n) & (cap - 1);
  while (slots[i] && !(strlen(slots[i]) == n && !memcmp(slots[i], name, n))) i = (i + 1) & (cap - 1);
  return i;
}

static int has(const tarsafe_set *s, const char *name, size_t n) {
  return s->slots[slot_of(s->slots, s->cap, name, n)] != NULL;
}

static int grow(tarsafe_set *s) {
  char **slots = calloc(s->cap * 2, sizeof *slots);
  if (!slots) return -1;
  for (size_t i = 0; i < s->cap; i++)
    if (s->slots[i]) slots[slot_of(slots, s->cap * 2, s->slots[i], strlen(s->slots[i]))] = s->slots[i];
  free(s->slots);
  s->slots = slots;
  s->cap *= 2;
  return 0;
}

int tarsafe_set_add(tarsafe_set *s, const char *name) {
  size_t n = strlen(name);
  if (has(s, name, n)) return 0;
  if (s->count >= TARSAFE_MAX_LINKS) return -1;
  if ((s->count + 1) * 2 > s->cap && grow(s) != 0) return -1;
  char *copy = strdup(name);
  if (!copy) return -1;
  s->slots[slot_of(s->slots, s->cap, name, n)] = copy;
  s->count++;
  return 0;
}

/* Appends component c[0..n) to out (of length *len), with a "/" between. */
static void append(char *out, size_t *len, const char *c, size_t n) {
  if (*len) out[(*len)++] = '/';
  memcpy(out + *len, c, n);
  *len += n;
  out[*len] = 0;
}

const char *tarsafe_clean_name(const char *in, char *out, size_t *depth) {
  size_t len = 0;
  *depth = 0;
  out[0] = 0;
  if (in[0] == '/') return "an absolute name";
  if (strlen(in) > TARSAFE_MAX_NAME) return "a name longer than the host allows";
  for (const char *p = in; *p;) {
    size_t n = strcspn(p, "/");
    if (n == 2 && p[0] == '.' && p[1] == '.') return "a '..' component";
    if (n && !(n == 1 && p[0] == '.')) {
      append(out, &len, p, n);
      ++*depth;
    }
    p += n + (p[n] == '/');
  }
  return NULL;
}

const char *tarsafe_under_link(const tarsafe_set *s, const char *clean) {
  size_t n = strlen(clean);
  for (size_t i = 1; i < n; i++)
    if (clean[i] == '/' && has(s, clean, i)) return "a path through a symlink of the archive";
  return has(s, clean, n) ? "it replaces a symlink of the archive" : NULL;
}

const char *tarsafe_symlink_target(const char *in, size_t depth, char *out) {
  size_t len = 0, ups = 0, names = 0;
  out[0] = 0;
  if (!in[0]) return "an empty target";
  if (in[0] == '/') return "an absolute target";
  if (strlen(in) > TARSAFE_MAX_NAME) return "a target longer than the host allows";
  for (const char *p = in; *p;) {
    size_t n = strcspn(p, "/");
    if (n == 2 && p[0] == '.' && p[1] == '.') {
      if (names) return "a target with '..' after a name";
      if (++ups > depth) return "a target outside the directory";
      append(out, &len, p, n);
    } else if (n && !(n == 1 && p[0] == '.')) {
      append(out, &len, p, n);
      names++;
    }
    p += n + (p[n] == '/');
  }
  if (!len) strcpy(out, ".");
  return NULL;
}

const char *tarsafe_symlink_as_is(const char *in, char *out) {
  size_t n = strlen(in);
  out[0] = 0;
  if (!n) return "an empty target";
  if (n > TARSAFE_MAX_NAME) return "a target longer than the host allows";
  memcpy(out, in, n + 1);
  return NULL;
}
