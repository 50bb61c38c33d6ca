/* kill.c — e2b_proc_kill: ends a process and its whole process group, then
 * a process list every LOOK_EVERY_MS until it is gone, for at most
 * settle_ms. The one place that decides when a kill has happened: a run
 * stopping its command (run.c) and a handle's kill() (the Lua binding) both
 * finish on it, so a kill never reports a success that did not happen.
 *
 * envd delivers only SIGKILL and SIGTERM, to one pid, and starts commands
 * in its own process group. A kept command's wrapper (wrapper.c) runs the
 * command in a group of its own and takes SIGTERM as "kill that group":
 * SIGKILL to the wrapper would leave the command running as an orphan. So a
 * kept process gets SIGTERM, and SIGKILL only if it is still listed after
 * settle_ms (its wrapper could not act); any other process gets SIGKILL.
 * A process named by tag is found in envd's list first (envd's own tag
 * lookup can miss it), which also tells whether it is kept; a pid that
 * list shows under another tag is not ours (reused), so nothing is sent.
 * A start whose caller went before envd answered it is awaited here, and
 * the process it started ended (e2b_proc_adopt_start). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define LOOK_EVERY_MS 50

typedef struct kill_state {
  e2b_sbx *sbx;
  uint32_t pid;
  char *tag;
  e2b_req *signal; /* the signal in flight */
  e2b_req *look;   /* a process list in flight */
  int waiting;     /* our timer is armed for the next look */
  int resolved;    /* the first list named the pid (and whether it is kept) */
  int kept;        /* a kept command's wrapper: SIGTERM ends its group */
  int forced;      /* the SIGKILL fallback was sent */
  int once;        /* e2b_proc_signal_listed: that signal, no looks after it */
  int64_t until_ms;
  long settle_ms;
} kill_state;

/* The listed entry for our process, or NULL. */
static const e2b_proc_info *listed(const kill_state *s, const e2b_req *list) {
  for (size_t i = 0; i < e2b_req_proc_count(list); i++) {
    const e2b_proc_info *p = e2b_req_proc_at(list, i);
    int tag_ok = !s->tag || (p->tag && strcmp(p->tag, s->tag) == 0);
    if (tag_ok && (s->pid ? p->pid == s->pid : s->tag != NULL)) return p;
  }
  return NULL;
}

static void look(e2b_req *op, kill_state *s) {
  e2b_error err;
  s->look = e2b_op_child(op, e2b_proc_list(s->sbx, &err));
  if (!s->look) e2b_op_finish(op, &err);
}

static void send_signal(e2b_req *op, kill_state *s, int signo) {
  e2b_error err;
  s->signal = e2b_op_child(op, e2b_proc_signal(s->sbx, s->pid, NULL, signo, &err));
  if (!s->signal) e2b_op_finish(op, &err);
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

static void not_listed(e2b_req *op, kill_state *s) {
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_NOT_FOUND, op->op, "process %u with tag %s is not running", (unsigned)s->pid,
              s->tag ? s->tag : "(none)");
  e2b_op_finish(op, &err);
}

/* A list came back: signal what it named, finish once it is gone, or look
 * again (escalating a kept process to SIGKILL when its settle time is up). */
static void looked(e2b_req *op, kill_state *s, int present, uint32_t pid, int kept) {
  if (!present && s->once) return not_listed(op, s);
  if (!present) return e2b_op_finish(op, NULL);
  if (!s->resolved) {
    s->resolved = 1;
    s->pid = pid;
    s->kept = kept;
    if (s->once) return send_signal(op, s, s->kept ? 15 : s->once);
    return send_signal(op, s, s->kept ? 15 : 9);
  }
  if (e2b_now_ms() >= s->until_ms) {
    if (!s->kept || s->forced) return survived(op, s);
    s->forced = 1;
    s->until_ms = e2b_now_ms() + s->settle_ms;
    return send_signal(op, s, 9);
  }
  s->waiting = 1;
  e2b_req_arm_timer(op, LOOK_EVERY_MS);
}

