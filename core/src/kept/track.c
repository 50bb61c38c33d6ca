/* track.c — e2b_proc_track's process streams: kept output read back
 * byte-exact, as a state machine of phases (track_phase below; the table
 * is in docs/architecture.md, "Kept output, phase by phase").
 *
 * E2B's Connect streams only from "now", so a reader that loses its stream
 * would lose output. A kept process therefore runs under a small bash
 * wrapper that sends its stdout and stderr straight into private files
 * (/tmp/.e2b-proc/<hex tag>.out and .err) and records the sandbox boot id
 * and then its exit status in a third (.exit) beside them: no process per
 * stream, so a short command costs what it costs unwrapped plus one fork.
 * Offsets are the truth: the reader counts the bytes it took of each file
 * and reads on from there (HTTP Range on /files). The process's own stream
 * carries its start and end; while it runs, one WatchDir stream per
 * sandbox (outwatch.c) says which files grew, with a backing-off timer as
 * the fallback. A process that ends within FIRST_PASS_MS costs no read at
 * all when the wrapper reports both files empty. The exit file, written
 * once the command ended, ends a reader whose stream is late (EXIT_GRACE_MS).
 *
 * Following: a reader that streams a command that will not park has its
 * wrapper copy the files onto its own stream (tail), so the stream's data is
 * the output at the files' offsets and no watch or read is needed; the
 * wrapper's trailer, the last bytes of its stderr, says whether all came.
 * A cut stream, or a trailer that says not, goes back to the files.
 *
 * Parking: a kept command still running PARK_AFTER_MS after its start, with
 * its sandbox's watch live, may have its own stream closed (a curl handle and a
 * connection here, a socket and a thread in e2b-local) and is not
 * reconnected while parked: its end is the exit file, which the watch
 * reports, and its output is read from the files as before. A command
 * killed with SIGKILL writes no exit file; the watch's shared process list
 * (outwatch.c) reports it gone, and the files are read to their end. If the
 * watch is lost the reader unparks: it reconnects its stream, as an
 * unparked reader whose stream broke does. E2B_TRACK_PARK parks every
 * such command, E2B_TRACK_NO_PARK none (nor does run()); by default the
 * first E2B_STREAMS_HELD of them in a loop keep their streams for good and
 * the rest park, so thousands of long commands cost a loop (and the server)
 * a bounded number of open streams while a few keep envd's immediate end.
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MIN_MS 50
#define POLL_MAX_MS 2000
/* A followed command that has given this much output within FOLLOW_BULK_MS
 * of its start writes in bulk: its stream is left unread (tail then blocks
 * on it, and the command never does) and the files are read instead, since
 * one read of a file carries bulk faster than tail's copy through the
 * stream; a slower writer, a log say, stays followed for good, at no read
 * per line. */
#define FOLLOW_BULK (16L << 20)
#define FOLLOW_BULK_MS 2000
/* A process that ends this soon is read once, after its end. */
#define FIRST_PASS_MS 20
/* A write is read this much later, so a command that writes its last line
 * and ends costs one read, not two. */
#define COALESCE_MS 10
/* A file whose last read gave this much is streaming: it is read again as
 * soon as the watch says it grew, without COALESCE_MS. */
#define STREAMING_READ (64 << 10)
/* curl's receive buffer beyond what the watch told, for a read of a file
 * the watch may not have told all of (curl's own default). */
#define UNKNOWN_READ_BUFFER (16L << 10)
/* The wrapper writes the exit file before its own last steps (it copies a
 * small output into its stream, it prints its flags): its stream normally
 * ends right after. If it has not this long after the watch saw the exit
 * file, the exit file ends the process: the output files are complete. */
#define EXIT_GRACE_MS 50
/* A started process's wrapper may not have created its files yet: wait this
 * long for them before calling the process unknown. */
#define KEPT_GRACE_MS 10000
/* A kept command still running this long after its start parks its stream.
 * Most commands (and every run() of a quick one) end sooner and keep the
 * stream's exact end and inline output; one that runs on saves a stream
 * for all the rest of its life, so the threshold costs at most this long
 * of a stream per command. Longer than a watch takes to go live (one
 * round trip), short against the seconds a parked end may take. */
#define PARK_AFTER_MS 2000
/* Parking waits for the watch to go live: look again this often (a
 * sandbox whose watch never starts costs each handle one wake-up per
 * PARK_RETRY_MS, besides its own polling). */
#define PARK_RETRY_MS 2000

enum { R_OUT, R_ERR, R_EXIT };
enum { PARK_NEVER, PARK_ALWAYS, PARK_BEYOND_HELD };
#define DUE_ALL 7

/* Where a process's reader is: one handler per phase (track_advance,
 * kept_step); the table of phases, events and transitions is in
 * docs/architecture.md ("Kept output, phase by phase"). */
typedef enum track_phase {
  PH_WAIT_SLOT, /* a start past E2B_STARTS_IN_FLIGHT waits for a slot (its options copied) */
  PH_FINDING,   /* attach: a process list says whether it runs and whether it is kept */
  PH_LIVE,      /* not kept: its own stream is the output */
  PH_STARTING,  /* kept: waiting for envd's start and the wrapper's announcement */
  PH_RUNNING,   /* kept, running, its stream held: the files are read as they grow */
  PH_PARKED,    /* kept, running, its stream closed: the end comes through the watch */
  PH_DRAINING   /* kept, ended or gone: the files are read to their end */
} track_phase;

/* One timer per purpose; the op's one timer is armed for the earliest. */
enum {
  T_FIRST_PASS, /* FIRST_PASS_MS after the start: subscribe, or read what the watch missed */
  T_COALESCE,   /* COALESCE_MS after a wake: reads wait for it */
  T_POLL,       /* the backing-off fallback poll, and the retry after a failed read */
  T_EXIT_GRACE, /* EXIT_GRACE_MS after the watch saw the exit file: read it though the stream holds */
  T_PARK,       /* when a long command may park (PARK_AFTER_MS, then every PARK_RETRY_MS) */
  T_COUNT
};

/* The reading of the kept files, pass by pass. */
typedef struct kept_files {
  int64_t off[2];    /* bytes received of stdout, stderr */
  int64_t told[2];   /* the largest size the watch told of stdout, stderr */
  int told_all;      /* R_* bits of files whose every growth since our last read the watch tells */
  int64_t large_noted; /* the size forget.c was last told (it keeps large files' sizes) */
  int reading;       /* R_* of the read in flight */
  int64_t read_got;  /* bytes the read in flight gave so far */
  int streaming;     /* R_* bits of files whose last read gave STREAMING_READ */
  int due;           /* R_* bits still to read in this pass */
  int full_pass;     /* this pass read all three files */
  int absent;        /* R_* bits found missing in this pass */
  int pass_new;      /* R_* bits of the files that gave bytes in this pass */
  growbuf small;     /* the exit file's contents */
  int64_t missing_since_ms; /* started, files not there yet: since when */
  long poll_ms;      /* the fallback poll's period, backing off */
} kept_files;

/* How the process ended, or what tells it. */
typedef struct track_end {
  int known, code;   /* the exit status is known, and it */
  char status[64];
  int gone;          /* the process no longer exists */
  int killed;        /* e2b_req_proc_killed: our caller killed the group */
  int parked;        /* it was PH_PARKED when it ended (the end's status says so) */
  int64_t exit_file_ms; /* when the watch saw the exit file written; -1: no longer timed */
  int exit_late;     /* the stream is late: read the exit file although it holds */
} track_end;

