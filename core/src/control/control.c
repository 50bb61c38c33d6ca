/* control.c — control-plane operations (api.<domain>, X-API-Key). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A sandbox id travels as one path segment, and only in a shape E2B takes
 * (else it answers 400): refused here, before any request. */
static int check_id(const char *id, const char *field, const char *op, e2b_error *err) {
  if (!id || !*id) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s is required", field);
    return -1;
  }
  if (strlen(id) > 256) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s is too long", field);
    return -1;
  }
  if (!e2b_sandbox_id_len(id)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s \"%.64s\" is not a sandbox id (lowercase letters and digits)",
                field, id);
    return -1;
  }
  return 0;
}

static int check_kvs(const e2b_kv *kv, size_t n, const char *field, const char *op,
                     e2b_error *err) {
  if (n && !kv) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s: count given without pairs", field);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (!kv[i].key || !*kv[i].key || !kv[i].value) {
      e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s: every pair needs a key and a value",
                  field);
      return -1;
    }
    if (!e2b_utf8_valid(kv[i].key, strlen(kv[i].key)) ||
        !e2b_utf8_valid(kv[i].value, strlen(kv[i].value))) {
      e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s: keys and values must be UTF-8", field);
      return -1;
    }
  }
  return 0;
}

static json_t *kv_object(const e2b_kv *kv, size_t n) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < n; i++) json_object_set_new(o, kv[i].key, json_string(kv[i].value));
  return o;
}

static long ceil_seconds(long ms) { return (ms + 999) / 1000; }

/* Runs a control-plane request: builds it, owns body, starts it. */
e2b_req *e2b_control(e2b_client *c, const char *op, const char *method, const char *path,
                     json_t *body, req_parse_fn parse, int idempotent, e2b_error *err) {
  e2b_req *req = e2b_req_new(c->loop, op, err);
  if (!req) {
    json_decref(body);
    return NULL;
  }
  req->mode = BODY_BUFFER;
  req->parse = parse;
  req->idempotent = idempotent;
  /* curl silently repeats a request whose reused connection closed before
   * any answer; a call that allocates must never be repeated. */
  if (!idempotent && strcmp(method, "POST") == 0) e2b_req_no_replay(req);
  int rc = e2b_client_prepare_control(c, req, method, path, body, err);
  json_decref(body);
  if (rc != 0) {
    e2b_req_free(req);
    return NULL;
  }
  return e2b_req_start(req, err) == 0 ? req : NULL;
}

e2b_req *e2b_control_at(e2b_client *c, const char *op, const char *method, char *path, json_t *body,
                        req_parse_fn parse, int idempotent, e2b_error *err) {
  if (!path) {
    json_decref(body);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return NULL;
  }
  e2b_req *req = e2b_control(c, op, method, path, body, parse, idempotent, err);
  free(path);
  return req;
}

/* ---- the sandbox list: what sandbox answers leave in the result slot ---- */

static void sandbox_list_free(void *p) {
  e2b_sandbox_set *l = p;
  for (size_t i = 0; i < l->count; i++) e2b_sandbox_info_clear(&l->items[i]);
  free(l->items);
  free(l->next_token);
  json_decref(l->detail);
  free(l);
}

e2b_sandbox_set *e2b_sandboxes(e2b_req *req) {
  if (req->result) return req->result_free == sandbox_list_free ? req->result : NULL;
  if (!(req->result = calloc(1, sizeof(e2b_sandbox_set)))) return NULL;
  req->result_free = sandbox_list_free;
  return req->result;
}

const e2b_sandbox_set *e2b_sandboxes_in(const e2b_req *req) {
  static const e2b_sandbox_set none;
  return req->result && req->result_free == sandbox_list_free ? req->result : &none;
}

static int parse_one_sandbox(e2b_req *req, json_t *body, e2b_error *err) {
  e2b_sandbox_set *l = e2b_sandboxes(req);
  if (!l || !(l->items = calloc(1, sizeof *l->items))) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return -1;
  }
  if (e2b_parse_sandbox(body, &l->items[0]) != 0) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, req->op, "response is not a sandbox object");
    return -1;
  }
  l->count = 1;
  l->resumed = req->status == 201;
  return 0;
}

