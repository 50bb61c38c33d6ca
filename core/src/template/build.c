/* build.c — the control-plane calls of a template build, each one
 * request: ask for a build (POST /v3/templates), ask where a COPY's files go
 * (GET /templates/{id}/files/{hash}), upload them there, start the build
 * (POST /v2/templates/{id}/builds/{build}), read its status and logs, and
 * whether a name is taken; a COPY's files hashed or archived a slice per
 * loop step. Every answer is the peer's and bounded: tags and
 * log entries by count, texts by size. */
#include "internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEXT_MAX 4096 /* bytes kept of a message or reason */
#define TAGS_MAX 64   /* tags kept of an answer */
#define HEADERS_MAX 32

static void answer_free(void *p) {
  e2b_template_answer *a = p;
  if (!a) return;
  free(a->template_id);
  free(a->hash);
  free(a->build_id);
  for (size_t i = 0; i < a->tag_count; i++) free(a->tags[i]);
  free(a->tags);
  free(a->url);
  for (size_t i = 0; i < a->headers.count; i++) {
    free(a->headers.keys[i]);
    free(a->headers.values[i]);
  }
  free(a->headers.keys);
  free(a->headers.values);
  free(a->status);
  free(a->reason);
  free(a->reason_step);
  for (size_t i = 0; i < a->log_count; i++) {
    free(a->logs[i].level);
    free(a->logs[i].message);
  }
  free(a->logs);
  for (size_t i = 0; i < a->tag_list_count; i++) {
    free(a->tag_list[i].tag);
    free(a->tag_list[i].build_id);
  }
  free(a->tag_list);
  free(a);
}

static e2b_template_answer *answer_of(e2b_req *req, e2b_error *err) {
  e2b_template_answer *a = calloc(1, sizeof *a);
  if (!a) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return NULL;
  }
  req->result = a;
  req->result_free = answer_free;
  return a;
}

static int protocol(e2b_req *req, e2b_error *err, const char *what) {
  e2b_err_set(err, E2B_ERR_PROTOCOL, req->op, "%s", what);
  return -1;
}

/* The answer's "tags", at most TAGS_MAX of them. */
static int parse_request_tags(e2b_req *req, json_t *body, e2b_error *err) {
  e2b_template_answer *a = answer_of(req, err);
  if (!a) return -1;
  json_t *tags = json_object_get(body, "tags");
  size_t n = json_is_array(tags) ? json_array_size(tags) : 0;
  if (n > TAGS_MAX) n = TAGS_MAX;
  if (n && !(a->tags = calloc(n, sizeof *a->tags))) return protocol(req, err, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const char *tag = json_string_value(json_array_get(tags, i));
    if (tag) a->tags[a->tag_count++] = e2b_dup_cut(tag, 256);
  }
  return 0;
}

static int parse_request(e2b_req *req, json_t *body, e2b_error *err) {
  if (parse_request_tags(req, body, err)) return -1;
  e2b_template_answer *a = req->result;
  const char *tid = e2b_json_str(body, "templateID", NULL), *bid = e2b_json_str(body, "buildID", NULL);
  if (!tid || !bid) return protocol(req, err, "the answer has no templateID or buildID");
  a->template_id = e2b_dup_cut(tid, 256);
  a->build_id = e2b_dup_cut(bid, 256);
  return 0;
}

static int parse_link(e2b_req *req, json_t *body, e2b_error *err) {
  e2b_template_answer *a = answer_of(req, err);
  if (!a) return -1;
  json_t *present = json_object_get(body, "present"), *headers = json_object_get(body, "headers");
  if (!json_is_boolean(present)) return protocol(req, err, "the answer has no \"present\"");
  a->present = json_is_true(present);
  a->url = e2b_dup_cut(e2b_json_str(body, "url", NULL), 16384);
  if (!a->present && !a->url) return protocol(req, err, "files not present, and no url to upload them to");
  size_t n = json_is_object(headers) ? json_object_size(headers) : 0;
  if (n > HEADERS_MAX) n = HEADERS_MAX;
  if (n && (!(a->headers.keys = calloc(n, sizeof(char *))) || !(a->headers.values = calloc(n, sizeof(char *)))))
    return protocol(req, err, "out of memory");
  const char *key;
  json_t *v;
  json_object_foreach(headers, key, v) {
    if (a->headers.count == n) break;
    if (!json_is_string(v)) continue;
    a->headers.keys[a->headers.count] = e2b_dup_cut(key, 256);
    a->headers.values[a->headers.count++] = e2b_dup_cut(json_string_value(v), 8192);
  }
  return 0;
}

