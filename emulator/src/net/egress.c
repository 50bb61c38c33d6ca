/* egress.c — the filtering egress proxy: one epoll loop for every relay,
 * a small resolver pool for host names. */
#define _GNU_SOURCE
#include "egress.h"
#include "egress_tls.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "netpolicy.h"
#include "netrules.h"
#include "reqstream.h"
#include "runtime.h"
#include "sandbox.h"
#include "util.h"

#define HEAD_MAX 16384
#define BUF_SIZE 65536
#define MAX_ADDRS 8
#define MAX_LOCAL 64
/* Caps and timeouts (emulator/README.md, egress). A connection holds up to
 * two descriptors and 144 KiB of buffers. */
#define PER_SANDBOX_CONNS 256          /* one sandbox's open connections */
/* Interception costs the loop thread two TLS handshakes (~7 ms of CPU): one
 * sandbox may start this many a second (this many at once), so a handshake
 * loop cannot take the thread every sandbox's egress runs on. */
#define TLS_PER_S 32
#define TLS_BURST 64
#define MAX_CONNS_CEIL 16384           /* all sandboxes' (else RLIMIT_NOFILE / 4) */
#define MAX_CONNS_FLOOR 64
#define HEADER_TIMEOUT_MS 10000        /* accept -> complete request head */
#define HANDSHAKE_TIMEOUT_MS 10000     /* ClientHello -> both TLS handshakes done */
#define TLS_ROUNDS 8                   /* relay rounds per event: others get their turn */
#define IDLE_TIMEOUT_MS (10 * 60000)   /* a relay with no byte either way */
#define SWEEP_MS 1000
#define RESOLVERS 8
#define RESOLVERS_PER_SANDBOX 2        /* no sandbox's slow names hold them all */

enum { ST_HEAD, ST_RESOLVING, ST_CONNECTING, ST_RELAY, ST_DEAD };

typedef struct pipebuf {
  char *data;
  size_t off, len;
  int eof, shut;
} pipebuf;

struct econn;
typedef struct endp {
  struct econn *c;
  int fd;
  uint32_t ev;
  int registered;
} endp;

typedef struct rjob {
  struct rjob *next;
  struct econn *c; /* touched by the loop thread only; NULL once the connection is gone */
  char sb[24];
  int inside, fd; /* inside: connect on the sandbox's own loopback (fd, or err) */
  char host[256], port[8];
  struct sockaddr_storage addrs[MAX_ADDRS];
  socklen_t lens[MAX_ADDRS];
  int n, err;
} rjob;

/* One sandbox's open connections (loop thread only). */
typedef struct quota {
  struct quota *next;
  char sb[24];
  int n, warned;
  double tls_tokens;    /* interceptions it may start now (TLS_PER_S, TLS_BURST) */
  int64_t tls_refill;   /* when tls_tokens was last topped up (mono ms) */
} quota;

typedef struct econn {
  struct econn *next, *prev; /* in accept order, oldest first */
  char sb[24];
  quota *quota;
  int64_t since, last; /* accepted; last byte relayed (mono ms) */
  endp cl, up;
  int state, is_connect, literal;
  int inside; /* relayed to a server on the sandbox's own loopback */
  char host[256];
  int port;
  char *head; /* the client's bytes not yet parsed (HEAD_MAX) */
  size_t hlen;
  int streamed; /* client bytes go through rs: requests framed and rewritten */
  int in_eof;   /* the client shut its side (streamed) */
  reqstream rs;
  pipebuf c2u, u2c;
  struct sockaddr_storage addrs[MAX_ADDRS];
  socklen_t lens[MAX_ADDRS];
  int naddr, ai;
  rjob *job;
  int sniff;          /* a tunnel with rules, waiting for its first byte: TLS or not */
  etls *tls;          /* intercepted: both sides are TLS (egress_tls.h) */
  int tls_ready;      /* both handshakes done */
  int64_t tls_since;  /* the ClientHello came (mono ms) */
} econn;

enum { C_ACCEPT, C_RECHECK, C_CLOSE_SB, C_RECHECK_ALL };
typedef struct cmd {
  struct cmd *next;
  int type, fd;
  char sb[24];
} cmd;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_rcv = PTHREAD_COND_INITIALIZER;
static int g_ep = -1, g_wake = -1;
static pthread_t g_loop, g_res[RESOLVERS];
static char g_busy[RESOLVERS][24]; /* the sandbox each resolver works for (under g_mu) */
static int g_started, g_stop, g_rstop;
static cmd *g_cmds, **g_cmds_tail = &g_cmds;
static rjob *g_rq, **g_rq_tail = &g_rq, *g_done;
static uint16_t g_ctl_port, g_tls_port; /* e2b-local's own listeners */
static struct sockaddr_storage g_local[MAX_LOCAL];
static int g_nlocal;
static uint16_t g_standin[EGRESS_STANDIN_MAX]; /* host loopback ports marked as the internet */
static int g_nstandin;
/* loop thread only */
static econn *g_conns, *g_conns_tail, *g_dead;
static int g_nconns, g_max_conns = MAX_CONNS_FLOOR, g_per_sandbox = MAX_CONNS_FLOOR;
static quota *g_quotas;

/* No no_proxy: a loopback destination is the sandbox's own first (decide()),
 * so localhost keeps meaning the sandbox for programs using the proxy. */
static const char *const PROXY_ENV[] = {"http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
                                        "HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128",
                                        NULL};
static const char *const PROXY_TLS_ENV[] = {"http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
                                            "HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128",
                                            "NODE_EXTRA_CA_CERTS=" EGRESS_SANDBOX_CA,
                                            "REQUESTS_CA_BUNDLE=" EGRESS_SANDBOX_BUNDLE,
                                            "SSL_CERT_FILE=" EGRESS_SANDBOX_BUNDLE, NULL};
static const char *const NO_ENV[] = {NULL};
static int g_intercept; /* set once, before any sandbox boots */

const char *const *egress_env(void) {
  if (!runtime_isolated()) return NO_ENV;
  return g_intercept ? PROXY_TLS_ENV : PROXY_ENV;
}

static void wake(void) {
  uint64_t one = 1;
  if (write(g_wake, &one, sizeof one) < 0) {
    /* the counter is saturated: the loop is awake anyway */
  }
}

