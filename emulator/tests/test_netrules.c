/* test_netrules.c — network.rules: what create/PUT accept, which key's
 * headers a host gets, and how reqstream frames and rewrites the requests
 * of one proxy connection (keep-alive, pipelining, smuggling attempts). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "netrules.h"
#include "reqstream.h"
#include "testing.h"

static json_t *checked(const char *text) {
  json_t *in = json_loads(text, JSON_ALLOW_NUL, NULL);
  char err[512] = "";
  json_t *out = netrules_check(in, err, sizeof err);
  json_decref(in);
  return out;
}

static void test_checks_refuse_what_could_inject_or_unframe(void) {
  const char *bad[] = {
      "{\"a.com\": [{\"transform\": {\"headers\": {\"X\": \"a\\r\\nX-Evil: 1\"}}}]}",
      "{\"a.com\": [{\"transform\": {\"headers\": {\"X\": \"a\\nb\"}}}]}",
      "{\"a.com\": [{\"transform\": {\"headers\": {\"X\": \"a\\u0000b\"}}}]}",
      "{\"a.com\": [{\"transform\": {\"headers\": {\"X Y\": \"a\"}}}]}",
      "{\"a.com\": [{\"transform\": {\"headers\": {\"Transfer-Encoding\": \"chunked\"}}}]}",
      "{\"a.com\": [{\"transform\": {\"headers\": {\"content-length\": \"1\"}}}]}",
      "{\"a.com\": [{\"transform\": {\"headers\": {\"X\": 1}}}]}",
      "{\"a.com\": [{\"transform\": {\"body\": \"x\"}}]}",
      "{\"a.com\": [{\"other\": 1}]}",
      "{\"a.com\": {}}",
      "{\"*\": []}",
      "{\"*.a.com\": []}", /* E2B: no wildcard key */
      "{\"*.\": []}",
      "{\"a.*.com\": []}",
      "{\"-a.com\": []}",
      "{\"a.com\": [{\"transform\": {\"headers\": {\"X\": \"${e2b.secrets.k\"}}}]}",
      "{\"a..com\": []}",
      "{\"a.com\": [], \"A.COM\": []}",
      "{\"a.com\": [{}, {}]}", /* E2B: one rule per domain */
      "{\"127.0.0.1\": []}",    /* E2B: domain names only, never an IP address */
      "{\"::1\": []}",
      "{\"fe80::1\": []}",
      "[]",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    json_t *r = checked(bad[i]);
    CHECK(r == NULL);
    json_decref(r);
  }
  json_t *ok = checked("{\"API.Example.com\": [{\"transform\": {\"headers\": {\"X-A\": \"v\\tw\"}}}],"
                       " \"B.com.\": [], \"1.2.3\": [], \"_x.c.com_\": []}");
  CHECK(ok && json_object_get(ok, "api.example.com") && json_object_get(ok, "b.com") && json_object_get(ok, "_x.c.com_"));
  json_decref(ok);
  json_t *none = checked("null");
  CHECK(none && json_object_size(none) == 0);
  json_decref(none);
}

static const char *one(json_t *rules, const char *host) {
  static char buf[256];
  netrules_set s;
  netrules_lookup(rules, host, &s);
  snprintf(buf, sizeof buf, "%s", s.n ? s.h[0].value : "-");
  netrules_set_clear(&s);
  return buf;
}

static void test_a_key_is_its_own_name_only(void) {
  json_t *r = checked("{\"example.com\": [{\"transform\": {\"headers\": {\"X\": \"apex\"}}}],"
                      " \"api.example.com\": [{\"transform\": {\"headers\": {\"X\": \"exact\"}}}]}");
  CHECK_STR(one(r, "api.example.com"), "exact");
  CHECK_STR(one(r, "example.com"), "apex");
  CHECK_STR(one(r, "v1.api.example.com"), "-");
  CHECK_STR(one(r, "badexample.com"), "-");
  json_decref(r);
  /* a wildcard key an older e2b-local kept on disk matches nothing */
  r = json_loads("{\"*.example.com\": [{\"transform\": {\"headers\": {\"X\": \"wild\"}}}]}", 0, NULL);
  CHECK_STR(one(r, "a.example.com"), "-");
  CHECK_STR(one(r, "*.example.com"), "-");
  json_decref(r);
  /* a record with more rules than E2B takes (an older e2b-local wrote it):
   * its first rule only, as every bound is applied again on reading */
  r = json_loads("{\"a.com\": [{\"transform\": {\"headers\": {\"X-A\": \"1\", \"X-B\": \"2\"}}},"
              " {\"transform\": {\"headers\": {\"x-a\": \"3\"}}}]}", 0, NULL);
  netrules_set s;
  CHECK(netrules_lookup(r, "a.com", &s) == 2);
  CHECK_STR(s.h[0].value, "1");
  CHECK(netrules_set_has(&s, "X-B", 3) && netrules_set_has(&s, "x-a", 3) && !netrules_set_has(&s, "X-C", 3));
  netrules_set_clear(&s);
  json_decref(r);
  /* rules read back from disk are checked again: a bad value is skipped */
  json_t *disk = json_loads("{\"a.com\": [{\"transform\": {\"headers\": {\"X\": \"a\\r\\nY: b\", \"Z\": \"ok\"}}}]}", 0, NULL);
  CHECK(netrules_lookup(disk, "a.com", &s) == 1);
  CHECK_STR(s.h[0].name, "Z");
  netrules_set_clear(&s);
  json_decref(disk);
}

