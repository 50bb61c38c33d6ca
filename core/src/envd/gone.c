/* gone.c — what an envd failure says about its sandbox. E2B's edge answers
 * 502/503 for the envd of a sandbox that is gone or paused, the same as for
 * one it briefly cannot reach, and a sandbox killed under an open stream
 * cuts it. One look at the control plane tells them apart: gone becomes
 * E2B_ERR_NOT_FOUND, paused keeps its kind with a hint, and "could not
 * look" keeps the original error (never "not there"). Gone is final: the
 * handle remembers it, and no envd request of it is sent again
 * (prepare.c), so every reader of the sandbox ends with the same error. */
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
    e2b_err_set(&out, E2B_ERR_NOT_FOUND, s->orig.op,
                "sandbox %s ended (it was killed or reached its timeout): %.300s", s->sbx->sandbox_id,
                s->orig.message);
    out.status = s->orig.status;
    if (!s->sbx->gone.code) s->sbx->gone = out;
  } else if (sb && sb->state == E2B_STATE_PAUSED) {
    append(&out, " (the sandbox is paused: resume it with sbx:connect() or client:resume())");
    out.retryable = 0;
  }
  e2b_op_finish(op, &out);
}

static const e2b_op_kind gone_kind = {.size = sizeof(gone_state),
                                      .children = E2B_FIELDS(offsetof(gone_state, get)),
                                      .holds = E2B_OP_HOLDS_SBX, .ref = offsetof(gone_state, sbx)};

/* 502/503 from the edge, or a transfer cut with no answer at all (a
 * sandbox killed under a stream): either may be the sandbox's end. */
int e2b_envd_looks_dead(const e2b_error *err) {
  if (!err) return 0;
  if (err->status == 502 || err->status == 503) return 1;
  return err->status == 0 && err->code == E2B_ERR_UNAVAILABLE;
}

const e2b_error *e2b_sbx_gone(const e2b_sbx *sbx) {
  return sbx && sbx->gone.code ? &sbx->gone : NULL;
}

e2b_req *e2b_sbx_explain(e2b_sbx *sbx, const e2b_error *err) {
  if (!sbx || sbx->gone.code || !e2b_envd_looks_dead(err)) return NULL;
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
