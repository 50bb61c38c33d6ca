/* resources.c — snapshots and volumes: the raw calls and the composites
 * that work by name (list every page, delete every match, idempotently). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct item_list {
  e2b_snapshot *snapshots;
  e2b_volume *volumes;
  size_t n;
  char *next_token; /* a snapshot page's: the next page's token */
} item_list;

static void snapshot_clear(e2b_snapshot *s) {
  free(s->snapshot_id);
  for (size_t i = 0; i < s->name_count; i++) free(s->names[i]);
  free(s->names);
}

static void volume_clear(e2b_volume *v) {
  free(v->volume_id);
  free(v->name);
  e2b_free_secret(v->token);
}

static void items_free(void *p) {
  item_list *l = p;
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) {
    if (l->snapshots) snapshot_clear(&l->snapshots[i]);
    if (l->volumes) volume_clear(&l->volumes[i]);
  }
  free(l->snapshots);
  free(l->volumes);
  free(l->next_token);
  free(l);
}

/* The items req gathers (its constructor said which kind: e2b_req_typed). */
static item_list *items_of(e2b_req *req) {
  if (!req->result) {
    if (!(req->result = calloc(1, sizeof(item_list)))) return NULL;
    req->result_free = items_free;
  }
  return req->result_free == items_free ? req->result : NULL;
}

static int parse_snapshot(json_t *o, e2b_snapshot *out) {
  memset(out, 0, sizeof *out);
  const char *id = e2b_json_str(o, "snapshotID", NULL);
  if (!id || !(out->snapshot_id = strdup(id))) return -1;
  json_t *names = json_object_get(o, "names");
  size_t n = json_array_size(names);
  if (n && !(out->names = calloc(n, sizeof *out->names))) return -1;
  for (size_t i = 0; i < n; i++) {
    const char *name = json_string_value(json_array_get(names, i));
    if (name && !(out->names[out->name_count++] = strdup(name))) return -1;
  }
  return 0;
}

static int parse_volume(json_t *o, e2b_volume *out) {
  memset(out, 0, sizeof *out);
  const char *id = e2b_json_str(o, "volumeID", NULL), *name = e2b_json_str(o, "name", NULL);
  const char *token = e2b_json_str(o, "token", NULL);
  if (!id || !name || !(out->volume_id = strdup(id)) || !(out->name = strdup(name))) return -1;
  if (token && !(out->token = strdup(token))) return -1;
  return 0;
}

/* Appends one object or every object of an array. */
static int parse_items(e2b_req *req, json_t *body, e2b_error *err, int volumes) {
  item_list *l = items_of(req);
  size_t n = json_is_array(body) ? json_array_size(body) : 1;
  if (!l) goto nomem;
  if (!json_is_array(body) && !json_is_object(body)) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, req->op, "unexpected response shape");
    return -1;
  }
  if (volumes) {
    e2b_volume *v = realloc(l->volumes, (l->n + n + 1) * sizeof *v);
    if (!v) goto nomem;
    l->volumes = v;
  } else {
    e2b_snapshot *s = realloc(l->snapshots, (l->n + n + 1) * sizeof *s);
    if (!s) goto nomem;
    l->snapshots = s;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_is_array(body) ? json_array_get(body, i) : body;
    int rc = volumes ? parse_volume(o, &l->volumes[l->n]) : parse_snapshot(o, &l->snapshots[l->n]);
    l->n++; /* counted either way, so a half-parsed item is freed */
    if (rc != 0) {
      e2b_err_set(err, E2B_ERR_PROTOCOL, req->op, "malformed %s", volumes ? "volume" : "snapshot");
      return -1;
    }
  }
  return volumes ? 0 : e2b_take_next_token(req, &l->next_token, err);
nomem:
  e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
  return -1;
}

static int parse_snapshots(e2b_req *req, json_t *body, e2b_error *err) {
  return parse_items(req, body, err, 0);
}

static int parse_volumes(e2b_req *req, json_t *body, e2b_error *err) {
  return parse_items(req, body, err, 1);
}

static int check_name(const char *name, const char *field, const char *op, e2b_error *err) {
  e2b_error_clear(err);
  if (!name || !*name || strlen(name) > 256 || !e2b_utf8_valid(name, strlen(name))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s must be 1-256 bytes of UTF-8", field);
    return -1;
  }
  return 0;
}