static int parse_entries(e2b_template_answer *a, json_t *list) {
  size_t n = json_is_array(list) ? json_array_size(list) : 0;
  if (n > E2B_LOGS_MAX) n = E2B_LOGS_MAX;
  if (n && !(a->logs = calloc(n, sizeof *a->logs))) return -1;
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_array_get(list, i);
    const char *msg = e2b_json_str(o, "message", NULL), *level = e2b_json_str(o, "level", NULL),
               *ts = e2b_json_str(o, "timestamp", NULL);
    /* every entry counts, even one without a message: the caller's next
     * logsOffset is this count, and a skipped one would come back */
    e2b_log_entry *e = &a->logs[a->log_count++];
    if (ts) e2b_time_parse(ts, &e->timestamp_ms);
    e->level = e2b_dup_cut(level ? level : "info", 16);
    e->message = e2b_dup_cut(msg ? msg : "", TEXT_MAX);
  }
  return 0;
}

static int parse_status(e2b_req *req, json_t *body, e2b_error *err) {
  e2b_template_answer *a = answer_of(req, err);
  if (!a) return -1;
  const char *status = e2b_json_str(body, "status", NULL);
  static const char *const known[] = {"building", "waiting", "ready", "error"};
  int ok = 0;
  for (size_t i = 0; status && i < 4; i++) ok |= !strcmp(status, known[i]);
  if (!ok) return protocol(req, err, "the build status is none of building, waiting, ready, error");
  a->status = strdup(status);
  a->template_id = e2b_dup_cut(e2b_json_str(body, "templateID", NULL), 256);
  a->build_id = e2b_dup_cut(e2b_json_str(body, "buildID", NULL), 256);
  json_t *reason = json_object_get(body, "reason");
  if (json_is_object(reason)) {
    a->reason = e2b_dup_cut(e2b_json_str(reason, "message", NULL), TEXT_MAX);
    a->reason_step = e2b_dup_cut(e2b_json_str(reason, "step", NULL), 64);
  }
  if (parse_entries(a, json_object_get(body, "logEntries")) != 0) return protocol(req, err, "out of memory");
  return 0;
}

/* 404: the name is free; 403: taken by another team (E2B says so); 2xx: taken. */
static int parse_exists(e2b_req *req, json_t *body, e2b_error *err) {
  if (req->status != 404 && req->status != 403 && req->status / 100 != 2) {
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    e2b_err_from_http(err, req->status, req->error_style, req->op, text, text ? strlen(text) : 0, -1);
    free(text);
    return -1;
  }
  e2b_template_answer *a = answer_of(req, err);
  if (!a) return -1;
  a->exists = req->status != 404;
  return 0;
}

static char *path_of(const char *fmt, const char *a, const char *b, long n) {
  char *ea = e2b_url_escape(a), *eb = b ? e2b_url_escape(b) : NULL, *out = NULL;
  if (ea && (eb || !b)) {
    size_t len = strlen(fmt) + strlen(ea) + (eb ? strlen(eb) : 0) + 32;
    if ((out = malloc(len))) snprintf(out, len, fmt, ea, eb ? eb : "", n);
  }
  free(ea);
  free(eb);
  return out;
}

static e2b_req *call(e2b_client *c, const char *op, const char *method, char *path, json_t *body,
                     req_parse_fn parse, int idempotent, e2b_error *err) {
  return e2b_req_typed(e2b_control_at(c, op, method, path, body, parse, idempotent, err), E2B_RESULT_TEMPLATE);
}

static int id_ok(const char *id, const char *field, const char *op, e2b_error *err) {
  if (id && *id && strlen(id) <= 256) return 0;
  e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s is required", field);
  if (err) snprintf(err->field, sizeof err->field, "%s", field);
  return -1;
}

