/* test_netpolicy.c — the egress decisions: which names may be resolved at
 * all, and which resolved addresses a name may reach. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <string.h>

#include "netpolicy.h"
#include "testing.h"

/* allow/deny: JSON arrays as the API sends them. */
static netpolicy *policy(int internet, const char *allow, const char *deny) {
  json_t *a = allow ? json_loads(allow, 0, NULL) : NULL, *d = deny ? json_loads(deny, 0, NULL) : NULL;
  char err[256];
  CHECK(netpolicy_validate(a, d, err, sizeof err) == 0);
  netpolicy *p = netpolicy_compile(internet, a, d);
  json_decref(a);
  json_decref(d);
  return p;
}

static struct sockaddr_storage g_ss;
static const struct sockaddr *addr(const char *s) {
  memset(&g_ss, 0, sizeof g_ss);
  struct sockaddr_in *v4 = (struct sockaddr_in *)&g_ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&g_ss;
  if (inet_pton(AF_INET, s, &v4->sin_addr) == 1)
    v4->sin_family = AF_INET;
  else if (inet_pton(AF_INET6, s, &v6->sin6_addr) == 1)
    v6->sin6_family = AF_INET6;
  return (const struct sockaddr *)&g_ss;
}

static void test_resolution_only_when_a_name_rule_could_match(void) {
  netpolicy *cidr_only = policy(0, "[\"10.0.0.0/8\", \"127.0.0.1\"]", NULL);
  CHECK(!netpolicy_may_resolve(cidr_only, "example.com"));
  CHECK(!netpolicy_may_resolve(cidr_only, "secret-data.attacker.example"));
  netpolicy_free(cidr_only);
  netpolicy *names = policy(1, "[\"api.example.com\", \"*.cdn.example\"]", "[\"0.0.0.0/0\"]");
  CHECK(netpolicy_may_resolve(names, "api.example.com"));
  CHECK(netpolicy_may_resolve(names, "img.cdn.example"));
  CHECK(!netpolicy_may_resolve(names, "cdn.example"));
  CHECK(!netpolicy_may_resolve(names, "other.example.com"));
  netpolicy_free(names);
  /* open and deny-list policies allow by address: any name may be resolved */
  netpolicy *open = policy(1, NULL, NULL), *denylist = policy(1, NULL, "[\"10.0.0.0/8\"]");
  CHECK(netpolicy_may_resolve(open, "anything.example"));
  CHECK(netpolicy_may_resolve(denylist, "anything.example"));
  netpolicy_free(open);
  netpolicy_free(denylist);
}

static void test_an_allowed_name_never_reaches_this_machine(void) {
  netpolicy *p = policy(1, "[\"x.example\"]", "[\"0.0.0.0/0\"]");
  CHECK(netpolicy_allows(p, "x.example", addr("93.184.216.34"), 0)); /* allow beats the catch-all */
  CHECK(netpolicy_allows(p, "x.example", addr("2001:db8::1"), 0));
  CHECK(!netpolicy_allows(p, "x.example", addr("127.0.0.1"), 1));
  CHECK(!netpolicy_allows(p, "x.example", addr("127.0.0.1"), 0)); /* loopback by itself */
  CHECK(!netpolicy_allows(p, "x.example", addr("127.9.9.9"), 0));
  CHECK(!netpolicy_allows(p, "x.example", addr("::1"), 0));
  CHECK(!netpolicy_allows(p, "x.example", addr("::ffff:127.0.0.1"), 0));
  CHECK(!netpolicy_allows(p, "x.example", addr("0.0.0.0"), 0));
  CHECK(!netpolicy_allows(p, "x.example", addr("::"), 0));
  CHECK(!netpolicy_allows(p, "x.example", addr("169.254.169.254"), 0)); /* cloud metadata */
  CHECK(!netpolicy_allows(p, "x.example", addr("fe80::1"), 0));
  CHECK(!netpolicy_allows(p, "x.example", addr("192.168.1.5"), 1)); /* an interface address */
  CHECK(!netpolicy_allows(p, "other.example", addr("93.184.216.34"), 0));
  CHECK(!netpolicy_allows(p, NULL, addr("93.184.216.34"), 0)); /* a literal is judged by address */
  netpolicy_free(p);
}

