/* control.c — the control plane (E2B's REST API for sandboxes). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "control_parse.h"
#include "envdver.h"
#include "sandbox_limits.h"
#include "log.h"
#include "netpolicy.h"
#include "netrules.h"
#include "pjson.h"
#include "sandbox.h"
#include "server.h"
#include "store.h"
#include "tplbuild.h"
#include "util.h"
#include "volcontent.h"

#define MAX_TIMEOUT_S 86400
#define DEFAULT_TIMEOUT_S 15     /* NewSandbox, ResumedSandbox */
#define DEFAULT_TIMEOUT_V2_S 300 /* NewSandboxV2, ConnectSandboxV2 */
#define MEMORY_MB SANDBOX_MEMORY_MB
#define DISK_MB sandbox_disk_mb()

/* ---- request parsing helpers ---- */

typedef struct opts_err {
  char msg[400];
} opts_err;

static int get_bool(json_t *o, const char *key, int dflt, int *out, opts_err *e) {
  json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) {
    *out = dflt;
    return 0;
  }
  if (!json_is_boolean(v)) {
    snprintf(e->msg, sizeof e->msg, "field '%s' must be a boolean", key);
    return -1;
  }
  *out = json_is_true(v);
  return 0;
}

static int get_timeout(json_t *o, int dflt, int *out, opts_err *e) {
  json_t *v = json_object_get(o, "timeout");
  if (!v || json_is_null(v)) {
    *out = dflt;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < 0) {
    snprintf(e->msg, sizeof e->msg, "field 'timeout' must be a non-negative integer (seconds)");
    return -1;
  }
  if (json_integer_value(v) > MAX_TIMEOUT_S) {
    snprintf(e->msg, sizeof e->msg, "timeout cannot be greater than %d seconds", MAX_TIMEOUT_S);
    return -1;
  }
  *out = (int)json_integer_value(v);
  return 0;
}

static int get_string_map(json_t *o, const char *key, json_t **out, opts_err *e) {
  json_t *v = json_object_get(o, key);
  *out = NULL;
  if (!v || json_is_null(v)) return 0;
  const char *k;
  json_t *val;
  if (!json_is_object(v)) goto bad;
  json_object_foreach(v, k, val) {
    if (!json_is_string(val)) goto bad;
  }
  *out = v;
  return 0;
bad:
  snprintf(e->msg, sizeof e->msg, "field '%s' must be an object of strings", key);
  return -1;
}

static json_t *body_object(http_req *r, enum MHD_Result *res, int allow_empty) {
  if (allow_empty && r->body.len == 0) return json_object();
  json_t *j = http_body_json(r, res);
  if (j && !json_is_object(j)) {
    json_decref(j);
    *res = http_error(r->conn, 400, "request body must be a JSON object");
    return NULL;
  }
  return j;
}

/* ---- responses ---- */

static void add_common(json_t *o, sandbox *sb) {
  json_object_set_new(o, "sandboxID", json_string(sb->id));
  json_object_set_new(o, "templateID", json_string(sb->template_id));
  if (sb->alias) json_object_set_new(o, "alias", json_string(sb->alias));
  json_object_set_new(o, "clientID", json_string(sb->client_id));
  json_object_set_new(o, "envdVersion", json_string(envd_version()));
}

static json_t *sandbox_json(sandbox *sb) {
  json_t *o = json_object();
  add_common(o, sb);
  json_object_set_new(o, "envdAccessToken", sb->envd_token ? json_string(sb->envd_token) : json_null());
  json_object_set_new(o, "trafficAccessToken", sb->traffic_token ? json_string(sb->traffic_token) : json_null());
  json_object_set_new(o, "domain", json_string(g_server.domain));
  return o;
}

static void add_listed_fields(json_t *o, sandbox *sb, sandbox_view v) {
  char started[E2B_TIME_SIZE], end[E2B_TIME_SIZE];
  e2b_time_format(sb->started_at_ms, started);
  e2b_time_format(v.end_at_ms, end);
  json_object_set_new(o, "startedAt", json_string(started));
  json_object_set_new(o, "endAt", json_string(end));
  json_object_set_new(o, "cpuCount", json_integer(SANDBOX_CPUS));
  json_object_set_new(o, "memoryMB", json_integer(MEMORY_MB));
  json_object_set_new(o, "diskSizeMB", json_integer(DISK_MB));
  json_object_set(o, "metadata", sb->metadata);
  json_object_set_new(o, "state", json_string(v.state == SB_PAUSED ? "paused" : "running"));
  json_object_set(o, "volumeMounts", sb->volume_mounts);
}

static json_t *listed_json(sandbox *sb, sandbox_view v) {
  json_t *o = json_object();
  add_common(o, sb);
  add_listed_fields(o, sb, v);
  return o;
}

static json_t *detail_json(sandbox *sb, sandbox_view v) {
  json_t *o = listed_json(sb, v);
  if (sb->envd_token) json_object_set_new(o, "envdAccessToken", json_string(sb->envd_token));
  json_object_set_new(o, "allowInternetAccess", json_boolean(sb->allow_internet));
  json_object_set_new(o, "domain", json_string(g_server.domain));
  json_t *net = sandbox_network_json(sb);
  if (json_object_size(net))
    json_object_set_new(o, "network", net);
  else
    json_decref(net);
  json_object_set_new(o, "lifecycle", json_pack("{s:b, s:s}", "autoResume", sb->auto_resume,
                                                "onTimeout", sb->auto_pause ? "pause" : "kill"));
  return o;
}

static enum MHD_Result not_found(http_req *r, const char *id) {
  return http_error(r->conn, 404, "sandbox \"%s\" not found", id);
}

/* ---- handlers ---- */

static int is_string_array(json_t *v) {
  if (!json_is_array(v)) return 0;
  for (size_t i = 0; i < json_array_size(v); i++)
    if (!json_is_string(json_array_get(v, i))) return 0;
  return 1;
}

/* Checks the egress fields; everything valid is enforced by the egress
 * proxy (egress.c) under bubblewrap. Without isolation there is no proxy:
 * only unrestricted egress is accepted, never silently open. *allow gets
 * allow_internet_access with denyOut ["0.0.0.0/0"] folded in (E2B reports
 * such a sandbox as allowInternetAccess false). */
