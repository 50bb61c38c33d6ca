/* ports.c — Host "<port>-<sandboxID>.<domain>" on e2b-local's listener: the
 * request (HTTP, or an Upgrade such as WebSocket) goes to the server
 * listening on that port inside the sandbox. The agent connects from inside
 * the sandbox's network namespace and passes the socket up; the traffic
 * access token is checked when the sandbox's public traffic is off. The
 * egress forwarder's port (egress.h) is never reachable this way. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "egress.h"
#include "log.h"
#include "ports.h"
#include "sandbox.h"
#include "tls_tunnel.h"
#include "util.h"

#define HEAD_MAX (64 * 1024)
/* A response head past these is refused (502): a service that sends header
 * lines without end must not grow the server. */
#define HEAD_LINES_MAX 1000
#define HEAD_BYTES_MAX (1024 * 1024)

typedef struct pconn {
  int fd;
  int client; /* the client's socket, watched while we wait on the upstream */
  int chunked_req; /* the request body is re-chunked towards the upstream */
  int upgrade;
  int broken; /* writing upstream failed */
  /* buffered reading of the response */
  char *buf;
  size_t off, len;
  /* response body framing */
  int mode; /* 0 until EOF, 1 content-length, 2 chunked, 3 none */
  uint64_t left;
  int chunk_state; /* 0 size line, 1 data, 2 CRLF after data, 3 trailers, 4 done */
} pconn;

static void pconn_free(void *p) {
  pconn *c = p;
  if (c->fd >= 0) close(c->fd);
  free(c->buf);
  free(c);
}

static int is_hop(const char *k) {
  static const char *hop[] = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
                              "te", "trailer", "transfer-encoding", "upgrade", "content-length",
                              "e2b-traffic-access-token", NULL};
  for (int i = 0; hop[i]; i++)
    if (strcasecmp(k, hop[i]) == 0) return 1;
  return 0;
}

static void escape_into(sbuf *b, const char *s, const char *keep) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (isalnum(*p) || strchr("-._~", *p) || (*p && strchr(keep, *p)))
      sbuf_append(b, p, 1);
    else
      sbuf_appendf(b, "%%%02X", *p);
  }
}

typedef struct query_acc {
  sbuf *b;
  int n;
} query_acc;

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  (void)kind;
  query_acc *q = cls;
  sbuf_append(q->b, q->n++ ? "&" : "?", 1);
  escape_into(q->b, key, "");
  if (value) {
    sbuf_append(q->b, "=", 1);
    escape_into(q->b, value, "");
  }
  return MHD_YES;
}

typedef struct head_acc {
  sbuf *b;
  const char *host; /* network.maskRequestHost, ${PORT} replaced; NULL = as sent */
} head_acc;

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  (void)kind;
  head_acc *h = cls;
  if (is_hop(key)) return MHD_YES;
  if (h->host && strcasecmp(key, "Host") == 0) {
    key = "Host"; /* as E2B's edge sends it, whatever case the client used */
    value = h->host;
  }
  sbuf_appendf(h->b, "%s: %s\r\n", key, value ? value : "");
  return MHD_YES;
}

/* maskRequestHost with ${PORT} replaced by the target port (malloc). */
static char *masked_host(sandbox *sb, long port) {
  json_t *net = sandbox_network_json(sb);
  const char *mask = json_string_value(json_object_get(net, "maskRequestHost"));
  char *out = NULL;
  if (mask && *mask) {
    sbuf b = {0};
    for (const char *p = mask; *p;) {
      if (strncmp(p, "${PORT}", 7) == 0) {
        sbuf_appendf(&b, "%ld", port);
        p += 7;
      } else {
        sbuf_append(&b, p++, 1);
      }
    }
    out = xstrdup(b.data);
    sbuf_free(&b);
  }
  json_decref(net);
  return out;
}

static int upstream_write(pconn *c, const void *data, size_t n) {
  if (c->broken) return -1;
  if (write_all(c->fd, data, n) != 0) c->broken = 1;
  return c->broken ? -1 : 0;
}

static int on_body(http_req *r, const char *data, size_t n) {
  pconn *c = r->ctx;
  if (c->chunked_req) {
    char hdr[32];
    snprintf(hdr, sizeof hdr, "%zx\r\n", n);
    upstream_write(c, hdr, strlen(hdr));
    upstream_write(c, data, n);
    upstream_write(c, "\r\n", 2);
  } else {
    upstream_write(c, data, n);
  }
  return 0; /* a broken upstream is answered at completion */
}

/* ---- reading the upstream response ---- */

/* Waits until the upstream has bytes; 0, or -1 once the client has gone
 * (closed or half-closed): a service that never answers must not hold a
 * thread and its descriptors for a caller who left. */