/* ---- raw calls ---- */

e2b_req *e2b_snapshot_create(e2b_client *c, const char *sandbox_id, const char *name,
                             e2b_error *err) {
  if (check_name(name, "name", "snapshot", err)) return NULL;
  json_t *body = json_object();
  json_object_set_new(body, "name", json_string(name));
  /* Not repeated: a second call would make a second build. */
  return e2b_req_typed(e2b_on_sandbox(c, "snapshot", "POST", sandbox_id, "/snapshots", body,
                                      parse_snapshots, 0, err),
                       E2B_RESULT_SNAPSHOTS);
}

static e2b_req *snapshot_page(e2b_client *c, const char *name, const char *sandbox_id, const char *token,
                              e2b_error *err) {
  growbuf q = {0};
  int rc = e2b_growbuf_append(&q, "/snapshots?limit=100", 20);
  if (sandbox_id) /* a sandbox id's shape needs no escaping (checked) */
    rc |= e2b_growbuf_append(&q, "&sandboxID=", 11) || e2b_growbuf_append(&q, sandbox_id, strlen(sandbox_id));
  if (name) {
    char *n = e2b_url_escape(name);
    rc |= !n || e2b_growbuf_append(&q, "&name=", 6) || e2b_growbuf_append(&q, n, strlen(n));
    free(n);
  }
  if (token) {
    char *t = e2b_url_escape(token);
    rc |= !t || e2b_growbuf_append(&q, "&nextToken=", 11) || e2b_growbuf_append(&q, t, strlen(t));
    free(t);
  }
  e2b_req *req = NULL;
  if (rc == 0)
    req = e2b_req_typed(e2b_control(c, "snapshots", "GET", q.data, NULL, parse_snapshots, 1, err),
                        E2B_RESULT_SNAPSHOTS);
  else
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "snapshots", "out of memory");
  e2b_growbuf_free(&q);
  return req;
}

static e2b_req *delete_path(e2b_client *c, const char *op, const char *prefix, const char *id,
                            e2b_error *err) {
  return e2b_control_at(c, op, "DELETE", e2b_id_path(prefix, id, ""), NULL, e2b_parse_nothing, 1, err);
}

e2b_req *e2b_volume_create(e2b_client *c, const char *name, e2b_error *err) {
  if (check_name(name, "name", "volume", err)) return NULL;
  if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
      strlen(name)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "volume", "name may hold only letters, digits, _ and -");
    return NULL;
  }
  json_t *body = json_object();
  json_object_set_new(body, "name", json_string(name));
  return e2b_req_typed(e2b_control(c, "volume", "POST", "/volumes", body, parse_volumes, 0, err),
                       E2B_RESULT_VOLUMES);
}

e2b_req *e2b_volume_list(e2b_client *c, e2b_error *err) {
  e2b_error_clear(err);
  return e2b_req_typed(e2b_control(c, "volumes", "GET", "/volumes", NULL, parse_volumes, 1, err),
                       E2B_RESULT_VOLUMES);
}

/* ---- composites: list every snapshot page; delete by name ---- */

typedef struct by_name_state {
  e2b_client *client;
  char *name;      /* NULL: every item */
  char *sandbox_id; /* snapshots: only those taken of this sandbox; NULL: any */
  int volumes;
  e2b_req *child;
  char *token;
  int listed;
  e2b_req **deletes;
  size_t delete_count;
} by_name_state;

static int take_items(e2b_req *dst, e2b_req *src, int volumes) {
  item_list *from = src->result, *to = items_of(dst);
  if (!from || !from->n) return 0;
  if (!to) return -1;
  size_t size = volumes ? sizeof(e2b_volume) : sizeof(e2b_snapshot);
  void **slot = volumes ? (void **)&to->volumes : (void **)&to->snapshots;
  char *p = realloc(*slot, (to->n + from->n) * size);
  if (!p) return -1;
  *slot = p;
  memcpy(p + to->n * size, volumes ? (void *)from->volumes : (void *)from->snapshots, from->n * size);
  to->n += from->n;
  from->n = 0;
  return 0;
}

