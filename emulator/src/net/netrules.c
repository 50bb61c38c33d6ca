/* netrules.c — checking network.rules and picking the headers a request gets. */
#define _GNU_SOURCE
#include "netrules.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* Headers that frame the request or the proxy's own hop: replacing them
 * would change where a request ends (a smuggled second request), so a rule
 * may not name them. */
static const char *const RESERVED[] = {"content-length", "transfer-encoding", "connection", "keep-alive",
                                       "upgrade", "te", "trailer", "proxy-connection", NULL};

/* An RFC 9110 token: the only bytes a header name may hold. */
static int tchar(unsigned char ch) {
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static int name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > NETRULES_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (!tchar((unsigned char)s[i])) return 0;
  for (int i = 0; RESERVED[i]; i++)
    if (strcasecmp(s, RESERVED[i]) == 0) return 0;
  return 1;
}

/* No CR, LF, NUL or other control byte but HTAB: a value can never end the
 * header line it is written on (no header injection). */
static int value_ok(json_t *v) {
  const char *s = json_string_value(v);
  size_t n = json_string_length(v);
  if (!s || n > NETRULES_VALUE_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if ((ch < 0x20 && ch != '\t') || ch == 0x7f) return 0;
  }
  return 1;
}

/* A key in lower case into out: a domain name ([a-z0-9._-], no empty
 * label), optionally after "*.". -1 when it is none of those. An IP address
 * is not a key: E2B takes domain names only (its API refuses an address
 * with 400), and an IPv6 one has ':' no name may hold. */
static int norm_key(const char *key, char *out, size_t cap) {
  struct in_addr v4;
  size_t n = strlen(key);
  if (n == 0 || n >= cap || n > NETRULES_DOMAIN_MAX) return -1;
  for (size_t i = 0; i <= n; i++) out[i] = (char)(key[i] >= 'A' && key[i] <= 'Z' ? key[i] + 32 : key[i]);
  const char *h = strncmp(out, "*.", 2) == 0 ? out + 2 : out;
  size_t hn = strlen(h);
  if (hn == 0 || h[0] == '.' || h[hn - 1] == '.' || strstr(h, "..")) return -1;
  for (size_t i = 0; i < hn; i++)
    if (!((h[i] >= 'a' && h[i] <= 'z') || (h[i] >= '0' && h[i] <= '9') || strchr("-._", h[i]))) return -1;
  return inet_pton(AF_INET, h, &v4) == 1 ? -1 : 0;
}

/* One {transform: {headers: {...}}}; *bytes counts the domain's headers. */
static int check_rule(json_t *rule, const char *key, size_t *bytes, char *err, size_t cap) {
  const char *k;
  json_t *v;
  if (!json_is_object(rule)) goto shape;
  json_object_foreach(rule, k, v) if (strcmp(k, "transform") != 0) goto shape;
  json_t *t = json_object_get(rule, "transform");
  if (!t || json_is_null(t)) return 0;
  if (!json_is_object(t)) goto shape;
  json_object_foreach(t, k, v) if (strcmp(k, "headers") != 0) goto shape;
  json_t *hs = json_object_get(t, "headers");
  if (!hs || json_is_null(hs)) return 0;
  if (!json_is_object(hs) || json_object_size(hs) > NETRULES_MAX_HEADERS) goto shape;
  json_object_foreach(hs, k, v) {
    if (!name_ok(k)) {
      snprintf(err, cap, "network.rules['%.80s']: header name '%.80s' is not a token e2b-local may set", key, k);
      return -1;
    }
    if (!value_ok(v)) {
      /* the value is never echoed: it may be a credential */
      snprintf(err, cap, "network.rules['%.80s']: the value of header '%.80s' must be a string of at most %d "
               "bytes without control characters (CR, LF, NUL)", key, k, NETRULES_VALUE_MAX);
      return -1;
    }
    *bytes += strlen(k) + json_string_length(v) + 4;
  }
  if (*bytes > NETRULES_BYTES_MAX) {
    snprintf(err, cap, "network.rules['%.80s']: headers larger than %d bytes", key, NETRULES_BYTES_MAX);
    return -1;
  }
  return 0;
shape:
  snprintf(err, cap,
           "network.rules['%.80s']: each rule must be {\"transform\": {\"headers\": {name: value}}} (at most %d "
           "headers)", key, NETRULES_MAX_HEADERS);
  return -1;
}

