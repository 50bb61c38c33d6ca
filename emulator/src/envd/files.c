/* files.c — envd's /files: streaming download (with Range) and upload
 * (multipart or octet-stream), authorised by access token or URL signature.
 * The agent opens the file inside the sandbox and passes the descriptor up,
 * so bytes stream straight between the socket and the file. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#include "codec.h"
#include "connect_rpc.h"
#include "envd.h"
#include "envdver.h"
#include "files_parse.h"
#include "sandbox.h"
#include "util.h"

/* ---- authorisation (envd's: access token header, or a v1 URL signature) ---- */

static void early(http_req *r, int status, const char *msg) {
  if (r->early_status) return;
  r->early_status = status;
  snprintf(r->early_msg, sizeof r->early_msg, "%s", msg);
}

/* A correct X-Access-Token, or else a valid signature; a wrong header is
 * rejected even when a valid signature is present. */
static void check_auth(http_req *r, const char *op) {
  const char *token = r->sb->envd_token;
  if (!token) return;
  struct MHD_Connection *c = r->conn;
  const char *hdr = http_header(c, "X-Access-Token");
  if (hdr) {
    if (!e2b_secure_streq(hdr, token)) early(r, 401, "access token present in header but does not match");
    return;
  }
  const char *sig = http_query(c, "signature");
  if (!sig || !*sig) {
    early(r, 401, "missing signature query parameter");
    return;
  }
  const char *exp_s = http_query(c, "signature_expiration");
  int64_t exp = 0;
  if (exp_s && *exp_s) {
    char *end;
    exp = strtoll(exp_s, &end, 10);
    if (*end || exp <= 0) {
      early(r, 401, "invalid signature expiration");
      return;
    }
    if (exp < now_ms() / 1000) {
      early(r, 401, "signature is already expired");
      return;
    }
  }
  const char *path = http_query(c, "path"), *user = http_query(c, "username");
  char want[E2B_SIGNATURE_SIZE];
  if (e2b_sign_file_url(path ? path : "", op, user ? user : "", token, exp, want) != 0 ||
      !e2b_secure_streq(sig, want))
    early(r, 401, "invalid signature");
}

/* The user of a /files call is its username parameter (default: "user", or
 * the USER of the built template the sandbox came from). */
static const rpc_user *query_user(http_req *r) {
  const char *name = http_query(r->conn, "username");
  const char *dflt = r->sb && r->sb->default_user ? r->sb->default_user : "user";
  const rpc_user *u = rpc_user_by_name(name && *name ? name : dflt);
  if (!u) {
    char msg[sizeof r->early_msg];
    snprintf(msg, sizeof msg, "error looking up user '%.150s': user: unknown user %.150s", name, name);
    early(r, 401, msg);
  }
  return u;
}

static unsigned status_for_errno(int err) {
  switch (err) {
  case ENOENT: return 404;
  case EISDIR:
  case ENOTDIR:
  case EINVAL:
  case ENAMETOOLONG: return 400;
  case EACCES:
  case EPERM:
  case EROFS: return 403;
  case ENOSPC:
  case EDQUOT: return 507;
  case ESRCH: return 502;
  case ETIMEDOUT: return 504; /* the agent did not answer in time */
  default: return 500;
  }
}

/* upload: the failure is an upload's (envd words a directory apart). */
static enum MHD_Result errno_response(struct MHD_Connection *c, int err, const char *path, int upload) {
  unsigned st = status_for_errno(err);
  if (err == EISDIR && upload) return http_error(c, 400, "path is a directory: %s", path);
  if (err == EISDIR) return http_error(c, 400, "path '%s' is a directory", path);
  if (err == ENOENT) return http_error(c, 404, "path '%s' does not exist", path);
  if (err == ESRCH) return http_error(c, 502, "The sandbox was not found or is not running");
  if (err == EOPNOTSUPP) return http_error(c, 500, "%s: the filesystem does not support file metadata", path);
  if (err == EINVAL) return http_error(c, 400, "path '%s' is not a regular file", path);
  return http_error(c, st, "%s: %s", path, strerror(err));
}

/* ---- download ---- */

/* Parses a single "bytes=" range against size. 0 = no/ignored range,
 * 1 = satisfiable [*from, *to], -1 = unsatisfiable. */
