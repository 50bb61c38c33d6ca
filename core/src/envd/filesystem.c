/* filesystem.c — envd's filesystem.Filesystem service, the /files transfer
 * endpoints (streamed both ways) and /health. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int e2b_sbx_prepare_envd(e2b_sbx *s, e2b_req *req, const char *path_and_query, e2b_error *err);

static int check_text(const char *s, const char *field, const char *op, int required,
                      e2b_error *err) {
  if (!s) {
    if (!required) return 0;
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s is required", field);
    return -1;
  }
  if (required && !*s) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s must not be empty", field);
    return -1;
  }
  if (!e2b_utf8_valid(s, strlen(s))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s is not valid UTF-8", field);
    return -1;
  }
  return 0;
}

/* What entry answers leave in the result slot (E2B_RESULT_ENTRY, _ENTRIES). */
typedef struct entry_list {
  e2b_entry *items;
  size_t count;
} entry_list;

static void entry_list_free(void *p) {
  entry_list *l = p;
  for (size_t i = 0; i < l->count; i++) e2b_entry_clear(&l->items[i]);
  free(l->items);
  free(l);
}

/* req's entry list, made empty (NULL: out of memory). */
static entry_list *entries_new(e2b_req *req, e2b_error *err) {
  if (!(req->result = calloc(1, sizeof(entry_list)))) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return NULL;
  }
  req->result_free = entry_list_free;
  return req->result;
}

static const entry_list *entries_in(const e2b_req *req) {
  static const entry_list none;
  return req->result && req->result_free == entry_list_free ? req->result : &none;
}

static int parse_entry_field(e2b_req *req, json_t *body, e2b_error *err) {
  entry_list *l = entries_new(req, err);
  if (!l) return -1;
  if (!(l->items = calloc(1, sizeof *l->items)) ||
      e2b_parse_entry(json_object_get(body, "entry"), &l->items[0]) != 0) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, req->op, "response has no entry");
    return -1;
  }
  l->count = 1;
  return 0;
}

static int entry_item(json_t *obj, void *out) {
  e2b_entry *e = out;
  if (e2b_parse_entry(obj, e) != 0) return -1;
  /* Entries of unspecified type carry nothing a caller can use (the SDK skips them too). */
  if (strcmp(e->type, "unknown") != 0) return 0;
  e2b_entry_clear(e);
  return 1;
}

static int parse_entries(e2b_req *req, json_t *body, e2b_error *err) {
  entry_list *l = entries_new(req, err);
  if (!l) return -1;
  void *items;
  int rc = e2b_parse_items(json_object_get(body, "entries"), sizeof *l->items, entry_item, &items,
                           &l->count, req->op, "entry %zu is malformed", err);
  l->items = items;
  return rc;
}

static e2b_req *path_rpc(e2b_sbx *sbx, const char *op, const char *method, const char *path,
                         const char *user, req_parse_fn parse, e2b_error *err) {
  if (e2b_need_sbx(sbx, op, err)) return NULL;
  if (check_text(path, "path", op, 1, err) || check_text(user, "user", op, 0, err)) return NULL;
  return e2b_sbx_rpc(sbx, op, method, user, json_pack("{s:s}", "path", path), 0, parse, err);
}

e2b_req *e2b_fs_stat(e2b_sbx *sbx, const char *path, const char *user, e2b_error *err) {
  return e2b_req_typed(path_rpc(sbx, "files.stat", "/filesystem.Filesystem/Stat", path, user,
                                parse_entry_field, err),
                       E2B_RESULT_ENTRY);
}

e2b_req *e2b_fs_mkdir(e2b_sbx *sbx, const char *path, const char *user, e2b_error *err) {
  return e2b_req_typed(path_rpc(sbx, "files.mkdir", "/filesystem.Filesystem/MakeDir", path, user,
                                parse_entry_field, err),
                       E2B_RESULT_ENTRY);
}

e2b_req *e2b_fs_remove(e2b_sbx *sbx, const char *path, const char *user, e2b_error *err) {
  return path_rpc(sbx, "files.remove", "/filesystem.Filesystem/Remove", path, user, e2b_parse_nothing,
                  err);
}

/* A listing's depth: 0 is the default; the rest must fit envd's uint32. */
int e2b_list_depth(long *depth, const char *op, e2b_error *err) {
  if (*depth == 0) *depth = E2B_DEFAULT_LIST_DEPTH;
  if (*depth >= 1 && (unsigned long)*depth <= 0xffffffffUL) return 0;
  e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "depth must be a positive integer below 2^32");
  if (err) snprintf(err->field, sizeof err->field, "depth");
  return -1;
}

e2b_req *e2b_fs_list(e2b_sbx *sbx, const char *path, long depth, const char *user,
                     e2b_error *err) {
  const char *op = "files.list";
  if (e2b_need_sbx(sbx, op, err) || e2b_list_depth(&depth, op, err)) return NULL;
  if (check_text(path, "path", op, 1, err) || check_text(user, "user", op, 0, err)) return NULL;
  json_t *body = json_pack("{s:s, s:I}", "path", path, "depth", (json_int_t)depth);
  return e2b_req_typed(
      e2b_sbx_rpc(sbx, op, "/filesystem.Filesystem/ListDir", user, body, 0, parse_entries, err),
      E2B_RESULT_ENTRIES);
}

