/* test_network.c — libe2b decides every network policy rule (network.c):
 * what E2B cannot enforce is "unsupported", what it would refuse is
 * "invalid_argument", each naming the field; what passes is translated
 * into E2B's create and update fields. Nothing is sent. */
#include "internal.h"
#include "testing.h"

#include <string.h>

static json_t *create_fields(const e2b_network *n, e2b_error *err) {
  return e2b_network_fields(n, 0, "create", err);
}

static void refused(const e2b_network *n, int update, e2b_code code, const char *field) {
  e2b_error err;
  json_t *f = e2b_network_fields(n, update, "create", &err);
  CHECK(f == NULL);
  CHECK(err.code == code);
  CHECK_STR(err.field, field);
  json_decref(f);
}

static void open_egress_is_internet_access(void) {
  e2b_error err;
  json_t *f = create_fields(NULL, &err);
  CHECK(f && json_is_true(json_object_get(f, "allow_internet_access")));
  CHECK(f && !json_object_get(f, "network"));
  json_decref(f);
  e2b_network none = {.allow_internet_access = E2B_NO};
  f = create_fields(&none, &err);
  CHECK(f && json_is_false(json_object_get(f, "allow_internet_access")));
  json_decref(f);
}

static void an_allow_list_denies_everything_else(void) {
  const char *allow[] = {"example.com", "8.8.8.8"};
  e2b_network n = {.allow_out = allow, .allow_out_count = 2};
  e2b_error err;
  json_t *f = create_fields(&n, &err);
  json_t *net = json_object_get(f, "network");
  CHECK(json_array_size(json_object_get(net, "allowOut")) == 2);
  CHECK_STR(json_string_value(json_array_get(json_object_get(net, "denyOut"), 0)), "0.0.0.0/0");
  CHECK(json_array_size(json_object_get(net, "denyOut")) == 1);
  json_decref(f);
}

static void a_deny_list_leaves_the_rest_open(void) {
  const char *deny[] = {"10.0.0.0/8", "fd00::/8", "1.2.3.4"};
  e2b_network n = {.deny_out = deny, .deny_out_count = 3};
  e2b_error err;
  json_t *f = create_fields(&n, &err);
  CHECK(json_is_true(json_object_get(f, "allow_internet_access")));
  CHECK(json_array_size(json_object_get(json_object_get(f, "network"), "denyOut")) == 3);
  CHECK(!json_object_get(json_object_get(f, "network"), "allowOut"));
  json_decref(f);
}

static void allow_with_deny_is_unsupported(void) {
  const char *allow[] = {"example.com"}, *deny[] = {"10.0.0.0/8"}, *all[] = {"0.0.0.0/0"};
  e2b_network n = {.allow_out = allow, .allow_out_count = 1, .deny_out = deny, .deny_out_count = 1};
  refused(&n, 0, E2B_ERR_UNSUPPORTED, "network.deny");
  refused(&n, 1, E2B_ERR_UNSUPPORTED, "network.deny");
  e2b_network none = {.allow_internet_access = E2B_NO, .deny_out = deny, .deny_out_count = 1};
  refused(&none, 0, E2B_ERR_UNSUPPORTED, "network.deny");
  /* the catch-all deny is what an allow list means: accepted */
  n.deny_out = all;
  e2b_error err;
  json_t *f = create_fields(&n, &err);
  CHECK(f != NULL);
  json_decref(f);
}

static void deny_takes_ips_and_cidrs_only(void) {
  const char *bad[][1] = {{"example.com"}, {"10.0.0.0/33"}, {"::1/129"}, {"1.2.3"}, {""},
                          {"0.0.0.0"}, {"::/0"}, {"0.0.0.0/8"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    e2b_network n = {.deny_out = bad[i], .deny_out_count = 1};
    refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.deny[1]");
  }
  const char *empty[] = {"ok.com", ""};
  e2b_network n = {.allow_out = empty, .allow_out_count = 2};
  refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.allow[2]");
  /* E2B refuses unspecified addresses, but for the catch-all 0.0.0.0/0 */
  const char *unspec[] = {"0.0.0.0/0", "0.0.0.0/1"};
  n = (e2b_network){.allow_out = unspec, .allow_out_count = 2};
  refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.allow[2]");
  const char *wide[] = {"0.0.0.0/0", "1.0.0.0/1", "::1/0"};
  n = (e2b_network){.allow_out = wide, .allow_out_count = 3};
  e2b_error err;
  json_t *f = e2b_network_fields(&n, 0, "create", &err);
  CHECK(f != NULL);
  json_decref(f);
}

static void rules_become_transforms(void) {
  e2b_kv h[] = {{"Authorization", "Bearer x"}};
  e2b_net_rule r[] = {{"api.example.com", h, 1}, {"www.example.org", h, 1}};
  e2b_network n = {.rules = r, .rule_count = 2};
  e2b_error err;
  json_t *f = create_fields(&n, &err);
  json_t *rules = json_object_get(json_object_get(f, "network"), "rules");
  json_t *one = json_array_get(json_object_get(rules, "api.example.com"), 0);
  CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(one, "transform"), "headers"),
                                              "Authorization")),
            "Bearer x");
  CHECK(json_object_get(rules, "www.example.org") != NULL);
  json_decref(f);
  f = e2b_network_fields(&n, 1, "set_network", &err);
  CHECK(f && json_object_get(f, "rules") && !json_object_get(f, "network"));
  json_decref(f);
}