static int await_upstream(const pconn *c) {
  struct pollfd pf[2] = {{c->fd, POLLIN, 0}, {c->client, POLLRDHUP, 0}};
  for (;;) {
    int n = poll(pf, c->client >= 0 ? 2 : 1, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (c->client >= 0 && (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) return -1;
    if (pf[0].revents) return 0;
  }
}

static ssize_t fill_buf(pconn *c) {
  if (c->off > 0 && c->off == c->len) c->off = c->len = 0;
  if (c->len == HEAD_MAX) {
    memmove(c->buf, c->buf + c->off, c->len - c->off);
    c->len -= c->off;
    c->off = 0;
    if (c->len == HEAD_MAX) return -1;
  }
  ssize_t n;
  if (await_upstream(c) != 0) return -1;
  do {
    n = read(c->fd, c->buf + c->len, HEAD_MAX - c->len);
  } while (n < 0 && errno == EINTR);
  if (n > 0) c->len += (size_t)n;
  return n;
}

/* A line (without CRLF) from the buffer; NULL at EOF/error. */
static char *read_line(pconn *c) {
  for (;;) {
    char *start = c->buf + c->off;
    char *nl = memchr(start, '\n', c->len - c->off);
    if (nl) {
      size_t n = (size_t)(nl - start);
      char *line = strndup(start, n > 0 && start[n - 1] == '\r' ? n - 1 : n);
      c->off += n + 1;
      return line;
    }
    if (fill_buf(c) <= 0) return NULL;
  }
}

static int body_fill(void *ctx, sbuf *out) {
  pconn *c = ctx;
  for (;;) {
    if (c->mode == 3 || (c->mode == 1 && c->left == 0) || (c->mode == 2 && c->chunk_state == 4)) return 1;
    if (c->mode == 2 && c->chunk_state != 1) {
      char *line = read_line(c);
      if (!line) return -1;
      if (c->chunk_state == 0) {
        c->left = strtoull(line, NULL, 16);
        c->chunk_state = c->left ? 1 : 3;
      } else if (c->chunk_state == 2) {
        c->chunk_state = 0;
      } else if (c->chunk_state == 3 && !*line) {
        c->chunk_state = 4;
      }
      free(line);
      continue;
    }
    if (c->off == c->len) {
      ssize_t n = fill_buf(c);
      if (n == 0 && c->mode == 0) return 1; /* until EOF: done */
      if (n <= 0) return -1;                 /* cut short */
    }
    size_t n = c->len - c->off;
    if (c->mode != 0 && n > c->left) n = (size_t)c->left;
    sbuf_append(out, c->buf + c->off, n);
    c->off += n;
    if (c->mode != 0) c->left -= n;
    if (c->mode == 2 && c->left == 0) c->chunk_state = 2;
    return 0;
  }
}

/* ---- upgrades (WebSocket): after both 101s, bytes flow both ways ---- */

typedef struct bridge {
  int client, upstream;
  struct MHD_UpgradeResponseHandle *urh;
  char *pending; /* upstream bytes read along with its 101 */
  size_t npending;
} bridge;

static void *bridge_main(void *arg) {
  bridge *b = arg;
  if (b->npending) write_all(b->client, b->pending, b->npending);
  char buf[65536];
  struct pollfd pf[2] = {{b->client, POLLIN, 0}, {b->upstream, POLLIN, 0}};
  for (int open_dirs = 2; open_dirs > 0;) {
    if (poll(pf, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    int done = 0;
    for (int i = 0; i < 2 && !done; i++) {
      if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(pf[i].fd, buf, sizeof buf);
      int to = i == 0 ? b->upstream : b->client;
      if (n <= 0 || write_all(to, buf, (size_t)n) != 0) {
        /* one side ended: pass the end on, then stop (sockets are full duplex
         * but WebSocket peers close both ways) */
        shutdown(to, SHUT_WR);
        pf[i].fd = -1;
        open_dirs--;
        if (n < 0 || open_dirs == 0) done = 1;
      }
    }
    if (done) break;
  }
  close(b->upstream);
  MHD_upgrade_action(b->urh, MHD_UPGRADE_ACTION_CLOSE);
  free(b->pending);
  free(b);
  return NULL;
}

typedef struct upgrade_ctx {
  int upstream;
  char *pending;
  size_t npending;
} upgrade_ctx;

static void on_upgrade(void *cls, struct MHD_Connection *connection, void *req_cls, const char *extra_in,
                       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh) {
  (void)connection;
  (void)req_cls;
  upgrade_ctx *u = cls;
  bridge *b = xcalloc(1, sizeof *b);
  b->client = sock;
  b->upstream = u->upstream;
  b->urh = urh;
  b->pending = u->pending;
  b->npending = u->npending;
  free(u);
  /* The bridge blocks on its writes: `sock` may be non-blocking, and a
   * write that met a full buffer (EAGAIN) would end the tunnel mid-stream.
   * (Only the plain listener comes here: HTTPS upgrades go to tls_tunnel.c.) */
  int fl = fcntl(sock, F_GETFL);
  if (fl >= 0 && (fl & O_NONBLOCK)) fcntl(sock, F_SETFL, fl & ~O_NONBLOCK);
  if (extra_in_size) write_all(b->upstream, extra_in, extra_in_size);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 128 * 1024);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  if (pthread_create(&th, &attr, bridge_main, b) != 0) {
    close(b->upstream);
    MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
    free(b->pending);
    free(b);
  }
  pthread_attr_destroy(&attr);
}

/* On the HTTPS listener the upgraded connection is relayed here, on the
 * connection's own thread and TLS session: libmicrohttpd 0.9.75's own
 * forwarding of upgraded TLS connections moves 4 bytes at a time
 * (tls_tunnel.h). The 101 is written as MHD would write it. */
static enum MHD_Result tunnel_over_tls(http_req *r, pconn *c, json_t *headers) {
  sbuf head = {0};
  sbuf_appendf(&head, "HTTP/1.1 101 %s\r\n", MHD_get_reason_phrase_for(101));
  for (size_t i = 0; i < json_array_size(headers); i++) {
    json_t *kv = json_array_get(headers, i);
    const char *k = json_string_value(json_array_get(kv, 0)), *v = json_string_value(json_array_get(kv, 1));
    /* what MHD_add_response_header refuses is dropped here too: a line break
     * from the service never splits the head it answers with */
    if (!*k || strpbrk(k, " \t\r\n:") || strpbrk(v, "\r\n")) continue;
    sbuf_appendf(&head, "%s: %s\r\n", k, v);
  }
  json_decref(headers);
  char date[64];
  time_t now = time(NULL);
  struct tm tm;
  strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&now, &tm));
  sbuf_appendf(&head, "Connection: Upgrade\r\nDate: %s\r\n\r\n", date);
  int up = c->fd;
  c->fd = -1; /* the tunnel closes it */
  http_answered_raw(101);
  tls_tunnel_run(r->conn, head.data, head.len, up, c->buf + c->off, c->len - c->off);
  c->off = c->len;
  sbuf_free(&head);
  return MHD_NO; /* the connection is done: drop it */
}

static enum MHD_Result on_complete(http_req *r) {
  pconn *c = r->ctx;
  if (c->chunked_req) upstream_write(c, "0\r\n\r\n", 5);
  if (c->broken) return http_error(r->conn, 502, "the service on that port closed the connection");
  char *status_line = read_line(c);
  int status = 0;
  if (!status_line || sscanf(status_line, "HTTP/%*d.%*d %d", &status) != 1 || status < 100 || status > 999) {
    free(status_line);
    return http_error(r->conn, 502, "the service on that port did not answer HTTP");
  }
  free(status_line);
  json_t *headers = json_array();
  int64_t length = -1;
  int chunked = 0;
  size_t head_bytes = 0;
  for (int lines = 0;; lines++) {
    char *line = read_line(c);
    if (line && (lines >= HEAD_LINES_MAX || (head_bytes += strlen(line)) > HEAD_BYTES_MAX)) {
      free(line);
      json_decref(headers);
      return http_error(r->conn, 502, "the service on that port sent too large a response head");
    }
    if (!line) {
      json_decref(headers);
      return http_error(r->conn, 502, "the service on that port sent an incomplete response");
    }
    if (!*line) {
      free(line);
      break;
    }
    char *colon = strchr(line, ':');
    if (colon) {
      *colon = '\0';
      char *v = colon + 1;
      while (*v == ' ' || *v == '\t') v++;
      if (strcasecmp(line, "content-length") == 0) length = strtoll(v, NULL, 10);
      if (strcasecmp(line, "transfer-encoding") == 0 && strcasestr(v, "chunked")) chunked = 1;
      if (!is_hop(line) || (status == 101 && strcasecmp(line, "upgrade") == 0)) json_array_append_new(headers, json_pack("[s,s]", line, v));
    }
    free(line);
  }
  if (status == 101 && c->upgrade && tls_tunnel_session(r->conn)) return tunnel_over_tls(r, c, headers);
  if (status == 101 && c->upgrade) {
    upgrade_ctx *u = xcalloc(1, sizeof *u);
    u->upstream = c->fd;
    u->npending = c->len - c->off;
    u->pending = u->npending ? xmalloc(u->npending) : NULL;
    if (u->npending) memcpy(u->pending, c->buf + c->off, u->npending);
    c->fd = -1; /* the bridge owns it now */
    struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade, u);
    for (size_t i = 0; i < json_array_size(headers); i++) {
      json_t *kv = json_array_get(headers, i);
      MHD_add_response_header(resp, json_string_value(json_array_get(kv, 0)), json_string_value(json_array_get(kv, 1)));
    }
    json_decref(headers);
    enum MHD_Result res = MHD_queue_response(r->conn, 101, resp);
    MHD_destroy_response(resp);
    return res;
  }
  int no_body = strcmp(r->method, "HEAD") == 0 || status == 204 || status == 304 || status < 200;
  c->mode = no_body ? 3 : chunked ? 2 : length >= 0 ? 1 : 0;
  c->left = length >= 0 ? (uint64_t)length : 0;
  /* the stream adapter owns the connection from here */
  r->ctx = NULL;
  r->ctx_free = NULL;
  uint64_t size = c->mode == 3 ? 0 : c->mode == 1 ? (uint64_t)length : MHD_SIZE_UNKNOWN;
  enum MHD_Result res = http_stream_h(r, (unsigned)status, headers, size, 0, (stream_src){body_fill, pconn_free, c});
  json_decref(headers);
  return res;
}