typedef struct track_state {
  e2b_req *self;     /* the op this state drives (its watch subscription's key) */
  e2b_sbx *sbx;
  track_phase phase;
  int kept;          /* output saved in the sandbox: it comes from the files */
  char *tag;
  char *prefix;      /* E2B_KEPT_ROOT/<hex tag>: the kept files are prefix.out, ... */
  const char *name;  /* the prefix's last component */
  uint32_t pid;
  int started;       /* START emitted */
  int envd_started;  /* envd said its start (of the wrapper, when wrapped) */
  int start_sent;    /* s->live is our Start stream (not an attach's Connect) */
  char *cmd;         /* the caller's program, for the error when it cannot start */
  e2b_req *live;     /* the Start stream, then a Connect by tag; not kept: the output too */
  e2b_req *list;     /* attach: finding the pid/tag */
  e2b_req *read;     /* a file read in flight */
  e2b_req *look;     /* gone.c's look at the control plane: is the sandbox gone? */
  int64_t looked_ms; /* a look found it there then: the next no sooner than LOOK_GAP_MS later */
  e2b_wrapper_report said; /* what the wrapper said on its own stream (wrapper.c reads it) */
  kept_files files;
  track_end end;
  int follow;        /* its wrapper follows the files onto its stream (e2b_wrap's nonce): the
                        stream's data is the output, from offset 0, while that stream holds */
  int follow_counted; /* one of its sandbox's followed */
  int muted;         /* followed output came in bulk: its stream is no longer read (the files are) */
  int64_t follow_from_ms; /* when its start was sent */
  char nonce[E2B_FOLLOW_NONCE_LEN + 1]; /* following: what its trailer carries */
  uint8_t held[E2B_FOLLOW_TRAILER_LEN]; /* following: stderr's last bytes, which may start the trailer */
  size_t held_len;
  int subscribed;    /* woken by the sandbox's watch */
  int park_mode;     /* PARK_NEVER (attach, run(), E2B_TRACK_NO_PARK), PARK_ALWAYS, PARK_BEYOND_HELD */
  int holds;         /* running on with its stream kept: one of its loop's streams_held */
  int64_t park_at;   /* when it may park (0: not timed yet) */
  int at_end;        /* read nothing while the process runs and its stream holds */
  int sweep;         /* its wrapper lists its files for the sandbox's sweep if all came inline (E2B_WRAP_SWEEP) */
  int64_t timer_at[T_COUNT]; /* each purpose's deadline (e2b_now_ms); 0: not armed */
  int64_t last_contact_ms;
  long idle_ms;      /* the caller's idle_timeout_ms (0: the default) */
  int64_t reconnect_at;
  char *forgets;     /* names handed to this command's wrapper: theirs once it started */
  char *user;
  e2b_start_wait start;    /* its slot among the starts in flight (startq.c) */
  e2b_proc_opts *deferred; /* waiting for a slot: the caller's options, copied */
  int env_replace;
} track_state;

/* A command past PARK_AFTER_MS keeps its stream while its loop holds fewer
 * than E2B_STREAMS_HELD such streams; 1 when it does (until it ends). */
static int hold(track_state *s) {
  e2b_loop *loop = s->sbx->client->loop;
  if (loop->streams_held >= E2B_STREAMS_HELD) return 0;
  loop->streams_held++;
  s->holds = 1;
  return 1;
}

static void release_hold(track_state *s) {
  if (!s->holds) return;
  s->holds = 0;
  s->sbx->client->loop->streams_held--;
}

static void unsubscribe(e2b_req *op, track_state *s) {
  if (!s->subscribed) return;
  s->subscribed = 0;
  e2b_outwatch_unsubscribe(s->sbx, op);
}

/* What the loop and the sandbox lend a kept process while it may run
 * on (a start slot, a held stream, the watch), given back once it ends or
 * goes: each give-back is a no-op when nothing is held. */
static void let_go(e2b_req *op, track_state *s) {
  e2b_startq_release(s->sbx->client->loop, &s->start);
  release_hold(s);
  unsubscribe(op, s);
  if (s->follow_counted) s->sbx->followed--;
  s->follow_counted = 0;
  if (s->muted && s->live) { /* its tail, blocked on it, may finish and the wrapper end */
    e2b_req_free(s->live);
    s->live = NULL;
  }
}

/* Going before its caller heard of the start (a canceled or timed-out run,
 * a canceled spawn): nobody can own the process, so it is ended, not left
 * running — now when envd named it, else once envd answers the start. */
static void drop_unannounced(track_state *s) {
  if (s->started || !s->start_sent || s->self->done) return;
  if (s->envd_started) {
    if (s->kept) e2b_proc_end_async(s->sbx, s->pid, s->tag);
    else e2b_proc_stop_async(s->sbx, s->pid, 0);
  } else if (s->live && !e2b_req_done(s->live)) {
    e2b_proc_adopt_start(s->sbx, s->live, s->kept ? s->tag : NULL);
    s->live = NULL;
  }
}

static void track_release(void *p) {
  track_state *s = p;
  let_go(s->self, s);
  drop_unannounced(s);
  e2b_proc_opts_free(s->deferred);
  if (s->forgets && !s->envd_started) e2b_return_forgets(s->sbx, s->forgets, s->user);
}

static int set_prefix(track_state *s) {
  if (!(s->prefix = e2b_kept_prefix(s->tag))) return -1;
  s->name = s->prefix + sizeof E2B_KEPT_ROOT;
  return 0;
}

/* ---- the events handed to the reader ---- */

/* An event for the reader, its data and status copied in; NULL out of memory. */
static queued *new_event(const track_state *s, e2b_event_type type, const uint8_t *data, size_t len,
                         int exit_code, const char *status) {
  size_t slen = status ? strlen(status) + 1 : 0;
  queued *q = calloc(1, sizeof *q + len + slen + 1);
  if (!q) return NULL;
  uint8_t *p = (uint8_t *)(q + 1);
  q->ev.type = type;
  q->ev.pid = s->pid;
  if (len) memcpy(p, data, len);
  q->ev.data = p;
  q->ev.len = len;
  q->len = len;
  q->ev.exit_code = exit_code;
  q->ev.exited = type == E2B_EVENT_END && exit_code >= 0;
  if (status) {
    memcpy(p + len, status, slen);
    q->ev.status = (const char *)p + len;
  }
  return q;
}

static int emit(e2b_req *op, e2b_event_type type, const uint8_t *data, size_t len, int exit_code,
                const char *status) {
  queued *q = new_event(op->state, type, data, len, exit_code, status);
  if (!q) return -1;
  e2b_req_push_node(op, q);
  return 0;
}

static void fail(e2b_req *op, const e2b_error *err) {
  let_go(op, op->state);
  e2b_op_finish(op, err);
}

static void nomem(e2b_req *op) {
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
  fail(op, &err);
}

static void emit_start(e2b_req *op, track_state *s) {
  if (s->started) return;
  s->started = 1;
  e2b_startq_release(s->sbx->client->loop, &s->start); /* answered: the next start may go */
  if (emit(op, E2B_EVENT_START, NULL, 0, 0, NULL) != 0) nomem(op);
}

/* envd started the process: the next start may go; the caller hears of it
 * now, or once the wrapper announced that the program was found. */
static void envd_start(e2b_req *op, track_state *s, uint32_t pid) {
  if (!s->pid) s->pid = pid;
  s->envd_started = 1;
  e2b_startq_release(s->sbx->client->loop, &s->start);
  if (!s->said.announces) emit_start(op, s);
}

/* Whether n is the wrapper's announcement, taken off n; only before the start. */
static int announcement(const track_state *s, queued *n) {
  return !s->started && e2b_wrapper_announced(&s->said, n);
}

/* The command never started: report it as envd reports a Start it refuses. */
static void fail_start(e2b_req *op, track_state *s) {
  e2b_error err;
  int eacces = strcmp(s->said.start_err, "EACCES") == 0;
  e2b_err_set(&err, E2B_ERR_INVALID_ARGUMENT, op->op, "failed to start process '%s': %s", s->cmd ? s->cmd : "",
               eacces ? strerror(EACCES) : strerror(ENOENT));
  fail(op, &err);
}

static void finish_with_end(e2b_req *op, track_state *s) {
  let_go(op, s);
  if (emit(op, E2B_EVENT_END, NULL, 0, s->end.code, s->end.status) != 0) return nomem(op);
  e2b_op_finish(op, NULL);
}