/* ---- epoll interest ---- */

static void set_interest(endp *e, uint32_t want) {
  if (e->fd < 0) return;
  if (want == 0) {
    if (e->registered) epoll_ctl(g_ep, EPOLL_CTL_DEL, e->fd, NULL);
    e->registered = 0;
    e->ev = 0;
    return;
  }
  if (e->registered && e->ev == want) return;
  struct epoll_event ev = {.events = want, .data.ptr = e};
  if (epoll_ctl(g_ep, e->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, e->fd, &ev) == 0) {
    e->registered = 1;
    e->ev = want;
  }
}

/* ---- per-sandbox counts ---- */

/* Tops up a sandbox's interception tokens; 1 when the bucket is full. */
static int tls_refill(quota *q, int64_t now) {
  q->tls_tokens += (double)(now - q->tls_refill) * TLS_PER_S / 1000.0;
  if (q->tls_tokens > TLS_BURST) q->tls_tokens = TLS_BURST;
  q->tls_refill = now;
  return q->tls_tokens >= TLS_BURST;
}

/* Takes one interception token; 0 when the sandbox has used them all. */
static int tls_take(quota *q) {
  tls_refill(q, mono_ms());
  if (q->tls_tokens < 1) return 0;
  q->tls_tokens -= 1;
  return 1;
}

/* A sandbox's entry can go once it holds no connection and its bucket is
 * full again (earlier, a close-and-reconnect loop would reset it). */
static int quota_idle(quota *q, int64_t now) { return q->n <= 0 && tls_refill(q, now); }

static quota *quota_get(const char *sb) {
  int64_t now = mono_ms();
  for (quota **pp = &g_quotas; *pp;) {
    quota *q = *pp;
    if (strcmp(q->sb, sb) == 0) return q;
    if (quota_idle(q, now)) {
      *pp = q->next;
      free(q);
    } else {
      pp = &q->next;
    }
  }
  quota *q = xcalloc(1, sizeof *q);
  snprintf(q->sb, sizeof q->sb, "%s", sb);
  q->tls_tokens = TLS_BURST;
  q->tls_refill = now;
  q->next = g_quotas;
  g_quotas = q;
  return q;
}

/* Forgets a sandbox that holds no connection any more (and may start as
 * many interceptions as a new one). */
static void quota_drop_empty(quota *q) {
  if (!quota_idle(q, mono_ms())) return;
  for (quota **pp = &g_quotas; *pp; pp = &(*pp)->next) {
    if (*pp != q) continue;
    *pp = q->next;
    free(q);
    return;
  }
}

static void quota_release(quota *q) {
  if (!q) return;
  q->n--;
  quota_drop_empty(q);
}

static quota *quota_top(void) {
  quota *top = NULL;
  for (quota *q = g_quotas; q; q = q->next)
    if (!top || q->n > top->n) top = q;
  return top;
}

static void conn_close(econn *c) {
  if (c->state == ST_DEAD) return;
  set_interest(&c->cl, 0);
  set_interest(&c->up, 0);
  etls_free(c->tls);
  c->tls = NULL;
  if (c->cl.fd >= 0) close(c->cl.fd);
  if (c->up.fd >= 0) close(c->up.fd);
  c->cl.fd = c->up.fd = -1;
  if (c->job) c->job->c = NULL;
  c->job = NULL;
  if (c->prev)
    c->prev->next = c->next;
  else
    g_conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  else
    g_conns_tail = c->prev;
  quota_release(c->quota);
  c->quota = NULL;
  c->next = g_dead;
  c->prev = NULL;
  g_dead = c;
  c->state = ST_DEAD;
  g_nconns--;
}

static void free_dead(void) {
  while (g_dead) {
    econn *c = g_dead;
    g_dead = c->next;
    free(c->head);
    free(c->c2u.data);
    free(c->u2c.data);
    free(c);
  }
}

/* A short answer to a client that is waiting for one, then the end. */
static void answer_close(econn *c, const char *status, const char *body) {
  char msg[512];
  int n = snprintf(msg, sizeof msg,
                   "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                   status, strlen(body), body);
  if (n > 0 && send(c->cl.fd, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1, MSG_NOSIGNAL) < 0) {
    /* the client is gone: nothing to tell */
  }
  conn_close(c);
}

/* ---- addresses ---- */

static int sa_port(const struct sockaddr *sa) {
  return sa->sa_family == AF_INET ? ntohs(((const struct sockaddr_in *)sa)->sin_port)
                                  : ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
}

/* Does sa (any port) name this host: loopback, unspecified or an interface address? */
static int is_this_host(const struct sockaddr *sa) {
  struct sockaddr_in v4 = {.sin_family = AF_INET};
  if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a6) || IN6_IS_ADDR_UNSPECIFIED(a6)) return 1;
    if (IN6_IS_ADDR_V4MAPPED(a6)) {
      memcpy(&v4.sin_addr, a6->s6_addr + 12, 4);
      sa = (const struct sockaddr *)&v4;
    }
  }
  if (sa->sa_family == AF_INET) {
    uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
    if ((a >> 24) == 127 || a == 0) return 1;
  }
  int found = 0;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < g_nlocal && !found; i++) {
    const struct sockaddr *l = (const struct sockaddr *)&g_local[i];
    if (l->sa_family != sa->sa_family) continue;
    if (sa->sa_family == AF_INET)
      found = ((const struct sockaddr_in *)l)->sin_addr.s_addr == ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
    else
      found = memcmp(&((const struct sockaddr_in6 *)l)->sin6_addr, &((const struct sockaddr_in6 *)sa)->sin6_addr,
                     sizeof(struct in6_addr)) == 0;
  }
  pthread_mutex_unlock(&g_mu);
  return found;
}

/* e2b-local's own listener: never reachable from a sandbox. */
static int is_control_plane(const struct sockaddr *sa) {
  pthread_mutex_lock(&g_mu);
  uint16_t ctl = g_ctl_port, tls = g_tls_port;
  pthread_mutex_unlock(&g_mu);
  uint16_t port = sa_port(sa);
  return ((ctl && port == ctl) || (tls && port == tls)) && is_this_host(sa);
}

