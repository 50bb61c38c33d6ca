/* events.c — what the loop waits on and how it drives curl: curl's sockets
 * in an epoll set that curl's socket callback keeps, and an eventfd for
 * e2b_loop_wakeup. A step acts only on the sockets that are ready
 * (curl_multi_socket_action on each) and on curl's timer when it is due.
 * libcurl 7.88's curl_multi_perform instead looks at every transfer's
 * socket with a poll of its own on each call: with 200 commands at once
 * that was ~8,800 polls a burst, a third of the client's CPU
 * (bench/README.md, burst). Where there is no epoll the loop performs and
 * waits in curl_multi_poll (and has no bridge). The readiness bridge
 * (bridge.c) watches this same set, wakeups included. The socket callback
 * also records every socket, for a forked child, which gets a set of its
 * own. */
#include "internal.h"

#ifdef __linux__

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define EVENTS_PER_ROUND 64

/* Records what curl waits for on fd: the list a forked child's set starts
 * from. */
static void record(e2b_loop *loop, int fd, int what) {
  size_t i = 0;
  while (i < loop->sock_count && loop->socks[i].fd != fd) i++;
  if (what == CURL_POLL_REMOVE) {
    if (i < loop->sock_count) loop->socks[i] = loop->socks[--loop->sock_count];
    return;
  }
  if (i < loop->sock_count) {
    loop->socks[i].what = what;
    return;
  }
  if (loop->sock_count == loop->sock_cap) {
    e2b_sock *s = e2b_grow(loop->socks, &loop->sock_cap, sizeof *s, 16);
    /* Out of memory: a forked child misses this socket until curl changes
     * it; every wait is bounded by the host's deadline. */
    if (s) loop->socks = s;
  }
  if (loop->sock_count < loop->sock_cap) loop->socks[loop->sock_count++] = (e2b_sock){.fd = fd, .what = what};
}

static void ep_set(int ep, int fd, int what) {
  struct epoll_event ev = {.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u),
                           .data.fd = fd};
  /* curl may close a socket and get its number again before it says so;
   * epoll forgets a closed file itself, so both ways round are tried. */
  if (epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev) == 0) return;
  if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST) epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

void e2b_events_watch(e2b_loop *loop, int fd, int what) {
  record(loop, fd, what);
  /* A socket curl has no interest in leaves the set: epoll reports a hang-up
   * whatever it was asked, and a level-triggered one nobody reads is
   * reported on every wait. */
  if (!(what & (CURL_POLL_IN | CURL_POLL_OUT)))
    epoll_ctl(loop->ep, EPOLL_CTL_DEL, fd, NULL);
  else
    ep_set(loop->ep, fd, what);
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
  (void)easy, (void)socketp;
  e2b_events_watch(userp, (int)fd, what);
  return 0;
}

static void close_set(e2b_loop *loop) {
  if (loop->ep >= 0) close(loop->ep);
  if (loop->wake >= 0) close(loop->wake);
  loop->ep = loop->wake = -1;
}

/* 0, with nothing left open, when a descriptor is missing. */
static int open_set(e2b_loop *loop) {
  loop->ep = epoll_create1(EPOLL_CLOEXEC);
  loop->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = loop->wake};
  if (loop->ep < 0 || loop->wake < 0 || epoll_ctl(loop->ep, EPOLL_CTL_ADD, loop->wake, &ev) != 0) {
    close_set(loop);
    return 0;
  }
  for (size_t i = 0; i < loop->sock_count; i++)
    if (loop->socks[i].what & (CURL_POLL_IN | CURL_POLL_OUT)) ep_set(loop->ep, loop->socks[i].fd, loop->socks[i].what);
  loop->pid = getpid();
  return 1;
}

int e2b_events_init(e2b_loop *loop) {
  loop->ep = loop->wake = -1;
  curl_multi_setopt(loop->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(loop->multi, CURLMOPT_SOCKETDATA, loop);
  return open_set(loop);
}

void e2b_events_free(e2b_loop *loop) { close_set(loop); }

/* A forked child shares its parent's epoll set, whose events either process
 * may take: it makes one of its own from the recorded sockets. */
static int own_set(e2b_loop *loop) {
  if (loop->pid == getpid()) return 1;
  close_set(loop);
  return open_set(loop);
}

static int cselect(uint32_t events) {
  int mask = 0;
  if (events & (EPOLLIN | EPOLLHUP)) mask |= CURL_CSELECT_IN;
  if (events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
  if (events & EPOLLERR) mask |= CURL_CSELECT_ERR;
  return mask;
}

int e2b_events_perform(e2b_loop *loop) {
  int acted = 0, running; /* curl's count; the loop counts its own transfers */
  if (!own_set(loop)) {
    /* A forked child out of descriptors: curl looks at every socket itself. */
    curl_multi_perform(loop->multi, &running);
    return 0;
  }
  struct epoll_event ev[EVENTS_PER_ROUND];
  int n = epoll_wait(loop->ep, ev, EVENTS_PER_ROUND, 0);
  for (int i = 0; i < n; i++) {
    int fd = ev[i].data.fd;
    if (fd == loop->wake) {
      uint64_t count;
      ssize_t r = read(loop->wake, &count, sizeof count);
      (void)r;
      continue;
    }
    curl_multi_socket_action(loop->multi, fd, cselect(ev[i].events), &running);
    acted++;
  }
  /* curl's own clock decides when its timer is due: a wait that ended
   * early only finds it not due yet, never loses it. */
  long due = -1;
  if (curl_multi_timeout(loop->multi, &due) == CURLM_OK && due == 0)
    curl_multi_socket_action(loop->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  return acted;
}

int e2b_events_fd(e2b_loop *loop) { return own_set(loop) ? loop->ep : -1; }

void e2b_events_wait(e2b_loop *loop, long timeout_ms) {
  struct epoll_event ev;
  int numfds;
  if (own_set(loop))
    epoll_wait(loop->ep, &ev, 1, (int)timeout_ms);
  else
    curl_multi_poll(loop->multi, NULL, 0, (int)timeout_ms, &numfds); /* as perform falls back */
}

void e2b_events_wakeup(e2b_loop *loop) {
  if (loop->wake < 0) { /* the fallback above waits in curl_multi_poll */
    curl_multi_wakeup(loop->multi);
    return;
  }
  uint64_t one = 1;
  ssize_t n = write(loop->wake, &one, sizeof one);
  (void)n; /* EAGAIN: the counter is already non-zero, the loop will wake */
}

#else /* no epoll: curl_multi_perform and curl_multi_poll */

int e2b_events_init(e2b_loop *loop) {
  (void)loop;
  return 1;
}

void e2b_events_free(e2b_loop *loop) { (void)loop; }

void e2b_events_watch(e2b_loop *loop, int fd, int what) { (void)loop, (void)fd, (void)what; }

int e2b_events_fd(e2b_loop *loop) {
  (void)loop;
  return -1;
}

int e2b_events_perform(e2b_loop *loop) {
  int numfds = 0, running;
  curl_multi_perform(loop->multi, &running);
  if (running) curl_multi_poll(loop->multi, NULL, 0, 0, &numfds);
  return numfds;
}

void e2b_events_wait(e2b_loop *loop, long timeout_ms) {
  int numfds = 0;
  curl_multi_poll(loop->multi, NULL, 0, (int)timeout_ms, &numfds);
}

void e2b_events_wakeup(e2b_loop *loop) { curl_multi_wakeup(loop->multi); }

#endif