e2b_req *e2b_fs_move(e2b_sbx *sbx, const char *from, const char *to, const char *user,
                     e2b_error *err) {
  const char *op = "files.rename";
  if (e2b_need_sbx(sbx, op, err)) return NULL;
  if (check_text(from, "from", op, 1, err) || check_text(to, "to", op, 1, err) ||
      check_text(user, "user", op, 0, err))
    return NULL;
  json_t *body = json_pack("{s:s, s:s}", "source", from, "destination", to);
  return e2b_req_typed(
      e2b_sbx_rpc(sbx, op, "/filesystem.Filesystem/Move", user, body, 0, parse_entry_field, err),
      E2B_RESULT_ENTRY);
}

const e2b_entry *e2b_req_entry(const e2b_req *req) { return e2b_req_entry_at(req, 0); }
size_t e2b_req_entry_count(const e2b_req *req) { return entries_in(req)->count; }
const e2b_entry *e2b_req_entry_at(const e2b_req *req, size_t i) {
  const entry_list *l = entries_in(req);
  return i < l->count ? &l->items[i] : NULL;
}

/* ---- /files ---- */

/* "/files?path=<p>[&username=<u>]" */
static char *files_query(const char *path, const char *user) {
  char *p = e2b_url_escape(path), *u = user ? e2b_url_escape(user) : NULL;
  char *out = NULL;
  if (p && (!user || u)) {
    size_t n = strlen(p) + (u ? strlen(u) : 0) + 32;
    if ((out = malloc(n)))
      snprintf(out, n, "/files?path=%s%s%s", p, u ? "&username=" : "", u ? u : "");
  }
  free(p);
  free(u);
  return out;
}

static e2b_req *files_req(e2b_sbx *sbx, const char *op, const char *path, const char *user,
                          e2b_error *err) {
  if (e2b_need_sbx(sbx, op, err)) return NULL;
  if (check_text(path, "path", op, 1, err) || check_text(user, "user", op, 0, err)) return NULL;
  e2b_req *req = e2b_req_new(sbx->client->loop, op, err);
  if (!req) return NULL;
  char *pq = files_query(path, user);
  if (!pq || e2b_sbx_prepare_envd(sbx, req, pq, err) != 0) {
    free(pq);
    if (err->code == E2B_OK) e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    e2b_req_free(req);
    return NULL;
  }
  free(pq);
  req->error_style = ERR_ENVD_HTTP;
  curl_easy_setopt(req->easy, CURLOPT_CONNECTTIMEOUT_MS, sbx->client->request_timeout_ms);
  return req;
}

e2b_req *e2b_file_read(e2b_sbx *sbx, const char *path, const char *user, int64_t offset,
                       e2b_error *err) {
  return e2b_file_read_sized(sbx, path, user, offset, E2B_FILE_IO_BUFFER, err);
}

e2b_req *e2b_file_read_sized(e2b_sbx *sbx, const char *path, const char *user, int64_t offset,
                             long buffer, e2b_error *err) {
  if (offset < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "files.read", "offset must not be negative");
    return NULL;
  }
  e2b_req *req = files_req(sbx, "files.read", path, user, err);
  if (!req) return NULL;
  req->mode = BODY_CHUNKS;
  /* Larger reads from the socket: fewer callbacks and queued nodes a MiB;
   * a small read asks for little. */
  if (buffer < E2B_SMALL_READ_BUFFER) buffer = E2B_SMALL_READ_BUFFER;
  if (buffer > E2B_FILE_IO_BUFFER) buffer = E2B_FILE_IO_BUFFER;
  curl_easy_setopt(req->easy, CURLOPT_BUFFERSIZE, buffer);
  /* Repeatable until its first byte reaches the caller (transfer.c clears it). */
  req->idempotent = 1;
  if (offset > 0) {
    char range[48];
    snprintf(range, sizeof range, "%lld-", (long long)offset);
    curl_easy_setopt(req->easy, CURLOPT_RANGE, range);
  }
  return e2b_req_typed(e2b_req_start(req, err) == 0 ? req : NULL, E2B_RESULT_STREAM);
}

static int parse_written(e2b_req *req, json_t *body, e2b_error *err) {
  json_t *first = json_array_get(body, 0);
  const char *path = e2b_json_str(first, "path", NULL);
  if (!path) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, req->op, "upload answered without the written path");
    return -1;
  }
  if (!(req->result = strdup(path))) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return -1;
  }
  req->result_free = free;
  return 0;
}