/* Loopback, or the unspecified address, which connects to the loopback. */
static int is_loopback_literal(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET) {
    uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
    return (a >> 24) == 127 || a == 0;
  }
  const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
  if (IN6_IS_ADDR_LOOPBACK(a6) || IN6_IS_ADDR_UNSPECIFIED(a6)) return 1;
  const uint8_t *v4 = a6->s6_addr + 12;
  return IN6_IS_ADDR_V4MAPPED(a6) && (v4[0] == 127 || (!v4[0] && !v4[1] && !v4[2] && !v4[3]));
}

/* A host loopback port the operator marked as standing in for the internet. */
static int is_standin(const struct sockaddr *sa) {
  if (!is_loopback_literal(sa)) return 0;
  uint16_t port = (uint16_t)sa_port(sa);
  int found = 0;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < g_nstandin && !found; i++) found = g_standin[i] == port;
  pthread_mutex_unlock(&g_mu);
  return found;
}

/* name: what the connection asked for (NULL for a literal address). */
static int reachable(const netpolicy *p, const char *name, const struct sockaddr *sa) {
  int where = is_standin(sa) ? NETPOLICY_STANDIN : is_this_host(sa) ? NETPOLICY_THIS_HOST : NETPOLICY_BY_ADDRESS;
  return netpolicy_allows(p, name, sa, where) && !is_control_plane(sa);
}

/* ---- connecting ---- */

static void pump(econn *c);

/* The loop's view of the sandbox's rules (reqstream asks per request head).
 * A relay to the sandbox's own loopback gets none: a rule's headers go only
 * to the upstream it names, never back into the sandbox. */
static void rules_now(void *ctx, const char *host, netrules_set *out) {
  const econn *c = ctx;
  out->h = NULL;
  out->n = 0;
  if (!c->inside) sandbox_egress_headers(c->sb, host, out);
}

/* Plain requests are always framed and rewritten; a tunnel only when the
 * sandbox has rules for its host (then plain HTTP inside it is rewritten,
 * anything else relayed as it is). Otherwise the bytes that came after the
 * CONNECT head go on unchanged. */
static void to_relay(econn *c) {
  c->state = ST_RELAY;
  c->last = mono_ms();
  c->streamed = !c->is_connect;
  if (c->is_connect) {
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    memcpy(c->u2c.data, ok, sizeof ok - 1);
    c->u2c.len = sizeof ok - 1;
    netrules_set set;
    rules_now(c, c->host, &set);
    c->streamed = set.n > 0;
    netrules_set_clear(&set);
    c->sniff = c->streamed && etls_enabled();
  }
  if (c->streamed) {
    reqstream_init(&c->rs, c->host, c->port, c->is_connect, rules_now, c);
  } else {
    memcpy(c->c2u.data, c->head, c->hlen);
    c->c2u.len = c->hlen;
    free(c->head);
    c->head = NULL;
    c->hlen = 0;
  }
  pump(c);
}

/* A relay adds no delay of its own: what arrives in two small writes (a
 * head, then a body) goes on at once, not held by Nagle's algorithm for an
 * ACK the peer delays (40 ms a request on a keep-alive connection). */
static void no_delay(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    /* not TCP (a Unix socket from the sandbox's own loopback): nothing to do */
  }
}

static void start_connect(econn *c) {
  for (; c->ai < c->naddr; c->ai++) {
    const struct sockaddr *sa = (const struct sockaddr *)&c->addrs[c->ai];
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    c->up.fd = fd;
    no_delay(fd);
    if (connect(fd, sa, c->lens[c->ai]) == 0) {
      to_relay(c);
      return;
    }
    if (errno == EINPROGRESS) {
      c->state = ST_CONNECTING;
      c->last = mono_ms();
      set_interest(&c->up, EPOLLOUT);
      return;
    }
    close(fd);
    c->up.fd = -1;
  }
  /* unreachable: closed without an answer, as a direct connection would fail */
  conn_close(c);
}

static void connect_done(econn *c) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(c->up.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err == 0) {
    to_relay(c);
    return;
  }
  set_interest(&c->up, 0);
  close(c->up.fd);
  c->up.fd = -1;
  c->ai++;
  start_connect(c);
}

static void start_resolve(econn *c, int inside);
static void start_literal(econn *c);

static void resolved(rjob *j) {
  econn *c = j->c;
  if (!c) {
    if (j->fd >= 0) close(j->fd);
    return;
  }
  c->job = NULL;
  if (j->inside) {
    if (j->fd >= 0) {
      /* a server on the sandbox's own loopback: not egress, whatever the policy */
      int fl = fcntl(j->fd, F_GETFL);
      if (fl >= 0) fcntl(j->fd, F_SETFL, fl | O_NONBLOCK);
      c->up.fd = j->fd;
      no_delay(j->fd);
      c->inside = 1;
      to_relay(c);
    } else if (c->literal) {
      c->naddr = 1;
      c->ai = 0;
      start_literal(c);
    } else {
      start_resolve(c, 0); /* localhost names: the host's loopback, by policy */
    }
    return;
  }
  netpolicy *p = sandbox_egress_policy(c->sb);
  if (!p) {
    conn_close(c);
    return;
  }
  /* decided again with the policy as it is now: a PUT may have come in between */
  c->naddr = 0;
  for (int i = 0; i < j->n; i++) {
    if (!reachable(p, c->host, (const struct sockaddr *)&j->addrs[i])) continue;
    c->addrs[c->naddr] = j->addrs[i];
    c->lens[c->naddr++] = j->lens[i];
  }
  netpolicy_free(p);
  if (c->naddr == 0) {
    conn_close(c); /* nothing allowed (a drop), or a name that does not resolve */
    return;
  }
  c->ai = 0;
  start_connect(c);
}

/* A literal address: the policy decides, then connect. */
static void start_literal(econn *c) {
  netpolicy *p = sandbox_egress_policy(c->sb);
  int ok = p && reachable(p, NULL, (const struct sockaddr *)&c->addrs[0]);
  netpolicy_free(p);
  if (!ok) {
    conn_close(c);
    return;
  }
  start_connect(c);
}

/* Hands a job to the resolver pool: a connect on the sandbox's own
 * loopback (inside), or a name to resolve. */