static void rules_are_held_to_e2b_limits(void) {
  e2b_kv h[] = {{"X-A", "v"}};
  /* E2B takes a key only if govalidator's IsDNSName does: no wildcard */
  const char *bad_domains[][2] = {{"*", "network.rules[\"*\"]"},
                                  {"*.example.com", "network.rules[\"*.example.com\"]"},
                                  {"*.", "network.rules[\"*.\"]"},
                                  {"127.0.0.1", "network.rules[\"127.0.0.1\"]"},
                                  {"", "network.rules[\"\"]"},
                                  {"a..b", "network.rules[\"a..b\"]"},
                                  {"-a.com", "network.rules[\"-a.com\"]"},
                                  {"a.com..", "network.rules[\"a.com..\"]"},
                                  {"bad domain.com", "network.rules[\"bad domain.com\"]"},
                                  {"*.*.x.com", "network.rules[\"*.*.x.com\"]"}};
  for (size_t i = 0; i < sizeof bad_domains / sizeof bad_domains[0]; i++) {
    e2b_net_rule r = {bad_domains[i][0], h, 1};
    e2b_network n = {.rules = &r, .rule_count = 1};
    refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, bad_domains[i][1]);
  }
  char label64[80], long129[140];
  snprintf(label64, sizeof label64, "%s.com", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  memset(long129, 'a', 129);
  long129[129] = '\0';
  const char *too_long[] = {label64, long129};
  for (size_t i = 0; i < 2; i++) {
    e2b_net_rule r = {too_long[i], h, 1};
    e2b_network n = {.rules = &r, .rule_count = 1};
    e2b_error err;
    CHECK(e2b_network_fields(&n, 0, "create", &err) == NULL && strncmp(err.field, "network.rules[\"aaa", 18) == 0);
  }
  const char *good_domains[] = {"_dmarc.example.com", "example.com.", "a-.example.com", "1.2.3", label64 + 1};
  for (size_t i = 0; i < sizeof good_domains / sizeof good_domains[0]; i++) {
    e2b_net_rule r = {good_domains[i], h, 1};
    e2b_network n = {.rules = &r, .rule_count = 1};
    e2b_error err;
    json_t *f = e2b_network_fields(&n, 0, "create", &err);
    CHECK(f != NULL);
    json_decref(f);
  }
  e2b_net_rule many[11];
  char names[11][16];
  for (int i = 0; i < 11; i++) {
    snprintf(names[i], sizeof names[i], "h%d.com", i);
    many[i] = (e2b_net_rule){names[i], h, 1};
  }
  e2b_network n = {.rules = many, .rule_count = 11};
  refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.rules");
  e2b_kv badname[] = {{"Bad Name", "v"}}, crlf[] = {{"X-A", "v\r\nX-B: w"}};
  e2b_net_rule r1 = {"a.com", badname, 1}, r2 = {"a.com", crlf, 1};
  n = (e2b_network){.rules = &r1, .rule_count = 1};
  refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.rules[\"a.com\"].headers");
  n.rules = &r2;
  refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.rules[\"a.com\"].headers");
  e2b_error err;
  json_t *f = e2b_network_fields(&n, 0, "create", &err);
  CHECK(f == NULL && strstr(err.message, "X-B") == NULL); /* values never echoed */
  json_decref(f);
  e2b_net_rule twice[] = {{"A.com", h, 1}, {"a.com", h, 1}};
  n = (e2b_network){.rules = twice, .rule_count = 2};
  refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.rules[\"a.com\"]");
}