static void test_loopback_reached_only_when_listed(void) {
  netpolicy *by_cidr = policy(0, "[\"x.example\", \"127.0.0.1/32\"]", "[\"0.0.0.0/0\"]");
  CHECK(netpolicy_allows(by_cidr, "x.example", addr("127.0.0.1"), 1));
  CHECK(netpolicy_allows(by_cidr, NULL, addr("127.0.0.1"), 1));
  CHECK(!netpolicy_allows(by_cidr, "x.example", addr("127.0.0.2"), 1));
  netpolicy_free(by_cidr);
  netpolicy *by_name = policy(1, "[\"localhost\", \"*.localhost\"]", "[\"0.0.0.0/0\"]");
  CHECK(netpolicy_allows(by_name, "localhost", addr("127.0.0.1"), 1));
  CHECK(netpolicy_allows(by_name, "localhost", addr("::1"), 1));
  CHECK(netpolicy_allows(by_name, "a.localhost", addr("127.0.0.1"), 1));
  CHECK(!netpolicy_allows(by_name, NULL, addr("127.0.0.1"), 1));
  netpolicy_free(by_name);
}

static void test_this_machine_is_never_the_internet(void) {
  /* allow-all, a deny-list and wide allow CIDRs never name this machine */
  netpolicy *open = policy(1, NULL, NULL), *denylist = policy(1, NULL, "[\"10.0.0.0/8\"]");
  netpolicy *wide = policy(1, "[\"0.0.0.0/0\", \"1.0.0.0/1\", \"::1/0\", \"192.168.0.0/16\"]", "[\"0.0.0.0/0\"]");
  netpolicy *all[] = {open, denylist, wide};
  const char *machine[] = {"127.0.0.1", "127.1.2.3", "::1", "0.0.0.0", "::", "169.254.169.254", "fe80::1"};
  for (size_t i = 0; i < 3; i++) {
    for (size_t k = 0; k < sizeof machine / sizeof *machine; k++) {
      CHECK(!netpolicy_allows(all[i], NULL, addr(machine[k]), NETPOLICY_BY_ADDRESS));
      CHECK(!netpolicy_allows(all[i], "localhost", addr(machine[k]), NETPOLICY_THIS_HOST));
    }
    CHECK(!netpolicy_allows(all[i], NULL, addr("192.168.1.5"), NETPOLICY_THIS_HOST)); /* an interface address */
    CHECK(netpolicy_allows(all[i], NULL, addr("93.184.216.34"), NETPOLICY_BY_ADDRESS));
    /* a loopback port the operator marked as the internet is judged as the internet */
    CHECK(netpolicy_allows(all[i], NULL, addr("127.0.0.1"), NETPOLICY_STANDIN));
  }
  /* what names it: a CIDR inside its block, the interface address itself */
  netpolicy *named = policy(1, "[\"127.0.0.0/8\", \"192.168.1.5\", \"169.254.169.254\"]", NULL);
  CHECK(netpolicy_allows(named, NULL, addr("127.9.9.9"), NETPOLICY_THIS_HOST));
  CHECK(netpolicy_allows(named, NULL, addr("0.0.0.0"), NETPOLICY_THIS_HOST));
  CHECK(netpolicy_allows(named, NULL, addr("192.168.1.5"), NETPOLICY_THIS_HOST));
  CHECK(netpolicy_allows(named, NULL, addr("169.254.169.254"), NETPOLICY_BY_ADDRESS));
  CHECK(!netpolicy_allows(named, NULL, addr("::1"), NETPOLICY_THIS_HOST));
  /* a stand-in is still subject to the deny lists */
  CHECK(!netpolicy_allows(denylist, NULL, addr("10.0.0.1"), NETPOLICY_STANDIN));
  netpolicy *noloop = policy(1, NULL, "[\"127.0.0.1/32\"]");
  CHECK(!netpolicy_allows(noloop, NULL, addr("127.0.0.1"), NETPOLICY_STANDIN));
  CHECK(netpolicy_allows(noloop, NULL, addr("127.0.0.2"), NETPOLICY_STANDIN));
  for (size_t i = 0; i < 3; i++) netpolicy_free(all[i]);
  netpolicy_free(named);
  netpolicy_free(noloop);
}

