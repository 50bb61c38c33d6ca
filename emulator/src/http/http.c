/* http.c — response helpers and the blocking stream adapter. */
#define _GNU_SOURCE
#include "http.h"
#include "pjson.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

server_info g_server;

const char *http_header(struct MHD_Connection *c, const char *name) {
  return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

const char *http_query(struct MHD_Connection *c, const char *name) {
  return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

int http_client_fd(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  return ci ? ci->connect_fd : -1;
}

static __thread unsigned t_status;

unsigned http_take_status(void) {
  unsigned s = t_status;
  t_status = 0;
  return s;
}

static __thread int t_raw;

void http_answered_raw(unsigned status) {
  t_status = status;
  t_raw = 1;
}

int http_take_raw(void) {
  int r = t_raw;
  t_raw = 0;
  return r;
}

static __thread int t_client_left;

int http_take_client_left(void) {
  int r = t_client_left;
  t_client_left = 0;
  return r;
}

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r) {
  if (!r) return MHD_NO;
  t_status = status;
  enum MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

enum MHD_Result http_bytes(struct MHD_Connection *c, unsigned status, const char *content_type,
                           const void *data, size_t len) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  if (content_type) MHD_add_response_header(r, "Content-Type", content_type);
  return queue(c, status, r);
}

enum MHD_Result http_json_hdr(struct MHD_Connection *c, unsigned status, json_t *body,
                              const char *hname, const char *hvalue) {
  char *text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(body);
  if (!text) return MHD_NO;
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "application/json");
  if (hname && hvalue) MHD_add_response_header(r, hname, hvalue);
  return queue(c, status, r);
}

enum MHD_Result http_json(struct MHD_Connection *c, unsigned status, json_t *body) {
  return http_json_hdr(c, status, body, NULL, NULL);
}

enum MHD_Result http_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return http_json(c, status, json_pack("{s:i, s:o}", "code", (int)status, "message", pj_text(msg)));
}

enum MHD_Result http_empty(struct MHD_Connection *c, unsigned status) {
  return queue(c, status, MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT));
}

enum MHD_Result http_empty_h(struct MHD_Connection *c, unsigned status, const char *name, const char *value) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
  if (resp && name) MHD_add_response_header(resp, name, value);
  return queue(c, status, resp);
}

typedef struct stream_state {
  stream_src src;
  sbuf buf;
  size_t off;
  int done;
  /* drop_mid_stream: messages (or bytes) still to pass before the cut */
  int connect_frames;
  int64_t left; /* -1 = no cut */
  int cut;      /* the cut point is inside buf: abort once it is sent */
} stream_state;

/* Shortens s->buf so that only s->left more messages (Connect envelopes
 * other than the end-stream one) or bytes go out; then the stream is cut. */
static void apply_cut(stream_state *s) {
  if (s->left < 0) return;
  if (!s->connect_frames) {
    if ((int64_t)s->buf.len >= s->left) {
      s->buf.len = (size_t)s->left;
      s->cut = 1;
    }
    s->left -= (int64_t)s->buf.len;
    return;
  }
  size_t off = 0;
  while (off + 5 <= s->buf.len) {
    if (s->left == 0) break;
    const unsigned char *h = (const unsigned char *)s->buf.data + off;
    uint32_t len = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
    off += 5 + (size_t)len;
    if (!(h[0] & 0x02)) s->left--;
  }
  if (s->left == 0 && off < s->buf.len) {
    s->buf.len = off;
    s->cut = 1;
  } else if (s->left == 0) {
    s->cut = 1;
  }
}

/* Thread-per-connection: blocking here only blocks this connection's thread. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *out, size_t max) {
  (void)pos;
  stream_state *s = cls;
  while (s->off >= s->buf.len) {
    if (s->cut) return MHD_CONTENT_READER_END_WITH_ERROR; /* injected: no end, no trailer */
    if (s->done) return MHD_CONTENT_READER_END_OF_STREAM;
    s->buf.len = 0;
    s->off = 0;
    if (s->left == 0) {
      s->cut = 1;
      continue;
    }
    int rc = s->src.fill(s->src.ctx, &s->buf);
    /* MHD reports the abort on this thread right away: the flag tells it apart */
    if (rc == STREAM_CLIENT_LEFT) t_client_left = 1;
    if (rc < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    if (rc > 0) s->done = 1;
    apply_cut(s);
  }
  size_t n = s->buf.len - s->off;
  if (n > max) n = max;
  memcpy(out, s->buf.data + s->off, n);
  s->off += n;
  return (ssize_t)n;
}

static void stream_free(void *cls) {
  stream_state *s = cls;
  if (s->src.free) s->src.free(s->src.ctx);
  sbuf_free(&s->buf);
  free(s);
}

enum MHD_Result http_stream(http_req *req, unsigned status, const char *content_type, uint64_t size,
                            int connect_frames, stream_src src) {
  json_t *h = content_type ? json_pack("[[s,s]]", "Content-Type", content_type) : json_array();
  enum MHD_Result res = http_stream_h(req, status, h, size, connect_frames, src);
  json_decref(h);
  return res;
}

enum MHD_Result http_stream_h(http_req *req, unsigned status, json_t *headers, uint64_t size, int connect_frames,
                              stream_src src) {
  stream_state *s = xcalloc(1, sizeof *s);
  s->src = src;
  s->left = -1;
  req->streamed = 1;
  if (req->fault.action == FA_DROP_MID) {
    /* a Connect stream counts messages unless the rule counts bytes */
    s->connect_frames = connect_frames && req->fault.after_events >= 0;
    int64_t n = s->connect_frames ? req->fault.after_events : req->fault.after_bytes;
    s->left = n >= 0 ? n : 0;
  }
  struct MHD_Response *r =
      MHD_create_response_from_callback(size, 64 * 1024, stream_reader, s, stream_free);
  if (!r) {
    stream_free(s);
    return MHD_NO;
  }
  for (size_t i = 0; i < json_array_size(headers); i++) {
    json_t *kv = json_array_get(headers, i);
    MHD_add_response_header(r, json_string_value(json_array_get(kv, 0)), json_string_value(json_array_get(kv, 1)));
  }
  return queue(req->conn, status, r);
}

typedef struct file_src {
  int fd;
  uint64_t off, left;
} file_src;

static int file_fill(void *ctx, sbuf *out) {
  file_src *s = ctx;
  if (s->left == 0) return 1;
  size_t want = s->left < 65536 ? (size_t)s->left : 65536;
  sbuf_reserve(out, want);
  ssize_t n = pread(s->fd, out->data + out->len, want, (off_t)s->off);
  if (n <= 0) return -1; /* the file shrank: the promised length cannot be met */
  out->len += (size_t)n;
  s->off += (uint64_t)n;
  s->left -= (uint64_t)n;
  return s->left == 0;
}

static void file_free(void *ctx) {
  file_src *s = ctx;
  close(s->fd);
  free(s);
}

enum MHD_Result http_stream_file(http_req *r, unsigned status, int fd, uint64_t from, uint64_t len) {
  file_src *s = xcalloc(1, sizeof *s);
  s->fd = fd;
  s->off = from;
  s->left = len;
  return http_stream(r, status, "application/octet-stream", len, 0, (stream_src){file_fill, file_free, s});
}

json_t *http_body_json(http_req *r, enum MHD_Result *res) {
  json_error_t e;
  json_t *j = r->body.len ? json_loadb(r->body.data, r->body.len, 0, &e) : NULL;
  if (!j) *res = http_error(r->conn, 400, "invalid JSON body%s%s", r->body.len ? ": " : "",
                            r->body.len ? e.text : "");
  return j;
}