static int parse_range(const char *h, uint64_t size, uint64_t *from, uint64_t *to) {
  if (!h || strncasecmp(h, "bytes=", 6) != 0 || strchr(h, ',')) return 0;
  const char *s = h + 6;
  char *end;
  if (*s == '-') {
    unsigned long long suffix = strtoull(s + 1, &end, 10);
    if (end == s + 1 || *end) return 0;
    if (suffix == 0 || size == 0) return -1;
    *from = suffix >= size ? 0 : size - suffix;
    *to = size - 1;
    return 1;
  }
  unsigned long long a = strtoull(s, &end, 10);
  if (end == s || *end != '-') return 0;
  s = end + 1;
  unsigned long long b = size ? size - 1 : 0;
  if (*s) {
    b = strtoull(s, &end, 10);
    if (*end || b < a) return 0;
    if (b >= size) b = size - 1;
  }
  if (a >= size) return -1;
  *from = a;
  *to = b;
  return 1;
}

/* gzip on the fly, 64 KiB at a time: memory stays bounded. */
typedef struct gz_src {
  int fd;
  z_stream z;
  int finished;
} gz_src;

static int gz_fill(void *ctx, sbuf *out) {
  gz_src *s = ctx;
  if (s->finished) return 1;
  unsigned char in[65536];
  ssize_t n;
  do {
    n = read(s->fd, in, sizeof in);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -1;
  s->z.next_in = in;
  s->z.avail_in = (uInt)n;
  int flush = n == 0 ? Z_FINISH : Z_NO_FLUSH;
  do {
    sbuf_reserve(out, 65536);
    s->z.next_out = (unsigned char *)out->data + out->len;
    s->z.avail_out = 65536;
    int rc = deflate(&s->z, flush);
    if (rc == Z_STREAM_ERROR) return -1;
    out->len += 65536 - s->z.avail_out;
    if (rc == Z_STREAM_END) s->finished = 1;
  } while (s->z.avail_out == 0);
  return s->finished;
}

static void gz_free(void *ctx) {
  gz_src *s = ctx;
  deflateEnd(&s->z);
  close(s->fd);
  free(s);
}

/* Accept-Encoding: 1 gzip, 0 identity, -1 nothing acceptable (406).
 * gzip only when it is the one coding asked for (what the SDK's gzip option
 * sends): HTTP clients that list several by default (undici: "gzip, deflate")
 * get identity, which HTTP allows and which is far faster on loopback. */
static int pick_encoding(const char *h) {
  if (!h || !*h) return 0;
  int gzip = 0, identity = 1, star = -1;
  char *copy = xstrdup(h), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    while (*t == ' ') t++;
    char *semi = strchr(t, ';');
    double q = 1;
    if (semi) {
      *semi = '\0';
      const char *qs = strstr(semi + 1, "q=");
      if (qs) q = strtod(qs + 2, NULL);
    }
    for (char *e = t + strlen(t); e > t && e[-1] == ' ';) *--e = '\0';
    if (strcasecmp(t, "gzip") == 0 || strcasecmp(t, "x-gzip") == 0) gzip = q > 0;
    else if (strcasecmp(t, "identity") == 0) identity = q > 0;
    else if (strcmp(t, "*") == 0) star = q > 0;
  }
  free(copy);
  int only_gzip = gzip && !strchr(h, ',');
  if (only_gzip || (!identity && (gzip || star == 1))) return 1;
  if (identity && star != 0) return 0;
  return identity && strcasestr(h, "identity") ? 0 : -1;
}

/* Go's token characters (mime.FormatMediaType's test for a bare value). */
static int token_char(unsigned char ch) {
  return ch > ' ' && ch < 0x7f && !strchr("()<>@,;:\\\"/[]?=", ch);
}

/* Content-Disposition: inline; filename=<the file's name>, as envd (from
 * 0.5.1) writes it with mime.FormatMediaType: bare when a token, quoted when
 * printable ASCII, else RFC 2231 (filename*=utf-8''%XX...). Malloc'd. */