/* Pages carry the next token in a header (absent or empty on the last
 * page); out is where it goes. */
int e2b_take_next_token(e2b_req *req, char **out, e2b_error *err) {
  struct curl_header *h = NULL;
  if (curl_easy_header(req->easy, "X-Next-Token", 0, CURLH_HEADER, -1, &h) == CURLHE_OK && h &&
      h->value && *h->value) {
    if (!(*out = strdup(h->value))) {
      e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
      return -1;
    }
  }
  return 0;
}

static int sandbox_item(json_t *obj, void *out) { return e2b_parse_sandbox(obj, out); }

static int parse_sandbox_list(e2b_req *req, json_t *body, e2b_error *err) {
  if (!json_is_array(body)) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, req->op, "response is not a list of sandboxes");
    return -1;
  }
  e2b_sandbox_set *l = e2b_sandboxes(req);
  if (!l) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return -1;
  }
  void *items;
  int rc = e2b_parse_items(body, sizeof *l->items, sandbox_item, &items, &l->count, req->op,
                           "list item %zu is not a sandbox", err);
  l->items = items;
  if (rc != 0) return -1;
  return e2b_take_next_token(req, &l->next_token, err);
}

int e2b_tristate_check(int v, const char *field, const char *op, e2b_error *err) {
  if (v == E2B_DEFAULT || v == E2B_YES || v == E2B_NO) return 0;
  e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s must be 0 (the default), E2B_YES or E2B_NO", field);
  return -1;
}

int e2b_create_tristates_check(const e2b_create_opts *o, const char *op, e2b_error *err) {
  return e2b_tristate_check(o->secure, "secure", op, err) ||
         e2b_tristate_check(o->allow_internet_access, "allow_internet_access", op, err) ||
         e2b_tristate_check(o->auto_pause, "auto_pause", op, err) ||
         e2b_tristate_check(o->auto_pause_memory, "auto_pause_memory", op, err) ||
         e2b_tristate_check(o->auto_resume, "auto_resume", op, err);
}

/* The MCP configuration's text as a JSON object (new reference), or NULL. */
static json_t *mcp_object(const char *text) {
  json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
  if (json_is_object(v)) return v;
  json_decref(v);
  return NULL;
}

int e2b_create_mcp_check(const e2b_create_opts *o, const char *op, e2b_error *err) {
  json_t *mcp = o->mcp ? mcp_object(o->mcp) : NULL;
  json_decref(mcp);
  if (!o->mcp || mcp) return 0;
  e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "mcp must be a JSON object (the MCP gateway's configuration)");
  if (err) snprintf(err->field, sizeof err->field, "mcp");
  return -1;
}

static int validate_create(const e2b_create_opts *o, e2b_error *err) {
  const char *op = "create";
  if (o->timeout_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "timeout_ms must not be negative");
    return -1;
  }
  if (o->template_id && (!*o->template_id || !e2b_utf8_valid(o->template_id, strlen(o->template_id)))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "template must be a non-empty UTF-8 string");
    return -1;
  }
  if (e2b_create_mcp_check(o, op, err)) return -1;
  if (check_kvs(o->metadata, o->metadata_count, "metadata", op, err) ||
      check_kvs(o->env, o->env_count, "env", op, err) ||
      check_kvs(o->volume_mounts, o->volume_mount_count, "volume_mounts", op, err))
    return -1;
  if (o->net && (o->allow_internet_access || o->allow_out_count || o->deny_out_count || o->network)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op,
                "net: give the network policy either in net or in the flat fields, not both");
    if (err) snprintf(err->field, sizeof err->field, "net");
    return -1;
  }
  if (o->net && o->net->allow_public_traffic == E2B_NO && o->secure == E2B_NO) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op,
                "network.allow_public_traffic: false requires a secure sandbox (E2B refuses it otherwise)");
    if (err) snprintf(err->field, sizeof err->field, "network.allow_public_traffic");
    return -1;
  }
  if (e2b_create_tristates_check(o, op, err)) return -1;
  return e2b_lifecycle_check(o->auto_pause, o->auto_pause_memory, o->auto_resume, op, err);
}

