/* network.c — a network policy (e2b_network) judged and translated into
 * E2B's fields, once, for every call that carries one: a create (v1 or v2
 * body), a provision and a live update. Everything E2B would refuse with a
 * 400, and every combination it would accept but cannot enforce the way
 * the policy reads, is refused here with the field named, before any I/O.
 *
 * E2B's limits (e2b-dev/infra, packages/api, sandbox create): rules for at
 * most 10 domains (exact DNS names of at most 128 bytes: no wildcard), one
 * rule each, at most 20 headers per rule, names (HTTP tokens) of at most 64
 * bytes, values of at most 2048 bytes without control characters and with
 * well-formed placeholders naming at most 32 secrets a domain; denyOut takes IPs and CIDRs only;
 * maskRequestHost is ASCII host[:port]; egressProxy is host:port with a
 * port of 1-65535, credentials of at most 255 bytes, a password only with a
 * username. */
#include "internal.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALL_TRAFFIC "0.0.0.0/0"
#define RULE_DOMAINS_MAX 10
#define RULE_DOMAIN_LEN 128
#define RULE_HEADERS_MAX 20
#define HEADER_NAME_LEN 64
#define HEADER_VALUE_LEN 2048
#define PROXY_CRED_LEN 255

/* Sets err to code, naming field (printf-formatted into err->field). */
static int refuse(e2b_error *err, e2b_code code, const char *op, const char *field, const char *what) {
  e2b_err_set(err, code, op, "%s: %s", field, what);
  if (err) snprintf(err->field, sizeof err->field, "%s", field);
  return -1;
}

static int refuse_at(e2b_error *err, const char *op, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse_at(e2b_error *err, const char *op, const char *what, const char *fmt, ...) {
  char field[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(field, sizeof field, fmt, ap);
  va_end(ap);
  return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, field, what);
}

/* An IPv4 or IPv6 address, optionally /prefix within the family's width. */
int e2b_is_ip_or_cidr(const char *s) {
  char host[64];
  const char *slash = strchr(s, '/');
  size_t n = slash ? (size_t)(slash - s) : strlen(s);
  if (n == 0 || n >= sizeof host) return 0;
  memcpy(host, s, n);
  host[n] = '\0';
  unsigned char buf[16];
  int bits = inet_pton(AF_INET, host, buf) == 1 ? 32 : inet_pton(AF_INET6, host, buf) == 1 ? 128 : 0;
  if (!bits) return 0;
  if (!slash) return 1;
  const char *p = slash + 1;
  if (!*p || strlen(p) > 3) return 0;
  int v = 0;
  for (; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    v = v * 10 + (*p - '0');
  }
  return v <= bits;
}

/* An IP or CIDR whose address, as written, is all zeros (0.0.0.0, ::),
 * other than the catch-all "0.0.0.0/0": E2B refuses it (nftables cannot
 * take it). */
static int unspecified(const char *s) {
  if (!e2b_is_ip_or_cidr(s) || strcmp(s, ALL_TRAFFIC) == 0) return 0;
  char host[64];
  size_t n = strcspn(s, "/");
  memcpy(host, s, n);
  host[n] = '\0';
  unsigned char buf[16] = {0};
  size_t len = inet_pton(AF_INET, host, buf) == 1 ? 4 : (inet_pton(AF_INET6, host, buf), 16);
  for (size_t i = 0; i < len; i++)
    if (buf[i]) return 0;
  return 1;
}

static int check_list(const char *const *s, size_t n, const char *name, int ips_only, const char *op,
                      e2b_error *err) {
  for (size_t i = 0; i < n; i++) {
    if (!s || !s[i] || !*s[i] || !e2b_utf8_valid(s[i], strlen(s[i])))
      return refuse_at(err, op, "entries must be non-empty strings", "network.%s[%zu]", name, i + 1);
    if (ips_only && !e2b_is_ip_or_cidr(s[i]))
      return refuse_at(err, op, "deny rules take IPs or CIDRs only (E2B cannot deny by domain)",
                       "network.%s[%zu]", name, i + 1);
    if (unspecified(s[i]))
      return refuse_at(err, op, "an unspecified address (0.0.0.0, ::) is refused by E2B; all traffic is 0.0.0.0/0",
                       "network.%s[%zu]", name, i + 1);
  }
  return 0;
}

/* RFC 7230 tchar. */
static int is_tchar(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A DNS name as E2B's API takes a rule key (govalidator's IsDNSName):
 * dot-separated labels of 1-63 letters, digits, '_' and '-' (never first),
 * one final '.' or '_' allowed, not an IPv4 address; so no wildcard. */
static int rule_domain_ok(const char *d) {
  size_t n = strlen(d), label = 0;
  if (n == 0 || n > RULE_DOMAIN_LEN || d[0] == '.' || e2b_is_ip_or_cidr(d)) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)d[i];
    int alnum = (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
    if (c == '.' && label > 0)
      label = 0;
    else if (c == '_' && i == n - 1 && label > 0)
      return 1; /* the one trailing '_' the pattern allows */
    else if (!(alnum || c == '_' || (c == '-' && label > 0)) || ++label > 63)
      return 0;
  }
  return 1;
}

