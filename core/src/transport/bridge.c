/* bridge.c — the readiness bridge: lets a host loop that cannot watch
 * curl's sockets (nginx from Lua) sleep until one of them is ready. curl's
 * sockets are in the loop's epoll set (events.c), which also holds the
 * loop's wakeup, so a bridge opened mid-transfer knows them all; a watcher
 * thread waits on that set and writes one byte to a unix stream socket the
 * host connected, then waits until the host stepped the loop before it
 * looks again (the sockets are level-triggered: looking again at once would
 * spin). The thread never calls curl and only polls the set (an epoll
 * set is readable while one of its files is ready); only that and an
 * eventfd cross threads. */
#define _GNU_SOURCE /* accept4, struct ucred */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#ifdef __linux__

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define BRIDGE_DIR_MAX 80 /* the socket path must fit sockaddr_un's 108 bytes */

struct e2b_bridge {
  pid_t pid;       /* the process that opened it: a forked child starts over */
  pthread_t thread;
  int ep;          /* the loop's set of curl's sockets (events.c's, not closed here) */
  int ctl;         /* eventfd, owner -> thread: re-armed, new listener, stop */
  atomic_int armed; /* the thread may wake the host (cleared when it did) */
  atomic_int stop;
  atomic_ulong wakes;
  pthread_mutex_t mu; /* guards the pending listener */
  int pending;        /* a listener the thread has not taken yet, or -1 */
  char pending_dir[BRIDGE_DIR_MAX];
  /* The thread's own (the owner touches them only after the join). */
  int listener, conn;
  char dir[BRIDGE_DIR_MAX];
};

/* ---- both threads ---- */

static void remove_dir(char *dir) {
  if (!dir[0]) return;
  char path[BRIDGE_DIR_MAX + 4];
  snprintf(path, sizeof path, "%s/s", dir);
  unlink(path);
  rmdir(dir);
  dir[0] = '\0';
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void signal_ctl(e2b_bridge *b) {
  uint64_t one = 1;
  ssize_t n = write(b->ctl, &one, sizeof one);
  (void)n; /* EAGAIN: the counter is already non-zero, the thread will look */
}

/* ---- the watcher thread ---- */

/* Takes a listener e2b_loop_bridge_open left, replacing the thread's own. */
static void take_pending(e2b_bridge *b) {
  pthread_mutex_lock(&b->mu);
  if (b->pending >= 0) {
    close_fd(&b->listener);
    remove_dir(b->dir);
    b->listener = b->pending;
    memcpy(b->dir, b->pending_dir, sizeof b->dir);
    b->pending = -1;
    b->pending_dir[0] = '\0';
  }
  pthread_mutex_unlock(&b->mu);
}

/* Accepts the host: only a connection from this very process counts (the
 * directory is private already; this also keeps out the owner's children).
 * Once connected, the path is removed: nothing of the bridge stays visible. */
static void accept_host(e2b_bridge *b) {
  int fd = accept4(b->listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) return;
    /* Out of descriptors or memory: the listener would stay ready and the
     * thread spin on it. Drop it; the host sees its connection closed. */
    close_fd(&b->listener);
    remove_dir(b->dir);
    return;
  }
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid != b->pid) {
    close(fd);
    return;
  }
  close_fd(&b->conn);
  b->conn = fd;
  close_fd(&b->listener);
  remove_dir(b->dir);
  atomic_store(&b->armed, 1);
}

/* The host sends nothing the bridge needs; what it sends is dropped. End of
 * stream (the host closed) ends the connection: wait for the next one. */
static void drain_host(e2b_bridge *b) {
  char buf[64];
  for (;;) {
    ssize_t n = recv(b->conn, buf, sizeof buf, 0);
    if (n > 0) continue;
    if (n < 0 && (errno == EINTR)) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close_fd(&b->conn);
    return;
  }
}

/* One of curl's sockets is ready: disarm first (a step re-arms it), then
 * wake the host with one byte. */
static void wake_host(e2b_bridge *b) {
  atomic_store(&b->armed, 0);
  atomic_fetch_add(&b->wakes, 1);
  if (send(b->conn, "w", 1, MSG_NOSIGNAL) < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
      errno != EINTR)
    close_fd(&b->conn);
}

static void *watch(void *arg) {
  e2b_bridge *b = arg;
  while (!atomic_load(&b->stop)) {
    struct pollfd p[4] = {{.fd = b->ctl, .events = POLLIN}};
    int n = 1, il = -1, ic = -1, ie = -1;
    if (b->listener >= 0) p[il = n++] = (struct pollfd){.fd = b->listener, .events = POLLIN};
    if (b->conn >= 0) {
      p[ic = n++] = (struct pollfd){.fd = b->conn, .events = POLLIN};
      if (atomic_load(&b->armed)) p[ie = n++] = (struct pollfd){.fd = b->ep, .events = POLLIN};
    }
    if (poll(p, (nfds_t)n, -1) < 0) {
      if (errno != EINTR) usleep(10000); /* ENOMEM: try again, without spinning */
      continue;
    }
    if (p[0].revents) {
      uint64_t count;
      ssize_t r = read(b->ctl, &count, sizeof count);
      (void)r;
      take_pending(b);
      continue; /* re-read armed and the fds before anything else */
    }
    if (il >= 0 && p[il].revents) accept_host(b);
    if (ic >= 0 && p[ic].revents) drain_host(b);
    if (ie >= 0 && p[ie].revents && b->conn >= 0) wake_host(b);
  }
  return NULL;
}