/* Lists (every page); the matches end up in op's result. */
static int by_name_list(e2b_req *op, by_name_state *s) {
  e2b_error err;
  if (s->child && !e2b_req_done(s->child)) return 0;
  if (s->child) {
    const e2b_error *cerr = e2b_req_error(s->child);
    if (cerr) return e2b_op_finish(op, cerr), -1;
    if (take_items(op, s->child, s->volumes) != 0) {
      e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
      return e2b_op_finish(op, &err), -1;
    }
    item_list *page = items_of(s->child);
    free(s->token);
    s->token = page ? page->next_token : NULL;
    if (page) page->next_token = NULL;
    e2b_req_free(s->child);
    s->child = NULL;
    if (!s->token) return 1;
  }
  s->child = e2b_op_child(op, s->volumes ? e2b_volume_list(s->client, &err)
                                         : snapshot_page(s->client, s->name, s->sandbox_id, s->token, &err));
  if (!s->child) return e2b_op_finish(op, &err), -1;
  return 0;
}

static void list_advance(e2b_req *op) {
  by_name_state *s = op->state;
  if (by_name_list(op, s) == 1) e2b_op_finish(op, NULL);
}

static int matches(const by_name_state *s, const item_list *l, size_t i) {
  if (s->volumes) return strcmp(l->volumes[i].name, s->name) == 0 || strcmp(l->volumes[i].volume_id, s->name) == 0;
  const e2b_snapshot *sn = &l->snapshots[i];
  if (strcmp(sn->snapshot_id, s->name) == 0) return 1;
  for (size_t k = 0; k < sn->name_count; k++) {
    /* names are "team/name:tag": match the bare name too */
    const char *full = sn->names[k], *slash = strrchr(full, '/');
    const char *base = slash ? slash + 1 : full;
    size_t len = strcspn(base, ":");
    if (strcmp(full, s->name) == 0 || (strlen(s->name) == len && strncmp(base, s->name, len) == 0))
      return 1;
  }
  return 0;
}

static void delete_advance(e2b_req *op) {
  by_name_state *s = op->state;
  e2b_error err;
  if (!s->listed) {
    int r = by_name_list(op, s);
    if (r != 1) return;
    s->listed = 1;
    item_list *l = op->result;
    size_t n = l ? l->n : 0;
    if (!(s->deletes = calloc(n + 1, sizeof *s->deletes))) {
      e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
      return e2b_op_finish(op, &err);
    }
    for (size_t i = 0; i < n; i++) {
      if (!matches(s, l, i)) continue;
      e2b_req *d = s->volumes ? delete_path(s->client, "delete_volume", "/volumes", l->volumes[i].volume_id, &err)
                              : delete_path(s->client, "delete_snapshot", "/templates", l->snapshots[i].snapshot_id, &err);
      if (!d) return e2b_op_finish(op, &err);
      s->deletes[s->delete_count++] = e2b_op_child(op, d);
    }
  }
  for (size_t i = 0; i < s->delete_count; i++)
    if (!e2b_req_done(s->deletes[i])) return;
  for (size_t i = 0; i < s->delete_count; i++) {
    const e2b_error *derr = e2b_req_error(s->deletes[i]);
    if (derr && derr->code != E2B_ERR_NOT_FOUND) return e2b_op_finish(op, derr);
  }
  e2b_op_finish(op, NULL);
}

#define BY_NAME_AT(f) offsetof(by_name_state, f)
static const e2b_op_kind by_name_kind = {
    .size = sizeof(by_name_state), .children = E2B_FIELDS(BY_NAME_AT(child)),
    .fanouts = E2B_FIELDS(BY_NAME_AT(deletes), BY_NAME_AT(delete_count)),
    .allocs = E2B_FIELDS(BY_NAME_AT(name), BY_NAME_AT(sandbox_id), BY_NAME_AT(token)),
    .holds = E2B_OP_HOLDS_CLIENT,
    .ref = BY_NAME_AT(client), .key = BY_NAME_AT(name)};

static e2b_req *by_name(e2b_client *c, const char *opname, const char *name, int volumes,
                        req_advance_fn advance, e2b_error *err) {
  e2b_req *op = e2b_op_new(&by_name_kind, c, NULL, opname, advance, name, err);
  if (op) ((by_name_state *)op->state)->volumes = volumes;
  return op;
}

