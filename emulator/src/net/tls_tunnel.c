/* tls_tunnel.c — relay an upgraded port connection over its GnuTLS session
 * (why: tls_tunnel.h). Both descriptors non-blocking, one bounded buffer
 * per direction, so neither direction ever waits on the other. */
#define _GNU_SOURCE
#include "tls_tunnel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#define TUNNEL_BUF (64 * 1024)
#define RECORD_MAX 16384 /* one TLS record's plaintext */

typedef struct dir {
  char *buf;
  size_t off, len;
  int eof; /* the source ended */
} dir;

typedef struct tunnel {
  gnutls_session_t s;
  int fd, up;
  dir c2u, u2c; /* client -> upstream, upstream -> client */
  int failed;
} tunnel;

void *tls_tunnel_session(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  return ci ? ci->tls_session : NULL;
}

static void set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && !(fl & O_NONBLOCK)) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int again(ssize_t n) { return n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED; }

/* A direction reads more only once its buffer is empty, until its source ends. */
static int wants_input(const dir *d) { return !d->eof && !d->len; }

/* What a read put in d's empty buffer: n bytes, or none: its source ended. */
static void took(dir *d, size_t n) {
  d->off = 0;
  d->len = n;
  if (!n) d->eof = 1;
}

/* Client plaintext in, while its buffer is empty: GnuTLS may hold decrypted
 * bytes the socket no longer shows, so this runs without waiting on poll. */
static void client_in(tunnel *t) {
  if (!wants_input(&t->c2u)) return;
  ssize_t n = gnutls_record_recv(t->s, t->c2u.buf, TUNNEL_BUF);
  if (n >= 0)
    took(&t->c2u, (size_t)n); /* 0: close_notify, the client sends no more (it may still read) */
  else if (!again(n))
    t->failed = 1; /* cut without close_notify (as at the daemon's stop), or a TLS error */
}

static void upstream_out(tunnel *t) {
  while (t->c2u.len) {
    ssize_t n = write(t->up, t->c2u.buf + t->c2u.off, t->c2u.len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      t->failed = 1;
      return;
    }
    t->c2u.off += (size_t)n;
    t->c2u.len -= (size_t)n;
  }
  if (t->c2u.eof == 1) {
    shutdown(t->up, SHUT_WR); /* pass the client's end on, once */
    t->c2u.eof = 2;
  }
}

static void upstream_in(tunnel *t) {
  if (!wants_input(&t->u2c)) return;
  ssize_t n = read(t->up, t->u2c.buf, TUNNEL_BUF);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  took(&t->u2c, n > 0 ? (size_t)n : 0); /* none: the upstream ended, or failed */
}

/* After GNUTLS_E_AGAIN the same record is offered again: off and len only
 * move on success, and the buffer is refilled only once empty. */
static int client_out(tunnel *t) {
  while (t->u2c.len) {
    size_t n = t->u2c.len < RECORD_MAX ? t->u2c.len : RECORD_MAX;
    ssize_t w = gnutls_record_send(t->s, t->u2c.buf + t->u2c.off, n);
    if (again(w)) return 1; /* wait for POLLOUT */
    if (w <= 0) {
      t->failed = 1;
      return 0;
    }
    t->u2c.off += (size_t)w;
    t->u2c.len -= (size_t)w;
  }
  return 0;
}

static int send_all(tunnel *t, const char *data, size_t len) {
  t->u2c.buf = (char *)data;
  t->u2c.off = 0;
  t->u2c.len = len;
  while (client_out(t)) {
    struct pollfd pf = {t->fd, POLLOUT, 0};
    if (poll(&pf, 1, -1) < 0 && errno != EINTR) return -1;
  }
  t->u2c.buf = NULL;
  return t->failed ? -1 : 0;
}

static void relay(tunnel *t) {
  for (;;) {
    client_in(t);
    upstream_out(t);
    upstream_in(t);
    int blocked = client_out(t);
    if (t->failed || (t->u2c.eof && !t->u2c.len)) return; /* the service ended: so does the tunnel */
    struct pollfd pf[2] = {{t->fd, 0, 0}, {t->up, 0, 0}};
    if (wants_input(&t->c2u)) pf[0].events |= POLLIN;
    if (blocked) pf[0].events |= POLLOUT;
    if (wants_input(&t->u2c)) pf[1].events |= POLLIN;
    if (t->c2u.len) pf[1].events |= POLLOUT;
    for (int i = 0; i < 2; i++)
      if (!pf[i].events) pf[i].fd = -1; /* else a hang-up nobody waits for would spin the loop */
    int ready_now = wants_input(&t->c2u) && gnutls_record_check_pending(t->s) > 0;
    if (poll(pf, 2, ready_now ? 0 : -1) < 0 && errno != EINTR) return;
  }
}

void tls_tunnel_run(struct MHD_Connection *conn, const char *head, size_t headlen, int upstream, const char *pending,
                    size_t npending) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  tunnel t = {.s = tls_tunnel_session(conn), .fd = ci ? ci->connect_fd : -1, .up = upstream};
  if (t.s && t.fd >= 0) {
    set_nonblock(t.fd);
    set_nonblock(upstream);
    if (send_all(&t, head, headlen) == 0 && send_all(&t, pending, npending) == 0) {
      t.c2u.buf = malloc(TUNNEL_BUF);
      t.u2c.buf = malloc(TUNNEL_BUF);
      if (t.c2u.buf && t.u2c.buf) relay(&t);
      if (!t.failed) gnutls_bye(t.s, GNUTLS_SHUT_WR); /* best effort: the connection is dropped next */
      free(t.c2u.buf);
      free(t.u2c.buf);
    }
  }
  close(upstream);
}
