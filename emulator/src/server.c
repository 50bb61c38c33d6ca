/* server.c — libmicrohttpd daemon, request lifecycle and top-level routing. */
#define _GNU_SOURCE
#include "server.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envd.h"
#include "log.h"
#include "sandbox.h"

struct server {
  struct MHD_Daemon *d;
  uint16_t port;
};

#define ENVD_PORT 49983
#define DISCARD_LIMIT ((size_t)64 << 20) /* oversized bodies read and dropped */

/* "<port>-<sandboxID>.<anything>[:p]" -> port and id. */
static int parse_sandbox_host(const char *host, long *port, char *id, size_t idcap) {
  if (!host || !isdigit((unsigned char)host[0])) return 0;
  char *end;
  long p = strtol(host, &end, 10);
  if (*end != '-') return 0;
  const char *s = end + 1;
  size_t n = strcspn(s, ".:");
  if (n == 0 || n >= idcap || s[n] != '.') return 0;
  memcpy(id, s, n);
  id[n] = '\0';
  *port = p;
  return 1;
}

static enum MHD_Result port_proxy_502(http_req *r) {
  return http_error(r->conn, 502, "port forwarding to sandbox services is not implemented by e2b-local yet");
}

static void route(http_req *r) {
  const char *sid = http_header(r->conn, "E2b-Sandbox-Id");
  char id[64];
  long port = 0;
  if (sid && *sid) {
    envd_route(r, sid);
  } else if (parse_sandbox_host(http_header(r->conn, "Host"), &port, id, sizeof id)) {
    if (port == ENVD_PORT)
      envd_route(r, id);
    else
      r->on_complete = port_proxy_502;
  } else if (strcmp(r->url, "/files") == 0 && http_query(r->conn, "signature")) {
    char *owned = files_sandbox_by_signature(r->conn, r->method);
    if (owned) {
      envd_route(r, owned);
      free(owned);
    } else {
      r->early_status = 401;
      snprintf(r->early_msg, sizeof r->early_msg, "invalid signature");
    }
  } else {
    control_route(r);
  }
}

static void free_req(http_req *r) {
  if (r->ctx_free) r->ctx_free(r->ctx);
  sandbox_unref(r->sb);
  sbuf_free(&r->body);
  free(r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **con_cls) {
  (void)cls;
  (void)version;
  http_req *r = *con_cls;
  if (!r) {
    r = xcalloc(1, sizeof *r);
    r->conn = conn;
    r->url = url;
    r->method = method;
    r->body_limit = HTTP_JSON_LIMIT;
    *con_cls = r;
    route(r);
    const char *cl = http_header(conn, "Content-Length");
    /* Far too large to bother reading: answer now (MHD then closes). Merely
     * too large: read and drop it, so the client sees the 413 cleanly. */
    if ((!r->on_body || r->early_status) && cl && strtoull(cl, NULL, 10) > DISCARD_LIMIT) {
      r->too_large = 2; /* 2: already answered */
      if (r->early_status) return http_error(conn, (unsigned)r->early_status, "%s", r->early_msg);
      return http_error(conn, 413, "request body too large (limit %zu bytes)", r->body_limit);
    }
    return MHD_YES;
  }
  if (*size > 0) {
    if (r->too_large || (r->early_status && !r->on_body)) {
      /* the answer is already decided: drop the body (bounded) */
      r->discarded += *size;
      *size = 0;
      return r->discarded > DISCARD_LIMIT ? MHD_NO : MHD_YES;
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
  if (r->early_status) return http_error(conn, (unsigned)r->early_status, "%s", r->early_msg);
  if (r->too_large) return http_error(conn, 413, "request body too large (limit %zu bytes)", r->body_limit);
  if (!r->on_complete) return http_error(conn, 404, "not found");
  return r->on_complete(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)conn;
  (void)toe;
  if (*con_cls) free_req(*con_cls);
  *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  line[strcspn(line, "\n")] = '\0';
  log_msg("http: %s", line);
}

server *server_start(const char *host, uint16_t port) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (strcmp(host, "localhost") == 0) host = "127.0.0.1";
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
    log_msg("cannot listen on %s: only IPv4 addresses are supported", host);
    return NULL;
  }
  server *s = xcalloc(1, sizeof *s);
  s->d = MHD_start_daemon(
      MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL,
      NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
      MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256 * 1024), MHD_OPTION_CONNECTION_LIMIT,
      (unsigned int)16384, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)600,
      MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
      NULL, MHD_OPTION_END);
  if (!s->d) {
    log_msg("cannot listen on %s:%u: %s", host, port, strerror(errno));
    free(s);
    return NULL;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  s->port = di ? di->port : port;
  return s;
}

uint16_t server_port(const server *s) { return s->port; }

void server_stop(server *s) {
  if (!s) return;
  MHD_stop_daemon(s->d);
  free(s);
}
