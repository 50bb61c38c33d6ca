/* server.c — libmicrohttpd daemon, request lifecycle and top-level routing. */
#define _GNU_SOURCE
#include "pjson.h"
#include "server.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "codec.h"
#include "envd.h"
#include "faults.h"
#include "ports.h"
#include "log.h"
#include "netstats.h"
#include "sandbox.h"
#include "selfconn.h"

struct server {
  struct MHD_Daemon *d;
  uint16_t port;
};

#define ENVD_PORT 49983
#define DISCARD_LIMIT ((size_t)64 << 20) /* oversized bodies read and dropped */
#define DRAIN_LIMIT ((size_t)1 << 30)    /* ... when chunked (their size is not told) */

/* "<port>-<sandboxID>[-...].<anything>[:p]" -> port and id (E2B's edge reads
 * the host's first label so, ignoring any further dash-separated part). */
static int parse_sandbox_host(const char *host, long *port, char *id, size_t idcap) {
  if (!host || !isdigit((unsigned char)host[0])) return 0;
  char *end;
  long p = strtol(host, &end, 10);
  if (*end != '-') return 0;
  const char *s = end + 1;
  size_t n = strcspn(s, ".:-"), label = strcspn(s, ".:");
  if (n >= idcap || s[label] != '.') return 0;
  memcpy(id, s, n);
  id[n] = '\0';
  *port = p;
  return 1;
}

/* The edge takes only a plain sandbox id, and answers 400 to anything else. */
static int plain_sandbox_id(const char *id) {
  size_t n = e2b_sandbox_id_len(id);
  return n && id[n] == '\0';
}

/* "sandbox.<domain>": E2B's edge routes requests there only by the
 * E2b-Sandbox-Id header; without it they are refused (400). */
static int is_shared_sandbox_host(const char *host) {
  return host && strncasecmp(host, "sandbox.", 8) == 0 && host[8] && host[8] != ':';
}

/* An address or "localhost" (with any port): what E2B_SANDBOX_URL names.
 * Such a URL stands for a direct line to one envd, so a signed /files URL
 * on it finds its sandbox by the signature. Any other name goes through
 * E2B's edge, which routes only by the sandbox's own host. */
static int is_address_host(const char *host) {
  if (!host) return 0;
  if (*host == '[') return 1; /* an IPv6 literal */
  size_t n = strcspn(host, ":");
  if (n == 9 && strncasecmp(host, "localhost", 9) == 0) return 1;
  return n > 0 && strspn(host, "0123456789.") == n;
}

/* Where a request goes, decided from its headers only (no side effects, so
 * an injected fault can stop it before anything happens). */
typedef enum { RK_CONTROL, RK_ENVD, RK_PORT, RK_ADMIN, RK_BAD_SIGNATURE, RK_BAD_HOST, RK_BAD_ID } route_kind;

typedef struct route_to {
  route_kind kind;
  char id[64];
  long port;
} route_to;

static void classify(http_req *r, route_to *to) {
  const char *sid = http_header(r->conn, "E2b-Sandbox-Id");
  to->kind = RK_CONTROL;
  if (sid && *sid) {
    to->kind = RK_ENVD;
    snprintf(to->id, sizeof to->id, "%s", sid);
  } else if (parse_sandbox_host(http_header(r->conn, "Host"), &to->port, to->id, sizeof to->id)) {
    to->kind = to->port == ENVD_PORT ? RK_ENVD : RK_PORT;
  } else if (is_shared_sandbox_host(http_header(r->conn, "Host"))) {
    to->kind = RK_BAD_HOST;
  } else if (strcmp(r->url, "/files") == 0 && http_query(r->conn, "signature") &&
             is_address_host(http_header(r->conn, "Host"))) {
    char *owned = files_sandbox_by_signature(r->conn, r->method);
    to->kind = owned ? RK_ENVD : RK_BAD_SIGNATURE;
    if (owned) snprintf(to->id, sizeof to->id, "%s", owned);
    free(owned);
  } else if (strncmp(r->url, "/_e2b_local/", 12) == 0) {
    to->kind = RK_ADMIN;
  }
  if ((to->kind == RK_ENVD || to->kind == RK_PORT) && !plain_sandbox_id(to->id)) to->kind = RK_BAD_ID;
}