e2b_req *e2b_template_request(e2b_client *c, const e2b_template_build_opts *o, e2b_error *err) {
  char field[32];
  if (!o || e2b_template_name_check(o->name, "name", err)) return NULL;
  for (size_t i = 0; i < o->tag_count; i++) {
    snprintf(field, sizeof field, "tags[%zu]", i + 1);
    if (e2b_template_tag_check(o->tags[i], field, err)) return NULL;
  }
  if (o->cpu_count < 0 || o->memory_mb < 0 || o->min_free_disk_mb < -1) {
    const char *f = o->cpu_count < 0 ? "cpu_count" : o->memory_mb < 0 ? "memory_mb" : "min_free_disk_mb";
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "template", "%s must not be negative", f);
    if (err) snprintf(err->field, sizeof err->field, "%s", f);
    return NULL;
  }
  json_t *body = json_object(), *tags = json_array();
  json_object_set_new(body, "name", json_string(o->name));
  for (size_t i = 0; i < o->tag_count; i++) json_array_append_new(tags, json_string(o->tags[i]));
  if (o->tag_count) json_object_set_new(body, "tags", tags);
  else json_decref(tags);
  if (o->cpu_count) json_object_set_new(body, "cpuCount", json_integer(o->cpu_count));
  if (o->memory_mb) json_object_set_new(body, "memoryMB", json_integer(o->memory_mb));
  if (o->min_free_disk_mb >= 0) json_object_set_new(body, "minFreeDiskMb", json_integer(o->min_free_disk_mb));
  return call(c, "template.request", "POST", strdup("/v3/templates"), body, parse_request, 0, err);
}

e2b_req *e2b_template_file_link(e2b_client *c, const char *template_id, const char *hash, e2b_error *err) {
  const char *op = "template.files";
  if (id_ok(template_id, "template_id", op, err) || id_ok(hash, "hash", op, err)) return NULL;
  if (strlen(hash) != E2B_TEMPLATE_HASH_LEN || strspn(hash, "0123456789abcdef") != E2B_TEMPLATE_HASH_LEN) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "hash must be 64 lowercase hex digits");
    return NULL;
  }
  return call(c, op, "GET", path_of("/templates/%s/files/%s", template_id, hash, 0), NULL, parse_link, 1, err);
}

e2b_req *e2b_template_start(e2b_client *c, const char *template_id, const char *build_id, const e2b_template *t,
                            const char *const *hashes, int skip_cache, e2b_error *err) {
  const char *op = "template.start";
  if (id_ok(template_id, "template_id", op, err) || id_ok(build_id, "build_id", op, err)) return NULL;
  char *text = e2b_template_json(t, hashes, skip_cache ? E2B_TEMPLATE_SKIP_CACHE : 0, err);
  json_t *body = text ? json_loads(text, 0, NULL) : NULL;
  e2b_free_secret(text); /* it may hold a registry's password */
  if (!body) return NULL;
  return call(c, op, "POST", path_of("/v2/templates/%s/builds/%s", template_id, build_id, 0), body,
              e2b_parse_nothing, 0, err);
}

e2b_req *e2b_template_status(e2b_client *c, const char *template_id, const char *build_id, long offset,
                             e2b_error *err) {
  const char *op = "template.status";
  if (id_ok(template_id, "template_id", op, err) || id_ok(build_id, "build_id", op, err)) return NULL;
  if (offset < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "logs_offset must not be negative");
    return NULL;
  }
  return call(c, op, "GET", path_of("/templates/%s/builds/%s/status?logsOffset=%ld", template_id, build_id, offset),
              NULL, parse_status, 1, err);
}

e2b_req *e2b_template_exists(e2b_client *c, const char *name, e2b_error *err) {
  if (e2b_template_name_check(name, "name", err)) return NULL;
  char *path = path_of("/templates/aliases/%s%s", name, NULL, 0);
  e2b_req *req = path ? e2b_req_new(c->loop, "template.exists", err) : NULL;
  if (!req || e2b_client_prepare_control(c, req, "GET", path, NULL, err) != 0) {
    if (req) e2b_req_free(req);
    free(path);
    return NULL;
  }
  free(path);
  req->mode = BODY_BUFFER;
  req->parse = parse_exists;
  req->idempotent = 1;
  e2b_req_accept_status(req, 404); /* 403 and 404 are answers here; parse_exists refuses the rest */
  return e2b_req_typed(e2b_req_start(req, err) == 0 ? req : NULL, E2B_RESULT_TEMPLATE);
}

