/* volfiles.c — a volume's content: E2B's /volumecontent/{volumeID}/path|dir|file
 * on the API host, authorized by the volume's own token (the SDKs' Volume:
 * getInfo, list, makeDir, remove, readFile, writeFile). Reads stream out as
 * chunks and writes stream in from e2b_req_send, both bounded as envd's
 * /files transfers are; answers are VolumeEntryStat objects. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct vol_entries {
  e2b_vol_entry *items;
  size_t n;
} vol_entries;

static void entry_clear(e2b_vol_entry *e) {
  free(e->name);
  free(e->path);
  free(e->target);
  memset(e, 0, sizeof *e);
}

static void entries_free(void *p) {
  vol_entries *l = p;
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) entry_clear(&l->items[i]);
  free(l->items);
  free(l);
}

static const char *entry_type(const char *t) {
  if (!t) return "unknown";
  if (!strcmp(t, "file")) return "file";
  if (!strcmp(t, "directory")) return "directory";
  if (!strcmp(t, "symlink")) return "symlink";
  return "unknown";
}

static int64_t time_field(json_t *o, const char *key) {
  int64_t ms = 0;
  const char *t = e2b_json_str(o, key, NULL);
  if (t && e2b_time_parse(t, &ms) != 0) ms = 0;
  return ms;
}

/* One VolumeEntryStat; 0, or -1 when malformed (out cleared). */
static int entry_item(json_t *o, void *out) {
  e2b_vol_entry *e = out;
  memset(e, 0, sizeof *e);
  const char *name = e2b_json_str(o, "name", NULL), *path = e2b_json_str(o, "path", NULL);
  const char *target = e2b_json_str(o, "target", NULL);
  int64_t size, mode, uid, gid;
  if (!json_is_object(o) || !name || !path || e2b_json_int(o, "size", NULL, 0, INT64_MAX, &size) ||
      e2b_json_int(o, "mode", NULL, 0, 07777, &mode) || e2b_json_int(o, "uid", NULL, 0, UINT32_MAX, &uid) ||
      e2b_json_int(o, "gid", NULL, 0, UINT32_MAX, &gid))
    return -1;
  e->type = entry_type(e2b_json_str(o, "type", NULL));
  e->size = size;
  e->mode = (uint32_t)mode;
  e->uid = (uint32_t)uid;
  e->gid = (uint32_t)gid;
  e->atime_ms = time_field(o, "atime");
  e->mtime_ms = time_field(o, "mtime");
  e->ctime_ms = time_field(o, "ctime");
  if (!(e->name = strdup(name)) || !(e->path = strdup(path)) || (target && !(e->target = strdup(target)))) {
    entry_clear(e);
    return -1;
  }
  return 0;
}

/* The answer: one entry (an object) or a listing (an array). */
static int parse_entries(e2b_req *req, json_t *body, e2b_error *err) {
  vol_entries *l = calloc(1, sizeof *l);
  if (!l) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return -1;
  }
  req->result = l;
  req->result_free = entries_free;
  if (json_is_array(body)) {
    void *items = NULL;
    int rc = e2b_parse_items(body, sizeof *l->items, entry_item, &items, &l->n, req->op,
                             "entry %zu is malformed", err);
    l->items = items;
    return rc;
  }
  if (!(l->items = calloc(1, sizeof *l->items)) || entry_item(body, l->items) != 0) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, req->op, "the answer is no volume entry");
    return -1;
  }
  l->n = 1;
  return 0;
}

size_t e2b_req_vol_entry_count(const e2b_req *req) {
  const vol_entries *l = req && req->result_kind == E2B_RESULT_VOL_ENTRIES ? req->result : NULL;
  return l ? l->n : 0;
}

const e2b_vol_entry *e2b_req_vol_entry_at(const e2b_req *req, size_t i) {
  const vol_entries *l = req && req->result_kind == E2B_RESULT_VOL_ENTRIES ? req->result : NULL;
  return l && i < l->n ? &l->items[i] : NULL;
}

/* ---- checks, before anything is sent ---- */

static int check_text(const char *s, const char *field, const char *op, e2b_error *err) {
  if (!s || !*s || strlen(s) > 4096 || !e2b_utf8_valid(s, strlen(s))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s must be 1-4096 bytes of UTF-8", field);
    return -1;
  }
  return 0;
}

