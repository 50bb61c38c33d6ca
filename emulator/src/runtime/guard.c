/* guard.c — no sandbox outlives e2b-local.
 *
 * A dead server's sandboxes die with it (the death signal its forks get,
 * bwrap's --die-with-parent, the agent's closed socket), all but two kinds:
 * a frozen (memory-paused) sandbox, whose SIGKILL waits for a thaw nobody
 * will do, and a bwrap whose launcher died between its clone and letting
 * its child go on, which then waits forever (bubblewrap issue 633). Both
 * are orphans (the sandbox's first process was reparented to init) in the
 * sandbox's cgroups, and such a bwrap names the state directory on its
 * command line. The guard, a process each server starts and its death
 * leaves behind (its pipe's EOF), kills them and thaws their cgroups; each
 * start sweeps once more, for a guard that died too. Only orphans are
 * touched: the sandboxes of a live server (another's too) never are. */
#define _GNU_SOURCE
#include "guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#define PROC_BUF (64 * 1024) /* a bwrap command line is about 6 KiB */
#define SWEEP_ROUNDS 40      /* every 50 ms for 2 s: a launcher's orphans appear as it dies */
#define SWEEP_GAP_US 50000

typedef struct member {
  pid_t pid, ppid;
  char id[64];       /* its sandbox: the last part of its cgroup path, or from its state path */
  char freezer[256]; /* its cgroup v1 freezer path, or "" */
  char unified[256]; /* its cgroup v2 path, or "" */
  int ours;          /* it names this server's state directory */
} member;

static int g_init_is_server; /* pid 1 is an e2b-local: its children are no orphans */

/* Up to cap-1 bytes of a small /proc file, NUL-terminated: the length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n >= 0) buf[n] = '\0';
  return n;
}

static void copy_id(member *m, const char *start, size_t len) {
  if (len == 0 || len >= sizeof m->id) return;
  memcpy(m->id, start, len);
  m->id[len] = '\0';
}

/* From /proc/PID/cgroup: the sandbox of an e2b-local cgroup (v1 or v2: its
 * last path component), and the paths a thaw writes to. */
static void read_cgroups(char *text, member *m) {
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || !strstr(c2 + 1, "/e2b-local/")) continue;
    const char *path = c2 + 1, *last = strrchr(path, '/') + 1;
    /* a server's own cgroup v2 leaf (sandbox_limits.c), with what it runs */
    if (strncmp(last, "self-", 5) == 0) continue;
    copy_id(m, last, strlen(last));
    *c2 = '\0';
    if (c1[1] == '\0')
      snprintf(m->unified, sizeof m->unified, "%s", path);
    else if (strstr(c1 + 1, "freezer"))
      snprintf(m->freezer, sizeof m->freezer, "%s", path);
  }
}

/* A bwrap or an agent whose command line names "<state>/sandboxes/<id>/"
 * (bwrap's binds, an unisolated agent's maps) is of that sandbox. */
static void read_cmdline(char *cmd, size_t n, const char *sandboxes, member *m) {
  const char *base = strrchr(cmd, '/');
  size_t first = strlen(cmd);
  int sandbox_exe = strcmp(base ? base + 1 : cmd, "bwrap") == 0 ||
                    (first + 1 < n && strcmp(cmd + first + 1, "agent") == 0);
  if (!sandbox_exe) return;
  for (size_t i = 0; i < n; i++)
    if (cmd[i] == '\0') cmd[i] = ' ';
  const char *at = strstr(cmd, sandboxes);
  if (!at) return;
  at += strlen(sandboxes);
  copy_id(m, at, strcspn(at, "/ "));
  m->ours = m->id[0] != '\0';
}

/* Whether pid is a live process of some sandbox; fills m. */
static int probe(member *m, const char *sandboxes, char *buf) {
  char path[64], st[512], state;
  int ppid;
  const char *f = m->pid > 1 && m->pid != getpid() ? proc_stat_fields((int)m->pid, st, sizeof st) : NULL;
  if (!f || sscanf(f, "%c %d", &state, &ppid) != 2 || state == 'Z' || state == 'X') return 0;
  m->ppid = (pid_t)ppid;
  snprintf(path, sizeof path, "/proc/%d/cgroup", (int)m->pid);
  if (read_small(path, buf, PROC_BUF) > 0) read_cgroups(buf, m);
  /* Only a bwrap's or an agent's: reading a command line may wait on the
   * process's memory map, and there is no need to for the others. */
  snprintf(path, sizeof path, "/proc/%d/comm", (int)m->pid);
  int named = sandboxes && read_small(path, st, sizeof st) > 0 &&
              (strcmp(st, "bwrap\n") == 0 || strcmp(st, "e2b-local\n") == 0);
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)m->pid);
  ssize_t n = named ? read_small(path, buf, PROC_BUF) : -1;
  if (n > 0) read_cmdline(buf, (size_t)n, sandboxes, m);
  return m->id[0] != '\0';
}

static int by_id_pid(const void *a, const void *b) {
  const member *x = a, *y = b;
  int c = strcmp(x->id, y->id);
  return c ? c : (x->pid > y->pid) - (x->pid < y->pid);
}