static void start_resolve(econn *c, int inside) {
  rjob *j = xcalloc(1, sizeof *j);
  j->c = c;
  j->inside = inside;
  j->fd = -1;
  snprintf(j->sb, sizeof j->sb, "%s", c->sb);
  snprintf(j->host, sizeof j->host, "%s", c->literal || !inside ? c->host : "localhost");
  snprintf(j->port, sizeof j->port, "%d", c->port);
  c->job = j;
  c->state = ST_RESOLVING;
  pthread_mutex_lock(&g_mu);
  *g_rq_tail = j;
  g_rq_tail = &j->next;
  pthread_cond_signal(&g_rcv);
  pthread_mutex_unlock(&g_mu);
}

/* The destination is known: decide, resolve or connect. A loopback
 * destination is first tried on the sandbox's own loopback (its localhost
 * is itself, as in a VM); only when nothing listens there is it egress to
 * the host's loopback, under the policy. */
static void decide(econn *c) {
  set_interest(&c->cl, 0); /* nothing more is read until the relay runs */
  for (char *s = c->host; *s; s++) *s = (char)tolower((unsigned char)*s);
  size_t hn = strlen(c->host);
  if (hn > 1 && c->host[hn - 1] == '.') c->host[hn - 1] = '\0';
  if (c->port == EGRESS_PORT && (netpolicy_is_localhost_name(c->host) || strncmp(c->host, "127.", 4) == 0)) {
    conn_close(c); /* the forwarder itself: no loops */
    return;
  }
  struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
  struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)c->port)};
  if (inet_pton(AF_INET, c->host, &v4.sin_addr) == 1) {
    memcpy(&c->addrs[0], &v4, sizeof v4);
    c->lens[0] = sizeof v4;
    c->literal = 1;
  } else if (inet_pton(AF_INET6, c->host, &v6.sin6_addr) == 1) {
    memcpy(&c->addrs[0], &v6, sizeof v6);
    c->lens[0] = sizeof v6;
    c->literal = 1;
  }
  if (c->literal) {
    c->naddr = 1;
    c->ai = 0;
    if (is_loopback_literal((const struct sockaddr *)&c->addrs[0])) {
      start_resolve(c, 1);
      return;
    }
    start_literal(c);
    return;
  }
  if (netpolicy_is_localhost_name(c->host)) {
    start_resolve(c, 1);
    return;
  }
  /* A name that cannot be allowed is dropped before any DNS query is made on
   * the sandbox's behalf (no leaking through the resolver). */
  netpolicy *p = sandbox_egress_policy(c->sb);
  int could = p && netpolicy_may_resolve(p, c->host);
  netpolicy_free(p);
  if (!could) {
    conn_close(c);
    return;
  }
  start_resolve(c, 0);
}

/* ---- the request head ---- */

/* Reads the destination from the first request line of c->head[0..end)
 * (end: past the head's last CRLF). A CONNECT head is used up (what follows
 * it stays in c->head); a plain request stays whole, for reqstream to
 * rewrite once the upstream is connected. */
static int parse_head(econn *c, size_t end) {
  char *h = c->head;
  char *eol = memmem(h, end, "\r\n", 2);
  /* no NUL in a request line: C strings would cut the host short */
  if (memchr(h, '\0', (size_t)(eol - h))) return -1;
  char *sp1 = memchr(h, ' ', (size_t)(eol - h));
  if (!sp1) return -1;
  char *sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
  if (!sp2 || sp2 - sp1 < 2 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) return -1;
  const char *target = sp1 + 1;
  size_t tlen = (size_t)(sp2 - target);
  if (sp1 - h == 7 && strncmp(h, "CONNECT", 7) == 0) {
    c->is_connect = 1;
    if (reqstream_authority(target, tlen, c->host, sizeof c->host, &c->port, -1) != 0) return -1;
    c->hlen -= end + 2;
    memmove(h, h + end + 2, c->hlen);
  } else {
    if (tlen < 8 || strncasecmp(target, "http://", 7) != 0) return -1;
    const char *auth = target + 7;
    size_t alen = strcspn(auth, "/?# ");
    if (auth + alen > sp2) alen = (size_t)(sp2 - auth);
    if (reqstream_authority(auth, alen, c->host, sizeof c->host, &c->port, 80) != 0) return -1;
  }
  c->c2u.data = xmalloc(BUF_SIZE);
  c->u2c.data = xmalloc(BUF_SIZE);
  return 0;
}

static void read_head(econn *c) {
  ssize_t n = read(c->cl.fd, c->head + c->hlen, HEAD_MAX - c->hlen);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    conn_close(c);
    return;
  }
  size_t from = c->hlen > 3 ? c->hlen - 3 : 0;
  c->hlen += (size_t)n;
  char *e = memmem(c->head + from, c->hlen - from, "\r\n\r\n", 4);
  if (!e) {
    if (c->hlen == HEAD_MAX) answer_close(c, "431 Request Header Fields Too Large", "request head too large\n");
    return;
  }
  if (parse_head(c, (size_t)(e - c->head) + 2) != 0) {
    answer_close(c, "400 Bad Request",
                 "e2b-local egress proxy: send CONNECT host:port or an absolute http:// URL\n");
    return;
  }
  decide(c);
}

/* ---- relaying ---- */

/* Sends what b holds; at its end, the write side of to is shut. */
static int flow_send(int to, pipebuf *b, int *moved) {
  if (b->len > b->off) {
    ssize_t n = send(to, b->data + b->off, b->len - b->off, MSG_NOSIGNAL);
    if (n > 0) {
      b->off += (size_t)n;
      *moved = 1;
      if (b->off == b->len) b->off = b->len = 0;
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return -1;
    }
  }
  if (b->eof && b->len == 0 && !b->shut) {
    shutdown(to, SHUT_WR);
    b->shut = 1;
  }
  return 0;
}

static void compact(pipebuf *b) {
  if (b->off == 0) return;
  memmove(b->data, b->data + b->off, b->len - b->off);
  b->len -= b->off;
  b->off = 0;
}

/* Reads what fits after the len bytes buf holds (cap in all): *moved when
 * bytes came, *eof at the end of the stream. -1 on a socket error. */
