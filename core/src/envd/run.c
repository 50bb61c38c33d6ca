/* run.c — e2b_run_with: start a command, feed its stdin, keep its output
 * (output.c's rules) and hand chunks to a caller that wants them, with a
 * deadline that kills the process group. The single owner of what a
 * single-shot command does: the Lua binding's sbx:run is this op, as are
 * provisioning's setup scripts, doctor and verify_egress (e2b_run).
 *
 * Phases: RUN reads to the end; a failure after the start (the deadline,
 * max_output, a broken stream) KILLs the group (SIGKILL, then a process
 * list until it is gone, at most KILL_SETTLE_MS); past the deadline the
 * run then DRAINs what the process wrote up to its end (at most
 * KILL_SETTLE_MS more) before it fails with the output it has. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define KILL_SETTLE_MS E2B_DEFAULT_KILL_SETTLE_MS
/* A kept command's deadline is ours: envd's (this much later) is only a
 * backstop, as its SIGKILL reaches the wrapper alone and would leave the
 * command running; ours is kill.c's TERM, on which the wrapper kills the
 * command's group. */
/* envd enforces the same deadline (Connect-Timeout-Ms) and may end the
 * process a moment before our timer fires: a signal this close to it is
 * the timeout too. */
#define DEADLINE_GRACE_MS 50

enum { P_RUN, P_LOOK, P_KILL, P_DRAIN };

typedef struct run_state {
  e2b_sbx *sbx;
  e2b_req *stream;
  e2b_req *input;  /* its stdin being fed */
  e2b_req *kill;   /* e2b_proc_kill in flight */
  e2b_req *look;   /* gone.c's look: did the stream fail with its sandbox? */
  uint32_t pid;
  char *tag;       /* its tag: a kill finds it by tag in envd's list */
  char *user;      /* whose commands may remove the kept files */
  int kept;        /* its output is kept in files, forgotten afterwards */
  int pty;         /* it runs on a pty: the result has its output */
  int started, ended, finished;
  uint8_t *stdin_data;
  size_t stdin_len;
  int stdin_closed;
  unsigned chunks;
  e2b_output *out;
  int exit_code;
  char *status, *error;
  int phase;
  int drain;       /* after the kill, read to the end (the deadline passed) */
  int timer;       /* our timer is armed (op->timer_at_ms 0 again: it fired) */
  e2b_error fail;  /* reported once the group is dealt with */
  int armed;
  int64_t deadline_ms;
  long timeout_ms;
} run_state;

#define RESULT_AT(f) offsetof(e2b_run_result, f)
static void run_result_free(void *r) {
  e2b_free_owned(r, E2B_FIELDS(RESULT_AT(status), RESULT_AT(error), RESULT_AT(out), RESULT_AT(err),
                               RESULT_AT(pty)));
}

/* A start event the stream queued and the run has not taken yet. */
static void take_queued_start(run_state *s) {
  queued *n;
  while (s->stream && !s->started && (n = e2b_req_pop_node(s->stream))) {
    if (n->ev.type == E2B_EVENT_START) {
      s->pid = n->ev.pid;
      s->started = 1;
      const char *tag = e2b_req_proc_tag(s->stream);
      if (tag && !s->tag) s->tag = strdup(tag); /* no memory: its files wait for the sandbox's end */
    }
    free(n);
  }
}

static void run_release(void *p) {
  run_state *s = p;
  int late = 0; /* started unseen: canceled, or timed out, before the run took its start */
  if (!s->started && !s->ended) {
    take_queued_start(s);
    late = s->started;
  }
  if (s->started && !s->ended && (!s->finished || late)) {
    /* Dropped mid-run (canceled): the group is not left behind. */
    e2b_proc_stop_async(s->sbx, s->pid, s->kept);
    if (s->kept) e2b_proc_forget_later(s->sbx, s->tag, s->user);
  } else if (!s->started && !s->ended && s->stream && !e2b_req_proc_tag(s->stream) && !e2b_req_done(s->stream)) {
    /* Dropped before envd answered its start (a raw stream: track.c sees to
     * its own): the process it starts is ended once envd names it. */
    e2b_proc_adopt_start(s->sbx, s->stream, NULL);
    s->stream = NULL;
  }
  e2b_output_free(s->out);
}

static int copy_stream(e2b_output *o, e2b_event_type t, uint8_t **data, size_t *len) {
  size_t n;
  const uint8_t *src = e2b_output_data(o, t, &n);
  if (!src || !(*data = malloc(n + 1))) return -1;
  if (n) memcpy(*data, src, n);
  (*data)[n] = 0;
  *len = n;
  return 0;
}

