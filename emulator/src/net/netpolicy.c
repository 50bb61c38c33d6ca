/* netpolicy.c — parsing and matching of egress rules. */
#define _GNU_SOURCE
#include "netpolicy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

enum { R_NAME, R_WILDCARD, R_CIDR };

typedef struct rule {
  int kind;
  char *name;         /* R_NAME: the host; R_WILDCARD: ".example.com" */
  int family;         /* R_CIDR: AF_INET or AF_INET6 */
  uint8_t addr[16];   /* network address, host bits cleared */
  int prefix;
} rule;

struct netpolicy {
  int deny_all;
  rule *allow, *deny;
  size_t nallow, ndeny;
};

/* "1.2.3.4", "1.2.3.0/24", "::1", "fd00::/8" -> family/addr/prefix. */
static int parse_cidr(const char *s, rule *r) {
  char buf[64];
  const char *slash = strchr(s, '/');
  size_t n = slash ? (size_t)(slash - s) : strlen(s);
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  int family = strchr(buf, ':') ? AF_INET6 : AF_INET;
  if (inet_pton(family, buf, r->addr) != 1) return -1;
  int max = family == AF_INET ? 32 : 128;
  int prefix = max;
  if (slash) {
    char *end;
    if (!isdigit((unsigned char)slash[1])) return -1;
    long p = strtol(slash + 1, &end, 10);
    if (*end || p < 0 || p > max) return -1;
    prefix = (int)p;
  }
  for (int bit = prefix; bit < max; bit++) r->addr[bit / 8] &= (uint8_t) ~(0x80u >> (bit % 8));
  r->family = family;
  r->prefix = prefix;
  r->kind = R_CIDR;
  return 0;
}

/* Letters, digits, '-' and '_' in non-empty labels; "*." only as a prefix. */
static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 253) return 0;
  size_t label = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '.') {
      if (label == 0) return 0;
      label = 0;
    } else if (isalnum(c) || c == '-' || c == '_') {
      if (++label > 63) return 0;
    } else {
      return 0;
    }
  }
  return 1;
}

static char *lower_dup(const char *s) {
  char *d = xstrdup(s);
  for (char *p = d; *p; p++) *p = (char)tolower((unsigned char)*p);
  size_t n = strlen(d);
  if (n > 1 && d[n - 1] == '.') d[n - 1] = '\0';
  return d;
}

/* Returns 0 and fills r (r->name allocated for names), or -1. */
static int parse_entry(const char *s, int names_ok, rule *r) {
  memset(r, 0, sizeof *r);
  if (!s || !*s) return -1;
  if (parse_cidr(s, r) == 0) return 0;
  if (!names_ok || strchr(s, '/') || strchr(s, ':')) return -1;
  char *name = lower_dup(s);
  if (strncmp(name, "*.", 2) == 0 && valid_name(name + 2)) {
    r->kind = R_WILDCARD;
    r->name = xstrdup(name + 1); /* ".example.com" */
    free(name);
    return 0;
  }
  /* a bare number ("10") or dotted digits that inet_pton refused are not names */
  int all_digits = 1;
  for (const char *p = name; *p; p++)
    if (!isdigit((unsigned char)*p) && *p != '.') all_digits = 0;
  if (all_digits || !valid_name(name)) {
    free(name);
    return -1;
  }
  r->kind = R_NAME;
  r->name = name;
  return 0;
}

static int is_all(const rule *r) { return r->kind == R_CIDR && r->prefix == 0; }

/* An address or CIDR whose address as written is all zeros (0.0.0.0, ::,
 * 0.0.0.0/8), but the catch-all "0.0.0.0/0": E2B refuses it (400). */
static int unspecified_literal(const char *s) {
  if (strcmp(s, "0.0.0.0/0") == 0) return 0;
  char buf[64];
  size_t n = strcspn(s, "/");
  if (n >= sizeof buf) return 0;
  memcpy(buf, s, n);
  buf[n] = '\0';
  uint8_t a[16] = {0};
  size_t len = inet_pton(AF_INET, buf, a) == 1 ? 4 : inet_pton(AF_INET6, buf, a) == 1 ? 16 : 0;
  if (!len) return 0;
  for (size_t i = 0; i < len; i++)
    if (a[i]) return 0;
  return 1;
}

/* Every entry of list (the field named field) parses, as a name too where
 * names_ok; else -1 with err naming the entry and what it may be. */