static int read_some(int fd, char *buf, size_t *len, size_t cap, int *eof, int *moved) {
  ssize_t n = read(fd, buf + *len, cap - *len);
  if (n > 0) {
    *len += (size_t)n;
    *moved = 1;
  } else if (n == 0)
    *eof = 1;
  else if (errno != EAGAIN && errno != EINTR)
    return -1;
  return 0;
}

/* Moves what it can from one socket to the other; *moved is set when a
 * byte went either way. -1 on a socket error. */
static int flow(int from, int to, pipebuf *b, int *moved) {
  if (!b->eof && b->len < BUF_SIZE) {
    compact(b);
    if (read_some(from, b->data, &b->len, BUF_SIZE, &b->eof, moved) < 0) return -1;
  }
  return flow_send(to, b, moved);
}

/* The client's side of a framed connection: its bytes are read into
 * c->head and go through reqstream into c2u, request by request. A request
 * for another destination ends what is sent upstream (the client sees the
 * connection end after the answers so far and retries elsewhere). */
static int flow_requests(econn *c, int *moved) {
  pipebuf *b = &c->c2u;
  if (!c->in_eof && !b->eof && c->hlen < HEAD_MAX &&
      read_some(c->cl.fd, c->head, &c->hlen, HEAD_MAX, &c->in_eof, moved) < 0)
    return -1;
  /* feed and send until neither moves: room a send made may let a held head through */
  for (;;) {
    size_t before = c->hlen;
    compact(b);
    int rc = reqstream_feed(&c->rs, c->head, &c->hlen, HEAD_MAX, b->data, &b->len, BUF_SIZE);
    if (rc == REQSTREAM_BAD) return -1;
    if (rc == REQSTREAM_END) b->eof = 1;
    size_t pending = b->len - b->off;
    if (flow_send(c->up.fd, b, moved) < 0) return -1;
    if (c->hlen == 0 || (c->hlen == before && b->len - b->off == pending)) break;
  }
  /* the client is done: what is left can never become a whole request */
  if (c->in_eof && !b->eof && (c->hlen == 0 || b->len == 0)) {
    b->eof = 1;
    if (flow_send(c->up.fd, b, moved) < 0) return -1;
  }
  return 0;
}

/* ---- TLS interception (egress_tls.h) ---- */

/* At most one line a second: what a sandbox makes fail must not flood the log. */
static void log_tls(const econn *c, const char *why) {
  static int64_t last;
  int64_t now = mono_ms();
  if (now - last < 1000) return;
  last = now;
  log_msg("sandbox %s: egress TLS to %.100s:%d: %s", c->sb, c->host, c->port, why);
}

/* The tunnel's first client byte decides: a TLS handshake record (0x16)
 * while the upstream has said nothing is intercepted, anything else goes
 * the plain way. 1: wait (or the connection ended), 0: decided. */
static int sniff(econn *c) {
  int moved = 0;
  if (flow_send(c->cl.fd, &c->u2c, &moved) < 0) { /* the 200 first */
    conn_close(c);
    return 1;
  }
  char b;
  ssize_t up = recv(c->up.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  int up_quiet = up < 0 && (errno == EAGAIN || errno == EINTR);
  if (c->hlen == 0 && up_quiet) {
    ssize_t n = read(c->cl.fd, c->head, HEAD_MAX);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      conn_close(c);
      return 1;
    }
    if (n > 0) c->hlen = (size_t)n;
    if (n == 0) c->in_eof = 1;
  }
  if (up_quiet && c->hlen == 0 && !c->in_eof) {
    set_interest(&c->cl, EPOLLIN | (c->u2c.len > c->u2c.off ? EPOLLOUT : 0));
    set_interest(&c->up, EPOLLIN); /* a server that speaks first: not TLS from the client */
    return 1;
  }
  if (!up_quiet || c->hlen == 0 || (unsigned char)c->head[0] != 0x16) {
    c->sniff = 0;
    return 0;
  }
  if (c->u2c.len > c->u2c.off) { /* the 200 not all sent yet: TLS goes after it */
    set_interest(&c->cl, EPOLLOUT);
    set_interest(&c->up, 0);
    return 1;
  }
  char err[256];
  c->sniff = 0;
  if (!tls_take(c->quota)) {
    snprintf(err, sizeof err, "more than %d intercepted TLS handshakes a second: refused", TLS_PER_S);
    log_tls(c, err);
    conn_close(c);
    return 1;
  }
  c->tls = etls_new(c->host, c->cl.fd, c->up.fd, c->head, c->hlen, err, sizeof err);
  if (!c->tls) {
    log_tls(c, err);
    conn_close(c);
    return 1;
  }
  c->hlen = 0;
  c->tls_since = mono_ms();
  return 0;
}

/* Sends what b holds to one TLS side; at its end, that side is told so. */
static int tls_send(econn *c, int side, pipebuf *b, int *moved) {
  if (b->len > b->off) {
    int n = etls_write(c->tls, side, b->data + b->off, b->len - b->off);
    if (n > 0) {
      b->off += (size_t)n;
      *moved = 1;
      if (b->off == b->len) b->off = b->len = 0;
    } else if (n != ETLS_AGAIN) {
      return -1;
    }
  }
  if (b->eof && b->len == 0 && !b->shut) {
    etls_close_notify(c->tls, side);
    shutdown(side == ETLS_CLIENT ? c->cl.fd : c->up.fd, SHUT_WR);
    b->shut = 1;
  }
  return 0;
}

/* The sandbox's decrypted bytes: framed and rewritten as plain requests are. */
static int tls_requests(econn *c, int *moved) {
  pipebuf *b = &c->c2u;
  if (!c->in_eof && !b->eof && c->hlen < HEAD_MAX) {
    int n = etls_read(c->tls, ETLS_CLIENT, c->head + c->hlen, HEAD_MAX - c->hlen);
    if (n > 0) c->hlen += (size_t)n;
    if (n == 0) c->in_eof = 1;
    if (n == -1) return -1;
    if (n >= 0) *moved = 1;
  }
  compact(b);
  size_t hlen = c->hlen, blen = b->len;
  int rc = reqstream_feed(&c->rs, c->head, &c->hlen, HEAD_MAX, b->data, &b->len, BUF_SIZE);
  if (rc == REQSTREAM_BAD) return -1;
  if (rc == REQSTREAM_END) b->eof = 1;
  if (c->hlen != hlen || b->len != blen) *moved = 1;
  /* the client is done: what is left can never become a whole request */
  if (c->in_eof && !b->eof && (c->hlen == 0 || b->len == 0)) b->eof = 1;
  return tls_send(c, ETLS_UPSTREAM, b, moved);
}

