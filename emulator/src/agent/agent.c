/* agent.c — main loop of the in-sandbox agent: the server's requests (spawn,
 * signal, file ops, ports), reaping, egress. Commands start in agent_exec.c. */
#define _GNU_SOURCE
#include "agent.h"
#include "sudo.h"

#include <dirent.h>
#include <pwd.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "ipc.h"
#include "log.h"
#include "util.h"


static int g_sock = -1;
static int g_isolated = 1;

/* Pids we spawned on request: only their exits are reported. */
static pid_t *g_tracked;
static size_t g_ntracked, g_captracked;

static void track(pid_t pid) {
  if (g_ntracked == g_captracked) {
    g_captracked = g_captracked ? g_captracked * 2 : 64;
    g_tracked = xrealloc(g_tracked, g_captracked * sizeof *g_tracked);
  }
  g_tracked[g_ntracked++] = pid;
}

static int untrack(pid_t pid) {
  for (size_t i = 0; i < g_ntracked; i++) {
    if (g_tracked[i] != pid) continue;
    g_tracked[i] = g_tracked[--g_ntracked];
    return 1;
  }
  return 0;
}

/* Root in the sandbox has our uid and our capabilities, so it could ptrace
 * pid 1, read /proc/1/mem or take fd 3 (the control socket) with
 * pidfd_getfd. A non-dumpable process needs CAP_SYS_PTRACE for all of that,
 * which the sandbox never has. The bounding set shrinks to what we hold, so
 * no exec can ever grant more. */
static void harden_self(void) {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) log_msg("agent: PR_SET_DUMPABLE: %s", strerror(errno));
  if (!g_isolated) return;
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  unsigned long long prm = ~0ull;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "CapPrm: %llx", &prm) == 1) break;
  if (f) fclose(f);
  for (int cap = 0; cap < 64 && prm != ~0ull; cap++)
    if (!(prm & (1ull << cap)) && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1)
      prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
}

/* Whether the requested cwd is missing: envd checks before it starts, and
 * says so, where a failed chdir would read as the program missing. */
static int cwd_missing(json_t *req) {
  const char *cwd = json_string_value(json_object_get(req, "cwd"));
  if (!cwd || !*cwd) return 0;
  char *real = afs_to_real(cwd);
  struct stat st;
  int missing = stat(real, &st) != 0 && errno == ENOENT;
  free(real);
  return missing;
}

static void handle_spawn(const ipc_msg *m) {
  json_t *req = m->body;
  char **argv = agent_str_array(json_object_get(req, "argv"));
  char **envp = agent_str_array(json_object_get(req, "env"));
  if (!g_isolated) {
    agent_map_env(&envp);
    agent_map_argv(argv);
  }
  json_t *pty = json_object_get(req, "pty");
  int want_stdin = json_is_true(json_object_get(req, "stdin"));
  agent_stdio s = {{-1, -1}, {-1, -1}, {-1, -1}, -1, -1};
  int no_cwd = cwd_missing(req);
  int err = !argv[0] || !*argv[0] ? EINVAL : no_cwd ? ENOENT : agent_open_stdio(pty, want_stdin, &s);
  int up = -1; /* the server's end of the output relay */
  if (!err && !pty && (err = relay_start(s.out[0], s.er[0], &up)) == 0) s.out[0] = s.er[0] = -1;
  pid_t pid = err ? -err : agent_fork_exec(req, argv, envp, &s, pty != NULL, pty != NULL);
  if (pid > 0) {
    track(pid);
    int fds[2], nfds = 0;
    fds[nfds++] = pty ? s.master : up;
    if (!pty && want_stdin) fds[nfds++] = s.in[1];
    json_t *body = json_pack("{s:i}", "pid", (int)pid);
    ipc_send(g_sock, IPC_REPLY, m->id, 0, body, fds, nfds);
    json_decref(body);
  } else {
    json_t *msg = json_pack("{s:s, s:b}", "message", strerror((int)-pid), "cwd_missing", no_cwd);
    ipc_send(g_sock, IPC_REPLY, m->id, (int32_t)-pid, msg, NULL, 0);
    json_decref(msg);
  }
  if (up >= 0) close(up); /* unsent, it ends the relay */
  agent_close_stdio(&s);
  agent_free_str_array(argv);
  agent_free_str_array(envp);
}

