/* logs.c — a sandbox's own log lines, as E2B's control plane keeps them
 * (GET /v2/sandboxes/{id}/logs). The answer is the peer's: each entry is
 * bounded (message and field sizes), and at most E2B_LOGS_MAX entries are
 * taken, whatever the body holds. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MESSAGE_MAX 4096 /* bytes kept of one entry's message (cut on a UTF-8 boundary) */
#define FIELDS_MAX 32    /* fields kept of one entry */
#define FIELD_MAX 1024   /* bytes of one field's key or value, or it is left out */

typedef struct log_list {
  e2b_log_entry *entries;
  size_t n;
} log_list;

static void logs_free(void *p) {
  log_list *l = p;
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) {
    e2b_log_entry *e = &l->entries[i];
    free(e->level);
    free(e->message);
    for (size_t k = 0; k < e->fields.count; k++) {
      free(e->fields.keys[k]);
      free(e->fields.values[k]);
    }
    free(e->fields.keys);
    free(e->fields.values);
  }
  free(l->entries);
  free(l);
}

/* A field's value as text: a string as it is, a number written out (E2B
 * sends strings; other servers numbers); anything else is left out (NULL,
 * with *skip set). */
static char *field_text(json_t *v, int *skip) {
  char num[32];
  *skip = 0;
  if (json_is_string(v) && json_string_length(v) <= FIELD_MAX) return strdup(json_string_value(v));
  if (json_is_integer(v)) {
    snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
    return strdup(num);
  }
  *skip = 1;
  return NULL;
}

static int parse_fields(json_t *obj, e2b_map *m) {
  size_t n = json_object_size(obj);
  if (n > FIELDS_MAX) n = FIELDS_MAX;
  if (!n) return 0;
  if (!(m->keys = calloc(n, sizeof *m->keys)) || !(m->values = calloc(n, sizeof *m->values))) return -1;
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    if (m->count == n) break;
    int skip;
    char *text = field_text(v, &skip);
    if (skip || strlen(key) > FIELD_MAX) continue;
    m->keys[m->count] = strdup(key);
    m->values[m->count] = text;
    m->count++; /* counted either way, so a half-made field is freed */
    if (!text || !m->keys[m->count - 1]) return -1;
  }
  return 0;
}

/* 0, -1 out of memory, 1 malformed. */
static int parse_entry(json_t *o, e2b_log_entry *e) {
  memset(e, 0, sizeof *e);
  const char *ts = e2b_json_str(o, "timestamp", NULL), *level = e2b_json_str(o, "level", NULL);
  const char *msg = e2b_json_str(o, "message", NULL);
  if (!json_is_object(o) || !ts || !msg || e2b_time_parse(ts, &e->timestamp_ms) != 0) return 1;
  if (!(e->level = e2b_dup_cut(level ? level : "info", 16)) || !(e->message = e2b_dup_cut(msg, MESSAGE_MAX))) return -1;
  json_t *fields = json_object_get(o, "fields");
  return json_is_object(fields) && parse_fields(fields, &e->fields) ? -1 : 0;
}

static int parse_logs(e2b_req *req, json_t *body, e2b_error *err) {
  json_t *list = json_object_get(body, "logs");
  if (!json_is_array(list)) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, req->op, "logs: no \"logs\" array in the answer");
    return -1;
  }
  size_t n = json_array_size(list);
  if (n > E2B_LOGS_MAX) n = E2B_LOGS_MAX;
  log_list *l = calloc(1, sizeof *l);
  if (!l || (n && !(l->entries = calloc(n, sizeof *l->entries)))) {
    free(l);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return -1;
  }
  req->result = l;
  req->result_free = logs_free;
  for (size_t i = 0; i < n; i++) {
    int rc = parse_entry(json_array_get(list, i), &l->entries[l->n]);
    l->n++; /* counted either way, so a half-parsed entry is freed */
    if (rc) {
      e2b_err_set(err, rc < 0 ? E2B_ERR_UNAVAILABLE : E2B_ERR_PROTOCOL, req->op,
                  rc < 0 ? "out of memory" : "logs: malformed entry %zu", i);
      return -1;
    }
  }
  return 0;
}

static int level_ok(const char *level) {
  static const char *const levels[] = {"debug", "info", "warn", "error"};
  for (size_t i = 0; i < 4; i++)
    if (strcmp(level, levels[i]) == 0) return 1;
  return 0;
}

/* The options as E2B's query, or NULL with err (invalid_argument). */
static char *logs_query(const e2b_logs_opts *o, e2b_error *err) {
  if (o->limit < 0 || o->limit > E2B_LOGS_MAX || o->cursor_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "logs", o->cursor_ms < 0 ? "cursor_ms must not be negative"
                                                                        : "limit must be 0 (1000) .. 1000");
    return NULL;
  }
  if (o->level && !level_ok(o->level)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "logs", "level must be debug, info, warn or error");
    return NULL;
  }
  if (o->search && (strlen(o->search) > 256 || !e2b_utf8_valid(o->search, strlen(o->search)))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "logs", "search must be at most 256 bytes of UTF-8");
    return NULL;
  }
  char *search = o->search ? e2b_url_escape(o->search) : NULL;
  size_t n = 160 + (search ? strlen(search) : 0);
  char *q = (!o->search || search) ? malloc(n) : NULL;
  if (q) {
    int at = snprintf(q, n, "/logs?limit=%d", o->limit ? o->limit : E2B_LOGS_MAX);
    if (o->cursor_ms) at += snprintf(q + at, n - (size_t)at, "&cursor=%lld", (long long)o->cursor_ms);
    if (o->backward) at += snprintf(q + at, n - (size_t)at, "&direction=backward");
    if (o->level) at += snprintf(q + at, n - (size_t)at, "&level=%s", o->level);
    if (search) snprintf(q + at, n - (size_t)at, "&search=%s", search);
  }
  free(search);
  if (!q) e2b_err_set(err, E2B_ERR_UNAVAILABLE, "logs", "out of memory");
  return q;
}

e2b_req *e2b_sandbox_logs(e2b_client *c, const char *sandbox_id, const e2b_logs_opts *opts,
                          e2b_error *err) {
  static const e2b_logs_opts none;
  e2b_error_clear(err);
  if (!c || !sandbox_id || !e2b_sandbox_id_len(sandbox_id) || strlen(sandbox_id) > 256) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "logs", c ? "sandbox_id is not a sandbox id" : "client is required");
    return NULL;
  }
  char *query = logs_query(opts ? opts : &none, err);
  if (!query) return NULL;
  char *path = e2b_id_path("/v2/sandboxes", sandbox_id, query);
  free(query);
  return e2b_req_typed(e2b_control_at(c, "logs", "GET", path, NULL, parse_logs, 1, err), E2B_RESULT_LOGS);
}

size_t e2b_req_log_count(const e2b_req *req) {
  const log_list *l = req && req->result_kind == E2B_RESULT_LOGS ? req->result : NULL;
  return l ? l->n : 0;
}

const e2b_log_entry *e2b_req_log_at(const e2b_req *req, size_t i) {
  return i < e2b_req_log_count(req) ? &((log_list *)req->result)->entries[i] : NULL;
}
