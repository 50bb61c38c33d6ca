/* http.c — response helpers and the blocking stream adapter. */
#define _GNU_SOURCE
#include "http.h"
#include "pjson.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r) {
  if (!r) return MHD_NO;
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

typedef struct stream_state {
  stream_src src;
  sbuf buf;
  size_t off;
  int done;
} stream_state;

/* Thread-per-connection: blocking here only blocks this connection's thread. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *out, size_t max) {
  (void)pos;
  stream_state *s = cls;
  while (s->off >= s->buf.len) {
    if (s->done) return MHD_CONTENT_READER_END_OF_STREAM;
    s->buf.len = 0;
    s->off = 0;
    int rc = s->src.fill(s->src.ctx, &s->buf);
    if (rc < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    if (rc > 0) s->done = 1;
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

enum MHD_Result http_stream(struct MHD_Connection *c, unsigned status, const char *content_type,
                            stream_src src) {
  stream_state *s = xcalloc(1, sizeof *s);
  s->src = src;
  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_reader, s, stream_free);
  if (!r) {
    stream_free(s);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", content_type);
  return queue(c, status, r);
}

json_t *http_body_json(http_req *r, enum MHD_Result *res) {
  json_error_t e;
  json_t *j = r->body.len ? json_loadb(r->body.data, r->body.len, 0, &e) : NULL;
  if (!j) *res = http_error(r->conn, 400, "invalid JSON body%s%s", r->body.len ? ": " : "",
                            r->body.len ? e.text : "");
  return j;
}