static void handle_signal(const ipc_msg *m) {
  pid_t pid = (pid_t)json_integer_value(json_object_get(m->body, "pid"));
  int sig = (int)json_integer_value(json_object_get(m->body, "sig"));
  int err = 0;
  int known = 0;
  for (size_t i = 0; i < g_ntracked; i++) known |= g_tracked[i] == pid;
  if (!known || pid <= 1)
    err = ESRCH;
  else if (kill(pid, sig) != 0) /* the one pid, as envd: never its group */
    err = errno;
  ipc_send(g_sock, IPC_REPLY, m->id, err, NULL, NULL, 0);
}

/* The egress forwarder: 127.0.0.1:port inside the sandbox's own network
 * namespace, where http_proxy points. Each accepted connection goes up to
 * the server, which filters and relays it (egress.c): nothing leaves the
 * sandbox any other way. */
static int egress_listen(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return -1;
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(s, 512) != 0) {
    log_msg("cannot listen on 127.0.0.1:%d for egress: %s", port, strerror(errno));
    close(s);
    return -1;
  }
  return s;
}

/* At most 64 a pass: a sandbox connecting without pause never keeps the
 * loop from the server's requests. */
static void egress_accept_all(int ls) {
  for (int i = 0; i < 64; i++) {
    int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) return; /* EAGAIN: all taken */
    ipc_send(g_sock, IPC_EGRESS, 0, 0, NULL, &fd, 1);
    close(fd);
  }
}

/* Runs one file operation as the request's user (agent_ident.c). */
static int fs_op(const ipc_msg *m, json_t **out, int *fd) {
  int err = ident_enter_req(m->body);
  if (err) return err;
  switch (m->type) {
  case IPC_STAT: err = afs_stat(m->body, out); break;
  case IPC_LISTDIR: err = afs_listdir(m->body, out); break;
  case IPC_MKDIR: err = afs_mkdir(m->body, out); break;
  case IPC_MOVE: err = afs_move(m->body, out); break;
  case IPC_REMOVE: err = afs_remove(m->body, out); break;
  case IPC_OPEN_READ: err = afs_open_read(m->body, out, fd); break;
  case IPC_OPEN_WRITE: err = afs_open_write(m->body, out, fd); break;
  case IPC_WATCH: err = aw_watch(m->body, out, fd); break;
  default: err = ENOSYS; break;
  }
  ident_leave();
  return err;
}

static void handle_fs(const ipc_msg *m) {
  json_t *out = NULL;
  int fd = -1, err;
  switch (m->type) {
  case IPC_STAT:
  case IPC_LISTDIR:
  case IPC_MKDIR:
  case IPC_MOVE:
  case IPC_REMOVE:
  case IPC_OPEN_READ:
  case IPC_OPEN_WRITE:
  case IPC_WATCH: err = fs_op(m, &out, &fd); break;
  default: err = ENOSYS; break;
  }
  if (err && !out) out = json_pack("{s:s}", "message", strerror(err));
  int rc = ipc_send(g_sock, IPC_REPLY, m->id, err, out, &fd, fd >= 0 ? 1 : 0);
  if (rc == -EMSGSIZE) ipc_send(g_sock, IPC_REPLY, m->id, E2BIG, NULL, NULL, 0);
  json_decref(out);
  if (fd >= 0) close(fd);
}

static void reap(void) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    if (sudo_reaped(pid, status)) continue;
    if (!untrack(pid)) continue; /* an orphan we inherited as init/subreaper */
    json_t *body = json_pack("{s:i, s:i}", "pid", (int)pid, "status", status);
    ipc_send(g_sock, IPC_EXIT, 0, 0, body, NULL, 0);
    json_decref(body);
  }
}

/* Without a pid namespace, killing the agent would orphan its commands; as
 * subreaper every descendant is ours, so kill children until none remain. */
