/* netstats.c — per-listener counters and the --latency delay (netstats.h). */
#define _GNU_SOURCE
#include "netstats.h"

#include <gnutls/gnutls.h>
#include <stdint.h>
#include <stdlib.h>
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

void netstats_request(int which, struct MHD_Connection *c) {
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
  return o;
}

json_t *netstats_json(void) { return json_pack("{s:o, s:o}", "http", one(LISTENER_HTTP), "https", one(LISTENER_HTTPS)); }