static int check_call(const char *id, const char *token, const char *path, const char *op, e2b_error *err) {
  e2b_error_clear(err);
  return check_text(id, "volume_id", op, err) || check_text(token, "token", op, err) ||
         check_text(path, "path", op, err);
}

static int check_write_opts(const e2b_vol_write_opts *o, const char *op, e2b_error *err) {
  if (!o) return 0;
  if (o->given & ~(E2B_VOL_UID | E2B_VOL_GID | E2B_VOL_MODE)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "given holds unknown bits");
    return -1;
  }
  /* E2B takes any uint32 owner; mode bits past 0o777 it would drop unsaid */
  if ((o->given & E2B_VOL_MODE) && o->mode > 0777) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "mode must be permission bits from 0 to 0o777");
    if (err) snprintf(err->field, sizeof err->field, "mode");
    return -1;
  }
  return 0;
}

/* ---- requests ---- */

/* "/volumecontent/{id}/{kind}?path=...&..." (extra: "&k=v" pairs, escaped already). */
static char *content_path(const char *id, const char *kind, const char *path, const char *extra) {
  char *eid = e2b_url_escape(id), *epath = e2b_url_escape(path), *out = NULL;
  if (eid && epath) {
    size_t n = strlen(eid) + strlen(kind) + strlen(epath) + strlen(extra) + 40;
    if ((out = malloc(n))) snprintf(out, n, "/volumecontent/%s/%s?path=%s%s", eid, kind, epath, extra);
  }
  free(eid);
  free(epath);
  return out;
}

static void write_query(const e2b_vol_write_opts *o, char *q, size_t cap) {
  size_t n = 0;
  q[0] = '\0';
  if (!o) return;
  if (o->given & E2B_VOL_UID) n += (size_t)snprintf(q + n, cap - n, "&uid=%u", (unsigned)o->uid);
  if (o->given & E2B_VOL_GID) n += (size_t)snprintf(q + n, cap - n, "&gid=%u", (unsigned)o->gid);
  if (o->given & E2B_VOL_MODE) n += (size_t)snprintf(q + n, cap - n, "&mode=%u", (unsigned)o->mode);
  if (o->force) snprintf(q + n, cap - n, "&force=true");
}

/* A content request, prepared (not started): the volume's token as bearer;
 * body (taken, NULL: none) as JSON. */
static e2b_req *content_req_body(e2b_client *c, const char *op, const char *method, const char *id,
                                 const char *token, const char *kind, const char *path, const char *extra,
                                 json_t *body, e2b_error *err) {
  char *pq = content_path(id, kind, path, extra);
  e2b_req *req = pq ? e2b_req_new(c->loop, op, err) : NULL;
  if (!pq) e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
  if (req && e2b_client_prepare_volume(c, req, method, pq, token, body, err) != 0) {
    e2b_req_free(req);
    req = NULL;
  }
  json_decref(body);
  free(pq);
  return req;
}

/* The same without a body. */
static e2b_req *content_req(e2b_client *c, const char *op, const char *method, const char *id, const char *token,
                            const char *kind, const char *path, const char *extra, e2b_error *err) {
  return content_req_body(c, op, method, id, token, kind, path, extra, NULL, err);
}

/* A call answered with entries (or nothing, for remove). */
static e2b_req *entries_call(e2b_client *c, const char *op, const char *method, const char *id, const char *token,
                             const char *kind, const char *path, const char *extra, json_t *body, e2b_error *err) {
  e2b_req *req = content_req_body(c, op, method, id, token, kind, path, extra, body, err);
  if (!req) return NULL;
  req->mode = BODY_BUFFER;
  req->parse = strcmp(method, "DELETE") ? parse_entries : e2b_parse_nothing;
  req->idempotent = !strcmp(method, "GET");
  if (!req->idempotent) e2b_req_no_replay(req);
  e2b_req_set_unary(req, c);
  return e2b_req_typed(e2b_req_start(req, err) == 0 ? req : NULL,
                       strcmp(method, "DELETE") ? E2B_RESULT_VOL_ENTRIES : E2B_RESULT_NONE);
}

e2b_req *e2b_vol_stat(e2b_client *c, const char *volume_id, const char *token, const char *path,
                      e2b_error *err) {
  if (check_call(volume_id, token, path, "volume.stat", err)) return NULL;
  return entries_call(c, "volume.stat", "GET", volume_id, token, "path", path, "", NULL, err);
}

