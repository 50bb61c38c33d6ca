/* fuzz_netpolicy.c — libFuzzer target for emulator/src/net/netpolicy.c: a
 * sandbox's network.allowOut/denyOut rules as sent on create, validated,
 * compiled and asked about host names and addresses. Input: a JSON object
 * {"allowOut":[...], "denyOut":[...], "internet":bool, "hosts":[...]};
 * each "hosts" string is tried as a name and, when it parses, an address. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"

static void ask(const netpolicy *p, const char *host) {
  (void)netpolicy_name_allowed(p, host);
  struct sockaddr_in v4 = {.sin_family = AF_INET};
  struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
  if (inet_pton(AF_INET, host, &v4.sin_addr) == 1) {
    int a = netpolicy_addr_allowed(p, (struct sockaddr *)&v4);
    /* the same address, IPv4-mapped, gets the same answer */
    memset(v6.sin6_addr.s6_addr + 10, 0xff, 2);
    memcpy(v6.sin6_addr.s6_addr + 12, &v4.sin_addr, 4);
    if (netpolicy_addr_allowed(p, (struct sockaddr *)&v6) != a) abort();
  } else if (inet_pton(AF_INET6, host, &v6.sin6_addr) == 1) {
    (void)netpolicy_addr_allowed(p, (struct sockaddr *)&v6);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *root = json_loadb((const char *)data, size, 0, NULL);
  json_t *allow = json_object_get(root, "allowOut"), *deny = json_object_get(root, "denyOut");
  if (allow && !json_is_array(allow)) allow = NULL;
  if (deny && !json_is_array(deny)) deny = NULL;
  char err[256];
  int valid = netpolicy_validate(allow, deny, err, sizeof err) == 0;
  netpolicy *p = netpolicy_compile(!json_is_false(json_object_get(root, "internet")), allow, deny);
  if (valid && netpolicy_denies_all(p) && netpolicy_is_open(p)) abort();
  size_t i;
  json_t *h;
  json_array_foreach(json_object_get(root, "hosts"), i, h) {
    if (json_is_string(h)) ask(p, json_string_value(h));
  }
  ask(p, "1.1.1.1");
  ask(p, "::1");
  netpolicy_free(p);
  json_decref(root);
  return 0;
}