static int over_cap(e2b_req *op) {
  if (op->queued_bytes < E2B_STREAM_QUEUE_CAP) return 0;
  op->throttled = 1; /* the reader's consume kicks us again */
  return 1;
}

/* Arms the op's one timer for the earliest deadline, or disarms it. */
static void rearm(e2b_req *op, const track_state *s) {
  int64_t at = 0;
  for (int t = 0; t < T_COUNT; t++)
    if (s->timer_at[t] && (!at || s->timer_at[t] < at)) at = s->timer_at[t];
  if (at) e2b_req_arm_timer(op, at - e2b_now_ms());
  else e2b_req_disarm_timer(op);
}

static void timer_set(e2b_req *op, track_state *s, int t, long ms) {
  s->timer_at[t] = e2b_now_ms() + ms;
  rearm(op, s);
}

static void timers_clear(e2b_req *op, track_state *s) {
  memset(s->timer_at, 0, sizeof s->timer_at);
  e2b_req_disarm_timer(op);
}

/* The timers whose time came, as bits (1 << T_*), cleared. */
static int timers_fired(e2b_req *op, track_state *s) {
  int64_t now = e2b_now_ms();
  int fired = 0;
  for (int t = 0; t < T_COUNT; t++) {
    if (!s->timer_at[t] || s->timer_at[t] > now) continue;
    s->timer_at[t] = 0;
    fired |= 1 << t;
  }
  if (fired) rearm(op, s);
  return fired;
}

/* The fallback poll, backing off up to POLL_MAX_MS. */
static void poll_later(e2b_req *op, track_state *s) {
  timer_set(op, s, T_POLL, s->files.poll_ms);
  if (s->files.poll_ms < POLL_MAX_MS) s->files.poll_ms *= 2;
}

/* ---- a sandbox that may be gone: a look a second while envd fails ---- */

/* A look may come before the kill it follows is known to the control plane
 * (the stream is cut first): one more a second while envd keeps failing. */
#define LOOK_GAP_MS 1000

/* An envd failure that may be the sandbox's end starts a look at the
 * control plane (gone.c), at most one a second, not one per poll. 1 when
 * the op ended (the sandbox is known gone) or waits for the look. */
static int look_if_dead(e2b_req *op, track_state *s, const e2b_error *err) {
  if (e2b_sbx_gone(s->sbx)) {
    fail(op, e2b_sbx_gone(s->sbx));
    return 1;
  }
  if (s->look) return 1;
  if ((s->looked_ms && e2b_now_ms() - s->looked_ms < LOOK_GAP_MS) || !e2b_envd_looks_dead(err)) return 0;
  s->look = e2b_op_child(op, e2b_sbx_explain(s->sbx, err));
  return s->look != NULL;
}

/* The look ended: gone ends the op, else it goes on (kept) or fails with
 * what the look made of its error (not kept). 1 while the look runs or
 * once the op ended. */
static int look_step(e2b_req *op, track_state *s) {
  if (!s->look) return 0;
  if (!e2b_req_done(s->look)) return 1;
  e2b_error said = {0};
  if (e2b_req_error(s->look)) said = *e2b_req_error(s->look);
  e2b_req_free(s->look);
  s->look = NULL;
  s->looked_ms = e2b_now_ms();
  if (said.code == E2B_ERR_NOT_FOUND || (!s->kept && said.code)) {
    fail(op, &said);
    return 1;
  }
  if (s->kept && !s->timer_at[T_POLL]) timer_set(op, s, T_POLL, s->files.poll_ms);
  return 0;
}

/* ---- PH_LIVE (not kept): the stream is the output ---- */

/* Output, but the wrapper's own before its announcement, which is kept
 * aside (bounded): it may say why the program could not start. */
static void live_data(e2b_req *op, track_state *s, queued *n) {
  if (announcement(s, n)) emit_start(op, s);
  if (s->said.announces && !s->started) {
    e2b_wrapper_heard(&s->said, &s->said.err, n->ev.data, n->ev.len);
    free(n);
    return;
  }
  n->ev.pid = s->pid;
  if (n->ev.len) e2b_req_push_node(op, n);
  else free(n);
}

/* Ended: a wrapper that never announced may say why the program could not
 * start; what else it wrote is handed on as stderr. */
static void live_end(e2b_req *op, track_state *s) {
  if (s->started) return finish_with_end(op, s);
  if (!s->said.over) e2b_wrapper_refusal(&s->said);
  if (s->said.start_err[0]) return fail_start(op, s);
  emit_start(op, s);
  const growbuf *said = &s->said.err;
  if (said->len && emit(op, E2B_EVENT_STDERR, (const uint8_t *)said->data, said->len, 0, NULL) != 0)
    return nomem(op);
  finish_with_end(op, s);
}

static void live_step(e2b_req *op, track_state *s) {
  if (look_step(op, s)) return;
  queued *n;
  while (!over_cap(op) && (n = s->live->queue_head) != NULL) {
    n = e2b_req_pop_node(s->live);
    switch (n->ev.type) {
    case E2B_EVENT_START:
      envd_start(op, s, n->ev.pid);
      free(n);
      break;
    case E2B_EVENT_END:
      s->end.known = 1;
      s->end.code = n->ev.exit_code;
      snprintf(s->end.status, sizeof s->end.status, "%s", n->ev.status ? n->ev.status : "");
      free(n);
      return live_end(op, s);
    default:
      live_data(op, s, n);
    }
  }
  if (s->live->queue_head || !e2b_req_done(s->live)) return;
  e2b_error protocol;
  const e2b_error *cut = e2b_proc_stream_cut(s->live, op->op, &protocol);
  if (!look_if_dead(op, s, cut)) fail(op, cut);
}

/* ---- kept: the stream says start and end, the files hold the output ---- */

static void unpark(e2b_req *op, track_state *s) {
  s->phase = PH_RUNNING;
  e2b_outwatch_park(s->sbx, op, NULL);
  s->reconnect_at = 0;
  s->park_at = 0; /* it may park again once the watch is back */
}

static int64_t larger(int64_t a, int64_t b) { return a > b ? a : b; }

/* Tells forget.c how large the kept files are once they are large (and as
 * they grow), so that closing the handle has the next command remove them. */
static void note_size(track_state *s) {
  if (!s->kept || !s->tag) return;
  const kept_files *f = &s->files;
  int64_t bytes = larger(f->off[0], f->told[0]) + larger(f->off[1], f->told[1]);
  if (bytes < s->files.large_noted + (1 << 20)) return; /* told at each MiB */
  if (e2b_kept_large(s->sbx, s->tag, bytes)) s->files.large_noted = bytes;
}

static void wake(e2b_req *op, char file, int64_t size) {
  track_state *s = op->state;
  if (file == 'g') { /* the watch's list no longer shows our process */
    if (s->phase == PH_PARKED && !s->end.known) s->end.gone = 1;
    e2b_op_kick(op);
    return;
  }
  /* The watch is lost: a parked reader is followed by its stream again. */
  if (!file && !e2b_outwatch_live(s->sbx)) s->files.told_all = 0;
  if (!file && s->phase == PH_PARKED && !e2b_outwatch_live(s->sbx)) unpark(op, s);
  int which = file == 'o' ? R_OUT : file == 'e' ? R_ERR : file == 'x' ? R_EXIT : -1;
  if (file && which < 0) return;
  if (which >= 0 && which < R_EXIT && size > s->files.told[which]) {
    s->files.told[which] = size;
    note_size(s);
  }
  /* A size we already have is nothing new (the file was created or closed). */
  if (which >= 0 && which < R_EXIT && size >= 0 && size <= s->files.off[which]) return;
  if (which == R_EXIT && size == 0) return;
  /* The wrapper makes the exit file holding just the boot id (36 bytes);
   * only a longer one holds the status. */
  if (which == R_EXIT && size >= 0 && size <= E2B_BOOT_ID_LEN) return;
  if (which == R_EXIT && !s->end.exit_file_ms) s->end.exit_file_ms = e2b_now_ms();
  s->files.due |= which >= 0 ? 1 << which : DUE_ALL;
  if (s->read || s->phase == PH_DRAINING || s->timer_at[T_COALESCE]) return;
  if (which >= 0 && (s->files.streaming & (1 << which))) {
    e2b_op_kick(op); /* output streams: every millisecond of delay is lost rate */
    return;
  }
  timer_set(op, s, T_COALESCE, COALESCE_MS);
}