/* E2B's placeholders in a header value: "${e2b.identity.tokens.NAME}" and
 * "${e2b.secrets.NAME}" (other text is opaque). One that starts must close
 * before another starts and name something; a secret's name, trimmed, is
 * 1-128 of [A-Za-z0-9_-], not "sec_..." in any case, and counts once (in
 * lower case) towards the domain's 32. */
#define PH_TOKEN "${e2b.identity.tokens."
#define PH_SECRET "${e2b.secrets."
#define SECRETS_MAX 32
#define SECRET_NAME_LEN 128

typedef struct secret_set {
  char names[SECRETS_MAX + 1][SECRET_NAME_LEN + 1];
  size_t n;
} secret_set;

/* The first needle in s[0..n), or NULL. */
static const char *find(const char *s, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(s + i, needle, k) == 0) return s + i;
  return NULL;
}

static const char *next_placeholder(const char *s, size_t n, int *secret) {
  const char *t = find(s, n, PH_TOKEN), *c = find(s, n, PH_SECRET);
  *secret = c && (!t || c < t);
  return *secret ? c : t;
}

/* Adds the secret name s[0..n) to set (canonical form); -1 if it is not one. */
static int add_secret(const char *s, size_t n, secret_set *set) {
  char name[SECRET_NAME_LEN + 1];
  while (n && strchr(" \t\n\v\f\r", *s)) s++, n--;
  while (n && strchr(" \t\n\v\f\r", s[n - 1])) n--;
  if (n == 0 || n > SECRET_NAME_LEN) return -1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z') || c == '_' || c == '-')) return -1;
    name[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
  }
  name[n] = '\0';
  if (strncmp(name, "sec_", 4) == 0) return -1;
  for (size_t i = 0; i < set->n; i++)
    if (strcmp(set->names[i], name) == 0) return 0;
  if (set->n <= SECRETS_MAX) memcpy(set->names[set->n++], name, n + 1);
  return 0;
}

/* The value's placeholders well formed (their secrets added to set). */
static int placeholders_ok(const char *v, secret_set *set) {
  const char *end = v + strlen(v);
  for (const char *p = v; p < end;) {
    int secret, inner;
    const char *ph = next_placeholder(p, (size_t)(end - p), &secret);
    if (!ph) return 1;
    const char *name = ph + strlen(secret ? PH_SECRET : PH_TOKEN), *close = memchr(name, '}', (size_t)(end - name));
    if (!close || close == name || next_placeholder(name, (size_t)(close - name), &inner)) return 0;
    if (secret && add_secret(name, (size_t)(close - name), set) != 0) return 0;
    p = close + 1;
  }
  return 1;
}

/* A header value as HTTP takes it: no control characters but tab. */
static int header_value_ok(const char *v) {
  for (const unsigned char *p = (const unsigned char *)v; *p; p++)
    if ((*p < 0x20 && *p != '\t') || *p == 0x7f) return 0;
  return 1;
}

