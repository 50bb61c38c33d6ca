/* test_defaults.c — a zeroed options struct means the documented defaults:
 * a create is secure with internet access (E2B's defaults), a network
 * update keeps egress open, max_output 0 is 64 MiB, and a tri-state takes
 * only 0, E2B_YES or E2B_NO; idle_timeout_ms 0 is 90 s on every stream.
 * A command string is spelled as E2B runs one.
 * Nothing is sent: bodies are built, requests made and never stepped. */
#include "internal.h"
#include "loopback.h"
#include "testing.h"

#include <stdio.h>
#include <string.h>

/* The create body of o on the v1 route (which carries `secure`) or v2. */
static json_t *body_of(e2b_client *c, const e2b_create_opts *o, int v1, e2b_error *err) {
  return e2b_create_body(c, o, v1, err);
}

static int is_true(json_t *body, const char *key) { return json_is_true(json_object_get(body, key)); }
static int is_false(json_t *body, const char *key) { return json_is_false(json_object_get(body, key)); }

static void zeroed_create_is_secure_with_internet(e2b_client *c) {
  e2b_create_opts o = {0};
  e2b_error err;
  json_t *v1 = body_of(c, &o, 1, &err), *v2 = body_of(c, &o, 0, &err);
  CHECK(v1 && is_true(v1, "secure") && is_true(v1, "allow_internet_access"));
  CHECK(v2 && !json_object_get(v2, "secure") && is_true(v2, "allow_internet_access"));
  /* lifecycle left to E2B: nothing sent */
  CHECK(v2 && !json_object_get(v2, "autoPause") && !json_object_get(v2, "autoResume"));
  json_decref(v1);
  json_decref(v2);
}

static void yes_and_no_are_said(e2b_client *c) {
  e2b_create_opts o = {.secure = E2B_NO, .allow_internet_access = E2B_NO, .auto_pause = E2B_YES,
                       .auto_pause_memory = E2B_YES, .auto_resume = E2B_YES};
  e2b_error err;
  json_t *b = body_of(c, &o, 1, &err);
  CHECK(b && is_false(b, "secure") && is_false(b, "allow_internet_access") && is_true(b, "autoPause"));
  CHECK(b && is_true(b, "autoPauseMemory") && is_true(json_object_get(b, "autoResume"), "enabled"));
  json_decref(b);
  o = (e2b_create_opts){.auto_pause = E2B_NO};
  b = body_of(c, &o, 0, &err);
  CHECK(b && is_false(b, "autoPause"));
  json_decref(b);
}

static void other_values_name_their_field(e2b_client *c, e2b_sbx *sbx) {
  e2b_error err;
  e2b_create_opts o = {.secure = 2};
  CHECK(body_of(c, &o, 1, &err) == NULL && err.code == E2B_ERR_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "secure") != NULL);
  o = (e2b_create_opts){.allow_internet_access = 1 + 1};
  CHECK(e2b_sandbox_create(c, &o, &err) == NULL && strstr(err.message, "allow_internet_access"));
  e2b_network n = {.allow_internet_access = 7};
  CHECK(e2b_sandbox_set_network(c, "sbx", &n, &err) == NULL && err.code == E2B_ERR_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "network.allow_internet_access") != NULL);
  e2b_provision_opts po = {.create = {.auto_resume = -2}};
  CHECK(e2b_sandbox_provision(c, &po, &err) == NULL && strstr(err.message, "auto_resume"));
  (void)sbx;
}

/* The lifecycle combinations E2B refuses: one rule (e2b_lifecycle_check),
 * the same answer from a raw create and a provision, naming the field. */
