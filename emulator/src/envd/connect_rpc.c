/* connect_rpc.c — Connect JSON framing, users, paths and error mapping. */
#define _GNU_SOURCE
#include "connect_rpc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec.h"
#include "pjson.h"
#include "sandbox.h"
#include "util.h"

#define RPC_BODY_LIMIT (16u << 20) /* SendInput may carry sizeable stdin chunks */
#define DEFAULT_KEEPALIVE_S 90

void rpc_fail(rpc_err *e, const char *code, const char *fmt, ...) {
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
}

void rpc_fail_errno(rpc_err *e, int err, const char *what) {
  const char *code = "internal";
  switch (err) {
  case ENOENT: code = "not_found"; break;
  case ESRCH: code = "unavailable"; break;
  case EEXIST: code = "already_exists"; break;
  case ENOTDIR:
  case EISDIR:
  case EINVAL:
  case ENAMETOOLONG:
  case ELOOP: code = "invalid_argument"; break;
  case EACCES:
  case EPERM:
  case EROFS: code = "permission_denied"; break;
  case E2BIG:
  case EMFILE:
  case ENOSPC: code = "resource_exhausted"; break;
  case ETIMEDOUT: code = "deadline_exceeded"; break; /* the agent did not answer in time */
  default: break;
  }
  rpc_fail(e, code, "%s: %s", what,
           err == ESRCH ? "sandbox is not running" : err == ETIMEDOUT ? "the sandbox did not answer in time" : strerror(err));
}

static const rpc_user USERS[] = {{"user", 1000, 1000, "/home/user"}, {"root", 0, 0, "/root"}};

const rpc_user *rpc_user_by_name(const char *name) {
  for (size_t i = 0; i < sizeof USERS / sizeof USERS[0]; i++)
    if (strcmp(USERS[i].name, name) == 0) return &USERS[i];
  return NULL;
}

char *rpc_resolve_path(const rpc_user *u, const char *path) {
  char *joined;
  if (!path || !*path || strcmp(path, "~") == 0)
    joined = xstrdup(u->home);
  else if (strncmp(path, "~/", 2) == 0)
    joined = xasprintf("%s/%s", u->home, path + 2);
  else if (path[0] == '/')
    joined = xstrdup(path);
  else
    joined = xasprintf("%s/%s", u->home, path);
  char *clean = path_clean(joined);
  free(joined);
  return clean;
}

int rpc_basic_user(const char *auth, char *name, size_t cap) {
  if (!auth || strncasecmp(auth, "Basic ", 6) != 0) return 0;
  uint8_t *dec = NULL;
  size_t n = 0;
  const char *b = auth + 6;
  if (e2b_b64_decode_alloc(b, strlen(b), &dec, &n) != 0) return 0;
  uint8_t *colon = memchr(dec, ':', n);
  size_t len = colon ? (size_t)(colon - dec) : 0;
  if (colon) {
    if (len > cap - 1) len = cap - 1;
    memcpy(name, dec, len);
    name[len] = '\0';
  }
  free(dec);
  return colon != NULL;
}

/* The user an Authorization header names ("Basic base64(<user>:)"); any
 * other header names none, and then the call is the default user's: user,
 * or the USER of the built template the sandbox came from (envd's default). */
static const rpc_user *user_from_auth(const char *auth, const struct sandbox *sb, rpc_err *e) {
  char name[64];
  if (!rpc_basic_user(auth, name, sizeof name))
    return rpc_user_by_name(sb && sb->default_user ? sb->default_user : "user");
  const rpc_user *u = rpc_user_by_name(name);
  if (!u) rpc_fail(e, "unauthenticated", "invalid username: '%s'", name);
  return u;
}

/* protobuf's JSON leaves out a repeated field with no elements. */
static void drop_empty_lists(json_t *v) {
  if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++) drop_empty_lists(json_array_get(v, i));
    return;
  }
  const char *k;
  json_t *x;
  void *tmp;
  json_object_foreach_safe(v, tmp, k, x) {
    if (json_is_array(x) && json_array_size(x) == 0)
      json_object_del(v, k);
    else
      drop_empty_lists(x);
  }
}

