/* tarsafe_names.h — inside codec/ only: the name rules of the tar filter
 * (tarsafe.c) and the set of symlinks it has let through. */
#ifndef E2B_TARSAFE_NAMES_H
#define E2B_TARSAFE_NAMES_H
#include <stddef.h>

#define TARSAFE_MAX_NAME 4095 /* Linux's PATH_MAX less its NUL */

/* The names of symlinks already passed: an open-addressing hash set, bounded
 * (TARSAFE_MAX_LINKS names), so an archive cannot grow it without end. */
typedef struct {
  char **slots;
  size_t cap, count;
} tarsafe_set;

int tarsafe_set_init(tarsafe_set *s);
void tarsafe_set_free(tarsafe_set *s);
/* 0, or -1 when full or out of memory. */
int tarsafe_set_add(tarsafe_set *s, const char *name);

/* Each returns NULL when the name is fine, else why it is refused. */

/* A member name made clean into out (no "", "." or trailing "/" components;
 * "" for the top directory); *depth is its number of components. Absolute
 * names and ".." components are refused. */
const char *tarsafe_clean_name(const char *in, char *out, size_t *depth);
/* A clean name that is a symlink passed before, or lies under one. */
const char *tarsafe_under_link(const tarsafe_set *s, const char *clean);
/* A symlink target, relative to a directory `depth` components deep: only
 * leading ".." components, no more of them than depth. Its clean form goes
 * to out ("." when it names that directory). */
const char *tarsafe_symlink_target(const char *in, size_t depth, char *out);
/* A symlink target kept as written (any non-empty target the host can hold),
 * copied to out. */
const char *tarsafe_symlink_as_is(const char *in, char *out);
#endif
