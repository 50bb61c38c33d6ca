/* agent_relay.c — a command's stdout and stderr go up to the server on one
 * socket per command (ipc.h, "a command's output") instead of as its two
 * pipes, so the server holds one descriptor per running command, not two
 * (bench/README.md: two put 10,000 commands over its descriptor limit).
 *
 * The agent reads the pipes and sends each read as one packet. A socket
 * with no room keeps that one packet here and stops reading the command's
 * pipes until it drains: a reader that stops reading still stops the
 * command, and one command at a time. Level-triggered, one read per ready
 * pipe per pass, as the server's reader does: a flood takes its turn. */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc.h"
#include "util.h"

#define RELAY_MAX_READY 64

enum { END_OUT, END_ERR, END_SOCK };

typedef struct relay relay;

/* What epoll's data points at: one of a relay's descriptors. */
typedef struct relay_end {
  relay *r;
  int which;
} relay_end;

struct relay {
  int fd[3];     /* stdout pipe, stderr pipe, socket; -1 once closed */
  relay_end end[3];
  size_t chunk;        /* the most one read takes: a packet must fit the socket */
  unsigned char *held; /* a packet the socket had no room for */
  size_t held_len;
  int dead;      /* freed at the end of the pass that ended it */
  relay *next_dead;
};

static int g_ep = -1;
static unsigned char g_packet[1 + IPC_OUT_CHUNK];

int relay_fd(void) {
  if (g_ep < 0) g_ep = epoll_create1(EPOLL_CLOEXEC);
  return g_ep;
}

static int watch(relay *r, int which, uint32_t events, int op) {
  struct epoll_event ev = {.events = events, .data.ptr = &r->end[which]};
  return epoll_ctl(g_ep, op, r->fd[which], &ev);
}

static void close_end(relay *r, int which) {
  if (r->fd[which] < 0) return;
  epoll_ctl(g_ep, EPOLL_CTL_DEL, r->fd[which], NULL);
  close(r->fd[which]);
  r->fd[which] = -1;
}

/* Everything closes; the command's next write to a pipe fails (EPIPE). */
static void end_relay(relay *r, relay **dead) {
  for (int i = 0; i < 3; i++) close_end(r, i);
  free(r->held);
  r->held = NULL;
  r->dead = 1;
  r->next_dead = *dead;
  *dead = r;
}

/* Both streams ended and every byte went up: the socket closes, which is
 * the server's end of the command's output. */
static void end_if_done(relay *r, relay **dead) {
  if (r->fd[END_OUT] < 0 && r->fd[END_ERR] < 0 && !r->held) end_relay(r, dead);
}

/* While a packet is held the pipes leave the epoll set (added back after):
 * a pipe whose writer closed reports a hangup even when asked for no event,
 * and a read then would send bytes before the held ones. */
static void pipes_wait(relay *r, int wait) {
  for (int i = END_OUT; i <= END_ERR; i++) {
    if (r->fd[i] < 0) continue;
    if (wait) {
      epoll_ctl(g_ep, EPOLL_CTL_DEL, r->fd[i], NULL);
    } else if (watch(r, i, EPOLLIN, EPOLL_CTL_ADD) != 0) {
      close(r->fd[i]); /* never read again, it would hold the command forever */
      r->fd[i] = -1;
    }
  }
}

static void send_packet(relay *r, const unsigned char *pkt, size_t len, relay **dead) {
  ssize_t n = send(r->fd[END_SOCK], pkt, len, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n == (ssize_t)len) return;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    r->held = malloc(len);
    if (r->held) {
      memcpy(r->held, pkt, len);
      r->held_len = len;
      pipes_wait(r, 1);
      watch(r, END_SOCK, EPOLLOUT, EPOLL_CTL_MOD);
      return;
    }
  }
  end_relay(r, dead); /* the server let go of the command's output */
}

static void on_pipe(relay *r, int which, relay **dead) {
  if (r->held) return; /* an event from before this pass held a packet */
  ssize_t n = read(r->fd[which], g_packet + 1, r->chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    close_end(r, which);
    end_if_done(r, dead);
    return;
  }
  g_packet[0] = which == END_OUT ? IPC_OUT_STDOUT : IPC_OUT_STDERR;
  send_packet(r, g_packet, (size_t)n + 1, dead);
}

static void on_socket(relay *r, uint32_t events, relay **dead) {
  if (events & (EPOLLHUP | EPOLLERR)) {
    end_relay(r, dead);
    return;
  }
  if (!r->held) return;
  ssize_t n = send(r->fd[END_SOCK], r->held, r->held_len, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n != (ssize_t)r->held_len) {
    end_relay(r, dead);
    return;
  }
  free(r->held);
  r->held = NULL;
  watch(r, END_SOCK, 0, EPOLL_CTL_MOD);
  pipes_wait(r, 0);
  end_if_done(r, dead);
}

void relay_run(void) {
  struct epoll_event evs[RELAY_MAX_READY];
  int n = epoll_wait(g_ep, evs, RELAY_MAX_READY, 0);
  relay *dead = NULL;
  for (int i = 0; i < n; i++) {
    relay_end *e = evs[i].data.ptr;
    if (e->r->dead) continue; /* ended earlier in this pass */
    if (e->which == END_SOCK)
      on_socket(e->r, evs[i].events, &dead);
    else
      on_pipe(e->r, e->which, &dead);
  }
  for (relay *r = dead, *next; r; r = next) {
    next = r->next_dead;
    free(r);
  }
}

/* A packet larger than the socket's send buffer is refused outright
 * (EMSGSIZE), so reads are sized to a quarter of the buffer the host
 * grants, after asking for room for four whole packets. */
static size_t chunk_for(int sock) {
  int want = 4 * (1 + IPC_OUT_CHUNK), got = 0;
  socklen_t len = sizeof got;
  setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &want, sizeof want);
  if (getsockopt(sock, SOL_SOCKET, SO_SNDBUF, &got, &len) != 0 || got / 4 < 512) return 256;
  return (size_t)got / 4 < IPC_OUT_CHUNK ? (size_t)got / 4 : IPC_OUT_CHUNK;
}

int relay_start(int out_fd, int err_fd, int *server_end) {
  int sv[2];
  if (relay_fd() < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return errno;
  relay *r = xcalloc(1, sizeof *r);
  r->chunk = chunk_for(sv[0]);
  r->fd[END_OUT] = out_fd;
  r->fd[END_ERR] = err_fd;
  r->fd[END_SOCK] = sv[0];
  for (int i = 0; i < 3; i++) {
    r->end[i] = (relay_end){r, i};
    if (i != END_SOCK) fcntl(r->fd[i], F_SETFL, O_NONBLOCK);
    if (watch(r, i, i == END_SOCK ? 0 : EPOLLIN, EPOLL_CTL_ADD) != 0) {
      int err = errno;
      for (int j = 0; j < i; j++) epoll_ctl(g_ep, EPOLL_CTL_DEL, r->fd[j], NULL);
      close(sv[0]);
      close(sv[1]);
      free(r);
      return err;
    }
  }
  *server_end = sv[1];
  return 0;
}
