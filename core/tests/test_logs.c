/* test_logs.c — a sandbox's logs are the peer's words, so they are bounded:
 * at most E2B_LOGS_MAX entries whatever the answer holds, 4 KiB of message
 * cut on a UTF-8 boundary, 32 fields; a malformed entry is a protocol error;
 * bad options fail before anything is sent. A loopback server plays E2B. */
#include "internal.h"
#include "loopback.h"
#include "testing.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Steps until the request head came; returns the connection, the head in buf. */
static int serve_until_request(e2b_loop *loop, int lfd, char *buf, size_t size) {
  int conn = -1;
  size_t got = 0;
  for (int i = 0; i < 500; i++) {
    e2b_loop_step(loop, 10);
    if (conn < 0) conn = accept(lfd, NULL, NULL);
    if (conn < 0) continue;
    ssize_t n = recv(conn, buf + got, size - 1 - got, MSG_DONTWAIT);
    if (n > 0) got += (size_t)n;
    buf[got] = '\0';
    if (strstr(buf, "\r\n\r\n")) return conn;
  }
  return conn;
}

/* An answer of n entries; the first with a long message of 2-byte UTF-8 and
 * many fields (one a number); bad: the second entry has no message. */
static char *answer(size_t n, int bad) {
  json_t *logs = json_array();
  char *longmsg = malloc(10001);
  for (int i = 0; i < 5000; i++) memcpy(longmsg + 2 * i, "\xc3\xa9", 2);
  longmsg[10000] = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *fields = json_object();
    for (int k = 0; i == 0 && k < 40; k++) {
      char key[16];
      snprintf(key, sizeof key, "k%d", k);
      json_object_set_new(fields, key, k == 0 ? json_integer(42) : json_string("v"));
    }
    json_t *e = json_pack("{s:s, s:s, s:o}", "timestamp", "2026-01-02T03:04:05.678Z", "level", "info",
                          "fields", fields);
    if (!(bad && i == 1)) json_object_set_new(e, "message", json_string(i == 0 ? longmsg : "line"));
    json_array_append_new(logs, e);
  }
  free(longmsg);
  json_t *body = json_pack("{s:o}", "logs", logs);
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  return text;
}

/* Runs one logs request against the server with body; the request's head in head. */
static e2b_req *logs_with(e2b_loop *loop, e2b_client *c, int lfd, const char *body, char *head, size_t size) {
  e2b_error err;
  e2b_req *req = e2b_sandbox_logs(c, "sbxundertest", NULL, &err);
  CHECK(req != NULL);
  if (!req) return NULL;
  int conn = serve_until_request(loop, lfd, head, size);
  CHECK(conn >= 0);
  char hdr[128];
  snprintf(hdr, sizeof hdr, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
           strlen(body));
  if (conn >= 0 && (send(conn, hdr, strlen(hdr), 0) < 0 || send(conn, body, strlen(body), 0) < 0)) CHECK(0);
  for (int i = 0; i < 500 && !e2b_req_done(req); i++) e2b_loop_step(loop, 10);
  if (conn >= 0) close(conn);
  CHECK(e2b_req_done(req));
  return req;
}

static void answers_are_bounded(e2b_loop *loop, e2b_client *c, int lfd) {
  char head[4096];
  char *body = answer(E2B_LOGS_MAX + 200, 0);
  e2b_req *req = logs_with(loop, c, lfd, body, head, sizeof head);
  free(body);
  CHECK(strstr(head, "GET /v2/sandboxes/sbxundertest/logs?limit=1000 ") != NULL);
  CHECK(req && e2b_req_error(req) == NULL);
  CHECK(e2b_req_log_count(req) == E2B_LOGS_MAX);
  const e2b_log_entry *e = e2b_req_log_at(req, 0);
  CHECK(e && strlen(e->message) <= 4096 && strlen(e->message) >= 4094 && strlen(e->message) % 2 == 0);
  CHECK(e && e2b_utf8_valid(e->message, strlen(e->message)));
  CHECK(e && e->fields.count == 32 && e->timestamp_ms == 1767323045678LL);
  CHECK(e && strcmp(e->level, "info") == 0);
  int number_as_text = 0;
  for (size_t k = 0; e && k < e->fields.count; k++)
    if (strcmp(e->fields.keys[k], "k0") == 0) number_as_text = strcmp(e->fields.values[k], "42") == 0;
  CHECK(number_as_text);
  CHECK(e2b_req_log_at(req, E2B_LOGS_MAX) == NULL);
  e2b_req_free(req);
  body = answer(3, 1);
  req = logs_with(loop, c, lfd, body, head, sizeof head);
  free(body);
  CHECK(req && e2b_req_error(req) && e2b_req_error(req)->code == E2B_ERR_PROTOCOL);
  e2b_req_free(req);
}

static void bad_options_fail_before_sending(e2b_client *c) {
  char search[300];
  memset(search, 'a', sizeof search - 1);
  search[sizeof search - 1] = 0;
  const e2b_logs_opts bad[] = {{.limit = E2B_LOGS_MAX + 1}, {.limit = -1}, {.cursor_ms = -1},
                               {.level = "loud"}, {.search = search}};
  const char *named[] = {"limit", "limit", "cursor_ms", "level", "search"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    e2b_error err;
    CHECK(e2b_sandbox_logs(c, "sbxundertest", &bad[i], &err) == NULL);
    CHECK(err.code == E2B_ERR_INVALID_ARGUMENT && strstr(err.message, named[i]) != NULL);
  }
  e2b_error err;
  CHECK(e2b_sandbox_logs(c, "Not An Id", NULL, &err) == NULL && err.code == E2B_ERR_INVALID_ARGUMENT);
}

static void logs_are_bounded(void) {
  int port = 0, lfd = listen_loopback(&port);
  CHECK(lfd >= 0);
  if (lfd < 0) return;
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  e2b_config cfg = {.api_key = "test-key", .api_url = url, .max_retries = E2B_NO_RETRY};
  e2b_client *c = loop ? e2b_client_new(loop, &cfg, &err) : NULL;
  CHECK(c != NULL);
  if (c) {
    answers_are_bounded(loop, c, lfd);
    bad_options_fail_before_sending(c);
    e2b_client_release(c);
  }
  if (loop) e2b_loop_release(loop);
  close(lfd);
}

int main(void) {
  RUN(logs_are_bounded);
  return TESTING_DONE();
}
