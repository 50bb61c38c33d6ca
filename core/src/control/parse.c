/* parse.c — E2B JSON (control plane and proto3 canonical JSON) into the
 * result structures of e2b.h. Parsers accept lowerCamelCase and proto field
 * names, numbers or strings for 64-bit integers, and enum names or numbers,
 * as proto3 JSON readers must. */
#define _GNU_SOURCE /* memmem */
#include "internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *e2b_json_str(json_t *obj, const char *camel, const char *snake) {
  json_t *v = json_object_get(obj, camel);
  if (!v && snake) v = json_object_get(obj, snake);
  return json_string_value(v);
}

int e2b_json_int(json_t *obj, const char *camel, const char *snake, int64_t lo, int64_t hi,
                 int64_t *out) {
  json_t *v = json_object_get(obj, camel);
  if (!v && snake) v = json_object_get(obj, snake);
  int64_t n = 0;
  *out = 0;
  if (!v || json_is_null(v)) return 0;
  if (json_is_integer(v)) {
    n = (int64_t)json_integer_value(v);
  } else if (json_is_real(v)) {
    /* a whole number in range only: anything else would be cast blindly */
    double d = json_real_value(v);
    if (!(d >= (double)lo && d <= (double)hi) || d != (double)(int64_t)d) return -1;
    n = (int64_t)d;
  } else if (json_is_string(v)) {
    const char *s = json_string_value(v);
    char *end = NULL;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!*s || *end || errno == ERANGE) return -1;
    n = (int64_t)x;
  } else {
    return -1;
  }
  if (n < lo || n > hi) return -1;
  *out = n;
  return 0;
}

static int dup_field(char **out, json_t *obj, const char *camel, const char *snake) {
  const char *s = e2b_json_str(obj, camel, snake);
  *out = NULL;
  if (!s) return 0;
  *out = strdup(s);
  return *out ? 0 : -1;
}

/* A string field of a result struct and the JSON names it comes under:
 * one table per struct both parses and frees them, so they cannot disagree. */
typedef struct str_field {
  size_t at;
  const char *camel, *snake;
} str_field;

static char **string_at(void *out, const str_field *f) { return (char **)((char *)out + f->at); }

static int dup_strings(void *out, json_t *obj, const str_field *t, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (dup_field(string_at(out, &t[i]), obj, t[i].camel, t[i].snake)) return -1;
  return 0;
}

static void free_strings(void *out, const str_field *t, size_t n) {
  for (size_t i = 0; i < n; i++) free(*string_at(out, &t[i]));
}

static int64_t time_field(json_t *obj, const char *camel, const char *snake) {
  int64_t ms = 0;
  const char *s = e2b_json_str(obj, camel, snake);
  if (s && e2b_time_parse(s, &ms) == 0) return ms;
  return 0;
}

static void map_clear(e2b_map *m) {
  for (size_t i = 0; i < m->count; i++) {
    free(m->keys[i]);
    free(m->values[i]);
  }
  free(m->keys);
  free(m->values);
  memset(m, 0, sizeof *m);
}

static int parse_map(json_t *obj, e2b_map *out) {
  memset(out, 0, sizeof *out);
  if (!json_is_object(obj) || json_object_size(obj) == 0) return 0;
  size_t n = json_object_size(obj);
  out->keys = calloc(n, sizeof *out->keys);
  out->values = calloc(n, sizeof *out->values);
  if (!out->keys || !out->values) return -1;
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    if (!json_is_string(v)) continue;
    out->keys[out->count] = strdup(k);
    out->values[out->count] = strdup(json_string_value(v));
    out->count++;
    if (!out->keys[out->count - 1] || !out->values[out->count - 1]) return -1;
  }
  return 0;
}

/* The access token is not here: it is a secret, wiped when freed. */
#define SANDBOX_AT(f) offsetof(e2b_sandbox_info, f)
static const str_field sandbox_strings[] = {
    {SANDBOX_AT(sandbox_id), "sandboxID", NULL},
    {SANDBOX_AT(template_id), "templateID", NULL},
    {SANDBOX_AT(alias), "alias", NULL},
    {SANDBOX_AT(client_id), "clientID", NULL},
    {SANDBOX_AT(envd_version), "envdVersion", NULL},
    {SANDBOX_AT(traffic_access_token), "trafficAccessToken", NULL},
    {SANDBOX_AT(domain), "domain", NULL}};