/* Every live process of some sandbox, sorted by sandbox, then pid. */
static size_t collect(const char *sandboxes, member **out) {
  size_t n = 0, cap = 16;
  member *v = xmalloc(cap * sizeof *v);
  char *buf = xmalloc(PROC_BUF);
  DIR *d = opendir("/proc");
  struct dirent *de;
  while (d && (de = readdir(d))) {
    member m = {.pid = (pid_t)atoi(de->d_name)};
    if (!probe(&m, sandboxes, buf)) continue;
    if (n == cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
    v[n++] = m;
  }
  if (d) closedir(d);
  free(buf);
  qsort(v, n, sizeof *v, by_id_pid);
  *out = v;
  return n;
}

/* Whether the group's every process is an orphan (reparented to init, or
 * its parent gone) or the child of one of the group: its server is gone. */
static int orphaned(const member *group, size_t n) {
  for (size_t i = 0; i < n; i++) {
    member key = group[i];
    key.pid = group[i].ppid;
    if (bsearch(&key, group, n, sizeof *group, by_id_pid)) continue;
    pid_t pp = group[i].ppid;
    if (pp <= 0 || (pp == 1 && g_init_is_server)) return 0;
    if (pp != 1 && (kill(pp, 0) == 0 || errno != ESRCH)) return 0;
  }
  return 1;
}

/* A cgroup file written as is (never created: a missing one stays so). */
static void poke(const char *path, const char *value) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  if (write(fd, value, strlen(value)) < 0) {
    /* not frozen there, or not ours to thaw: the kill stands either way */
  }
  close(fd);
}

/* Frozen tasks only die once thawed. */
static void thaw(const member *m) {
  char path[512];
  if (m->freezer[0]) {
    snprintf(path, sizeof path, "/sys/fs/cgroup/freezer%s/freezer.state", m->freezer);
    poke(path, "THAWED");
  }
  static const char *const v2[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
  for (size_t i = 0; m->unified[0] && i < sizeof v2 / sizeof *v2; i++) {
    snprintf(path, sizeof path, "%s%s/cgroup.freeze", v2[i], m->unified);
    poke(path, "0");
  }
}

/* Kills every process of orphaned sandboxes, then thaws them: the count
 * killed. *ours: processes naming our state directory that were spared. */
static int sweep(const char *sandboxes, int *ours) {
  member *v;
  size_t n = collect(sandboxes, &v);
  int killed = 0;
  *ours = 0;
  for (size_t at = 0, len; at < n; at += len) {
    for (len = 1; at + len < n && strcmp(v[at + len].id, v[at].id) == 0; len++) {
    }
    int dead = orphaned(v + at, len);
    for (size_t i = at; i < at + len; i++) {
      if (dead && kill(v[i].pid, SIGKILL) == 0) killed++;
      if (!dead) *ours += v[i].ours;
    }
    if (dead) thaw(&v[at]);
  }
  free(v);
  return killed;
}

static int init_is_server(void) {
  char comm[64];
  return read_small("/proc/1/comm", comm, sizeof comm) > 0 && strcmp(comm, "e2b-local\n") == 0;
}

/* The child's side of guard_start: only async-signal-safe calls (the
 * server has threads). The guard keeps the log (stderr), nothing else. */
static void exec_guard(const char *self, int fd) {
  int nul = open("/dev/null", O_RDWR), up = fcntl(fd, F_DUPFD, 10);
  if (nul < 0 || up < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(up, 3) < 0) _exit(125);
  close_range(4, ~0u, 0);
  setsid(); /* a ^C on the server's terminal is the server's to handle */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  char *argv[] = {(char *)self, "guard", "--fd", "3", NULL};
  execv(self, argv);
  _exit(127);
}

void guard_start(const char *state_dir) {
  g_init_is_server = init_is_server();
  char *sandboxes = xasprintf("%s/sandboxes/", state_dir);
  int ours, killed = sweep(sandboxes, &ours);
  if (killed) log_msg("killed %d process(es) that sandboxes of a dead server left", killed);
  free(sandboxes);
  char *self = realpath("/proc/self/exe", NULL);
  int p[2];
  if (!self || pipe2(p, O_CLOEXEC) != 0) {
    log_msg("WARNING: no guard: a SIGKILL of this server may leave paused sandboxes behind");
    free(self);
    return;
  }
  pid_t pid = fork();
  if (pid == 0) exec_guard(self, p[0]);
  close(p[0]);
  free(self);
  char *line = xasprintf("%s\n", state_dir);
  if (pid < 0 || write_all(p[1], line, strlen(line)) != 0) {
    log_msg("WARNING: no guard: a SIGKILL of this server may leave paused sandboxes behind");
    close(p[1]);
  }
  /* Otherwise p[1] stays open until this process ends, however it ends. */
  free(line);
}

/* Reads fd to its EOF, keeping the first cap-1 bytes. */
static void read_to_eof(int fd, char *buf, size_t cap) {
  size_t n = 0;
  char tmp[512];
  for (;;) {
    ssize_t r = read(fd, tmp, sizeof tmp);
    if (r == 0 || (r < 0 && errno != EINTR)) break;
    size_t k = r > 0 && n < cap - 1 ? (size_t)r : 0;
    if (k > cap - 1 - n) k = cap - 1 - n;
    memcpy(buf + n, tmp, k);
    n += k;
  }
  buf[n] = '\0';
}

int guard_main(int argc, char **argv) {
  log_set_prefix("e2b-local guard");
  int fd = argc >= 4 && strcmp(argv[2], "--fd") == 0 ? atoi(argv[3]) : -1;
  if (fd < 0) return 2;
  static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
  for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++) signal(ignored[i], SIG_IGN);
  char state[PATH_MAX + 2];
  read_to_eof(fd, state, sizeof state);
  state[strcspn(state, "\n")] = '\0';
  g_init_is_server = init_is_server();
  char *sandboxes = state[0] ? xasprintf("%s/sandboxes/", state) : NULL;
  int total = 0;
  for (int round = 0; round < SWEEP_ROUNDS; round++) {
    int ours, killed = sweep(sandboxes, &ours);
    total += killed;
    if (!killed && !ours) break;
    usleep(SWEEP_GAP_US);
  }
  if (total) log_msg("killed %d process(es) that sandboxes of the server left", total);
  free(sandboxes);
  return 0;
}