static int network_mode(json_t *net, int allow_internet, int *allow, opts_err *e) {
  json_t *ao = json_object_get(net, "allowOut"), *dn = json_object_get(net, "denyOut");
  json_t *proxy = json_object_get(net, "egressProxy"), *rules = json_object_get(net, "rules");
  if ((ao && !json_is_null(ao) && !is_string_array(ao)) || (dn && !json_is_null(dn) && !is_string_array(dn))) {
    snprintf(e->msg, sizeof e->msg, "network.allowOut and network.denyOut must be arrays of strings");
    return -1;
  }
  if (proxy && !json_is_null(proxy)) {
    snprintf(e->msg, sizeof e->msg,
             "network.egressProxy (a SOCKS5 upstream) is not supported by e2b-local: there is no network "
             "beyond this host to tunnel to");
    return -1;
  }
  json_t *kept = netrules_check(rules, e->msg, sizeof e->msg);
  if (!kept) return -1;
  if (json_object_size(kept) && !runtime_isolated()) {
    json_decref(kept);
    snprintf(e->msg, sizeof e->msg,
             "network.rules need the egress proxy, which needs bubblewrap isolation (e2b-local runs without it)");
    return -1;
  }
  /* kept as checked (keys in lower case); no rules, no field */
  if (json_object_size(kept))
    json_object_set_new(net, "rules", kept);
  else {
    json_decref(kept);
    if (rules) json_object_del(net, "rules");
  }
  if (netpolicy_validate(ao, dn, e->msg, sizeof e->msg) != 0) return -1;
  netpolicy *p = netpolicy_compile(allow_internet, ao, dn);
  int open = netpolicy_is_open(p), deny_all = netpolicy_denies_all(p);
  netpolicy_free(p);
  if (!open && !runtime_isolated()) {
    snprintf(e->msg, sizeof e->msg,
             "e2b-local runs without bubblewrap isolation, so it cannot restrict a sandbox's egress "
             "(no network namespace, no filtering proxy): only unrestricted internet access is available");
    return -1;
  }
  *allow = !deny_all;
  return 0;
}

/* Validates volumeMounts and resolves each volume's host directory:
 * [{name,path,src}] (new reference) or NULL with e->msg (*status 400/404). */
static json_t *resolve_volume_mounts(json_t *vm, opts_err *e, int *status) {
  json_t *out = json_array();
  *status = 400;
  if (vm && !json_is_null(vm) && !json_is_array(vm)) {
    snprintf(e->msg, sizeof e->msg, "field 'volumeMounts' must be an array");
    goto bad;
  }
  if (json_array_size(vm) && !runtime_isolated()) {
    snprintf(e->msg, sizeof e->msg, "volume mounts need bubblewrap isolation (e2b-local runs without it)");
    goto bad;
  }
  static const char *forbidden[] = {"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                                    "/proc", "/dev", "/sys", "/run/e2b", "/opt", NULL};
  for (size_t i = 0; i < json_array_size(vm); i++) {
    json_t *m = json_array_get(vm, i);
    const char *name = json_string_value(json_object_get(m, "name"));
    const char *path = json_string_value(json_object_get(m, "path"));
    if (!name || !path || path[0] != '/') {
      snprintf(e->msg, sizeof e->msg, "each volume mount needs a 'name' and an absolute 'path'");
      goto bad;
    }
    char *clean = path_clean(path);
    int badpath = strcmp(clean, "/") == 0 || strcmp(clean, "/home") == 0;
    for (int k = 0; forbidden[k] && !badpath; k++) {
      size_t n = strlen(forbidden[k]);
      badpath = strncmp(clean, forbidden[k], n) == 0 && (clean[n] == '\0' || clean[n] == '/');
    }
    for (size_t k = 0; k < json_array_size(out) && !badpath; k++)
      badpath = strcmp(json_string_value(json_object_get(json_array_get(out, k), "path")), clean) == 0;
    if (badpath) {
      snprintf(e->msg, sizeof e->msg, "volume mount path '%.80s' is not allowed (system directory or duplicate)", path);
      free(clean);
      goto bad;
    }
    char *src = store_volume_dir_by_name(name);
    if (!src) {
      snprintf(e->msg, sizeof e->msg, "volume '%.80s' not found", name);
      *status = 404;
      free(clean);
      goto bad;
    }
    json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "name", name, "path", clean, "src", src));
    free(clean);
    free(src);
  }
  return out;
bad:
  json_decref(out);
  return NULL;
}

/* maskRequestHost as E2B takes it: a string that Go's net.SplitHostPort
 * splits (or a bare host: no port), the host in ASCII. Any port text is
 * kept ("${PORT}" is replaced when a request is proxied). */
static int check_mask(json_t *m, opts_err *e) {
  if (!m || json_is_null(m)) return 0;
  const char *s = json_string_value(m);
  int ok = s != NULL;
  for (const unsigned char *c = (const unsigned char *)s; ok && *c; c++) ok = *c >= 0x21 && *c < 0x7f;
  if (ok && s[0] == '[') {
    const char *close = strchr(s, ']');
    ok = close && close > s + 1 && (!close[1] || close[1] == ':') && !strchr(close + 1 + (close[1] != 0), ':');
  } else if (ok) {
    const char *colon = strchr(s, ':');
    ok = colon != s && (!colon || !strchr(colon + 1, ':'));
  }
  if (ok && *s) return 0;
  snprintf(e->msg, sizeof e->msg, "network.maskRequestHost must be an ASCII host or host:port");
  return -1;
}

/* NewSandbox (v1) or NewSandboxV2 -> params (borrowing from b). Returns 0,
 * or -1 with e->msg. Unknown fields are ignored, as E2B's schema allows. */
static int parse_create(json_t *b, int v2, sandbox_params *p, opts_err *e) {
  json_t *tpl = json_object_get(b, "templateID");
  if (!json_is_string(tpl)) {
    snprintf(e->msg, sizeof e->msg, "field 'templateID' is required and must be a string");
    return -1;
  }
  /* v2 has no `secure`: always secure; v1 is secure only when asked. */
  p->secure = 1;
  if (get_timeout(b, v2 ? DEFAULT_TIMEOUT_V2_S : DEFAULT_TIMEOUT_S, &p->timeout_s, e) ||
      (!v2 && get_bool(b, "secure", 0, &p->secure, e)) ||
      get_bool(b, "allow_internet_access", 1, &p->allow_internet, e) ||
      get_bool(b, "autoPause", 0, &p->auto_pause, e) ||
      get_bool(b, "autoPauseMemory", 1, &p->auto_pause_memory, e) ||
      get_string_map(b, "metadata", &p->metadata, e) || get_string_map(b, "envVars", &p->env_vars, e))
    return -1;
  json_t *ar = json_object_get(b, "autoResume");
  if (ar && !json_is_null(ar) && (!json_is_object(ar) || get_bool(ar, "enabled", 0, &p->auto_resume, e))) {
    if (!e->msg[0]) snprintf(e->msg, sizeof e->msg, "field 'autoResume' must be an object");
    return -1;
  }
  json_t *net = json_object_get(b, "network");
  if (net && !json_is_null(net) && !json_is_object(net)) {
    snprintf(e->msg, sizeof e->msg, "field 'network' must be an object");
    return -1;
  }
  p->network = json_is_object(net) ? net : NULL;
  p->public_traffic = 1;
  if (p->network && get_bool(p->network, "allowPublicTraffic", 1, &p->public_traffic, e)) return -1;
  if (p->network && check_mask(json_object_get(p->network, "maskRequestHost"), e)) return -1;
  /* E2B: without public traffic, envd must be secured too */
  if (!p->public_traffic && !p->secure) {
    snprintf(e->msg, sizeof e->msg,
             "network.allowPublicTraffic false needs a secure sandbox ('secure': true): restricted traffic "
             "with an open envd is refused");
    return -1;
  }
  if (network_mode(p->network, p->allow_internet, &p->allow_internet, e)) return -1;
  /* As on E2B the gateway is the client's to start inside the sandbox after
   * create (the SDK runs mcp-gateway); the server only checks the shape. */
  json_t *mcp = json_object_get(b, "mcp");
  if (mcp && !json_is_null(mcp) && !json_is_object(mcp)) {
    snprintf(e->msg, sizeof e->msg, "field 'mcp' must be an object");
    return -1;
  }
  json_t *iam = json_object_get(b, "iam");
  if (iam && !json_is_null(iam) && (!json_is_object(iam) || json_object_size(json_object_get(iam, "tokens")) > 0)) {
    snprintf(e->msg, sizeof e->msg, "workload identity tokens (iam) are not supported by e2b-local");
    return -1;
  }
  return 0;
}