#define SANDBOX_STRINGS (sizeof sandbox_strings / sizeof *sandbox_strings)

static void list_clear(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* The strings of a JSON array (others skipped) into *out: 0, -1 no memory. */
static int parse_list(json_t *arr, char ***out, size_t *n) {
  *n = 0;
  size_t cap = json_array_size(arr);
  if (!cap) return 0;
  if (!(*out = calloc(cap, sizeof **out))) return -1;
  for (size_t i = 0; i < cap; i++) {
    const char *v = json_string_value(json_array_get(arr, i));
    if (v && !((*out)[(*n)++] = strdup(v))) return -1;
  }
  return 0;
}

#define NET_RULES_MAX 64

/* rules: { domain: [ {transform: {headers: {...}}} ] } -> the first rule's
 * headers, at most NET_RULES_MAX domains of at most 64 headers. */
static int parse_rules(json_t *rules, e2b_sandbox_info *out) {
  size_t cap = json_object_size(rules) < NET_RULES_MAX ? json_object_size(rules) : NET_RULES_MAX;
  if (cap == 0) return 0;
  out->rule_domains = calloc(cap, sizeof *out->rule_domains);
  out->rule_headers = calloc(cap, sizeof *out->rule_headers);
  if (!out->rule_domains || !out->rule_headers) return -1;
  const char *domain;
  json_t *list;
  json_object_foreach(rules, domain, list) {
    if (out->rule_count == cap) break;
    json_t *headers = json_object_get(json_object_get(json_array_get(list, 0), "transform"), "headers");
    if (json_object_size(headers) > 64) continue;
    size_t i = out->rule_count;
    if (!(out->rule_domains[i] = strdup(domain))) return -1;
    out->rule_count++;
    if (parse_map(headers, &out->rule_headers[i]) != 0) return -1;
  }
  return 0;
}

/* bool field of obj: 1, 0, or -1 when absent or not a boolean. */
static int tri_field(json_t *obj, const char *name) {
  json_t *v = json_object_get(obj, name);
  return json_is_boolean(v) ? json_is_true(v) : -1;
}

static int parse_network(json_t *obj, e2b_sandbox_info *out) {
  json_t *net = json_object_get(obj, "network");
  out->allow_internet_access = tri_field(obj, "allowInternetAccess");
  out->allow_public_traffic = -1;
  if (!json_is_object(net)) return 0;
  out->network = 1;
  out->allow_public_traffic = tri_field(net, "allowPublicTraffic");
  json_t *proxy = json_object_get(net, "egressProxy");
  if (parse_list(json_object_get(net, "allowOut"), &out->allow_out, &out->allow_out_count) ||
      parse_list(json_object_get(net, "denyOut"), &out->deny_out, &out->deny_out_count) ||
      dup_field(&out->mask_request_host, net, "maskRequestHost", NULL) ||
      parse_rules(json_object_get(net, "rules"), out))
    return -1;
  if (json_is_object(proxy) && (dup_field(&out->egress_proxy_address, proxy, "address", NULL) ||
                                dup_field(&out->egress_proxy_username, proxy, "username", NULL)))
    return -1;
  return 0;
}

void e2b_sandbox_info_clear(e2b_sandbox_info *sb) {
  free_strings(sb, sandbox_strings, SANDBOX_STRINGS);
  e2b_free_secret(sb->envd_access_token);
  free(sb->on_timeout);
  list_clear(sb->allow_out, sb->allow_out_count);
  list_clear(sb->deny_out, sb->deny_out_count);
  free(sb->mask_request_host);
  for (size_t i = 0; i < sb->rule_count; i++) map_clear(&sb->rule_headers[i]);
  list_clear(sb->rule_domains, sb->rule_count);
  free(sb->rule_headers);
  free(sb->egress_proxy_address);
  free(sb->egress_proxy_username);
  e2b_free_secret(sb->mcp_token);
  map_clear(&sb->metadata);
  memset(sb, 0, sizeof *sb);
}

int e2b_parse_sandbox(json_t *obj, e2b_sandbox_info *out) {
  memset(out, 0, sizeof *out);
  out->auto_resume = -1;
  if (!json_is_object(obj) || !e2b_json_str(obj, "sandboxID", NULL)) return -1;
  if (dup_strings(out, obj, sandbox_strings, SANDBOX_STRINGS) ||
      dup_field(&out->envd_access_token, obj, "envdAccessToken", NULL))
    goto fail;
  const char *state = e2b_json_str(obj, "state", NULL);
  out->state = !state                       ? E2B_STATE_UNKNOWN
               : strcmp(state, "running") == 0 ? E2B_STATE_RUNNING
               : strcmp(state, "paused") == 0  ? E2B_STATE_PAUSED
                                               : E2B_STATE_UNKNOWN;
  out->started_at_ms = time_field(obj, "startedAt", NULL);
  out->end_at_ms = time_field(obj, "endAt", NULL);
  int64_t cpu, mem, disk;
  if (e2b_json_int(obj, "cpuCount", NULL, 0, INT32_MAX, &cpu) ||
      e2b_json_int(obj, "memoryMB", NULL, 0, INT32_MAX, &mem) ||
      e2b_json_int(obj, "diskSizeMB", NULL, 0, INT32_MAX, &disk))
    goto fail;
  out->cpu_count = (int)cpu;
  out->memory_mb = (int)mem;
  out->disk_size_mb = (int)disk;
  json_t *lifecycle = json_object_get(obj, "lifecycle");
  if (json_is_object(lifecycle)) {
    if (dup_field(&out->on_timeout, lifecycle, "onTimeout", NULL)) goto fail;
    json_t *ar = json_object_get(lifecycle, "autoResume");
    if (json_is_boolean(ar)) out->auto_resume = json_is_true(ar);
  }
  if (parse_map(json_object_get(obj, "metadata"), &out->metadata) != 0 || parse_network(obj, out) != 0)
    goto fail;
  return 0;
fail:
  e2b_sandbox_info_clear(out);
  return -1;
}

/* ---- filesystem entries ---- */

#define ENTRY_AT(f) offsetof(e2b_entry, f)
static const str_field entry_strings[] = {
    {ENTRY_AT(name), "name", NULL},   {ENTRY_AT(path), "path", NULL},
    {ENTRY_AT(permissions), "permissions", NULL},
    {ENTRY_AT(owner), "owner", NULL}, {ENTRY_AT(group), "group", NULL},
    {ENTRY_AT(symlink_target), "symlinkTarget", "symlink_target"}};
#define ENTRY_STRINGS (sizeof entry_strings / sizeof *entry_strings)

void e2b_entry_clear(e2b_entry *e) {
  free_strings(e, entry_strings, ENTRY_STRINGS);
  memset(e, 0, sizeof *e);
}

static const char *entry_type(json_t *v) {
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (strcmp(s, "FILE_TYPE_FILE") == 0) return "file";
    if (strcmp(s, "FILE_TYPE_DIRECTORY") == 0) return "dir";
    if (strcmp(s, "FILE_TYPE_SYMLINK") == 0) return "symlink";
  } else if (json_is_integer(v)) {
    switch (json_integer_value(v)) {
    case 1: return "file";
    case 2: return "dir";
    case 3: return "symlink";
    default: break;
    }
  }
  return "unknown";
}

