/* op.c — composite requests: an operation made of several calls (find a
 * sandbox through every page, create-then-verify, wait for readiness, run a
 * setup script...). A composite is an e2b_req without a transfer of its own:
 * its advance function runs whenever one of its children progresses or its
 * timer fires, and it finishes like any request, so callers wait on it the
 * same way whatever it does underneath. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

e2b_req *e2b_op_new(e2b_loop *loop, const char *op, req_advance_fn advance, void *state,
                    req_state_free_fn state_free, e2b_error *err) {
  e2b_req *req = calloc(1, sizeof *req);
  if (!req) {
    if (state_free) state_free(state);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return NULL;
  }
  e2b_req_init(req, loop, op);
  req->advance = advance;
  req->state = state;
  req->state_free = state_free;
  e2b_envelope_decoder_init(&req->decoder, E2B_MAX_ENVELOPE);
  e2b_op_kick(req); /* the first step runs from the loop, like every later one */
  return req;
}

e2b_req *e2b_op_child(e2b_req *op, e2b_req *child) {
  if (child) child->parent = op;
  return child;
}

void e2b_op_kick(e2b_req *op) { e2b_req_mark_dirty(op); }

void e2b_req_free_all(e2b_req **reqs, size_t n) {
  for (size_t i = 0; i < n; i++) e2b_req_free(reqs[i]);
  free(reqs);
}

void e2b_op_finish(e2b_req *op, const e2b_error *err) {
  if (op->done) return;
  e2b_req_disarm_timer(op);
  if (err && err->code != E2B_OK) {
    op->err = *err;
    /* The label is the caller's call; a sub-step's name moves into the message. */
    if (err->op[0] && strcmp(err->op, op->op) != 0) {
      size_t n = (size_t)snprintf(op->err.message, sizeof op->err.message, "%s: ", err->op);
      if (n < sizeof op->err.message)
        snprintf(op->err.message + n, sizeof op->err.message - n, "%.*s",
                 (int)(sizeof op->err.message - n - 1), err->message);
    }
    snprintf(op->err.op, sizeof op->err.op, "%s", op->op);
  }
  op->done = 1;
  e2b_req_mark_dirty(op);
}