static int tls_answers(econn *c, int *moved) {
  pipebuf *b = &c->u2c;
  if (!b->eof && b->len < BUF_SIZE) {
    compact(b);
    int n = etls_read(c->tls, ETLS_UPSTREAM, b->data + b->len, BUF_SIZE - b->len);
    if (n > 0) b->len += (size_t)n;
    if (n == 0) b->eof = 1;
    if (n == -1) return -1;
    if (n >= 0) *moved = 1;
  }
  return tls_send(c, ETLS_CLIENT, b, moved);
}

static void pump_tls(econn *c) {
  if (!c->tls_ready) {
    char err[256];
    int hs = etls_handshake(c->tls, err, sizeof err);
    if (hs < 0) {
      if (err[0]) log_tls(c, err);
      conn_close(c); /* never relayed unverified */
      return;
    }
    if (hs == 0) {
      set_interest(&c->cl, etls_events(c->tls, ETLS_CLIENT));
      set_interest(&c->up, etls_events(c->tls, ETLS_UPSTREAM));
      return;
    }
    c->tls_ready = 1;
    c->last = mono_ms();
  }
  int moved = 1;
  for (int round = 0; moved && round < TLS_ROUNDS; round++) {
    moved = 0;
    if (tls_requests(c, &moved) < 0 || tls_answers(c, &moved) < 0) {
      conn_close(c);
      return;
    }
    if (moved) c->last = mono_ms();
  }
  if (c->c2u.shut && c->u2c.shut) {
    conn_close(c);
    return;
  }
  /* decrypted bytes mbedTLS holds wake no epoll: a writable socket brings the loop back */
  int cl_more = !c->c2u.eof && !c->in_eof && c->hlen < HEAD_MAX;
  int up_more = !c->u2c.eof && c->u2c.len < BUF_SIZE;
  uint32_t cw = cl_more ? EPOLLIN : 0, uw = up_more ? EPOLLIN : 0;
  if (c->u2c.len > c->u2c.off || (moved && cl_more) || (cl_more && etls_pending(c->tls, ETLS_CLIENT))) cw |= EPOLLOUT;
  if (c->c2u.len > c->c2u.off || (moved && up_more) || (up_more && etls_pending(c->tls, ETLS_UPSTREAM))) uw |= EPOLLOUT;
  set_interest(&c->cl, cw);
  set_interest(&c->up, uw);
}

static void pump(econn *c) {
  if (c->sniff && sniff(c) != 0) return;
  if (c->tls) {
    pump_tls(c);
    return;
  }
  int moved = 0;
  int rc = c->streamed ? flow_requests(c, &moved) : flow(c->cl.fd, c->up.fd, &c->c2u, &moved);
  if (rc < 0 || flow(c->up.fd, c->cl.fd, &c->u2c, &moved) < 0) {
    conn_close(c);
    return;
  }
  if (moved) c->last = mono_ms();
  /* both directions ended, or a plain request's answer is complete */
  if ((c->c2u.shut && c->u2c.shut) || (!c->is_connect && c->u2c.shut)) {
    conn_close(c);
    return;
  }
  uint32_t cw = 0, uw = 0;
  if (!c->c2u.eof && (c->streamed ? !c->in_eof && c->hlen < HEAD_MAX : c->c2u.len < BUF_SIZE)) cw |= EPOLLIN;
  if (c->u2c.len > c->u2c.off) cw |= EPOLLOUT;
  if (!c->u2c.eof && c->u2c.len < BUF_SIZE) uw |= EPOLLIN;
  if (c->c2u.len > c->c2u.off) uw |= EPOLLOUT;
  set_interest(&c->cl, cw);
  set_interest(&c->up, uw);
}

static void on_event(endp *e) {
  econn *c = e->c;
  switch (c->state) {
  case ST_HEAD: read_head(c); break;
  case ST_CONNECTING:
    if (e == &c->up) connect_done(c);
    break;
  case ST_RELAY: pump(c); break;
  default: break;
  }
}

/* ---- commands from other threads ---- */

/* The oldest connection of the sandbox holding the most gives way. */
static void evict_oldest(quota *q) {
  for (econn *c = g_conns; c; c = c->next) {
    if (c->quota != q) continue;
    conn_close(c);
    return;
  }
}

/* The caps: a sandbox holds at most g_per_sandbox connections; when all
 * g_max_conns are taken, the sandbox holding the most gives up its oldest
 * for one holding fewer, so one sandbox's load never denies another.
 * Returns the sandbox's count, or NULL: refused. */
static quota *admit(const char *sb) {
  quota *q = quota_get(sb);
  if (q->n >= g_per_sandbox) {
    if (!q->warned) log_msg("sandbox %s: %d egress connections open: more are refused", sb, q->n);
    q->warned = 1;
    return NULL;
  }
  if (g_nconns >= g_max_conns) {
    quota *top = quota_top();
    if (top->n <= q->n + 1) {
      quota_drop_empty(q);
      return NULL;
    }
    evict_oldest(top);
  }
  q->n++;
  return q;
}

static void do_accept(const char *sb, int fd) {
  quota *q = admit(sb);
  int fl = q ? fcntl(fd, F_GETFL) : -1;
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    close(fd);
    if (q) quota_release(q);
    return;
  }
  econn *c = xcalloc(1, sizeof *c);
  snprintf(c->sb, sizeof c->sb, "%s", sb);
  c->quota = q;
  c->since = c->last = mono_ms();
  no_delay(fd);
  c->cl = (endp){c, fd, 0, 0};
  c->up = (endp){c, -1, 0, 0};
  c->head = xmalloc(HEAD_MAX);
  c->state = ST_HEAD;
  c->prev = g_conns_tail;
  if (g_conns_tail)
    g_conns_tail->next = c;
  else
    g_conns = c;
  g_conns_tail = c;
  g_nconns++;
  set_interest(&c->cl, EPOLLIN);
}

