/* fuzz_template.c — libFuzzer target for core/src/template/build.c's readers of
 * a template call's answer (E2B's JSON; a build's log lines and its reason
 * carry what commands in the build sandbox printed) and for template.c's
 * shell quoting. Byte 0 picks: 0-4 an answer kind, whose every text and
 * list must stay within its bound; 5 the quoting, which sh must read back
 * as the same bytes; 6 the name and tag checks, which accept only E2B's
 * characters. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void bounded(const char *s, size_t max) {
  if (s && strlen(s) > max) abort();
}

static void check_answer(const e2b_template_answer *a) {
  if (!a) return;
  if (a->tag_count > 64 || a->headers.count > 32 || a->log_count > E2B_LOGS_MAX ||
      a->tag_list_count > E2B_LOGS_MAX)
    abort();
  bounded(a->reason, 4096);
  bounded(a->reason_step, 64);
  bounded(a->template_id, 256);
  bounded(a->build_id, 256);
  for (size_t i = 0; i < a->log_count; i++) {
    bounded(a->logs[i].message, 4096);
    bounded(a->logs[i].level, 16);
    if (!a->logs[i].message || !a->logs[i].level) abort();
  }
  for (size_t i = 0; i < a->headers.count; i++) {
    if (!a->headers.keys[i] || !a->headers.values[i]) abort();
  }
  if (a->status && strcmp(a->status, "building") && strcmp(a->status, "waiting") && strcmp(a->status, "ready") &&
      strcmp(a->status, "error"))
    abort();
}

static void answer(int kind, const char *json, size_t len) {
  json_t *body = json_loadb(json, len, JSON_DECODE_ANY, NULL);
  e2b_req *req = calloc(1, sizeof *req);
  e2b_error err;
  memset(&err, 0, sizeof err);
  if (!req) abort();
  snprintf(req->op, sizeof req->op, "fuzz");
  req->result_kind = E2B_RESULT_TEMPLATE;
  int rc = e2b_template_parse_answer(req, kind, body, &err);
  if (rc == 0) check_answer(req->result);
  else if (!err.message[0]) abort(); /* a refusal says why */
  if (req->result_free) req->result_free(req->result);
  free(req);
  json_decref(body);
}

/* sh's reading of a quoted word: plain text, or '...' pieces with "'" between. */
static void quote_round_trip(const char *s, size_t len) {
  char *q = e2b_template_quote(s, len);
  if (!q) {
    if (!memchr(s, 0, len)) abort(); /* only a NUL is refused */
    return;
  }
  size_t qn = strlen(q), o = 0;
  char *back = malloc(qn + 1);
  if (!back) abort();
  if (qn && q[0] != '\'') {
    if (qn != len || memcmp(q, s, len)) abort();
    for (size_t i = 0; i < qn; i++)
      if (strchr(" \t\n;&|<>()$`\\\"'*?[]#~{}!", q[i])) abort(); /* plain words hold nothing sh reads */
  } else {
    for (size_t i = 0; i < qn;) {
      if (q[i] == '\'') {
        size_t j = i + 1;
        while (j < qn && q[j] != '\'') back[o++] = q[j++];
        if (j >= qn) abort(); /* unterminated */
        i = j + 1;
      } else if (q[i] == '"' && i + 2 < qn && q[i + 1] == '\'' && q[i + 2] == '"') {
        back[o++] = '\'';
        i += 3;
      } else {
        abort();
      }
    }
    if (o != len || memcmp(back, s, len)) abort();
  }
  free(back);
  free(q);
}

static void names(const char *s, size_t len) {
  char *z = malloc(len + 1);
  if (!z) abort();
  memcpy(z, s, len);
  z[len] = 0;
  if (e2b_template_name_check(z, "name", NULL) == 0) {
    for (const char *p = z; *p; p++)
      if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/", *p)) abort();
  }
  if (e2b_template_tag_check(z, "tag", NULL) == 0 && strpbrk(z, ":/")) abort();
  free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *s = (const char *)data + 1;
  size_t n = size - 1;
  switch (data[0] % 7) {
  case 5: quote_round_trip(s, n); break;
  case 6: names(s, n); break;
  default: answer(data[0] % 7, s, n); break;
  }
  return 0;
}