int e2b_parse_entry(json_t *obj, e2b_entry *out) {
  memset(out, 0, sizeof *out);
  if (!json_is_object(obj)) return -1;
  if (dup_strings(out, obj, entry_strings, ENTRY_STRINGS)) goto fail;
  out->type = entry_type(json_object_get(obj, "type"));
  int64_t mode;
  if (e2b_json_int(obj, "size", NULL, 0, INT64_MAX, &out->size) ||
      e2b_json_int(obj, "mode", NULL, 0, UINT32_MAX, &mode))
    goto fail;
  out->mode = (uint32_t)mode;
  out->modified_at_ms = time_field(obj, "modifiedTime", "modified_time");
  return 0;
fail:
  e2b_entry_clear(out);
  return -1;
}

/* ---- processes ---- */

void e2b_proc_info_clear(e2b_proc_info *p) {
  free(p->tag);
  free(p->cmd);
  for (size_t i = 0; i < p->arg_count; i++) free(p->args[i]);
  free(p->args);
  free(p->cwd);
  memset(p, 0, sizeof *p);
}

int e2b_parse_proc_info(json_t *obj, e2b_proc_info *out) {
  memset(out, 0, sizeof *out);
  if (!json_is_object(obj)) return -1;
  json_t *config = json_object_get(obj, "config");
  int64_t pid;
  if (e2b_json_int(obj, "pid", NULL, 0, UINT32_MAX, &pid)) return -1;
  out->pid = (uint32_t)pid;
  if (dup_field(&out->tag, obj, "tag", NULL) || dup_field(&out->cmd, config, "cmd", NULL) ||
      dup_field(&out->cwd, config, "cwd", NULL))
    goto fail;
  json_t *args = json_object_get(config, "args");
  if (json_is_array(args) && json_array_size(args) > 0) {
    out->args = calloc(json_array_size(args), sizeof *out->args);
    if (!out->args) goto fail;
    size_t i;
    json_t *a;
    json_array_foreach(args, i, a) {
      if (!json_is_string(a)) continue;
      if (!(out->args[out->arg_count] = strdup(json_string_value(a)))) goto fail;
      out->arg_count++;
    }
  }
  return 0;
fail:
  e2b_proc_info_clear(out);
  return -1;
}