static enum MHD_Result create(http_req *r, int v2) {
  enum MHD_Result res;
  json_t *b = body_object(r, &res, 0);
  if (!b) return res;
  opts_err e = {{0}};
  sandbox_params p = {0};
  tpl_ref tpl = {0};
  json_t *vm = NULL;
  int vstatus = 400;
  const char *tname = json_string_value(json_object_get(b, "templateID"));
  if (parse_create(b, v2, &p, &e)) {
    res = http_error(r->conn, 400, "%s", e.msg);
  } else if (tplbuild_resolve_any(tname, &tpl) != 0) {
    res = http_error(r->conn, 404, "template '%s' not found", tname);
  } else if (!(vm = resolve_volume_mounts(json_object_get(b, "volumeMounts"), &e, &vstatus))) {
    res = http_error(r->conn, (unsigned)vstatus, "%s", e.msg);
  } else {
    p.tpl = &tpl;
    p.volume_mounts = vm;
    p.default_user = tpl.start_user; /* a built template's USER and WORKDIR */
    p.default_workdir = tpl.start_cwd;
    /* From a snapshot, E2B restores envd's memory: its env vars stay unless
     * the create gives some, which replace them (envd's init with envVars). */
    json_t *merged = NULL;
    if (tpl.env_defaults) { /* a built template's ENV, under the create's envVars */
      merged = json_deep_copy(tpl.env_vars);
      if (p.env_vars) json_object_update(merged, p.env_vars);
      p.env_vars = merged;
    } else if (!json_object_size(p.env_vars) && json_object_size(tpl.env_vars)) {
      p.env_vars = tpl.env_vars;
    }
    const char *err = NULL;
    sandbox *sb = sandbox_create(&p, &err);
    if (sb && tplbuild_boot_start(sb, &tpl) != 0)
      log_msg("sandbox %s: the start or ready command of template %s did not succeed", sb->id, tpl.template_id);
    res = sb ? http_json(r->conn, 201, sandbox_json(sb))
             : http_error(r->conn, 500, "%s", err ? err : "cannot create the sandbox");
    sandbox_unref(sb);
    json_decref(merged);
  }
  json_decref(vm);
  tpl_ref_free(&tpl);
  json_decref(b);
  return res;
}

static enum MHD_Result h_create_v1(http_req *r) { return create(r, 0); }
static enum MHD_Result h_create_v2(http_req *r) { return create(r, 1); }

/* Decodes %XX escapes in place; returns 1 when something changed. */
static int unescape_once(char *s) {
  char *o = s;
  int changed = 0;
  for (char *i = s; *i; i++) {
    if (*i == '%' && isxdigit((unsigned char)i[1]) && isxdigit((unsigned char)i[2])) {
      char hex[3] = {i[1], i[2], 0};
      *o++ = (char)strtol(hex, NULL, 16);
      i += 2;
      changed = 1;
    } else if (*i == '+') {
      *o++ = ' ';
      changed = 1;
    } else {
      *o++ = *i;
    }
  }
  *o = '\0';
  return changed;
}

static void unescape_stable(char *s) {
  for (int i = 0; i < 8 && unescape_once(s); i++) {
  }
}