/* {buildID, tags}: the build a tag assignment reached, and its tags. */
static int parse_assigned(e2b_req *req, json_t *body, e2b_error *err) {
  if (parse_request_tags(req, body, err)) return -1;
  e2b_template_answer *a = req->result;
  a->build_id = e2b_dup_cut(e2b_json_str(body, "buildID", NULL), 256);
  return a->build_id ? 0 : protocol(req, err, "the answer has no buildID");
}

static int parse_tag_list(e2b_req *req, json_t *body, e2b_error *err) {
  e2b_template_answer *a = answer_of(req, err);
  if (!a) return -1;
  if (!json_is_array(body)) return protocol(req, err, "the answer is no array of tags");
  size_t n = json_array_size(body);
  if (n > E2B_LOGS_MAX) n = E2B_LOGS_MAX;
  if (n && !(a->tag_list = calloc(n, sizeof *a->tag_list))) return protocol(req, err, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_array_get(body, i);
    const char *tag = e2b_json_str(o, "tag", NULL), *ts = e2b_json_str(o, "createdAt", NULL);
    if (!tag) continue;
    struct e2b_template_tag *t = &a->tag_list[a->tag_list_count++];
    t->tag = e2b_dup_cut(tag, 256);
    t->build_id = e2b_dup_cut(e2b_json_str(o, "buildID", NULL), 256);
    if (ts) e2b_time_parse(ts, &t->created_ms);
  }
  return 0;
}

/* A tags call's body: key (target or name) checked as a name, and tags (at least one). */
static json_t *tags_body(const char *op, const char *key, const char *value, const char *const *tags, size_t n,
                         e2b_error *err) {
  char field[32];
  if (e2b_template_name_check(value, key, err)) return NULL;
  if (n == 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "tags: at least one is required");
    if (err) snprintf(err->field, sizeof err->field, "tags");
    return NULL;
  }
  json_t *body = json_object(), *list = json_array();
  for (size_t i = 0; i < n; i++) {
    snprintf(field, sizeof field, "tags[%zu]", i + 1);
    if (e2b_template_tag_check(tags[i], field, err)) {
      json_decref(list);
      json_decref(body);
      return NULL;
    }
    json_array_append_new(list, json_string(tags[i]));
  }
  json_object_set_new(body, key, json_string(value));
  json_object_set_new(body, "tags", list);
  return body;
}

e2b_req *e2b_template_assign_tags(e2b_client *c, const char *target, const char *const *tags, size_t n,
                                  e2b_error *err) {
  json_t *body = tags_body("template.tags", "target", target, tags, n, err);
  if (!body) return NULL;
  return call(c, "template.tags", "POST", strdup("/templates/tags"), body, parse_assigned, 0, err);
}

e2b_req *e2b_template_remove_tags(e2b_client *c, const char *name, const char *const *tags, size_t n,
                                  e2b_error *err) {
  json_t *body = tags_body("template.tags", "name", name, tags, n, err);
  if (!body) return NULL;
  return call(c, "template.tags", "DELETE", strdup("/templates/tags"), body, e2b_parse_nothing, 0, err);
}

e2b_req *e2b_template_tags(e2b_client *c, const char *template_id, e2b_error *err) {
  if (id_ok(template_id, "template_id", "template.tags", err)) return NULL;
  return call(c, "template.tags", "GET", path_of("/templates/%s/tags%s", template_id, NULL, 0), NULL,
              parse_tag_list, 1, err);
}

int e2b_template_parse_answer(e2b_req *req, int kind, json_t *body, e2b_error *err) {
  static const req_parse_fn parsers[] = {
      [E2B_TEMPLATE_ANSWER_REQUEST] = parse_request, [E2B_TEMPLATE_ANSWER_LINK] = parse_link,
      [E2B_TEMPLATE_ANSWER_STATUS] = parse_status,   [E2B_TEMPLATE_ANSWER_TAGS] = parse_tag_list,
      [E2B_TEMPLATE_ANSWER_ASSIGNED] = parse_assigned};
  if (kind < 0 || (size_t)kind >= sizeof parsers / sizeof *parsers) return -1;
  return parsers[kind](req, body, err);
}

