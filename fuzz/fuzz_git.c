/* fuzz_git.c — libFuzzer target for core/src/envd/git.c: the reader of `git status
 * --porcelain=v2 --branch -z`, whose bytes a sandbox controls, and the value
 * checks. Every path and header it hands back must lie inside the input,
 * entry kinds and status letters must be ones git writes, and a refusal
 * always says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "e2b.h"

typedef struct {
  const char *buf;
  size_t len;
} span;

static void inside(const span *in, const char *p, size_t n) {
  if (!p) {
    if (n) abort();
    return;
  }
  if (p < in->buf || p + n > in->buf + in->len) abort();
}

static int check_entry(void *ud, const e2b_git_entry *e) {
  const span *in = ud;
  if (!strchr("12u?!", e->kind) || !e->kind) abort();
  if (!e->xy[0] || !e->xy[1] || !strchr(".MTADRCU?!", e->xy[0]) || !strchr(".MTADRCU?!", e->xy[1])) abort();
  if (!e->path || !e->path_len) abort();
  inside(in, e->path, e->path_len);
  inside(in, e->orig, e->orig_len);
  if ((e->kind == '2') != (e->orig != NULL)) abort();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  span in = {(const char *)data, size};
  e2b_git_head h;
  const char *why = NULL;
  int r = e2b_git_status_parse(in.buf, in.len, &h, check_entry, &in, &why);
  if ((r == -1) != (why != NULL)) abort();
  if (r == 0) {
    inside(&in, h.oid, h.oid_len);
    inside(&in, h.branch, h.branch_len);
    inside(&in, h.upstream, h.upstream_len);
    if (h.ahead < 0 || h.behind < 0 || (h.detached && h.branch)) abort();
  }
  for (int kind = E2B_GIT_REF; kind <= E2B_GIT_KEY; kind++) {
    const char *reason = e2b_git_check((e2b_git_value)kind, in.buf, in.len);
    if (reason && !*reason) abort();
  }
  return 0;
}