static void dispatch(http_req *r, const route_to *to) {
  switch (to->kind) {
  case RK_ENVD: envd_route(r, to->id); break;
  case RK_PORT: port_route(r, to->id, to->port); break;
  case RK_ADMIN: admin_route(r); break;
  case RK_BAD_SIGNATURE:
    r->early_status = 401;
    snprintf(r->early_msg, sizeof r->early_msg, "invalid signature");
    break;
  case RK_BAD_HOST:
  case RK_BAD_ID:
    r->early_status = 400;
    snprintf(r->early_msg, sizeof r->early_msg, "%s", to->kind == RK_BAD_HOST ? "Invalid host" : "Invalid sandbox ID");
    break;
  default: control_route(r); break;
  }
}

static int is_connect_path(const char *url) {
  return strncmp(url, "/process.Process/", 17) == 0 || strncmp(url, "/filesystem.Filesystem/", 23) == 0;
}

/* The injected status, in the shape of whoever answers it on E2B. */
static enum MHD_Result fault_respond(http_req *r) {
  int st = r->fault.status;
  json_t *body;
  if (r->fault_shape == FAULT_EDGE) {
    body = json_pack("{s:s, s:s, s:i, s:i}", "sandboxId", r->fault_sandbox, "message",
                     "injected fault: too many concurrent incoming connections", "code", st,
                     "connectionLimit", 0);
  } else if (r->fault_shape == FAULT_CONNECT) {
    const char *code = connect_code_for_status(st);
    body = json_pack("{s:s, s:s}", "code", code, "message", "injected fault");
  } else {
    body = json_pack("{s:i, s:s}", "code", st, "message", "injected fault");
  }
  char ra[24];
  snprintf(ra, sizeof ra, "%d", r->fault.retry_after_s);
  return http_json_hdr(r->conn, (unsigned)st, body, r->fault.retry_after_s >= 0 ? "Retry-After" : NULL, ra);
}

/* An answer decided before the body; the edge's "not found" names its
 * sandbox as E2B's proxy does ({"sandboxId", "message", "code"}). */
static enum MHD_Result early_respond(http_req *r) {
  unsigned st = (unsigned)r->early_status;
  if (r->early_code)
    return http_json(r->conn, st, json_pack("{s:s, s:o}", "code", r->early_code, "message", pj_text(r->early_msg)));
  if (!r->early_sandbox[0]) return http_error(r->conn, st, "%s", r->early_msg);
  json_t *body = json_pack("{s:o, s:o, s:i}", "sandboxId", pj_text(r->early_sandbox), "message",
                           pj_text(r->early_msg), "code", (int)st);
  return http_json(r->conn, st, body);
}

/* E2B's edge refuses a sandbox's envd traffic with 429 before envd sees it. */
static int fault_shape(const http_req *r, const route_to *to, int status) {
  if (to->kind != RK_ENVD) return FAULT_API;
  if (status == 429) return FAULT_EDGE;
  return is_connect_path(r->url) ? FAULT_CONNECT : FAULT_API;
}

/* Returns 0 to go on, or 1 when the connection must be dropped now. */
static int apply_faults(http_req *r, const route_to *to) {
  if (to->kind == RK_ADMIN || to->kind == RK_PORT) return 0;
  char path[1100];
  snprintf(path, sizeof path, "%s%s", to->kind == RK_ENVD ? "envd:" : "", r->url);
  fault_hit hit;
  if (!faults_check(r->method, path, &hit)) return 0;
  log_msg("fault rule %d fired on %s %s", hit.rule_id, r->method, path);
  switch (hit.action) {
  case FA_STALL: usleep((useconds_t)hit.ms * 1000); return 0;
  case FA_DROP: return 1;
  case FA_STATUS:
    r->fault = hit;
    r->fault_shape = fault_shape(r, to, hit.status);
    snprintf(r->fault_sandbox, sizeof r->fault_sandbox, "%s", to->id);
    r->on_complete = fault_respond;
    return 0;
  case FA_DROP_MID: r->fault = hit; return 0;
  default: return 0;
  }
}

static void free_req(http_req *r) {
  if (r->ctx_free) r->ctx_free(r->ctx);
  sandbox_unref(r->sb);
  sbuf_free(&r->body);
  free(r);
}