static char *content_disposition(const char *path) {
  const char *base = strrchr(path, '/');
  base = base && base[1] ? base + 1 : path;
  int token = *base != 0, ascii = 1;
  for (const unsigned char *p = (const unsigned char *)base; *p; p++) {
    token &= token_char(*p);
    ascii &= (*p >= ' ' && *p <= '~') || *p == '\t';
  }
  sbuf b = {0};
  sbuf_append(&b, "inline; filename", 16);
  if (token || ascii) {
    sbuf_append(&b, token ? "=" : "=\"", token ? 1 : 2);
    for (const char *p = base; *p; p++) {
      if (!token && (*p == '"' || *p == '\\')) sbuf_append(&b, "\\", 1);
      sbuf_append(&b, p, 1);
    }
    if (!token) sbuf_append(&b, "\"", 1);
  } else {
    sbuf_append(&b, "*=utf-8''", 9);
    for (const unsigned char *p = (const unsigned char *)base; *p; p++) {
      char hex[4];
      int plain = token_char(*p) && !strchr("*'%", *p);
      snprintf(hex, sizeof hex, "%%%02X", *p);
      sbuf_append(&b, plain ? (const char *)p : hex, plain ? 1 : 3);
    }
  }
  sbuf_append(&b, "", 1);
  return b.data;
}

/* The file's bytes (fd, owned) as envd serves them: gzip when that is the
 * coding asked for, else identity with ranges. */
