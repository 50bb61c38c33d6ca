/* run.c — e2b_run: start a command, feed its stdin, collect its output to
 * the end (keeping the last max_output bytes of each stream), with a
 * deadline that kills the process group. Used by provisioning (setup
 * scripts), doctor and verify_egress; callers that stream use the process
 * calls directly. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define STDIN_CHUNK (1u << 20)

typedef struct run_state {
  e2b_sbx *sbx;
  e2b_req *stream;
  e2b_req *input;  /* a SendInput / CloseStdin in flight */
  e2b_req *kill;
  uint32_t pid;
  uint8_t *stdin_data;
  size_t stdin_len, stdin_off;
  int stdin_closed;
  size_t max_output;
  growbuf out, err;
  size_t dropped;
  int ended;
  int timed_out;
  int armed;
  int64_t deadline_ms;
  long timeout_ms;
} run_state;

static void run_result_free(void *p) {
  e2b_run_result *r = p;
  if (!r) return;
  free(r->status);
  free(r->out);
  free(r->err);
  free(r);
}

static void run_free(void *p) {
  run_state *s = p;
  e2b_req_free(s->stream);
  e2b_req_free(s->input);
  e2b_req_free(s->kill);
  e2b_growbuf_free(&s->out);
  e2b_growbuf_free(&s->err);
  free(s->stdin_data);
  e2b_sbx_release(s->sbx);
  free(s);
}

/* Appends, keeping at most max bytes (the tail). */
static int keep_tail(growbuf *b, const uint8_t *data, size_t len, size_t max, size_t *dropped) {
  if (len >= max) {
    *dropped += b->len + (len - max);
    b->len = 0;
    data += len - max;
    len = max;
  }
  if (e2b_growbuf_append(b, data, len) != 0) return -1;
  if (b->len > max) {
    size_t cut = b->len - max;
    memmove(b->data, b->data + cut, max);
    b->len = max;
    *dropped += cut;
  }
  return 0;
}

static e2b_run_result *make_result(run_state *s, const e2b_proc_event *end) {
  e2b_run_result *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->exit_code = end ? end->exit_code : -1;
  r->status = strdup(end && end->status ? end->status : s->timed_out ? "timeout" : "");
  r->out_len = s->out.len;
  r->err_len = s->err.len;
  r->out = malloc(s->out.len + 1);
  r->err = malloc(s->err.len + 1);
  r->dropped = s->dropped;
  if (!r->status || !r->out || !r->err) {
    run_result_free(r);
    return NULL;
  }
  if (s->out.len) memcpy(r->out, s->out.data, s->out.len);
  if (s->err.len) memcpy(r->err, s->err.data, s->err.len);
  r->out[r->out_len] = 0;
  r->err[r->err_len] = 0;
  return r;
}