static void lifecycle_refusals_are_one_rule(e2b_client *c) {
  static const struct {
    int pause, memory, resume;
    const char *field; /* NULL: allowed */
  } cases[] = {{E2B_NO, E2B_YES, 0, "lifecycle.keep_memory"},
               {0, E2B_NO, 0, "lifecycle.keep_memory"},
               {E2B_NO, 0, E2B_YES, "lifecycle.auto_resume"},
               {E2B_YES, E2B_NO, E2B_YES, "lifecycle.auto_resume"},
               {E2B_YES, E2B_NO, E2B_NO, NULL},
               {E2B_YES, E2B_YES, E2B_YES, NULL},
               {E2B_NO, 0, E2B_NO, NULL}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    e2b_error err, raw, prov;
    int refused = e2b_lifecycle_check(cases[i].pause, cases[i].memory, cases[i].resume, "create", &err) != 0;
    e2b_create_opts o = {.auto_pause = cases[i].pause, .auto_pause_memory = cases[i].memory,
                         .auto_resume = cases[i].resume};
    json_t *b = body_of(c, &o, 0, &raw);
    e2b_provision_opts po = {.create = o};
    e2b_req *r = e2b_sandbox_provision(c, &po, &prov);
    CHECK(refused == (cases[i].field != NULL) && (b == NULL) == refused && (r == NULL) == refused);
    if (refused) {
      CHECK_STR(err.field, cases[i].field);
      CHECK_STR(raw.field, cases[i].field);
      CHECK_STR(prov.field, cases[i].field);
    }
    json_decref(b);
    e2b_req_free(r);
  }
}

static void zeroed_requests_are_made(e2b_client *c, e2b_sbx *sbx) {
  e2b_error err;
  e2b_network n = {0};
  e2b_req *r = e2b_sandbox_set_network(c, "sbx", &n, &err);
  CHECK(r != NULL);
  e2b_req_free(r);
  e2b_provision_opts po = {0};
  CHECK((r = e2b_sandbox_provision(c, &po, &err)) != NULL);
  e2b_req_free(r);
  e2b_proc_opts p = {.cmd = "true"};
  CHECK((r = e2b_run(sbx, &p, NULL, 0, 0, &err)) != NULL); /* max_output 0: the default */
  e2b_req_free(r);
}

/* A listing's depth 0 is E2B_DEFAULT_LIST_DEPTH, sent as such; what envd's
 * uint32 cannot carry is refused naming depth, for files and volumes alike. */
static void zero_depth_is_the_default(e2b_client *c, e2b_sbx *sbx) {
  long depth = 0;
  e2b_error err;
  CHECK(e2b_list_depth(&depth, "files.list", &err) == 0 && depth == E2B_DEFAULT_LIST_DEPTH);
  e2b_req *r = e2b_fs_list(sbx, "/", 0, NULL, &err);
  CHECK(r != NULL);
  e2b_req_free(r);
  const long bad[] = {-1, 0x100000000L};
  for (size_t i = 0; i < 2; i++) {
    CHECK(e2b_fs_list(sbx, "/", bad[i], NULL, &err) == NULL && err.code == E2B_ERR_INVALID_ARGUMENT);
    CHECK_STR(err.field, "depth");
    CHECK(e2b_vol_list(c, "vol", "tok", "/", bad[i], &err) == NULL && err.code == E2B_ERR_INVALID_ARGUMENT);
    CHECK_STR(err.field, "depth");
  }
  CHECK((r = e2b_vol_list(c, "vol", "tok", "/", 0, &err)) != NULL);
  e2b_req_free(r);
}

static void zero_max_output_is_the_default(void) {
  e2b_output *o = e2b_output_new(0, E2B_KEEP_ALL, 0);
  CHECK(o != NULL);
  static char chunk[1 << 20];
  e2b_error err;
  int past = 0;
  for (int i = 0; o && i < 64 && !past; i++) past = e2b_output_add(o, E2B_EVENT_STDOUT, chunk, sizeof chunk, &err) != 0;
  CHECK(!past); /* 64 MiB fit */
  CHECK(o && e2b_output_add(o, E2B_EVENT_STDOUT, chunk, 1, &err) == 1); /* one byte more does not */
  e2b_output_free(o);
}

