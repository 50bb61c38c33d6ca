/* cgroup2.c — cgroup v2 plumbing for sandbox limits: finding our own
 * cgroup, delegating controllers down, freezing and killing a cgroup. */
#define _GNU_SOURCE
#include "cgroup2.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* Field k (0-based, space-separated) of a line, copied into out. */
static int field(const char *line, int k, char *out, size_t cap) {
  const char *p = line;
  for (int i = 0; i < k; i++) {
    p = strchr(p, ' ');
    if (!p) return -1;
    p++;
  }
  size_t n = strcspn(p, " \n");
  if (n == 0 || n >= cap) return -1;
  memcpy(out, p, n);
  out[n] = '\0';
  return 0;
}

/* The "0::/path" line of /proc/self/cgroup: our path in the v2 hierarchy. */
static int own_path(const char *self_cgroup, char *out, size_t cap) {
  for (const char *l = self_cgroup; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, "0::", 3) != 0) continue;
    size_t n = strcspn(l + 3, "\n");
    if (n == 0 || n >= cap) return -1;
    memcpy(out, l + 3, n);
    out[n] = '\0';
    return 0;
  }
  return -1;
}

char *cg2_own_dir(const char *mountinfo, const char *self_cgroup, char **mount) {
  char own[1024], root[1024], point[1024], type[64];
  if (own_path(self_cgroup, own, sizeof own) != 0) return NULL;
  for (const char *l = mountinfo; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *dash = strstr(l, " - ");
    const char *end = strchr(l, '\n');
    if (!dash || (end && dash > end) || field(dash + 3, 0, type, sizeof type) != 0) continue;
    if (strcmp(type, "cgroup2") != 0) continue;
    if (field(l, 3, root, sizeof root) != 0 || field(l, 4, point, sizeof point) != 0) continue;
    size_t rn = strcmp(root, "/") == 0 ? 0 : strlen(root);
    if (rn && (strncmp(own, root, rn) != 0 || (own[rn] != '/' && own[rn] != '\0'))) continue;
    const char *rest = own + rn;
    if (mount) *mount = xstrdup(point);
    return xasprintf("%s%s", point, strcmp(rest, "/") == 0 ? "" : rest);
  }
  return NULL;
}

int cg2_has_controllers(const char *list, const char *want) {
  char *w = xstrdup(want);
  int all = 1;
  for (char *save = NULL, *tok = strtok_r(w, " ", &save); tok && all; tok = strtok_r(NULL, " ", &save)) {
    size_t n = strlen(tok);
    int found = 0;
    for (const char *p = list; p && *p && !found; p += strcspn(p, " \n"), p += strspn(p, " \n"))
      found = strncmp(p, tok, n) == 0 && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0');
    all = found;
  }
  free(w);
  return all;
}

static char *slurp(const char *path) {
  sbuf b = {0};
  if (sbuf_append_file(&b, path) != 0) {
    sbuf_free(&b);
    return NULL;
  }
  sbuf_append(&b, "", 1);
  return b.data;
}

char *cg2_own(char **mount) {
  char *info = slurp("/proc/self/mountinfo"), *self = slurp("/proc/self/cgroup");
  char *dir = info && self ? cg2_own_dir(info, self, mount) : NULL;
  free(info);
  free(self);
  return dir;
}

static char *read_in(const char *dir, const char *name) {
  char *p = xasprintf("%s/%s", dir, name);
  char *s = slurp(p);
  free(p);
  return s;
}

static int write_in(const char *dir, const char *name, const char *value) {
  char *p = xasprintf("%s/%s", dir, name);
  int fd = open(p, O_WRONLY | O_CLOEXEC);
  free(p);
  if (fd < 0) return -errno;
  int rc = write_all(fd, value, strlen(value)) == 0 ? 0 : -errno;
  close(fd);
  return rc;
}

int cg2_delegate(const char *dir, const char *controllers) {
  char *have = read_in(dir, "cgroup.controllers");
  char *on = read_in(dir, "cgroup.subtree_control");
  int rc = 0;
  if (!have || !cg2_has_controllers(have, controllers)) rc = -EOPNOTSUPP;
  else if (!on || !cg2_has_controllers(on, controllers)) {
    char *words = xstrdup(controllers), *req = xstrdup("");
    for (char *save = NULL, *t = strtok_r(words, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
      char *next = xasprintf("%s%s+%s", req, *req ? " " : "", t);
      free(req);
      req = next;
    }
    rc = write_in(dir, "cgroup.subtree_control", req);
    free(words);
    free(req);
  }
  free(have);
  free(on);
  return rc;
}

int cg2_freeze(const char *dir, int frozen) {
  int rc = write_in(dir, "cgroup.freeze", frozen ? "1" : "0");
  const char *want = frozen ? "frozen 1" : "frozen 0";
  for (int i = 0; rc == 0 && i < 500; i++) {
    char *ev = read_in(dir, "cgroup.events");
    int done = ev && strstr(ev, want) != NULL;
    free(ev);
    if (done) break;
    usleep(2000); /* tasks are still on their way to the fridge */
  }
  return rc;
}

int cg2_kill(const char *dir) { return write_in(dir, "cgroup.kill", "1"); }
