/* sandbox_limits.c — a sandbox's memory and process-count limits, enforced by the
 * kernel: cgroup v2 where its memory and pids controllers can be delegated
 * (a systemd host's only hierarchy), else cgroup v1.
 *
 * v2: <our cgroup>/e2b-local/server-<our pid>/<id>, one directory holding
 * both limits (and cgroup.freeze, which pauses the sandbox). cgroup v2 lets
 * only a level without processes of its own delegate, so when our own
 * cgroup holds processes (a login session's scope) the tree goes under the
 * nearest ancestor that can, and the log says so.
 * v1: <mount>/<our cgroup>/e2b-local/<id> in the memory hierarchy and
 * .../e2b-local/server-<our pid>/<id> in the pids one.
 *
 * Nested under the server's own cgroup, a limit an operator put on the
 * server still covers its sandboxes. The server-<pid> level holds all of
 * this server's sandboxes to one process budget below the host's task limit,
 * so that sandboxes together (each within its own cap) can never take the
 * last tasks from the host and the server: a thread the server needs to
 * serve a request can always be made. */
#define _GNU_SOURCE
#include "sandbox_limits.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup2.h"
#include "cgsweep.h"
#include "log.h"
#include "util.h"

static char *g_mem_root, *g_pids_root; /* v1: .../e2b-local/server-<pid>, or NULL */
static char *g_v2_root;                /* v2: .../e2b-local/server-<pid>, or NULL */
static long g_pids_total;              /* the budget written, 0 when none could be */

#define V2_CONTROLLERS "memory pids"