static int lifecycle_refuse(const char *field, const char *why, const char *op, e2b_error *err) {
  e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s %s", field, why);
  if (err) snprintf(err->field, sizeof err->field, "%s", field);
  return -1;
}

/* The lifecycle combinations E2B's SDKs refuse before sending a create. */
int e2b_lifecycle_check(int auto_pause, int auto_pause_memory, int auto_resume, const char *op,
                        e2b_error *err) {
  if (e2b_tristate_check(auto_pause, "auto_pause", op, err) ||
      e2b_tristate_check(auto_pause_memory, "auto_pause_memory", op, err) ||
      e2b_tristate_check(auto_resume, "auto_resume", op, err))
    return -1;
  if (auto_pause_memory != E2B_DEFAULT && auto_pause != E2B_YES)
    return lifecycle_refuse("lifecycle.keep_memory", "only applies when on_timeout is \"pause\"", op, err);
  if (auto_resume == E2B_YES && auto_pause != E2B_YES)
    return lifecycle_refuse("lifecycle.auto_resume", "requires on_timeout = \"pause\"", op, err);
  if (auto_resume == E2B_YES && auto_pause_memory == E2B_NO)
    return lifecycle_refuse("lifecycle.auto_resume",
                            "requires keep_memory (a filesystem-only pause cannot auto-resume)", op, err);
  return 0;
}

static void add_lifecycle(json_t *body, const e2b_create_opts *o) {
  if (o->auto_pause) json_object_set_new(body, "autoPause", json_boolean(o->auto_pause == E2B_YES));
  if (o->auto_pause_memory)
    json_object_set_new(body, "autoPauseMemory", json_boolean(o->auto_pause_memory == E2B_YES));
  if (o->auto_resume) {
    json_t *ar = json_object();
    json_object_set_new(ar, "enabled", json_boolean(o->auto_resume == E2B_YES));
    json_object_set_new(body, "autoResume", ar);
  }
}

/* The policy (o->net, or the flat fields) translated by network.c. */
static int add_network(json_t *body, const e2b_create_opts *o, e2b_error *err) {
  e2b_network flat = {.allow_internet_access = o->allow_internet_access,
                      .allow_out = o->allow_out, .allow_out_count = o->allow_out_count,
                      .deny_out = o->deny_out, .deny_out_count = o->deny_out_count};
  json_t *fields = e2b_network_fields(o->net ? o->net : &flat, 0, "create", err);
  if (!fields) return -1;
  if (o->network && !json_object_get(fields, "network")) json_object_set_new(fields, "network", json_object());
  json_object_update(body, fields);
  json_decref(fields);
  return 0;
}

static void add_volumes(json_t *body, const e2b_create_opts *o) {
  if (o->volume_mount_count) {
    json_t *mounts = json_array();
    for (size_t i = 0; i < o->volume_mount_count; i++) {
      json_t *m = json_object();
      json_object_set_new(m, "name", json_string(o->volume_mounts[i].value));
      json_object_set_new(m, "path", json_string(o->volume_mounts[i].key));
      json_array_append_new(mounts, m);
    }
    json_object_set_new(body, "volumeMounts", mounts);
  }
}

/* NewSandboxV2 has no `secure` (always secure); NewSandbox has it, and
 * without it E2B makes the sandbox insecure: v1 always says. */