e2b_req *e2b_vol_list(e2b_client *c, const char *volume_id, const char *token, const char *path, long depth,
                      e2b_error *err) {
  const char *op = "volume.list";
  if (check_call(volume_id, token, path, op, err) || e2b_list_depth(&depth, op, err)) return NULL;
  char q[32];
  snprintf(q, sizeof q, "&depth=%ld", depth);
  return entries_call(c, op, "GET", volume_id, token, "dir", path, q, NULL, err);
}

e2b_req *e2b_vol_mkdir(e2b_client *c, const char *volume_id, const char *token, const char *path,
                       const e2b_vol_write_opts *opts, e2b_error *err) {
  const char *op = "volume.mkdir";
  if (check_call(volume_id, token, path, op, err) || check_write_opts(opts, op, err)) return NULL;
  char q[96];
  write_query(opts, q, sizeof q);
  return entries_call(c, op, "POST", volume_id, token, "dir", path, q, NULL, err);
}

e2b_req *e2b_vol_remove(e2b_client *c, const char *volume_id, const char *token, const char *path,
                        e2b_error *err) {
  if (check_call(volume_id, token, path, "volume.remove", err)) return NULL;
  return entries_call(c, "volume.remove", "DELETE", volume_id, token, "path", path, "", NULL, err);
}

e2b_req *e2b_vol_set_metadata(e2b_client *c, const char *volume_id, const char *token, const char *path,
                              const e2b_vol_write_opts *opts, e2b_error *err) {
  const char *op = "volume.set_metadata";
  if (check_call(volume_id, token, path, op, err) || check_write_opts(opts, op, err)) return NULL;
  json_t *body = json_object();
  if (opts && (opts->given & E2B_VOL_UID)) json_object_set_new(body, "uid", json_integer(opts->uid));
  if (opts && (opts->given & E2B_VOL_GID)) json_object_set_new(body, "gid", json_integer(opts->gid));
  if (opts && (opts->given & E2B_VOL_MODE)) json_object_set_new(body, "mode", json_integer(opts->mode));
  return entries_call(c, op, "PATCH", volume_id, token, "path", path, "", body, err);
}

e2b_req *e2b_vol_read(e2b_client *c, const char *volume_id, const char *token, const char *path,
                      e2b_error *err) {
  if (check_call(volume_id, token, path, "volume.read", err)) return NULL;
  e2b_req *req = content_req(c, "volume.read", "GET", volume_id, token, "file", path, "", err);
  if (!req) return NULL;
  req->mode = BODY_CHUNKS;
  curl_easy_setopt(req->easy, CURLOPT_BUFFERSIZE, (long)E2B_FILE_IO_BUFFER);
  curl_easy_setopt(req->easy, CURLOPT_CONNECTTIMEOUT_MS, c->request_timeout_ms);
  req->idempotent = 1; /* repeatable until its first byte reaches the caller */
  return e2b_req_typed(e2b_req_start(req, err) == 0 ? req : NULL, E2B_RESULT_STREAM);
}

e2b_req *e2b_vol_write(e2b_client *c, const char *volume_id, const char *token, const char *path,
                       const e2b_vol_write_opts *opts, e2b_error *err) {
  const char *op = "volume.write";
  if (check_call(volume_id, token, path, op, err) || check_write_opts(opts, op, err)) return NULL;
  char q[96];
  write_query(opts, q, sizeof q);
  e2b_req *req = content_req(c, op, "PUT", volume_id, token, "file", path, q, err);
  if (!req) return NULL;
  req->mode = BODY_BUFFER;
  req->parse = parse_entries;
  e2b_req_no_replay(req);
  /* the body streams in from e2b_req_send, its size unknown: chunked */
  curl_easy_setopt(req->easy, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(req->easy, CURLOPT_READFUNCTION, e2b_upload_read_cb);
  curl_easy_setopt(req->easy, CURLOPT_READDATA, req);
  curl_easy_setopt(req->easy, CURLOPT_UPLOAD_BUFFERSIZE, (long)E2B_FILE_IO_BUFFER);
  curl_easy_setopt(req->easy, CURLOPT_CONNECTTIMEOUT_MS, c->request_timeout_ms);
  if (e2b_req_add_header(req, "Content-Type", "application/octet-stream", err) != 0) {
    e2b_req_free(req);
    return NULL;
  }
  return e2b_req_typed(e2b_req_start(req, err) == 0 ? req : NULL, E2B_RESULT_VOL_ENTRIES);
}