static int check_header(const e2b_net_rule *r, const e2b_kv *h, secret_set *set, const char *op, e2b_error *err) {
  const char *name = h->key ? h->key : "";
  size_t n = strlen(name);
  int ok = n > 0 && n <= HEADER_NAME_LEN;
  for (size_t i = 0; ok && i < n; i++) ok = is_tchar((unsigned char)name[i]);
  if (!ok)
    return refuse_at(err, op, "header names are HTTP tokens of 1-64 bytes", "network.rules[\"%.36s\"].headers",
                     r->domain);
  /* the value is never echoed: it may be a credential */
  if (!h->value || strlen(h->value) > HEADER_VALUE_LEN || !header_value_ok(h->value))
    return refuse_at(err, op, "values are strings of at most 2048 bytes without control characters",
                     "network.rules[\"%.36s\"].headers", r->domain);
  if (!placeholders_ok(h->value, set))
    return refuse_at(err, op, "a malformed E2B placeholder (${e2b.secrets.NAME}, ${e2b.identity.tokens.NAME})",
                     "network.rules[\"%.36s\"].headers", r->domain);
  if (set->n > SECRETS_MAX)
    return refuse_at(err, op, "more than 32 secrets (${e2b.secrets.NAME} placeholders) for one domain",
                     "network.rules[\"%.36s\"].headers", r->domain);
  return 0;
}

static int check_rules(const e2b_network *n, const char *op, e2b_error *err) {
  if (n->rule_count > RULE_DOMAINS_MAX)
    return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, "network.rules", "at most 10 domains");
  for (size_t i = 0; i < n->rule_count; i++) {
    const e2b_net_rule *r = &n->rules[i];
    if (!r->domain)
      return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, "network.rules", "keys are domain names");
    if (!rule_domain_ok(r->domain))
      return refuse_at(err, op,
                       "keys are exact DNS names of 1-128 bytes as E2B takes them (no wildcard, no IP address)",
                       "network.rules[\"%.36s\"]", r->domain);
    for (size_t j = 0; j < i; j++)
      if (strcasecmp(n->rules[j].domain, r->domain) == 0)
        return refuse_at(err, op, "named twice", "network.rules[\"%.36s\"]", r->domain);
    if (r->header_count > RULE_HEADERS_MAX || (r->header_count && !r->headers))
      return refuse_at(err, op, "at most 20 headers", "network.rules[\"%.36s\"].headers", r->domain);
    secret_set set = {.n = 0};
    for (size_t k = 0; k < r->header_count; k++)
      if (check_header(r, &r->headers[k], &set, op, err)) return -1;
  }
  return 0;
}

/* host:port as Go's net.SplitHostPort splits it (a port is required and
 * must be 1-65535 when port_required; otherwise any port text, or none). */
static int host_port_ok(const char *a, int port_required) {
  const char *colon = strrchr(a, ':');
  const char *host_end = colon;
  if (a[0] == '[') {
    const char *close = strchr(a, ']');
    if (!close || close == a + 1 || (close[1] && close[1] != ':')) return 0;
    colon = close[1] ? close + 1 : NULL;
    host_end = close;
  } else if (colon && strchr(a, ':') != colon) {
    return 0; /* too many colons */
  }
  if (!colon) return !port_required && *a;
  if (host_end == a) return 0;
  if (!port_required) return 1;
  const char *p = colon + 1;
  if (!*p || strlen(p) > 5) return 0;
  long v = 0;
  for (; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    v = v * 10 + (*p - '0');
  }
  return v >= 1 && v <= 65535;
}

static int check_proxy(const e2b_egress_proxy *p, const char *op, e2b_error *err) {
  if (!p) return 0;
  if (!p->address || !host_port_ok(p->address, 1))
    return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, "network.egress_proxy.address",
                  "must be host:port with a port of 1-65535");
  if (p->username && strlen(p->username) > PROXY_CRED_LEN)
    return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, "network.egress_proxy.username", "at most 255 bytes");
  if (p->password && (!p->username || !*p->username))
    return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, "network.egress_proxy.password",
                  "only together with a username");
  if (p->password && strlen(p->password) > PROXY_CRED_LEN)
    return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, "network.egress_proxy.password", "at most 255 bytes");
  return 0;
}

static int mask_ok(const char *m) {
  if (!*m) return 0;
  for (const unsigned char *p = (const unsigned char *)m; *p; p++)
    if (*p <= 0x20 || *p >= 0x7f) return 0;
  return host_port_ok(m, 0);
}

static int only_all_traffic(const e2b_network *n) {
  for (size_t i = 0; i < n->deny_out_count; i++)
    if (strcmp(n->deny_out[i], ALL_TRAFFIC) != 0) return 0;
  return 1;
}

