/* kill.c — e2b_proc_kill: SIGKILL to a process group, then a process list
 * every LOOK_EVERY_MS until it is gone, for at most settle_ms. The one
 * place that decides when a kill has happened: a run stopping its command
 * (run.c) and a handle's kill() (the Lua binding) both finish on it, so a
 * kill never reports a success that did not happen. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define LOOK_EVERY_MS 50

typedef struct kill_state {
  e2b_sbx *sbx;
  uint32_t pid;
  char *tag;
  e2b_req *signal; /* the SIGKILL in flight */
  e2b_req *look;   /* a process list in flight */
  int waiting;     /* our timer is armed for the next look */
  int64_t until_ms;
  long settle_ms;
} kill_state;

static int listed(const kill_state *s, const e2b_req *list) {
  for (size_t i = 0; i < e2b_req_proc_count(list); i++) {
    const e2b_proc_info *p = e2b_req_proc_at(list, i);
    if (s->tag ? p->tag && strcmp(p->tag, s->tag) == 0 : p->pid == s->pid) return 1;
  }
  return 0;
}

static void look(e2b_req *op, kill_state *s) {
  e2b_error err;
  s->look = e2b_op_child(op, e2b_proc_list(s->sbx, &err));
  if (!s->look) e2b_op_finish(op, &err);
}

static void survived(e2b_req *op, kill_state *s) {
  e2b_error err;
  if (s->tag)
    e2b_err_set(&err, E2B_ERR_SANDBOX, op->op, "process %s survived SIGKILL for %ld ms", s->tag, s->settle_ms);
  else
    e2b_err_set(&err, E2B_ERR_SANDBOX, op->op, "process %u survived SIGKILL for %ld ms", (unsigned)s->pid,
                s->settle_ms);
  err.retryable = 1;
  e2b_op_finish(op, &err);
}

static void kill_advance(e2b_req *op) {
  kill_state *s = op->state;
  if (s->signal) {
    if (!e2b_req_done(s->signal)) return;
    const e2b_error *serr = e2b_req_error(s->signal);
    /* not_found: envd no longer knows it, which the list below confirms */
    if (serr && serr->code != E2B_ERR_NOT_FOUND) return e2b_op_finish(op, serr);
    e2b_req_free(s->signal);
    s->signal = NULL;
    return look(op, s);
  }
  if (s->look) {
    if (!e2b_req_done(s->look)) return;
    const e2b_error *lerr = e2b_req_error(s->look);
    if (lerr) return e2b_op_finish(op, lerr); /* could not look: never "gone" */
    int alive = listed(s, s->look);
    e2b_req_free(s->look);
    s->look = NULL;
    if (!alive) return e2b_op_finish(op, NULL);
    if (e2b_now_ms() >= s->until_ms) return survived(op, s);
    s->waiting = 1;
    return e2b_req_arm_timer(op, LOOK_EVERY_MS);
  }
  if (s->waiting && !op->timer_at_ms) {
    s->waiting = 0;
    look(op, s);
  }
}

#define KILL_AT(f) offsetof(kill_state, f)
static const e2b_op_kind kill_kind = {.size = sizeof(kill_state),
                                      .children = E2B_FIELDS(KILL_AT(signal), KILL_AT(look)),
                                      .allocs = E2B_FIELDS(KILL_AT(tag)),
                                      .holds = E2B_OP_HOLDS_SBX, .ref = KILL_AT(sbx), .key = KILL_AT(tag)};

e2b_req *e2b_proc_kill(e2b_sbx *sbx, uint32_t pid, const char *tag, long settle_ms, e2b_error *err) {
  const char *op = "process.kill";
  e2b_error_clear(err);
  if (e2b_need_sbx(sbx, op, err)) return NULL;
  if (!pid && (!tag || !*tag)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "pid or tag is required");
    return NULL;
  }
  if (settle_ms <= 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "settle_ms must be positive");
    return NULL;
  }
  e2b_req *req = e2b_op_new(&kill_kind, NULL, sbx, op, kill_advance, tag, err);
  if (!req) return NULL;
  kill_state *s = req->state;
  s->pid = tag ? 0 : pid;
  s->settle_ms = settle_ms;
  s->until_ms = e2b_now_ms() + settle_ms;
  if (!(s->signal = e2b_op_child(req, e2b_proc_signal(sbx, s->pid, s->tag, 9, err)))) {
    e2b_req_free(req);
    return NULL;
  }
  return e2b_req_typed(req, E2B_RESULT_NONE);
}