void rpc_env_msg(sbuf *out, json_t *msg, const pb_msg *pb) {
  uint8_t hdr[E2B_ENV_HEADER_SIZE];
  if (pb) {
    sbuf bin = {0};
    if (pb_encode(pb, msg, &bin) != 0) bin.len = 0; /* cannot happen for our own messages */
    json_decref(msg);
    e2b_envelope_header(0, (uint32_t)bin.len, hdr);
    sbuf_append(out, hdr, sizeof hdr);
    sbuf_append(out, bin.data ? bin.data : "", bin.len);
    sbuf_free(&bin);
    return;
  }
  drop_empty_lists(msg);
  char *text = json_dumps(msg, JSON_COMPACT);
  json_decref(msg);
  size_t len = text ? strlen(text) : 0;
  e2b_envelope_header(0, (uint32_t)len, hdr);
  sbuf_append(out, hdr, sizeof hdr);
  sbuf_append(out, text, len);
  free(text);
}

void rpc_env_end(sbuf *out, const rpc_err *e) {
  json_t *body = e && e->code ? json_pack("{s:{s:s, s:o}}", "error", "code", e->code, "message", pj_text(e->msg))
                              : json_object();
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  size_t len = strlen(text);
  uint8_t hdr[E2B_ENV_HEADER_SIZE];
  e2b_envelope_header(E2B_ENV_FLAG_END_STREAM, (uint32_t)len, hdr);
  sbuf_append(out, hdr, sizeof hdr);
  sbuf_append(out, text, len);
  free(text);
}

static enum MHD_Result unary_error(struct MHD_Connection *c, const rpc_err *e) {
  json_t *body = json_pack("{s:s, s:o}", "code", e->code, "message", pj_text(e->msg));
  return http_json(c, (unsigned)e2b_connect_code_http_status(e->code), body);
}

/* A stream that fails before its first message is still HTTP 200 + end-stream
 * (always JSON, whatever the codec of the messages). */
static enum MHD_Result stream_error(struct MHD_Connection *c, const rpc_err *e, int proto) {
  sbuf b = {0};
  rpc_env_end(&b, e);
  enum MHD_Result res = http_bytes(c, 200, proto ? "application/connect+proto" : "application/connect+json", b.data, b.len);
  sbuf_free(&b);
  return res;
}

/* One request message from its payload, in the call's codec. */
static json_t *decode_msg(const rpc_method *m, int proto, const uint8_t *data, size_t len, rpc_err *e) {
  static const uint8_t none[1];
  if (!data) data = none;
  if (proto) {
    json_t *msg = pb_decode(m->in, data, len);
    if (!msg) rpc_fail(e, "invalid_argument", "invalid protobuf message");
    return msg;
  }
  json_error_t je;
  json_t *msg = json_loadb((const char *)data, len, 0, &je);
  if (!msg) rpc_fail(e, "invalid_argument", "invalid JSON message: %s", je.text);
  return msg;
}

/* The single request message of a server stream, from its envelope. */
static json_t *unwrap_stream_request(const rpc_method *m, int proto, const sbuf *body, rpc_err *e) {
  e2b_envelope_decoder d;
  e2b_envelope_decoder_init(&d, RPC_BODY_LIMIT);
  size_t used = 0;
  json_t *msg = NULL;
  static const uint8_t none[1];
  /* never hand memcpy a NULL source, even for 0 bytes */
  const uint8_t *data = body->data ? (const uint8_t *)body->data : none;
  e2b_envelope_status st = e2b_envelope_feed(&d, data, body->len, &used);
  if (st != E2B_ENV_FRAME) {
    rpc_fail(e, "invalid_argument", "request body is not one complete Connect envelope");
  } else if (d.flags & E2B_ENV_FLAG_COMPRESSED) {
    rpc_fail(e, "unimplemented", "compressed request messages are not supported");
  } else {
    msg = decode_msg(m, proto, d.payload, d.payload_len, e);
  }
  e2b_envelope_decoder_free(&d);
  return msg;
}