json_t *e2b_create_body(const e2b_client *c, const e2b_create_opts *o, int v1, e2b_error *err) {
  if (validate_create(o, err) != 0) return NULL;
  long timeout_ms = o->timeout_ms ? o->timeout_ms : E2B_DEFAULT_SANDBOX_TIMEOUT_MS;
  json_t *body = json_object();
  if (!body) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "create", "out of memory");
    return NULL;
  }
  const char *tpl = o->template_id ? o->template_id : o->mcp ? E2B_MCP_TEMPLATE : c->template_id;
  json_object_set_new(body, "templateID", json_string(tpl));
  if (o->mcp) json_object_set_new(body, "mcp", mcp_object(o->mcp));
  json_object_set_new(body, "timeout", json_integer(ceil_seconds(timeout_ms)));
  if (v1) json_object_set_new(body, "secure", json_boolean(o->secure != E2B_NO));
  if (add_network(body, o, err)) {
    json_decref(body);
    return NULL;
  }
  if (o->metadata_count) json_object_set_new(body, "metadata", kv_object(o->metadata, o->metadata_count));
  if (o->env_count) json_object_set_new(body, "envVars", kv_object(o->env, o->env_count));
  add_lifecycle(body, o);
  add_volumes(body, o);
  return body;
}

/* Never repeated once it may have reached the server: it allocates. */
e2b_req *e2b_api_create(e2b_client *c, json_t *body, int v1, e2b_error *err) {
  return e2b_control(c, "create", "POST", v1 ? "/sandboxes" : "/v2/sandboxes", body, parse_one_sandbox, 0, err);
}

/* Builds "/prefix/<escaped id>/suffix". */
char *e2b_id_path(const char *prefix, const char *id, const char *suffix) {
  char *esc = e2b_url_escape(id);
  if (!esc) return NULL;
  size_t n = strlen(prefix) + strlen(esc) + strlen(suffix) + 2;
  char *path = malloc(n);
  if (path) snprintf(path, n, "%s/%s%s", prefix, esc, suffix);
  free(esc);
  return path;
}

e2b_req *e2b_on_sandbox(e2b_client *c, const char *op, const char *method, const char *id,
                        const char *suffix, json_t *body, req_parse_fn parse, int idempotent,
                        e2b_error *err) {
  e2b_error_clear(err);
  if (!c) {
    json_decref(body);
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "client is required");
    return NULL;
  }
  if (check_id(id, "sandbox_id", op, err) != 0) {
    json_decref(body);
    return NULL;
  }
  return e2b_control_at(c, op, method, e2b_id_path("/sandboxes", id, suffix), body, parse, idempotent, err);
}

e2b_req *e2b_sandbox_connect(e2b_client *c, const char *sandbox_id, long timeout_ms, e2b_error *err) {
  if (timeout_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "connect", "timeout_ms must not be negative");
    return NULL;
  }
  json_t *body = json_object();
  json_object_set_new(body, "timeout",
                      json_integer(ceil_seconds(timeout_ms ? timeout_ms : E2B_DEFAULT_SANDBOX_TIMEOUT_MS)));
  return e2b_req_typed(e2b_on_sandbox(c, "connect", "POST", sandbox_id, "/connect", body,
                                      parse_one_sandbox, 1, err),
                       E2B_RESULT_SANDBOX);
}

/* The resume route, which every E2B has: a connect for a paused sandbox
 * where there is no connect route (a running one is a 409). */
e2b_req *e2b_api_resume(e2b_client *c, const char *sandbox_id, long timeout_ms, e2b_error *err) {
  json_t *body = json_object();
  json_object_set_new(body, "timeout", json_integer(ceil_seconds(timeout_ms)));
  return e2b_on_sandbox(c, "resume", "POST", sandbox_id, "/resume", body, parse_one_sandbox, 1, err);
}

static int parse_detail(e2b_req *req, json_t *body, e2b_error *err) {
  if (parse_one_sandbox(req, body, err) != 0) return -1;
  e2b_sandboxes(req)->detail = json_incref(body);
  return 0;
}

e2b_req *e2b_api_detail(e2b_client *c, const char *sandbox_id, e2b_error *err) {
  return e2b_on_sandbox(c, "info", "GET", sandbox_id, "", NULL, parse_detail, 1, err);
}

