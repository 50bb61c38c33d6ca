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
  case ENOSPC: code = "resource_exhausted"; break;
  default: break;
  }
  rpc_fail(e, code, "%s: %s", what, err == ESRCH ? "sandbox is not running" : strerror(err));
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

/* Authorization: Basic base64("<user>:") picks the user; absent = "user". */
static const rpc_user *user_from_auth(const char *auth, rpc_err *e) {
  if (!auth) return rpc_user_by_name("user");
  if (strncasecmp(auth, "Basic ", 6) != 0) {
    rpc_fail(e, "unauthenticated", "unsupported authorization scheme");
    return NULL;
  }
  uint8_t *dec = NULL;
  size_t n = 0;
  const char *b = auth + 6;
  if (e2b_b64_decode_alloc(b, strlen(b), &dec, &n) != 0) {
    rpc_fail(e, "unauthenticated", "invalid authorization header");
    return NULL;
  }
  char name[64];
  size_t len = 0;
  while (len < n && len < sizeof name - 1 && dec[len] != ':') {
    name[len] = (char)dec[len];
    len++;
  }
  name[len] = '\0';
  free(dec);
  const rpc_user *u = rpc_user_by_name(name);
  if (!u) rpc_fail(e, "unauthenticated", "invalid username: '%s'", name);
  return u;
}

void rpc_env_msg(sbuf *out, json_t *msg) {
  char *text = json_dumps(msg, JSON_COMPACT);
  json_decref(msg);
  size_t len = text ? strlen(text) : 0;
  uint8_t hdr[E2B_ENV_HEADER_SIZE];
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

/* A stream that fails before its first message is still HTTP 200 + end-stream. */
static enum MHD_Result stream_error(struct MHD_Connection *c, const rpc_err *e) {
  sbuf b = {0};
  rpc_env_end(&b, e);
  enum MHD_Result res = http_bytes(c, 200, "application/connect+json", b.data, b.len);
  sbuf_free(&b);
  return res;
}

/* The single request message of a server stream, from its envelope. */
static json_t *unwrap_stream_request(const sbuf *body, rpc_err *e) {
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
    json_error_t je;
    msg = json_loadb((const char *)d.payload, d.payload_len, 0, &je);
    if (!msg) rpc_fail(e, "invalid_argument", "invalid JSON message: %s", je.text);
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

static enum MHD_Result rpc_complete(http_req *r) {
  const rpc_method *m = r->ctx;
  struct MHD_Connection *c = r->conn;
  int streaming = m->stream != NULL;
  const char *ct = http_header(c, "Content-Type");
  const char *want = streaming ? "application/connect+json" : "application/json";
  if (!content_type_is(ct, want))
    return http_error(c, 415, "unsupported content type '%s' (expected %s)", ct ? ct : "", want);
  rpc_err e = {0};
  rpc_call call = {.r = r, .sb = r->sb};
  call.timeout_ms = header_int(c, "Connect-Timeout-Ms", 0);
  call.keepalive_ms = (int)header_int(c, "Keepalive-Ping-Interval", DEFAULT_KEEPALIVE_S) * 1000;
  if (call.keepalive_ms <= 0 || call.keepalive_ms > 3600 * 1000) call.keepalive_ms = DEFAULT_KEEPALIVE_S * 1000;
  if (streaming) {
    call.msg = unwrap_stream_request(&r->body, &e);
  } else {
    json_error_t je;
    call.msg = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, &je);
    if (!call.msg) rpc_fail(&e, "invalid_argument", "invalid JSON message: %s", je.text);
  }
  if (call.msg && !json_is_object(call.msg)) rpc_fail(&e, "invalid_argument", "the request message must be a JSON object");
  if (!e.code) call.user = user_from_auth(http_header(c, "Authorization"), &e);
  enum MHD_Result res;
  if (streaming) {
    stream_src src = {0};
    if (!e.code && m->stream(&call, &src, &e) == 0)
      res = http_stream(r, 200, "application/connect+json", MHD_SIZE_UNKNOWN, 1, src);
    else
      res = stream_error(c, &e);
  } else {
    json_t *resp = NULL;
    if (!e.code && m->unary(&call, &resp, &e) == 0)
      res = http_json(c, 200, resp ? resp : json_object());
    else
      res = unary_error(c, &e);
  }
  json_decref(call.msg);
  return res;
}

int rpc_unimplemented_unary(rpc_call *c, json_t **resp, rpc_err *e) {
  (void)resp;
  rpc_fail(e, "unimplemented", "%s is not implemented by e2b-local yet", c->r->url);
  return -1;
}

int rpc_unimplemented_stream(rpc_call *c, stream_src *src, rpc_err *e) {
  (void)src;
  rpc_fail(e, "unimplemented", "%s is not implemented by e2b-local yet", c->r->url);
  return -1;
}

void rpc_route(http_req *r, const rpc_method *m) {
  r->ctx = (void *)m; /* static table entry: nothing to free */
  r->body_limit = RPC_BODY_LIMIT;
  r->on_complete = rpc_complete;
}