/* The timeouts: a request head not complete HEADER_TIMEOUT_MS after the
 * accept (a silent or trickling client), a connect or relay that moved no
 * byte either way for IDLE_TIMEOUT_MS. A name at the resolvers is theirs. */
static void sweep(int64_t now) {
  for (econn *c = g_conns, *next; c; c = next) {
    next = c->next;
    if (c->state == ST_HEAD && now - c->since >= HEADER_TIMEOUT_MS)
      conn_close(c);
    else if (c->tls && !c->tls_ready && now - c->tls_since >= HANDSHAKE_TIMEOUT_MS)
      conn_close(c); /* a stalled or trickled handshake */
    else if ((c->state == ST_RELAY || c->state == ST_CONNECTING) && now - c->last >= IDLE_TIMEOUT_MS)
      conn_close(c);
  }
}

/* Open relays (and connects) the sandbox's current policy no longer allows end. */
static void do_recheck(const char *sb, int close_all) {
  netpolicy *p = close_all ? NULL : sandbox_egress_policy(sb);
  for (econn *c = g_conns, *next; c; c = next) {
    next = c->next;
    if (strcmp(c->sb, sb) != 0) continue;
    if (!p) {
      conn_close(c);
      continue;
    }
    if ((c->state != ST_CONNECTING && c->state != ST_RELAY) || c->inside) continue; /* decided later / not egress */
    if (!reachable(p, c->literal ? NULL : c->host, (const struct sockaddr *)&c->addrs[c->ai])) conn_close(c);
  }
  netpolicy_free(p);
}

/* The stand-ins changed: every sandbox's open relays are decided again. */
static void do_recheck_all(void) {
  for (econn *c = g_conns, *next; c; c = next) {
    next = c->next;
    if ((c->state != ST_CONNECTING && c->state != ST_RELAY) || c->inside) continue;
    netpolicy *p = sandbox_egress_policy(c->sb);
    if (!p || !reachable(p, c->literal ? NULL : c->host, (const struct sockaddr *)&c->addrs[c->ai])) conn_close(c);
    netpolicy_free(p);
  }
}

static int handle_wake(void) {
  uint64_t v;
  if (read(g_wake, &v, sizeof v) < 0) {
    /* nothing pending */
  }
  pthread_mutex_lock(&g_mu);
  cmd *cmds = g_cmds;
  g_cmds = NULL;
  g_cmds_tail = &g_cmds;
  rjob *done = g_done;
  g_done = NULL;
  int stop = g_stop;
  pthread_mutex_unlock(&g_mu);
  while (cmds) {
    cmd *k = cmds;
    cmds = k->next;
    if (k->type == C_ACCEPT)
      do_accept(k->sb, k->fd);
    else if (k->type == C_RECHECK_ALL)
      do_recheck_all();
    else
      do_recheck(k->sb, k->type == C_CLOSE_SB);
    free(k);
  }
  while (done) {
    rjob *j = done;
    done = j->next;
    resolved(j);
    free(j);
  }
  return stop;
}

static void *loop_main(void *arg) {
  (void)arg;
  struct epoll_event evs[64];
  int64_t swept = mono_ms();
  for (;;) {
    int n = epoll_wait(g_ep, evs, 64, SWEEP_MS);
    if (n < 0) {
      if (errno == EINTR) continue;
      log_msg("egress proxy: epoll_wait: %s", strerror(errno));
      break;
    }
    int stop = 0;
    for (int i = 0; i < n; i++) {
      if (!evs[i].data.ptr) {
        stop |= handle_wake();
        continue;
      }
      endp *e = evs[i].data.ptr;
      if (e->c->state != ST_DEAD) on_event(e);
    }
    int64_t now = mono_ms();
    if (now - swept >= SWEEP_MS) {
      sweep(now);
      swept = now;
    }
    free_dead();
    if (stop) break;
  }
  while (g_conns) conn_close(g_conns);
  free_dead();
  return NULL;
}

/* ---- resolvers ---- */

/* The first queued job whose sandbox is not already using its share of the
 * resolvers (under g_mu): a flood of slow names from one sandbox waits
 * behind its own share while other sandboxes' names go ahead. */
static rjob *take_job(void) {
  for (rjob **pp = &g_rq; *pp; pp = &(*pp)->next) {
    int busy = 0;
    for (int i = 0; i < RESOLVERS; i++) busy += strcmp(g_busy[i], (*pp)->sb) == 0;
    if (busy >= RESOLVERS_PER_SANDBOX) continue;
    rjob *j = *pp;
    *pp = j->next;
    if (!*pp) g_rq_tail = pp;
    return j;
  }
  return NULL;
}

/* A name's addresses (at most MAX_ADDRS) into the job. */
static void resolve(rjob *j) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res = NULL;
  if (netpolicy_is_localhost_name(j->host)) {
    /* RFC 6761: the loopback addresses, whatever /etc/hosts says */
    hints.ai_flags |= AI_NUMERICHOST;
    struct addrinfo *v6 = NULL;
    j->err = getaddrinfo("127.0.0.1", j->port, &hints, &res);
    if (!j->err && getaddrinfo("::1", j->port, &hints, &v6) == 0) res->ai_next = v6;
  } else {
    j->err = getaddrinfo(j->host, j->port, &hints, &res);
  }
  for (struct addrinfo *a = res; a && j->n < MAX_ADDRS; a = a->ai_next) {
    if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) || a->ai_addrlen > sizeof j->addrs[0]) continue;
    memcpy(&j->addrs[j->n], a->ai_addr, a->ai_addrlen);
    j->lens[j->n++] = a->ai_addrlen;
  }
  if (res) freeaddrinfo(res);
}