e2b_req *e2b_sandbox_get(e2b_client *c, const char *sandbox_id, e2b_error *err) {
  return e2b_req_typed(e2b_on_sandbox(c, "info", "GET", sandbox_id, "", NULL, parse_one_sandbox, 1, err),
                       E2B_RESULT_SANDBOX);
}

e2b_req *e2b_sandbox_kill(e2b_client *c, const char *sandbox_id, e2b_error *err) {
  return e2b_on_sandbox(c, "kill", "DELETE", sandbox_id, "", NULL, e2b_parse_nothing, 1, err);
}

e2b_req *e2b_sandbox_set_timeout(e2b_client *c, const char *sandbox_id, long timeout_ms,
                                 e2b_error *err) {
  if (timeout_ms <= 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "set_timeout", "timeout_ms must be positive");
    return NULL;
  }
  json_t *body = json_object();
  json_object_set_new(body, "timeout", json_integer(ceil_seconds(timeout_ms)));
  return e2b_on_sandbox(c, "set_timeout", "POST", sandbox_id, "/timeout", body, e2b_parse_nothing,
                        1, err);
}

e2b_req *e2b_api_pause(e2b_client *c, const char *sandbox_id, int memory, e2b_error *err) {
  json_t *body = json_object();
  json_object_set_new(body, "memory", json_boolean(memory));
  return e2b_on_sandbox(c, "pause", "POST", sandbox_id, "/pause", body, e2b_parse_nothing, 1, err);
}

e2b_req *e2b_api_refresh(e2b_client *c, const char *sandbox_id, long seconds, e2b_error *err) {
  json_t *body = json_object();
  json_object_set_new(body, "duration", json_integer(seconds));
  return e2b_on_sandbox(c, "keep_alive", "POST", sandbox_id, "/refreshes", body, e2b_parse_nothing,
                        1, err);
}

e2b_req *e2b_sandbox_set_network(e2b_client *c, const char *sandbox_id, const e2b_network *net,
                                 e2b_error *err) {
  const char *op = "set_network";
  e2b_error_clear(err);
  if (!net) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "network is required");
    if (err) snprintf(err->field, sizeof err->field, "network");
    return NULL;
  }
  /* The update replaces the whole egress configuration. */
  json_t *body = e2b_network_fields(net, 1, op, err);
  if (!body) return NULL;
  return e2b_on_sandbox(c, op, "PUT", sandbox_id, "/network", body, e2b_parse_nothing, 1, err);
}

int e2b_list_filters_check(const e2b_list_opts *o, const char *op, e2b_error *err) {
  const char *bad = o->template_id && (!*o->template_id || !e2b_utf8_valid(o->template_id, strlen(o->template_id)))
                        ? "template"
                    : o->started_after_ms < 0 || o->started_after_ms > INT64_C(253402300799999) ? "started_after"
                    : o->order < 0 || o->order > E2B_ORDER_DESC ? "order"
                                                                : NULL;
  if (!bad) return 0;
  e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s is out of range", bad);
  return -1;
}

/* &template=..&startedAfter=<RFC 3339, UTC>&order=asc|desc, as set. */
static int append_filters_query(growbuf *q, const e2b_list_opts *o) {
  int rc = 0;
  if (o->template_id) {
    char *t = e2b_url_escape(o->template_id);
    rc |= !t || e2b_growbuf_append(q, "&template=", 10) || e2b_growbuf_append(q, t, strlen(t));
    free(t);
  }
  if (o->started_after_ms) {
    time_t secs = (time_t)(o->started_after_ms / 1000);
    struct tm tm;
    char v[64];
    gmtime_r(&secs, &tm);
    size_t n = strftime(v, sizeof v, "&startedAfter=%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(v + n, sizeof v - n, ".%03dZ", (int)(o->started_after_ms % 1000));
    rc |= e2b_growbuf_append(q, v, n);
  }
  if (o->order) {
    const char *v = o->order == E2B_ORDER_ASC ? "&order=asc" : "&order=desc";
    rc |= e2b_growbuf_append(q, v, strlen(v));
  }
  return rc;
}

/* metadata=k=v&k2=v2 with each key and value escaped, then the whole string
 * escaped once more as the parameter value — exactly what the SDKs send. */
static int append_metadata_query(growbuf *q, const e2b_kv *kv, size_t n) {
  growbuf inner = {0};
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    char *k = e2b_url_escape(kv[i].key), *v = e2b_url_escape(kv[i].value);
    rc = !k || !v || (i && e2b_growbuf_append(&inner, "&", 1)) ||
         e2b_growbuf_append(&inner, k, strlen(k)) || e2b_growbuf_append(&inner, "=", 1) ||
         e2b_growbuf_append(&inner, v, strlen(v));
    free(k);
    free(v);
  }
  if (rc == 0 && inner.len) {
    char *outer = e2b_url_escape(inner.data);
    rc = !outer || e2b_growbuf_append(q, "&metadata=", 10) ||
         e2b_growbuf_append(q, outer, strlen(outer));
    free(outer);
  }
  e2b_growbuf_free(&inner);
  return rc ? -1 : 0;
}

