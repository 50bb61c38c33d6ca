/* track.c — tracked processes: byte-exact output polling.
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
 * Parking (E2B_TRACK_PARK, asked for): a kept command still running PARK_AFTER_MS after its start, with
 * its sandbox's watch live, has its own stream closed (a curl handle and a
 * connection here, a socket and a thread in e2b-local) and is not
 * reconnected while parked: its end is the exit file, which the watch
 * reports, and its output is read from the files as before. A command
 * killed with SIGKILL writes no exit file; the watch's shared process list
 * (outwatch.c) reports it gone, and the files are read to their end. If the
 * watch is lost the reader unparks: it reconnects its stream, as an
 * unparked reader whose stream broke does.
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MIN_MS 50
#define POLL_MAX_MS 2000
/* A process that ends this soon is read once, after its end. */
#define FIRST_PASS_MS 20
/* A write is read this much later, so a command that writes its last line
 * and ends costs one read, not two. */
#define COALESCE_MS 10
/* A file whose last read gave this much is streaming: it is read again as
 * soon as the watch says it grew, without COALESCE_MS. */
#define STREAMING_READ (64 << 10)
/* The wrapper writes the exit file before its own last steps (it copies a
 * small output into its stream, it prints its flags): its stream normally
 * ends right after. If it has not this long after the watch saw the exit
 * file, the exit file ends the process: the output files are complete. */
#define EXIT_GRACE_MS 50
/* The most a wrapper copies into its own stream at the end (the wrapper's
 * __e2b_slurp says 32768 too). */
#define INLINE_MAX 32768
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

/* Prunes the environment to E2B_ENV_KEEP's names (and PATH) when that is
 * set: the one piece the kept wrapper and the plain one share. */
#define PRUNE_ENV                                                                              \
  "if [ -n \"${E2B_ENV_KEEP+x}\" ]; then\n"                                                      \
  "  __k=\" $E2B_ENV_KEEP PATH \"\n"                                                            \
  "  for __v in $(compgen -e); do case \"$__k\" in *\" $__v \"*) ;; *) unset \"$__v\" 2>/dev/null;; esac; done\n" \
  "fi\n"

/* $1: the files' path prefix; the rest: the command, or with $0 e2b-sh a
 * shell string the wrapper itself runs (it is then started as `bash -l`,
 * as E2B runs a command string, so the string costs a fork, not a second
 * bash). The files are made private (umask 077, the caller's umask read
 * from /proc and restored for the command). Three files, not four: on
 * this disk creating a file is the wrapper's largest cost (bench/README.md),
 * so the exit file first holds the boot id alone, with no newline, and
 * once the command ended "STATUS BOOTID\n": an exit file that ends in a
 * newline means the output files are complete (files an older wrapper made
 * say "STATUS\n" there and keep the boot id in .boot). The wrapper traps catchable signals (a trap is reset
 * in the command), so a signal to the process group reaches the command
 * without losing its exit status; only SIGKILL ends both. A wrapper that got
 * TERM, INT, HUP or QUIT (a signal to the group, or `kill $$` in a command
 * string), or whose command a signal ended, records minus the signal's
 * number as the status once the command ended and then ends by that signal
 * itself, as the unwrapped shell would have (no core file). A command that
 * cannot be started is reported on the wrapper's stderr as
 * "!ENOENT"/"!EACCES", as envd would refuse it. At the end the wrapper
 * copies a small file (up to INLINE_MAX bytes and 256 NULs; it reads no
 * more than that of a larger one) to its own stdout or stderr, so a short command's output needs no read, and ends its
 * stdout with one letter, 'a' + flags: 1 out non-empty, 2 err non-empty,
 * 4 out inline, 8 err inline. It ends without
 * the exit builtin, which would run a login shell's ~/.bash_logout. It
 * removes, in the background and in a process group of its own (a kill
 * of this command's group must not stop it), the files of earlier commands
 * named in E2B_FORGET (see forget.c). The
 * command's environment is pruned to E2B_ENV_KEEP's names when that is
 * set. The script travels in E2B_PROC, so a process list shows
 * `bash -c eval "$E2B_PROC" e2b-proc PREFIX cmd args`, not the script. */