static void shell_string_is_bash_l_c(e2b_sbx *sbx) {
  e2b_proc_opts o = {.shell = "echo $((6*7))"}, tmp;
  const char *argv[3];
  const e2b_proc_opts *s = e2b_proc_opts_spelled(&o, &tmp, argv);
  CHECK_STR(s->cmd, "/bin/bash");
  CHECK(s->arg_count == 3 && strcmp(s->args[0], "-l") == 0 && strcmp(s->args[1], "-c") == 0);
  CHECK_STR(s->args[2], "echo $((6*7))");
  /* kept, it is started as a kept command string (the wrapper runs it) */
  e2b_wrapped w;
  CHECK(e2b_wrap(&w, &o, "/tmp/.e2b-proc/ab", 0, NULL, 0, NULL) == 0);
  CHECK(w.opts.arg_count == 6 && strcmp(w.opts.args[3], "e2b-sh") == 0 && !w.announces);
  e2b_wrapped_free(&w);
  e2b_error err;
  e2b_proc_opts both = {.shell = "true", .cmd = "true"}, empty = {.shell = ""};
  CHECK(e2b_proc_start(sbx, &both, &err) == NULL && strstr(err.message, "shell") != NULL);
  CHECK(e2b_proc_track(sbx, &empty, 0, &err) == NULL && strstr(err.message, "shell") != NULL);
  e2b_req *r = e2b_proc_track(sbx, &o, 0, &err);
  CHECK(r != NULL);
  e2b_req_free(r);
}

/* The stream's request says its keepalive interval (header) and holds its
 * idle budget; 1 when both are as expected. */
static int stream_budget_is(const e2b_req *r, long idle_ms, const char *keepalive) {
  if (!r || r->idle_ms != idle_ms) return 0;
  char want[64];
  snprintf(want, sizeof want, "Keepalive-Ping-Interval: %s", keepalive);
  for (const struct curl_slist *h = r->headers; h; h = h->next)
    if (strcmp(h->data, want) == 0) return 1;
  return 0;
}

/* idle_timeout_ms 0 is E2B_DEFAULT_IDLE_TIMEOUT_MS, applied in one place
 * (e2b_idle_budget_ms): a plain stream and every stream a kept command's
 * op makes get it, with the keepalive it implies; a value given is kept. */
static void zero_idle_is_the_default(e2b_sbx *sbx) {
  CHECK(e2b_idle_budget_ms(0) == E2B_DEFAULT_IDLE_TIMEOUT_MS);
  CHECK(e2b_idle_budget_ms(1234) == 1234);
  e2b_error err;
  e2b_proc_opts o = {.cmd = "true"};
  e2b_req *r = e2b_proc_start(sbx, &o, &err);
  CHECK(stream_budget_is(r, E2B_DEFAULT_IDLE_TIMEOUT_MS, "30"));
  e2b_req_free(r);
  o.idle_timeout_ms = 6000;
  CHECK(stream_budget_is(r = e2b_proc_start(sbx, &o, &err), 6000, "2"));
  e2b_req_free(r);
  o.idle_timeout_ms = 0;
  r = e2b_proc_track(sbx, &o, 0, &err);
  int streams = 0;
  for (const size_t *at = r ? r->kind->children : NULL; at && *at != E2B_FIELDS_END; at++) {
    const e2b_req *child = *(e2b_req *const *)((const char *)r->state + *at);
    if (!child) continue;
    CHECK(stream_budget_is(child, E2B_DEFAULT_IDLE_TIMEOUT_MS, "30"));
    streams++;
  }
  CHECK(streams == 1); /* the kept command's own Start stream */
  e2b_req_free(r);
}

static void zeroed_options_are_the_defaults(void) {
  loopback_env env;
  CHECK(loopback_env_open(&env) == 0);
  if (!env.sbx) return;
  zeroed_create_is_secure_with_internet(env.client);
  yes_and_no_are_said(env.client);
  other_values_name_their_field(env.client, env.sbx);
  lifecycle_refusals_are_one_rule(env.client);
  zeroed_requests_are_made(env.client, env.sbx);
  shell_string_is_bash_l_c(env.sbx);
  zero_max_output_is_the_default();
  zero_depth_is_the_default(env.client, env.sbx);
  zero_idle_is_the_default(env.sbx);
  CHECK(loopback_env_close(&env) == 0);
}

int main(void) {
  RUN(zeroed_options_are_the_defaults);
  return TESTING_DONE();
}