int e2b_parse_items(json_t *list, size_t size, int (*item)(json_t *, void *), void **items,
                    size_t *count, const char *op, const char *bad, e2b_error *err) {
  size_t n = json_array_size(list);
  *items = NULL;
  if (n && !(*items = calloc(n, size))) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    int rc = item(json_array_get(list, i), (char *)*items + *count * size);
    if (rc < 0) {
      e2b_err_set(err, E2B_ERR_PROTOCOL, op, bad, i);
      return -1;
    }
    if (rc == 0) ++*count;
  }
  return 0;
}

/* One allocation holds the node, the decoded bytes and the strings, so a
 * consumer frees an event with one free(). */
static queued *new_node(size_t extra) {
  queued *q = calloc(1, sizeof *q + extra + 1);
  return q;
}

static const struct {
  const char *name;
  e2b_event_type type;
} STREAMS[] = {{"stdout", E2B_EVENT_STDOUT}, {"stderr", E2B_EVENT_STDERR}, {"pty", E2B_EVENT_PTY}};

/* The base64 text of a data event, cut out before jansson sees the message. */
typedef struct bulk {
  const char *text;
  size_t len;
  int stream; /* index into STREAMS, -1 = none */
} bulk;

static int data_event(json_t *data, const bulk *cut, queued **node, e2b_error *err) {
  for (size_t i = 0; i < 3; i++) {
    json_t *v = json_object_get(data, STREAMS[i].name);
    if (!v) continue;
    const char *text = json_string_value(v);
    if (!text) break;
    size_t tlen = json_string_length(v);
    if (cut->stream == (int)i) {
      text = cut->text;
      tlen = cut->len;
    }
    queued *q = new_node(tlen / 4 * 3 + 3);
    if (!q) {
      e2b_err_set(err, E2B_ERR_UNAVAILABLE, NULL, "out of memory");
      return -1;
    }
    uint8_t *bytes = (uint8_t *)(q + 1);
    size_t n = 0;
    if (e2b_b64_decode(text, tlen, bytes, &n) != 0) {
      free(q);
      break;
    }
    q->ev.type = STREAMS[i].type;
    q->ev.data = bytes;
    q->ev.len = n;
    q->len = n;
    *node = q;
    return 0;
  }
  e2b_err_set(err, E2B_ERR_PROTOCOL, NULL, "data event without valid stdout, stderr or pty bytes");
  return -1;
}

