/* sudo_agent.c — the agent's side of sudo (sudo.h): a request from a
 * process in the sandbox (its command, environment, directory and stdio) is
 * run as the user it names, and the requester gets the exit status. The
 * agent is single-threaded, so it never waits on a requester: connections
 * are accepted non-blocking and wait in a bounded table (SUDO_PENDING) until
 * their request arrives (read once, whole: a SOCK_SEQPACKET message) or
 * their second is up; the oldest gives way when the table is full. Reads are
 * bounded in size, sessions in number. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <poll.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "sudo.h"
#include "util.h"

#define SUDO_SESSIONS 64

static struct {
  pid_t pid;
  int conn; /* the requester, told the status at the end */
} g_sessions[SUDO_SESSIONS];

/* Accepted connections whose request has not arrived yet. */
static struct {
  int conn; /* 0: free (descriptor 0 is never a connection: /dev/null) */
  int64_t due_ms;
} g_pending[SUDO_PENDING];

int sudo_listen(void) {
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path + 1, SUDO_SOCKET, sizeof SUDO_SOCKET - 1);
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + sizeof SUDO_SOCKET - 1);
  if (s < 0 || bind(s, (struct sockaddr *)&sa, len) != 0 || listen(s, 16) != 0) {
    log_msg("sudo unavailable: cannot listen: %s", strerror(errno));
    if (s >= 0) close(s);
    return -1;
  }
  return s;
}

static void answer(int conn, const char *fmt, const char *a, const char *b) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a, b);
  if (send(conn, msg, strlen(msg), MSG_NOSIGNAL) < 0) { /* the requester is gone */
  }
}

/* One request: JSON and exactly three descriptors (its stdin, stdout,
 * stderr). Returns the body, or NULL (fds then closed). */
static json_t *receive(int conn, int fds[3]) {
  char *buf = xcalloc(1, SUDO_REQUEST_MAX + 1);
  char ctl[CMSG_SPACE(3 * sizeof(int))];
  struct iovec iov = {buf, SUDO_REQUEST_MAX};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  ssize_t n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
  int got = 0;
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
    got = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    memcpy(fds, CMSG_DATA(c), (size_t)(got < 3 ? got : 3) * sizeof(int));
  }
  json_t *req = n > 0 && got == 3 && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
                    ? json_loadb(buf, (size_t)n, 0, NULL) : NULL;
  free(buf);
  if (!json_is_object(req)) {
    for (int i = 0; i < got && i < 3; i++) close(fds[i]);
    json_decref(req);
    return NULL;
  }
  return req;
}

static int strings_ok(json_t *a) {
  if (!json_is_array(a)) return 0;
  for (size_t i = 0; i < json_array_size(a); i++)
    if (!json_is_string(json_array_get(a, i))) return 0;
  return 1;
}

static int free_slot(void) {
  for (int i = 0; i < SUDO_SESSIONS; i++)
    if (!g_sessions[i].pid) return i;
  return -1;
}

/* Runs one request; the session holds conn until the command ends. */
static void serve(int conn) {
  int fds[3] = {-1, -1, -1};
  json_t *req = receive(conn, fds);
  if (!req) return (void)close(conn);
  json_t *argv = json_object_get(req, "argv"), *env = json_object_get(req, "env");
  const char *user = json_string_value(json_object_get(req, "user"));
  struct passwd *pw = user ? getpwnam(user) : NULL;
  int slot = free_slot();
  pid_t pid = 0;
  if (!strings_ok(argv) || !json_array_size(argv) || !strings_ok(env)) {
    answer(conn, "malformed request%s%s", "", "");
  } else if (!pw) {
    answer(conn, "unknown user %s%s", user ? user : "(none)", "");
  } else if (slot < 0) {
    answer(conn, "too many sudo sessions at once%s%s", "", "");
  } else {
    /* -i: a login shell in the user's home, as sudo does */
    json_t *cwd = json_is_true(json_object_get(req, "login")) ? json_string(pw->pw_dir)
                                                               : json_incref(json_object_get(req, "cwd"));
    json_t *run = json_pack("{s:o*, s:i, s:i}", "cwd", cwd, "uid", (int)pw->pw_uid, "gid", (int)pw->pw_gid);
    pid = agent_run(run, argv, env, pw, fds);
    json_decref(run);
    const char *cmd = json_string_value(json_array_get(argv, 0));
    if (pid == -ENOENT) answer(conn, "%s: command not found%s", cmd, "");
    else if (pid < 0) answer(conn, "%s: %s", cmd, strerror((int)-pid));
  }
  for (int i = 0; i < 3; i++) close(fds[i]);
  json_decref(req);
  if (pid <= 0) return (void)close(conn);
  g_sessions[slot].pid = pid;
  g_sessions[slot].conn = conn;
}

/* A new connection waits for its request; a full table drops its oldest. */
static void park(int conn) {
  int slot = 0;
  for (int i = 0; i < SUDO_PENDING; i++) {
    if (!g_pending[i].conn) {
      slot = i;
      break;
    }
    if (g_pending[i].due_ms < g_pending[slot].due_ms) slot = i;
  }
  if (g_pending[slot].conn) close(g_pending[slot].conn);
  g_pending[slot].conn = conn;
  g_pending[slot].due_ms = mono_ms() + SUDO_REQUEST_MS;
}

void sudo_accept_all(int ls) {
  int conn;
  for (int i = 0; i < SUDO_PENDING && (conn = accept4(ls, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0; i++)
    park(conn);
}

int sudo_pending_fds(struct pollfd *p, int max, int *timeout_ms) {
  int n = 0;
  int64_t now = mono_ms();
  for (int i = 0; i < SUDO_PENDING && n < max; i++) {
    if (!g_pending[i].conn) continue;
    p[n++] = (struct pollfd){g_pending[i].conn, POLLIN, 0};
    int64_t left = g_pending[i].due_ms > now ? g_pending[i].due_ms - now : 0;
    if (*timeout_ms < 0 || left < *timeout_ms) *timeout_ms = (int)left;
  }
  return n;
}

void sudo_pending_run(const struct pollfd *p, int n) {
  int64_t now = mono_ms();
  for (int i = 0; i < SUDO_PENDING; i++) {
    int conn = g_pending[i].conn, ready = 0;
    if (!conn) continue;
    for (int k = 0; k < n; k++)
      if (p[k].fd == conn) ready = p[k].revents != 0;
    if (!ready && g_pending[i].due_ms > now) continue;
    g_pending[i].conn = 0;
    if (ready)
      serve(conn); /* its one message is there (or it hung up: refused) */
    else
      close(conn); /* a requester that says nothing is not waited for */
  }
}

int sudo_reaped(pid_t pid, int status) {
  for (int i = 0; i < SUDO_SESSIONS; i++) {
    if (g_sessions[i].pid != pid) continue;
    char msg[32];
    snprintf(msg, sizeof msg, "status %d", status);
    if (send(g_sessions[i].conn, msg, strlen(msg), MSG_NOSIGNAL) < 0) { /* the requester is gone */
    }
    close(g_sessions[i].conn);
    g_sessions[i].pid = 0;
    return 1;
  }
  return 0;
}