e2b_req *e2b_file_write(e2b_sbx *sbx, const char *path, const char *user, e2b_error *err) {
  e2b_req *req = files_req(sbx, "files.write", path, user, err);
  if (!req) return NULL;
  req->mode = BODY_BUFFER;
  req->parse = parse_written;
  /* One "file" part named by its path; size unknown, so the body is chunked
   * and the content streams in from e2b_req_send. */
  curl_mimepart *part;
  if (!(req->mime = curl_mime_init(req->easy)) || !(part = curl_mime_addpart(req->mime)) ||
      curl_mime_name(part, "file") != CURLE_OK || curl_mime_filename(part, path) != CURLE_OK ||
      curl_mime_type(part, "application/octet-stream") != CURLE_OK ||
      curl_mime_data_cb(part, -1, e2b_upload_read_cb, NULL, NULL, req) != CURLE_OK) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    e2b_req_free(req);
    return NULL;
  }
  curl_easy_setopt(req->easy, CURLOPT_MIMEPOST, req->mime);
  /* curl sends one upload buffer per step: 64 KiB by default. */
  curl_easy_setopt(req->easy, CURLOPT_UPLOAD_BUFFERSIZE, E2B_FILE_IO_BUFFER);
  return e2b_req_typed(e2b_req_start(req, err) == 0 ? req : NULL, E2B_RESULT_WRITTEN);
}

const char *e2b_req_written_path(const e2b_req *req) {
  return req->result_kind == E2B_RESULT_WRITTEN ? req->result : NULL;
}

char *e2b_file_url(e2b_sbx *sbx, const char *path, const char *operation, const char *user,
                   int64_t expires_unix, e2b_error *err) {
  const char *op = "files.url";
  if (e2b_need_sbx(sbx, op, err)) return NULL;
  if (!operation || (strcmp(operation, "read") != 0 && strcmp(operation, "write") != 0)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "operation must be \"read\" or \"write\"");
    return NULL;
  }
  if (check_text(path, "path", op, 0, err) || check_text(user, "user", op, 0, err)) return NULL;
  if (!sbx->access_token) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op,
                "signed URLs need a secure sandbox (created with secure = true)");
    return NULL;
  }
  char sig[E2B_SIGNATURE_SIZE];
  if (e2b_sign_file_url(path ? path : "", operation, user ? user : "", sbx->access_token,
                        expires_unix, sig) != 0) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "could not compute the signature");
    return NULL;
  }
  char *pq = files_query(path ? path : "", user);
  char *esig = e2b_url_escape(sig);
  char *url = NULL;
  if (pq && esig) {
    size_t n = strlen(sbx->direct_url) + strlen(pq) + strlen(esig) + 64;
    if ((url = malloc(n))) {
      int len = snprintf(url, n, "%s%s&signature=%s", sbx->direct_url, pq, esig);
      if (expires_unix > 0)
        snprintf(url + len, n - (size_t)len, "&signature_expiration=%lld", (long long)expires_unix);
    }
  }
  free(pq);
  free(esig);
  if (!url) e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
  return url;
}

e2b_req *e2b_envd_health(e2b_sbx *sbx, e2b_error *err) {
  const char *op = "health";
  if (e2b_need_sbx(sbx, op, err)) return NULL;
  e2b_req *req = e2b_req_new(sbx->client->loop, op, err);
  if (!req) return NULL;
  if (e2b_sbx_prepare_envd(sbx, req, "/health", err) != 0) {
    e2b_req_free(req);
    return NULL;
  }
  req->mode = BODY_BUFFER;
  req->error_style = ERR_ENVD_HTTP;
  e2b_req_set_unary(req, sbx->client);
  return e2b_req_start(req, err) == 0 ? req : NULL;
}

static int watch_opts_check(const e2b_watch_opts *o, const char *op, e2b_error *err) {
  const char *bad = o->recursive != 0 && o->recursive != 1 ? "recursive"
                    : o->timeout_ms < 0                    ? "timeout_ms"
                    : o->idle_timeout_ms < 0               ? "idle_timeout_ms"
                                                           : NULL;
  if (bad) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s is out of range", bad);
    return -1;
  }
  return check_text(o->user, "user", op, 0, err);
}

e2b_req *e2b_fs_watch(e2b_sbx *sbx, const char *path, const e2b_watch_opts *opts, e2b_error *err) {
  const char *op = "files.watch";
  const e2b_watch_opts none = {0};
  const e2b_watch_opts *o = opts ? opts : &none;
  if (e2b_need_sbx(sbx, op, err) || check_text(path, "path", op, 1, err) || watch_opts_check(o, op, err))
    return NULL;
  if (o->recursive && e2b_envd_need(sbx, op, "recursive watching", E2B_ENVD_WATCH_RECURSIVE, err))
    return NULL;
  json_t *body = json_pack("{s:s, s:b}", "path", path, "recursive", o->recursive);
  return e2b_sbx_stream_rpc(sbx, op, "/filesystem.Filesystem/WatchDir", o->user, body, 30,
                            o->idle_timeout_ms, o->timeout_ms, /* 0: the default idle */
                            E2B_STREAM_WATCH | E2B_STREAM_EVENTS | E2B_STREAM_WATCH_ALL, err);
}
