/* client.c — configuration (with the official SDKs' environment fallbacks),
 * URLs and sandbox handles; prepare.c turns them into requests. */
#include "internal.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env_or(const char *given, const char *var) {
  if (given && *given) return given;
  const char *v = getenv(var);
  return v && *v ? v : NULL;
}

/* Hosts whose sandboxes are reached through E2B's shared "sandbox.<domain>" edge. */
static int is_e2b_cloud_domain(const char *d) {
  static const char *const cloud[] = {"e2b.app", "e2b.dev", "e2b.pro", "e2b-staging.dev"};
  for (size_t i = 0; i < sizeof cloud / sizeof cloud[0]; i++)
    if (strcmp(d, cloud[i]) == 0) return 1;
  return 0;
}

/* A bare loopback domain ("localhost[:port]", "127.0.0.1[:port]": what
 * e2b-local --no-tls prints) speaks plain HTTP; every other domain HTTPS, as
 * the official SDKs do -- e2b-local's "e2b.localhost:PORT" included. */
static int is_loopback_domain(const char *d) {
  size_t host_len = strcspn(d, ":");
  if (host_len == 9 && strncmp(d, "localhost", 9) == 0) return 1;
  return host_len == 9 && strncmp(d, "127.0.0.1", 9) == 0;
}

static char *trim_slash(char *url) {
  size_t n = url ? strlen(url) : 0;
  while (n > 0 && url[n - 1] == '/') url[--n] = 0;
  return url;
}

/* One owner per host and user, stable across processes, so a new process's
 * reap finds what a crashed one left; E2B_OWNER (or config) overrides it. */
static char *default_owner(const char *configured) {
  const char *given = env_or(configured, "E2B_OWNER");
  if (given) return strdup(given);
  char host[256];
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
  host[sizeof host - 1] = 0;
  struct passwd pw, *found = NULL;
  char buf[1024];
  const char *user = getpwuid_r(geteuid(), &pw, buf, sizeof buf, &found) == 0 && found
                         ? found->pw_name : NULL;
  char uid[24];
  if (!user) snprintf(uid, sizeof uid, "uid%u", (unsigned)geteuid()), user = uid;
  size_t n = strlen(user) + strlen(host) + 2;
  char *owner = malloc(n);
  if (owner) snprintf(owner, n, "%s@%s", user, host);
  return owner;
}

/* Whether any call of c goes over https: the control plane, or envd (per
 * sandbox on the domain unless a sandbox URL or a loopback domain says http). */
static int uses_https(const e2b_client *c) {
  if (strncmp(c->api_url, "https:", 6) == 0) return 1;
  if (c->sandbox_url) return strncmp(c->sandbox_url, "https:", 6) == 0;
  return !is_loopback_domain(c->domain);
}

void e2b_client_retain(e2b_client *c) { c->refs++; }

/* What a client owns (e2b_client_new fills it in) but its API key (a
 * secret, wiped) and its loop. */
#define CLIENT_AT(f) offsetof(e2b_client, f)
static const size_t *const client_strings =
    E2B_FIELDS(CLIENT_AT(domain), CLIENT_AT(api_url), CLIENT_AT(sandbox_url), CLIENT_AT(ca_file),
               CLIENT_AT(template_id), CLIENT_AT(user_agent), CLIENT_AT(owner));