static void *resolver_main(void *arg) {
  int me = (int)(intptr_t)arg;
  pthread_mutex_lock(&g_mu);
  while (!g_rstop) {
    rjob *j = take_job();
    if (!j) {
      pthread_cond_wait(&g_rcv, &g_mu);
      continue;
    }
    snprintf(g_busy[me], sizeof g_busy[me], "%s", j->sb);
    pthread_mutex_unlock(&g_mu);
    if (j->inside) {
      int fd = sandbox_connect_inside(j->sb, j->host, atoi(j->port));
      j->fd = fd >= 0 ? fd : -1;
      j->err = fd >= 0 ? 0 : -fd;
    } else {
      resolve(j);
    }
    pthread_mutex_lock(&g_mu);
    g_busy[me][0] = '\0';
    pthread_cond_broadcast(&g_rcv); /* a job held back for this sandbox may go now */
    j->next = g_done;
    g_done = j;
    wake();
  }
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

/* ---- public ---- */

static void post(int type, const char *sb, int fd) {
  cmd *k = xcalloc(1, sizeof *k);
  k->type = type;
  k->fd = fd;
  snprintf(k->sb, sizeof k->sb, "%s", sb);
  pthread_mutex_lock(&g_mu);
  if (!g_started || g_stop) {
    pthread_mutex_unlock(&g_mu);
    if (fd >= 0) close(fd);
    free(k);
    return;
  }
  *g_cmds_tail = k;
  g_cmds_tail = &k->next;
  wake();
  pthread_mutex_unlock(&g_mu);
}

void egress_accept(const char *id, int fd) { post(C_ACCEPT, id, fd); }
void egress_recheck(const char *id) { post(C_RECHECK, id, -1); }
void egress_close_sandbox(const char *id) { post(C_CLOSE_SB, id, -1); }

/* Egress may hold half the descriptor limit (two per connection): the rest
 * stays with the server's own work. */
static void set_budget(void) {
  struct rlimit rl;
  long n = MAX_CONNS_CEIL;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < (rlim_t)n)
    n = (long)(rl.rlim_cur / 4);
  g_max_conns = n < MAX_CONNS_FLOOR ? MAX_CONNS_FLOOR : (int)n;
  g_per_sandbox = g_max_conns < PER_SANDBOX_CONNS ? g_max_conns : PER_SANDBOX_CONNS;
}

void egress_init(void) {
  if (!runtime_isolated()) return; /* no namespaces, no forwarder: restricted policies are refused */
  set_budget();
  g_ep = epoll_create1(EPOLL_CLOEXEC);
  g_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  if (g_ep < 0 || g_wake < 0 || epoll_ctl(g_ep, EPOLL_CTL_ADD, g_wake, &ev) != 0) abort();
  if (pthread_create(&g_loop, NULL, loop_main, NULL) != 0) abort();
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  for (int i = 0; i < RESOLVERS; i++)
    if (pthread_create(&g_res[i], &attr, resolver_main, (void *)(intptr_t)i) != 0) abort();
  pthread_attr_destroy(&attr);
  pthread_mutex_lock(&g_mu);
  g_started = 1;
  pthread_mutex_unlock(&g_mu);
}

int egress_set_ca(tls_ca *ca, const char *extra_ca_file) {
  if (!runtime_isolated()) return -1; /* no proxy, no rules */
  char err[300] = "";
  if (etls_init(ca, extra_ca_file, err, sizeof err) != 0) {
    log_msg("egress: HTTPS requests will not get network.rules headers: %s", err);
    return -1;
  }
  runtime_set_trust(tls_ca_cert_file(ca), EGRESS_SANDBOX_CA, EGRESS_SANDBOX_BUNDLE);
  g_intercept = 1;
  return 0;
}

void egress_set_standins(const uint16_t *ports, int n) {
  pthread_mutex_lock(&g_mu);
  g_nstandin = 0;
  for (int i = 0; i < n && i < EGRESS_STANDIN_MAX; i++) g_standin[g_nstandin++] = ports[i];
  pthread_mutex_unlock(&g_mu);
  post(C_RECHECK_ALL, "", -1);
}

int egress_standins(uint16_t *ports) {
  pthread_mutex_lock(&g_mu);
  int n = g_nstandin;
  memcpy(ports, g_standin, sizeof g_standin);
  pthread_mutex_unlock(&g_mu);
  return n;
}

void egress_set_tls_port(uint16_t port) {
  pthread_mutex_lock(&g_mu);
  g_tls_port = port;
  pthread_mutex_unlock(&g_mu);
}

void egress_set_control_port(uint16_t port) {
  struct ifaddrs *ifs = NULL;
  pthread_mutex_lock(&g_mu);
  g_ctl_port = port;
  g_nlocal = 0;
  if (getifaddrs(&ifs) == 0) {
    for (struct ifaddrs *i = ifs; i && g_nlocal < MAX_LOCAL; i = i->ifa_next) {
      if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
      size_t len = i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
      memcpy(&g_local[g_nlocal++], i->ifa_addr, len);
    }
    freeifaddrs(ifs);
  }
  pthread_mutex_unlock(&g_mu);
}

/* Frees a list of resolver jobs, closing a connection one still holds. */
static void free_jobs(rjob *j) {
  while (j) {
    rjob *next = j->next;
    if (j->fd >= 0) close(j->fd);
    free(j);
    j = next;
  }
}

void egress_shutdown(void) {
  pthread_mutex_lock(&g_mu);
  int started = g_started;
  g_stop = 1;
  if (started) wake();
  pthread_mutex_unlock(&g_mu);
  if (!started) return;
  pthread_join(g_loop, NULL);
  pthread_mutex_lock(&g_mu);
  g_rstop = 1;
  pthread_cond_broadcast(&g_rcv);
  pthread_mutex_unlock(&g_mu);
  for (int i = 0; i < RESOLVERS; i++) pthread_join(g_res[i], NULL);
  if (g_intercept) etls_shutdown(); /* every connection is closed */
  g_intercept = 0;
  /* whatever was still queued: descriptors closed, memory freed */
  while (g_cmds) {
    cmd *k = g_cmds;
    g_cmds = k->next;
    if (k->fd >= 0) close(k->fd);
    free(k);
  }
  g_cmds_tail = &g_cmds;
  free_jobs(g_rq); /* not taken yet: no descriptor (fd -1) */
  free_jobs(g_done);
  g_rq = g_done = NULL;
  g_rq_tail = &g_rq;
  close(g_ep);
  close(g_wake);
  g_ep = g_wake = -1;
  g_started = 0;
}

const sandbox_listener egress_sandbox_listener = {NULL, egress_accept, egress_recheck, egress_close_sandbox};
