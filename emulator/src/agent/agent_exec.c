/* agent_exec.c — how the agent starts a command: its stdio (pipes or a
 * pty), its identity, environment and working directory, its OOM score,
 * and the errno of an exec that failed. agent.c (requests from the server)
 * and sudo_agent.c (sudo inside the sandbox) both start commands here. */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pty.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

extern char **environ;

char **agent_str_array(json_t *arr) {
  size_t n = json_array_size(arr);
  char **v = xcalloc(n + 1, sizeof *v);
  for (size_t i = 0; i < n; i++) {
    const char *s = json_string_value(json_array_get(arr, i));
    v[i] = xstrdup(s ? s : "");
  }
  return v;
}

void agent_free_str_array(char **v) {
  for (char **p = v; p && *p; p++) free(*p);
  free(v);
}

/* A memory limit must kill the offender, never the agent. The server starts
 * the agent at oom_score_adj -1000 when it may (CAP_SYS_RESOURCE), and
 * commands go back to 0; when it may not, commands are raised to 500
 * instead, which only ever makes them the OOM killer's choice before us. */
static const char *g_child_oom = "0";

void agent_pick_child_oom(void) {
  char buf[16] = {0};
  int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  if (n > 0 && atoi(buf) >= 0) g_child_oom = "500";
}

static void reset_oom_score(void) {
  int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  if (write(fd, g_child_oom, strlen(g_child_oom)) < 0) {
    /* best effort: the memory limit holds either way */
  }
  close(fd);
}

/* What the child needs, all worked out before the fork: the child of a
 * vfork shares the agent's memory, so it allocates nothing and calls only
 * system calls until it execs. */
typedef struct child_plan {
  char **argv, **envp;
  int in, out, err, errfd;
  int is_pty, session;
  const char *cwd; /* real path, or NULL */
  uid_t uid;
  gid_t gid;
} child_plan;

/* Runs in the vforked child; reports the failing errno through errfd and
 * never returns. Handlers are reset before signals are let in: until it
 * execs, a handler would run the agent's code on the agent's memory. */
static void child_exec(const child_plan *p) {
  for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (p->session) setsid();
  if (p->is_pty) ioctl(p->in, TIOCSCTTY, 0);
  if (dup2(p->in, 0) < 0 || dup2(p->out, 1) < 0 || dup2(p->err, 2) < 0) goto fail;
  reset_oom_score();
  /* errfd is CLOEXEC; nothing else above 2 may leak into the command. */
  if (p->errfd > 3) close_range(3, (unsigned)p->errfd - 1, 0);
  close_range((unsigned)p->errfd + 1, ~0u, 0);
  if (p->cwd && chdir(p->cwd) != 0) goto fail;
  if (setgroups(1, &p->gid) != 0 || setgid(p->gid) != 0 || setuid(p->uid) != 0) goto fail;
  umask(022);
  environ = p->envp; /* execvp searches the command's own PATH; the parent puts its own back */
  execvp(p->argv[0], p->argv);
fail:;
  int e = errno;
  if (write(p->errfd, &e, sizeof e) < 0) _exit(126);
  _exit(127);
}

/* Without a mount namespace, HOME must name the host directory behind
 * /home/user, and TMPDIR points at the sandbox's own /tmp. */
void agent_map_env(char ***envp) {
  size_t n = 0;
  for (char **p = *envp; *p; p++) {
    if (strncmp(*p, "HOME=", 5) == 0) {
      char *real = afs_to_real(*p + 5);
      free(*p);
      *p = xasprintf("HOME=%s", real);
      free(real);
    }
    n++;
  }
  char *tmp = afs_to_real("/tmp");
  *envp = xrealloc(*envp, (n + 2) * sizeof **envp);
  (*envp)[n] = xasprintf("TMPDIR=%s", tmp);
  (*envp)[n + 1] = NULL;
  free(tmp);
}

/* Without a mount namespace, an argument that is a sandbox path (/tmp/x,
 * as cwd may be) names the host directory behind it: lua-e2b's kept-output
 * wrapper gets its files' prefix so (/tmp/.e2b-proc/TAG), and its reader
 * watches and reads them through the file operations, which map alike. */
void agent_map_argv(char **argv) {
  for (char **p = argv; *p; p++) {
    char *real = afs_to_real(*p);
    free(*p);
    *p = real;
  }
}

