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
  return http_json(r->conn, 200, sandbox_env_vars(r->sb));
}

static enum MHD_Result h_method(http_req *r) {
  return http_error(r->conn, 405, "method %s not allowed on %s", r->method, r->url);
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
    r->on_complete = is_get ? h_health : h_method;
    return;
  }
  if (strcmp(url, "/files") == 0) {
    if (is_get || is_post)
      files_route(r); /* token header or URL signature, checked there */
    else
      r->on_complete = h_method;
    if (!r->early_status && !sandbox_wake(r->sb)) not_running(r, sandbox_id);
    return;
  }
  if (!token_ok(r)) {
    const char *tok = http_header(r->conn, "X-Access-Token");
    early(r, 401, tok ? "invalid access token" : "missing access token (X-Access-Token header)");
    return;
  }
  if (!sandbox_wake(r->sb)) return not_running(r, sandbox_id);
  if (strcmp(url, "/envs") == 0) {
    r->on_complete = is_get ? h_envs : h_method;
    return;
  }
  const rpc_method *m = find_method(url);
  if (m) {
    if (is_post)
      rpc_route(r, m);
    else
      r->on_complete = h_method;
  }
}