static int content_type_is(const char *ct, const char *want) {
  if (!ct) return 0;
  size_t n = strlen(want);
  return strncasecmp(ct, want, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static int64_t header_int(struct MHD_Connection *c, const char *name, int64_t dflt) {
  const char *v = http_header(c, name);
  if (!v || !*v) return dflt;
  char *end;
  long long x = strtoll(v, &end, 10);
  return *end || x < 0 ? dflt : x;
}

typedef struct rpc_ctx {
  const rpc_method *m;
  int proto;    /* binary protobuf codec */
  int bad_type; /* unsupported Content-Type: 415 */
  rpc_call call;
  rpc_err err;
  /* client streams */
  e2b_envelope_decoder dec;
  void *cs_state;
  int ended; /* an end-stream envelope arrived */
} rpc_ctx;

static void ctx_free(void *p) {
  rpc_ctx *x = p;
  if (x->m->client_stream && x->cs_state) {
    rpc_err ignored = {0};
    x->m->client_stream(&x->call, NULL, &x->cs_state, &ignored); /* releases the state */
  }
  e2b_envelope_decoder_free(&x->dec);
  free(x);
}

/* Headers a call needs: timeouts, keepalive, the user. */
static void setup_call(http_req *r, rpc_ctx *x) {
  struct MHD_Connection *c = r->conn;
  x->call.r = r;
  x->call.timeout_ms = header_int(c, "Connect-Timeout-Ms", 0);
  x->call.keepalive_ms = (int)header_int(c, "Keepalive-Ping-Interval", DEFAULT_KEEPALIVE_S) * 1000;
  if (x->call.keepalive_ms <= 0 || x->call.keepalive_ms > 3600 * 1000) x->call.keepalive_ms = DEFAULT_KEEPALIVE_S * 1000;
  x->call.out_pb = x->proto ? x->m->out : NULL;
  x->call.user = user_from_auth(http_header(c, "Authorization"), r->sb, &x->err);
}

static enum MHD_Result respond_unary(http_req *r, rpc_ctx *x, json_t *resp) {
  if (!resp) resp = json_object(); /* empty response messages */
  if (!x->proto) {
    drop_empty_lists(resp);
    return http_json(r->conn, 200, resp);
  }
  sbuf bin = {0};
  int rc = pb_encode(x->m->out, resp, &bin);
  json_decref(resp);
  if (rc != 0) {
    sbuf_free(&bin);
    rpc_fail(&x->err, "internal", "cannot encode the response");
    return unary_error(r->conn, &x->err);
  }
  enum MHD_Result res = http_bytes(r->conn, 200, "application/proto", bin.data ? bin.data : "", bin.len);
  sbuf_free(&bin);
  return res;
}

/* envd's Connect handlers list every protocol connect-go speaks. */
#define ACCEPT_POST_GRPC                                                                               \
  "application/grpc, application/grpc+json, application/grpc+json; charset=utf-8, application/grpc+proto, " \
  "application/grpc-web, application/grpc-web+json, application/grpc-web+json; charset=utf-8, "             \
  "application/grpc-web+proto"
#define ACCEPT_POST_UNARY ACCEPT_POST_GRPC ", application/json, application/json; charset=utf-8, application/proto"
#define ACCEPT_POST_STREAM                                                                                 \
  "application/connect+json, application/connect+json; charset=utf-8, application/connect+proto, " ACCEPT_POST_GRPC

static enum MHD_Result rpc_complete(http_req *r) {
  rpc_ctx *x = r->ctx;
  const rpc_method *m = x->m;
  struct MHD_Connection *c = r->conn;
  int streaming = m->stream != NULL || m->client_stream != NULL;
  if (x->bad_type) /* as Connect's handler answers: no body, what it takes in Accept-Post */
    return http_empty_h(c, 415, "Accept-Post", streaming ? ACCEPT_POST_STREAM : ACCEPT_POST_UNARY);
  x->call.sb = r->sb;
  if (m->client_stream) {
    /* every message was handled as it arrived; this ends the stream */
    if (!x->err.code && !x->ended && !e2b_envelope_idle(&x->dec))
      rpc_fail(&x->err, "invalid_argument", "the request stream ended inside an envelope");
    if (!x->err.code) m->client_stream(&x->call, NULL, &x->cs_state, &x->err);
    x->cs_state = NULL;
    sbuf b = {0};
    if (!x->err.code) rpc_env_msg(&b, json_object(), x->call.out_pb);
    rpc_env_end(&b, &x->err);
    enum MHD_Result res = http_bytes(c, 200, x->proto ? "application/connect+proto" : "application/connect+json", b.data, b.len);
    sbuf_free(&b);
    return res;
  }
  rpc_err *e = &x->err;
  if (!e->code) {
    if (streaming)
      x->call.msg = unwrap_stream_request(m, x->proto, &r->body, e);
    else
      x->call.msg = decode_msg(m, x->proto, (const uint8_t *)r->body.data, r->body.len, e);
  }
  if (!e->code && !json_is_object(x->call.msg)) rpc_fail(e, "invalid_argument", "the request message must be a JSON object");
  enum MHD_Result res;
  if (streaming) {
    stream_src src = {0};
    if (!e->code && m->stream(&x->call, &src, e) == 0)
      res = http_stream(r, 200, x->proto ? "application/connect+proto" : "application/connect+json", MHD_SIZE_UNKNOWN, 1, src);
    else
      res = stream_error(c, e, x->proto);
  } else {
    json_t *resp = NULL;
    if (!e->code && m->unary(&x->call, &resp, e) == 0)
      res = respond_unary(r, x, resp);
    else
      res = unary_error(c, e);
  }
  json_decref(x->call.msg);
  x->call.msg = NULL;
  return res;
}

/* Client stream bodies: each envelope is handled as soon as it is complete. */
static int client_stream_body(http_req *r, const char *data, size_t n) {
  rpc_ctx *x = r->ctx;
  x->call.sb = r->sb;
  const uint8_t *p = (const uint8_t *)data;
  while (n > 0 && !x->err.code && !x->ended) {
    size_t used = 0;
    e2b_envelope_status st = e2b_envelope_feed(&x->dec, p, n, &used);
    p += used;
    n -= used;
    if (st == E2B_ENV_NEED_MORE) break;
    if (st != E2B_ENV_FRAME) {
      rpc_fail(&x->err, "resource_exhausted", "request message too large");
      break;
    }
    if (x->dec.flags & E2B_ENV_FLAG_END_STREAM) {
      x->ended = 1;
    } else if (x->dec.flags & E2B_ENV_FLAG_COMPRESSED) {
      rpc_fail(&x->err, "unimplemented", "compressed request messages are not supported");
    } else {
      json_t *msg = decode_msg(x->m, x->proto, x->dec.payload, x->dec.payload_len, &x->err);
      if (msg && !json_is_object(msg)) rpc_fail(&x->err, "invalid_argument", "the request message must be an object");
      if (msg && !x->err.code) x->m->client_stream(&x->call, msg, &x->cs_state, &x->err);
      json_decref(msg);
    }
    e2b_envelope_decoder_reset(&x->dec);
  }
  return 0; /* errors are answered at the end; the rest of the body is ignored */
}

void rpc_route(http_req *r, const rpc_method *m) {
  rpc_ctx *x = xcalloc(1, sizeof *x);
  x->m = m;
  e2b_envelope_decoder_init(&x->dec, RPC_BODY_LIMIT);
  r->ctx = x;
  r->ctx_free = ctx_free;
  r->body_limit = RPC_BODY_LIMIT;
  r->on_complete = rpc_complete;
  const char *ct = http_header(r->conn, "Content-Type");
  int streaming = m->stream != NULL || m->client_stream != NULL;
  if (content_type_is(ct, streaming ? "application/connect+proto" : "application/proto"))
    x->proto = 1;
  else if (!content_type_is(ct, streaming ? "application/connect+json" : "application/json"))
    x->bad_type = 1;
  setup_call(r, x);
  if (m->client_stream && !x->bad_type) r->on_body = client_stream_body;
}