static int validate_list(json_t *list, const char *field, int names_ok, const char *may_be, char *err,
                         size_t cap) {
  for (size_t i = 0; i < json_array_size(list); i++) {
    const char *s = json_string_value(json_array_get(list, i));
    rule r;
    if (parse_entry(s, names_ok, &r) != 0) {
      snprintf(err, cap, "network.%s entry '%.80s' is not %s", field, s ? s : "", may_be);
      return -1;
    }
    if (r.kind == R_CIDR && unspecified_literal(s)) {
      snprintf(err, cap, "network.%s entry '%.80s' is an unspecified address (0.0.0.0/0 is all traffic)", field, s);
      return -1;
    }
    free(r.name);
  }
  return 0;
}

/* Does list name a domain (an entry that parses as a name)? */
static int names_a_domain(json_t *list) {
  for (size_t i = 0; i < json_array_size(list); i++) {
    rule r;
    if (parse_entry(json_string_value(json_array_get(list, i)), 1, &r) != 0) continue;
    int name = r.kind == R_NAME || r.kind == R_WILDCARD;
    free(r.name);
    if (name) return 1;
  }
  return 0;
}

/* denyOut holds E2B's catch-all entry, spelled exactly so (E2B compares the string). */
static int denies_all_literally(json_t *list) {
  for (size_t i = 0; i < json_array_size(list); i++) {
    const char *s = json_string_value(json_array_get(list, i));
    if (s && strcmp(s, "0.0.0.0/0") == 0) return 1;
  }
  return 0;
}

int netpolicy_validate(json_t *allow_out, json_t *deny_out, char *err, size_t cap) {
  if (validate_list(allow_out, "allowOut", 1,
                    "an IP address, a CIDR block or a domain name (example.com, *.example.com)", err, cap) ||
      validate_list(deny_out, "denyOut", 0,
                    "an IP address or a CIDR block (domain names are not supported in deny rules)", err, cap))
    return -1;
  /* E2B: a name can only be allowed out of a catch-all deny (allow_internet_access
   * false does not count: E2B looks at the list) */
  if (names_a_domain(allow_out) && !denies_all_literally(deny_out)) {
    snprintf(err, cap, "network.allowOut names domains, so network.denyOut must include 0.0.0.0/0");
    return -1;
  }
  return 0;
}

static void add_rules(json_t *arr, int names_ok, rule **v, size_t *n) {
  size_t cnt = json_array_size(arr);
  *v = cnt ? xcalloc(cnt, sizeof **v) : NULL;
  *n = 0;
  for (size_t i = 0; i < cnt; i++)
    if (parse_entry(json_string_value(json_array_get(arr, i)), names_ok, &(*v)[*n]) == 0) (*n)++;
}

netpolicy *netpolicy_compile(int allow_internet, json_t *allow_out, json_t *deny_out) {
  netpolicy *p = xcalloc(1, sizeof *p);
  add_rules(allow_out, 1, &p->allow, &p->nallow);
  add_rules(deny_out, 0, &p->deny, &p->ndeny);
  p->deny_all = !allow_internet;
  for (size_t i = 0; i < p->ndeny; i++)
    if (is_all(&p->deny[i])) p->deny_all = 1;
  return p;
}

void netpolicy_free(netpolicy *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nallow; i++) free(p->allow[i].name);
  free(p->allow);
  free(p->deny);
  free(p);
}

int netpolicy_is_open(const netpolicy *p) { return !p->deny_all && p->ndeny == 0; }
int netpolicy_denies_all(const netpolicy *p) { return p->deny_all; }

int netpolicy_is_localhost_name(const char *h) {
  size_t n = strlen(h);
  return strcmp(h, "localhost") == 0 || (n > 10 && strcmp(h + n - 10, ".localhost") == 0);
}

int netpolicy_name_allowed(const netpolicy *p, const char *host) {
  size_t hn = strlen(host);
  for (size_t i = 0; i < p->nallow; i++) {
    const rule *r = &p->allow[i];
    if (r->kind == R_NAME && strcmp(r->name, host) == 0) return 1;
    if (r->kind == R_WILDCARD) {
      size_t sn = strlen(r->name);
      if (hn > sn && strcmp(host + hn - sn, r->name) == 0) return 1;
    }
  }
  return 0;
}

static int cidr_match(const rule *r, int family, const uint8_t *addr) {
  if (r->kind != R_CIDR) return 0;
  if (r->prefix == 0) return 1; /* 0.0.0.0/0 and ::/0: every address */
  if (r->family != family) return 0;
  int full = r->prefix / 8, rest = r->prefix % 8;
  if (memcmp(r->addr, addr, (size_t)full) != 0) return 0;
  if (rest == 0) return 1;
  uint8_t mask = (uint8_t)(0xffu << (8 - rest));
  return (addr[full] & mask) == r->addr[full];
}

