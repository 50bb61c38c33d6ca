/* envd.c — per-sandbox routing: the edge-proxy checks (502 for a sandbox that
 * is not running), access tokens, then /health, /envs, /files and Connect RPC. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "codec.h"
#include "connect_rpc.h"
#include "envd.h"
#include "envdver.h"
#include "sandbox.h"
#include "server.h"

static enum MHD_Result h_health(http_req *r) { return http_empty(r->conn, 204); }

static enum MHD_Result h_envs(http_req *r) {
  return http_json(r->conn, 200, sandbox_envd_env(r->sb));
}

/* GET /metrics: envd's numbers of its machine, here the sandbox's latest
 * sample (the control plane's metrics), in envd's names and order. */
static enum MHD_Result h_metrics(http_req *r) {
  json_t *s = sandbox_metrics(r->sb, 0, 0, 1);
  if (!s) return http_empty(r->conn, 500); /* envd: a 500 with no body when it cannot measure */
  json_int_t mem_total = json_integer_value(json_object_get(s, "memTotal"));
  json_int_t mem_used = json_integer_value(json_object_get(s, "memUsed"));
  /* to 2 decimals, as envd rounds it (never negative) */
  double pct = (double)(long long)(json_real_value(json_object_get(s, "cpuUsedPct")) * 100 + 0.5) / 100;
  json_t *m = json_pack("{s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "ts",
                        json_integer_value(json_object_get(s, "timestampUnix")), "cpu_count",
                        json_integer_value(json_object_get(s, "cpuCount")), "cpu_used_pct", pct, "mem_total_mib",
                        mem_total >> 20, "mem_used_mib", mem_used >> 20, "mem_total", mem_total, "mem_used", mem_used,
                        "mem_cache", json_integer_value(json_object_get(s, "memCache")), "disk_used",
                        json_integer_value(json_object_get(s, "diskUsed")), "disk_total",
                        json_integer_value(json_object_get(s, "diskTotal")));
  json_decref(s);
  return http_json_hdr(r->conn, 200, m, "Cache-Control", "no-store");
}

/* A method a route does not have: 405 with no body and the route's Allow,
 * as envd's router (and, on RPC paths, Connect's handler) answers. */
static enum MHD_Result h_method(http_req *r) {
  const char *allow = strcmp(r->url, "/files") == 0 ? "GET, POST" : strchr(r->url + 1, '/') ? "POST" : "GET";
  return http_empty_h(r->conn, 405, "Allow", allow);
}

/* A path envd does not serve: Go's plain-text 404. */
static enum MHD_Result h_not_found(http_req *r) {
  return http_bytes(r->conn, 404, "text/plain; charset=utf-8", "404 page not found\n", 19);
}

static void early(http_req *r, int status, const char *msg) {
  r->early_status = status;
  snprintf(r->early_msg, sizeof r->early_msg, "%s", msg);
}

/* Routes an older envd lacks: unknown there, so a 404 as its router answers. */
static int too_new(const char *url) {
  static const struct {
    const char *path, *since;
  } later[] = {{"/process.Process/CloseStdin", ENVD_SINCE_CLOSE_STDIN}};
  for (size_t i = 0; i < sizeof later / sizeof *later; i++)
    if (strcmp(url, later[i].path) == 0) return envd_below(later[i].since);
  return 0;
}

static const rpc_method *find_method(const char *url) {
  if (too_new(url)) return NULL;
  const rpc_method *tables[] = {ENVD_PROCESS_METHODS, ENVD_FS_METHODS};
  for (int t = 0; t < 2; t++)
    for (const rpc_method *m = tables[t]; m->path; m++)
      if (strcmp(m->path, url) == 0) return m;
  return NULL;
}

/* What E2B's edge proxy answers for a sandbox that is not running. */
static void not_running(http_req *r, const char *sandbox_id) {
  early(r, 502, "The sandbox was not found");
  snprintf(r->early_sandbox, sizeof r->early_sandbox, "%s", sandbox_id);
}

/* envd authenticates every request: an Authorization header naming a user
 * the sandbox does not have is a 401 wherever it goes (after the token);
 * Connect RPCs say so in their protocol (connect_rpc.c). */
static int unknown_user(http_req *r) {
  char name[64];
  if (r->early_status || !rpc_basic_user(http_header(r->conn, "Authorization"), name, sizeof name) ||
      rpc_user_by_name(name))
    return 0;
  early(r, 401, "");
  snprintf(r->early_msg, sizeof r->early_msg, "invalid username: '%s'", name);
  r->early_code = "unauthenticated";
  return 1;
}

static int token_ok(http_req *r) {
  const char *tok = http_header(r->conn, "X-Access-Token");
  return !r->sb->envd_token || (tok && e2b_secure_streq(tok, r->sb->envd_token));
}

/* A paused auto-resume sandbox wakes only for a request that may reach it:
 * credentials are checked first, so nobody without them can resume it. */
void envd_route(http_req *r, const char *sandbox_id) {
  r->sb = sandbox_get(sandbox_id);
  if (!r->sb) return not_running(r, sandbox_id);
  const char *url = r->url;
  int is_get = strcmp(r->method, "GET") == 0, is_post = strcmp(r->method, "POST") == 0;
  if (strcmp(url, "/health") == 0) { /* unauthenticated: it wakes nothing without the token */
    if (token_ok(r) ? !sandbox_wake(r->sb) : !sandbox_is_running(r->sb)) return not_running(r, sandbox_id);
    if (!unknown_user(r)) r->on_complete = is_get ? h_health : h_method;
    return;
  }
  if (strcmp(url, "/files") == 0) {
    if (is_get || is_post)
      files_route(r); /* token header or URL signature, checked there */
    else
      r->on_complete = h_method;
    if (!r->early_status && !sandbox_wake(r->sb)) not_running(r, sandbox_id);
    unknown_user(r);
    return;
  }
  if (!token_ok(r))
    return early(r, 401, "unauthorized access, please provide a valid access token or method signing if supported");
  if (!sandbox_wake(r->sb)) return not_running(r, sandbox_id);
  const rpc_method *m = find_method(url);
  if (m && is_post) return rpc_route(r, m); /* the RPC says an unknown user in its own protocol */
  if (unknown_user(r)) return;
  if (strcmp(url, "/envs") == 0)
    r->on_complete = is_get ? h_envs : h_method;
  else if (strcmp(url, "/metrics") == 0 && !envd_below(ENVD_SINCE_METRICS))
    r->on_complete = is_get ? h_metrics : h_method;
  else
    r->on_complete = m ? h_method : h_not_found;
}