static int end_event(json_t *end, queued **node, e2b_error *err) {
  const char *status = e2b_json_str(end, "status", NULL);
  const char *error = e2b_json_str(end, "error", NULL);
  size_t sl = status ? strlen(status) + 1 : 0, el = error ? strlen(error) + 1 : 0;
  queued *q = new_node(sl + el);
  if (!q) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, NULL, "out of memory");
    return -1;
  }
  char *p = (char *)(q + 1);
  q->ev.type = E2B_EVENT_END;
  int64_t code;
  if (e2b_json_int(end, "exitCode", "exit_code", INT32_MIN, INT32_MAX, &code)) {
    free(q);
    e2b_err_set(err, E2B_ERR_PROTOCOL, NULL, "end event with an exit code out of range");
    return -1;
  }
  q->ev.exit_code = (int)code;
  q->ev.exited = json_is_true(json_object_get(end, "exited"));
  if (status) {
    memcpy(p, status, sl);
    q->ev.status = p;
    p += sl;
  }
  if (error) {
    memcpy(p, error, el);
    q->ev.error = p;
  }
  *node = q;
  return 0;
}

/* Jansson lexes a string a byte at a time: with the output's base64 in it,
 * that was 80% of the client's CPU when streaming a command's stdout
 * (perf). A data event is one large base64 string in a small object, so the
 * string is found and cut out, jansson parses the rest (which must then
 * show that very field, empty), and the text goes straight to the base64
 * decoder, which validates every character. Base64 has nothing JSON
 * escapes; text with a backslash takes the plain path. */
#define BULK_MIN 512

static int find_bulk(const char *json, size_t len, bulk *cut, size_t *begin, size_t *end) {
  size_t head = len < 256 ? len : 256;
  for (int i = 0; i < 3; i++) {
    char key[16];
    int kl = snprintf(key, sizeof key, "\"%s\"", STREAMS[i].name);
    const char *k = memmem(json, head, key, (size_t)kl);
    if (!k || (k > json && k[-1] == '\\')) continue;
    size_t p = (size_t)(k - json) + (size_t)kl;
    while (p < len && (json[p] == ' ' || json[p] == '\t' || json[p] == '\n' || json[p] == '\r')) p++;
    if (p >= len || json[p++] != ':') return 0;
    while (p < len && (json[p] == ' ' || json[p] == '\t' || json[p] == '\n' || json[p] == '\r')) p++;
    if (p >= len || json[p++] != '"') return 0;
    const char *close = memchr(json + p, '"', len - p);
    if (!close || memchr(json + p, '\\', (size_t)(close - json) - p)) return 0;
    cut->text = json + p;
    cut->len = (size_t)(close - json) - p;
    cut->stream = i;
    *begin = p;
    *end = (size_t)(close - json);
    return 1;
  }
  return 0;
}

/* Parses json with the bulk string cut out (cut->stream = -1 when it is
 * not a message of that shape, or the rest does not confirm the cut). */
static json_t *load_event(const char *json, size_t len, bulk *cut) {
  size_t begin = 0, end = 0;
  *cut = (bulk){NULL, 0, -1};
  if (len >= BULK_MIN && find_bulk(json, len, cut, &begin, &end)) {
    size_t rest = begin + (len - end);
    char *small = malloc(rest);
    if (small) {
      memcpy(small, json, begin);
      memcpy(small + begin, json + end, len - end);
      json_t *root = json_loadb(small, rest, 0, NULL);
      free(small);
      json_t *v = json_object_get(json_object_get(json_object_get(root, "event"), "data"),
                                  STREAMS[cut->stream].name);
      if (json_is_string(v) && json_string_length(v) == 0) return root;
      json_decref(root);
    }
    *cut = (bulk){NULL, 0, -1};
  }
  return json_loadb(json, len, 0, NULL);
}

int e2b_parse_proc_event(const char *json, size_t len, queued **node, e2b_error *err) {
  *node = NULL;
  bulk cut;
  json_t *root = load_event(json, len, &cut);
  json_t *event = json_object_get(root, "event");
  int rc = 0;
  json_t *v;
  if (!json_is_object(event)) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, NULL, "stream message without an event");
    rc = -1;
  } else if ((v = json_object_get(event, "start"))) {
    queued *q = new_node(0);
    if (!q) {
      e2b_err_set(err, E2B_ERR_UNAVAILABLE, NULL, "out of memory");
      rc = -1;
    } else {
      q->ev.type = E2B_EVENT_START;
      int64_t pid;
      if (e2b_json_int(v, "pid", NULL, 0, UINT32_MAX, &pid)) {
        free(q);
        e2b_err_set(err, E2B_ERR_PROTOCOL, NULL, "start event with a pid out of range");
        rc = -1;
      } else {
        q->ev.pid = (uint32_t)pid;
        *node = q;
      }
    }
  } else if ((v = json_object_get(event, "data"))) {
    rc = data_event(v, &cut, node, err);
  } else if ((v = json_object_get(event, "end"))) {
    rc = end_event(v, node, err);
  } else if (!json_object_get(event, "keepalive")) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, NULL, "unknown process event");
    rc = -1;
  }
  json_decref(root);
  return rc;
}