static const char WRAPPER[] =
    "unset E2B_PROC; __p=$1; shift\n"
    "[ -d \"${__p%/*}\" ] || mkdir -m 1777 \"${__p%/*}\" 2>/dev/null\n"
    "while read -r __k __m; do [ \"$__k\" = Umask: ] && break; done </proc/self/status\n"
    "umask 077\n"
    "read -r __b </proc/sys/kernel/random/boot_id 2>/dev/null\n"
    "{ printf %s \"$__b\" >\"$__p.exit\" && : >\"$__p.out\" && : >\"$__p.err\"; } 2>/dev/null || exit 125\n"
    "umask \"${__m:-022}\"\n"
    "if [ -n \"${E2B_FORGET-}\" ]; then\n"
    "  __l=; for __n in $E2B_FORGET; do case $__n in *[!0-9a-f]*) ;; *) __l=\"$__l $__n.out $__n.err $__n.exit $__n.boot\";; esac; done\n"
    "  if [ -n \"$__l\" ]; then set -m; (cd \"${__p%/*}\" && exec rm -f -- $__l) </dev/null >/dev/null 2>&1 & set +m; fi\n"
    "fi\n"
    "unset E2B_FORGET __n __l\n"
    PRUNE_ENV
    "unset E2B_ENV_KEEP __k __m __v\n"
    "__e2b_slurp() {\n"
    "  local LC_ALL=C c t=0 i=0; local -a v\n"
    "  while IFS= read -r -d '' -n $((32769-t)) c; do t=$((t+${#c}+1)); { [ $t -gt 32768 ] || [ $i -ge 256 ]; } && return 1; v[i++]=$c; done <\"$1\"\n"
    "  [ $((t+${#c})) -gt 32768 ] && return 1\n"
    "  [ $i -gt 0 ] && printf '%s\\0' \"${v[@]}\"; printf %s \"$c\"\n"
    "}\n"
    "__e2b_end() {\n"
    "  local f=0 st=$1 j\n"
    "  [ -z \"$__s\" ] && [ $1 -gt 128 ] && [ $1 -lt 160 ] && read -r -n 64 j <\"$__p.exit\" && [ ${#j} -gt ${#__b} ] && __s=$(($1-128)) __n=$(($1-128))\n"
    "  [ -n \"$__s\" ] && st=-$__n; [ -s \"$__p.out\" ] && f=1; [ -s \"$__p.err\" ] && f=$((f+2))\n"
    "  printf '%s %s\\n' \"$st\" \"$__b\" >\"$__p.exit\"\n"
    "  [ $((f&2)) = 2 ] && __e2b_slurp \"$__p.err\" >&2 && f=$((f+8))\n"
    "  [ $((f&1)) = 1 ] && __e2b_slurp \"$__p.out\" && f=$((f+4))\n"
    "  printf %s \"${__e2b_l:f:1}\"\n"
    "  [ -n \"$__s\" ] && { ulimit -c 0; trap - \"$__s\"; kill -s \"$__s\" $$; }\n"
    "  return \"$1\"\n"
    "}\n"
    "__e2b_l=abcdefghijklmnop __s= __n=\n"
    "trap '__s=TERM __n=15' TERM; trap '__s=INT __n=2' INT; trap '__s=HUP __n=1' HUP; trap '__s=QUIT __n=3' QUIT\n"
    "if [ \"$0\" != e2b-sh ]; then\n"
    "  if ! command -v -- \"$1\" >/dev/null; then\n"
    "    case $1 in */*) [ -e \"$1\" ] && { printf '!EACCES' >&2; printf '126 %s\\n' \"$__b\" >\"$__p.exit\"; exit 126; };; esac\n"
    "    printf '!ENOENT' >&2; printf '127 %s\\n' \"$__b\" >\"$__p.exit\"; exit 127\n"
    "  fi\n"
    "  { \"$@\" >>\"$__p.out\" 2>>\"$__p.err\"; } 2>>\"$__p.exit\"\n"
    "  __e2b_end $?\n"
    "fi\n";

/* A command string runs on the first line of bash's -c script, as it
 * would unwrapped, so bash numbers its lines (in errors, in LINENO) alike.
 * The wrapper's own stderr goes to the exit file around it (and around the
 * command in WRAPPER): when the command dies of a signal, bash reports the
 * job ("... Killed ( __c=$1; ...") there, which would otherwise lead the
 * inlined stderr, and that report is how the wrapper tells a signal's end
 * (status 128 + N and a report) from `exit 128+N` (no report). */
static const char SH_LINE[] = "eval \"$E2B_PROC\"; { ( __c=$1; set --; unset __p __b __s __n; BASH_ARGV0=/bin/bash; "
                              "eval \"$__c\" ) >>\"$__p.out\" 2>>\"$__p.err\"; } 2>>\"$__p.exit\"; __e2b_end $?";

/* The same environment pruning for untracked (PTY) commands. */
static const char ENV_ONLY[] =
    PRUNE_ENV
    "unset E2B_ENV_KEEP\n"
    "exec \"$@\"\n";

enum { R_OUT, R_ERR, R_EXIT };
#define DUE_ALL 7

typedef struct track_state {
  e2b_req *self;     /* the op this state drives (its watch subscription's key) */
  e2b_sbx *sbx;
  char *tag;
  char *prefix;      /* E2B_KEPT_ROOT/<hex tag>: the kept files are prefix.out, ... */
  const char *name;  /* the prefix's last component */
  int tracked;       /* kept: output comes from the files */
  uint32_t pid;
  int started;       /* START emitted */
  int64_t off[2];    /* bytes received of stdout, stderr */
  int64_t told[2];   /* the largest size the watch told of stdout, stderr */
  int told_all;      /* R_* bits of files whose every growth since our last read the watch tells */
  e2b_req *live;     /* the Start stream, then a Connect by tag; untracked: the output too */
  e2b_req *list;     /* attach: finding the pid/tag */
  e2b_req *read;     /* a file read in flight */
  int reading;       /* R_* of the read in flight */
  int64_t read_got;  /* bytes the read in flight gave so far */
  int streaming;     /* R_* bits of files whose last read gave STREAMING_READ */
  int64_t exit_file_ms; /* when the watch saw the exit file written; -1: no longer timed */
  int exit_late;     /* the stream is late: read the exit file although it holds */
  int due;           /* R_* bits still to read in this pass */
  int full_pass;     /* this pass read all three files */
  int absent;        /* R_* bits found missing in this pass */
  growbuf small;     /* exit file contents */
  int exit_known, exit_code;
  char status[64];
  int nonempty;      /* from the wrapper: bit 0 out, bit 1 err; -1 not said */
  int inlined;       /* from the wrapper: bit 0 out, bit 1 err came in wout/werr */
  growbuf wout, werr; /* the wrapper's own stdout and stderr (bounded) */
  int wover;         /* they were more than a wrapper writes: not ours to trust */
  char start_err[8]; /* the wrapper could not start the command */
  int gone;          /* the process no longer exists */
  int final_pass;    /* ended: reading the files to their end */
  int pass_new;      /* R_* bits of the files that gave bytes in this pass */
  int subscribed;    /* woken by the sandbox's watch */
  int may_park;      /* E2B_TRACK_PARK */
  int killed;        /* e2b_req_proc_killed: our caller killed the group */
  int parked;        /* stream closed: the end comes from the exit file or the watch's list */
  int64_t park_at;   /* when it may park (0: not timed yet) */
  int park_timer;    /* the armed timer is parking's */
  int at_end;        /* read nothing while the process runs and its stream holds */
  int timer_armed;
  int coalescing;    /* the timer delays reads woken by the watch */
  int64_t missing_since_ms; /* started, files not there yet: since when */
  long poll_ms;
  int64_t last_contact_ms;
  long idle_ms;
  int64_t reconnect_at;
  char *forgets;     /* names handed to this command's wrapper: theirs once it started */
  char *user;
  e2b_start_wait start;    /* its slot among the starts in flight (startq.c) */
  e2b_proc_opts *deferred; /* waiting for a slot: the caller's options, copied */
  int env_replace;
} track_state;

