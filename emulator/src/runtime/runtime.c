/* runtime.c — bubblewrap command line, agent spawn, freeze/thaw and kill. */
#define _GNU_SOURCE
#include "runtime.h"
#include "diskuse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agentlog.h"
#include "cgroup2.h"
#include "cgsweep.h"
#include "codec.h"
#include "egress.h"
#include "ipc.h"
#include "log.h"
#include "syscall_filter.h"
#include "util.h"

#define FREEZER_ROOT "/sys/fs/cgroup/freezer/e2b-local"
#define AGENT_PATH "/run/e2b/envd"
#define MAX_ARGS 512
#define MAX_IDMAPS 32 /* paths a sandbox sees through its idmapping */
#define FILTER_FD 4 /* the child's descriptor bwrap reads the seccomp program from */
#define FILTER_FD_STR STR(FILTER_FD)
#define STR_(x) #x
#define STR(x) STR_(x)
#define EGRESS_PORT_STR STR(EGRESS_PORT)

static char *g_self;   /* this executable, bind-mounted as the agent */
static char *g_bwrap;  /* bubblewrap, or NULL without isolation */
/* e2b-local's CA in sandboxes (runtime_set_trust): host paths, sandbox paths */
static char *g_ca_file, *g_ca_dest, *g_bundle_file, *g_bundle_dest;
static int g_freezer;  /* pausing freezes a cgroup: 1 v1's freezer, 2 v2's cgroup.freeze */
static char *g_freezer_dir; /* v1: FREEZER_ROOT/server-<pid>, this server's level */
static void *g_filter; /* the sandboxes' seccomp program (syscall_filter.c), with bwrap */
static size_t g_filter_len;
/* E2B_LOCAL_SPAWN_HOLD_MS: how long a forked sandbox waits before its exec,
 * standing in for bubblewrap's own start-up (a spec kills the server then). */
static long g_spawn_hold_ms;
/* runtime_own_ids: each sandbox runs as host uids of its own; the state
 * directory (absolute) its files are bound from, through its idmapping */
static int g_own_ids;
static char *g_state_root;

/* Sandboxes are forked by one long-lived thread: PR_SET_PDEATHSIG (bwrap's
 * --die-with-parent) fires when the forking *thread* exits, and HTTP
 * connection threads come and go with their connections. */
typedef struct spawn_job {
  char **argv, **envp;
  char *procs[4];    /* cgroup.procs files to join, NULL-terminated */
  int sock;          /* becomes fd 3 of the child */
  int log;           /* becomes fd 1 and 2: a pipe the server reads (agentlog.c) */
  int filter;        /* becomes FILTER_FD (the seccomp program), or -1 */
  const sandbox_ids *ids; /* its own host uids, or NULL */
  const ids_path *idmaps; /* what it sees through its idmapping */
  int nidmaps;
  pid_t pid;
  int err, done;
} spawn_job;

static pthread_t g_spawner;
static pthread_mutex_t g_sp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_sp_cv = PTHREAD_COND_INITIALIZER;
static spawn_job *g_job;
static int g_sp_stop, g_sp_started;

/* A sandbox dies with the server from its fork on: bwrap's --die-with-parent
 * only takes effect once bwrap runs (after its exec and its clone), and a
 * server killed before then left it running, reparented to init. The
 * death signal is kept across the exec; a server gone before the prctl is
 * not our parent any more. Async-signal-safe calls only. */
static void die_with_server(pid_t server) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != server) _exit(125);
}