static void kill_descendants(void) {
  for (int round = 0; round < 50; round++) {
    int found = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
      pid_t pid = (pid_t)atoi(de->d_name);
      if (pid <= 0) continue;
      char buf[512];
      const char *f = proc_stat_fields((int)pid, buf, sizeof buf);
      int ppid = 0;
      if (f && sscanf(f, "%*c %d", &ppid) == 1 && ppid == getpid()) {
        kill(pid, SIGKILL);
        found = 1;
      }
    }
    if (d) closedir(d);
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    if (!found) return;
    usleep(20000);
  }
}

static void shutdown_agent(void) {
  if (!g_isolated) kill_descendants();
  _exit(0);
}

static void dispatch(const ipc_msg *m) {
  switch (m->type) {
  case IPC_SPAWN: handle_spawn(m); break;
  case IPC_SIGNAL: handle_signal(m); break;
  case IPC_SHUTDOWN: shutdown_agent(); break;
  case IPC_CONNECT: aconn_begin(m->id, m->body, g_sock); break; /* answered when it connects */
  default: handle_fs(m); break;
  }
}

/* One poll over everything the agent serves: no client is ever waited for
 * (a pass reads what is ready and moves on). Returns when the server closes
 * the channel. */
static void serve_loop(int sfd, int lfd, int sudo_fd) {
  for (;;) {
    struct pollfd p[5 + AW_POLL_MAX + SUDO_PENDING + 32] = {{g_sock, POLLIN, 0}, {sfd, POLLIN, 0}, {lfd, POLLIN, 0},
                                                             {sudo_fd, POLLIN, 0}, {relay_fd(), POLLIN, 0}};
    int timeout_ms = -1;
    struct pollfd *wp = p + 5;
    int nw = aw_fds(wp, AW_POLL_MAX, &timeout_ms);
    struct pollfd *sp = wp + nw;
    int ns = sudo_pending_fds(sp, SUDO_PENDING, &timeout_ms);
    struct pollfd *cp = sp + ns;
    int nc = aconn_fds(cp, 32, &timeout_ms);
    if (poll(p, (nfds_t)(5 + nw + ns + nc), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[4].revents) relay_run();
    aw_run(wp, nw, g_sock);
    if (p[2].revents) egress_accept_all(lfd);
    sudo_pending_run(sp, ns);
    aconn_run(cp, nc, g_sock);
    if (p[3].revents) sudo_accept_all(sudo_fd);
    if (p[1].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
      }
      reap();
    }
    if (p[0].revents) {
      ipc_msg m;
      int rc = ipc_recv(g_sock, &m);
      if (rc <= 0) return; /* the server closed the channel: the sandbox ends */
      dispatch(&m);
      ipc_msg_clear(&m);
    }
  }
}

int agent_main(int argc, char **argv) {
  log_set_prefix("e2b-local agent");
  int egress_port = 0;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--fd") == 0 && i + 1 < argc) {
      g_sock = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--egress-port") == 0 && i + 1 < argc) {
      egress_port = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--no-isolation") == 0) {
      g_isolated = 0;
    } else if (strcmp(argv[i], "--map") == 0 && i + 1 < argc) {
      char *spec = xstrdup(argv[++i]);
      char *eq = strchr(spec, '=');
      if (eq) {
        *eq = '\0';
        afs_add_map(spec, eq + 1);
      }
      free(spec);
    }
  }
  if (g_sock < 0) {
    log_msg("agent: missing --fd");
    return 2;
  }
  set_cloexec(g_sock, 1);
  harden_self();
  agent_pick_child_oom();
  umask(022);
  signal(SIGPIPE, SIG_IGN);
  if (!g_isolated) {
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) return 1; /* the server is already gone */
  }
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  int lfd = egress_port > 0 ? egress_listen(egress_port) : -1; /* poll skips -1 */
  /* Without a network namespace an abstract socket would reach the host. */
  int sudo_fd = g_isolated ? sudo_listen() : -1;
  serve_loop(sfd, lfd, sudo_fd);
  shutdown_agent();
  return 0;
}