static void track_release(void *p) {
  track_state *s = p;
  e2b_startq_release(s->sbx->client->loop, &s->start);
  e2b_proc_opts_free(s->deferred);
  if (s->subscribed) e2b_outwatch_unsubscribe(s->sbx, s->self);
  if (s->forgets && !s->started) e2b_return_forgets(s->sbx, s->forgets, s->user);
}

static int set_prefix(track_state *s) {
  if (!(s->prefix = e2b_kept_prefix(s->tag))) return -1;
  s->name = s->prefix + sizeof E2B_KEPT_ROOT;
  return 0;
}

/* ---- the events handed to the reader ---- */

static int emit(e2b_req *op, e2b_event_type type, const uint8_t *data, size_t len, int exit_code,
                const char *status) {
  size_t slen = status ? strlen(status) + 1 : 0;
  queued *q = calloc(1, sizeof *q + len + slen + 1);
  if (!q) return -1;
  uint8_t *p = (uint8_t *)(q + 1);
  q->ev.type = type;
  q->ev.pid = ((track_state *)op->state)->pid;
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
  e2b_req_push_node(op, q);
  return 0;
}

static void unsubscribe(e2b_req *op, track_state *s) {
  if (!s->subscribed) return;
  s->subscribed = 0;
  e2b_outwatch_unsubscribe(s->sbx, op);
}