#define TRI "must be 0 (the default), E2B_YES or E2B_NO"
static int tri_ok(int v) { return v == E2B_DEFAULT || v == E2B_YES || v == E2B_NO; }

int e2b_network_check(const e2b_network *n, int update, const char *op, e2b_error *err) {
  e2b_error_clear(err);
  if (!n) return 0;
  if (!tri_ok(n->allow_internet_access))
    return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, "network.allow_internet_access", TRI);
  if (!tri_ok(n->allow_public_traffic))
    return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, "network.allow_public_traffic", TRI);
  if (check_list(n->allow_out, n->allow_out_count, "allow", 0, op, err) ||
      check_list(n->deny_out, n->deny_out_count, "deny", 1, op, err))
    return -1;
  if ((n->allow_out_count || n->allow_internet_access == E2B_NO) && !only_all_traffic(n))
    return refuse(err, E2B_ERR_UNSUPPORTED, op, "network.deny",
                  "deny CIDRs together with an allow list cannot be enforced on E2B (its allow rules "
                  "take precedence over deny rules)");
  if (check_rules(n, op, err) || check_proxy(n->egress_proxy, op, err)) return -1;
  if (update && n->allow_public_traffic)
    return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, "network.allow_public_traffic",
                  "can only be set when the sandbox is created");
  if (update && n->mask_request_host)
    return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, "network.mask_request_host",
                  "can only be set when the sandbox is created");
  if (n->mask_request_host && !mask_ok(n->mask_request_host))
    return refuse(err, E2B_ERR_INVALID_ARGUMENT, op, "network.mask_request_host",
                  "must be an ASCII host or host:port (\"${PORT}\" is replaced with the port)");
  return 0;
}

static json_t *strings(const char *const *s, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++) json_array_append_new(a, json_string(s[i]));
  return a;
}

static json_t *rules_json(const e2b_network *n) {
  json_t *rules = json_object();
  for (size_t i = 0; rules && i < n->rule_count; i++) {
    const e2b_net_rule *r = &n->rules[i];
    json_t *headers = json_object();
    for (size_t k = 0; headers && k < r->header_count; k++)
      json_object_set_new(headers, r->headers[k].key, json_string(r->headers[k].value));
    json_object_set_new(rules, r->domain, json_pack("[{s:{s:o}}]", "transform", "headers", headers));
  }
  return rules;
}

static json_t *proxy_json(const e2b_egress_proxy *p) {
  json_t *o = json_pack("{s:s}", "address", p->address);
  if (o && p->username) json_object_set_new(o, "username", json_string(p->username));
  if (o && p->password) json_object_set_new(o, "password", json_string(p->password));
  return o;
}

/* The egress members (allowOut, denyOut, rules, egressProxy) into obj. */
static void add_egress(json_t *obj, const e2b_network *n) {
  if (n->allow_out_count) json_object_set_new(obj, "allowOut", strings(n->allow_out, n->allow_out_count));
  if (n->allow_out_count) {
    json_object_set_new(obj, "denyOut", json_pack("[s]", ALL_TRAFFIC));
  } else if (n->deny_out_count) {
    json_object_set_new(obj, "denyOut", strings(n->deny_out, n->deny_out_count));
  }
  if (n->rule_count) json_object_set_new(obj, "rules", rules_json(n));
  if (n->egress_proxy) json_object_set_new(obj, "egressProxy", proxy_json(n->egress_proxy));
}

json_t *e2b_network_fields(const e2b_network *n, int update, const char *op, e2b_error *err) {
  static const e2b_network open_egress = {0};
  if (!n) n = &open_egress;
  if (e2b_network_check(n, update, op, err)) return NULL;
  json_t *out = json_object();
  if (!out) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return NULL;
  }
  json_object_set_new(out, "allow_internet_access", json_boolean(n->allow_internet_access != E2B_NO));
  if (update) {
    add_egress(out, n);
    return out;
  }
  json_t *net = json_object();
  add_egress(net, n);
  if (n->allow_public_traffic)
    json_object_set_new(net, "allowPublicTraffic", json_boolean(n->allow_public_traffic == E2B_YES));
  if (n->mask_request_host) json_object_set_new(net, "maskRequestHost", json_string(n->mask_request_host));
  if (json_object_size(net))
    json_object_set_new(out, "network", net);
  else
    json_decref(net);
  return out;
}