static enum MHD_Result send_file(http_req *r, int fd, uint64_t size, const char *disposition) {
  struct MHD_Connection *c = r->conn;
  uint64_t from = 0, to = size ? size - 1 : 0;
  int range = parse_range(http_header(c, "Range"), size, &from, &to);
  /* identity for ranges, and for empty files (clients rely on Content-Length: 0) */
  int enc = range || size == 0 ? 0 : pick_encoding(http_header(c, "Accept-Encoding"));
  if (enc < 0) {
    close(fd);
    return http_error(c, 406, "no acceptable content encoding (supported: [identity, gzip])");
  }
  if (enc == 1 && r->fault.action != FA_DROP_MID) {
    gz_src *g = xcalloc(1, sizeof *g);
    g->fd = fd;
    if (deflateInit2(&g->z, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      close(fd);
      free(g);
      return http_error(c, 500, "cannot initialise gzip encoding");
    }
    json_t *h = json_pack("[[s,s],[s,s],[s,s]]", "Content-Type", "application/octet-stream", "Content-Encoding", "gzip",
                          "Vary", "Accept-Encoding");
    if (disposition) json_array_append_new(h, json_pack("[s,s]", "Content-Disposition", disposition));
    enum MHD_Result res = http_stream_h(r, 200, h, MHD_SIZE_UNKNOWN, 0, (stream_src){gz_fill, gz_free, g});
    json_decref(h);
    return res;
  }
  if (range < 0) {
    close(fd);
    /* Go's http.ServeContent answers it so */
    static const char why[] = "invalid range: failed to overlap\n";
    struct MHD_Response *resp = MHD_create_response_from_buffer(sizeof why - 1, (void *)why, MHD_RESPMEM_PERSISTENT);
    char cr[64];
    snprintf(cr, sizeof cr, "bytes */%" PRIu64, size);
    MHD_add_response_header(resp, "Content-Range", cr);
    MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
    enum MHD_Result res = MHD_queue_response(c, 416, resp);
    MHD_destroy_response(resp);
    return res;
  }
  uint64_t len = range > 0 ? to - from + 1 : size;
  /* the same body through the stream adapter, where an injected cut applies */
  if (r->fault.action == FA_DROP_MID) return http_stream_file(r, range > 0 ? 206 : 200, fd, from, len);
  /* MHD owns and closes fd; it streams (or sendfile()s) from the offset. */
  struct MHD_Response *resp = MHD_create_response_from_fd_at_offset64(len, fd, from);
  if (!resp) {
    close(fd);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
  MHD_add_response_header(resp, "Accept-Ranges", "bytes");
  MHD_add_response_header(resp, "Vary", "Accept-Encoding");
  if (disposition) MHD_add_response_header(resp, "Content-Disposition", disposition);
  if (range > 0) {
    char cr[96];
    snprintf(cr, sizeof cr, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, from, to, size);
    MHD_add_response_header(resp, "Content-Range", cr);
  }
  enum MHD_Result res = MHD_queue_response(c, range > 0 ? 206 : 200, resp);
  MHD_destroy_response(resp);
  return res;
}

static enum MHD_Result download(http_req *r) {
  struct MHD_Connection *c = r->conn;
  const char *qpath = http_query(c, "path");
  const rpc_user *u = query_user(r);
  if (!u) return http_error(c, 401, "%s", r->early_msg);
  char *path = rpc_resolve_path(u, qpath ? qpath : ""); /* none: the user's home */
  json_t *req = json_pack("{s:s, s:i, s:i}", "path", path, "uid", u->uid, "gid", u->gid);
  ipc_msg reply;
  int rc = sandbox_call(r->sb, IPC_OPEN_READ, req, &reply);
  json_decref(req);
  if (rc || reply.err) {
    enum MHD_Result res = errno_response(c, rc ? -rc : reply.err, path, 0);
    if (!rc) ipc_msg_clear(&reply);
    free(path);
    return res;
  }
  char *disposition = envd_below(ENVD_SINCE_CONTENT_DISPOSITION) ? NULL : content_disposition(path);
  free(path);
  uint64_t size = (uint64_t)json_integer_value(json_object_get(reply.body, "size"));
  int fd = ipc_take_fd(&reply, 0);
  ipc_msg_clear(&reply);
  enum MHD_Result res = send_file(r, fd, size, disposition);
  free(disposition);
  return res;
}

/* ---- upload ---- */

typedef struct upload {
  http_req *r;
  const rpc_user *user;
  const char *qpath; /* query path: overrides every part's filename */
  struct MHD_PostProcessor *pp;
  int fd;
  int err; /* first failure (errno) */
  char *err_path;
  json_t *results; /* [{path,name,type}] */
  json_t *metadata; /* from X-Metadata-* headers */
  int in_part;
  uint64_t part_bytes;
  z_stream *z; /* Content-Encoding: gzip (octet-stream uploads) */
  int z_done;
} upload;

static void upload_free(void *p) {
  upload *u = p;
  if (u->z) {
    inflateEnd(u->z);
    free(u->z);
  }
  if (u->pp) MHD_destroy_post_processor(u->pp);
  if (u->fd >= 0) close(u->fd);
  free(u->err_path);
  json_decref(u->results);
  json_decref(u->metadata);
  free(u);
}

static void fail(upload *u, int err, const char *path) {
  if (u->err) return;
  u->err = err;
  u->err_path = xstrdup(path);
}

/* Opens (creating parents, truncating, owned by the user) the next target. */
static void open_target(upload *u, const char *raw) {
  if (u->fd >= 0) close(u->fd);
  u->fd = -1;
  char *path = rpc_resolve_path(u->user, raw);
  size_t n = json_array_size(u->results);
  for (size_t i = 0; i < n; i++)
    if (strcmp(json_string_value(json_object_get(json_array_get(u->results, i), "path")), path) == 0 &&
        !u->qpath) {
      fail(u, EEXIST, path);
      free(path);
      return;
    }
  json_t *req = json_pack("{s:s, s:i, s:i, s:O}", "path", path, "uid", u->user->uid, "gid",
                          u->user->gid, "metadata", u->metadata);
  ipc_msg reply;
  int rc = sandbox_call(u->r->sb, IPC_OPEN_WRITE, req, &reply);
  json_decref(req);
  if (rc || reply.err) {
    fail(u, rc ? -rc : reply.err, path);
    if (!rc) ipc_msg_clear(&reply);
    free(path);
    return;
  }
  u->fd = ipc_take_fd(&reply, 0);
  ipc_msg_clear(&reply);
  const char *slash = strrchr(path, '/');
  json_t *res = json_pack("{s:s, s:s, s:s}", "path", path, "name", slash ? slash + 1 : path, "type", "file");
  if (json_object_size(u->metadata)) json_object_set(res, "metadata", u->metadata);
  json_array_append_new(u->results, res);
  free(path);
}

static void write_chunk(upload *u, const char *data, size_t n) {
  if (u->err || u->fd < 0 || n == 0) return;
  if (write_all(u->fd, data, n) != 0) {
    const char *p = json_string_value(json_object_get(json_array_get(u->results, json_array_size(u->results) - 1), "path"));
    fail(u, errno, p ? p : "");
  }
}

static enum MHD_Result part_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data, uint64_t off,
                                 size_t size) {
  (void)kind;
  (void)content_type;
  (void)transfer_encoding;
  upload *u = cls;
  if (!key || strcmp(key, "file") != 0 || u->err) return MHD_YES;
  /* MHD announces each part with (off 0, size 0), then delivers its data
   * from off 0 again: a part starts at off 0 unless it continues an
   * announced part that has had no data yet. */
  int continues = u->in_part && u->part_bytes == 0 && size > 0;
  if (off == 0 && !continues) {
    u->in_part = 1;
    u->part_bytes = 0;
    const char *target = u->qpath ? u->qpath : filename;
    if (!target || !*target) {
      fail(u, EINVAL, "");
      return MHD_YES;
    }
    open_target(u, target);
  }
  u->part_bytes += size;
  write_chunk(u, data, size);
  return MHD_YES;
}

/* Inflates a gzip body chunk by chunk: memory stays bounded whatever its size. */
static void write_gzip(upload *u, const char *data, size_t n) {
  unsigned char out[64 * 1024];
  u->z->next_in = (unsigned char *)data;
  u->z->avail_in = (uInt)n;
  while (!u->err && u->z->avail_in > 0 && !u->z_done) {
    u->z->next_out = out;
    u->z->avail_out = sizeof out;
    int rc = inflate(u->z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      fail(u, EILSEQ, "");
      return;
    }
    write_chunk(u, (const char *)out, sizeof out - u->z->avail_out);
    if (rc == Z_STREAM_END) u->z_done = 1;
    if (rc == Z_BUF_ERROR && u->z->avail_out != 0) break;
  }
}

static int upload_body(http_req *r, const char *data, size_t n) {
  upload *u = r->ctx;
  if (r->early_status) return 0; /* discard: the error is answered at the end */
  if (u->pp) {
    if (MHD_post_process(u->pp, data, n) != MHD_YES) fail(u, EBADMSG, "");
    return 0;
  }
  if (u->fd < 0 && !u->err) open_target(u, u->qpath);
  if (u->z)
    write_gzip(u, data, n);
  else
    write_chunk(u, data, n);
  return 0;
}

static enum MHD_Result upload_complete(http_req *r) {
  upload *u = r->ctx;
  if (!u->pp && u->fd < 0 && !u->err) open_target(u, u->qpath); /* empty body */
  if (u->z && !u->z_done && !u->err) fail(u, EILSEQ, "");
  if (u->fd >= 0) {
    if (close(u->fd) != 0) fail(u, errno, "");
    u->fd = -1;
  }
  if (u->err == EBADMSG) return http_error(r->conn, 400, "malformed multipart body");
  if (u->err == EILSEQ) return http_error(r->conn, 400, "invalid or truncated gzip body");
  if (u->err == EEXIST) return http_error(r->conn, 400, "duplicate target path '%s' in one upload", u->err_path);
  if (u->err == EINVAL && !*u->err_path) return http_error(r->conn, 400, "a file part has no filename and no path query was given");
  if (u->err) return errno_response(r->conn, u->err, u->err_path, 1);
  if (json_array_size(u->results) == 0) return http_error(r->conn, 400, "no file part named 'file' in the upload");
  return http_json(r->conn, 200, json_incref(u->results));
}

#define META_KEY_MAX 246
#define META_TOTAL_MAX 4096

typedef struct meta_acc {
  json_t *map;
  size_t total;
  const char *bad;
} meta_acc;

/* X-Metadata-<key>: <value> (upload metadata headers): key lowercased, printable ASCII
 * values, bounded sizes, first value wins. */
static enum MHD_Result collect_metadata(void *cls, enum MHD_ValueKind kind, const char *key,
                                        const char *value) {
  (void)kind;
  meta_acc *m = cls;
  if (strncasecmp(key, "X-Metadata-", 11) != 0 || m->bad) return MHD_YES;
  const char *k = key + 11;
  size_t klen = strlen(k), vlen = value ? strlen(value) : 0;
  if (klen == 0 || klen > META_KEY_MAX) {
    m->bad = "metadata keys must be 1 to 246 bytes";
    return MHD_YES;
  }
  for (size_t i = 0; i < vlen; i++)
    if ((unsigned char)value[i] < 0x20 || (unsigned char)value[i] > 0x7e) {
      m->bad = "metadata values must be printable ASCII";
      return MHD_YES;
    }
  char lower[META_KEY_MAX + 1];
  for (size_t i = 0; i <= klen; i++) lower[i] = (char)((k[i] >= 'A' && k[i] <= 'Z') ? k[i] - 'A' + 'a' : k[i]);
  if (json_object_get(m->map, lower)) return MHD_YES;
  m->total += klen + vlen;
  if (m->total > META_TOTAL_MAX) {
    m->bad = "metadata may not exceed 4096 bytes in total";
    return MHD_YES;
  }
  json_object_set_new(m->map, lower, json_string(value ? value : ""));
  return MHD_YES;
}

static void setup_upload(http_req *r) {
  struct MHD_Connection *c = r->conn;
  upload *u = xcalloc(1, sizeof *u);
  u->r = r;
  u->fd = -1;
  u->results = json_array();
  r->ctx = u;
  r->ctx_free = upload_free;
  r->on_body = upload_body;
  r->on_complete = upload_complete;
  check_auth(r, "write");
  u->user = query_user(r);
  const char *q = http_query(c, "path");
  u->qpath = q && *q ? q : NULL;
  const char *ct = http_header(c, "Content-Type");
  const char *enc = http_header(c, "Content-Encoding");
  meta_acc meta = {json_object(), 0, NULL};
  MHD_get_connection_values(c, MHD_HEADER_KIND, collect_metadata, &meta);
  u->metadata = meta.map;
  int gzip = enc && strcasecmp(enc, "gzip") == 0;
  if (enc && !gzip && strcasecmp(enc, "identity") != 0)
    early(r, 400, "unsupported Content-Encoding (supported: identity, gzip)");
  else if (gzip && ct && strncasecmp(ct, "application/octet-stream", 24) != 0)
    early(r, 400, "gzip uploads must be application/octet-stream");
  else if (meta.bad)
    early(r, 400, meta.bad);
  else if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
    u->pp = MHD_create_post_processor(c, 64 * 1024, part_iter, u);
    if (!u->pp) early(r, 400, "malformed multipart Content-Type (missing boundary?)");
  } else if (ct && strncasecmp(ct, "application/octet-stream", 24) == 0) {
    if (!u->qpath) early(r, 400, "path query parameter is required for raw body upload");
    if (gzip) {
      u->z = xcalloc(1, sizeof *u->z);
      if (inflateInit2(u->z, 16 + MAX_WBITS) != Z_OK) early(r, 500, "cannot initialise gzip decoding");
    }
  } else {
    early(r, 400, "unsupported Content-Type (expected multipart/form-data or application/octet-stream)");
  }
}