/* Returns whether a read must catch up with what the watch did not see. */
static int subscribe(e2b_req *op, track_state *s) {
  if (s->subscribed || s->end.known || s->end.gone) return 1;
  int rc = e2b_outwatch_subscribe(s->sbx, E2B_KEPT_ROOT, s->name, op, wake);
  s->subscribed = rc >= 0;
  if (rc == 0) s->files.told_all = 1 << R_OUT | 1 << R_ERR; /* unchanged since the watch's start */
  return rc != 0;
}

/* Hands out an inlined file past what was already read; returns whether it
 * was inlined (then it needs no read). */
static int take_inline(e2b_req *op, track_state *s, int which) {
  if (!(s->said.inlined & (1 << which))) return 0;
  growbuf *b = which == R_OUT ? &s->said.out : &s->said.err;
  if ((int64_t)b->len > s->files.off[which]) {
    size_t from = (size_t)s->files.off[which];
    if (emit(op, which == R_OUT ? E2B_EVENT_STDOUT : E2B_EVENT_STDERR, (const uint8_t *)b->data + from,
             b->len - from, 0, NULL) != 0)
      return 0;
    s->files.off[which] = (int64_t)b->len;
  }
  return 1;
}

/* The caller hears of the start: the first pass is timed from it. */
static void kept_started(e2b_req *op, track_state *s) {
  if (s->started) return;
  emit_start(op, s);
  if (!s->at_end && !s->end.known && !s->follow) timer_set(op, s, T_FIRST_PASS, FIRST_PASS_MS);
}

/* ---- following: the wrapper copies the files onto its stream ---- */

/* Following, stderr: its last bytes that may start the trailer are held
 * (taken off n); held bytes that no longer may are handed on first. */
static int hold_trailer(e2b_req *op, track_state *s, queued *n) {
  uint8_t last[2 * E2B_FOLLOW_TRAILER_LEN];
  size_t tail = n->ev.len < E2B_FOLLOW_TRAILER_LEN ? n->ev.len : E2B_FOLLOW_TRAILER_LEN;
  size_t seen = s->held_len + tail;
  memcpy(last, s->held, s->held_len);
  memcpy(last + s->held_len, n->ev.data + n->ev.len - tail, tail);
  size_t keep = e2b_wrapper_trailer_hold(s->nonce, last, seen);
  size_t release = s->held_len + n->ev.len - keep;
  size_t of_held = release < s->held_len ? release : s->held_len;
  if (of_held && emit(op, E2B_EVENT_STDERR, s->held, of_held, 0, NULL) != 0) return -1;
  s->files.off[R_ERR] += (int64_t)of_held;
  memmove(s->held, last + seen - keep, keep);
  s->held_len = keep;
  n->ev.len = release - of_held;
  n->len = n->ev.len;
  return 0;
}

/* Following, output: handed on as it comes, counted as read. Stderr's last
 * bytes wait while they may be the start of the wrapper's trailer. Takes n. */
static void bulk_check(e2b_req *op, track_state *s);

static void follow_data(e2b_req *op, track_state *s, queued *n) {
  n->ev.pid = s->pid;
  if (n->ev.type == E2B_EVENT_STDERR && hold_trailer(op, s, n) != 0) {
    free(n);
    return nomem(op);
  }
  s->files.off[n->ev.type == E2B_EVENT_STDOUT ? R_OUT : R_ERR] += (int64_t)n->ev.len;
  note_size(s);
  if (n->ev.len) e2b_req_push_node(op, n);
  else free(n);
  bulk_check(op, s);
}

/* Following, the stream ended: the trailer says what came whole; bytes
 * held that are not the trailer are stderr's. */
static void follow_ended(e2b_req *op, track_state *s) {
  int said = e2b_wrapper_trailer(&s->said, s->nonce, s->held, s->held_len);
  if (said && s->said.unfollowed) s->sbx->unfollowable = 1; /* the files are read, here and from now */
  if (!said && s->held_len) {
    if (emit(op, E2B_EVENT_STDERR, s->held, s->held_len, 0, NULL) != 0) return nomem(op);
    s->files.off[R_ERR] += (int64_t)s->held_len;
  }
  s->held_len = 0;
}

/* Following, the stream broke: what it would have brought is read from
 * the files by offset (held bytes too), and a reconnected stream's data,
 * from "now", is not the output's. */
static void follow_lost(track_state *s) {
  s->follow = 0;
  s->held_len = 0;
  s->said.over = 1;
}

/* Following, bulk output (FOLLOW_BULK): the stream is no longer read, so
 * tail blocks on it; the files are read from the offsets taken, the sandbox's
 * watch says when they grow and when the exit file holds the status, which
 * ends the command as for a stream that is late (T_EXIT_GRACE). */
static void mute(e2b_req *op, track_state *s) {
  follow_lost(s);
  s->muted = 1;
  /* A watch already live may have carried the exit file's write before we
   * listened (the command often ends before its first 16 MiB are read):
   * that event will not come again, so the exit file is read now too. */
  if (subscribe(op, s) && e2b_outwatch_live(s->sbx) && !s->end.exit_file_ms)
    s->end.exit_file_ms = e2b_now_ms();
  s->files.due |= DUE_ALL;
  s->files.streaming = 1 << R_OUT | 1 << R_ERR;
}

static void bulk_check(e2b_req *op, track_state *s) {
  if (s->follow && s->files.off[R_OUT] + s->files.off[R_ERR] >= FOLLOW_BULK &&
      e2b_now_ms() - s->follow_from_ms <= FOLLOW_BULK_MS)
    mute(op, s);
}

/* Following, announced: stderr that came before the announcement (its
 * own pipe may overtake stdout's) was the follower's, so the output's. */
static void follow_announced(e2b_req *op, track_state *s) {
  const growbuf *early = &s->said.err;
  if (s->said.over) return follow_lost(s); /* more than kept aside: read from the files */
  if (!early->len) return;
  queued *q = new_event(s, E2B_EVENT_STDERR, (const uint8_t *)early->data, early->len, 0, NULL);
  if (!q) return nomem(op);
  follow_data(op, s, q);
}

/* 1 when it took n. */
static int stream_event(e2b_req *op, track_state *s, queued *n) {
  int took = 0;
  if (n->ev.type == E2B_EVENT_START) {
    int heard = s->started;
    envd_start(op, s, n->ev.pid);
    if (!heard && s->started && !s->at_end && !s->follow) timer_set(op, s, T_FIRST_PASS, FIRST_PASS_MS);
  } else if (n->ev.type == E2B_EVENT_END) {
    s->end.known = 1;
    s->end.code = n->ev.exit_code;
    snprintf(s->end.status, sizeof s->end.status, "%s", n->ev.status ? n->ev.status : "");
    if (s->follow && s->started) follow_ended(op, s);
    else e2b_wrapper_ended(&s->said);
    if (!s->said.start_err[0]) kept_started(op, s); /* ended before it announced (say, no files) */
  } else if (announcement(s, n)) {
    kept_started(op, s);
    if (s->follow) follow_announced(op, s);
    s->said.err.len = 0; /* nothing the wrapper wrote before is the command's */
    if ((took = s->follow)) follow_data(op, s, n);
    else e2b_wrapper_heard(&s->said, &s->said.out, n->ev.data, n->ev.len);
  } else if (n->ev.type == E2B_EVENT_STDOUT || n->ev.type == E2B_EVENT_STDERR) {
    if ((took = s->follow && s->started)) follow_data(op, s, n);
    else e2b_wrapper_heard(&s->said, n->ev.type == E2B_EVENT_STDOUT ? &s->said.out : &s->said.err, n->ev.data,
                           n->ev.len);
  }
  s->last_contact_ms = e2b_now_ms();
  s->looked_ms = 0;
  return took;
}