e2b_client *e2b_client_new(e2b_loop *loop, const e2b_config *cfg, e2b_error *err) {
  static const e2b_config defaults = {0};
  e2b_error_clear(err);
  if (!loop) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "client", "loop is required");
    return NULL;
  }
  if (!cfg) cfg = &defaults;
  if (cfg->page_size < 0 || cfg->page_size > 100) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "client", "page_size must be between 1 and 100");
    return NULL;
  }
  if (cfg->max_retries < E2B_NO_RETRY || cfg->max_inflight < E2B_NO_CAP) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "client",
                "max_retries and max_inflight must be positive (or the NO_ constants)");
    return NULL;
  }
  if (cfg->request_timeout_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "client",
                "request_timeout_ms must not be negative");
    return NULL;
  }
  if (cfg->budget_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "client", "budget_ms must not be negative");
    return NULL;
  }
  const char *ca_file = env_or(cfg->ca_file, "E2B_CA_FILE");
  e2b_client *c = calloc(1, sizeof *c);
  if (!c) goto nomem;
  c->refs = 1;
  c->loop = loop;
  e2b_loop_retain(loop);
  c->request_timeout_ms = cfg->request_timeout_ms ? cfg->request_timeout_ms
                                                  : E2B_DEFAULT_REQUEST_TIMEOUT_MS;
  c->budget_ms = cfg->budget_ms ? cfg->budget_ms : E2B_DEFAULT_BUDGET_MS;
  const char *domain = env_or(cfg->domain, "E2B_DOMAIN");
  c->domain = strdup(domain ? domain : E2B_DEFAULT_DOMAIN);
  const char *key = env_or(cfg->api_key, "E2B_API_KEY");
  c->api_key = e2b_strdup0(key);
  const char *tmpl = env_or(cfg->template_id, "E2B_TEMPLATE");
  c->template_id = strdup(tmpl ? tmpl : E2B_DEFAULT_TEMPLATE);
  const char *sandbox_url = env_or(cfg->sandbox_url, "E2B_SANDBOX_URL");
  c->sandbox_url = trim_slash(e2b_strdup0(sandbox_url));
  c->ca_file = e2b_strdup0(ca_file);
  const char *api_url = env_or(cfg->api_url, "E2B_API_URL");
  if (api_url) {
    c->api_url = trim_slash(strdup(api_url));
  } else if (c->domain) {
    size_t n = strlen(c->domain) + 16;
    if ((c->api_url = malloc(n)))
      snprintf(c->api_url, n, "%s://api.%s", is_loopback_domain(c->domain) ? "http" : "https",
               c->domain);
  }
  if (cfg->user_agent) {
    c->user_agent = strdup(cfg->user_agent);
  } else {
    c->user_agent = strdup("libe2b/" E2B_VERSION);
  }
  c->max_retries = cfg->max_retries == 0 ? E2B_DEFAULT_MAX_RETRIES : cfg->max_retries < 0 ? 0 : cfg->max_retries;
  c->max_inflight = cfg->max_inflight == 0 ? E2B_DEFAULT_MAX_INFLIGHT : cfg->max_inflight < 0 ? 0 : cfg->max_inflight;
  c->page_size = cfg->page_size ? cfg->page_size : E2B_DEFAULT_PAGE_SIZE;
  c->owner = default_owner(cfg->owner);
  if (!c->domain || !c->template_id || !c->api_url || !c->user_agent || !c->owner) goto nomem;
  if ((key && !c->api_key) || (sandbox_url && !c->sandbox_url) || (ca_file && !c->ca_file)) goto nomem;
  /* A CA file matters only over https (a plain-HTTP e2b-local inherits the
   * variable too, e.g. in nginx workers that may not read the state dir);
   * there, one that cannot be read would fail every call later, less clearly. */
  if (c->ca_file && uses_https(c) && access(c->ca_file, R_OK) != 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "client",
                "ca_file (or E2B_CA_FILE) cannot be read: %s", c->ca_file);
    e2b_client_release(c);
    return NULL;
  }
  return c;
nomem:
  e2b_client_release(c);
  e2b_err_set(err, E2B_ERR_UNAVAILABLE, "client", "out of memory");
  return NULL;
}

void e2b_client_release(e2b_client *c) {
  if (!c || --c->refs > 0) return;
  e2b_free_secret(c->api_key);
  e2b_free_fields(c, client_strings);
  if (c->loop) e2b_loop_release(c->loop);
  free(c);
}

