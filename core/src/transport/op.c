/* op.c — composite requests: an operation made of several calls (find a
 * sandbox through every page, create-then-verify, wait for readiness, run a
 * setup script...). A composite is an e2b_req without a transfer of its own:
 * its advance function runs whenever one of its children progresses or its
 * timer fires, and it finishes like any request, so callers wait on it the
 * same way whatever it does underneath. It also owns what its state owns:
 * the op's kind (internal.h) lists it, and freeing the op frees it all,
 * finished or mid-flight, so no composite has a free function of its own. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A field of a composite's state, by its offset. */
static void *at(void *state, size_t offset) { return (char *)state + offset; }

/* Frees each array of children in a fanouts list, and the array. */
static void free_fanouts(void *s, const size_t *list) {
  for (const size_t *f = list; f && *f != E2B_FIELDS_END; f += 2) {
    e2b_req **reqs = *(e2b_req ***)at(s, f[0]);
    for (size_t i = 0, n = *(size_t *)at(s, f[1]); i < n; i++) e2b_req_release(reqs[i]);
    free(reqs);
  }
}

/* e2b_req_free's call for a composite: everything its kind says it owns. */
static void op_state_free(e2b_req *op) {
  const e2b_op_kind *k = op->kind;
  void *s = op->state;
  if (k->release) k->release(s);
  for (const size_t *f = k->children; f && *f != E2B_FIELDS_END; f++) e2b_req_release(*(e2b_req **)at(s, *f));
  free_fanouts(s, k->fanouts);
  for (const size_t *f = k->kvs; f && *f != E2B_FIELDS_END; f += 2)
    e2b_kv_free(*(e2b_kv **)at(s, f[0]), *(size_t *)at(s, f[1]));
  for (const size_t *f = k->bufs; f && *f != E2B_FIELDS_END; f++) e2b_growbuf_free(at(s, *f));
  e2b_free_fields(s, k->allocs);
  if (k->holds == E2B_OP_HOLDS_CLIENT) e2b_client_release(*(e2b_client **)at(s, k->ref));
  if (k->holds == E2B_OP_HOLDS_SBX) e2b_sbx_unref(*(e2b_sbx **)at(s, k->ref));
  free(s);
}

e2b_req *e2b_op_new(const e2b_op_kind *kind, e2b_client *c, e2b_sbx *sbx, const char *op,
                    req_advance_fn advance, const char *key, e2b_error *err) {
  e2b_req *req = calloc(1, sizeof *req);
  void *state = req ? calloc(1, kind->size) : NULL;
  if (!state) {
    free(req);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return NULL;
  }
  e2b_req_init(req, c ? c->loop : sbx->client->loop, op);
  req->advance = advance;
  req->state = state;
  req->kind = kind;
  req->state_free = op_state_free;
  if (kind->holds == E2B_OP_HOLDS_CLIENT) e2b_client_retain(*(e2b_client **)at(state, kind->ref) = c);
  if (kind->holds == E2B_OP_HOLDS_SBX) e2b_sbx_retain(*(e2b_sbx **)at(state, kind->ref) = sbx);
  e2b_envelope_decoder_init(&req->xfer.decoder, E2B_MAX_ENVELOPE);
  e2b_op_kick(req); /* the first step runs from the loop, like every later one */
  if (key && !(*(char **)at(state, kind->key) = strdup(key))) return e2b_op_nomem(req, err);
  return req;
}

e2b_req *e2b_op_nomem(e2b_req *op, e2b_error *err) {
  e2b_err_set(err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
  e2b_req_free(op);
  return NULL;
}

e2b_req *e2b_op_child(e2b_req *op, e2b_req *child) {
  if (child) child->parent = op;
  return child;
}

void e2b_op_kick(e2b_req *op) { e2b_req_mark_dirty(op); }

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

/* ---- owned copies of the caller's key-value arrays ---- */

int e2b_kv_dup(e2b_kv **dst, const e2b_kv *src, size_t n) {
  *dst = NULL;
  if (!n) return 0;
  e2b_kv *kv = calloc(n, sizeof *kv);
  if (!kv) return -1;
  for (size_t i = 0; i < n; i++) {
    kv[i].key = strdup(src[i].key);
    kv[i].value = strdup(src[i].value);
    if (!kv[i].key || !kv[i].value) {
      e2b_kv_free(kv, i + 1);
      return -1;
    }
  }
  *dst = kv;
  return 0;
}

void e2b_kv_free(e2b_kv *kv, size_t n) {
  for (size_t i = 0; kv && i < n; i++) {
    free((char *)kv[i].key);
    free((char *)kv[i].value);
  }
  free(kv);
}