char *files_sandbox_by_signature(struct MHD_Connection *c, const char *method) {
  const char *sig = http_query(c, "signature");
  if (!sig || !*sig) return NULL;
  const char *path = http_query(c, "path"), *user = http_query(c, "username");
  const char *exp_s = http_query(c, "signature_expiration");
  int64_t exp = exp_s ? strtoll(exp_s, NULL, 10) : 0;
  const char *op = strcmp(method, "GET") == 0 ? "read" : "write";
  size_t n;
  sandbox **all = sandbox_list(&n);
  char *found = NULL;
  for (size_t i = 0; i < n && !found; i++) {
    char want[E2B_SIGNATURE_SIZE];
    if (all[i]->envd_token &&
        e2b_sign_file_url(path ? path : "", op, user ? user : "", all[i]->envd_token, exp, want) == 0 &&
        e2b_secure_streq(sig, want))
      found = xstrdup(all[i]->id);
  }
  sandbox_list_free(all, n);
  return found;
}

void files_route(http_req *r) {
  if (strcmp(r->method, "GET") == 0) {
    check_auth(r, "read");
    r->on_complete = download;
  } else {
    setup_upload(r);
  }
}

int files_parse_range(const char *header, uint64_t size, uint64_t *from, uint64_t *to) {
  return parse_range(header, size, from, to);
}

int files_pick_encoding(const char *header) { return pick_encoding(header); }