static void kill_advance(e2b_req *op) {
  kill_state *s = op->state;
  if (s->signal) {
    if (!e2b_req_done(s->signal)) return;
    const e2b_error *serr = e2b_req_error(s->signal);
    /* not_found: envd no longer knows it, which the list below confirms */
    if (s->once || (serr && serr->code != E2B_ERR_NOT_FOUND)) return e2b_op_finish(op, serr);
    e2b_req_free(s->signal);
    s->signal = NULL;
    return look(op, s);
  }
  if (s->look) {
    if (!e2b_req_done(s->look)) return;
    const e2b_error *lerr = e2b_req_error(s->look);
    if (lerr) return e2b_op_finish(op, lerr); /* could not look: never "gone" */
    const e2b_proc_info *p = listed(s, s->look);
    int present = p != NULL, kept = p && p->kept;
    uint32_t pid = p ? p->pid : 0;
    e2b_req_free(s->look);
    s->look = NULL;
    return looked(op, s, present, pid, kept);
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

static e2b_req *listed_op(e2b_sbx *sbx, const char *op, uint32_t pid, const char *tag, long settle_ms,
                          int once, e2b_error *err) {
  e2b_error_clear(err);
  if (e2b_need_sbx(sbx, op, err)) return NULL;
  if (!pid && (!tag || !*tag)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "pid or tag is required");
    return NULL;
  }
  if (settle_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "settle_ms must not be negative");
    return NULL;
  }
  if (settle_ms == 0) settle_ms = E2B_DEFAULT_KILL_SETTLE_MS;
  e2b_req *req = e2b_op_new(&kill_kind, NULL, sbx, op, kill_advance, tag, err);
  if (!req) return NULL;
  kill_state *s = req->state;
  s->once = once;
  s->pid = pid;
  s->settle_ms = settle_ms;
  s->until_ms = e2b_now_ms() + settle_ms;
  if (!(s->look = e2b_op_child(req, e2b_proc_list(sbx, err)))) {
    e2b_req_free(req);
    return NULL;
  }
  return e2b_req_typed(req, E2B_RESULT_NONE);
}

e2b_req *e2b_proc_kill(e2b_sbx *sbx, uint32_t pid, const char *tag, long settle_ms, e2b_error *err) {
  return listed_op(sbx, "process.kill", pid, tag, settle_ms, 0, err);
}

e2b_req *e2b_proc_signal_listed(e2b_sbx *sbx, uint32_t pid, const char *tag, int signo, e2b_error *err) {
  if (signo != 9 && signo != 15) return e2b_proc_signal(sbx, pid, tag, signo, err); /* its refusal */
  return listed_op(sbx, "process.signal", pid, tag, 1, signo, err);
}

/* Unattended (a handle dropped or collected): the same first signal, sent
 * and forgotten. */
void e2b_proc_stop_async(e2b_sbx *sbx, uint32_t pid, int kept) {
  e2b_error err;
  e2b_req *req = pid ? e2b_proc_signal(sbx, pid, NULL, kept ? 15 : 9, &err) : NULL;
  if (req) e2b_req_autofree(req);
}

/* ---- a start nobody waits for any more ---- */

/* A Start stream whose caller went before envd answered it: once its start
 * event names the pid, that process is ended as a dropped handle's is. */
typedef struct adopted_state {
  e2b_sbx *sbx;
  e2b_req *stream;
  char *tag; /* a kept command's: its wrapper is ended and its files removed */
} adopted_state;

static void adopted_advance(e2b_req *op) {
  adopted_state *s = op->state;
  queued *n;
  while ((n = e2b_req_pop_node(s->stream))) {
    uint32_t pid = n->ev.type == E2B_EVENT_START ? n->ev.pid : 0;
    free(n);
    if (!pid) continue;
    if (s->tag) e2b_proc_end_async(s->sbx, pid, s->tag);
    else e2b_proc_stop_async(s->sbx, pid, 0);
    return e2b_op_finish(op, NULL);
  }
  if (e2b_req_done(s->stream)) e2b_op_finish(op, NULL); /* refused, or ended unseen: nothing runs */
}

#define ADOPTED_AT(f) offsetof(adopted_state, f)
static const e2b_op_kind adopted_kind = {.size = sizeof(adopted_state),
                                         .children = E2B_FIELDS(ADOPTED_AT(stream)),
                                         .allocs = E2B_FIELDS(ADOPTED_AT(tag)),
                                         .holds = E2B_OP_HOLDS_SBX, .ref = ADOPTED_AT(sbx)};

void e2b_proc_adopt_start(e2b_sbx *sbx, e2b_req *stream, const char *tag) {
  e2b_error err;
  e2b_req *op = stream ? e2b_op_new(&adopted_kind, NULL, sbx, "process.start", adopted_advance, NULL, &err) : NULL;
  adopted_state *s = op ? op->state : NULL;
  if (s && tag && !(s->tag = strdup(tag))) {
    e2b_req_free(op);
    s = NULL;
  }
  if (!s) { /* no memory: the stream is closed, as before */
    e2b_req_free(stream);
    return;
  }
  s->stream = e2b_op_child(op, stream);
  e2b_req_autofree(op);
}