json_t *netrules_check(json_t *rules, char *err, size_t cap) {
  if (!rules || json_is_null(rules)) return json_object();
  if (!json_is_object(rules) || json_object_size(rules) > NETRULES_MAX_DOMAINS) {
    snprintf(err, cap, "network.rules must be an object of at most %d domains", NETRULES_MAX_DOMAINS);
    return NULL;
  }
  json_t *out = json_object();
  const char *key;
  json_t *list;
  json_object_foreach(rules, key, list) {
    char norm[256];
    if (norm_key(key, norm, sizeof norm) != 0 || json_object_get(out, norm)) {
      snprintf(err, cap, "network.rules key '%.80s' must be a domain name or *.domain, named once (no IP addresses)",
               key);
      goto bad;
    }
    if (!json_is_array(list) || json_array_size(list) > NETRULES_MAX_RULES) {
      snprintf(err, cap, "network.rules['%.80s'] must be an array of at most %d rules", key, NETRULES_MAX_RULES);
      goto bad;
    }
    size_t bytes = 0;
    for (size_t i = 0; i < json_array_size(list); i++)
      if (check_rule(json_array_get(list, i), key, &bytes, err, cap) != 0) goto bad;
    json_object_set(out, norm, list);
  }
  return out;
bad:
  json_decref(out);
  return NULL;
}

/* The rules of the key matching host: the exact one, else the longest
 * "*.suffix" host ends in (subdomains only). */
static json_t *match(json_t *rules, const char *host) {
  char norm[256];
  json_t *exact = json_object_get(rules, host);
  if (exact && norm_key(host, norm, sizeof norm) == 0 && strcmp(norm, host) == 0) return exact;
  json_t *best = NULL;
  size_t best_len = 0, hn = strlen(host), seen = 0;
  const char *key;
  json_t *list;
  json_object_foreach(rules, key, list) {
    if (++seen > NETRULES_MAX_DOMAINS) break; /* a file on disk is not trusted to be small */
    if (strncmp(key, "*.", 2) != 0 || norm_key(key, norm, sizeof norm) != 0 || strcmp(norm, key) != 0) continue;
    size_t sn = strlen(key + 1); /* ".example.com" */
    if (hn > sn && strcmp(host + hn - sn, key + 1) == 0 && sn > best_len) {
      best = list;
      best_len = sn;
    }
  }
  return best;
}

int netrules_set_has(const netrules_set *s, const char *name, size_t n) {
  for (size_t i = 0; i < s->n; i++)
    if (strlen(s->h[i].name) == n && strncasecmp(s->h[i].name, name, n) == 0) return 1;
  return 0;
}

/* Adds or replaces one header, within the domain's byte budget. */
static void set_header(netrules_set *s, const char *name, json_t *value, size_t *bytes) {
  size_t nn = strlen(name), vn = json_string_length(value);
  for (size_t i = 0; i < s->n; i++) {
    if (strcasecmp(s->h[i].name, name) != 0) continue;
    size_t old = strlen(s->h[i].value);
    if (*bytes - old + vn > NETRULES_BYTES_MAX) return;
    *bytes = *bytes - old + vn;
    free(s->h[i].value);
    s->h[i].value = xstrdup(json_string_value(value));
    return;
  }
  if (s->n >= NETRULES_MAX_RULES * NETRULES_MAX_HEADERS || *bytes + nn + vn + 4 > NETRULES_BYTES_MAX) return;
  s->h = xrealloc(s->h, (s->n + 1) * sizeof *s->h);
  s->h[s->n].name = xstrdup(name);
  s->h[s->n].value = xstrdup(json_string_value(value));
  s->n++;
  *bytes += nn + vn + 4;
}

size_t netrules_lookup(json_t *rules, const char *host, netrules_set *out) {
  out->h = NULL;
  out->n = 0;
  json_t *list = json_is_object(rules) ? match(rules, host) : NULL;
  size_t bytes = 0;
  for (size_t i = 0; i < json_array_size(list) && i < NETRULES_MAX_RULES; i++) {
    json_t *hs = json_object_get(json_object_get(json_array_get(list, i), "transform"), "headers");
    if (!json_is_object(hs) || json_object_size(hs) > NETRULES_MAX_HEADERS) continue;
    const char *name;
    json_t *value;
    json_object_foreach(hs, name, value) if (name_ok(name) && value_ok(value)) set_header(out, name, value, &bytes);
  }
  return out->n;
}

void netrules_set_clear(netrules_set *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->h[i].name);
    free(s->h[i].value);
  }
  free(s->h);
  s->h = NULL;
  s->n = 0;
}
