/* envdver.c — the envd version sandboxes report (envdver.h). */
#include "envdver.h"

#include <stdio.h>
#include <string.h>

static char g_version[32] = ENVD_VERSION_CURRENT;

static int parse(const char *s, unsigned v[3]) {
  int n = 0;
  return s && sscanf(s, "%u.%u.%u%n", &v[0], &v[1], &v[2], &n) == 3 && s[n] == '\0' ? 0 : -1;
}

static int compare(const unsigned a[3], const unsigned b[3]) {
  for (int i = 0; i < 3; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

int envd_version_set(const char *v) {
  unsigned want[3], cur[3];
  if (parse(v, want) != 0 || strlen(v) >= sizeof g_version) return -1;
  parse(ENVD_VERSION_CURRENT, cur);
  if (compare(want, cur) > 0) return -1; /* nothing newer is emulated */
  snprintf(g_version, sizeof g_version, "%s", v);
  return 0;
}

const char *envd_version(void) { return g_version; }

int envd_below(const char *since) {
  unsigned have[3], need[3];
  if (parse(g_version, have) != 0 || parse(since, need) != 0) return 0;
  return compare(have, need) < 0;
}