static void early(http_req *r, int status, const char *msg) {
  r->early_status = status;
  snprintf(r->early_msg, sizeof r->early_msg, "%s", msg);
}

/* What E2B's edge proxy answers for a sandbox (or port) it cannot route to. */
static void not_found(http_req *r, const char *sandbox_id) {
  early(r, 502, "The sandbox was not found");
  snprintf(r->early_sandbox, sizeof r->early_sandbox, "%s", sandbox_id);
}

void port_route(http_req *r, const char *sandbox_id, long port) {
  sandbox *sb = sandbox_get(sandbox_id);
  r->sb = sb;
  if (!sb || port <= 0 || port > 65535) {
    not_found(r, sandbox_id);
    return;
  }
  /* checked before the wake: nothing unauthenticated resumes a sandbox */
  if (sb->traffic_token) {
    const char *t = http_header(r->conn, "e2b-traffic-access-token");
    if (!t || !e2b_secure_streq(t, sb->traffic_token)) {
      early(r, 403, t ? "invalid traffic access token" : "missing e2b-traffic-access-token header (public traffic is off)");
      return;
    }
  }
  if (!sandbox_wake(sb)) {
    not_found(r, sandbox_id);
    return;
  }
  ipc_msg reply;
  int rc = -ECONNREFUSED;
  /* The egress forwarder is the sandbox's way out, not a service: exposed
   * here it would be an open proxy into the host's loopback. It looks closed. */
  if (port != EGRESS_PORT) {
    json_t *req = json_pack("{s:i}", "port", (int)port);
    rc = sandbox_call(sb, IPC_CONNECT, req, &reply);
    json_decref(req);
  }
  if (rc || reply.err) {
    char msg[160];
    snprintf(msg, sizeof msg, "no service is listening on port %ld in sandbox %s (%s)", port, sandbox_id,
             strerror(rc ? -rc : reply.err));
    if (!rc) ipc_msg_clear(&reply);
    early(r, 502, msg);
    return;
  }
  pconn *c = xcalloc(1, sizeof *c);
  c->fd = ipc_take_fd(&reply, 0);
  c->client = http_client_fd(r->conn);
  ipc_msg_clear(&reply);
  c->buf = xmalloc(HEAD_MAX);
  r->ctx = c;
  r->ctx_free = pconn_free;
  const char *up = http_header(r->conn, "Upgrade");
  const char *conn_h = http_header(r->conn, "Connection");
  c->upgrade = up && conn_h && strcasestr(conn_h, "upgrade");
  const char *cl = http_header(r->conn, "Content-Length");
  const char *te = http_header(r->conn, "Transfer-Encoding");
  c->chunked_req = !cl && te && strcasestr(te, "chunked");
  sbuf head = {0};
  /* MHD hands us the decoded path and arguments: escape them again */
  sbuf_appendf(&head, "%s ", r->method);
  escape_into(&head, r->url, "/!$&'()*+,;=:@");
  query_acc q = {&head, 0};
  MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_arg, &q);
  sbuf_appendf(&head, " HTTP/1.1\r\n");
  head_acc ha = {&head, masked_host(sb, port)};
  MHD_get_connection_values(r->conn, MHD_HEADER_KIND, add_header, &ha);
  free((char *)ha.host);
  if (cl) sbuf_appendf(&head, "Content-Length: %s\r\n", cl);
  if (c->chunked_req) sbuf_appendf(&head, "Transfer-Encoding: chunked\r\n");
  if (c->upgrade)
    sbuf_appendf(&head, "Connection: Upgrade\r\nUpgrade: %s\r\n", up);
  else
    sbuf_appendf(&head, "Connection: close\r\n");
  sbuf_appendf(&head, "\r\n");
  if (write_all(c->fd, head.data, head.len) != 0) c->broken = 1;
  sbuf_free(&head);
  r->on_body = on_body;
  r->on_complete = on_complete;
  r->body_limit = (size_t)-1;
}