/* Our own path in the hierarchy of one controller (from /proc/self/cgroup). */
static char *own_path(const char *controller) {
  FILE *f = fopen("/proc/self/cgroup", "re");
  if (!f) return NULL;
  char line[1024], *found = NULL;
  while (!found && fgets(line, sizeof line, f)) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = '\0';
    line[strcspn(line, "\n")] = '\0';
    c2[1 + strcspn(c2 + 1, "\n")] = '\0';
    for (char *save = NULL, *tok = strtok_r(c1 + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
      if (strcmp(tok, controller) == 0) found = xstrdup(c2 + 1);
  }
  fclose(f);
  return found;
}

static char *find_root(const char *controller, const char *probe) {
  char *mount = xasprintf("/sys/fs/cgroup/%s", controller);
  char *own = own_path(controller);
  char *root = NULL;
  if (own) {
    char *base = xasprintf("%s%s", mount, strcmp(own, "/") == 0 ? "" : own);
    char *file = xasprintf("%s/%s", base, probe);
    char *dir = xasprintf("%s/e2b-local", base);
    /* the probe file exists in child cgroups only: check the parent's kind */
    if ((access(file, F_OK) == 0 || strcmp(own, "/") == 0) && mkdir_p(dir, 0755) == 0 &&
        access(dir, W_OK) == 0)
      root = dir;
    else
      free(dir);
    free(base);
    free(file);
  }
  free(own);
  free(mount);
  return root;
}

static int write_value(const char *dir, const char *name, const char *value) {
  char *p = xasprintf("%s/%s", dir, name);
  int rc = write_file(p, value, strlen(value), 0644);
  free(p);
  return rc;
}

static long read_long(const char *path) {
  FILE *f = fopen(path, "re");
  long v = 0;
  if (f && fscanf(f, "%ld", &v) != 1) v = 0;
  if (f) fclose(f);
  return v;
}

long limits_host_tasks(void) {
  long pid_max = read_long("/proc/sys/kernel/pid_max");
  long threads = read_long("/proc/sys/kernel/threads-max");
  return threads > 0 && (pid_max <= 0 || threads < pid_max) ? threads : pid_max;
}

/* This server's level in the pids hierarchy, holding the budget. */
static char *budget_root(char *parent, long total) {
  if (!parent) return NULL;
  char *dir = cg_server_level(parent);
  free(parent);
  char value[32];
  snprintf(value, sizeof value, "%ld", total);
  if (!dir || write_value(dir, "pids.max", value) != 0) {
    log_msg("WARNING: cannot hold sandboxes to %ld processes in all (%s): they share this host's",
            total, strerror(errno));
    if (dir) rmdir(dir);
    free(dir);
    return NULL;
  }
  g_pids_total = total;
  return dir;
}

/* This server's level in the memory hierarchy (v1), as in the pids one. */
static char *memory_root(char *parent) {
  char *dir = parent ? cg_server_level(parent) : NULL;
  free(parent);
  return dir;
}

/* Moves this process out of `own` into own/e2b-local/self-<pid>, so that
 * own (if nothing else is in it) may delegate; removes the empty self-*
 * cgroups of servers gone before. */
static void v2_step_aside(const char *own) {
  char *top = xasprintf("%s/e2b-local", own), *self = xasprintf("%s/self-%ld", top, (long)getpid());
  DIR *d = opendir(top);
  for (struct dirent *de; d && (de = readdir(d));) {
    if (strncmp(de->d_name, "self-", 5) != 0) continue;
    char *old = xasprintf("%s/%s", top, de->d_name);
    rmdir(old); /* fails while a live server is in it: that one stays */
    free(old);
  }
  if (d) closedir(d);
  if ((mkdir(top, 0755) == 0 || errno == EEXIST) && (mkdir(self, 0755) == 0 || errno == EEXIST))
    write_value(self, "cgroup.procs", "0");
  free(top);
  free(self);
}

/* Whether we are the only process in the cgroup at dir. */
static int only_us_in(const char *dir) {
  char *p = xasprintf("%s/cgroup.procs", dir);
  FILE *f = fopen(p, "re");
  free(p);
  long pid, n = 0, others = 0;
  while (f && fscanf(f, "%ld", &pid) == 1) {
    n++;
    others += pid != (long)getpid();
  }
  if (f) fclose(f);
  return n > 0 && others == 0;
}

/* Makes dir/e2b-local delegate memory and pids; its path, or NULL with
 * *busy set when dir itself holds processes (cgroup v2's EBUSY). */
static char *v2_tree_at(const char *dir, int *busy) {
  const char *name = strrchr(dir, '/');
  /* another server's e2b-local/ (we run below it): share it */
  char *top = name && strcmp(name, "/e2b-local") == 0 ? xstrdup(dir) : xasprintf("%s/e2b-local", dir);
  int rc = cg2_delegate(dir, V2_CONTROLLERS);
  if (busy) *busy = rc == -EBUSY;
  if (rc == 0 && (mkdir(top, 0755) == 0 || errno == EEXIST) && cg2_delegate(top, V2_CONTROLLERS) == 0)
    return top;
  free(top);
  return NULL;
}

/* The e2b-local/ level that sandboxes' cgroups go under: below our own
 * cgroup when it can delegate once we stepped aside from it, else below the
 * nearest ancestor that can (the log says so); NULL if none can. */
static char *v2_base(void) {
  char *mount = NULL, *dir = cg2_own(&mount);
  if (!dir) return NULL;
  int busy = 0;
  char *own = xstrdup(dir), *base = v2_tree_at(dir, &busy);
  if (!base && busy && only_us_in(own)) {
    v2_step_aside(own);
    base = v2_tree_at(dir, NULL);
  }
  for (char *slash; !base && strcmp(dir, mount) != 0 && (slash = strrchr(dir, '/')) && slash != dir;) {
    *slash = '\0';
    base = v2_tree_at(dir, NULL);
  }
  if (base && strcmp(dir, own) != 0)
    log_msg("sandbox cgroups go under %s: our own cgroup (%s) holds other processes, and cgroup v2 "
            "lets only a level without processes delegate", dir, own);
  free(dir);
  free(own);
  free(mount);
  return base;
}

/* This server's level of the v2 tree: the process budget, and both
 * controllers handed on to each sandbox's directory. */
static char *v2_server(char *base, long total) {
  if (!base) return NULL;
  char *dir = cg_server_level(base);
  free(base);
  char value[32];
  snprintf(value, sizeof value, "%ld", total);
  if (!dir || write_value(dir, "pids.max", value) != 0 || cg2_delegate(dir, V2_CONTROLLERS) != 0) {
    if (dir) rmdir(dir);
    free(dir);
    return NULL;
  }
  g_pids_total = total;
  return dir;
}

void limits_init(long pids_total) {
  if (pids_total <= 0) pids_total = limits_host_tasks() / 4 * 3;
  g_v2_root = v2_server(v2_base(), pids_total);
  if (g_v2_root) return;
  g_mem_root = memory_root(find_root("memory", "memory.limit_in_bytes"));
  g_pids_root = budget_root(find_root("pids", "pids.max"), pids_total);
  if (!g_mem_root || !g_pids_root)
    log_msg("WARNING: sandbox limits NOT enforced for%s%s (no cgroup v2 with memory and pids to "
            "delegate, no writable cgroup v1 controller): a sandbox can use all of this host's %s",
            g_mem_root ? "" : " memory", g_pids_root ? "" : " processes",
            g_mem_root ? "processes" : g_pids_root ? "memory" : "memory and processes");
}

int limits_version(void) { return g_v2_root ? 2 : g_mem_root || g_pids_root ? 1 : 0; }

/* mkdir + limit values; NULL when one of the first `required` cannot be
 * written (the cgroup is removed): a limit that would not hold. */
static char *make_one(const char *root, const char *id, const char *const kv[][2], int n, int required) {
  if (!root) return NULL;
  char *dir = xasprintf("%s/%s", root, id);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    free(dir);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    if (kv[i][1][0] == '\0') continue;
    if (write_value(dir, kv[i][0], kv[i][1]) != 0 && i < required) {
      log_msg("sandbox %s: cannot set %s: %s", id, kv[i][0], strerror(errno));
      rmdir(dir);
      free(dir);
      return NULL;
    }
  }
  return dir;
}

