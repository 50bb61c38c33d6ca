/* req.c — the request object every call returns: its end (fail, cancel,
 * free, given up to the loop), the one result slot and the notification a
 * caller asks for, and what its timer firing means. A request is a
 * transfer (transfer.c), a composite (op.c) or both; what it queues for
 * its reader is queue.c's, what it uploads upload.c's. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

void e2b_req_free(e2b_req *req) {
  if (!req) return;
  if (req->autofree) req->loop->unattended--;
  e2b_transfer_detach(req);
  for (e2b_req **p = &req->loop->dirty; *p; p = &(*p)->dirty_next) {
    if (*p == req) {
      *p = req->dirty_next;
      break;
    }
  }
  if (req->state_free) req->state_free(req); /* a composite's (op.c) */
  e2b_transfer_free(req);
  e2b_queue_free(req);
  if (req->result_free) req->result_free(req->result);
  if (req->sbx) e2b_sbx_unref(req->sbx);
  if (req->client) e2b_client_release(req->client);
  e2b_loop_release(req->loop);
  free(req);
}

void e2b_req_autofree(e2b_req *req) {
  req->notify = NULL;
  if (!req->autofree) req->loop->unattended++;
  req->autofree = 1;
  if (req->done) e2b_req_mark_dirty(req); /* the next round frees it */
}

/* How long a finished process's stream may take to end its body once
 * nobody reads it (e2b_req_release). */
#define LINGER_MS 2000

void e2b_req_release(e2b_req *req) {
  if (!req) return;
  if (!req->xfer.added || req->done || req->autofree || req->mode != BODY_EVENTS || !req->proc_ended) {
    e2b_req_free(req);
    return;
  }
  req->parent = NULL;
  req->lingering = 1;
  e2b_req_autofree(req);
  e2b_req_arm_timer(req, LINGER_MS);
}

/* Ends req with err at once: its transfer, if any, is stopped (transfer.c
 * knows what holds it); a composite's children go when it is freed. */
void e2b_req_fail(e2b_req *req, const e2b_error *err) {
  if (!req->done) e2b_transfer_stop(req, err);
}

void e2b_req_cancel(e2b_req *req) {
  if (req->done) return;
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_CANCELED, req->op, "canceled");
  e2b_req_fail(req, &err);
}

int e2b_req_done(const e2b_req *req) { return req->done; }

const e2b_error *e2b_req_error(const e2b_req *req) {
  return req->done && req->err.code != E2B_OK ? &req->err : NULL;
}

int e2b_req_status(const e2b_req *req) { return req->status; }

e2b_result_kind e2b_req_result_kind(const e2b_req *req) { return req->result_kind; }

e2b_req *e2b_req_typed(e2b_req *req, e2b_result_kind kind) {
  if (req) req->result_kind = kind;
  return req;
}

e2b_loop *e2b_req_loop(const e2b_req *req) { return req->loop; }

void e2b_req_set_notify(e2b_req *req, e2b_notify_fn fn, void *userdata) {
  req->notify = fn;
  req->notify_ud = userdata;
}

/* A timer of req fired: a composite's wait is over, a finished stream that
 * nobody reads took too long to end, or the transfer's own (a retry's
 * backoff, its idle budget, a held end event). */
void e2b_req_timer_fired(e2b_req *req) {
  if (req->advance)
    e2b_req_mark_dirty(req); /* composites advance on their timer */
  else if (req->lingering)
    e2b_req_fail(req, &(e2b_error){.code = E2B_ERR_TIMEOUT}); /* its connection is closed with it */
  else
    e2b_transfer_timer(req);
}