static void rules_fn(void *ctx, const char *host, netrules_set *out) {
  netrules_lookup((json_t *)ctx, host, out);
}

/* The stream of requests in, all at once: what goes upstream, and the result. */
static int feed(json_t *rules, int tunnel, const char *in, char *out, size_t *outlen) {
  reqstream rs;
  reqstream_init(&rs, "a.com", 80, tunnel, rules_fn, rules);
  char buf[16384];
  size_t n = strlen(in);
  memcpy(buf, in, n);
  *outlen = 0;
  int rc = reqstream_feed(&rs, buf, &n, sizeof buf, out, outlen, 65536);
  out[*outlen] = '\0';
  return rc;
}

static void test_every_request_of_a_connection_is_rewritten(void) {
  json_t *r = checked("{\"a.com\": [{\"transform\": {\"headers\": {\"Authorization\": \"Bearer R\"}}}]}");
  static char out[65537];
  size_t n;
  int rc = feed(r, 0,
                "GET http://a.com/1 HTTP/1.1\r\nHost: a.com\r\nauthorization: mine\r\nProxy-Connection: keep-alive\r\n\r\n"
                "POST http://A.com./2?q HTTP/1.1\r\nContent-Length: 5\r\n\r\nGET /"
                "POST http://a.com:80 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                "4;x=y\r\nGET \r\n0\r\nT: 1\r\n\r\n"
                "GET http://a.com/4 HTTP/1.1\r\n\r\n",
                out, &n);
  CHECK(rc == REQSTREAM_MORE);
  CHECK_STR(out, "GET /1 HTTP/1.1\r\nHost: a.com\r\nAuthorization: Bearer R\r\n\r\n"
                 "POST /2?q HTTP/1.1\r\nContent-Length: 5\r\nHost: A.com.\r\nAuthorization: Bearer R\r\n\r\nGET /"
                 "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: a.com:80\r\nAuthorization: Bearer R\r\n\r\n"
                 "4;x=y\r\nGET \r\n0\r\nT: 1\r\n\r\n"
                 "GET /4 HTTP/1.1\r\nHost: a.com\r\nAuthorization: Bearer R\r\n\r\n");
  /* another destination ends the stream after what came before it */
  rc = feed(r, 0, "GET http://a.com/ HTTP/1.1\r\n\r\nGET http://b.com/ HTTP/1.1\r\n\r\n", out, &n);
  CHECK(rc == REQSTREAM_END);
  CHECK_STR(out, "GET / HTTP/1.1\r\nHost: a.com\r\nAuthorization: Bearer R\r\n\r\n");
  /* inside a tunnel: origin-form as sent, headers rewritten; TLS untouched */
  rc = feed(r, 1, "GET /x HTTP/1.1\r\nHost: a.com\r\n\r\n", out, &n);
  CHECK_STR(out, "GET /x HTTP/1.1\r\nHost: a.com\r\nAuthorization: Bearer R\r\n\r\n");
  rc = feed(r, 1, "\x16\x03\x01GET /x HTTP/1.1\r\n\r\n", out, &n);
  CHECK(rc == REQSTREAM_MORE && n == 22 && memcmp(out, "\x16\x03\x01GET", 6) == 0);
  json_decref(r);
}

static void test_ambiguous_or_malformed_requests_end_the_stream(void) {
  const char *bad[] = {
      "POST http://a.com/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST http://a.com/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
      "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
      "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
      "GET http://a.com/ HTTP/1.1\r\nX: a\nContent-Length: 5\r\n\r\n",
      "GET http://a.com/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",
      "GET http://a.com/ HTTP/1.1\r\nBad Name: a\r\n\r\n",
      "GET http://a.com/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
      "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "POST http://a.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
      "GET http://a.com/ HTTP/2\r\n\r\n",
  };
  static char out[65537];
  size_t n;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(feed(NULL, 0, bad[i], out, &n) == REQSTREAM_BAD);
  /* a head that never ends within the buffer */
  char big[16385]; /* fills feed()'s 16384-byte buffer */
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  memcpy(big, "GET http://a.com/ HTTP/1.1\r\nX: ", 31);
  CHECK(feed(NULL, 0, big, out, &n) == REQSTREAM_BAD);
}

int main(void) {
  RUN(test_checks_refuse_what_could_inject_or_unframe);
  RUN(test_a_key_is_its_own_name_only);
  RUN(test_every_request_of_a_connection_is_rewritten);
  RUN(test_ambiguous_or_malformed_requests_end_the_stream);
  return TESTING_DONE();
}
