/* netstats.c — per-listener counters and the --latency delay (netstats.h). */
#define _GNU_SOURCE
#include "netstats.h"

#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

typedef struct counters {
  uint64_t connections, open, handshakes, requests;
} counters;

static counters g_stats[2];
static int g_latency_ms;

/* One per connection (MHD's socket context): whether its handshake is
 * counted and how many requests came on it. */
typedef struct conn_ctx {
  int handshake_counted;
  uint64_t requests;
} conn_ctx;

void netstats_set_latency(int ms) { g_latency_ms = ms; }
int netstats_latency(void) { return g_latency_ms; }

static void add(uint64_t *n, int64_t d) { __atomic_add_fetch(n, (uint64_t)d, __ATOMIC_RELAXED); }
static uint64_t get(const uint64_t *n) { return __atomic_load_n(n, __ATOMIC_RELAXED); }

static void sleep_ms(int ms) {
  if (ms <= 0) return;
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* GnuTLS calls this on the connection's own thread when the client's
 * Finished message has arrived: the handshake is complete. Its ClientHello
 * is where --latency's round trips of set-up (TCP, then TLS) are spent. */
static int on_handshake_msg(gnutls_session_t s, unsigned htype, unsigned when, unsigned incoming,
                            const gnutls_datum_t *msg) {
  (void)s;
  (void)when;
  (void)msg;
  if (!incoming) return 0;
  if (htype == GNUTLS_HANDSHAKE_CLIENT_HELLO) sleep_ms(2 * g_latency_ms);
  if (htype == GNUTLS_HANDSHAKE_FINISHED) add(&g_stats[LISTENER_HTTPS].handshakes, 1);
  return 0;
}

static void watch_handshake(struct MHD_Connection *c, conn_ctx *cc) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (!ci || !ci->tls_session) return; /* counted at its first request instead */
  gnutls_handshake_set_hook_function((gnutls_session_t)ci->tls_session, GNUTLS_HANDSHAKE_ANY, GNUTLS_HOOK_POST,
                                     on_handshake_msg);
  cc->handshake_counted = -1; /* -1: the hook counts it */
}

void netstats_connection(int which, struct MHD_Connection *c, void **socket_context,
                         enum MHD_ConnectionNotificationCode code) {
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    conn_ctx *cc = xcalloc(1, sizeof *cc);
    *socket_context = cc;
    add(&g_stats[which].connections, 1);
    add(&g_stats[which].open, 1);
    if (which == LISTENER_HTTPS) watch_handshake(c, cc);
    return;
  }
  if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
    add(&g_stats[which].open, -1);
    free(*socket_context);
    *socket_context = NULL;
  }
}

/* --h2 (h2front.c): the front's clients are counted by the for= token
 * nghttpx draws for each client connection. The most recent FRONT_KEEP
 * connections are remembered (bounded: an older one seen again counts
 * anew); each keeps when its set-up (TCP, then TLS: 2*MS) is over, which
 * every request on it waits for, as each would behind a real handshake. */
enum { FRONT_KEEP = 1024, FRONT_ID = 40 };
typedef struct front_conn {
  char id[FRONT_ID];
  int64_t ready_ms;
} front_conn;
static front_conn g_front[FRONT_KEEP];
static size_t g_front_next;
static int g_front_on;
static pthread_mutex_t g_front_mu = PTHREAD_MUTEX_INITIALIZER;

void netstats_set_front(int on) { g_front_on = on; }

/* The for= token of a Forwarded header nghttpx added over TLS, or 0. */
static int front_token(struct MHD_Connection *c, char id[FRONT_ID]) {
  const char *fwd = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Forwarded");
  const char *f = fwd ? strstr(fwd, "for=") : NULL;
  if (!f || !strstr(fwd, "proto=https")) return 0;
  f += 4;
  size_t n = strcspn(f, ";, ");
  if (n == 0 || n >= FRONT_ID) return 0;
  memcpy(id, f, n);
  id[n] = 0;
  return 1;
}

/* When a request on front connection id may be answered. */
static int64_t front_ready(const char *id) {
  pthread_mutex_lock(&g_front_mu);
  int64_t ready = -1;
  for (size_t i = 0; i < FRONT_KEEP && ready < 0; i++)
    if (strcmp(g_front[i].id, id) == 0) ready = g_front[i].ready_ms;
  if (ready < 0) {
    front_conn *fc = &g_front[g_front_next++ % FRONT_KEEP];
    snprintf(fc->id, sizeof fc->id, "%s", id);
    ready = fc->ready_ms = mono_ms() + 2 * g_latency_ms;
    add(&g_stats[LISTENER_HTTPS].connections, 1);
    add(&g_stats[LISTENER_HTTPS].handshakes, 1);
  }
  pthread_mutex_unlock(&g_front_mu);
  return ready;
}

static int front_request(struct MHD_Connection *c) {
  char id[FRONT_ID];
  if (!g_front_on || !front_token(c, id)) return 0;
  add(&g_stats[LISTENER_HTTPS].requests, 1);
  int64_t wait = front_ready(id) - mono_ms();
  sleep_ms((wait > 0 ? (int)wait : 0) + g_latency_ms);
  return 1;
}

void netstats_request(int which, struct MHD_Connection *c) {
  if (which == LISTENER_HTTP && front_request(c)) return;
  add(&g_stats[which].requests, 1);
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  conn_ctx *cc = ci ? ci->socket_context : NULL;
  int first = cc && cc->requests++ == 0;
  int setup = 0;
  if (first && which == LISTENER_HTTP) setup = g_latency_ms; /* the TCP connect's round trip */
  if (first && which == LISTENER_HTTPS && cc->handshake_counted == 0) {
    /* no handshake hook: the handshake is over once a request arrives */
    cc->handshake_counted = 1;
    add(&g_stats[LISTENER_HTTPS].handshakes, 1);
    setup = 2 * g_latency_ms;
  }
  sleep_ms(setup + g_latency_ms);
}

static json_t *one(int which) {
  const counters *s = &g_stats[which];
  json_t *o = json_pack("{s:I, s:I, s:I, s:i}", "connections", (json_int_t)get(&s->connections), "open",
                        (json_int_t)get(&s->open), "requests", (json_int_t)get(&s->requests), "latency_ms",
                        g_latency_ms);
  if (which == LISTENER_HTTPS) json_object_set_new(o, "tls_handshakes", json_integer((json_int_t)get(&s->handshakes)));
  if (which == LISTENER_HTTPS && g_front_on) json_object_set_new(o, "front", json_string("nghttpx"));
  return o;
}

json_t *netstats_json(void) { return json_pack("{s:o, s:o}", "http", one(LISTENER_HTTP), "https", one(LISTENER_HTTPS)); }