/* Whether a filesystem event can mean more bytes to read (an unknown type
 * is taken to). */
static int grows(const char *type) {
  return !type || (strcmp(type, "EVENT_TYPE_REMOVE") != 0 && strcmp(type, "EVENT_TYPE_RENAME") != 0 &&
                   strcmp(type, "EVENT_TYPE_CHMOD") != 0);
}

/* The public name of an envd event type (e2b_fs_watch), NULL when unknown. */
static const char *fs_event_name(const char *type) {
  static const char *const names[] = {"create", "write", "remove", "rename", "chmod"};
  static const char *const wire[] = {"EVENT_TYPE_CREATE", "EVENT_TYPE_WRITE", "EVENT_TYPE_REMOVE",
                                     "EVENT_TYPE_RENAME", "EVENT_TYPE_CHMOD"};
  for (size_t i = 0; type && i < sizeof names / sizeof *names; i++)
    if (strcmp(type, wire[i]) == 0) return names[i];
  return NULL;
}

/* The node of a watch's start (fs NULL) or of a filesystem event: for the
 * outwatch (all 0) E2B_EVENT_FS_INTERNAL with the entry's size, for
 * e2b_fs_watch E2B_EVENT_FS with its type in status. Counted against the
 * queue by name plus a fixed overhead, so a reader behind pauses the stream
 * however short the names. */
static queued *watch_node(json_t *fs, int all, const char *kind, e2b_error *err) {
  const char *name = fs ? e2b_json_str(fs, "name", NULL) : NULL;
  size_t nl = name ? strlen(name) : 0;
  queued *q = new_node(nl);
  if (!q) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, NULL, "out of memory");
    return NULL;
  }
  q->ev.type = !fs ? E2B_EVENT_START : all ? E2B_EVENT_FS : E2B_EVENT_FS_INTERNAL;
  q->ev.data = (const uint8_t *)(q + 1);
  if (nl) memcpy(q + 1, name, nl);
  q->ev.len = nl;
  q->ev.status = kind;
  if (all) q->len = nl + sizeof *q;
  /* An entry says the size, absent meaning 0 (proto3 JSON omits zero
   * values); no entry, or a size out of range, says nothing (-1). */
  int64_t size;
  json_t *entry = json_object_get(fs, "entry");
  q->size = json_is_object(entry) && e2b_json_int(entry, "size", NULL, 0, INT64_MAX, &size) == 0 ? size : -1;
  return q;
}

/* A WatchDir message: the watch's start (type START), a filesystem event
 * (see watch_node; the outwatch gets only those that can mean more bytes,
 * e2b_fs_watch those of a known type) or nothing (*node NULL). */
int e2b_parse_watch_event(const char *json, size_t len, int all, queued **node, e2b_error *err) {
  *node = NULL;
  json_t *root = json_loadb(json, len, 0, NULL);
  json_t *fs = json_object_get(root, "filesystem");
  const char *type = json_is_object(fs) ? e2b_json_str(fs, "type", NULL) : NULL;
  int rc = 0;
  if (!json_is_object(root)) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, NULL, "watch message is not a JSON object");
    rc = -1;
  } else if (json_is_object(fs) && (all ? !fs_event_name(type) : !grows(type))) {
    /* outwatch: nothing to read; e2b_fs_watch: a type it does not know */
  } else if (json_object_get(root, "start") || json_is_object(fs)) {
    *node = watch_node(json_is_object(fs) ? fs : NULL, all, fs_event_name(type), err);
    if (!*node) rc = -1;
  } else if (!json_object_get(root, "keepalive")) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, NULL, "unknown watch event");
    rc = -1;
  }
  json_decref(root);
  return rc;
}