static e2b_run_result *make_result(run_state *s, int pty) {
  e2b_run_result *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->exit_code = s->ended ? s->exit_code : -1;
  r->status = strdup(s->ended && s->status ? s->status : s->fail.code == E2B_ERR_TIMEOUT ? "timeout" : "");
  r->error = s->error ? strdup(s->error) : NULL;
  r->pid = s->pid;
  r->ended = s->ended;
  r->keep = e2b_output_keep(s->out);
  r->dropped = e2b_output_dropped(s->out);
  int bad = !r->status || (s->error && !r->error);
  bad = bad || copy_stream(s->out, E2B_EVENT_STDOUT, &r->out, &r->out_len) != 0;
  bad = bad || copy_stream(s->out, E2B_EVENT_STDERR, &r->err, &r->err_len) != 0;
  bad = bad || (pty && copy_stream(s->out, E2B_EVENT_PTY, &r->pty, &r->pty_len) != 0);
  if (bad) {
    run_result_free(r);
    return NULL;
  }
  return r;
}

/* The end: the result (the output kept so far, also on a failure), the
 * kept files queued for removal, the op finished with s->fail if set. */
static void finish_run(e2b_req *op, run_state *s) {
  const e2b_error *err = s->fail.code != E2B_OK ? &s->fail : NULL;
  s->finished = 1;
  if (s->kept && s->started && !e2b_req_proc_swept(s->stream)) e2b_proc_forget_later(s->sbx, s->tag, s->user);
  op->result = make_result(s, s->pty);
  op->result_free = run_result_free;
  if (!op->result && !err) {
    e2b_error nomem;
    e2b_err_set(&nomem, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
    return e2b_op_finish(op, &nomem);
  }
  e2b_op_finish(op, err);
}

static void fail_with(run_state *s, const e2b_error *err) {
  if (s->fail.code == E2B_OK) s->fail = *err;
}

static void arm(e2b_req *op, run_state *s, long ms) {
  e2b_req_arm_timer(op, ms);
  s->timer = 1;
}

/* Whether our timer was armed and has fired (then it is ours no more). */
static int fired(e2b_req *op, run_state *s) {
  if (!s->timer || op->timer_at_ms) return 0;
  s->timer = 0;
  return 1;
}

static void timeout_error(e2b_req *op, run_state *s) {
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_TIMEOUT, op->op, "command timed out (timeout_ms) after %ld ms", s->timeout_ms);
  err.retryable = 0;
  fail_with(s, &err);
}

/* ---- input ---- */

/* Once started, its stdin is fed (and closed) by e2b_proc_feed, which
 * decides which of its failures matter (input_refused). */
static void feed_stdin(e2b_req *op, run_state *s) {
  e2b_error err;
  if (s->input || s->stdin_closed || !s->started || s->ended) return;
  s->stdin_closed = 1;
  s->input = e2b_op_child(op, e2b_proc_feed(s->sbx, s->pid, NULL, s->stdin_data, s->stdin_len, s->pty, &err));
  free(s->stdin_data); /* the feed has its own copy */
  s->stdin_data = NULL;
}

/* A feed fails only when its input never reached the process, which would
 * wait for it (to its timeout_ms, or for ever): that is the run's failure. */
static const e2b_error *input_refused(const run_state *s) {
  return s->input && e2b_req_done(s->input) ? e2b_req_error(s->input) : NULL;
}

/* ---- output ---- */

static unsigned stream_bit(e2b_event_type t) {
  return t == E2B_EVENT_STDERR ? E2B_STREAM_STDERR : E2B_STREAM_STDOUT;
}

/* One event of the command's stream: 0 go on, 1 stop (ended or failed). */
static int take_event(e2b_req *op, run_state *s, queued *n) {
  e2b_proc_event *ev = &n->ev;
  e2b_error err;
  if (ev->type == E2B_EVENT_START) {
    s->pid = ev->pid;
    s->started = 1;
    const char *tag = e2b_req_proc_tag(s->stream);
    if (tag && !s->tag && !(s->tag = strdup(tag))) goto nomem;
  } else if (ev->type == E2B_EVENT_END) {
    s->ended = 1;
    s->exit_code = ev->exit_code;
    if (!(s->status = strdup(ev->status ? ev->status : ""))) goto nomem;
    if (ev->error && !(s->error = strdup(ev->error))) goto nomem;
    free(n);
    return 1;
  } else if (ev->len) {
    int rc = e2b_output_add(s->out, ev->type, ev->data, ev->len, &err);
    if (rc != 0) {
      free(n);
      fail_with(s, &err);
      return 1;
    }
    if (s->chunks & stream_bit(ev->type)) {
      e2b_req_push_node(op, n); /* the caller's chunk, handed on without a copy */
      return 0;
    }
  }
  free(n);
  return 0;
nomem:
  free(n);
  e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
  fail_with(s, &err);
  return 1;
}