/* Follows the process's own stream; reconnects by pid when it breaks
 * (envd's tag lookup stops at the first other tagged process it meets, so
 * a tag is only matched in its list; the tag serves while no pid is known). */
static void stream_step(e2b_req *op, track_state *s) {
  if (s->muted) return;
  if (!s->live) {
    if (s->phase == PH_PARKED || s->end.known || s->end.gone || e2b_now_ms() < s->reconnect_at) return;
    e2b_error err;
    s->live = e2b_op_child(op, e2b_proc_connect_stream(s->sbx, s->pid, s->pid ? NULL : s->tag, s->idle_ms,
                                                       E2B_STREAM_EVENTS, &err));
    if (!s->live) s->reconnect_at = e2b_now_ms() + POLL_MAX_MS;
    return;
  }
  queued *n;
  while (!s->muted && !(s->follow && over_cap(op)) && (n = e2b_req_pop_node(s->live)))
    if (!stream_event(op, s, n)) free(n);
  if (s->muted) return;
  if (op->done || s->live->queue_head || !e2b_req_done(s->live)) return;
  const e2b_error *err = e2b_req_error(s->live);
  /* Cut after envd's start but before the wrapper's announcement: the
   * files tell the rest, as after any cut. */
  if (!s->started && s->envd_started && !s->said.start_err[0]) kept_started(op, s);
  if (!s->started && !s->said.start_err[0]) {
    e2b_error protocol;
    if (!err) e2b_err_set(&protocol, E2B_ERR_PROTOCOL, op->op, "process stream ended before its start");
    return fail(op, err ? err : &protocol);
  }
  if (err && err->code == E2B_ERR_NOT_FOUND) s->end.gone = 1;
  e2b_error cut = {0};
  if (err) cut = *err;
  e2b_req_free(s->live);
  s->live = NULL;
  if (s->follow) follow_lost(s);
  s->reconnect_at = e2b_now_ms() + s->files.poll_ms;
  s->files.due |= DUE_ALL; /* whatever happened meanwhile is in the files */
  if (!s->end.gone && err) look_if_dead(op, s, &cut);
}

static const char *const file_ext[] = {"out", "err", "exit"};

/* curl's receive buffer for a read of this file. curl allocates it for
 * the whole transfer, and readers that start or end together (a burst of
 * spawns, parked commands ending at once) read at the same time: each
 * asking for E2B_FILE_IO_BUFFER made 1,000 parked ends peak at about 82 MB
 * of heap, and a burst of 4,000 spawns first-pass reads of empty files
 * hundreds of MB (bench/README.md). So a read asks for what the watch says
 * is there: that plus a little when it told every growth since our last
 * read, that plus UNKNOWN_READ_BUFFER when it may not have (a file bigger
 * than told only costs this read speed). A file whose last read gave
 * STREAMING_READ streams, and gets the large buffer. The exit file is a
 * status line. */
static long read_buffer(const track_state *s, int which) {
  if (which == R_EXIT) return E2B_SMALL_READ_BUFFER;
  if (s->files.streaming & (1 << which)) return E2B_FILE_IO_BUFFER;
  int64_t left = s->files.told[which] > s->files.off[which] ? s->files.told[which] - s->files.off[which] : 0;
  left += (s->files.told_all & (1 << which)) ? E2B_SMALL_READ_BUFFER : UNKNOWN_READ_BUFFER;
  return left < E2B_FILE_IO_BUFFER ? (long)left : E2B_FILE_IO_BUFFER;
}

static void start_read(e2b_req *op, track_state *s, int which) {
  char path[512];
  snprintf(path, sizeof path, "%s.%s", s->prefix, file_ext[which]);
  e2b_error err;
  s->files.reading = which;
  s->files.read_got = 0;
  s->files.small.len = 0;
  s->read = e2b_op_child(op, e2b_file_read_sized(s->sbx, path, "root", which < R_EXIT ? s->files.off[which] : 0,
                                                 read_buffer(s, which), &err));
  if (!s->read) {
    s->files.due = 0;
    timer_set(op, s, T_POLL, s->files.poll_ms);
  }
}

static void take_read(e2b_req *op, track_state *s) {
  queued *n;
  while (!over_cap(op) && (n = e2b_req_pop_node(s->read))) {
    if (s->files.reading <= R_ERR) {
      n->ev.type = s->files.reading == R_OUT ? E2B_EVENT_STDOUT : E2B_EVENT_STDERR;
      n->ev.pid = s->pid;
      s->files.off[s->files.reading] += (int64_t)n->ev.len;
      s->files.read_got += (int64_t)n->ev.len;
      if (n->ev.len) s->files.pass_new |= 1 << s->files.reading;
      e2b_req_push_node(op, n);
    } else {
      if (s->files.small.len < 256) e2b_growbuf_append(&s->files.small, n->ev.data, n->ev.len);
      free(n);
    }
  }
  note_size(s);
}

/* "STATUS BOOTID\n"; without its newline the file holds only the boot id
 * (perhaps bash's job report behind it): the command has not ended. */

static void read_exit_file(track_state *s) {
  if (s->end.known) return;
  if (!s->files.small.len || s->files.small.data[s->files.small.len - 1] != '\n') {
    /* Not written yet: its next event times it again; but one that came
     * while this read was answered (R_EXIT due again) may have been its
     * last, so it stays late and is read once more. */
    if (s->files.due & (1 << R_EXIT)) return;
    s->end.exit_file_ms = s->end.exit_late = 0;
    return;
  }
  long parsed;
  if (e2b_kept_status(s->files.small.data, s->files.small.len, &parsed) < 0 || parsed < -64 || parsed > 255) {
    s->end.exit_file_ms = s->end.exit_late = 0;
    return;
  }
  int code = (int)parsed;
  /* 126 or 127 and no output may be a command that could not start, which
   * only the wrapper's stream tells (fail_start): that waits for it. */
  if ((code == 126 || code == 127) && !s->files.off[0] && !s->files.off[1] && s->live && !e2b_req_done(s->live)) {
    s->end.exit_late = 0;
    return;
  }
  s->end.known = 1;
  s->end.code = code < 0 ? -1 : code;
  if (code < 0) e2b_signal_status(-code, s->end.status, sizeof s->end.status);
  else snprintf(s->end.status, sizeof s->end.status, "exit status %d", code);
}

/* A read ended: 416 is "nothing past our offset", 404 "not there (yet)". */
static int read_ended(e2b_req *op, track_state *s) {
  e2b_error err_copy, *err = NULL;
  if (e2b_req_error(s->read)) err = memcpy(&err_copy, e2b_req_error(s->read), sizeof err_copy);
  int status = e2b_req_status(s->read);
  e2b_req_free(s->read);
  s->read = NULL;
  int absent = err && status == 404;
  /* A 429 the read's own retries did not get past is E2B refusing this
   * client, not a sandbox that cannot be read: said as it is, at once. */
  if (err && err->code == E2B_ERR_RATE_LIMITED) {
    fail(op, err);
    return -1;
  }
  if (err && status != 416 && !absent) {
    s->files.due = 0;
    if (look_if_dead(op, s, err)) return -1;
    int64_t contact = s->last_contact_ms;
    if ((s->phase == PH_PARKED || s->end.parked) && e2b_outwatch_contact(s->sbx) > contact)
      contact = e2b_outwatch_contact(s->sbx);
    long budget = e2b_idle_budget_ms(s->idle_ms);
    if (e2b_now_ms() - contact > budget) {
      e2b_error idle = *err;
      snprintf(idle.message, sizeof idle.message,
               "idle timeout: the sandbox could not be read for %ld ms (idle_timeout_ms); last: %.200s",
               budget, err->message);
      idle.code = E2B_ERR_TIMEOUT;
      fail(op, &idle);
      return -1;
    }
    poll_later(op, s);
    return -1;
  }
  s->last_contact_ms = e2b_now_ms();
  s->looked_ms = 0;
  if (absent) s->files.absent |= 1 << s->files.reading;
  /* read to its end: from here on the watch tells each growth */
  int which = s->files.reading;
  if (which < R_EXIT && s->subscribed && e2b_outwatch_live(s->sbx)) s->files.told_all |= 1 << which;
  if (s->files.reading < R_EXIT) {
    s->files.streaming &= ~(1 << s->files.reading);
    if (s->files.read_got >= STREAMING_READ) s->files.streaming |= 1 << s->files.reading;
  }
  if (s->files.reading == R_EXIT && !absent) read_exit_file(s);
  return 0;
}