/* "k=v&k2=v2", each part escaped an unknown number of times (the SDKs escape twice). */
static json_t *parse_metadata_filter(const char *q) {
  json_t *m = json_object();
  char *copy = xstrdup(q);
  /* Peel whole-string layers only until pairs appear, then split, so an
   * escaped '&' or '=' inside a key or value stays data. */
  for (int round = 0; round < 3 && !strchr(copy, '=') && unescape_once(copy); round++) {
  }
  char *save = NULL;
  for (char *pair = strtok_r(copy, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
    char *eq = strchr(pair, '=');
    if (!eq) continue;
    *eq = '\0';
    unescape_stable(pair);
    unescape_stable(eq + 1);
    json_t *v = json_string(eq + 1);
    if (!v || json_object_set_new(m, pair, v) != 0) {
      /* not UTF-8: no stored metadata (always UTF-8) can match */
      json_decref(m);
      free(copy);
      return NULL;
    }
  }
  free(copy);
  return m;
}

static int metadata_matches(sandbox *sb, json_t *filter) {
  const char *k;
  json_t *v;
  json_object_foreach(filter, k, v) {
    const char *have = json_string_value(json_object_get(sb->metadata, k));
    if (!have || strcmp(have, json_string_value(v)) != 0) return 0;
  }
  return 1;
}

typedef struct listed {
  sandbox *sb;
  sandbox_view v;
} listed;

static int cmp_desc(const void *a, const void *b) {
  const listed *x = a, *y = b;
  if (x->sb->started_at_ms != y->sb->started_at_ms)
    return x->sb->started_at_ms > y->sb->started_at_ms ? -1 : 1;
  return strcmp(y->sb->id, x->sb->id);
}

static int cmp_asc(const void *a, const void *b) { return cmp_desc(b, a); }

/* Is item strictly after the cursor "<startedAtMs>_<id>" in the list order? */
static int after_cursor(const listed *it, long long ms, const char *id, int asc) {
  if (it->sb->started_at_ms != ms) return asc ? it->sb->started_at_ms > ms : it->sb->started_at_ms < ms;
  int c = strcmp(it->sb->id, id);
  return asc ? c > 0 : c < 0;
}

/* The query of a list request, validated. */
typedef struct list_query {
  int want_running, want_paused, asc;
  long limit;
  int has_cursor;
  long long cur_ms;
  char cur_id[32];
  int64_t started_after;
  const char *tpl;
  json_t *filter; /* metadata pairs; NULL when no sandbox can match */
} list_query;

static int parse_states(const char *state, list_query *q, char *err, size_t errcap) {
  q->want_running = q->want_paused = 0;
  char *copy = xstrdup(state), *save = NULL;
  unescape_stable(copy);
  int rc = 0;
  for (char *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
    if (strcmp(t, "running") == 0) q->want_running = 1;
    else if (strcmp(t, "paused") == 0) q->want_paused = 1;
    else {
      snprintf(err, errcap, "invalid state '%.40s' (expected running or paused)", t);
      rc = -1;
    }
  }
  free(copy);
  return rc;
}

/* v1 (GET /sandboxes) knows only `metadata` and lists running sandboxes. */
static int parse_list_query(struct MHD_Connection *c, int v2, list_query *q, char *err, size_t errcap) {
  memset(q, 0, sizeof *q);
  q->want_running = 1;
  q->want_paused = v2;
  q->limit = 100;
  const char *state = v2 ? http_query(c, "state") : NULL;
  if (state && *state && parse_states(state, q, err, errcap)) return -1;
  const char *ls = v2 ? http_query(c, "limit") : NULL;
  if (ls) {
    char *end;
    q->limit = strtol(ls, &end, 10);
    if (*ls == '\0' || *end || q->limit < 1 || q->limit > 100) {
      snprintf(err, errcap, "limit must be an integer between 1 and 100");
      return -1;
    }
  }
  const char *order = v2 ? http_query(c, "order") : NULL;
  q->asc = order && strcmp(order, "asc") == 0;
  if (order && !q->asc && strcmp(order, "desc") != 0) {
    snprintf(err, errcap, "order must be 'asc' or 'desc'");
    return -1;
  }
  const char *tok = v2 ? http_query(c, "nextToken") : NULL;
  if (tok && *tok) {
    if (sscanf(tok, "%lld_%31s", &q->cur_ms, q->cur_id) != 2) {
      snprintf(err, errcap, "invalid nextToken");
      return -1;
    }
    q->has_cursor = 1;
  }
  const char *sa = v2 ? http_query(c, "startedAfter") : NULL;
  if (sa && *sa && e2b_time_parse(sa, &q->started_after) != 0) {
    snprintf(err, errcap, "invalid startedAfter (expected RFC 3339)");
    return -1;
  }
  q->tpl = v2 ? http_query(c, "template") : NULL;
  const char *mq = http_query(c, "metadata");
  q->filter = mq && *mq ? parse_metadata_filter(mq) : json_object();
  return 0;
}

static int list_wants(const list_query *q, sandbox *sb, sandbox_view v) {
  if (v.state == SB_RUNNING ? !q->want_running : v.state == SB_PAUSED ? !q->want_paused : 1) return 0;
  if (!q->filter || !metadata_matches(sb, q->filter)) return 0;
  /* inclusive, as E2B: a sandbox started exactly at T is listed */
  if (q->started_after && sb->started_at_ms < q->started_after) return 0;
  if (q->tpl && *q->tpl && strcmp(q->tpl, sb->template_id) != 0 && strcmp(q->tpl, sb->alias) != 0)
    return 0;
  return 1;
}

static enum MHD_Result list_sandboxes(http_req *r, int v2) {
  list_query q;
  char err[128];
  if (parse_list_query(r->conn, v2, &q, err, sizeof err)) return http_error(r->conn, 400, "%s", err);
  size_t n;
  sandbox **all = sandbox_list(&n);
  listed *items = xcalloc(n + 1, sizeof *items);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    sandbox_view v = sandbox_view_of(all[i]);
    if (!list_wants(&q, all[i], v)) continue;
    items[m].sb = all[i];
    items[m++].v = v;
  }
  /* Ordered by start time, then id: the cursor of the last item shown is a
   * stable nextToken even when sandboxes come and go between pages. */
  qsort(items, m, sizeof *items, q.asc ? cmp_asc : cmp_desc);
  json_t *arr = json_array();
  size_t shown = 0;
  int more = 0;
  listed *last = NULL;
  for (size_t i = 0; i < m; i++) {
    if (q.has_cursor && !after_cursor(&items[i], q.cur_ms, q.cur_id, q.asc)) continue;
    if (v2 && shown == (size_t)q.limit) {
      more = 1;
      break;
    }
    json_array_append_new(arr, listed_json(items[i].sb, items[i].v));
    last = &items[i];
    shown++;
  }
  char next[64];
  if (more && last) snprintf(next, sizeof next, "%lld_%s", (long long)last->sb->started_at_ms, last->sb->id);
  free(items);
  sandbox_list_free(all, n);
  json_decref(q.filter);
  return http_json_hdr(r->conn, 200, arr, more ? "X-Next-Token" : NULL, more ? next : NULL);
}

static enum MHD_Result h_list_v1(http_req *r) { return list_sandboxes(r, 0); }
static enum MHD_Result h_list_v2(http_req *r) { return list_sandboxes(r, 1); }

typedef struct id_ctx {
  char id[256];
  int v2;
} id_ctx;

static const char *ctx_id(http_req *r) { return ((id_ctx *)r->ctx)->id; }

static enum MHD_Result h_get(http_req *r) {
  sandbox *sb = sandbox_get(ctx_id(r));
  sandbox_view v = sb ? sandbox_view_of(sb) : (sandbox_view){0};
  if (sb && v.state == SB_KILLED) { /* its kill is under way */
    sandbox_unref(sb);
    sb = NULL;
  }
  if (!sb) return not_found(r, ctx_id(r));
  enum MHD_Result res = http_json(r->conn, 200, detail_json(sb, v));
  sandbox_unref(sb);
  return res;
}

/* What a call on one sandbox read from its JSON body (each reader fills
 * its part); a reader returns -1 with e's message for a 400. */
typedef struct {
  int timeout_s, memory, count, duration;
} call_args;
typedef int (*args_reader)(json_t *b, call_args *a, opts_err *e);

/* The sandbox a call's path names, once its body (empty is {} when
 * empty_ok; none read without a reader) is read into a; NULL with *res the
 * response when the body is refused (400) or no sandbox has the id (404). */
static sandbox *call_target(http_req *r, int empty_ok, args_reader read, call_args *a, enum MHD_Result *res) {
  if (read) {
    json_t *b = body_object(r, res, empty_ok);
    if (!b) return NULL;
    opts_err e = {{0}};
    int bad = read(b, a, &e);
    json_decref(b);
    if (bad) {
      *res = http_error(r->conn, 400, "%s", e.msg);
      return NULL;
    }
  }
  sandbox *sb = sandbox_get(ctx_id(r));
  if (!sb) *res = not_found(r, ctx_id(r));
  return sb;
}