static void close_pair(int p[2]) {
  if (p[0] >= 0) close(p[0]);
  if (p[1] >= 0) close(p[1]);
}

int agent_open_stdio(json_t *pty, int want_stdin, agent_stdio *s) {
  if (pty) {
    struct winsize ws = {.ws_col = (unsigned short)json_integer_value(json_object_get(pty, "cols")),
                         .ws_row = (unsigned short)json_integer_value(json_object_get(pty, "rows"))};
    if (openpty(&s->master, &s->slave, NULL, NULL, &ws) != 0) return errno;
    set_cloexec(s->master, 1);
    return 0;
  }
  if (pipe2(s->out, O_CLOEXEC) != 0 || pipe2(s->er, O_CLOEXEC) != 0) return errno;
  if (want_stdin) return pipe2(s->in, O_CLOEXEC) != 0 ? errno : 0;
  s->in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
  return s->in[0] < 0 ? errno : 0;
}

void agent_close_stdio(agent_stdio *s) {
  close_pair(s->in);
  close_pair(s->out);
  close_pair(s->er);
  if (s->master >= 0) close(s->master);
  if (s->slave >= 0) close(s->slave);
}

/* Forks and execs; returns the pid, or -errno (exec failures included: the
 * CLOEXEC pipe stays silent only when exec succeeded). A command gets a
 * session of its own only when asked (a pty's, as envd's pty library makes
 * one): envd starts the others in its own process group. vfork, as envd's
 * Go runtime starts a command (clone with CLONE_VM|CLONE_VFORK): a fork
 * copied the agent's page tables and then took a fault per page either
 * side wrote before the exec threw the copy away, most of a start's cost in
 * a burst. Signals stay blocked in the agent until the child has exec'd. */
pid_t agent_fork_exec(json_t *req, char **argv, char **envp, const agent_stdio *s, int is_pty, int session) {
  const char *cwd = json_string_value(json_object_get(req, "cwd"));
  child_plan p = {argv, envp, is_pty ? s->slave : s->in[0], is_pty ? s->slave : s->out[1],
                  is_pty ? s->slave : s->er[1], -1, is_pty, is_pty || session, NULL,
                  (uid_t)json_integer_value(json_object_get(req, "uid")),
                  (gid_t)json_integer_value(json_object_get(req, "gid"))};
  char *real = cwd && *cwd ? afs_to_real(cwd) : NULL;
  p.cwd = real;
  int ep[2];
  if (pipe2(ep, O_CLOEXEC) != 0) {
    int e = errno;
    free(real);
    return -e;
  }
  p.errfd = ep[1];
  char **own_environ = environ;
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t pid = vfork();
  if (pid == 0) child_exec(&p);
  int err = pid < 0 ? errno : 0;
  environ = own_environ;
  sigprocmask(SIG_SETMASK, &old, NULL);
  free(real);
  close(ep[1]);
  int child_err = 0;
  ssize_t r = 0;
  if (pid > 0) {
    do {
      r = read(ep[0], &child_err, sizeof child_err);
    } while (r < 0 && errno == EINTR);
  }
  close(ep[0]);
  if (err) return -err;
  if (r > 0) {
    waitpid(pid, NULL, 0); /* it exits at once; reaped here, never tracked */
    return -(child_err ? child_err : ENOEXEC);
  }
  return pid;
}

/* sudo (sudo_agent.c): argv as `user`, with the caller's kept environment
 * and the user's identity variables, on the caller's own stdio. */
pid_t agent_run(json_t *req, json_t *argv_json, json_t *env_json, const struct passwd *pw, const int fds[3]) {
  char **argv = agent_str_array(argv_json);
  json_t *env = json_deep_copy(env_json);
  const char *ident[][2] = {{"HOME", pw->pw_dir}, {"USER", pw->pw_name}, {"LOGNAME", pw->pw_name},
                            {"SHELL", pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh"}};
  for (size_t i = 0; i < sizeof ident / sizeof ident[0]; i++)
    json_array_append_new(env, json_sprintf("%s=%s", ident[i][0], ident[i][1]));
  char **envp = agent_str_array(env);
  json_decref(env);
  agent_stdio s = {{fds[0], -1}, {-1, fds[1]}, {-1, fds[2]}, -1, -1};
  pid_t pid = agent_fork_exec(req, argv, envp, &s, 0, 1); /* unchanged: a session of its own */
  agent_free_str_array(argv);
  agent_free_str_array(envp);
  return pid;
}