/* ---- the owner's side ---- */

static int bridge_live(const e2b_bridge *b) { return b && b->pid == getpid(); }

void e2b_bridge_stepped(e2b_loop *loop) {
  e2b_bridge *b = loop->bridge;
  if (b && !atomic_load(&b->armed) && bridge_live(b) && !atomic_exchange(&b->armed, 1))
    signal_ctl(b);
}

unsigned long e2b_bridge_wakes(const e2b_loop *loop) {
  return loop->bridge ? atomic_load(&loop->bridge->wakes) : 0;
}

/* Frees a bridge inherited through fork: its thread is not in this process
 * and its eventfd is shared with the parent, so nothing is
 * signalled, joined or removed; only this process's descriptors close. */
static void abandon(e2b_bridge *b) {
  int fds[] = {b->ctl, b->pending, b->listener, b->conn};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (fds[i] >= 0) close(fds[i]);
  free(b);
}

static void bridge_free(e2b_bridge *b) {
  atomic_store(&b->stop, 1);
  signal_ctl(b);
  pthread_join(b->thread, NULL);
  close_fd(&b->pending);
  remove_dir(b->pending_dir);
  close_fd(&b->listener);
  remove_dir(b->dir);
  close_fd(&b->conn);
  close_fd(&b->ctl);
  pthread_mutex_destroy(&b->mu);
  free(b);
}

void e2b_loop_bridge_close(e2b_loop *loop) {
  e2b_bridge *b = loop->bridge;
  if (!b) return;
  loop->bridge = NULL;
  if (b->pid != getpid())
    abandon(b);
  else
    bridge_free(b);
}

/* The thread blocks every signal: the host's handlers must run on its own
 * thread (nginx sets flags from them that only its own loop looks at). */
static int start_thread(e2b_bridge *b) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&b->thread, NULL, watch, b);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc == 0;
}

static e2b_bridge *bridge_new(e2b_loop *loop, e2b_error *err) {
  e2b_bridge *b = calloc(1, sizeof *b);
  if (!b) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "bridge", "out of memory");
    return NULL;
  }
  b->pid = getpid();
  b->pending = b->listener = b->conn = -1;
  b->ep = e2b_events_fd(loop);
  b->ctl = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (b->ep < 0 || b->ctl < 0 || pthread_mutex_init(&b->mu, NULL) != 0) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "bridge", "epoll or eventfd: %s", strerror(errno));
    abandon(b);
    return NULL;
  }
  if (!start_thread(b)) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "bridge", "cannot start the watcher thread");
    pthread_mutex_destroy(&b->mu);
    abandon(b);
    return NULL;
  }
  return b;
}

/* A fresh private directory (0700) with a listening socket "s" in it. */
static int make_listener(char *dir, e2b_error *err) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !tmp[0] || strlen(tmp) > BRIDGE_DIR_MAX - 24) tmp = "/tmp";
  snprintf(dir, BRIDGE_DIR_MAX, "%s/e2b-bridge.XXXXXX", tmp);
  if (!mkdtemp(dir)) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "bridge", "cannot make a directory in %s: %s", tmp,
                strerror(errno));
    dir[0] = '\0';
    return -1;
  }
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s/s", dir);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "bridge", "cannot listen on %s: %s", a.sun_path,
                strerror(errno));
    if (fd >= 0) close(fd);
    remove_dir(dir);
    return -1;
  }
  return fd;
}

int e2b_loop_bridge_open(e2b_loop *loop, char *path, size_t path_size, e2b_error *err) {
  e2b_error_clear(err);
  if (!path || path_size < E2B_BRIDGE_PATH_SIZE) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "bridge", "path_size must be at least %d",
                E2B_BRIDGE_PATH_SIZE);
    return 0;
  }
  if (loop->bridge && !bridge_live(loop->bridge)) e2b_loop_bridge_close(loop);
  if (!loop->bridge && !(loop->bridge = bridge_new(loop, err))) return 0;
  e2b_bridge *b = loop->bridge;
  char dir[BRIDGE_DIR_MAX];
  int fd = make_listener(dir, err);
  if (fd < 0) return 0;
  pthread_mutex_lock(&b->mu);
  close_fd(&b->pending); /* an earlier path nobody connected to */
  remove_dir(b->pending_dir);
  b->pending = fd;
  memcpy(b->pending_dir, dir, sizeof dir);
  pthread_mutex_unlock(&b->mu);
  signal_ctl(b);
  snprintf(path, path_size, "%s/s", dir);
  return 1;
}

#else /* !__linux__: no epoll; hosts keep polling */

void e2b_bridge_stepped(e2b_loop *loop) { (void)loop; }
unsigned long e2b_bridge_wakes(const e2b_loop *loop) {
  (void)loop;
  return 0;
}
void e2b_loop_bridge_close(e2b_loop *loop) { (void)loop; }
int e2b_loop_bridge_open(e2b_loop *loop, char *path, size_t path_size, e2b_error *err) {
  (void)loop, (void)path, (void)path_size;
  e2b_err_set(err, E2B_ERR_UNSUPPORTED, "bridge", "the readiness bridge needs Linux (epoll)");
  return 0;
}

#endif