/* Takes what the stream queued: 1 when it ended or failed, 0 to wait. */
static int pump(e2b_req *op, run_state *s) {
  queued *n;
  while (s->stream->queue_head) {
    if (s->chunks && op->queued_bytes >= E2B_STREAM_QUEUE_CAP) {
      op->throttled = 1; /* the reader's consume kicks us again */
      return 0;
    }
    if (!(n = e2b_req_pop_node(s->stream))) break;
    if (take_event(op, s, n)) return 1;
  }
  if (!e2b_req_done(s->stream)) return 0;
  e2b_error protocol;
  fail_with(s, e2b_proc_stream_cut(s->stream, op->op, &protocol));
  return 1;
}

/* ---- the kill: kill.c's SIGKILL, then a look until the group is gone ---- */

static void start_kill(e2b_req *op, run_state *s, int drain) {
  e2b_error err;
  e2b_req_disarm_timer(op);
  s->timer = 0;
  s->phase = P_KILL;
  s->drain = drain;
  s->kill = e2b_op_child(op, e2b_proc_kill(s->sbx, s->pid, s->tag, KILL_SETTLE_MS, &err));
  if (!s->kill) finish_run(op, s);
}

/* The group is gone (or could not be looked at, or survived: the run's own
 * failure is what it reports): drain or finish. */
static void kill_step(e2b_req *op, run_state *s) {
  if (!e2b_req_done(s->kill)) return;
  e2b_req_free(s->kill);
  s->kill = NULL;
  if (!s->drain) return finish_run(op, s);
  s->phase = P_DRAIN;
  arm(op, s, KILL_SETTLE_MS);
  if (pump(op, s)) finish_run(op, s);
}

/* A stream that failed as a gone sandbox's would is looked into first
 * (gone.c): a gone sandbox has no group left to kill, nor envd to ask. */
static void look_or_kill(e2b_req *op, run_state *s) {
  if (!e2b_sbx_gone(s->sbx) && s->fail.code != E2B_ERR_NOT_FOUND)
    s->look = e2b_op_child(op, e2b_sbx_explain(s->sbx, &s->fail));
  if (s->look) {
    s->phase = P_LOOK;
    return;
  }
  if (e2b_sbx_gone(s->sbx)) return finish_run(op, s);
  start_kill(op, s, 0);
}

/* The look ended: its error is the run's (gone, paused, or the cut itself). */
static void look_step(e2b_req *op, run_state *s) {
  if (!e2b_req_done(s->look)) return;
  if (e2b_req_error(s->look)) s->fail = *e2b_req_error(s->look);
  e2b_req_free(s->look);
  s->look = NULL;
  if (e2b_sbx_gone(s->sbx)) return finish_run(op, s);
  start_kill(op, s, 0);
}

/* ---- running ---- */

/* The command ended: a success, or envd's end of it at the deadline. */
static void ended(e2b_req *op, run_state *s) {
  e2b_req_disarm_timer(op);
  s->timer = 0;
  if (s->armed && s->exit_code != 0 && s->status && strstr(s->status, "signal") &&
      e2b_now_ms() >= s->deadline_ms - DEADLINE_GRACE_MS)
    timeout_error(op, s);
  finish_run(op, s);
}

static void run_step(e2b_req *op, run_state *s) {
  if (s->timeout_ms > 0 && !s->armed) {
    s->armed = 1; /* the deadline runs from the first step */
    s->deadline_ms = e2b_now_ms() + s->timeout_ms;
    arm(op, s, s->timeout_ms);
  }
  if (pump(op, s)) {
    if (s->ended && s->fail.code == E2B_OK) return ended(op, s);
    /* Failed after the start: the group is not left behind. */
    if (s->started && !s->ended) return look_or_kill(op, s);
    return finish_run(op, s);
  }
  if (fired(op, s)) {
    timeout_error(op, s);
    if (!s->started) return finish_run(op, s);
    return start_kill(op, s, 1);
  }
  if (input_refused(s)) {
    fail_with(s, input_refused(s));
    return look_or_kill(op, s);
  }
  feed_stdin(op, s);
}

