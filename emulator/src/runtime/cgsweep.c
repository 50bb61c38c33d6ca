/* cgsweep.c — empties a sandbox's cgroups after its kill, and a gone
 * server's cgroup levels before a new server makes its own. The kill itself
 * signals the processes the runtime lists (the cgroup's own cgroup.procs),
 * which does not show a child cgroup's: before the syscall filter, sandbox
 * root could make one, move a process there and freeze it, and it outlived
 * the sandbox. This walks the whole subtree instead. */
#define _GNU_SOURCE
#include "cgsweep.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define MAX_DEPTH 32 /* deeper cgroups are not walked (nor made: the filter refuses mounts) */

/* Calls fn on each child cgroup directory of dir. */
static void each_child(const char *dir, int depth, void (*fn)(const char *, int, void *), void *arg) {
  DIR *d = depth < MAX_DEPTH ? opendir(dir) : NULL;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    char *sub = xasprintf("%s/%s", dir, de->d_name);
    fn(sub, depth + 1, arg);
    free(sub);
  }
  if (d) closedir(d);
}

static void write_in(const char *dir, const char *name, const char *value) {
  char *p = xasprintf("%s/%s", dir, name);
  if (access(p, W_OK) == 0) write_file(p, value, strlen(value), 0644);
  free(p);
}

/* SIGKILLs the cgroup's own processes, thaws it (frozen tasks only die
 * once thawed) and returns how many there were. */
static int kill_thaw(const char *dir) {
  char *p = xasprintf("%s/cgroup.procs", dir);
  FILE *f = fopen(p, "re");
  free(p);
  int pid, n = 0;
  while (f && fscanf(f, "%d", &pid) == 1) {
    if (pid > 0) kill(pid, SIGKILL);
    n++;
  }
  if (f) fclose(f);
  write_in(dir, "freezer.state", "THAWED");
  write_in(dir, "cgroup.freeze", "0");
  return n;
}

static void sweep_below(const char *dir, int depth, void *found) {
  each_child(dir, depth, sweep_below, found);
  *(int *)found += kill_thaw(dir);
}

static void remove_below(const char *dir, int depth, void *count) {
  each_child(dir, depth, remove_below, count);
  for (int i = 0; i < 100 && rmdir(dir) != 0 && errno == EBUSY; i++) usleep(10000);
  ++*(int *)count;
}

cg_swept cg_sweep(const char *dir) {
  cg_swept r = {0};
  for (int round = 0; round < 100; round++) {
    int hidden = 0;
    each_child(dir, 0, sweep_below, &hidden);
    int own = kill_thaw(dir);
    if (round == 0) {
      r.left = own;
      r.hidden = hidden;
    }
    r.stuck = own + hidden;
    if (!r.stuck) break;
    usleep(10000);
  }
  each_child(dir, 0, remove_below, &r.below);
  return r;
}

/* Whether pid is a zombie: a SIGKILLed server nobody reaped yet. */
static int zombie(long pid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "re");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = '\0';
  const char *paren = strrchr(buf, ')'); /* the name may hold anything: the state follows its last ')' */
  return paren && paren[1] == ' ' && paren[2] == 'Z';
}

/* A level named server-<pid> whose pid no longer runs (gone, or a zombie)
 * was a server's that ended; a live pid's is left alone, whoever it is. */
static int gone_server(const char *name) {
  long pid;
  char extra;
  if (sscanf(name, "server-%ld%c", &pid, &extra) != 1 || pid <= 0 || pid == (long)getpid()) return 0;
  return (kill((pid_t)pid, 0) != 0 && errno == ESRCH) || zombie(pid);
}

char *cg_server_level(const char *parent) {
  DIR *d = opendir(parent);
  for (struct dirent *de; d && (de = readdir(d));) {
    if (de->d_type != DT_DIR || !gone_server(de->d_name)) continue;
    char *old = xasprintf("%s/%s", parent, de->d_name);
    cg_sweep(old);
    rmdir(old);
    free(old);
  }
  if (d) closedir(d);
  char *dir = xasprintf("%s/server-%ld", parent, (long)getpid());
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    free(dir);
    return NULL;
  }
  return dir;
}