static enum MHD_Result serve_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **con_cls) {
  (void)version;
  http_req *r = *con_cls;
  if (!r) {
    netstats_request(*(const int *)cls, conn);
    r = xcalloc(1, sizeof *r);
    r->started_ms = mono_ms();
    r->conn = conn;
    r->url = url;
    r->method = method;
    r->body_limit = HTTP_JSON_LIMIT;
    *con_cls = r;
    route_to to;
    classify(r, &to);
    if (apply_faults(r, &to)) return MHD_NO; /* injected drop: no response at all */
    if (r->fault.action != FA_STATUS) dispatch(r, &to);
    const char *cl = http_header(conn, "Content-Length");
    /* Far too large to bother reading: answer now (MHD then closes). Merely
     * too large: read and drop it, so the client sees the 413 cleanly. */
    if (r->fault.action == FA_STATUS && cl && strtoull(cl, NULL, 10) > DISCARD_LIMIT) {
      r->too_large = 2;
      return fault_respond(r);
    }
    if ((!r->on_body || r->early_status) && cl && strtoull(cl, NULL, 10) > DISCARD_LIMIT) {
      r->too_large = 2; /* 2: already answered */
      if (r->early_status) return early_respond(r);
      return http_error(conn, 413, "request body too large (limit %zu bytes)", r->body_limit);
    }
    return MHD_YES;
  }
  if (*size > 0) {
    if (r->too_large || (r->early_status && !r->on_body) || r->fault.action == FA_STATUS) {
      /* the answer is already decided: drop the body (bounded) */
      r->discarded += *size;
      *size = 0;
      /* A body without a length (chunked) is read to its end, so the client
       * sees the answer rather than a reset; past DRAIN_LIMIT it is cut. */
      return r->discarded > (http_header(conn, "Content-Length") ? DISCARD_LIMIT : DRAIN_LIMIT) ? MHD_NO
                                                                                              : MHD_YES;
    }
    if (r->on_body) {
      int rc = r->on_body(r, data, *size);
      *size = 0;
      return rc == 0 ? MHD_YES : MHD_NO;
    }
    if (r->body.len + *size > r->body_limit)
      r->too_large = 1;
    else
      sbuf_append(&r->body, data, *size);
    *size = 0;
    return MHD_YES;
  }
  if (r->too_large == 2) return MHD_YES;
  if (r->fault.action == FA_STATUS) return fault_respond(r);
  if (r->early_status) return early_respond(r);
  if (r->too_large) return http_error(conn, 413, "request body too large (limit %zu bytes)", r->body_limit);
  if (!r->on_complete) return http_error(conn, 404, "not found");
  enum MHD_Result res = r->on_complete(r);
  /* drop_mid_stream on a plain response: processed, then the answer is lost */
  if (r->fault.action == FA_DROP_MID && !r->streamed) return MHD_NO;
  return res;
}

/* Notes the status a handler queued, for the request log. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **con_cls) {
  enum MHD_Result res = serve_request(cls, conn, url, method, version, data, size, con_cls);
  unsigned status = http_take_status();
  if (status && *con_cls) ((http_req *)*con_cls)->status = status;
  return res;
}

/* --log-requests: method, path (never the query: it can hold a signature),
 * status and time; a request closed without an answer shows "-". */
static void log_request(const http_req *r, enum MHD_RequestTerminationCode toe) {
  const char *q = strchr(r->url, '?');
  int path_len = q ? (int)(q - r->url) : (int)strlen(r->url);
  char status[12] = "-";
  if (r->status) snprintf(status, sizeof status, "%u", r->status);
  log_msg("%s %.*s %s %lld ms%s", r->method, path_len > 300 ? 300 : path_len, r->url, status,
          (long long)(mono_ms() - r->started_ms),
          toe == MHD_REQUEST_TERMINATED_COMPLETED_OK || r->status == 101 ? "" : " (connection closed early)");
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)conn;
  http_take_raw();
  http_take_client_left();
  if (*con_cls && g_server.log_requests) log_request(*con_cls, toe);
  if (*con_cls) free_req(*con_cls);
  *con_cls = NULL;
}

/* libmicrohttpd's own words, where they mislead, in ours. */
static const struct {
  const char *mhd, *ours; /* ours NULL: said better elsewhere, dropped */
} mhd_rewrites[] = {
    {"Closing connection (application error generating response)",
     "a streamed response ended early (the sandbox-side stream closed or failed, or the connection "
     "broke)"},
    {"Application reported internal error, closing connection",
     "a request was closed without an answer (an injected drop, or its body was refused)"},
    {"Failed to bind to port", NULL}, /* server_start names the address asked for */
    /* GnuTLS's words for a failed handshake on the HTTPS listener */
    {"Error: received handshake message out of context",
     "a TLS handshake failed (a refused sandbox connection, plain HTTP sent to the HTTPS port, or a "
     "client that does not trust e2b-local's CA)"},
    {"Error: A TLS fatal alert has been received",
     "a client ended the TLS handshake (does it trust e2b-local's CA? NODE_EXTRA_CA_CERTS, "
     "E2B_CA_FILE)"},
};