/* E2B's placeholders in header values: well formed, at most 32 secrets a domain */
static void placeholders_are_held_to_e2b_rules(void) {
  const char *bad[] = {"Bearer ${e2b.secrets.key", "${e2b.secrets.}", "${e2b.secrets.a b}",
                       "${e2b.identity.tokens.}", "${e2b.secrets.${e2b.secrets.a}}", "${e2b.secrets.SEC_x}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    e2b_kv h[] = {{"A", bad[i]}};
    e2b_net_rule r = {"a.com", h, 1};
    e2b_network n = {.rules = &r, .rule_count = 1};
    refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.rules[\"a.com\"].headers");
  }
  char v33[33 * 24] = "", v32[33 * 24] = "${e2b.secrets.S1}";
  for (int i = 1; i <= 33; i++) snprintf(v33 + strlen(v33), sizeof v33 - strlen(v33), "${e2b.secrets.s%d}", i);
  for (int i = 1; i <= 32; i++) snprintf(v32 + strlen(v32), sizeof v32 - strlen(v32), "${e2b.secrets.s%d}", i);
  e2b_kv h33[] = {{"A", v33}}, h32[] = {{"A", v32}, {"B", "${e2b.identity.tokens.aws} ${other} ${e2b.secrets. s2 }"}};
  e2b_net_rule r = {"a.com", h33, 1};
  e2b_network n = {.rules = &r, .rule_count = 1};
  refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.rules[\"a.com\"].headers");
  r.headers = h32;
  r.header_count = 2;
  e2b_error err;
  json_t *f = e2b_network_fields(&n, 0, "create", &err);
  CHECK(f != NULL);
  json_decref(f);
}

static void ingress_only_at_create(void) {
  e2b_network n = {.allow_public_traffic = E2B_NO, .mask_request_host = "masked.example:${PORT}"};
  e2b_error err;
  json_t *f = create_fields(&n, &err);
  json_t *net = json_object_get(f, "network");
  CHECK(json_is_false(json_object_get(net, "allowPublicTraffic")));
  CHECK_STR(json_string_value(json_object_get(net, "maskRequestHost")), "masked.example:${PORT}");
  json_decref(f);
  refused(&n, 1, E2B_ERR_INVALID_ARGUMENT, "network.allow_public_traffic");
  n.allow_public_traffic = 0;
  refused(&n, 1, E2B_ERR_INVALID_ARGUMENT, "network.mask_request_host");
  const char *bad[] = {"", "a b.com", "h\xc3\xa9.com", "a:b:c", ":80"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    n.mask_request_host = bad[i];
    refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.mask_request_host");
  }
  n = (e2b_network){.allow_public_traffic = 7};
  refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.allow_public_traffic");
}

static void egress_proxy_shape(void) {
  e2b_egress_proxy ok = {"proxy.example.com:1080", "u", "p"};
  e2b_network n = {.egress_proxy = &ok};
  e2b_error err;
  json_t *f = create_fields(&n, &err);
  json_t *p = json_object_get(json_object_get(f, "network"), "egressProxy");
  CHECK_STR(json_string_value(json_object_get(p, "address")), "proxy.example.com:1080");
  CHECK_STR(json_string_value(json_object_get(p, "password")), "p");
  json_decref(f);
  e2b_egress_proxy noport = {"proxy.example.com", NULL, NULL}, zero = {"p.com:0", NULL, NULL};
  e2b_egress_proxy orphan = {"p.com:1080", NULL, "p"};
  n.egress_proxy = &noport;
  refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.egress_proxy.address");
  n.egress_proxy = &zero;
  refused(&n, 1, E2B_ERR_INVALID_ARGUMENT, "network.egress_proxy.address");
  n.egress_proxy = &orphan;
  refused(&n, 0, E2B_ERR_INVALID_ARGUMENT, "network.egress_proxy.password");
}

int main(void) {
  RUN(open_egress_is_internet_access);
  RUN(an_allow_list_denies_everything_else);
  RUN(a_deny_list_leaves_the_rest_open);
  RUN(allow_with_deny_is_unsupported);
  RUN(deny_takes_ips_and_cidrs_only);
  RUN(rules_become_transforms);
  RUN(rules_are_held_to_e2b_limits);
  RUN(placeholders_are_held_to_e2b_rules);
  RUN(ingress_only_at_create);
  RUN(egress_proxy_shape);
  return TESTING_DONE();
}