const char *e2b_client_api_url(const e2b_client *c) { return c->api_url; }
const char *e2b_client_domain(const e2b_client *c) { return c->domain; }
const char *e2b_client_sandbox_url(const e2b_client *c) { return c->sandbox_url; }
const char *e2b_client_ca_file(const e2b_client *c) { return c->ca_file; }
const char *e2b_client_template(const e2b_client *c) { return c->template_id; }
int e2b_client_has_api_key(const e2b_client *c) { return c->api_key != NULL; }
const char *e2b_client_owner(const e2b_client *c) { return c->owner; }
long e2b_client_request_timeout_ms(const e2b_client *c) { return c->request_timeout_ms; }
long e2b_client_budget_ms(const e2b_client *c) { return c->budget_ms; }

char *e2b_url_escape(const char *s) {
  char *tmp = curl_easy_escape(NULL, s, 0);
  char *out = e2b_strdup0(tmp);
  curl_free(tmp);
  return out;
}

/* ---- sandbox handles ---- */

/* With sandbox_url everything goes there, routed by headers. Otherwise calls
 * go to E2B's shared sandbox host on its own domains (routed by headers, as
 * the SDKs do) and to the sandbox's own host elsewhere; a signed URL always
 * names the sandbox's own host: E2B's edge routes a request without headers
 * only by that name. */
static int sbx_urls(e2b_sbx *s, const e2b_client *c, const char *d) {
  if (c->sandbox_url) {
    s->envd_url = strdup(c->sandbox_url);
    s->direct_url = strdup(c->sandbox_url);
    return s->envd_url && s->direct_url ? 0 : -1;
  }
  size_t n = strlen(d) + strlen(s->sandbox_id) + 32;
  if (!(s->direct_url = malloc(n)) || !(s->envd_url = malloc(n))) return -1;
  snprintf(s->direct_url, n, "%s://%d-%s.%s", is_loopback_domain(d) ? "http" : "https", E2B_ENVD_PORT,
           s->sandbox_id, d);
  if (is_e2b_cloud_domain(d))
    snprintf(s->envd_url, n, "https://sandbox.%s", d);
  else
    snprintf(s->envd_url, n, "%s", s->direct_url);
  return 0;
}

e2b_sbx *e2b_sbx_new(e2b_client *c, const char *sandbox_id, const char *access_token,
                     const char *domain, e2b_error *err) {
  e2b_error_clear(err);
  if (!c || !sandbox_id || !*sandbox_id) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "sandbox", "sandbox_id is required");
    return NULL;
  }
  e2b_sbx *s = calloc(1, sizeof *s);
  if (!s) goto nomem;
  s->refs = 1;
  s->client = c;
  e2b_client_retain(c);
  s->sandbox_id = strdup(sandbox_id);
  s->access_token = e2b_strdup0(access_token && *access_token ? access_token : NULL);
  if (!s->sandbox_id || (access_token && *access_token && !s->access_token)) goto nomem;
  if (sbx_urls(s, c, domain && *domain ? domain : c->domain) != 0) goto nomem;
  return s;
nomem:
  e2b_sbx_unref(s);
  e2b_err_set(err, E2B_ERR_UNAVAILABLE, "sandbox", "out of memory");
  return NULL;
}

void e2b_sbx_retain(e2b_sbx *s) { s->refs++; }

int e2b_need_sbx(const e2b_sbx *sbx, const char *op, e2b_error *err) {
  e2b_error_clear(err);
  if (sbx) return 0;
  e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "sandbox handle is required");
  return -1;
}

/* No watch is left when this frees the handle: a watch holds a reference. */
void e2b_sbx_unref(e2b_sbx *s) {
  if (!s || --s->refs > 0) return;
  for (size_t i = 0; i < s->forget_count; i++) {
    free(s->forgets[i].hex);
    free(s->forgets[i].user);
  }
  free(s->forgets);
  for (size_t i = 0; i < s->large_count; i++) free(s->large[i]);
  e2b_free_secret(s->access_token);
  free(s->sandbox_id);
  free(s->envd_url);
  free(s->direct_url);
  free(s->envd_version);
  if (s->client) e2b_client_release(s->client);
  free(s);
}

const char *e2b_sbx_id(const e2b_sbx *s) { return s->sandbox_id; }
const char *e2b_sbx_envd_url(const e2b_sbx *s) { return s->envd_url; }
