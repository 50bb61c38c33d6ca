/* gone.c — what an envd failure says about its sandbox. E2B's edge answers
 * 502/503 for the envd of a sandbox that is gone or paused, the same as for
 * one it briefly cannot reach. One look at the control plane tells them
 * apart: gone becomes E2B_ERR_NOT_FOUND, paused keeps its kind with a hint,
 * and "could not look" keeps the original error (never "not there"). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gone_state {
  e2b_sbx *sbx;
  e2b_req *get;
  e2b_error orig;
} gone_state;

static void append(e2b_error *err, const char *text) {
  size_t n = strlen(err->message);
  if (n < sizeof err->message - 1) snprintf(err->message + n, sizeof err->message - n, "%s", text);
}

static void gone_advance(e2b_req *op) {
  gone_state *s = op->state;
  if (!e2b_req_done(s->get)) return;
  const e2b_error *look = e2b_req_error(s->get);
  const e2b_sandbox_info *sb = look ? NULL : e2b_req_sandbox(s->get);
  e2b_error out = s->orig;
  if (look && look->code == E2B_ERR_NOT_FOUND) {
    e2b_err_set(&out, E2B_ERR_NOT_FOUND, s->orig.op, "sandbox %s is gone (killed or timed out): %.300s",
                s->sbx->sandbox_id, s->orig.message);
    out.status = s->orig.status;
  } else if (sb && sb->state == E2B_STATE_PAUSED) {
    append(&out, " (the sandbox is paused: resume it with sbx:connect() or client:resume())");
    out.retryable = 0;
  }
  e2b_op_finish(op, &out);
}

static const e2b_op_kind gone_kind = {.size = sizeof(gone_state),
                                      .children = E2B_FIELDS(offsetof(gone_state, get)),
                                      .holds = E2B_OP_HOLDS_SBX, .ref = offsetof(gone_state, sbx)};

e2b_req *e2b_sbx_explain(e2b_sbx *sbx, const e2b_error *err) {
  if (!sbx || !err || (err->status != 502 && err->status != 503)) return NULL;
  e2b_error e;
  e2b_req *op = e2b_op_new(&gone_kind, NULL, sbx, err->op[0] ? err->op : "envd", gone_advance, NULL, &e);
  if (!op) return NULL;
  gone_state *s = op->state;
  s->orig = *err;
  if (!(s->get = e2b_op_child(op, e2b_sandbox_get(sbx->client, sbx->sandbox_id, &e)))) {
    e2b_req_free(op);
    return NULL;
  }
  return op;
}