void limits_create(limits *l, const char *id, uint64_t mem_bytes, int pids_max) {
  char mem[32], pids[32], memsw[32] = "";
  /* 0 means no limit: "max" (v1's memory takes -1) */
  if (mem_bytes) snprintf(mem, sizeof mem, "%llu", (unsigned long long)mem_bytes);
  else snprintf(mem, sizeof mem, "%s", g_v2_root ? "max" : "-1");
  if (pids_max > 0) snprintf(pids, sizeof pids, "%d", pids_max);
  else snprintf(pids, sizeof pids, "max");
  memset(l, 0, sizeof *l);
  if (g_v2_root) {
    /* memory.swap.max is swap alone: 0 keeps the sandbox from swapping past
     * its limit, as v1's memory+swap bound below does */
    const char *const kv[][2] = {{"memory.max", mem}, {"pids.max", pids}, {"memory.swap.max", "0"}};
    l->v2 = make_one(g_v2_root, id, kv, 3, 2);
    return;
  }
  /* with swap accounting, memory+swap gets the same bound (no swapping past it) */
  char *sw = g_mem_root ? xasprintf("%s/memory.memsw.limit_in_bytes", g_mem_root) : NULL;
  if (sw && access(sw, F_OK) == 0) snprintf(memsw, sizeof memsw, "%s", mem);
  free(sw);
  const char *const mkv[][2] = {{"memory.limit_in_bytes", mem}, {"memory.memsw.limit_in_bytes", memsw}};
  const char *const pkv[][2] = {{"pids.max", pids}};
  l->mem = make_one(g_mem_root, id, mkv, 2, 1);
  l->pids = make_one(g_pids_root, id, pkv, 1, 1);
}

void limits_procs(const limits *l, char *out[3]) {
  int n = 0;
  if (l->v2) out[n++] = xasprintf("%s/cgroup.procs", l->v2);
  if (l->mem) out[n++] = xasprintf("%s/cgroup.procs", l->mem);
  if (l->pids) out[n++] = xasprintf("%s/cgroup.procs", l->pids);
  while (n < 3) out[n++] = NULL;
}

static void remove_dir(char **dir) {
  if (!*dir) return;
  /* the last task may still be on its way out: EBUSY for a moment */
  for (int i = 0; i < 100 && rmdir(*dir) != 0 && errno == EBUSY; i++) usleep(10000);
  free(*dir);
  *dir = NULL;
}

void limits_destroy(limits *l) {
  remove_dir(&l->v2);
  remove_dir(&l->mem);
  remove_dir(&l->pids);
}

void limits_shutdown(void) {
  if (g_pids_root) rmdir(g_pids_root); /* every sandbox's own is gone by now */
  if (g_mem_root) rmdir(g_mem_root);
  if (g_v2_root) rmdir(g_v2_root);
  free(g_pids_root);
  free(g_mem_root);
  free(g_v2_root);
  g_pids_root = g_mem_root = g_v2_root = NULL;
  g_pids_total = 0;
}

json_t *limits_report(void) {
  const char *mem = g_v2_root ? "cgroup-v2" : g_mem_root ? "cgroup-v1" : "unavailable";
  const char *pids = g_v2_root ? "cgroup-v2" : g_pids_root ? "cgroup-v1" : "unavailable";
  return json_pack("{s:s, s:s, s:I, s:s}", "memory", mem, "pids", pids, "pids_total",
                   (json_int_t)g_pids_total, "disk", "watched");
}
