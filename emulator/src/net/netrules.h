/* netrules.h — a sandbox's network.rules: per-domain transforms (headers to
 * add or replace) for the egress HTTP requests it sends.
 *
 * E2B's semantics: keys are exact DNS names as E2B's API checks them (no
 * wildcard such as "*.example.com", no IP address: both are a 400 there),
 * stored in lower case without a final '.'. A host gets the rules of the
 * key that is its name (never a parent's); they are applied in order (a
 * later header of the same name replaces an earlier one). A header a
 * rule names replaces the request's header of that name. Rules never allow
 * a destination: allowOut decides (netpolicy.h). */
#ifndef EMU_NETRULES_H
#define EMU_NETRULES_H

#include <jansson.h>
#include <stddef.h>

/* Bounds: E2B's (e2b-dev/infra, packages/api, sandbox create), so that
 * e2b-local takes nothing E2B refuses (emulator/README.md, egress). */
#define NETRULES_MAX_DOMAINS 10
#define NETRULES_DOMAIN_MAX 128   /* bytes of a key */
#define NETRULES_DOMAIN_MAX_S "128"
#define NETRULES_MAX_SECRETS 32   /* distinct ${e2b.secrets.NAME} of one domain */
#define NETRULES_SECRET_NAME_MAX 128
#define NETRULES_MAX_RULES 1      /* rules for one domain */
#define NETRULES_MAX_HEADERS 20   /* headers of one rule */
#define NETRULES_NAME_MAX 64
#define NETRULES_VALUE_MAX 2048
/* one domain's headers as sent ("Name: value\r\n"): what the bounds above allow */
#define NETRULES_BYTES_MAX (NETRULES_MAX_RULES * NETRULES_MAX_HEADERS * (NETRULES_NAME_MAX + NETRULES_VALUE_MAX + 4))

typedef struct netrules_hdr {
  char *name, *value;
} netrules_hdr;

/* The headers one request gets (names unique, case-insensitively). */
typedef struct netrules_set {
  netrules_hdr *h;
  size_t n;
} netrules_set;

/* Checks a request's rules (an object, or NULL/null for none). Returns the
 * rules to keep (new reference, keys in lower case; an empty object for
 * none), or NULL with a message naming the bad entry. */
json_t *netrules_check(json_t *rules, char *err, size_t cap);
/* The headers for a request to host (lower case, no trailing dot), from
 * rules kept by netrules_check — or read back from disk: every entry is
 * checked again and a bad one skipped. Returns out->n. */
size_t netrules_lookup(json_t *rules, const char *host, netrules_set *out);
void netrules_set_clear(netrules_set *s);
/* Does the header named name[0..n) belong to the set? */
int netrules_set_has(const netrules_set *s, const char *name, size_t n);

#endif