e2b_req *e2b_snapshot_list(e2b_client *c, const char *name, e2b_error *err) {
  return e2b_snapshot_list_for(c, name, NULL, err);
}

e2b_req *e2b_snapshot_list_for(e2b_client *c, const char *name, const char *sandbox_id, e2b_error *err) {
  e2b_error_clear(err);
  if (name && check_name(name, "name", "snapshots", err)) return NULL;
  if (sandbox_id && (!e2b_sandbox_id_len(sandbox_id) || strlen(sandbox_id) > 256)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "snapshots", "sandbox_id is not a sandbox id (lowercase letters and digits)");
    return NULL;
  }
  e2b_req *op = by_name(c, "snapshots", name, 0, list_advance, err);
  by_name_state *s = op ? op->state : NULL;
  if (s && sandbox_id && !(s->sandbox_id = strdup(sandbox_id))) return e2b_op_nomem(op, err);
  return e2b_req_typed(op, E2B_RESULT_SNAPSHOTS);
}

e2b_req *e2b_snapshot_delete(e2b_client *c, const char *name, e2b_error *err) {
  if (check_name(name, "name", "delete_snapshot", err)) return NULL;
  return by_name(c, "delete_snapshot", name, 0, delete_advance, err);
}

e2b_req *e2b_volume_delete(e2b_client *c, const char *name, e2b_error *err) {
  if (check_name(name, "name", "delete_volume", err)) return NULL;
  return by_name(c, "delete_volume", name, 1, delete_advance, err);
}

/* Open: the list's first match by name or id, then GET /volumes/{id}, whose
 * answer (with the token) replaces the matches as the result. */
static void open_advance(e2b_req *op) {
  by_name_state *s = op->state;
  e2b_error err;
  if (!s->listed) {
    if (by_name_list(op, s) != 1) return;
    s->listed = 1;
    item_list *l = op->result;
    const char *id = NULL;
    for (size_t i = 0; l && i < l->n && !id; i++)
      if (matches(s, l, i)) id = l->volumes[i].volume_id;
    if (!id) {
      e2b_err_set(&err, E2B_ERR_NOT_FOUND, op->op, "no volume has that name or id");
      return e2b_op_finish(op, &err);
    }
    char *path = e2b_id_path("/volumes", id, "");
    if (!path) {
      e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
      return e2b_op_finish(op, &err);
    }
    s->child = e2b_op_child(op, e2b_control(s->client, "volume", "GET", path, NULL, parse_volumes, 1, &err));
    free(path);
    if (!s->child) e2b_op_finish(op, &err);
    return;
  }
  if (!e2b_req_done(s->child)) return;
  const e2b_error *cerr = e2b_req_error(s->child);
  if (cerr) return e2b_op_finish(op, cerr);
  item_list *l = op->result;
  for (size_t i = 0; i < l->n; i++) volume_clear(&l->volumes[i]);
  l->n = 0;
  if (take_items(op, s->child, 1) != 0 || l->n != 1) {
    e2b_err_set(&err, E2B_ERR_PROTOCOL, op->op, "the volume's answer holds no volume");
    return e2b_op_finish(op, &err);
  }
  e2b_op_finish(op, NULL);
}

e2b_req *e2b_volume_open(e2b_client *c, const char *name_or_id, e2b_error *err) {
  if (check_name(name_or_id, "name", "volume", err)) return NULL;
  return e2b_req_typed(by_name(c, "volume", name_or_id, 1, open_advance, err), E2B_RESULT_VOLUMES);
}

size_t e2b_req_snapshot_count(const e2b_req *req) {
  const item_list *l = req->result_kind == E2B_RESULT_SNAPSHOTS ? req->result : NULL;
  return l ? l->n : 0;
}

const e2b_snapshot *e2b_req_snapshot_at(const e2b_req *req, size_t i) {
  return i < e2b_req_snapshot_count(req) ? &((item_list *)req->result)->snapshots[i] : NULL;
}

size_t e2b_req_volume_count(const e2b_req *req) {
  const item_list *l = req->result_kind == E2B_RESULT_VOLUMES ? req->result : NULL;
  return l ? l->n : 0;
}

const e2b_volume *e2b_req_volume_at(const e2b_req *req, size_t i) {
  return i < e2b_req_volume_count(req) ? &((item_list *)req->result)->volumes[i] : NULL;
}