static void fail(e2b_req *op, const e2b_error *err) {
  track_state *s = op->state;
  e2b_startq_release(s->sbx->client->loop, &s->start);
  unsubscribe(op, s);
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

static void finish_with_end(e2b_req *op, track_state *s) {
  unsubscribe(op, s);
  if (emit(op, E2B_EVENT_END, NULL, 0, s->exit_code, s->status) != 0) return nomem(op);
  e2b_op_finish(op, NULL);
}

static int over_cap(e2b_req *op) {
  if (op->queued_bytes < E2B_STREAM_QUEUE_CAP) return 0;
  op->throttled = 1; /* the reader's consume kicks us again */
  return 1;
}

static void arm(e2b_req *op, track_state *s, long ms) {
  e2b_req_arm_timer(op, ms);
  s->timer_armed = 1;
  s->park_timer = 0;
}

/* ---- untracked: the stream is the output ---- */

static void live_step(e2b_req *op, track_state *s) {
  queued *n;
  while (!over_cap(op) && (n = s->live->queue_head) != NULL) {
    n = e2b_req_pop_node(s->live);
    switch (n->ev.type) {
    case E2B_EVENT_START:
      s->pid = n->ev.pid;
      free(n);
      emit_start(op, s);
      break;
    case E2B_EVENT_END:
      s->exit_known = 1;
      s->exit_code = n->ev.exit_code;
      snprintf(s->status, sizeof s->status, "%s", n->ev.status ? n->ev.status : "");
      free(n);
      return finish_with_end(op, s);
    default:
      n->ev.pid = s->pid;
      e2b_req_push_node(op, n);
    }
  }
  if (s->live->queue_head || !e2b_req_done(s->live)) return;
  e2b_error protocol;
  fail(op, e2b_proc_stream_cut(s->live, op->op, &protocol));
}

/* ---- kept: the stream says start and end, the files hold the output ---- */

static void unpark(e2b_req *op, track_state *s) {
  s->parked = 0;
  e2b_outwatch_park(s->sbx, op, NULL);
  s->reconnect_at = 0;
  s->park_at = 0; /* it may park again once the watch is back */
}

static void wake(e2b_req *op, char file, int64_t size) {
  track_state *s = op->state;
  if (file == 'g') { /* the watch's list no longer shows our process */
    if (s->parked && !s->exit_known) s->gone = 1;
    e2b_op_kick(op);
    return;
  }
  /* The watch is lost: a parked reader is followed by its stream again. */
  if (!file && !e2b_outwatch_live(s->sbx)) s->told_all = 0;
  if (!file && s->parked && !e2b_outwatch_live(s->sbx)) unpark(op, s);
  int which = file == 'o' ? R_OUT : file == 'e' ? R_ERR : file == 'x' ? R_EXIT : -1;
  if (file && which < 0) return;
  if (which >= 0 && which < R_EXIT && size > s->told[which]) s->told[which] = size;
  /* A size we already have is nothing new (the file was created or closed). */
  if (which >= 0 && which < R_EXIT && size >= 0 && size <= s->off[which]) return;
  if (which == R_EXIT && size == 0) return;
  /* The wrapper makes the exit file holding just the boot id (36 bytes);
   * only a longer one holds the status. */
  if (which == R_EXIT && size >= 0 && size <= E2B_BOOT_ID_LEN) return;
  if (which == R_EXIT && !s->exit_file_ms) s->exit_file_ms = e2b_now_ms();
  s->due |= which >= 0 ? 1 << which : DUE_ALL;
  if (s->read || s->final_pass || s->coalescing) return;
  if (which >= 0 && (s->streaming & (1 << which))) {
    e2b_op_kick(op); /* output streams: every millisecond of delay is lost rate */
    return;
  }
  s->coalescing = 1;
  arm(op, s, COALESCE_MS);
}

/* Returns whether a read must catch up with what the watch did not see. */
static int subscribe(e2b_req *op, track_state *s) {
  if (s->subscribed || s->exit_known || s->gone) return 1;
  int rc = e2b_outwatch_subscribe(s->sbx, E2B_KEPT_ROOT, s->name, op, wake);
  s->subscribed = rc >= 0;
  if (rc == 0) s->told_all = 1 << R_OUT | 1 << R_ERR; /* unchanged since the watch's start */
  return rc != 0;
}

/* What the wrapper's own stream said, once it ended: the flags letter, the
 * inlined files, or that the command could not start. */
static void wrapper_said(track_state *s) {
  if (s->wover) return;
  char last = s->wout.len ? s->wout.data[s->wout.len - 1] : 0;
  if (last >= 'a' && last <= 'p') {
    int flags = last - 'a';
    s->nonempty = flags & 3;
    s->inlined = flags >> 2;
    s->wout.len--;
  } else if (s->werr.len > 1 && s->werr.data[0] == '!') {
    snprintf(s->start_err, sizeof s->start_err, "%.*s", (int)s->werr.len - 1, s->werr.data + 1);
  }
}

/* Hands out an inlined file past what was already read; returns whether it
 * was inlined (then it needs no read). */
static int take_inline(e2b_req *op, track_state *s, int which) {
  if (!(s->inlined & (1 << which))) return 0;
  growbuf *b = which == R_OUT ? &s->wout : &s->werr;
  if ((int64_t)b->len > s->off[which]) {
    size_t from = (size_t)s->off[which];
    if (emit(op, which == R_OUT ? E2B_EVENT_STDOUT : E2B_EVENT_STDERR, (const uint8_t *)b->data + from,
             b->len - from, 0, NULL) != 0)
      return 0;
    s->off[which] = (int64_t)b->len;
  }
  return 1;
}

static void stream_event(e2b_req *op, track_state *s, queued *n) {
  if (n->ev.type == E2B_EVENT_START) {
    if (!s->pid) s->pid = n->ev.pid;
    if (!s->started) {
      emit_start(op, s);
      if (!s->at_end) arm(op, s, FIRST_PASS_MS);
    }
  } else if (n->ev.type == E2B_EVENT_END) {
    s->exit_known = 1;
    s->exit_code = n->ev.exit_code;
    snprintf(s->status, sizeof s->status, "%s", n->ev.status ? n->ev.status : "");
    wrapper_said(s);
  } else if (n->ev.type == E2B_EVENT_STDOUT || n->ev.type == E2B_EVENT_STDERR) {
    growbuf *b = n->ev.type == E2B_EVENT_STDOUT ? &s->wout : &s->werr;
    if (b->len + n->ev.len > INLINE_MAX + 1 || e2b_growbuf_append(b, n->ev.data, n->ev.len) != 0)
      s->wover = 1;
  }
  s->last_contact_ms = e2b_now_ms();
}

/* The command never started: report it as envd reports a Start it refuses. */
static void fail_start(e2b_req *op, track_state *s) {
  e2b_error err;
  int eacces = strcmp(s->start_err, "EACCES") == 0;
  e2b_err_set(&err, E2B_ERR_INVALID_ARGUMENT, op->op, "failed to start process: %s",
               eacces ? strerror(EACCES) : strerror(ENOENT));
  fail(op, &err);
}

/* Follows the process's own stream; reconnects by tag when it breaks. */
static void stream_step(e2b_req *op, track_state *s) {
  if (!s->live) {
    if (s->parked || s->exit_known || s->gone || e2b_now_ms() < s->reconnect_at) return;
    e2b_error err;
    s->live = e2b_op_child(op, e2b_proc_connect_stream(s->sbx, 0, s->tag, s->idle_ms,
                                                       E2B_STREAM_EVENTS, &err));
    if (!s->live) s->reconnect_at = e2b_now_ms() + POLL_MAX_MS;
    return;
  }
  queued *n;
  while ((n = e2b_req_pop_node(s->live))) {
    stream_event(op, s, n);
    free(n);
  }
  if (!e2b_req_done(s->live)) return;
  const e2b_error *err = e2b_req_error(s->live);
  if (!s->started) {
    e2b_error protocol;
    if (!err) e2b_err_set(&protocol, E2B_ERR_PROTOCOL, op->op, "process stream ended before its start");
    return fail(op, err ? err : &protocol);
  }
  if (err && err->code == E2B_ERR_NOT_FOUND) s->gone = 1;
  e2b_req_free(s->live);
  s->live = NULL;
  s->reconnect_at = e2b_now_ms() + s->poll_ms;
  s->due |= DUE_ALL; /* whatever happened meanwhile is in the files */
}

static const char *const file_ext[] = {"out", "err", "exit"};

/* curl's receive buffer for a read of this file. curl holds it for the
 * whole transfer, and the parked commands that end together all read at
 * once: each asking for E2B_FILE_IO_BUFFER made 1,000 such ends peak at
 * about 82 MB of heap (bench/README.md). The exit file is a status line.
 * A parked reader learns every growth of a file from its watch once it
 * read it (or the watch saw it unchanged), so what remains is known: unless
 * the file streams, the buffer is that much (a late event only costs
 * speed). Unparked readers keep the large buffer: their streams are the
 * default, and they end one by one. */
static long read_buffer(const track_state *s, int which) {
  if (which == R_EXIT) return E2B_SMALL_READ_BUFFER;
  if (!s->parked || !(s->told_all & (1 << which)) || (s->streaming & (1 << which)))
    return E2B_FILE_IO_BUFFER;
  int64_t left = s->told[which] > s->off[which] ? s->told[which] - s->off[which] : 0;
  return left < E2B_FILE_IO_BUFFER ? (long)left + E2B_SMALL_READ_BUFFER : E2B_FILE_IO_BUFFER;
}

static void start_read(e2b_req *op, track_state *s, int which) {
  char path[512];
  snprintf(path, sizeof path, "%s.%s", s->prefix, file_ext[which]);
  e2b_error err;
  s->reading = which;
  s->read_got = 0;
  s->small.len = 0;
  s->read = e2b_op_child(op, e2b_file_read_sized(s->sbx, path, "root", which < R_EXIT ? s->off[which] : 0,
                                                 read_buffer(s, which), &err));
  if (!s->read) {
    s->due = 0;
    arm(op, s, s->poll_ms);
  }
}

static void take_read(e2b_req *op, track_state *s) {
  queued *n;
  while (!over_cap(op) && (n = e2b_req_pop_node(s->read))) {
    if (s->reading <= R_ERR) {
      n->ev.type = s->reading == R_OUT ? E2B_EVENT_STDOUT : E2B_EVENT_STDERR;
      n->ev.pid = s->pid;
      s->off[s->reading] += (int64_t)n->ev.len;
      s->read_got += (int64_t)n->ev.len;
      if (n->ev.len) s->pass_new |= 1 << s->reading;
      e2b_req_push_node(op, n);
    } else {
      if (s->small.len < 256) e2b_growbuf_append(&s->small, n->ev.data, n->ev.len);
      free(n);
    }
  }
}

/* "STATUS BOOTID\n" (or an older wrapper's "STATUS\n"); without its
 * newline the file holds only the boot id: the command has not ended. */
/* "signal: terminated": envd's words (Go's) for a shell this signal ended,
 * which the wrapper records as a negative status. */
static void signal_status(char *out, size_t n, int sig) {
  const char *name = sig > 0 && sig < 32 ? strsignal(sig) : NULL;
  snprintf(out, n, "signal: %s", name ? name : "unknown");
  size_t at = strlen("signal: ");
  if (out[at] >= 'A' && out[at] <= 'Z') out[at] = (char)(out[at] - 'A' + 'a');
}

long e2b_kept_status(const char *data, size_t len, long *status) {
  size_t i = len && data[0] == '-' ? 1 : 0, first = i;
  long v = 0;
  for (; i < len && isdigit((unsigned char)data[i]); i++)
    if (v < 1000000) v = v * 10 + (data[i] - '0');
  if (i == first || i >= len || (data[i] != ' ' && data[i] != '\n')) return -1;
  if (status) *status = first ? -v : v;
  return (long)i;
}

static void read_exit_file(track_state *s) {
  if (s->exit_known) return;
  if (!s->small.len || s->small.data[s->small.len - 1] != '\n') {
    s->exit_file_ms = s->exit_late = 0; /* not written yet: its next event times it again */
    return;
  }
  long parsed;
  if (e2b_kept_status(s->small.data, s->small.len, &parsed) < 0 || parsed < -64 || parsed > 255) {
    s->exit_file_ms = s->exit_late = 0;
    return;
  }
  int code = (int)parsed;
  /* 126 or 127 and no output may be a command that could not start, which
   * only the wrapper's stream tells (fail_start): that waits for it. */
  if ((code == 126 || code == 127) && !s->off[0] && !s->off[1] && s->live && !e2b_req_done(s->live)) {
    s->exit_late = 0;
    return;
  }
  s->exit_known = 1;
  s->exit_code = code < 0 ? -1 : code;
  if (code < 0) signal_status(s->status, sizeof s->status, -code);
  else snprintf(s->status, sizeof s->status, "exit status %d", code);
}

/* A read ended: 416 is "nothing past our offset", 404 "not there (yet)". */
static int read_ended(e2b_req *op, track_state *s) {
  e2b_error err_copy, *err = NULL;
  if (e2b_req_error(s->read)) err = memcpy(&err_copy, e2b_req_error(s->read), sizeof err_copy);
  int status = e2b_req_status(s->read);
  e2b_req_free(s->read);
  s->read = NULL;
  int absent = err && status == 404;
  if (err && status != 416 && !absent) {
    s->due = 0;
    int64_t contact = s->last_contact_ms;
    if (s->parked && e2b_outwatch_contact(s->sbx) > contact) contact = e2b_outwatch_contact(s->sbx);
    if (e2b_now_ms() - contact > s->idle_ms) {
      e2b_error idle = *err;
      snprintf(idle.message, sizeof idle.message,
               "idle timeout: the sandbox could not be read for %ld ms (idle_timeout_ms); last: %.200s",
               s->idle_ms, err->message);
      idle.code = E2B_ERR_TIMEOUT;
      fail(op, &idle);
      return -1;
    }
    arm(op, s, s->poll_ms);
    if (s->poll_ms < POLL_MAX_MS) s->poll_ms *= 2;
    return -1;
  }
  s->last_contact_ms = e2b_now_ms();
  if (absent) s->absent |= 1 << s->reading;
  /* read to its end: from here on the watch tells each growth */
  if (s->reading < R_EXIT && s->subscribed && e2b_outwatch_live(s->sbx)) s->told_all |= 1 << s->reading;
  if (s->reading < R_EXIT) {
    s->streaming &= ~(1 << s->reading);
    if (s->read_got >= STREAMING_READ) s->streaming |= 1 << s->reading;
  }
  if (s->reading == R_EXIT && !absent) read_exit_file(s);
  return 0;
}

/* No kept output at all. A process reported started is running or has run
 * under the wrapper: its files are on their way, so look again (bounded). */
static void files_missing(e2b_req *op, track_state *s) {
  int64_t now = e2b_now_ms();
  if (s->started && !s->missing_since_ms) s->missing_since_ms = now;
  if (s->started && now - s->missing_since_ms < KEPT_GRACE_MS) {
    arm(op, s, s->poll_ms);
    if (s->poll_ms < POLL_MAX_MS) s->poll_ms *= 2;
    return;
  }
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

/* What an ended process still needs read: a file the wrapper called empty
 * holds nothing past offset 0. */
static int final_due(const track_state *s) {
  int due = s->exit_known ? 0 : 1 << R_EXIT;
  if (s->nonempty < 0 || (s->nonempty & 1) || s->off[0]) due |= 1 << R_OUT;
  if (s->nonempty < 0 || (s->nonempty & 2) || s->off[1]) due |= 1 << R_ERR;
  return due;
}

/* A pass is over: finish, or decide when to look again. */
static void pass_over(e2b_req *op, track_state *s) {
  int full = s->full_pass, absent = s->absent, fresh = s->pass_new;
  s->full_pass = 0;
  s->absent = 0;
  s->pass_new = 0;
  if (s->final_pass) {
    if (s->exit_known || !fresh) {
      if (!s->exit_known) {
        s->exit_code = -1;
        snprintf(s->status, sizeof s->status, "%s",
                 s->killed ? "signal: killed" : "killed (no exit status recorded)");
      }
      return finish_with_end(op, s);
    }
    s->due = final_due(s); /* gone without an exit status: read until nothing comes */
    return;
  }
  if (full && absent == DUE_ALL && !s->exit_known) return files_missing(op, s);
  s->missing_since_ms = 0;
  if (s->exit_known || s->gone) return;
  /* A file that just gave bytes is likely still growing. Without a live
   * watch it is read again at once; with one, its next event says so (an
   * event with a size past our offset, or none said, sets what is due
   * itself, also during a read: every write is followed by an event whose
   * stat comes after it). Otherwise, without a live watch, a backing-off
   * poll. */
  int watched = s->subscribed && e2b_outwatch_live(s->sbx);
  if (fresh) s->poll_ms = POLL_MIN_MS;
  if (!watched) s->due |= fresh;
  if (!s->due && !watched) {
    arm(op, s, s->poll_ms);
    if (s->poll_ms < POLL_MAX_MS) s->poll_ms *= 2;
  }
}

/* Once the exit file was seen EXIT_GRACE_MS ago, it is read although the
 * stream holds; until then, the timer is due by that time. */
static void exit_overdue(e2b_req *op, track_state *s) {
  if (s->exit_file_ms <= 0 || s->exit_known) return;
  int64_t now = e2b_now_ms(), left = s->exit_file_ms + EXIT_GRACE_MS - now;
  if (left <= 0) {
    s->exit_file_ms = -1;
    s->exit_late = 1;
    s->due |= 1 << R_EXIT;
  } else if (!s->timer_armed || op->timer_at_ms > now + left) {
    arm(op, s, (long)left);
  }
}

/* A command still running PARK_AFTER_MS after its start parks once its
 * sandbox's watch is live (header comment). */
static void park_check(e2b_req *op, track_state *s) {
  if (!s->may_park || s->parked || !s->tag || !s->live || e2b_req_done(s->live) || s->exit_known || s->gone ||
      s->final_pass || s->start_err[0])
    return;
  int64_t now = e2b_now_ms();
  if (!s->park_at) s->park_at = now + PARK_AFTER_MS;
  long wait_ms = (long)(s->park_at - now);
  if (wait_ms <= 0 && !s->subscribed) s->due |= subscribe(op, s) ? DUE_ALL : 0;
  if (wait_ms <= 0 && s->subscribed && e2b_outwatch_live(s->sbx)) {
    e2b_req_free(s->live);
    s->live = NULL;
    s->parked = 1;
    e2b_outwatch_park(s->sbx, op, s->tag);
    return;
  }
  if (s->timer_armed) return; /* this step runs again when it fires */
  arm(op, s, wait_ms > 0 ? wait_ms : PARK_RETRY_MS);
  s->park_timer = 1;
}

static void kept_step(e2b_req *op, track_state *s) {
  stream_step(op, s);
  if (op->done || !s->started) return;
  if (s->start_err[0] && s->exit_known) return fail_start(op, s);
  if (s->read) {
    take_read(op, s);
    if (!e2b_req_done(s->read) || s->read->queue_head) return;
    if (read_ended(op, s) != 0) return;
    if (!s->due) pass_over(op, s);
    if (op->done) return;
  }
  if (s->timer_armed && !op->timer_at_ms) { /* it fired */
    s->timer_armed = 0;
    if (s->park_timer) s->park_timer = 0; /* park_check below */
    else if (s->coalescing) s->coalescing = 0; /* the wake set what is due */
    else if (s->final_pass) s->due |= final_due(s);
    else if (!s->subscribed) s->due |= subscribe(op, s) ? DUE_ALL : 0;
    else if (s->exit_file_ms <= 0) s->due |= DUE_ALL; /* the fallback poll, not exit_overdue's */
    /* A watch not started yet wakes us when it starts (a listing says
     * whose files grew before) or, if it fails, when it is lost. */
  }
  if ((s->exit_known || s->gone) && !s->final_pass) {
    e2b_req_disarm_timer(op);
    s->timer_armed = 0;
    s->coalescing = 0;
    unsubscribe(op, s);
    s->final_pass = 1;
    s->due = final_due(s);
    if (take_inline(op, s, R_OUT)) s->due &= ~(1 << R_OUT);
    if (take_inline(op, s, R_ERR)) s->due &= ~(1 << R_ERR);
    if (!s->due) return finish_with_end(op, s);
  }
  park_check(op, s);
  /* While its stream holds, the end comes from it: the exit file is not read
   * unless the stream is late (exit_overdue). */
  exit_overdue(op, s);
  if (s->exit_known || (s->live && !e2b_req_done(s->live) && !s->exit_late)) s->due &= ~(1 << R_EXIT);
  if (!s->due || s->coalescing || over_cap(op)) return;
  if (s->due == DUE_ALL) s->full_pass = 1;
  int which = s->due & 1 ? R_OUT : s->due & 2 ? R_ERR : R_EXIT;
  s->due &= ~(1 << which);
  start_read(op, s, which);
}

/* ---- attach: find the process first ---- */

static void list_step(e2b_req *op, track_state *s) {
  if (!e2b_req_done(s->list)) return;
  const e2b_error *err = e2b_req_error(s->list);
  if (err) return fail(op, err);
  int found = 0, kept = 0;
  for (size_t i = 0; i < e2b_req_proc_count(s->list); i++) {
    const e2b_proc_info *p = e2b_req_proc_at(s->list, i);
    if ((s->pid && p->pid == s->pid) || (s->tag && p->tag && strcmp(p->tag, s->tag) == 0)) {
      found = 1;
      kept = p->kept;
      s->pid = p->pid;
      if (!s->tag && p->tag && !(s->tag = strdup(p->tag))) return nomem(op);
    }
  }
  e2b_req_free(s->list);
  s->list = NULL;
  if (!found) {
    s->gone = 1;
    if (!s->tag) {
      e2b_error nf;
      e2b_err_set(&nf, E2B_ERR_NOT_FOUND, op->op, "no process with pid %u", s->pid);
      return fail(op, &nf);
    }
  }
  if (!s->tag || (found && !kept)) {
    /* Running but not wrapped by us: nothing to read back; follow it from now. */
    s->tracked = 0;
  } else if (set_prefix(s) != 0) {
    return nomem(op);
  }
  if (!s->tracked && (s->off[0] || s->off[1])) {
    e2b_error un;
    e2b_err_set(&un, E2B_ERR_UNSUPPORTED, op->op,
                "process %u keeps no output, so offsets cannot be honoured", s->pid);
    return fail(op, &un);
  }
  emit_start(op, s);
  if (s->tracked) {
    s->last_contact_ms = e2b_now_ms();
    s->due = DUE_ALL;
    /* The command may have ended while its wrapper still runs (the stream
     * then ends later): the first pass reads the exit file too. */
    s->exit_late = 1;
    if (found) subscribe(op, s);
    kept_step(op, s);
  } else {
    e2b_error cerr;
    s->live = e2b_op_child(op, e2b_proc_connect(s->sbx, s->pid, NULL, s->idle_ms, &cerr));
    if (!s->live) return fail(op, &cerr);
  }
}

static void start_deferred(e2b_req *op, track_state *s);

static void track_advance(e2b_req *op) {
  track_state *s = op->state;
  if (s->deferred) return start_deferred(op, s);
  if (s->list) return list_step(op, s);
  if (s->tracked) kept_step(op, s);
  else if (s->live) live_step(op, s);
}

#define TRACK_AT(f) offsetof(track_state, f)
static const e2b_op_kind track_kind = {
    .size = sizeof(track_state), .release = track_release,
    .children = E2B_FIELDS(TRACK_AT(live), TRACK_AT(list), TRACK_AT(read)),
    .bufs = E2B_FIELDS(TRACK_AT(small), TRACK_AT(wout), TRACK_AT(werr)),
    .allocs = E2B_FIELDS(TRACK_AT(forgets), TRACK_AT(user), TRACK_AT(tag), TRACK_AT(prefix)),
    .holds = E2B_OP_HOLDS_SBX, .ref = TRACK_AT(sbx), .key = TRACK_AT(tag)};

/* ---- entry points ---- */

/* The op first, its state's defaults set: the op, or NULL with err. */
static e2b_req *new_op(e2b_sbx *sbx, const char *op, const char *tag, long idle_ms, e2b_error *err) {
  e2b_req *req = e2b_op_new(&track_kind, NULL, sbx, op, track_advance, tag, err);
  if (!req) return NULL;
  track_state *s = req->state;
  s->self = s->start.op = req;
  s->idle_ms = idle_ms > 0 ? idle_ms : 90000;
  s->tracked = 1;
  s->nonempty = -1;
  s->poll_ms = POLL_MIN_MS;
  return req;
}

/* The names (never the values) of env, space separated, for E2B_ENV_KEEP. */
static char *env_names(const e2b_kv *env, size_t n) {
  size_t len = 1;
  for (size_t i = 0; i < n; i++) len += strlen(env[i].key) + 1;
  char *names = malloc(len);
  if (!names) return NULL;
  names[0] = 0;
  for (size_t i = 0; i < n; i++) {
    if (i) strcat(names, " ");
    strcat(names, env[i].key);
  }
  return names;
}

/* opts->tag, or a generated "e2b-<uuid>" in gen. */
static const char *tag_of(const e2b_proc_opts *opts, char *gen, size_t n) {
  if (opts->tag) return opts->tag;
  char id[E2B_UUID_SIZE];
  if (e2b_uuid4(id) != 0) return NULL;
  snprintf(gen, n, "e2b-%s", id);
  return gen;
}

/* Kept: bash -c 'eval "$E2B_PROC"' e2b-proc PREFIX cmd args..., or for a
 * command string (bash -l -c S) bash -l -c SH_LINE e2b-sh PREFIX S, run by
 * the wrapper itself; not kept: the command, under ENV_ONLY to prune its
 * environment. Returns the argument count. */
static size_t wrap_args(const char **args, const e2b_proc_opts *opts, const track_state *s,
                        int env_replace) {
  size_t a = 0;
  int keep = s->tracked;
  int sh = keep && strcmp(opts->cmd, "/bin/bash") == 0 && opts->arg_count == 3 &&
           strcmp(opts->args[0], "-l") == 0 && strcmp(opts->args[1], "-c") == 0;
  if (sh) {
    const char *line[] = {"-l", "-c", SH_LINE, "e2b-sh", s->prefix, opts->args[2]};
    for (size_t i = 0; i < 6; i++) args[a++] = line[i];
    return a;
  }
  if (keep || env_replace) {
    args[a++] = "-c";
    args[a++] = keep ? "eval \"$E2B_PROC\"" : ENV_ONLY;
    args[a++] = keep ? "e2b-proc" : "e2b-env";
    if (keep) args[a++] = s->prefix;
    args[a++] = opts->cmd;
  }
  for (size_t i = 0; i < opts->arg_count; i++) args[a++] = opts->args[i];
  return a;
}

/* The caller's env, then what the wrapper reads (names, never values). */
static size_t wrap_env(e2b_kv *env, const e2b_proc_opts *opts, const track_state *s, const char *names) {
  size_t ne = 0;
  for (size_t i = 0; i < opts->env_count; i++) env[ne++] = opts->env[i];
  if (names) env[ne++] = (e2b_kv){"E2B_ENV_KEEP", names};
  if (s->tracked) env[ne++] = (e2b_kv){"E2B_PROC", WRAPPER};
  if (s->forgets) env[ne++] = (e2b_kv){"E2B_FORGET", s->forgets};
  return ne;
}

/* Names the wrapper removes; they go back to the queue unless it starts. */
static void take_forgets(track_state *s, const char *user) {
  if (!s->tracked || !(s->forgets = e2b_take_forgets(s->sbx, user))) return;
  if (user && !(s->user = strdup(user))) {
    e2b_return_forgets(s->sbx, s->forgets, user);
    free(s->forgets);
    s->forgets = NULL;
  }
}

/* Starts the wrapped command's stream (s->live); 0, or -1 with err. */
static int launch(track_state *s, const e2b_proc_opts *opts, int env_replace, e2b_error *err) {
  const char *op = "process.start";
  char *names = env_replace ? env_names(opts->env, opts->env_count) : NULL;
  const char **args = calloc(opts->arg_count + 6, sizeof *args);
  e2b_kv *env = calloc(opts->env_count + 3, sizeof *env);
  if ((env_replace && !names) || !args || !env) {
    free(names);
    free(args);
    free(env);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return -1;
  }
  take_forgets(s, opts->user);
  e2b_proc_opts wrapped = *opts;
  wrapped.cmd = s->tracked || env_replace ? "/bin/bash" : opts->cmd;
  wrapped.args = args;
  wrapped.arg_count = wrap_args(args, opts, s, env_replace);
  wrapped.env = env;
  wrapped.env_count = wrap_env(env, opts, s, names);
  wrapped.tag = s->tag;
  /* A kept command's stream carries its events; its output goes to files. */
  s->live = e2b_proc_start_stream(s->sbx, &wrapped, s->tracked ? E2B_STREAM_EVENTS : 0, err);
  free(args);
  free(env);
  free(names);
  if (s->live) e2b_op_child(s->self, s->live);
  return s->live ? 0 : -1;
}

/* A start that waited for a slot goes once it has one. */
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
static e2b_req *start_tracked(e2b_req *op, const e2b_proc_opts *opts, int env_replace,
                              e2b_error *err) {
  track_state *s = op->state;
  s->env_replace = env_replace;
  if (!e2b_startq_take(op->loop, &s->start)) {
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
  if (set_prefix(s) != 0) return e2b_op_nomem(req, err);
  s->tracked = !(flags & E2B_TRACK_NO_KEEP) && opts->pty_cols == 0;
  s->at_end = (flags & E2B_TRACK_AT_END) != 0;
  s->may_park = (flags & E2B_TRACK_PARK) != 0;
  return e2b_req_typed(start_tracked(req, opts, (flags & E2B_TRACK_ENV_REPLACE) != 0, err),
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
  s->off[0] = stdout_offset;
  s->off[1] = stderr_offset;
  if (!(s->list = e2b_op_child(req, e2b_proc_list(sbx, err)))) {
    e2b_req_free(req);
    return NULL;
  }
  return e2b_req_typed(req, E2B_RESULT_STREAM);
}

/* bash -c SCRIPT e2b-proc PREFIX cmd args... (kept), bash -l -c SCRIPT
 * e2b-sh PREFIX string (a kept command string) or bash -c SCRIPT e2b-env
 * cmd args... (environment pruned only): the $0 names the shape. */
void e2b_track_unwrap(e2b_proc_info *p) {
  if (p->arg_count == 6 && strcmp(p->args[0], "-l") == 0 && strcmp(p->args[3], "e2b-sh") == 0) {
    free(p->args[2]);
    free(p->args[3]);
    free(p->args[4]);
    p->args[2] = p->args[5];
    p->arg_count = 3;
    p->kept = 1;
    return;
  }
  if (p->arg_count < 4 || strcmp(p->args[0], "-c") != 0) return;
  int kept = strcmp(p->args[2], "e2b-proc") == 0;
  if (!kept && strcmp(p->args[2], "e2b-env") != 0) return;
  size_t first = kept ? 4 : 3;
  if (p->arg_count <= first) return;
  free(p->cmd);
  p->cmd = p->args[first];
  for (size_t i = 0; i < first; i++) free(p->args[i]);
  memmove(p->args, p->args + first + 1, (p->arg_count - first - 1) * sizeof *p->args);
  p->arg_count -= first + 1;
  p->kept = kept;
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
  return s && s->tracked ? s->prefix : NULL;
}

int e2b_req_proc_tracked(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s ? s->tracked : 0;
}

int e2b_req_proc_parked(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s ? s->parked : 0;
}

void e2b_req_proc_killed(e2b_req *req) {
  track_state *s = tstate(req);
  if (!s || req->done) return;
  s->killed = 1;
  if (s->parked && !s->exit_known && !s->gone) {
    s->gone = 1;
    e2b_op_kick(req);
  }
}
