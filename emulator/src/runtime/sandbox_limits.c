/* sandbox_limits.c — a sandbox's memory and process-count limits, enforced by the
 * kernel (cgroup v1). Each sandbox gets <mount>/<our cgroup>/e2b-local/<id>
 * in the memory hierarchy and .../e2b-local/server-<our pid>/<id> in the pids
 * one: nested under the server's own cgroup, so a limit an operator put on
 * the server still covers its sandboxes. The server-<pid> level holds all of
 * this server's sandboxes to one process budget below the host's task limit,
 * so that sandboxes together (each within its own cap) can never take the
 * last tasks from the host and the server: a thread the server needs to
 * serve a request can always be made. */
#define _GNU_SOURCE
#include "sandbox_limits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

static char *g_mem_root, *g_pids_root; /* .../e2b-local(/server-<pid>), or NULL */
static long g_pids_total;              /* the budget written, 0 when none could be */

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
  char *dir = xasprintf("%s/server-%ld", parent, (long)getpid());
  free(parent);
  char value[32];
  snprintf(value, sizeof value, "%ld", total);
  if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || write_value(dir, "pids.max", value) != 0) {
    log_msg("WARNING: cannot hold sandboxes to %ld processes in all (%s): they share this host's",
            total, strerror(errno));
    rmdir(dir);
    free(dir);
    return NULL;
  }
  g_pids_total = total;
  return dir;
}

void limits_init(long pids_total) {
  g_mem_root = find_root("memory", "memory.limit_in_bytes");
  if (pids_total <= 0) pids_total = limits_host_tasks() / 4 * 3;
  g_pids_root = budget_root(find_root("pids", "pids.max"), pids_total);
  if (!g_mem_root || !g_pids_root)
    log_msg("WARNING: sandbox limits NOT enforced for%s%s (no writable cgroup v1 controller): "
            "a sandbox can use all of this host's %s",
            g_mem_root ? "" : " memory", g_pids_root ? "" : " processes",
            g_mem_root ? "processes" : g_pids_root ? "memory" : "memory and processes");
}


/* mkdir + limit values; NULL when any step fails (the cgroup is removed). */
static char *make_one(const char *root, const char *id, const char *const kv[][2], int n) {
  if (!root) return NULL;
  char *dir = xasprintf("%s/%s", root, id);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    free(dir);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    if (kv[i][1][0] == '\0') continue;
    if (write_value(dir, kv[i][0], kv[i][1]) != 0 && i == 0) {
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
  snprintf(mem, sizeof mem, "%llu", (unsigned long long)mem_bytes);
  snprintf(pids, sizeof pids, "%d", pids_max);
  /* with swap accounting, memory+swap gets the same bound (no swapping past it) */
  char *sw = g_mem_root ? xasprintf("%s/memory.memsw.limit_in_bytes", g_mem_root) : NULL;
  if (sw && access(sw, F_OK) == 0) snprintf(memsw, sizeof memsw, "%s", mem);
  free(sw);
  const char *const mkv[][2] = {{"memory.limit_in_bytes", mem}, {"memory.memsw.limit_in_bytes", memsw}};
  const char *const pkv[][2] = {{"pids.max", pids}};
  l->mem = make_one(g_mem_root, id, mkv, 2);
  l->pids = make_one(g_pids_root, id, pkv, 1);
}

void limits_procs(const limits *l, char *out[3]) {
  int n = 0;
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
  remove_dir(&l->mem);
  remove_dir(&l->pids);
}

void limits_shutdown(void) {
  if (g_pids_root) rmdir(g_pids_root); /* every sandbox's own is gone by now */
  free(g_pids_root);
  free(g_mem_root);
  g_pids_root = g_mem_root = NULL;
  g_pids_total = 0;
}

json_t *limits_report(void) {
  return json_pack("{s:s, s:s, s:I, s:s}", "memory", g_mem_root ? "cgroup-v1" : "unavailable", "pids",
                   g_pids_root ? "cgroup-v1" : "unavailable", "pids_total", (json_int_t)g_pids_total,
                   "disk", "watched");
}