static void run_advance(e2b_req *op) {
  run_state *s = op->state;
  if (s->phase == P_RUN) return run_step(op, s);
  if (s->phase == P_LOOK) return look_step(op, s);
  if (s->phase == P_KILL) return kill_step(op, s);
  if (pump(op, s) || fired(op, s)) finish_run(op, s); /* P_DRAIN */
}

/* ---- entry points ---- */

/* Fills op's state from the options: 0, or -1 without memory. */
static int fill_state(run_state *s, const e2b_proc_opts *opts, const e2b_run_opts *ro) {
  s->out = e2b_output_new(ro->max_output, ro->keep, ro->chunks);
  int bad = !s->out || (ro->stdin_len && !(s->stdin_data = malloc(ro->stdin_len)));
  bad = bad || (ro->track && opts->user && !(s->user = strdup(opts->user)));
  if (bad) return -1;
  if (ro->stdin_len) memcpy(s->stdin_data, ro->stdin_data, ro->stdin_len);
  s->stdin_len = ro->stdin_len;
  s->stdin_closed = !opts->stdin_open; /* nothing to feed, nothing to close */
  s->chunks = ro->chunks;
  s->timeout_ms = opts->timeout_ms;
  s->pty = opts->pty_cols > 0 && opts->pty_rows > 0;
  return 0;
}

#define RUN_AT(f) offsetof(run_state, f)
static const e2b_op_kind run_kind = {
    .size = sizeof(run_state), .release = run_release,
    .children = E2B_FIELDS(RUN_AT(stream), RUN_AT(input), RUN_AT(kill), RUN_AT(look)),
    .allocs = E2B_FIELDS(RUN_AT(stdin_data), RUN_AT(tag), RUN_AT(user), RUN_AT(status), RUN_AT(error)),
    .holds = E2B_OP_HOLDS_SBX, .ref = RUN_AT(sbx)};

e2b_req *e2b_run_with(e2b_sbx *sbx, const e2b_proc_opts *opts, const e2b_run_opts *ro, e2b_error *err) {
  e2b_error_clear(err);
  if (!sbx || !opts || !ro) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "run", "sandbox and options are required");
    return NULL;
  }
  if (ro->keep < E2B_KEEP_DEFAULT || ro->keep > E2B_KEEP_NONE) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "run", "keep must be an e2b_keep");
    return NULL;
  }
  if (ro->stdin_len && !ro->stdin_data) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "run", "stdin_data is required with stdin_len");
    return NULL;
  }
  e2b_req *op = e2b_op_new(&run_kind, NULL, sbx, "run", run_advance, NULL, err);
  if (!op) return NULL;
  run_state *s = op->state;
  if (fill_state(s, opts, ro) != 0) return e2b_op_nomem(op, err);
  if (ro->track) {
    /* Only a generated tag's files may go to the sandbox's sweep: a tag of
     * the caller's may name a later command's files by then. */
    unsigned flags = ro->track_flags | E2B_TRACK_NO_PARK | (ro->chunks ? 0 : E2B_TRACK_AT_END) |
                     (ro->chunks || opts->tag ? 0 : E2B_TRACK_SWEEP);
    e2b_proc_opts later = *opts;
    if (later.timeout_ms > 0) later.timeout_ms += KILL_SETTLE_MS; /* see KILL_SETTLE_MS */
    s->stream = e2b_proc_track(sbx, &later, flags, err);
    s->kept = s->stream && e2b_req_proc_kept(s->stream) != NULL;
  } else {
    s->stream = e2b_proc_start(sbx, opts, err);
  }
  if (!e2b_op_child(op, s->stream)) {
    e2b_req_free(op);
    return NULL;
  }
  return e2b_req_typed(op, E2B_RESULT_RUN);
}

e2b_req *e2b_run(e2b_sbx *sbx, const e2b_proc_opts *opts, const void *stdin_data, size_t stdin_len,
                 size_t max_output, e2b_error *err) {
  e2b_error_clear(err);
  if (!sbx || !opts) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "run", "sandbox and options are required");
    return NULL;
  }
  e2b_proc_opts o = *opts;
  o.stdin_open = 1; /* stdin is always closed explicitly, after any bytes */
  o.pty_cols = o.pty_rows = 0;
  e2b_run_opts ro = {.stdin_data = stdin_data, .stdin_len = stdin_data ? stdin_len : 0,
                     .max_output = max_output, .keep = E2B_KEEP_TAIL};
  return e2b_run_with(sbx, &o, &ro, err);
}

const e2b_run_result *e2b_req_run_result(const e2b_req *req) {
  return req->result_kind == E2B_RESULT_RUN ? req->result : NULL;
}