const e2b_template_answer *e2b_req_template_answer(const e2b_req *req) {
  return req && req->result_kind == E2B_RESULT_TEMPLATE ? req->result : NULL;
}

/* ---- a COPY's files, hashed or spooled in slices from the loop ----
 *
 * Reading and deflating a large context takes long; done on the caller's
 * thread it would hold up everything else its loop serves (an OpenResty
 * worker, every other task of a Lua state). So the hash and the tar are
 * composites that do SLICE_BYTES of file bytes per loop step, re-arming a
 * 0 ms timer between slices: the loop goes round (other transfers, timers,
 * the host's own tasks) between two slices. No thread: the job never
 * crosses threads, a cancel is freeing the op, and every host that steps
 * the loop (plain Lua, OpenResty, C) runs it unchanged. The paths are
 * collected when the op is made (bounded by E2B_TEMPLATE_FILES_MAX). */

#define SLICE_BYTES (1u << 20) /* file bytes hashed or archived per loop step */

typedef struct files_state {
  e2b_client *client;
  e2b_files_job *job;
  FILE *spool;       /* upload: the tar, until the PUT owns it */
  char *url;
  e2b_kv *headers;
  size_t header_count;
  e2b_req *put;
} files_state;
#define FILES_AT(f) offsetof(files_state, f)

static void files_release(void *p) {
  files_state *s = p;
  e2b_files_job_free(s->job);
  if (s->spool) fclose(s->spool);
}

static const e2b_op_kind files_kind = {.size = sizeof(files_state), .release = files_release,
                                       .children = E2B_FIELDS(FILES_AT(put)),
                                       .kvs = E2B_FIELDS(FILES_AT(headers), FILES_AT(header_count)),
                                       .allocs = E2B_FIELDS(FILES_AT(url)), .holds = E2B_OP_HOLDS_CLIENT,
                                       .ref = FILES_AT(client)};

/* One slice of the job: 1 when it is done, 0 (the next slice due) or -1 (op finished) otherwise. */
static int slice(e2b_req *op) {
  files_state *s = op->state;
  e2b_error err;
  e2b_error_clear(&err);
  int rc = e2b_files_job_run(s->job, SLICE_BYTES, &err);
  if (rc < 0) e2b_op_finish(op, &err);
  if (rc == 0) e2b_req_arm_timer(op, 0);
  return rc;
}

static void hash_advance(e2b_req *op) {
  files_state *s = op->state;
  if (slice(op) != 1) return;
  e2b_error err;
  e2b_template_answer *a = calloc(1, sizeof *a);
  char *hash = malloc(E2B_TEMPLATE_HASH_LEN + 1);
  if (!a || !hash) {
    free(a);
    free(hash);
    e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
    return e2b_op_finish(op, &err);
  }
  e2b_files_job_hash(s->job, hash);
  a->hash = hash;
  op->result = a;
  op->result_free = answer_free;
  e2b_op_finish(op, NULL);
}

static e2b_req *files_op(e2b_client *c, const char *op, const e2b_template *t, size_t step, FILE *spool,
                         req_advance_fn advance, e2b_error *err) {
  e2b_files_job *job = e2b_files_job_new(t, step, spool ? fileno(spool) : -1, err);
  e2b_req *req = job ? e2b_op_new(&files_kind, c, NULL, op, advance, NULL, err) : NULL;
  if (!req) {
    e2b_files_job_free(job);
    if (spool) fclose(spool);
    return NULL;
  }
  files_state *s = req->state;
  s->job = job;
  s->spool = spool;
  return req;
}

e2b_req *e2b_template_hash(e2b_client *c, const e2b_template *t, size_t step, e2b_error *err) {
  e2b_error_clear(err);
  if (!c) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "template.hash", "client is required");
    return NULL;
  }
  return e2b_req_typed(files_op(c, "template.hash", t, step, NULL, hash_advance, err), E2B_RESULT_TEMPLATE);
}

/* ---- the upload: a tar spooled to a temporary file, PUT with its length ---- */