static void finish_run(e2b_req *op, run_state *s, const e2b_proc_event *end, const e2b_error *err) {
  op->result = make_result(s, end);
  op->result_free = run_result_free;
  op->result_kind = E2B_RESULT_RUN;
  if (!op->result && !err) {
    e2b_error nomem;
    e2b_err_set(&nomem, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
    return e2b_op_finish(op, &nomem);
  }
  e2b_op_finish(op, err);
}

/* Starts the next stdin step once the previous one finished. */
static void feed_stdin(e2b_req *op, run_state *s) {
  e2b_error err;
  if (s->input) {
    if (!e2b_req_done(s->input)) return;
    /* A process that exits without reading its input is its own business. */
    e2b_req_free(s->input);
    s->input = NULL;
  }
  if (s->stdin_closed || !s->pid) return;
  if (s->stdin_off < s->stdin_len) {
    size_t n = s->stdin_len - s->stdin_off;
    if (n > STDIN_CHUNK) n = STDIN_CHUNK;
    s->input = e2b_proc_send_input(s->sbx, s->pid, NULL, s->stdin_data + s->stdin_off, n, 0, &err);
    s->stdin_off += n;
  } else {
    s->input = e2b_proc_close_stdin(s->sbx, s->pid, NULL, &err);
    s->stdin_closed = 1;
  }
  e2b_op_child(op, s->input);
}

static void run_advance(e2b_req *op) {
  run_state *s = op->state;
  e2b_error err;
  if (s->kill) {
    if (!e2b_req_done(s->kill)) return;
    e2b_err_set(&err, E2B_ERR_TIMEOUT, op->op, "command timed out after %ld ms", s->timeout_ms);
    err.retryable = 0;
    return finish_run(op, s, NULL, &err);
  }
  if (s->timeout_ms > 0 && !s->armed) {
    s->armed = 1; /* the deadline runs from the first step */
    s->deadline_ms = e2b_now_ms() + s->timeout_ms;
    e2b_req_arm_timer(op, s->timeout_ms);
  }
  e2b_proc_event ev;
  int rc;
  while ((rc = e2b_req_peek_event(s->stream, &ev)) == 1) {
    if (ev.type == E2B_EVENT_START) {
      s->pid = ev.pid;
    } else if (ev.type == E2B_EVENT_STDOUT || ev.type == E2B_EVENT_PTY) {
      if (keep_tail(&s->out, ev.data, ev.len, s->max_output, &s->dropped) != 0) goto nomem;
    } else if (ev.type == E2B_EVENT_STDERR) {
      if (keep_tail(&s->err, ev.data, ev.len, s->max_output, &s->dropped) != 0) goto nomem;
    } else if (ev.type == E2B_EVENT_END) {
      s->ended = 1;
      e2b_req_disarm_timer(op);
      /* envd enforces the same deadline (Connect-Timeout-Ms) and may end
       * the process a moment before our timer fires: that is a timeout too. */
      if (s->armed && ev.exit_code != 0 && e2b_now_ms() >= s->deadline_ms - 50) {
        e2b_err_set(&err, E2B_ERR_TIMEOUT, op->op, "command timed out after %ld ms", s->timeout_ms);
        err.retryable = 0;
        return finish_run(op, s, NULL, &err);
      }
      finish_run(op, s, &ev, NULL);
      return;
    }
    e2b_req_consume(s->stream, ev.len);
  }
  if (rc < 0) {
    const e2b_error *serr = e2b_req_error(s->stream);
    e2b_error protocol;
    if (!serr) {
      e2b_err_set(&protocol, E2B_ERR_PROTOCOL, op->op, "process stream ended without an end event");
      serr = &protocol;
    }
    return finish_run(op, s, NULL, serr);
  }
  if (s->armed && !op->timer_at_ms && !s->timed_out) {
    /* The deadline fired: kill the group, then report the timeout. */
    s->timed_out = 1;
    s->kill = s->pid ? e2b_op_child(op, e2b_proc_signal(s->sbx, s->pid, NULL, 9, &err)) : NULL;
    if (!s->kill) {
      e2b_err_set(&err, E2B_ERR_TIMEOUT, op->op, "command timed out after %ld ms", s->timeout_ms);
      return finish_run(op, s, NULL, &err);
    }
    return;
  }
  feed_stdin(op, s);
  return;
nomem:
  e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
  finish_run(op, s, NULL, &err);
}

e2b_req *e2b_run(e2b_sbx *sbx, const e2b_proc_opts *opts, const void *stdin_data,
                 size_t stdin_len, size_t max_output, e2b_error *err) {
  e2b_error_clear(err);
  if (!sbx || !opts) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "run", "sandbox and options are required");
    return NULL;
  }
  if (max_output == 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "run", "max_output must be positive");
    return NULL;
  }
  run_state *s = calloc(1, sizeof *s);
  if (!s || (stdin_len && !(s->stdin_data = malloc(stdin_len)))) {
    free(s);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "run", "out of memory");
    return NULL;
  }
  if (stdin_len) memcpy(s->stdin_data, stdin_data, stdin_len);
  s->stdin_len = stdin_len;
  s->max_output = max_output;
  s->timeout_ms = opts->timeout_ms;
  s->sbx = sbx;
  e2b_sbx_retain(sbx);
  e2b_proc_opts o = *opts;
  o.stdin_open = 1; /* stdin is always closed explicitly, after any bytes */
  o.pty_cols = o.pty_rows = 0;
  s->stream = e2b_proc_start(sbx, &o, err);
  if (!s->stream) {
    run_free(s);
    return NULL;
  }
  e2b_req *op = e2b_op_new(sbx->client->loop, "run", run_advance, s, run_free, err);
  if (op) e2b_op_child(op, s->stream);
  return op;
}

const e2b_run_result *e2b_req_run_result(const e2b_req *req) {
  return req->result_kind == E2B_RESULT_RUN ? req->result : NULL;
}