/* No kept output at all. A process reported started is running or has run
 * under the wrapper: its files are on their way, so look again (bounded). */
static void files_missing(e2b_req *op, track_state *s) {
  int64_t now = e2b_now_ms();
  if (s->started && !s->files.missing_since_ms) s->files.missing_since_ms = now;
  if (s->started && now - s->files.missing_since_ms < KEPT_GRACE_MS) return poll_later(op, s);
  e2b_error err;
  if (s->started)
    e2b_err_set(&err, E2B_ERR_NOT_FOUND, op->op,
                "process %s was started but its kept output did not appear within %d ms", s->tag,
                KEPT_GRACE_MS);
  else
    e2b_err_set(&err, E2B_ERR_NOT_FOUND, op->op,
                "process %s has no kept output (not started by e2b_proc_track, or forgotten)", s->tag);
  fail(op, &err);
}

/* Ended with none of its files left: a cold boot (a resume after a
 * filesystem-only pause) empties /tmp, as E2B's images wipe it at boot.
 * No status can be told, so none is made up. */
static void output_lost(e2b_req *op, track_state *s) {
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_NOT_FOUND, op->op,
              "process %s is gone and its kept output is lost: none of its files is left "
              "(a cold boot, such as a resume after a filesystem-only pause, empties /tmp)",
              s->tag);
  fail(op, &err);
}

/* What an ended process still needs read: a file the wrapper called empty
 * holds nothing past offset 0. */
static int final_due(const track_state *s) {
  int due = s->end.known ? 0 : 1 << R_EXIT;
  if (s->said.nonempty < 0 || (s->said.nonempty & 1) || s->files.off[0]) due |= 1 << R_OUT;
  if (s->said.nonempty < 0 || (s->said.nonempty & 2) || s->files.off[1]) due |= 1 << R_ERR;
  return due;
}

/* PH_DRAINING: a pass is over: finish, or read on until nothing comes. */
static void drain_pass_over(e2b_req *op, track_state *s, int full, int absent, int fresh) {
  if (full && absent == DUE_ALL && !s->end.known) return output_lost(op, s);
  if (s->end.known || !fresh) {
    /* The wrapper records every end but SIGKILL's, so one that was
     * running when it parked, gone with no status, was SIGKILLed; one
     * found already gone may have ended with an earlier boot. */
    if (!s->end.known) {
      s->end.code = -1;
      snprintf(s->end.status, sizeof s->end.status, "%s",
               s->end.killed || s->end.parked ? "signal: killed" : "killed (no exit status recorded)");
    }
    return finish_with_end(op, s);
  }
  s->files.due = final_due(s); /* gone without an exit status: read until nothing comes */
}

/* A pass is over: finish (draining), or decide when to look again. */
static void pass_over(e2b_req *op, track_state *s) {
  int full = s->files.full_pass, absent = s->files.absent, fresh = s->files.pass_new;
  s->files.full_pass = 0;
  s->files.absent = 0;
  s->files.pass_new = 0;
  if (s->phase == PH_DRAINING) return drain_pass_over(op, s, full, absent, fresh);
  if (full && absent == DUE_ALL && !s->end.known) return files_missing(op, s);
  s->files.missing_since_ms = 0;
  if (s->end.known || s->end.gone) return;
  /* A file that just gave bytes is likely still growing. Without a live
   * watch it is read again at once; with one, its next event says so (an
   * event with a size past our offset, or none said, sets what is due
   * itself, also during a read: every write is followed by an event whose
   * stat comes after it). Otherwise, without a live watch, a backing-off
   * poll. */
  int watched = s->subscribed && e2b_outwatch_live(s->sbx);
  if (fresh) s->files.poll_ms = POLL_MIN_MS;
  if (!watched) s->files.due |= fresh;
  if (!s->files.due && !watched) poll_later(op, s);
}

/* Once the exit file was seen EXIT_GRACE_MS ago, it is read although the
 * stream holds; until then, T_EXIT_GRACE is due by that time. */
static void exit_overdue(e2b_req *op, track_state *s) {
  if (s->end.exit_file_ms <= 0 || s->end.known) return;
  int64_t at = s->end.exit_file_ms + (s->muted ? 0 : EXIT_GRACE_MS); /* a muted stream is never read */
  if (at <= e2b_now_ms()) {
    s->end.exit_file_ms = -1;
    s->end.exit_late = 1;
    s->files.due |= 1 << R_EXIT;
  } else if (s->timer_at[T_EXIT_GRACE] != at) {
    s->timer_at[T_EXIT_GRACE] = at;
    rearm(op, s);
  }
}

/* PH_RUNNING: a command still running PARK_AFTER_MS after its start parks
 * (PH_PARKED) once its sandbox's watch is live, unless its mode keeps its
 * stream (header comment). */
static void park_check(e2b_req *op, track_state *s) {
  if (s->phase != PH_RUNNING || s->park_mode == PARK_NEVER || s->holds || !s->tag || !s->live ||
      e2b_req_done(s->live) || s->end.known || s->end.gone || s->said.start_err[0])
    return;
  int64_t now = e2b_now_ms();
  if (!s->park_at) s->park_at = now + PARK_AFTER_MS;
  long wait_ms = (long)(s->park_at - now);
  if (wait_ms <= 0 && s->park_mode == PARK_BEYOND_HELD && hold(s)) return;
  if (wait_ms <= 0 && !s->subscribed) s->files.due |= subscribe(op, s) ? DUE_ALL : 0;
  if (wait_ms <= 0 && s->subscribed && e2b_outwatch_live(s->sbx)) {
    e2b_req_free(s->live);
    s->live = NULL;
    s->phase = PH_PARKED;
    s->timer_at[T_PARK] = 0;
    e2b_outwatch_park(s->sbx, op, s->tag);
    return;
  }
  if (!s->timer_at[T_PARK]) timer_set(op, s, T_PARK, wait_ms > 0 ? wait_ms : PARK_RETRY_MS);
}

/* The read in flight: its bytes handed on and, once it ended, the pass
 * goes on or is over. 1 while it runs, or once the op ended. */
static int read_step(e2b_req *op, track_state *s) {
  if (!s->read) return 0;
  take_read(op, s);
  if (!e2b_req_done(s->read) || s->read->queue_head) return 1;
  if (read_ended(op, s) != 0) return 1;
  if (!s->files.due) pass_over(op, s);
  return op->done;
}

/* What the timers that fired make due. T_COALESCE: the wake set it;
 * T_PARK: park_check; T_EXIT_GRACE: exit_overdue. A watch not started yet
 * wakes its readers when it starts (a listing says whose files grew
 * before) or, if it fails, when it is lost. */
static void timers_step(e2b_req *op, track_state *s) {
  if (!(timers_fired(op, s) & (1 << T_FIRST_PASS | 1 << T_POLL))) return;
  if (s->phase == PH_DRAINING) s->files.due |= final_due(s);
  else if (!s->subscribed) s->files.due |= subscribe(op, s) ? DUE_ALL : 0;
  else s->files.due |= DUE_ALL; /* the fallback poll */
}