static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  line[strcspn(line, "\n")] = '\0';
  if (strncmp(line, "Application reported internal error", 35) == 0 && http_take_raw()) return; /* a tunnel's end */
  /* a client that closed a stream it no longer needs: ordinary, not a failure */
  if (strncmp(line, mhd_rewrites[0].mhd, strlen(mhd_rewrites[0].mhd)) == 0 && http_take_client_left()) return;
  for (size_t i = 0; i < sizeof mhd_rewrites / sizeof mhd_rewrites[0]; i++) {
    if (strncmp(line, mhd_rewrites[i].mhd, strlen(mhd_rewrites[i].mhd)) != 0) continue;
    if (mhd_rewrites[i].ours) log_msg("http: %s", mhd_rewrites[i].ours);
    return;
  }
  log_msg("http: %s", line);
}

/* A sandbox's connections leave through the egress proxy, inside this
 * process: on the HTTPS listener, a client that is one of our own sockets
 * is a sandbox, and is cut before the handshake (egress.c keeps sandboxes
 * off the plain listener). When that cannot be told, the connection is
 * refused too: never let a sandbox in by doubt. */
static void refuse_sandbox(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci) return;
  int ours = selfconn_peer_is_ours(ci->connect_fd);
  if (ours == 0) return;
  static int said;
  if (ours < 0 && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
    log_msg("https: cannot tell a sandbox's connections from a client's (no sock_diag): refusing "
            "them (--no-tls serves plain HTTP only)");
  else if (ours > 0)
    log_msg("https: refused a connection from a sandbox (through the egress proxy)");
  shutdown(ci->connect_fd, SHUT_RDWR);
}

/* Every connection is counted (netstats.h); on the HTTPS listener, one
 * from a sandbox is cut first. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  int which = *(const int *)cls;
  if (which == LISTENER_HTTPS && code == MHD_CONNECTION_NOTIFY_STARTED) refuse_sandbox(conn);
  netstats_connection(which, conn, socket_context, code);
}

static const int LISTENER_IDS[2] = {LISTENER_HTTP, LISTENER_HTTPS};

/* The listener's options; with tls, MHD (GnuTLS) serves HTTPS with that
 * in-memory certificate and key. */
static struct MHD_Daemon *start_daemon(const struct sockaddr_in *sa, const tls_leaf *tls) {
  const int *listener = &LISTENER_IDS[tls ? LISTENER_HTTPS : LISTENER_HTTP];
  struct MHD_OptionItem opts[] = {
      {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL},
      {MHD_OPTION_SOCK_ADDR, 0, (void *)sa},
      {MHD_OPTION_THREAD_STACK_SIZE, (intptr_t)(256 * 1024), NULL},
      {MHD_OPTION_CONNECTION_LIMIT, 16384, NULL},
      {MHD_OPTION_CONNECTION_TIMEOUT, 600, NULL},
      {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL},
      {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL},
      {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, (void *)listener},
      {tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, tls ? tls->key_pem : NULL},
      {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, tls ? tls->cert_pem : NULL},
      {MHD_OPTION_END, 0, NULL},
  };
  /* Thread per connection: tls_tunnel.c relays an upgraded HTTPS connection
   * from its access handler, on the connection's own thread. */
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
                   MHD_ALLOW_UPGRADE | (tls ? MHD_USE_TLS : 0);
  return MHD_start_daemon(flags, 0, NULL, NULL, on_request, (void *)listener, MHD_OPTION_ARRAY, opts,
                          MHD_OPTION_END);
}

server *server_start(const char *host, uint16_t port, const tls_leaf *tls) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (strcmp(host, "localhost") == 0) host = "127.0.0.1";
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
    log_msg("cannot listen on %s: only IPv4 addresses are supported", host);
    return NULL;
  }
  if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    log_msg("cannot serve HTTPS: this libmicrohttpd is built without TLS (use --no-tls)");
    return NULL;
  }
  server *s = xcalloc(1, sizeof *s);
  s->d = start_daemon(&sa, tls);
  if (!s->d) {
    log_msg("cannot listen on %s:%u (%s): %s", host, port, tls ? "--tls-listen" : "--listen", strerror(errno));
    free(s);
    return NULL;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  s->port = di ? di->port : port;
  return s;
}

uint16_t server_port(const server *s) { return s->port; }

int server_tls_supported(void) { return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES; }

void server_stop(server *s) {
  if (!s) return;
  MHD_stop_daemon(s->d);
  free(s);
}