static int timeout_args(json_t *b, call_args *a, opts_err *e) {
  if (!json_object_get(b, "timeout")) {
    snprintf(e->msg, sizeof e->msg, "field 'timeout' is required");
    return -1;
  }
  return get_timeout(b, 0, &a->timeout_s, e);
}

static int pause_args(json_t *b, call_args *a, opts_err *e) { return get_bool(b, "memory", 1, &a->memory, e); }

static int refresh_args(json_t *b, call_args *a, opts_err *e) {
  json_t *d = json_object_get(b, "duration");
  if (d && !json_is_null(d) && (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > 3600)) {
    snprintf(e->msg, sizeof e->msg, "duration must be an integer between 0 and 3600 (seconds)");
    return -1;
  }
  a->duration = json_is_integer(d) ? (int)json_integer_value(d) : -1;
  return 0;
}

static int act_kill(sandbox *sb, const call_args *a) {
  (void)a;
  return sandbox_kill(sb);
}
static int act_timeout(sandbox *sb, const call_args *a) { return sandbox_set_timeout(sb, a->timeout_s); }
static int act_pause(sandbox *sb, const call_args *a) { return sandbox_pause(sb, a->memory); }
static int act_refresh(sandbox *sb, const call_args *a) {
  return sandbox_refresh(sb, a->duration >= 0 ? a->duration : sb->timeout_s);
}

/* Calls that change one sandbox and answer 204: how each reads its body,
 * what it does, and what its failures mean: -EALREADY is a 409 (`conflict`
 * says why), -ENOENT a 404, another a 500 (`failure`), or with no failure
 * every error is a 404 (the sandbox went away). */
enum { ACT_KILL, ACT_TIMEOUT, ACT_PAUSE, ACT_REFRESH };
static const struct {
  int empty_ok;
  args_reader read;
  int (*act)(sandbox *sb, const call_args *a);
  const char *conflict, *failure;
} ACTIONS[] = {
    [ACT_KILL] = {0, NULL, act_kill, NULL, NULL},
    [ACT_TIMEOUT] = {0, timeout_args, act_timeout, NULL, NULL},
    [ACT_PAUSE] = {1, pause_args, act_pause, "is already paused", "cannot pause the sandbox"},
    [ACT_REFRESH] = {1, refresh_args, act_refresh, NULL, NULL},
};

static enum MHD_Result act_on(http_req *r, int which) {
  enum MHD_Result res;
  call_args a = {0};
  sandbox *sb = call_target(r, ACTIONS[which].empty_ok, ACTIONS[which].read, &a, &res);
  if (!sb) return res;
  int rc = ACTIONS[which].act(sb, &a);
  sandbox_unref(sb);
  if (rc == -EALREADY && ACTIONS[which].conflict)
    return http_error(r->conn, 409, "sandbox \"%s\" %s", ctx_id(r), ACTIONS[which].conflict);
  if (rc && (rc == -ENOENT || !ACTIONS[which].failure)) return not_found(r, ctx_id(r));
  if (rc) return http_error(r->conn, 500, "%s: %s", ACTIONS[which].failure, strerror(-rc));
  return http_empty(r->conn, 204);
}

static enum MHD_Result h_delete(http_req *r) { return act_on(r, ACT_KILL); }
static enum MHD_Result h_timeout(http_req *r) { return act_on(r, ACT_TIMEOUT); }
static enum MHD_Result h_pause(http_req *r) { return act_on(r, ACT_PAUSE); }
static enum MHD_Result h_refresh(http_req *r) { return act_on(r, ACT_REFRESH); }

/* ConnectSandbox needs a timeout; ConnectSandboxV2 (its body optional)
 * defaults it to 300 s, ResumedSandbox to 15 s. */
static int connect_args(json_t *b, call_args *a, opts_err *e) {
  return timeout_args(b, a, e) || get_bool(b, "memory", 1, &a->memory, e);
}
static int connect_v2_args(json_t *b, call_args *a, opts_err *e) {
  return get_timeout(b, DEFAULT_TIMEOUT_V2_S, &a->timeout_s, e) || get_bool(b, "memory", 1, &a->memory, e);
}
static int resume_args(json_t *b, call_args *a, opts_err *e) {
  return get_timeout(b, DEFAULT_TIMEOUT_S, &a->timeout_s, e) || get_bool(b, "memory", 1, &a->memory, e);
}

static enum MHD_Result do_connect(http_req *r, args_reader read, int only_paused) {
  enum MHD_Result res;
  call_args a = {0};
  sandbox *sb = call_target(r, read != connect_args, read, &a, &res);
  if (!sb) return res;
  int resumed = 0;
  int rc = sandbox_connect(sb, a.timeout_s, !a.memory, only_paused, &resumed);
  if (rc == -EALREADY) res = http_error(r->conn, 409, "sandbox \"%s\" is already running", ctx_id(r));
  else if (rc == -ENOENT) res = not_found(r, ctx_id(r));
  else if (rc) res = http_error(r->conn, 500, "cannot resume the sandbox: %s", strerror(-rc));
  else res = http_json(r->conn, resumed ? 201 : 200, sandbox_json(sb));
  sandbox_unref(sb);
  return res;
}

static enum MHD_Result h_connect(http_req *r) { return do_connect(r, connect_args, 0); }
static enum MHD_Result h_connect_v2(http_req *r) { return do_connect(r, connect_v2_args, 0); }
static enum MHD_Result h_resume(http_req *r) { return do_connect(r, resume_args, 1); }


static int query_int(struct MHD_Connection *c, const char *name, long long lo, long long hi, long long dflt,
                     long long *out) {
  const char *v = http_query(c, name);
  if (!v || !*v) {
    *out = dflt;
    return 0;
  }
  char *end;
  long long x = strtoll(v, &end, 10);
  if (*end || x < lo || x > hi) return -1;
  *out = x;
  return 0;
}

static enum MHD_Result h_metrics(http_req *r) {
  long long start, end;
  if (query_int(r->conn, "start", 0, INT64_MAX / 1000, 0, &start) || query_int(r->conn, "end", 0, INT64_MAX / 1000, 0, &end))
    return http_error(r->conn, 400, "start and end must be unix timestamps in seconds");
  sandbox *sb = sandbox_get(ctx_id(r));
  if (!sb) return not_found(r, ctx_id(r));
  json_t *m = sandbox_metrics(sb, start, end, 0);
  sandbox_unref(sb);
  return http_json(r->conn, 200, m);
}