static void close_file(void *f) {
  if (f) fclose(f);
}

/* A temporary file under $TMPDIR (else /tmp), unlinked at once: it goes
 * with its last descriptor, whatever happens to the request. */
static FILE *temp_file(void) {
  const char *dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/e2b-template-XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) return NULL;
  unlink(path);
  FILE *f = fdopen(fd, "r+b");
  if (!f) close(fd);
  return f;
}

static int upload_headers(e2b_req *req, const e2b_kv *h, size_t n, e2b_error *err) {
  for (size_t i = 0; i < n; i++) {
    if (!h[i].key || !h[i].value || !strcasecmp(h[i].key, "content-length")) continue;
    if (e2b_req_add_header(req, h[i].key, h[i].value, err) != 0) return -1;
  }
  return e2b_req_add_header(req, "Expect", "", err);
}

/* The PUT of the spooled tar f (the request owns f from here on). */
static e2b_req *put_new(e2b_client *c, const char *url, FILE *f, const e2b_kv *headers, size_t header_count,
                        e2b_error *err) {
  struct stat st;
  e2b_req *req = fstat(fileno(f), &st) == 0 ? e2b_req_new(c->loop, "template.upload", err) : NULL;
  if (!req) {
    if (err && !e2b_err_failed(err)) e2b_err_set(err, E2B_ERR_UNAVAILABLE, "template.upload", "cannot size the archive");
    fclose(f);
    return NULL;
  }
  rewind(f);
  req->result = f;
  req->result_free = close_file;
  int relative = url[0] == '/'; /* a link on the API host itself */
  char *full = relative ? malloc(strlen(c->api_url) + strlen(url) + 1) : NULL;
  if (full) sprintf(full, "%s%s", c->api_url, url);
  curl_easy_setopt(req->easy, CURLOPT_URL, relative ? full : url);
  free(full);
  curl_easy_setopt(req->easy, CURLOPT_USERAGENT, c->user_agent);
  curl_easy_setopt(req->easy, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(req->easy, CURLOPT_READDATA, f);
  curl_easy_setopt(req->easy, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
  curl_easy_setopt(req->easy, CURLOPT_CONNECTTIMEOUT_MS, c->request_timeout_ms);
  req->mode = BODY_BUFFER;
  req->error_style = ERR_CONTROL;
  e2b_req_no_replay(req);
  if (upload_headers(req, headers, header_count, err) != 0 || e2b_req_start(req, err) != 0) {
    e2b_req_free(req);
    return NULL;
  }
  return req;
}

static void upload_advance(e2b_req *op) {
  files_state *s = op->state;
  if (s->put) {
    if (s->put->done) e2b_op_finish(op, &s->put->err);
    return;
  }
  if (slice(op) != 1) return;
  e2b_error err;
  e2b_error_clear(&err);
  FILE *f = s->spool;
  s->spool = NULL;
  if (fflush(f) != 0) {
    fclose(f);
    e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "cannot write the archive");
    return e2b_op_finish(op, &err);
  }
  s->put = e2b_op_child(op, put_new(s->client, s->url, f, s->headers, s->header_count, &err));
  if (!s->put) e2b_op_finish(op, &err);
}

e2b_req *e2b_template_upload(e2b_client *c, const e2b_template *t, size_t step, const char *url,
                             const e2b_kv *headers, size_t header_count, e2b_error *err) {
  const char *op = "template.upload";
  e2b_error_clear(err);
  if (!c) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "client is required");
    return NULL;
  }
  if (id_ok(url, "url", op, err)) return NULL;
  if (url[0] != '/' && strncmp(url, "https://", 8) && strncmp(url, "http://", 7)) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, op, "the upload link is no http(s) URL");
    return NULL;
  }
  FILE *f = temp_file();
  if (!f) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "cannot create a temporary file under $TMPDIR");
    return NULL;
  }
  e2b_req *req = files_op(c, op, t, step, f, upload_advance, err);
  if (!req) return NULL;
  files_state *s = req->state;
  if (!(s->url = strdup(url)) || e2b_kv_dup(&s->headers, headers, header_count) != 0)
    return e2b_op_nomem(req, err);
  s->header_count = header_count;
  return e2b_req_typed(req, E2B_RESULT_NONE);
}