e2b_req *e2b_sandbox_list(e2b_client *c, const e2b_list_opts *o, e2b_error *err) {
  static const e2b_list_opts defaults = {0};
  const char *op = "list";
  e2b_error_clear(err);
  if (!o) o = &defaults;
  if (o->limit < 0 || o->limit > 100) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "limit must be between 1 and 100");
    return NULL;
  }
  if (o->states & ~(E2B_LIST_RUNNING | E2B_LIST_PAUSED)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "state: unknown state bit");
    return NULL;
  }
  if (check_kvs(o->metadata, o->metadata_count, "metadata", op, err) != 0 ||
      e2b_list_filters_check(o, op, err) != 0)
    return NULL;
  growbuf q = {0};
  unsigned states = o->states ? o->states : E2B_LIST_RUNNING | E2B_LIST_PAUSED;
  int rc = e2b_growbuf_append(&q, "/v2/sandboxes?state=", 20);
  if (states & E2B_LIST_RUNNING) rc |= e2b_growbuf_append(&q, "running", 7);
  if (states == (E2B_LIST_RUNNING | E2B_LIST_PAUSED)) rc |= e2b_growbuf_append(&q, ",", 1);
  if (states & E2B_LIST_PAUSED) rc |= e2b_growbuf_append(&q, "paused", 6);
  if (o->limit) {
    char lim[24];
    snprintf(lim, sizeof lim, "&limit=%d", o->limit);
    rc |= e2b_growbuf_append(&q, lim, strlen(lim));
  }
  if (o->next_token && *o->next_token) {
    char *tok = e2b_url_escape(o->next_token);
    rc |= !tok || e2b_growbuf_append(&q, "&nextToken=", 11) || e2b_growbuf_append(&q, tok, strlen(tok));
    free(tok);
  }
  rc |= append_metadata_query(&q, o->metadata, o->metadata_count);
  rc |= append_filters_query(&q, o);
  if (rc) {
    e2b_growbuf_free(&q);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return NULL;
  }
  e2b_req *req = e2b_control(c, op, "GET", q.data, NULL, parse_sandbox_list, 1, err);
  e2b_growbuf_free(&q);
  return e2b_req_typed(req, E2B_RESULT_SANDBOXES);
}

const e2b_sandbox_info *e2b_req_sandbox(const e2b_req *req) { return e2b_req_sandbox_at(req, 0); }
size_t e2b_req_sandbox_count(const e2b_req *req) { return e2b_sandboxes_in(req)->count; }
const e2b_sandbox_info *e2b_req_sandbox_at(const e2b_req *req, size_t i) {
  const e2b_sandbox_set *l = e2b_sandboxes_in(req);
  return i < l->count ? &l->items[i] : NULL;
}
const char *e2b_req_next_token(const e2b_req *req) { return e2b_sandboxes_in(req)->next_token; }
int e2b_req_resumed(const e2b_req *req) { return e2b_sandboxes_in(req)->resumed; }