/* Starts the next read of what is due (the exit file only when the stream
 * is late or gone: while it holds, the end comes from it). */
static void next_read(e2b_req *op, track_state *s) {
  /* A muted stream says nothing: without a live watch to tell of the exit
   * file, each pass reads it too. */
  int stream_holds = s->live && !e2b_req_done(s->live) && !s->end.exit_late &&
                     !(s->muted && !e2b_outwatch_live(s->sbx));
  if (s->end.known || stream_holds) s->files.due &= ~(1 << R_EXIT);
  if (!s->files.due || s->timer_at[T_COALESCE] || over_cap(op)) return;
  if (s->files.due == DUE_ALL) s->files.full_pass = 1;
  int which = s->files.due & 1 ? R_OUT : s->files.due & 2 ? R_ERR : R_EXIT;
  s->files.due &= ~(1 << which);
  start_read(op, s, which);
}

/* PH_RUNNING or PH_PARKED -> PH_DRAINING: the command ended or is gone.
 * What came inline needs no read; 1 when nothing is left to read. */
static int drain(e2b_req *op, track_state *s) {
  timers_clear(op, s);
  unsubscribe(op, s);
  s->end.parked = s->phase == PH_PARKED;
  s->phase = PH_DRAINING;
  s->files.due = final_due(s);
  if (take_inline(op, s, R_OUT)) s->files.due &= ~(1 << R_OUT);
  if (take_inline(op, s, R_ERR)) s->files.due &= ~(1 << R_ERR);
  return !s->files.due;
}

/* PH_RUNNING and PH_PARKED: read as the watch or the poll says, park when
 * due; the end (the stream's, the exit file's, or gone) drains. */
static void running_step(e2b_req *op, track_state *s) {
  if (read_step(op, s)) return;
  timers_step(op, s);
  if ((s->end.known || s->end.gone) && drain(op, s)) return finish_with_end(op, s);
  park_check(op, s);
  exit_overdue(op, s);
  next_read(op, s);
}

/* PH_DRAINING: the files are read to their end (drain_pass_over finishes). */
static void draining_step(e2b_req *op, track_state *s) {
  if (read_step(op, s)) return;
  timers_step(op, s);
  next_read(op, s);
}

/* Every kept phase follows the process's own stream (held, or reconnected
 * unless parked) and a look at a sandbox that may be gone; then its own
 * handler. PH_STARTING becomes PH_RUNNING once the caller heard the start. */
static void kept_step(e2b_req *op, track_state *s) {
  if (look_step(op, s)) return;
  if (e2b_sbx_gone(s->sbx)) return fail(op, e2b_sbx_gone(s->sbx));
  stream_step(op, s);
  if (op->done || s->look) return;
  if (s->said.start_err[0] && s->end.known) return fail_start(op, s);
  if (s->phase == PH_STARTING && s->started) s->phase = PH_RUNNING;
  switch (s->phase) {
  case PH_RUNNING:
  case PH_PARKED: return running_step(op, s);
  case PH_DRAINING: return draining_step(op, s);
  default: return; /* PH_STARTING */
  }
}

/* ---- PH_FINDING (attach): find the process first ---- */

/* Kept: the first pass reads all three files, and the phase is RUNNING
 * (DRAINING once it sees the process gone); else it follows the process
 * from now (PH_LIVE). */
static void found(e2b_req *op, track_state *s, int listed) {
  emit_start(op, s);
  if (!s->kept) {
    e2b_error cerr;
    s->phase = PH_LIVE;
    s->live = e2b_op_child(op, e2b_proc_connect(s->sbx, s->pid, NULL, s->idle_ms, &cerr));
    if (!s->live) fail(op, &cerr);
    return;
  }
  s->phase = PH_RUNNING;
  s->last_contact_ms = e2b_now_ms();
  s->files.due = DUE_ALL;
  /* The command may have ended while its wrapper still runs (the stream
   * then ends later): the first pass reads the exit file too. */
  s->end.exit_late = 1;
  if (listed) subscribe(op, s);
  kept_step(op, s);
}

static void list_step(e2b_req *op, track_state *s) {
  if (!e2b_req_done(s->list)) return;
  const e2b_error *err = e2b_req_error(s->list);
  if (err) return fail(op, err);
  int listed = 0, kept = 0;
  for (size_t i = 0; i < e2b_req_proc_count(s->list); i++) {
    const e2b_proc_info *p = e2b_req_proc_at(s->list, i);
    if ((s->pid && p->pid == s->pid) || (s->tag && p->tag && strcmp(p->tag, s->tag) == 0)) {
      listed = 1;
      kept = p->kept;
      s->pid = p->pid;
      if (!s->tag && p->tag && !(s->tag = strdup(p->tag))) return nomem(op);
    }
  }
  e2b_req_free(s->list);
  s->list = NULL;
  if (!listed) {
    s->end.gone = 1;
    if (!s->tag) {
      e2b_error nf;
      e2b_err_set(&nf, E2B_ERR_NOT_FOUND, op->op, "no process with pid %u", s->pid);
      return fail(op, &nf);
    }
  }
  if (!s->tag || (listed && !kept)) {
    /* Running but not wrapped by us: nothing to read back; follow it from now. */
    s->kept = 0;
  } else if (set_prefix(s) != 0) {
    return nomem(op);
  }
  if (!s->kept && (s->files.off[0] || s->files.off[1])) {
    e2b_error un;
    e2b_err_set(&un, E2B_ERR_UNSUPPORTED, op->op,
                "process %u keeps no output, so offsets cannot be honoured", s->pid);
    return fail(op, &un);
  }
  found(op, s, listed);
}

static void start_deferred(e2b_req *op, track_state *s);

/* One handler per phase. */
static void track_advance(e2b_req *op) {
  track_state *s = op->state;
  switch (s->phase) {
  case PH_WAIT_SLOT: return start_deferred(op, s);
  case PH_FINDING: return list_step(op, s);
  case PH_LIVE:
    if (s->live) live_step(op, s);
    return;
  default: return kept_step(op, s);
  }
}

#define TRACK_AT(f) offsetof(track_state, f)
static const e2b_op_kind track_kind = {
    .size = sizeof(track_state), .release = track_release,
    .children = E2B_FIELDS(TRACK_AT(live), TRACK_AT(list), TRACK_AT(read), TRACK_AT(look)),
    .bufs = E2B_FIELDS(TRACK_AT(files.small), TRACK_AT(said.out), TRACK_AT(said.err)),
    .allocs = E2B_FIELDS(TRACK_AT(forgets), TRACK_AT(user), TRACK_AT(tag), TRACK_AT(prefix), TRACK_AT(cmd)),
    .holds = E2B_OP_HOLDS_SBX, .ref = TRACK_AT(sbx), .key = TRACK_AT(tag)};

/* ---- entry points ---- */

/* The op first, its state's defaults set: the op, or NULL with err. */
static e2b_req *new_op(e2b_sbx *sbx, const char *op, const char *tag, long idle_ms, e2b_error *err) {
  e2b_req *req = e2b_op_new(&track_kind, NULL, sbx, op, track_advance, tag, err);
  if (!req) return NULL;
  track_state *s = req->state;
  s->self = s->start.op = req;
  s->idle_ms = idle_ms; /* 0: the default, which the streams and e2b_idle_budget_ms apply */
  s->kept = 1;
  s->said.nonempty = -1;
  s->files.poll_ms = POLL_MIN_MS;
  return req;
}

/* opts->tag, or a generated "e2b-<uuid>" in gen. */
static const char *tag_of(const e2b_proc_opts *opts, char *gen, size_t n) {
  if (opts->tag) return opts->tag;
  char id[E2B_UUID_SIZE];
  if (e2b_uuid4(id) != 0) return NULL;
  snprintf(gen, n, "e2b-%s", id);
  return gen;
}