static enum MHD_Result h_metrics_many(http_req *r) {
  const char *ids = http_query(r->conn, "sandbox_ids");
  if (!ids || !*ids) return http_error(r->conn, 400, "sandbox_ids is required");
  json_t *out = json_object();
  char *copy = xstrdup(ids), *save = NULL;
  int n = 0;
  for (char *id = strtok_r(copy, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
    if (++n > 100) {
      free(copy);
      json_decref(out);
      return http_error(r->conn, 400, "at most 100 sandbox ids");
    }
    sandbox *sb = sandbox_get(id);
    if (!sb) continue;
    json_t *m = sandbox_view_of(sb).state == SB_RUNNING ? sandbox_metrics(sb, 0, 0, 1) : NULL;
    if (m) json_object_set_new(out, id, m);
    sandbox_unref(sb);
  }
  free(copy);
  return http_json(r->conn, 200, json_pack("{s:o}", "sandboxes", out));
}

static enum MHD_Result h_network(http_req *r) {
  enum MHD_Result res;
  json_t *b = body_object(r, &res, 0);
  if (!b) return res;
  opts_err e = {{0}};
  int allow_field = 1, allow = 1;
  if (get_bool(b, "allow_internet_access", 1, &allow_field, &e) || network_mode(b, allow_field, &allow, &e)) {
    json_decref(b);
    return http_error(r->conn, 400, "%s", e.msg);
  }
  sandbox *sb = sandbox_get(ctx_id(r));
  if (!sb) {
    json_decref(b);
    return not_found(r, ctx_id(r));
  }
  /* egress fields are replaced (omitted = cleared); public traffic settings stay */
  json_t *net = sandbox_network_json(sb);
  json_object_del(net, "allowOut");
  json_object_del(net, "denyOut");
  json_object_del(net, "rules");
  json_t *ao = json_object_get(b, "allowOut"), *dn = json_object_get(b, "denyOut"), *rules = json_object_get(b, "rules");
  if (json_array_size(ao)) json_object_set(net, "allowOut", ao);
  if (json_array_size(dn)) json_object_set(net, "denyOut", dn);
  if (json_object_size(rules)) json_object_set(net, "rules", rules);
  int rc = sandbox_set_network(sb, net, allow);
  json_decref(net);
  json_decref(b);
  sandbox_unref(sb);
  if (rc == -ENOENT) return not_found(r, ctx_id(r));
  return http_empty(r->conn, 204);
}

static enum MHD_Result h_snapshot_create(http_req *r) {
  enum MHD_Result res;
  json_t *b = body_object(r, &res, 1);
  if (!b) return res;
  json_t *n = json_object_get(b, "name");
  if (n && !json_is_null(n) && !json_is_string(n)) {
    json_decref(b);
    return http_error(r->conn, 400, "field 'name' must be a string");
  }
  sandbox *sb = sandbox_get(ctx_id(r));
  if (!sb) {
    json_decref(b);
    return not_found(r, ctx_id(r));
  }
  const char *err = "cannot create the snapshot";
  json_t *info = sandbox_snapshot(sb, json_string_value(n), &err);
  sandbox_unref(sb);
  json_decref(b);
  if (!info) return http_error(r->conn, strncmp(err, "invalid", 7) == 0 ? 400 : 500, "%s", err);
  return http_json(r->conn, 201, info);
}

static enum MHD_Result h_snapshots_list(http_req *r) {
  long long limit;
  if (query_int(r->conn, "limit", 1, 100, 100, &limit)) return http_error(r->conn, 400, "limit must be an integer between 1 and 100");
  char *next = NULL;
  const char *err = NULL;
  json_t *arr = store_snapshot_list(http_query(r->conn, "sandboxID"), http_query(r->conn, "name"), (long)limit,
                                    http_query(r->conn, "nextToken"), &next, &err);
  if (!arr) return http_error(r->conn, 400, "%s", err);
  enum MHD_Result res = http_json_hdr(r->conn, 200, arr, next ? "X-Next-Token" : NULL, next);
  free(next);
  return res;
}

/* E2B refuses to delete a template that a running or paused sandbox was
 * created from (its base template): 400. */
static int snapshot_in_use(http_req *r, const char *id, enum MHD_Result *res) {
  tpl_ref t;
  char built[24];
  if (tplbuild_resolve_any(id, &t) != 0) {
    if (tplreg_id_of(id, built, sizeof built) != 0) return 0; /* a built template without a default tag */
    memset(&t, 0, sizeof t);
    t.template_id = xstrdup(built);
  }
  int used = sandbox_template_in_use(t.template_id);
  if (used)
    *res = http_error(r->conn, 400, "cannot delete template '%s' because there are %s sandboxes using it",
                      t.template_id, used == 1 ? "running" : "paused");
  tpl_ref_free(&t);
  return used;
}

static enum MHD_Result h_template_delete(http_req *r) {
  char *id = xstrdup(ctx_id(r));
  unescape_stable(id); /* "local%2Fname%3Adefault" */
  enum MHD_Result res;
  int rc;
  tpl_ref t;
  if (snapshot_in_use(r, id, &res)) {
    /* answered */
  } else if (store_snapshot_delete(id) == 0) {
    res = http_empty(r->conn, 204);
  } else if ((rc = tplbuild_delete(id)) != -ENOENT) {
    res = rc == 0 ? http_empty(r->conn, 204)
                  : http_error(r->conn, 409, "template '%s' has a build in progress: wait for it to end", id);
  } else if (store_resolve_template(id, &t) == 0) {
    tpl_ref_free(&t);
    res = http_error(r->conn, 400, "template '%s' is provided by the e2b-local operator and cannot be deleted", id);
  } else {
    res = http_error(r->conn, 404, "template '%s' not found", id);
  }
  free(id);
  return res;
}

static int level_of(const char *s) {
  static const char *names[] = {"debug", "info", "warn", "error"};
  for (int i = 0; i < 4; i++)
    if (s && strcmp(s, names[i]) == 0) return i;
  return -1;
}

static enum MHD_Result logs(http_req *r, int v1) {
  long long from, limit;
  const char *dir = http_query(r->conn, "direction"), *lvl = http_query(r->conn, "level");
  const char *search = http_query(r->conn, "search");
  if (query_int(r->conn, v1 ? "start" : "cursor", 0, INT64_MAX, 0, &from) ||
      query_int(r->conn, "limit", 0, v1 ? INT32_MAX : 1000, 1000, &limit))
    return http_error(r->conn, 400, "invalid %s or limit", v1 ? "start" : "cursor");
  if (dir && *dir && strcmp(dir, "forward") != 0 && strcmp(dir, "backward") != 0)
    return http_error(r->conn, 400, "direction must be forward or backward");
  if (lvl && *lvl && level_of(lvl) < 0) return http_error(r->conn, 400, "level must be debug, info, warn or error");
  if (search && strlen(search) > 256) return http_error(r->conn, 400, "search is limited to 256 characters");
  sandbox *sb = sandbox_get(ctx_id(r));
  if (!sb) return not_found(r, ctx_id(r));
  int backward = dir && strcmp(dir, "backward") == 0;
  /* backward from a cursor: entries at or before it */
  json_t *out = sandbox_logs(sb, backward ? 0 : from, backward && from ? from : 0, backward,
                             lvl && *lvl ? level_of(lvl) : 0, v1 ? NULL : search, (long)limit, v1);
  sandbox_unref(sb);
  return http_json(r->conn, 200, out);
}

static enum MHD_Result h_logs_v1(http_req *r) { return logs(r, 1); }
static enum MHD_Result h_logs_v2(http_req *r) { return logs(r, 0); }

/* E2B answers 204; e2b-local answers 200 with what it enforces on this host
 * (limits_report), so a client's doctor can say so. */
static enum MHD_Result h_health(http_req *r) {
  return http_json(r->conn, 200, json_pack("{s:o}", "limits", limits_report()));
}

static enum MHD_Result h_volumes_list(http_req *r) { return http_json(r->conn, 200, store_volume_list()); }

static enum MHD_Result h_volume_create(http_req *r) {
  enum MHD_Result res;
  json_t *b = body_object(r, &res, 0);
  if (!b) return res;
  const char *name = json_string_value(json_object_get(b, "name"));
  int status = 400;
  const char *err = "field 'name' is required";
  json_t *v = name ? store_volume_create(name, &status, &err) : NULL;
  json_decref(b);
  if (!v) return http_error(r->conn, (unsigned)status, "%s", err);
  return http_json(r->conn, 201, v);
}

static enum MHD_Result h_volume_get(http_req *r) {
  json_t *v = store_volume_get(ctx_id(r));
  if (!v) return http_error(r->conn, 404, "volume '%s' not found", ctx_id(r));
  return http_json(r->conn, 200, v);
}

static enum MHD_Result h_volume_delete(http_req *r) {
  char *name = store_volume_name_by_id(ctx_id(r));
  if (!name) return http_error(r->conn, 404, "volume '%s' not found", ctx_id(r));
  int used = sandbox_volume_in_use(name);
  free(name);
  if (used) return http_error(r->conn, 409, "volume '%s' is mounted by a sandbox (kill it first)", ctx_id(r));
  return store_volume_delete(ctx_id(r)) == 0 ? http_empty(r->conn, 204)
                                             : http_error(r->conn, 404, "volume '%s' not found", ctx_id(r));
}

/* Does a template (or snapshot) go by this alias? 200 with its id, else 404. */
static enum MHD_Result h_template_alias(http_req *r) {
  char tid[64], msg[400];
  int st = tplbuild_alias(ctx_id(r), tid, sizeof tid, msg, sizeof msg);
  if (st == 200) return http_json(r->conn, 200, json_pack("{s:s, s:b}", "templateID", tid, "public", 0));
  if (st) return http_error(r->conn, (unsigned)st, "%s", msg);
  tpl_ref t;
  if (store_resolve_template(ctx_id(r), &t) != 0)
    return http_error(r->conn, 404, "template alias '%s' not found", ctx_id(r));
  json_t *body = json_pack("{s:s,s:b}", "templateID", t.template_id, "public",
                           strcmp(ctx_id(r), "base") == 0);
  tpl_ref_free(&t);
  return http_json(r->conn, 200, body);
}

/* ---- fork: snapshot in place, then count sandboxes from it ---- */

static int fork_args(json_t *b, call_args *a, opts_err *e) {
  json_t *c = json_object_get(b, "count");
  a->count = 1;
  if (c && !json_is_null(c)) {
    if (!json_is_integer(c) || json_integer_value(c) < 1 || json_integer_value(c) > 100) {
      snprintf(e->msg, sizeof e->msg, "field 'count' must be an integer between 1 and 100");
      return -1;
    }
    a->count = (int)json_integer_value(c);
  }
  return get_timeout(b, DEFAULT_TIMEOUT_S, &a->timeout_s, e);
}

/* A fork starts from the parent's files with its settings and its
 * metadata, as E2B's does: E2B boots every fork from the parent's snapshot,
 * which keeps the metadata, and the fork request has no metadata of its own. */
static json_t *fork_one(sandbox *parent, const tpl_ref *tpl, json_t *vm, json_t *net, int timeout_s) {
  sandbox_params p = {
      .tpl = tpl, .timeout_s = timeout_s ? timeout_s : DEFAULT_TIMEOUT_S, .secure = parent->secure,
      .allow_internet = parent->allow_internet, .public_traffic = parent->traffic_token == NULL,
      .auto_pause = parent->auto_pause, .auto_pause_memory = parent->auto_pause_memory,
      .auto_resume = parent->auto_resume, .env_vars = parent->env_vars, .network = net,
      .metadata = parent->metadata,
      .volume_mounts = vm, .default_user = parent->default_user, .default_workdir = parent->default_workdir,
  };
  const char *err = NULL;
  sandbox *f = sandbox_create(&p, &err);
  json_t *out = f ? json_pack("{s:o}", "sandbox", sandbox_json(f))
                  : json_pack("{s:{s:i,s:s}}", "error", "code", 500, "message",
                              err ? err : "cannot start the fork");
  sandbox_unref(f);
  return out;
}

static enum MHD_Result h_fork(http_req *r) {
  enum MHD_Result res;
  call_args a = {0};
  sandbox *sb = call_target(r, 1, fork_args, &a, &res);
  if (!sb) return res;
  opts_err e = {{0}};
  int timeout_s = a.timeout_s, count = a.count;
  char name[80];
  snprintf(name, sizeof name, "fork-of-%s-%lld", sb->id, (long long)now_ms());
  const char *err = "cannot snapshot the sandbox";
  json_t *snap = sandbox_snapshot(sb, name, &err);
  const char *snap_id = json_string_value(json_object_get(snap, "snapshotID"));
  tpl_ref tpl = {0};
  int vstatus;
  json_t *vm = NULL, *net = NULL, *results = NULL;
  if (!snap_id || store_resolve_template(snap_id, &tpl) != 0) {
    res = http_error(r->conn, 500, "%s", err);
  } else if (!(vm = resolve_volume_mounts(sb->volume_mounts, &e, &vstatus))) {
    res = http_error(r->conn, (unsigned)vstatus, "%s", e.msg);
  } else {
    net = sandbox_network_json(sb);
    results = json_array();
    for (int i = 0; i < count; i++)
      json_array_append_new(results, fork_one(sb, &tpl, vm, json_is_object(net) ? net : NULL, timeout_s));
    res = http_json(r->conn, 201, results);
  }
  if (snap_id) store_snapshot_delete(snap_id); /* the forks hold copies */
  tpl_ref_free(&tpl);
  json_decref(vm);
  json_decref(net);
  json_decref(snap);
  sandbox_unref(sb);
  return res;
}

/* E2B's router answers a method a path does not have as it answers an
 * unknown path: 404, before any key check. */
static enum MHD_Result h_method(http_req *r) {
  return http_error(r->conn, 404, "no route for %s %s", r->method, r->url);
}

/* ---- routing ---- */

typedef struct route_def {
  const char *pattern; /* '*' matches one path segment (the sandbox id) */
  const char *method;
  enum MHD_Result (*fn)(http_req *);
} route_def;

static const route_def ROUTES[] = {
    {"/health", "GET", h_health},
    {"/sandboxes", "POST", h_create_v1},
    {"/v2/sandboxes", "POST", h_create_v2},
    {"/sandboxes", "GET", h_list_v1},
    {"/v2/sandboxes", "GET", h_list_v2},
    {"/sandboxes/metrics", "GET", h_metrics_many},
    {"/sandboxes/*", "GET", h_get},
    {"/sandboxes/*", "DELETE", h_delete},
    {"/sandboxes/*/timeout", "POST", h_timeout},
    {"/sandboxes/*/connect", "POST", h_connect},
    {"/v2/sandboxes/*/connect", "POST", h_connect_v2},
    {"/sandboxes/*/resume", "POST", h_resume},
    {"/sandboxes/*/pause", "POST", h_pause},
    {"/sandboxes/*/metrics", "GET", h_metrics},
    {"/sandboxes/*/network", "PUT", h_network},
    {"/sandboxes/*/snapshots", "POST", h_snapshot_create},
    {"/sandboxes/*/refreshes", "POST", h_refresh},
    {"/sandboxes/*/logs", "GET", h_logs_v1},
    {"/v2/sandboxes/*/logs", "GET", h_logs_v2},
    {"/snapshots", "GET", h_snapshots_list},
    {"/templates/aliases/**", "GET", h_template_alias},
    {"/v3/templates", "POST", tplbuild_h_request},
    {"/v2/templates/**", "POST", tplbuild_h_v2},
    {"/templates/tags", "POST", tplbuild_h_tags_add},
    {"/templates/tags", "DELETE", tplbuild_h_tags_del},
    {"/templates/**", "GET", tplbuild_h_get},
    {"/templates/**", "DELETE", h_template_delete}, /* MHD decodes %2F: "local/name:tag" */
    {"/volumes", "GET", h_volumes_list},
    {"/volumes", "POST", h_volume_create},
    {"/volumes/*", "GET", h_volume_get},
    {"/volumes/*", "DELETE", h_volume_delete},
    {"/sandboxes/*/fork", "POST", h_fork},
};

/* Whether this server has the route: E2B built from e2b-dev/infra
 * (--api self-hosted) lacks the live API's v2 create and connect, and
 * before October 2025 (self-hosted-no-connect) the v1 connect too. */
static int served(const route_def *d) {
  if (g_server.self_hosted && (d->fn == h_create_v2 || d->fn == h_connect_v2)) return 0;
  return g_server.self_hosted != 2 || d->fn != h_connect;
}

/* Matches url against pattern, capturing the '*' segment into id. */
static int match(const char *pattern, const char *url, char *id, size_t idcap) {
  const char *p = pattern, *u = url;
  while (*p && *u) {
    if (p[0] == '*' && p[1] == '*') { /* the rest of the path, slashes included */
      size_t n = strlen(u);
      if (n >= idcap) return 0;
      memcpy(id, u, n + 1);
      return 1;
    }
    if (*p == '*') {
      size_t n = strcspn(u, "/");
      if (n == 0 || n >= idcap) return 0;
      memcpy(id, u, n);
      id[n] = '\0';
      u += n;
      p++;
    } else if (*p++ != *u++) {
      return 0;
    }
  }
  if (*u == '/' && u[1] == '\0') u++; /* tolerate one trailing slash */
  return *p == '\0' && *u == '\0';
}

static void free_ctx(void *p) { free(p); }

/* E2B's sandbox handlers take a sandbox id or a composite "<id>-<client id>"
 * (which names <id>), and answer 400 to anything else once the caller is
 * authenticated. */
static void take_sandbox_id(http_req *r, const char *pattern, id_ctx *ctx) {
  if (strncmp(pattern, "/sandboxes/*", 12) != 0 && strncmp(pattern, "/v2/sandboxes/*", 15) != 0) return;
  size_t n = e2b_sandbox_id_len(ctx->id);
  if (n) {
    ctx->id[n] = '\0';
    return;
  }
  r->early_status = 400;
  snprintf(r->early_msg, sizeof r->early_msg, "Invalid sandbox ID");
}

void control_route(http_req *r) {
  if (strncmp(r->url, "/volumecontent/", 15) == 0) { /* the volume's own token, no API key */
    volcontent_route(r);
    return;
  }
  if (strncmp(r->url, "/template-files/", 16) == 0) { /* a signed upload link, no API key */
    tplfiles_route(r);
    return;
  }
  const char *key = http_header(r->conn, "X-API-Key");
  int path_known = 0;
  id_ctx *ctx = xcalloc(1, sizeof *ctx);
  r->ctx = ctx;
  r->ctx_free = free_ctx;
  const route_def *route = NULL;
  for (size_t i = 0; i < sizeof ROUTES / sizeof ROUTES[0] && !route; i++) {
    char id[256];
    if (!served(&ROUTES[i]) || !match(ROUTES[i].pattern, r->url, id, sizeof id)) continue;
    path_known = 1;
    if (strcmp(ROUTES[i].method, "*") != 0 && strcmp(ROUTES[i].method, r->method) != 0) continue;
    if (strchr(ROUTES[i].pattern, '*')) snprintf(ctx->id, sizeof ctx->id, "%s", id);
    route = &ROUTES[i];
  }
  if (!route) {
    if (path_known) r->on_complete = h_method;
    return; /* unknown route: 404 */
  }
  r->on_complete = route->fn;
  if (!key || !e2b_secure_streq(key, g_server.api_key)) {
    r->early_status = 401;
    snprintf(r->early_msg, sizeof r->early_msg, "%s", key ? "Invalid API key" : "Missing API key (X-API-Key header)");
    return;
  }
  take_sandbox_id(r, route->pattern, ctx);
}

int control_parse_create(json_t *body, char *err, size_t cap) {
  sandbox_params p = {0};
  opts_err e = {{0}};
  int rc = parse_create(body, 1, &p, &e);
  snprintf(err, cap, "%s", e.msg);
  return rc;
}

json_t *control_parse_metadata_filter(const char *query) { return parse_metadata_filter(query); }
