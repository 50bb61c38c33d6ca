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

/* A DNS name as E2B's API takes a rule key (govalidator's IsDNSName): dot-
 * separated labels of at most 63 letters, digits, '_' and '-' (never first),
 * one final '.' or '_' allowed, and not an IPv4 address. So no wildcard
 * ("*.a.com"), no IP address, no empty label. */
static int dns_name(const char *s) {
  struct in_addr v4;
  size_t n = strlen(s), label = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int alnum = (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
    if (c == '.' && label > 0) {
      label = 0;
    } else if (c == '_' && i == n - 1 && label > 0) {
      return 1; /* the one trailing '_' the pattern allows */
    } else if (!(alnum || c == '_' || (c == '-' && label > 0)) || ++label > 63) {
      return 0;
    }
  }
  return n > 0 && s[0] != '.' && inet_pton(AF_INET, s, &v4) != 1;
}

/* The key as a host is looked up: lower case, without a final '.'. */
static void norm_key(const char *key, char *out) {
  size_t n = strlen(key);
  for (size_t i = 0; i <= n; i++) out[i] = (char)(key[i] >= 'A' && key[i] <= 'Z' ? key[i] + 32 : key[i]);
  if (n > 1 && out[n - 1] == '.') out[n - 1] = '\0';
}

/* A key E2B takes (messages as its API's, in our words), normalized into
 * out (NETRULES_DOMAIN_MAX + 1 bytes); -1 with err set otherwise. */
static int check_key(const char *key, json_t *seen, char *out, char *err, size_t cap) {
  const char *why = NULL;
  if (!*key)
    why = "must not be empty";
  else if (strlen(key) > NETRULES_DOMAIN_MAX)
    why = "is longer than " NETRULES_DOMAIN_MAX_S " bytes";
  else if (!dns_name(key))
    why = "is not a valid domain name (an exact DNS name: no wildcard, no IP address)";
  if (!why) {
    norm_key(key, out);
    if (!json_object_get(seen, out)) return 0;
    why = "names a domain another key names already";
  }
  snprintf(err, cap, "network.rules key \"%.200s\" %s", key, why);
  return -1;
}

/* E2B's placeholders in a header value (its networktransform package):
 * "${e2b.identity.tokens.NAME}" and "${e2b.secrets.NAME}", any other text
 * opaque. A started one must close before another starts, with a NAME; a
 * secret's NAME, trimmed, is 1-128 of [A-Za-z0-9_-], not "sec_..." (any
 * case), and counts once in lower case towards the domain's 32. */
#define PH_TOKEN "${e2b.identity.tokens."
#define PH_SECRET "${e2b.secrets."

static const char *next_ph(const char *s, size_t n, int *secret) {
  const char *t = memmem(s, n, PH_TOKEN, strlen(PH_TOKEN)), *c = memmem(s, n, PH_SECRET, strlen(PH_SECRET));
  *secret = c && (!t || c < t);
  return *secret ? c : t;
}

/* A secret's name in canonical form into out (129 bytes); -1 if invalid. */
static int secret_name(const char *s, size_t n, char *out) {
  while (n && strchr(" \t\n\v\f\r", *s)) s++, n--;
  while (n && strchr(" \t\n\v\f\r", s[n - 1])) n--;
  if (n == 0 || n > NETRULES_SECRET_NAME_MAX) return -1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z') || c == '_' || c == '-')) return -1;
    out[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
  }
  out[n] = '\0';
  return strncmp(out, "sec_", 4) == 0 ? -1 : 0;
}

/* The value's placeholders well formed, their secrets added to secrets (a
 * set of names); -1 when one is malformed. */
static int placeholders(const char *v, json_t *secrets) {
  size_t n = strlen(v);
  for (const char *p = v, *end = v + n; p < end;) {
    int secret, inner;
    const char *ph = next_ph(p, (size_t)(end - p), &secret);
    if (!ph) return 0;
    const char *name = ph + strlen(secret ? PH_SECRET : PH_TOKEN), *close = memchr(name, '}', (size_t)(end - name));
    if (!close || close == name || next_ph(name, (size_t)(close - name), &inner)) return -1;
    char canon[NETRULES_SECRET_NAME_MAX + 1];
    if (secret) {
      if (secret_name(name, (size_t)(close - name), canon) != 0) return -1;
      json_object_set_new(secrets, canon, json_true());
    }
    p = close + 1;
  }
  return 0;
}

/* One {transform: {headers: {...}}}; *bytes counts the domain's headers. */
static int check_rule(json_t *rule, const char *key, size_t *bytes, json_t *secrets, char *err, size_t cap) {
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
      snprintf(err, cap, "network.rules[\"%.80s\"]: header name '%.80s' is not a token e2b-local may set", key, k);
      return -1;
    }
    if (!value_ok(v)) {
      /* the value is never echoed: it may be a credential */
      snprintf(err, cap, "network.rules[\"%.80s\"]: the value of header '%.80s' must be a string of at most %d "
               "bytes without control characters (CR, LF, NUL)", key, k, NETRULES_VALUE_MAX);
      return -1;
    }
    if (placeholders(json_string_value(v), secrets) != 0) {
      snprintf(err, cap, "network.rules[\"%.80s\"]: the value of header '%.80s' holds a malformed E2B placeholder "
               "(${e2b.secrets.NAME}, ${e2b.identity.tokens.NAME})", key, k);
      return -1;
    }
    *bytes += strlen(k) + json_string_length(v) + 4;
  }
  if (json_object_size(secrets) > NETRULES_MAX_SECRETS) {
    snprintf(err, cap, "network.rules[\"%.80s\"]: its header values name more than %d secrets "
             "(${e2b.secrets.NAME} placeholders)", key, NETRULES_MAX_SECRETS);
    return -1;
  }
  if (*bytes > NETRULES_BYTES_MAX) {
    snprintf(err, cap, "network.rules[\"%.80s\"]: headers larger than %d bytes", key, NETRULES_BYTES_MAX);
    return -1;
  }
  return 0;
shape:
  snprintf(err, cap,
           "network.rules[\"%.80s\"]: each rule must be {\"transform\": {\"headers\": {name: value}}} (at most %d "
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
    char norm[NETRULES_DOMAIN_MAX + 1];
    if (check_key(key, out, norm, err, cap) != 0) goto bad;
    if (!json_is_array(list) || json_array_size(list) > NETRULES_MAX_RULES) {
      snprintf(err, cap, "network.rules[\"%.80s\"] must be an array of at most %d rules", key, NETRULES_MAX_RULES);
      goto bad;
    }
    size_t bytes = 0;
    json_t *secrets = json_object();
    for (size_t i = 0; i < json_array_size(list); i++)
      if (check_rule(json_array_get(list, i), key, &bytes, secrets, err, cap) != 0) {
        json_decref(secrets);
        goto bad;
      }
    json_decref(secrets);
    json_object_set(out, norm, list);
  }
  return out;
bad:
  json_decref(out);
  return NULL;
}

/* The rules of the key that is host: exact names only, as E2B takes no
 * wildcard key. A key read back from disk counts only in the form
 * netrules_check keeps (an older record's "*.x" never matches). */
static json_t *match(json_t *rules, const char *host) {
  char norm[NETRULES_DOMAIN_MAX + 1];
  json_t *exact = json_object_get(rules, host);
  if (!exact || strlen(host) > NETRULES_DOMAIN_MAX || !dns_name(host)) return NULL;
  norm_key(host, norm);
  return strcmp(norm, host) == 0 ? exact : NULL;
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
