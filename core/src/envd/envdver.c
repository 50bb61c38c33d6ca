/* envdver.c — the envd version a sandbox reports, and the features that
 * need a newer one. The official SDKs gate the same features on the same
 * versions; below them a call is refused before anything is sent, since an
 * older envd ignores a field it does not know (so the call would silently
 * do something else) or lacks the route. An unknown version gates nothing:
 * a backend that does not say is taken to be current. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "MAJOR.MINOR.PATCH" (a leading "v" and any suffix ignored) into v[3];
 * 0, or -1 when it is no version. */
static int parse(const char *s, long v[3]) {
  if (!s) return -1;
  if (*s == 'v') s++;
  for (int i = 0; i < 3; i++) {
    char *end;
    if (*s < '0' || *s > '9') return -1;
    v[i] = strtol(s, &end, 10);
    s = end;
    if (i < 2 && *s++ != '.') return -1;
  }
  return 0;
}

int e2b_sbx_set_envd_version(e2b_sbx *sbx, const char *version) {
  char *copy = e2b_strdup0(version && *version ? version : NULL);
  if (version && *version && !copy) return -1;
  free(sbx->envd_version);
  sbx->envd_version = copy;
  return 0;
}

const char *e2b_sbx_envd_version(const e2b_sbx *sbx) { return sbx ? sbx->envd_version : NULL; }

int e2b_envd_below(const e2b_sbx *sbx, const char *need) {
  long have[3], want[3];
  if (!sbx || parse(sbx->envd_version, have) != 0 || parse(need, want) != 0) return 0;
  for (int i = 0; i < 3; i++)
    if (have[i] != want[i]) return have[i] < want[i];
  return 0;
}

int e2b_envd_need(const e2b_sbx *sbx, const char *op, const char *feature, const char *need,
                  e2b_error *err) {
  if (!e2b_envd_below(sbx, need)) return 0;
  e2b_err_set(err, E2B_ERR_UNSUPPORTED, op, "%s needs envd %s or later; this sandbox runs envd %s",
              feature, need, sbx->envd_version);
  return -1;
}