/* E2B: a name is allowed only out of a catch-all deny spelled "0.0.0.0/0";
 * an unspecified address is refused. */
static void test_names_need_the_catch_all_deny(void) {
  const char *bad[][2] = {{"[\"x.example\"]", NULL}, {"[\"*.x.example\"]", "[\"10.0.0.0/8\"]"},
                          {"[\"x.example\"]", "[\"0.0.0.0/1\", \"128.0.0.0/1\"]"}};
  char err[256];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    json_t *a = json_loads(bad[i][0], 0, NULL), *d = bad[i][1] ? json_loads(bad[i][1], 0, NULL) : NULL;
    CHECK(netpolicy_validate(a, d, err, sizeof err) != 0);
    json_decref(a);
    json_decref(d);
  }
  /* nor an unspecified address (0.0.0.0, ::) but the catch-all */
  const char *unspec[] = {"[\"0.0.0.0\"]", "[\"::/0\"]", "[\"0.0.0.0/8\"]", "[\"0.0.0.0/1\"]"};
  for (size_t i = 0; i < sizeof unspec / sizeof *unspec; i++) {
    json_t *l = json_loads(unspec[i], 0, NULL);
    CHECK(netpolicy_validate(l, NULL, err, sizeof err) != 0);
    CHECK(netpolicy_validate(NULL, l, err, sizeof err) != 0);
    json_decref(l);
  }
  json_t *ips = json_loads("[\"1.1.1.1\", \"10.0.0.0/8\"]", 0, NULL);
  CHECK(netpolicy_validate(ips, NULL, err, sizeof err) == 0);
  json_decref(ips);
}

static void test_a_narrower_deny_beats_an_allowed_name(void) {
  netpolicy *p = policy(1, "[\"*.corp.example\"]", "[\"0.0.0.0/0\", \"10.0.0.0/8\", \"fd00::/8\"]");
  CHECK(!netpolicy_allows(p, "db.corp.example", addr("10.1.2.3"), 0));
  CHECK(!netpolicy_allows(p, "db.corp.example", addr("fd12::3"), 0));
  CHECK(netpolicy_allows(p, "db.corp.example", addr("93.184.216.34"), 0));
  netpolicy_free(p);
  /* an allowOut CIDR still wins over a deny CIDR (allow beats deny) */
  netpolicy *q = policy(1, "[\"*.corp.example\", \"10.1.0.0/16\"]", "[\"0.0.0.0/0\", \"10.0.0.0/8\"]");
  CHECK(netpolicy_allows(q, "db.corp.example", addr("10.1.2.3"), 0));
  CHECK(!netpolicy_allows(q, "db.corp.example", addr("10.2.0.1"), 0));
  CHECK(netpolicy_allows(q, NULL, addr("10.1.2.3"), 0));
  netpolicy_free(q);
}

static void test_every_spelling_of_this_host_is_loopback(void) {
  netpolicy *no_loop = policy(1, NULL, "[\"127.0.0.0/8\", \"::1/128\"]");
  const char *spellings[] = {"127.0.0.1", "0.0.0.0", "::1", "::", "::ffff:0.0.0.0", "::ffff:127.0.0.1"};
  for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
    CHECK(!netpolicy_addr_allowed(no_loop, addr(spellings[i])));
    CHECK(!netpolicy_allows(no_loop, NULL, addr(spellings[i]), 1));
  }
  CHECK(netpolicy_addr_allowed(no_loop, addr("10.0.0.1")));
  netpolicy_free(no_loop);
  /* a loopback grant covers the unspecified address too */
  netpolicy *loop = policy(0, "[\"127.0.0.1/32\"]", NULL);
  CHECK(netpolicy_addr_allowed(loop, addr("0.0.0.0")));
  netpolicy_free(loop);
}

int main(void) {
  RUN(test_resolution_only_when_a_name_rule_could_match);
  RUN(test_an_allowed_name_never_reaches_this_machine);
  RUN(test_loopback_reached_only_when_listed);
  RUN(test_this_machine_is_never_the_internet);
  RUN(test_a_narrower_deny_beats_an_allowed_name);
  RUN(test_names_need_the_catch_all_deny);
  RUN(test_every_spelling_of_this_host_is_loopback);
  return TESTING_DONE();
}
