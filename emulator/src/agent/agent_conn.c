/* agent_conn.c — IPC_CONNECT: a TCP connection to a loopback address made
 * in the sandbox's network namespace (the port proxy's and the egress
 * proxy's way in). A loopback connect blocks while the listener's backlog
 * is full, and the sandbox decides whether it is, so the agent never waits
 * for one: the connect is non-blocking, and one still in progress waits in a
 * bounded table until it completes or AC_TIMEOUT_MS pass; its reply is sent
 * then. */
#define _GNU_SOURCE
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc.h"
#include "util.h"

#define AC_PENDING 32
#define AC_TIMEOUT_MS 10000

static struct {
  int fd; /* -1: free */
  uint32_t id;
  int port;
  int next_v6; /* "localhost": ::1 is tried after 127.0.0.1 */
  int64_t due_ms;
} g_ac[AC_PENDING];
static int g_ac_init;

static void ac_init(void) {
  if (g_ac_init) return;
  for (int i = 0; i < AC_PENDING; i++) g_ac[i].fd = -1;
  g_ac_init = 1;
}

static void reply(int sock, uint32_t id, int err, int fd) {
  json_t *out = err ? json_pack("{s:s}", "message", strerror(err)) : json_object();
  if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); /* as a blocking connect made it */
  ipc_send(sock, IPC_REPLY, id, err, out, &fd, fd >= 0 ? 1 : 0);
  json_decref(out);
  if (fd >= 0) close(fd);
}

/* Starts a non-blocking connect to addr:port: the socket (connected or in
 * progress) or -errno. */
static int start(const char *addr, int port) {
  struct sockaddr_storage ss = {0};
  socklen_t len;
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    len = sizeof *v6;
  } else {
    return -EINVAL;
  }
  int s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return -errno;
  if (connect(s, (struct sockaddr *)&ss, len) == 0 || errno == EINPROGRESS) return s;
  int err = errno;
  close(s);
  return -err;
}

/* Settles a connect that finished (err 0) or failed: the reply, or the next
 * address to try. Returns 1 when slot i still waits. */
static int settle(int i, int err, int sock) {
  int fd = g_ac[i].fd;
  g_ac[i].fd = -1;
  if (!err) {
    reply(sock, g_ac[i].id, 0, fd);
    return 0;
  }
  close(fd);
  if (g_ac[i].next_v6) {
    g_ac[i].next_v6 = 0;
    int s = start("::1", g_ac[i].port);
    if (s >= 0) {
      g_ac[i].fd = s;
      return 1;
    }
    err = -s;
  }
  reply(sock, g_ac[i].id, err, -1);
  return 0;
}

static int free_slot(void) {
  for (int i = 0; i < AC_PENDING; i++)
    if (g_ac[i].fd < 0) return i;
  return -1;
}

void aconn_begin(uint32_t id, json_t *req, int sock) {
  ac_init();
  int port = (int)json_integer_value(json_object_get(req, "port"));
  const char *host = json_string_value(json_object_get(req, "host"));
  int localhost = host && strcmp(host, "localhost") == 0;
  int slot = free_slot();
  int s = port <= 0 || port > 65535 ? -EINVAL
          : slot < 0                 ? -EAGAIN /* the sandbox's own loopback is saturated */
                                     : start(localhost || !host ? "127.0.0.1" : host, port);
  int v6_next = localhost;
  if (s < 0 && localhost && s != -EAGAIN && s != -EINVAL) { /* 127.0.0.1 failed at once */
    s = start("::1", port);
    v6_next = 0;
  }
  if (s < 0) {
    reply(sock, id, -s, -1);
    return;
  }
  g_ac[slot].next_v6 = v6_next;
  g_ac[slot].id = id;
  g_ac[slot].port = port;
  g_ac[slot].due_ms = mono_ms() + AC_TIMEOUT_MS;
  g_ac[slot].fd = s;
}

int aconn_fds(struct pollfd *p, int max, int *timeout_ms) {
  ac_init();
  int n = 0;
  int64_t now = mono_ms();
  for (int i = 0; i < AC_PENDING && n < max; i++) {
    if (g_ac[i].fd < 0) continue;
    p[n++] = (struct pollfd){g_ac[i].fd, POLLOUT, 0};
    int64_t left = g_ac[i].due_ms > now ? g_ac[i].due_ms - now : 0;
    if (*timeout_ms < 0 || left < *timeout_ms) *timeout_ms = (int)left;
  }
  return n;
}

void aconn_run(const struct pollfd *p, int n, int sock) {
  ac_init();
  int64_t now = mono_ms();
  for (int i = 0; i < AC_PENDING; i++) {
    if (g_ac[i].fd < 0) continue;
    int ready = 0;
    for (int k = 0; k < n; k++)
      if (p[k].fd == g_ac[i].fd) ready = p[k].revents != 0;
    if (!ready) {
      if (g_ac[i].due_ms <= now) settle(i, ETIMEDOUT, sock);
      continue;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(g_ac[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    settle(i, err, sock);
  }
}