static void hold_before_exec(void) {
  struct timespec ts = {g_spawn_hold_ms / 1000, (g_spawn_hold_ms % 1000) * 1000000};
  while (g_spawn_hold_ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static pid_t fork_sandbox(const spawn_job *j) {
  pid_t server = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  /* Only async-signal-safe calls between fork and exec: we are multithreaded. */
  die_with_server(server);
  for (int i = 0; j->procs[i]; i++) {
    int fd = open(j->procs[i], O_WRONLY);
    if (fd >= 0) {
      if (write(fd, "0", 1) < 0) _exit(125);
      close(fd);
    }
  }
  /* The agent is the last process a memory limit may kill: it resets its
   * commands (agent.c). Lowering needs CAP_SYS_RESOURCE: best effort. */
  int oom = open("/proc/self/oom_score_adj", O_WRONLY);
  if (oom >= 0) {
    ssize_t w = write(oom, "-1000", 5);
    (void)w;
    close(oom);
  }
  /* Last as root: the sandbox's own uids. */
  if (j->ids) {
    if (ids_enter(j->ids, j->idmaps, j->nidmaps) != 0) _exit(125);
    die_with_server(server); /* a new uid cleared the death signal */
  }
  setsid(); /* a ^C on the server's terminal must not reach sandboxes */
  /* No host descriptor crosses but the socket: not the server's stdout or
   * stderr (its log), which root in the sandbox could read or truncate. */
  int sock = fcntl(j->sock, F_DUPFD, 10), log = fcntl(j->log, F_DUPFD, 10); /* out of 0..4's way */
  int filter = j->filter >= 0 ? fcntl(j->filter, F_DUPFD, 10) : -1;
  int nul = open("/dev/null", O_RDONLY);
  if (sock < 0 || log < 0 || nul < 0 || (j->filter >= 0 && filter < 0)) _exit(125);
  if (dup2(nul, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0 || dup2(sock, 3) < 0) _exit(125);
  if (filter >= 0 && dup2(filter, FILTER_FD) < 0) _exit(125);
  close_range(filter >= 0 ? FILTER_FD + 1 : FILTER_FD, ~0u, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  hold_before_exec();
  execve(j->argv[0], j->argv, j->envp);
  _exit(127);
}

static void *spawner_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_sp_mu);
  for (;;) {
    while (!g_job && !g_sp_stop) pthread_cond_wait(&g_sp_cv, &g_sp_mu);
    if (!g_job) break;
    spawn_job *j = g_job;
    pthread_mutex_unlock(&g_sp_mu);
    j->pid = fork_sandbox(j);
    j->err = j->pid < 0 ? errno : 0;
    pthread_mutex_lock(&g_sp_mu);
    j->done = 1;
    g_job = NULL;
    pthread_cond_broadcast(&g_sp_cv);
  }
  pthread_mutex_unlock(&g_sp_mu);
  return NULL;
}

static void run_job(spawn_job *j) {
  pthread_mutex_lock(&g_sp_mu);
  while (g_job) pthread_cond_wait(&g_sp_cv, &g_sp_mu);
  g_job = j;
  pthread_cond_broadcast(&g_sp_cv);
  while (!j->done) pthread_cond_wait(&g_sp_cv, &g_sp_mu);
  pthread_mutex_unlock(&g_sp_mu);
}

void runtime_shutdown(void) {
  if (!g_sp_started) return;
  pthread_mutex_lock(&g_sp_mu);
  g_sp_stop = 1;
  pthread_cond_broadcast(&g_sp_cv);
  pthread_mutex_unlock(&g_sp_mu);
  pthread_join(g_spawner, NULL);
  g_sp_started = 0;
  free(g_self);
  free(g_bwrap);
  g_self = g_bwrap = NULL;
  free(g_ca_file);
  free(g_ca_dest);
  free(g_bundle_file);
  free(g_bundle_dest);
  g_ca_file = g_ca_dest = g_bundle_file = g_bundle_dest = NULL;
  free(g_filter);
  g_filter = NULL;
  free(g_state_root);
  g_state_root = NULL;
  g_own_ids = 0;
  if (g_freezer_dir) rmdir(g_freezer_dir); /* every sandbox's own is gone by now */
  free(g_freezer_dir);
  g_freezer_dir = NULL;
  limits_shutdown();
}

static char *find_in_path(const char *name) {
  const char *dirs[] = {"/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", NULL};
  for (int i = 0; dirs[i]; i++) {
    char *p = xasprintf("%s/%s", dirs[i], name);
    if (access(p, X_OK) == 0) return p;
    free(p);
  }
  return NULL;
}

static int run_quiet(char *const argv[]) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
      dup2(nul, 0);
      dup2(nul, 1);
      dup2(nul, 2);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execv(argv[0], argv);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void runtime_init(int force_no_isolation, int force_no_freezer, long sandbox_pids) {
  const char *hold = getenv("E2B_LOCAL_SPAWN_HOLD_MS");
  g_spawn_hold_ms = hold ? strtol(hold, NULL, 10) : 0;
  if (g_spawn_hold_ms < 0 || g_spawn_hold_ms > 60000) g_spawn_hold_ms = 0;
  g_self = realpath("/proc/self/exe", NULL);
  if (!g_self) g_self = xstrdup("/proc/self/exe");
  if (!force_no_isolation) g_bwrap = find_in_path("bwrap");
  if (g_bwrap) {
    /* The same namespaces a sandbox gets; any refusal means no isolation. */
    char *argv[] = {g_bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc",
                    "--unshare-uts", "--unshare-net", "--as-pid-1", "--ro-bind", "/", "/",
                    "--proc", "/proc", "--dev", "/dev", "/bin/true", NULL};
    if (run_quiet(argv) != 0) {
      free(g_bwrap);
      g_bwrap = NULL;
    }
  }
  if (g_bwrap) g_filter = sandbox_filter_build(&g_filter_len); /* logs why not */
  if (!g_bwrap)
    log_msg("WARNING: running WITHOUT isolation (%s): sandboxes are plain child processes "
            "sharing this host's filesystem, pids and network",
            force_no_isolation ? "--no-isolation" : "bubblewrap missing or not permitted");
  limits_init(sandbox_pids);
  if (force_no_freezer) g_freezer = 0;
  else if (limits_version() == 2) g_freezer = 2;
  else if (mkdir_p(FREEZER_ROOT, 0755) == 0 && access(FREEZER_ROOT, W_OK) == 0)
    g_freezer = (g_freezer_dir = cg_server_level(FREEZER_ROOT)) != NULL;
  if (!g_freezer)
    log_msg("memory pause uses SIGSTOP/SIGCONT (%s)",
            force_no_freezer ? "--no-freezer" : "no cgroup v2 tree and no writable cgroup v1 freezer");
  if (pthread_create(&g_spawner, NULL, spawner_main, NULL) != 0) abort();
  g_sp_started = 1;
}

int runtime_isolated(void) { return g_bwrap != NULL; }

static char *traversal_anchor(const char *path);

/* Whether bubblewrap runs as a sandbox would with its own uids: the state
 * directory and the agent bound through the idmapping, the agent run. 0,
 * -errno when no block's namespace could be made, 1 when bubblewrap failed. */
static int probe_own_ids(const char *state) {
  sandbox_ids ids;
  int rc = ids_acquire(&ids);
  if (rc) return rc;
  char *anchor = traversal_anchor(state);
  /* the server's own binary is the agent: bound from where it lies, which
   * may be below a directory others may not enter (a checkout in /root) */
  char *self_dir = xstrdup(g_self);
  char *slash = strrchr(self_dir, '/');
  if (slash && slash != self_dir) *slash = '\0';
  char *self_anchor = traversal_anchor(self_dir);
  free(self_dir);
  ids_path paths[] = {{anchor, 1}, {"/usr", 0}, {self_anchor, 0}};
  char *argv[] = {g_bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                  "--unshare-net", "--as-pid-1", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                  "--tmpfs", "/run", "--bind", (char *)state, "/run/state", "--ro-bind", g_self,
                  AGENT_PATH, AGENT_PATH, "--version", NULL};
  pid_t pid = fork();
  if (pid == 0) {
    int nul = open("/dev/null", O_RDWR);
    if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0) _exit(125);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (ids_enter(&ids, paths, 3) != 0) _exit(125);
    execv(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  ids_release(&ids);
  free(anchor);
  free(self_anchor);
  if (pid < 0) return -errno;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int runtime_own_ids(const char *state_dir, uint32_t base) {
  if (!g_bwrap) return 0; /* no isolation: sandboxes are the server's own children */
  const char *why = NULL;
  char *root = realpath(state_dir, NULL);
  char buf[160];
  int rc = 0;
  if (geteuid() != 0) why = "the server is not root";
  else if (ids_configure(base) != 0) why = "no block of 65536 ids fits below 2^31 there";
  else if (!root) why = "the state directory has no absolute path";
  else if ((rc = probe_own_ids(root)) < 0)
    why = (snprintf(buf, sizeof buf, "no user namespace for a block of ids: %s", strerror(-rc)), buf);
  else if (rc > 0)
    why = "bubblewrap cannot run in one: no idmapped mount of the state directory's filesystem here?";
  if (why) {
    log_msg("WARNING: sandboxes share host uids (%s): one sandbox can exhaust a per-user kernel limit "
            "(inotify instances, processes…) for the others and for the server", why);
    free(root);
    return 0;
  }
  g_state_root = root;
  g_own_ids = 1;
  log_msg("each sandbox runs as host uids of its own: a block of %u from %u up (%u blocks)", IDS_BLOCK, ids_base(),
          ids_slots());
  return 1;
}

/* Without namespaces, commands running as the user reach their home through
 * the host path, so the state directories must be traversable (not listable). */
mode_t runtime_state_dir_mode(void) { return g_bwrap ? 0700 : 0711; }

static int write_text(const char *dir, const char *name, const char *text, mode_t mode) {
  char *p = xasprintf("%s/%s", dir, name);
  int rc = write_file(p, text, strlen(text), mode);
  free(p);
  return rc;
}

static int make_owned_dir(const char *dir, const char *name, mode_t mode, uid_t uid) {
  char *p = xasprintf("%s/%s", dir, name);
  int rc = mkdir(p, mode);
  if (rc == 0) {
    rc = chown(p, uid, uid);
    if (rc == 0) rc = chmod(p, mode); /* mkdir honours the umask; tmp needs 1777 */
  } else if (errno == EEXIST) {
    rc = 0;
  }
  free(p);
  return rc;
}

/* The host's /etc/profile, then the directory of the sandbox's sudo
 * (sudo.h) at the end of PATH: login shells (bash -l) set PATH afresh. */
static int write_profile(const char *dir) {
  char host[64 * 1024];
  size_t n = 0;
  FILE *f = fopen("/etc/profile", "re");
  if (f) {
    n = fread(host, 1, sizeof host - 1, f);
    fclose(f);
  }
  host[n] = '\0';
  char *text = xasprintf("%s\n# e2b-local: sudo for the sandbox's users\n"
                         "case \":$PATH:\" in *:/run/e2b/bin:*) ;; *) PATH=\"$PATH:/run/e2b/bin\";; esac\n"
                         "export PATH\n", host);
  int rc = write_text(dir, "etc/profile", text, 0644);
  free(text);
  return rc;
}

int runtime_prepare_dir(const char *dir) {
  if (make_owned_dir(dir, "home", 0755, 1000) || make_owned_dir(dir, "tmp", 01777, 0) ||
      make_owned_dir(dir, "root", 0700, 0) || make_owned_dir(dir, "etc", 0755, 0))
    return -errno;
  int rc = write_text(dir, "etc/passwd",
                      "root:x:0:0:root:/root:/bin/bash\n"
                      "user:x:1000:1000::/home/user:/bin/bash\n"
                      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                      0644);
  if (!rc) rc = write_text(dir, "etc/group", "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n", 0644);
  if (!rc) rc = write_text(dir, "etc/shadow", "", 0640);
  if (!rc) rc = write_text(dir, "etc/hostname", "e2b.local\n", 0644);
  if (!rc) rc = write_profile(dir);
  return rc ? -errno : 0;
}

/* A fresh boot id per boot, like a VM: a cold resume gets a new one. */
static int write_boot_id(const char *dir) {
  char uuid[E2B_UUID_SIZE];
  if (e2b_uuid4(uuid) != 0) return -EIO;
  char text[E2B_UUID_SIZE + 1];
  snprintf(text, sizeof text, "%s\n", uuid);
  return write_text(dir, "boot_id", text, 0444) ? -errno : 0;
}

typedef struct argvec {
  char *v[MAX_ARGS];
  char *owned[MAX_ARGS];
  int n, nowned;
} argvec;

static void av_add(argvec *a, const char *s) {
  if (a->n < MAX_ARGS - 1) a->v[a->n++] = (char *)s;
}

static const char *av_own(argvec *a, char *s) {
  if (a->nowned < MAX_ARGS) a->owned[a->nowned++] = s;
  return s;
}

static void av_free(argvec *a) {
  for (int i = 0; i < a->nowned; i++) free(a->owned[i]);
}

/* Of the host's /etc, only what a base userland needs to run (loader,
 * certificates, name-service and shell configuration, interpreters'
 * settings): never shadow backups, private keys, services' configs or
 * package-manager credentials. passwd, group, shadow and hostname are the
 * sandbox's own (runtime_prepare_dir). */
static const char *const g_etc_allow[] = {
    "alternatives", "bash.bashrc", "bash_completion.d", "ca-certificates", "ca-certificates.conf",
    "debian_version", "default", "environment", "fonts", "gai.conf", "host.conf", "hosts",
    "inputrc", "issue", "java-17-openjdk", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
    "locale.alias", "locale.gen", "localtime", "login.defs", "magic", "magic.mime",
    "manpath.config", "mime.types", "mtab", "nsswitch.conf", "os-release", "perl",
    "profile.d", "protocols", "python3", "python3.11", "python3.12", "python3.13", "resolv.conf",
    "rpc", "services", "shells", "skel", "ssl/certs", "ssl/openssl.cnf", "ssh/ssh_config",
    "ssh/ssh_config.d", "terminfo", "timezone", "vim", "wgetrc", "xml", "sgml", NULL};

/* A host path as the host has it, read-only: a symlink stays a symlink
 * (resolved inside the sandbox: merged-usr links stay links), a directory
 * (or, with files, a regular file) is bound. */
static void add_host_entry(argvec *a, const char *path, int files) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) return;
    target[n] = '\0';
    av_add(a, "--symlink");
    av_add(a, av_own(a, xstrdup(target)));
  } else if (S_ISDIR(st.st_mode) || (files && S_ISREG(st.st_mode))) {
    av_add(a, "--ro-bind");
    av_add(a, path);
  } else {
    return;
  }
  av_add(a, path);
}

static void add_etc(argvec *a) {
  static const char *dirs[] = {"/etc", "/etc/ssl", "/etc/ssh", NULL};
  for (int i = 0; dirs[i]; i++) {
    av_add(a, "--perms");
    av_add(a, "0755");
    av_add(a, "--dir");
    av_add(a, dirs[i]);
  }
  for (int i = 0; g_etc_allow[i]; i++) add_host_entry(a, av_own(a, xasprintf("/etc/%s", g_etc_allow[i])), 1);
}

/* A fresh /proc for the pid namespace, with Docker's protections: the
 * kernel's global knobs (/proc/sys: core_pattern, hostname of other
 * namespaces…, /proc/sysrq-trigger: reboot) read-only, and the files that
 * show host kernel state masked. bwrap covers /proc/irq and /proc/bus. */
static void add_proc(argvec *a) {
  av_add(a, "--proc");
  av_add(a, "/proc");
  static const char *ro[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/fs", NULL};
  for (int i = 0; ro[i]; i++) {
    av_add(a, "--ro-bind-try");
    av_add(a, ro[i]);
    av_add(a, ro[i]);
  }
  static const char *masked[] = {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
                                 "/proc/kallsyms", NULL};
  for (int i = 0; masked[i]; i++) {
    if (access(masked[i], F_OK) != 0) continue;
    av_add(a, "--ro-bind");
    av_add(a, "/dev/null");
    av_add(a, masked[i]);
  }
}

static void add_bind(argvec *a, const char *kind, const char *dir, const char *name,
                     const char *dest) {
  av_add(a, kind);
  av_add(a, av_own(a, xasprintf("%s/%s", dir, name)));
  av_add(a, dest);
}

/* bwrap creates missing mount points 0700 on its root tmpfs: make the
 * parents of a mount (/mnt for /mnt/data) traversable like a normal system. */
static void add_parents(argvec *a, const char *dst) {
  static const char *own[] = {"/home/user", "/tmp", "/root", NULL};
  for (int i = 0; own[i]; i++) {
    size_t n = strlen(own[i]);
    if (strncmp(dst, own[i], n) == 0 && (dst[n] == '/' || dst[n] == '\0')) return;
  }
  for (const char *s = strchr(dst + 1, '/'); s; s = strchr(s + 1, '/')) {
    char *parent = strndup(dst, (size_t)(s - dst));
    if (strcmp(parent, "/home") == 0) {
      free(parent);
      continue;
    }
    av_add(a, "--perms");
    av_add(a, "0755");
    av_add(a, "--dir");
    av_add(a, av_own(a, parent));
  }
}

static void av_list(argvec *a, const char *const *items) {
  for (int i = 0; items[i]; i++) av_add(a, items[i]);
}

/* Namespaces and capabilities. */
static void add_isolation(argvec *a) {
  /* Always a network namespace of its own (only loopback): egress goes
   * through the agent's forwarder to the filtering proxy (egress.c), and
   * two sandboxes' servers never collide on the host's ports. */
  static const char *const ns[] = {"--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                                   "--unshare-net", "--as-pid-1", "--hostname", "e2b.local", NULL};
  av_list(a, ns);
  av_add(a, "--seccomp"); /* bwrap's own mounts first, then the filter (syscall_filter.c) */
  av_add(a, FILTER_FD_STR);
  /* Root in the sandbox keeps Docker's default capabilities minus MKNOD
   * (no device cgroup here: a block device node would read the host disk),
   * and never SYS_ADMIN. */
  static const char *caps[] = {"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER",
                               "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID",
                               "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
                               "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE", NULL};
  av_add(a, "--cap-drop");
  av_add(a, "ALL");
  for (int i = 0; caps[i]; i++) {
    av_add(a, "--cap-add");
    av_add(a, caps[i]);
  }
}

/* The host's system, read-only, and the sandbox's own pseudo-filesystems. */
static void add_system(argvec *a) {
  static const char *const usr[] = {"--ro-bind", "/usr", "/usr", NULL};
  av_list(a, usr);
  static const char *sys[] = {"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", NULL};
  for (int i = 0; sys[i]; i++) add_host_entry(a, sys[i], 0);
  add_etc(a);
  static const char *const opt[] = {"--ro-bind-try", "/opt", "/opt", NULL};
  av_list(a, opt);
  add_proc(a);
  static const char *const devrun[] = {"--dev", "/dev", "--tmpfs", "/run", NULL};
  av_list(a, devrun);
  /* bwrap would create these mount points 0700: users must traverse them */
  static const char *dirs[] = {"/home", "/var", "/var/tmp", NULL};
  static const char *perms[] = {"0755", "0755", "1777"};
  for (int i = 0; dirs[i]; i++) {
    av_add(a, "--perms");
    av_add(a, perms[i]);
    av_add(a, "--dir");
    av_add(a, dirs[i]);
  }
}

/* The sandbox's own files: its home, /tmp, /root, identity files, volumes. */
static void add_sandbox_files(argvec *a, const runtime_config *cfg) {
  add_bind(a, "--bind", cfg->dir, "home", "/home/user");
  add_bind(a, "--bind", cfg->dir, "tmp", "/tmp");
  add_bind(a, "--bind", cfg->dir, "root", "/root");
  add_bind(a, "--ro-bind", cfg->dir, "etc/passwd", "/etc/passwd");
  add_bind(a, "--ro-bind", cfg->dir, "etc/group", "/etc/group");
  add_bind(a, "--ro-bind", cfg->dir, "etc/shadow", "/etc/shadow");
  add_bind(a, "--ro-bind", cfg->dir, "etc/shadow", "/etc/gshadow");
  add_bind(a, "--ro-bind", cfg->dir, "etc/hostname", "/etc/hostname");
  add_bind(a, "--ro-bind-try", cfg->dir, "etc/profile", "/etc/profile"); /* older sandboxes lack it */
  add_bind(a, "--ro-bind", cfg->dir, "boot_id", "/proc/sys/kernel/random/boot_id");
  for (size_t i = 0; i < json_array_size(cfg->mounts); i++) {
    json_t *m = json_array_get(cfg->mounts, i);
    add_parents(a, json_string_value(json_object_get(m, "dst")));
    av_add(a, json_is_true(json_object_get(m, "ro")) ? "--ro-bind" : "--bind");
    av_add(a, av_own(a, xstrdup(json_string_value(json_object_get(m, "src")))));
    av_add(a, av_own(a, xstrdup(json_string_value(json_object_get(m, "dst")))));
  }
}

/* Copies, readable by the sandbox's users (the CA's own file is 0600), live
 * beside the CA in its private directory: certificates only, public. */
void runtime_set_trust(const char *ca_file, const char *ca_dest, const char *bundle_dest) {
  int dirlen = (int)(strrchr(ca_file, '/') - ca_file);
  sbuf ca = {0}, b = {0};
  char *ca_copy = xasprintf("%.*s/sandbox-ca.pem", dirlen, ca_file);
  char *bundle = xasprintf("%.*s/sandbox-bundle.pem", dirlen, ca_file);
  if (sbuf_append_file(&ca, ca_file) == 0 && write_file_atomic(ca_copy, ca.data, ca.len, 0644) == 0) {
    g_ca_file = ca_copy;
    g_ca_dest = xstrdup(ca_dest);
    ca_copy = NULL;
    if (sbuf_append_file(&b, bundle_dest) == 0) {
      sbuf_append(&b, "\n", 1);
      sbuf_append(&b, ca.data, ca.len);
      if (write_file_atomic(bundle, b.data, b.len, 0644) == 0) {
        g_bundle_file = bundle;
        g_bundle_dest = xstrdup(bundle_dest);
        bundle = NULL;
      }
    }
  }
  if (!g_ca_file) log_msg("cannot give sandboxes e2b-local's CA: their HTTPS to hosts with network.rules fails");
  free(ca_copy);
  free(bundle);
  sbuf_free(&ca);
  sbuf_free(&b);
}

/* e2b-local's CA where the sandbox's TLS clients look (certificates only). */
static void add_trust(argvec *a) {
  if (!g_ca_file) return;
  av_add(a, "--ro-bind");
  av_add(a, g_ca_file);
  av_add(a, g_ca_dest);
  if (!g_bundle_file) return;
  av_add(a, "--ro-bind");
  av_add(a, g_bundle_file);
  av_add(a, g_bundle_dest);
}

/* The agent binary, `sudo` beside it, and the agent's own command line. */
static void add_agent(argvec *a) {
  add_parents(a, "/run/e2b/bin/sudo"); /* traversable, before bwrap makes them 0700 */
  add_trust(a);
  av_add(a, "--ro-bind");
  av_add(a, g_self);
  av_add(a, AGENT_PATH);
  /* `sudo` on the commands' PATH: this binary under that name (sudo.h) */
  av_add(a, "--symlink");
  av_add(a, AGENT_PATH);
  av_add(a, "/run/e2b/bin/sudo");
  static const char *const run[] = {"--chdir", "/", "--", AGENT_PATH, "agent", "--fd", "3",
                                    "--egress-port", EGRESS_PORT_STR, NULL};
  av_list(a, run);
}

static void build_argv(argvec *a, const runtime_config *cfg) {
  if (g_bwrap) {
    av_add(a, g_bwrap);
    add_isolation(a);
    add_system(a);
    add_sandbox_files(a, cfg);
    add_agent(a);
  } else {
    av_add(a, g_self);
    static const char *const agent[] = {"agent", "--fd", "3", "--no-isolation", NULL};
    av_list(a, agent);
    static const char *maps[][2] = {{"/home/user", "home"}, {"/tmp", "tmp"}, {"/root", "root"}};
    for (int i = 0; i < 3; i++) {
      av_add(a, "--map");
      av_add(a, av_own(a, xasprintf("%s=%s/%s", maps[i][0], cfg->dir, maps[i][1])));
    }
  }
  a->v[a->n] = NULL;
}

/* Only what the agent needs: the host's environment (API keys!) stays out. */
static void build_env(argvec *e) {
  av_add(e, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  static const char *pass[] = {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", NULL};
  for (int i = 0; pass[i]; i++) {
    const char *v = getenv(pass[i]);
    if (v) av_add(e, av_own(e, xasprintf("%s=%s", pass[i], v)));
  }
  e->v[e->n] = NULL;
}

/* a is b or below it */
static int path_within(const char *a, const char *b) {
  size_t n = strlen(b);
  return strncmp(a, b, n) == 0 && (a[n] == '/' || a[n] == '\0' || (n == 1 && b[0] == '/'));
}

/* The paths a sandbox sees through its idmapping, and their strings. */
typedef struct idmap_plan {
  ids_path v[MAX_IDMAPS];
  char *owned[MAX_IDMAPS];
  int n;
} idmap_plan;

static void plan_free(idmap_plan *p) {
  for (int i = 0; i < p->n; i++) free(p->owned[i]);
  p->n = 0;
}

/* Bubblewrap, root of the sandbox's namespace only, cannot cross a host
 * directory others may not enter (a 0700 parent of the state directory):
 * the idmapping starts there, where the sandbox's root is its owner. */
static char *traversal_anchor(const char *path) {
  char *p = xstrdup(path);
  for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = '\0';
    struct stat st;
    if (stat(p, &st) == 0 && !(st.st_mode & S_IXOTH)) return p;
    *s = '/';
  }
  return p;
}

static void plan_add(idmap_plan *p, const char *path, int required) {
  struct stat st;
  if (!path || p->n >= MAX_IDMAPS || path[0] != '/' || lstat(path, &st) != 0 || S_ISLNK(st.st_mode)) return;
  char *anchor = traversal_anchor(path);
  p->owned[p->n] = anchor;
  p->v[p->n++] = (ids_path){anchor, required};
}

static int by_length(const void *a, const void *b) {
  size_t x = strlen(((const ids_path *)a)->path), y = strlen(((const ids_path *)b)->path);
  return (x > y) - (x < y);
}

/* What the sandbox sees through its idmapping: its state (required), the
 * host's system and the directories bound from elsewhere (as they can be);
 * each once, a directory above another first, the one below dropped (its
 * mount carries the idmapping). Returns how many, first in p->v. */
static int plan_idmaps(idmap_plan *p, const runtime_config *cfg) {
  plan_add(p, g_state_root, 1);
  static const char *sys[] = {"/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", NULL};
  for (int i = 0; sys[i]; i++) plan_add(p, sys[i], 0);
  for (size_t i = 0; i < json_array_size(cfg->mounts); i++)
    plan_add(p, json_string_value(json_object_get(json_array_get(cfg->mounts, i), "src")), 0);
  char *self_dir = xstrdup(g_self);
  char *slash = strrchr(self_dir, '/');
  if (slash && slash != self_dir) *slash = '\0';
  plan_add(p, self_dir, 0);
  free(self_dir);
  qsort(p->v, (size_t)p->n, sizeof *p->v, by_length);
  int out = 0;
  for (int i = 0; i < p->n; i++) {
    int seen = -1;
    for (int j = 0; j < out && seen < 0; j++) seen = path_within(p->v[i].path, p->v[j].path) ? j : -1;
    if (seen >= 0) p->v[seen].required |= p->v[i].required;
    else p->v[out++] = p->v[i];
  }
  return out;
}

/* The cgroup that freezes the sandbox (and lists its processes): v2's is
 * the sandbox's limits directory, v1's a freezer hierarchy of its own. */
static char *make_cgroup(const char *id, const limits *lim) {
  if (g_freezer == 2) return lim->v2 ? xstrdup(lim->v2) : NULL;
  if (!g_freezer) return NULL;
  char *p = xasprintf("%s/%s", g_freezer_dir, id);
  if (mkdir(p, 0755) != 0 && errno != EEXIST) {
    free(p);
    return NULL;
  }
  return p;
}

/* The spawn of a sandbox with its own uids: its block, and its idmapped paths. */
static int own_ids_job(runtime *rt, const runtime_config *cfg, spawn_job *job, idmap_plan *plan) {
  if (!g_own_ids) return 0;
  int rc = ids_acquire(&rt->ids);
  if (rc) {
    log_msg("sandbox %s: no host uids of its own to run as: %s", cfg->id, strerror(-rc));
    return rc;
  }
  job->ids = &rt->ids;
  job->nidmaps = plan_idmaps(plan, cfg);
  job->idmaps = plan->v;
  return 0;
}

int runtime_start(runtime *rt, const runtime_config *cfg) {
  memset(rt, 0, sizeof *rt);
  rt->sock = -1;
  rt->ids.userns = rt->ids.lock = -1;
  int rc = runtime_prepare_dir(cfg->dir);
  if (!rc) rc = write_boot_id(cfg->dir);
  if (rc) return rc;
  spawn_job job = {0};
  idmap_plan plan = {.n = 0};
  if ((rc = own_ids_job(rt, cfg, &job, &plan)) != 0) return rc;
  /* With bwrap, never a sandbox without its filter: fail closed. */
  int filter = g_bwrap ? (g_filter ? sandbox_filter_fd(g_filter, g_filter_len) : -ENOSYS) : -1;
  int sv[2] = {-1, -1}, logfd = -1;
  if (g_bwrap && filter < 0) rc = filter;
  else if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) rc = -errno;
  else if ((logfd = agentlog_start(cfg->id)) < 0) rc = logfd;
  if (rc) {
    if (sv[0] >= 0) close(sv[0]);
    if (sv[1] >= 0) close(sv[1]);
    if (filter >= 0) close(filter);
    ids_release(&rt->ids);
    plan_free(&plan);
    return rc;
  }
  limits_create(&rt->lim, cfg->id, cfg->mem_bytes, cfg->pids_max);
  rt->cgroup = make_cgroup(cfg->id, &rt->lim);
  job.sock = sv[1];
  job.log = logfd;
  job.filter = filter;
  job.procs[0] = rt->cgroup && g_freezer == 1 ? xasprintf("%s/cgroup.procs", rt->cgroup) : NULL;
  limits_procs(&rt->lim, job.procs + (job.procs[0] ? 1 : 0));
  argvec a = {0}, e = {0};
  build_argv(&a, cfg);
  build_env(&e);
  job.argv = a.v;
  job.envp = e.v;
  run_job(&job);
  pid_t pid = job.pid;
  int err = job.err;
  for (int i = 0; i < 4; i++) free(job.procs[i]);
  av_free(&a);
  av_free(&e);
  close(sv[1]);
  close(logfd);
  if (filter >= 0) close(filter);
  plan_free(&plan);
  if (err) {
    close(sv[0]);
    limits_destroy(&rt->lim);
    ids_release(&rt->ids);
    return -err;
  }
  rt->pid = pid;
  rt->sock = sv[0];
  return 0;
}

/* Host pids in the sandbox: the cgroup's members, or the agent's descendants. */
static int list_pids(const runtime *rt, pid_t **out) {
  size_t n = 0, cap = 16;
  pid_t *v = xmalloc(cap * sizeof *v);
  if (rt->cgroup) {
    char *p = xasprintf("%s/cgroup.procs", rt->cgroup);
    FILE *f = fopen(p, "re");
    free(p);
    int pid;
    while (f && fscanf(f, "%d", &pid) == 1) {
      if (n == cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
      v[n++] = pid;
    }
    if (f) fclose(f);
    *out = v;
    return (int)n;
  }
  /* Walk /proc repeatedly: a parent-before-child order is not guaranteed. */
  if (rt->pid > 0) v[n++] = rt->pid;
  for (int changed = 1; changed;) {
    changed = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
      int pid = atoi(de->d_name), ppid = 0;
      if (pid <= 0) continue;
      char buf[512];
      const char *f = proc_stat_fields(pid, buf, sizeof buf);
      if (!f || sscanf(f, "%*c %d", &ppid) != 1) continue;
      int parent_in = 0, self_in = 0;
      for (size_t i = 0; i < n; i++) {
        parent_in |= v[i] == ppid;
        self_in |= v[i] == pid;
      }
      if (parent_in && !self_in) {
        if (n == cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
        v[n++] = pid;
        changed = 1;
      }
    }
    if (d) closedir(d);
  }
  *out = v;
  return (int)n;
}

static void signal_all(const runtime *rt, int sig) {
  pid_t *pids;
  int n = list_pids(rt, &pids);
  for (int i = 0; i < n; i++) kill(pids[i], sig);
  free(pids);
}

int runtime_sample(const runtime *rt, uint64_t *cpu_ticks, uint64_t *rss_bytes) {
  *cpu_ticks = *rss_bytes = 0;
  if (!rt->cgroup && rt->pid <= 0) return 0;
  pid_t *pids;
  int n = list_pids(rt, &pids);
  long page = sysconf(_SC_PAGESIZE);
  for (int i = 0; i < n; i++) {
    char buf[1024];
    const char *f = proc_stat_fields((int)pids[i], buf, sizeof buf);
    unsigned long ut = 0, st = 0;
    long rss = 0;
    /* fields after the command: state(3) ... utime(14) stime(15) ... rss(24) */
    if (!f || sscanf(f, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d %*u %*u %ld",
                      &ut, &st, &rss) != 3)
      continue;
    *cpu_ticks += ut + st;
    if (rss > 0) *rss_bytes += (uint64_t)rss * (uint64_t)page;
  }
  free(pids);
  return n;
}

uint64_t runtime_hidden_disk(const runtime *rt, dev_t dev) {
  if (!rt->cgroup && rt->pid <= 0) return 0;
  pid_t *pids;
  int n = list_pids(rt, &pids);
  uint64_t bytes = diskuse_hidden(pids, n, dev);
  free(pids);
  return bytes;
}

int runtime_count_processes(const runtime *rt) {
  if (!rt->cgroup && rt->pid <= 0) return 0;
  pid_t *pids;
  int n = list_pids(rt, &pids);
  free(pids);
  return n;
}

static int freezer_set(const char *cg, const char *state) {
  if (g_freezer == 2) return cg2_freeze(cg, strcmp(state, "FROZEN") == 0);
  char *p = xasprintf("%s/freezer.state", cg);
  int rc = write_file(p, state, strlen(state), 0644);
  for (int i = 0; rc == 0 && i < 500; i++) {
    char buf[32] = {0};
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t r = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (r > 0 && strncmp(buf, state, strlen(state)) == 0) break;
    usleep(2000); /* FREEZING: tasks are still on their way to the fridge */
  }
  free(p);
  return rc ? -errno : 0;
}

int runtime_freeze(runtime *rt) {
  if (rt->cgroup) return freezer_set(rt->cgroup, "FROZEN");
  /* A process may fork while we walk the tree: stop until the set is stable
   * (stopped processes cannot fork, so this converges). */
  int before = -1;
  for (int round = 0; round < 20; round++) {
    pid_t *pids;
    int n = list_pids(rt, &pids);
    for (int i = 0; i < n; i++) kill(pids[i], SIGSTOP);
    free(pids);
    if (n == before) break;
    before = n;
    usleep(2000);
  }
  rt->frozen_by_signal = 1;
  return 0;
}

int runtime_thaw(runtime *rt) {
  if (rt->cgroup) return freezer_set(rt->cgroup, "THAWED");
  signal_all(rt, SIGCONT);
  rt->frozen_by_signal = 0;
  return 0;
}

static int reap_within(pid_t pid, int ms) {
  for (int waited = 0; waited <= ms; waited += 10) {
    pid_t r = waitpid(pid, NULL, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return 1;
    usleep(10000);
  }
  return 0;
}

/* Whatever the kill missed (a process in a child cgroup, frozen there) is
 * thawed and killed now, and said: it means something got past the filter. */
static void sweep_cgroups(const runtime *rt) {
  const char *dirs[] = {rt->cgroup, rt->lim.v2, rt->lim.mem, rt->lim.pids};
  for (int i = 0; i < 4; i++) {
    int seen = !dirs[i];
    for (int j = 0; j < i && !seen; j++) seen = dirs[j] && strcmp(dirs[j], dirs[i]) == 0;
    if (seen) continue;
    cg_swept s = cg_sweep(dirs[i]);
    if (s.hidden)
      log_msg("sandbox kill: thawed and killed %d process(es) hidden in a child cgroup of %s", s.hidden, dirs[i]);
    if (s.left) log_msg("sandbox kill: %d process(es) were still in %s: killed", s.left, dirs[i]);
    if (s.stuck) log_msg("WARNING: %d process(es) survived the sandbox kill in %s", s.stuck, dirs[i]);
    /* on cgroup v2, cgroup.kill already took their processes: still said */
    if (s.below && !s.hidden)
      log_msg("sandbox kill: removed %d child cgroup(s) made below %s", s.below, dirs[i]);
  }
}

void runtime_stop(runtime *rt) {
  if (rt->pid <= 0) return;
  int reaped = 0;
  if (!g_bwrap && rt->sock >= 0 && !rt->frozen_by_signal && !rt->cgroup) {
    /* No pid namespace and no cgroup: let the subreaper agent kill its tree.
     * Never waited for: an agent that reads nothing is killed below. */
    fcntl(rt->sock, F_SETFL, fcntl(rt->sock, F_GETFL) | O_NONBLOCK);
    ipc_send(rt->sock, IPC_SHUTDOWN, 0, 0, NULL, NULL, 0);
    reaped = reap_within(rt->pid, 2000);
  }
  /* SIGKILL everyone, then thaw: frozen tasks only die once thawed. Once
   * reaped, rt->pid may belong to someone else: never signal it again. */
  for (int round = 0; round < 200; round++) {
    if (g_freezer == 2 && rt->cgroup) cg2_kill(rt->cgroup); /* frozen ones too, where the kernel has it */
    if (rt->cgroup || !reaped) signal_all(rt, SIGKILL);
    if (rt->cgroup) freezer_set(rt->cgroup, "THAWED");
    if (rt->frozen_by_signal && !reaped) signal_all(rt, SIGCONT);
    if (!reaped) {
      kill(rt->pid, SIGKILL);
      reaped = reap_within(rt->pid, 50);
    }
    if (reaped && (!rt->cgroup || runtime_count_processes(rt) == 0)) break;
    if (reaped) usleep(10000);
  }
  while (!reaped && waitpid(rt->pid, NULL, 0) < 0 && errno == EINTR) {
  }
  sweep_cgroups(rt);
  if (rt->cgroup) {
    /* the last task may still be on its way out of the cgroup: EBUSY for a
     * moment (v2's is the limits directory, removed with them below) */
    for (int i = 0; g_freezer == 1 && i < 100 && rmdir(rt->cgroup) != 0 && errno == EBUSY; i++) usleep(10000);
    free(rt->cgroup);
    rt->cgroup = NULL;
  }
  limits_destroy(&rt->lim);
  ids_release(&rt->ids); /* every process of the sandbox is gone: its block is free */
  rt->pid = 0;
}