/* The unspecified address connects to this host's loopback: the policy
 * sees it as the loopback it reaches (0.0.0.0 as 127.0.0.1, :: as ::1). */
static void unspecified_as_loopback(int family, uint8_t *addr) {
  static const uint8_t zero[16] = {0};
  if (memcmp(addr, zero, family == AF_INET ? 4 : 16) != 0) return;
  if (family == AF_INET) addr[0] = 127, addr[3] = 1;
  else addr[15] = 1;
}

/* sa as (family, 16 bytes); IPv4-mapped IPv6 as IPv4. 0, or -1. */
static int addr_of(const struct sockaddr *sa, int *family, uint8_t addr[16]) {
  if (sa->sa_family == AF_INET) {
    *family = AF_INET;
    memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    *family = IN6_IS_ADDR_V4MAPPED(a6) ? AF_INET : AF_INET6;
    memcpy(addr, a6->s6_addr + (*family == AF_INET ? 12 : 0), *family == AF_INET ? 4 : 16);
  } else {
    return -1;
  }
  unspecified_as_loopback(*family, addr);
  return 0;
}

static int addr_allowed(const netpolicy *p, int family, const uint8_t *addr) {
  for (size_t i = 0; i < p->nallow; i++)
    if (cidr_match(&p->allow[i], family, addr)) return 1;
  if (p->deny_all) return 0;
  for (size_t i = 0; i < p->ndeny; i++)
    if (cidr_match(&p->deny[i], family, addr)) return 0;
  return 1;
}

int netpolicy_addr_allowed(const netpolicy *p, const struct sockaddr *sa) {
  int family;
  uint8_t addr[16];
  return addr_of(sa, &family, addr) == 0 && addr_allowed(p, family, addr);
}

int netpolicy_may_resolve(const netpolicy *p, const char *host) {
  return !p->deny_all || netpolicy_name_allowed(p, host);
}

/* Loopback, unspecified or link-local (169.254/16 holds cloud metadata
 * services): addresses that mean this machine or its own link. */
static int is_internal(int family, const uint8_t *a) {
  if (family == AF_INET) return a[0] == 127 || (a[0] == 0 && !a[1] && !a[2] && !a[3]) || (a[0] == 169 && a[1] == 254);
  static const uint8_t zero[15] = {0};
  if (memcmp(a, zero, 15) == 0 && (a[15] == 0 || a[15] == 1)) return 1; /* :: and ::1 */
  return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;                           /* fe80::/10 */
}

/* A denyOut CIDR narrower than "everything" covers the address. */
static int denied_specifically(const netpolicy *p, int family, const uint8_t *addr) {
  for (size_t i = 0; i < p->ndeny; i++)
    if (!is_all(&p->deny[i]) && cidr_match(&p->deny[i], family, addr)) return 1;
  return 0;
}

/* The prefix of the block of this machine's addresses addr belongs to:
 * 127/8, 169.254/16, ::1/128, fe80::/10; an interface address is a block of
 * its own (32 or 128). */
static int machine_block(int family, const uint8_t *a) {
  if (family == AF_INET) return a[0] == 127 ? 8 : a[0] == 169 && a[1] == 254 ? 16 : 32;
  return a[0] == 0xfe && (a[1] & 0xc0) == 0x80 ? 10 : 128;
}

/* An allowOut IP/CIDR names this machine's address: it covers it and lies
 * inside its block, so "0.0.0.0/0" or "0.0.0.0/1" never do. */
static int machine_named(const netpolicy *p, int family, const uint8_t *addr) {
  int block = machine_block(family, addr);
  for (size_t i = 0; i < p->nallow; i++)
    if (cidr_match(&p->allow[i], family, addr) && p->allow[i].prefix >= block) return 1;
  return 0;
}

int netpolicy_allows(const netpolicy *p, const char *name, const struct sockaddr *sa, int where) {
  int family;
  uint8_t addr[16];
  if (addr_of(sa, &family, addr) != 0) return 0;
  int machine = where == NETPOLICY_THIS_HOST || (where != NETPOLICY_STANDIN && is_internal(family, addr));
  if (machine) {
    /* never "the internet": only what the policy names. localhost by name is
     * a deliberate grant of the loopback (RFC 6761 names no DNS record can
     * move); any other name may point anywhere */
    if (machine_named(p, family, addr)) return 1;
    return name && netpolicy_is_localhost_name(name) && netpolicy_name_allowed(p, name) &&
           !denied_specifically(p, family, addr);
  }
  if (addr_allowed(p, family, addr)) return 1;
  return name && netpolicy_name_allowed(p, name) && !denied_specifically(p, family, addr);
}
