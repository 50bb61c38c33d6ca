/* feed.c — e2b_proc_feed: writes bytes to a process's stdin (or pty) in
 * pieces of at most FEED_CHUNK, one request at a time, then closes its
 * stdin. The one feeder: e2b_run_with feeds a run's stdin with it, and the
 * Lua binding a spawned process's stdin string. It stops at the first
 * failure. Only a 429 fails the feed: the input never reached a process that
 * waits for it, so its reader must hear of it; any other failure (a process
 * that exits without reading its input) is the process's own business. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define FEED_CHUNK (1u << 20)

typedef struct feed_state {
  e2b_sbx *sbx;
  uint32_t pid;
  char *tag;
  int pty;
  uint8_t *data;
  size_t len, off;
  int closing;
  e2b_req *step;
} feed_state;

static void feed_advance(e2b_req *op) {
  feed_state *s = op->state;
  e2b_error err;
  if (s->step) {
    if (!e2b_req_done(s->step)) return;
    const e2b_error *serr = e2b_req_error(s->step);
    if (serr) err = *serr;
    e2b_req_free(s->step);
    s->step = NULL;
    if (serr) return e2b_op_finish(op, err.code == E2B_ERR_RATE_LIMITED ? &err : NULL);
    if (s->closing) return e2b_op_finish(op, NULL);
  }
  if (s->off < s->len) {
    size_t n = s->len - s->off;
    if (n > FEED_CHUNK) n = FEED_CHUNK;
    s->step = e2b_proc_send_input(s->sbx, s->pid, s->tag, s->data + s->off, n, s->pty, &err);
    s->off += n;
  } else {
    s->step = e2b_proc_close_stdin(s->sbx, s->pid, s->tag, &err);
    s->closing = 1;
  }
  if (!s->step) return e2b_op_finish(op, &err);
  e2b_op_child(op, s->step);
}

#define FEED_AT(f) offsetof(feed_state, f)
static const e2b_op_kind feed_kind = {.size = sizeof(feed_state), .children = E2B_FIELDS(FEED_AT(step)),
                                      .allocs = E2B_FIELDS(FEED_AT(data), FEED_AT(tag)),
                                      .holds = E2B_OP_HOLDS_SBX, .ref = FEED_AT(sbx), .key = FEED_AT(tag)};

e2b_req *e2b_proc_feed(e2b_sbx *sbx, uint32_t pid, const char *tag, const void *data, size_t len, int pty,
                       e2b_error *err) {
  const char *op = "process.feed";
  e2b_error_clear(err);
  if (!sbx || (!pid && (!tag || !*tag)) || (len && !data)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "sandbox, pid or tag, and data are required");
    return NULL;
  }
  e2b_req *req = e2b_op_new(&feed_kind, NULL, sbx, op, feed_advance, tag, err);
  feed_state *s = req ? req->state : NULL;
  if (!s) return NULL;
  if (len && !(s->data = malloc(len))) return e2b_op_nomem(req, err);
  if (len) memcpy(s->data, data, len);
  s->len = len;
  s->pid = tag ? 0 : pid;
  s->pty = pty;
  return req;
}