/* Names the wrapper removes; they go back to the queue unless it starts. */
static void take_forgets(track_state *s, const char *user) {
  if (!s->kept || !(s->forgets = e2b_take_forgets(s->sbx, user))) return;
  if (user && !(s->user = strdup(user))) {
    e2b_return_forgets(s->sbx, s->forgets, user);
    free(s->forgets);
    s->forgets = NULL;
  }
}

/* A streaming reader of a kept command that will not park is followed:
 * its wrapper copies the files onto its stream, so while that stream holds
 * the output costs no read (one request, as an unkept command's), and
 * offsets stay the truth should it break. Bounded per sandbox
 * (E2B_FOLLOWED_PER_SANDBOX); by default it takes one of the loop's held
 * streams at once, as a command that runs on would at PARK_AFTER_MS. */
static int follow_wanted(track_state *s) {
  if (!s->kept || s->at_end || s->park_mode == PARK_ALWAYS || s->sbx->unfollowable ||
      s->sbx->followed >= E2B_FOLLOWED_PER_SANDBOX)
    return 0;
  if (e2b_random_hex(s->nonce, E2B_FOLLOW_NONCE_LEN) != 0) return 0;
  if (s->park_mode == PARK_BEYOND_HELD && !hold(s)) return 0;
  s->sbx->followed++;
  s->follow_counted = 1;
  return 1;
}

/* Starts the wrapped command's stream (s->live); 0, or -1 with err. */
static int launch(track_state *s, const e2b_proc_opts *opts, int env_replace, e2b_error *err) {
  if (s->kept) e2b_forget_unqueue(s->sbx, s->tag);
  take_forgets(s, opts->user);
  s->follow = follow_wanted(s);
  s->follow_from_ms = e2b_now_ms();
  e2b_wrapped w;
  unsigned how = (s->park_mode != PARK_NEVER ? E2B_WRAP_PARKABLE : 0) | (s->sweep ? E2B_WRAP_SWEEP : 0);
  if (e2b_wrap(&w, opts, s->kept ? s->prefix : NULL, env_replace, s->forgets, how, s->follow ? s->nonce : NULL) != 0) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "process.start", "out of memory");
    return -1;
  }
  w.opts.tag = s->tag;
  s->said.announces = w.announces;
  /* A kept command's stream carries its events; its output goes to files
   * (and onto the stream too, when followed). */
  s->live = e2b_proc_start_stream(s->sbx, &w.opts, s->kept && !s->follow ? E2B_STREAM_EVENTS : 0, err);
  s->start_sent = s->live != NULL;
  e2b_wrapped_free(&w);
  if (!s->live) return -1;
  e2b_op_child(s->self, s->live);
  s->phase = s->kept ? PH_STARTING : PH_LIVE;
  return 0;
}

/* PH_WAIT_SLOT: a start that waited for a slot goes once it has one. */
static void start_deferred(e2b_req *op, track_state *s) {
  if (!e2b_startq_take(s->sbx->client->loop, &s->start)) return;
  e2b_proc_opts *o = s->deferred;
  s->deferred = NULL;
  e2b_error err;
  int rc = launch(s, o, s->env_replace, &err);
  e2b_proc_opts_free(o);
  if (rc != 0) fail(op, &err);
}

/* The op exists first, so a start past E2B_STARTS_IN_FLIGHT can wait as it. */
static e2b_req *start_or_wait(e2b_req *op, const e2b_proc_opts *opts, int env_replace,
                              e2b_error *err) {
  track_state *s = op->state;
  s->env_replace = env_replace;
  if (!e2b_startq_take(op->loop, &s->start)) {
    s->phase = PH_WAIT_SLOT;
    if ((s->deferred = e2b_proc_opts_dup(opts))) return op;
    return e2b_op_nomem(op, err);
  }
  if (launch(s, opts, env_replace, err) == 0) return op;
  e2b_req_free(op);
  return NULL;
}

e2b_req *e2b_proc_track(e2b_sbx *sbx, const e2b_proc_opts *opts, unsigned flags, e2b_error *err) {
  const char *op = "process.start";
  /* The caller's own fields are checked as they are (the wrapper moves them). */
  if (e2b_need_sbx(sbx, op, err) || e2b_proc_opts_check(opts, err) != 0) return NULL;
  char gen[E2B_UUID_SIZE + 8];
  const char *tag = tag_of(opts, gen, sizeof gen);
  if (!tag) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "random generator unavailable");
    return NULL;
  }
  e2b_req *req = new_op(sbx, op, tag, opts->idle_timeout_ms, err);
  if (!req) return NULL;
  track_state *s = req->state;
  if (set_prefix(s) != 0 || !(s->cmd = strdup(opts->shell ? "/bin/bash" : opts->cmd))) return e2b_op_nomem(req, err);
  s->kept = !(flags & E2B_TRACK_NO_KEEP) && opts->pty_cols == 0;
  s->at_end = (flags & E2B_TRACK_AT_END) != 0;
  /* Only a reader that fails within half the sweep's wait may leave its
   * files to it (E2B_WRAP_SWEEP). */
  s->sweep = s->kept && s->at_end && (flags & E2B_TRACK_SWEEP) &&
             e2b_idle_budget_ms(s->idle_ms) <= E2B_KEPT_SWEEP_S * 1000L / 2;
  s->park_mode = flags & E2B_TRACK_PARK       ? PARK_ALWAYS
                 : flags & E2B_TRACK_NO_PARK ? PARK_NEVER
                                             : PARK_BEYOND_HELD;
  return e2b_req_typed(start_or_wait(req, opts, (flags & E2B_TRACK_ENV_REPLACE) != 0, err),
                       E2B_RESULT_STREAM);
}

e2b_req *e2b_proc_attach(e2b_sbx *sbx, uint32_t pid, const char *tag, int64_t stdout_offset,
                         int64_t stderr_offset, long idle_timeout_ms, e2b_error *err) {
  const char *op = "process.attach";
  e2b_error_clear(err);
  if (!sbx || (!pid && (!tag || !*tag))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "pid or tag is required");
    return NULL;
  }
  if (stdout_offset < 0 || stderr_offset < 0 || idle_timeout_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "offsets and idle_timeout_ms must not be negative");
    return NULL;
  }
  if (tag && !e2b_utf8_valid(tag, strlen(tag))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "tag is not valid UTF-8");
    return NULL;
  }
  e2b_req *req = new_op(sbx, op, tag, idle_timeout_ms, err);
  if (!req) return NULL;
  track_state *s = req->state;
  s->pid = pid;
  s->phase = PH_FINDING;
  s->files.off[0] = stdout_offset;
  s->files.off[1] = stderr_offset;
  if (!(s->list = e2b_op_child(req, e2b_proc_list(sbx, err)))) {
    e2b_req_free(req);
    return NULL;
  }
  return e2b_req_typed(req, E2B_RESULT_STREAM);
}

static track_state *tstate(const e2b_req *req) {
  return req && req->advance == track_advance ? req->state : NULL;
}

uint32_t e2b_req_proc_pid(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s ? s->pid : 0;
}

const char *e2b_req_proc_tag(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s ? s->tag : NULL;
}

const char *e2b_req_proc_kept(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s && s->kept ? s->prefix : NULL;
}

int e2b_req_proc_swept(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s && s->sweep && s->said.nonempty >= 0 && !s->said.over && s->said.inlined == s->said.nonempty;
}

int e2b_req_proc_tracked(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s ? s->kept : 0;
}

int e2b_req_proc_parked(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s ? s->phase == PH_PARKED || s->end.parked : 0;
}

void e2b_req_proc_killed(e2b_req *req) {
  track_state *s = tstate(req);
  if (!s || req->done) return;
  s->end.killed = 1;
  if (s->phase == PH_PARKED && !s->end.known && !s->end.gone) {
    s->end.gone = 1;
    e2b_op_kick(req);
  }
}
