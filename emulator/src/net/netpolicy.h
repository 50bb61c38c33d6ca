/* netpolicy.h — a sandbox's egress rules (allow_internet_access, allowOut,
 * denyOut) checked and compiled into something the egress proxy can ask:
 * may this host name, or this address, be reached?
 *
 * E2B's semantics: allowOut entries are host names (exact, or "*.example.com"
 * for any subdomain), IPs or CIDRs; denyOut entries are IPs or CIDRs only;
 * an allow entry always wins over a deny entry; allow_internet_access false
 * is denyOut ["0.0.0.0/0"]; nothing denied means everything is allowed.
 * "0.0.0.0/0" (and "::/0") deny every address, IPv6 included: never open. */
#ifndef EMU_NETPOLICY_H
#define EMU_NETPOLICY_H

#include <jansson.h>
#include <stddef.h>
#include <sys/socket.h>

typedef struct netpolicy netpolicy;

/* Checks allowOut/denyOut (arrays of strings, or NULL). Returns 0, or -1 with
 * a message naming the bad entry. */
int netpolicy_validate(json_t *allow_out, json_t *deny_out, char *err, size_t cap);
/* Compiles already validated rules (invalid entries are skipped). */
netpolicy *netpolicy_compile(int allow_internet, json_t *allow_out, json_t *deny_out);
void netpolicy_free(netpolicy *p);
/* Nothing is denied: every destination is allowed. */
int netpolicy_is_open(const netpolicy *p);
/* Everything not allowed is denied (0.0.0.0/0 denied or no internet). */
int netpolicy_denies_all(const netpolicy *p);
/* localhost and *.localhost (RFC 6761): names of the loopback, never asked
 * of DNS (lower case, no trailing dot). */
int netpolicy_is_localhost_name(const char *host);
/* The host name (lower case, no trailing dot) matches an allowOut name. */
int netpolicy_name_allowed(const netpolicy *p, const char *host);
/* May this host name be resolved for the sandbox at all? Only when the
 * policy could allow what it resolves to: an open or deny-list policy, or a
 * name an allowOut name matches. With deny-all and only IP/CIDR allow rules
 * a name is refused before any DNS query (no lookups as a side channel). */
int netpolicy_may_resolve(const netpolicy *p, const char *host);
/* An address may be reached: in an allowOut IP/CIDR, or in no denyOut one.
 * IPv4-mapped IPv6 addresses are checked as IPv4. */
int netpolicy_addr_allowed(const netpolicy *p, const struct sockaddr *sa);
/* How the proxy sees a destination address (netpolicy_allows' where). */
enum {
  NETPOLICY_BY_ADDRESS = 0, /* judged by the address alone */
  NETPOLICY_THIS_HOST = 1,  /* one of this machine's interface addresses */
  NETPOLICY_STANDIN = 2     /* a host loopback port the operator marked as the internet */
};
/* The decision for one destination address. name: the host name the
 * connection asked for (NULL for a literal address). The internet (and a
 * stand-in) is judged by the lists: an allowOut IP/CIDR covering it, or an
 * allowOut name (E2B's "allow wins" over the catch-all deny) unless a
 * narrower denyOut CIDR covers the address, or no deny covering it. This
 * machine (loopback, unspecified, link-local, its interface addresses) is
 * never the internet, whatever the policy: it is reached only when the
 * policy names it, by an allowOut IP/CIDR inside its block (127/8,
 * 169.254/16, ::1, fe80::/10, or the interface address itself) or by the
 * allowed name localhost / *.localhost the connection asked for. */
int netpolicy_allows(const netpolicy *p, const char *name, const struct sockaddr *sa, int where);

#endif
