/* track.c — tracked processes: byte-exact output polling.
 *
 * E2B's Connect streams only from "now", so a reader that loses its stream
 * would lose output. A tracked process therefore runs under a small bash
 * wrapper that tees stdout and stderr into private files of a per-process
 * scratch directory and records the exit status there. Offsets are the
 * truth: the composite counts the bytes it received of each stream; the
 * live stream is only a fast path to them. When it breaks, the files are
 * read from those offsets (HTTP Range on /files), with a Connect stream by
 * tag as the wake-up signal and a backing-off timer as the fallback.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define SCRATCH_ROOT "/tmp/.e2b-proc"
#define POLL_MIN_MS 50
#define POLL_MAX_MS 2000
/* A started process's wrapper may not have created its files yet: wait this
 * long for them before calling the process unknown. */
#define KEPT_GRACE_MS 10000

/* $1: scratch dir; the rest: the command. Output goes to the live stream and
 * to the files (tee); the exit status is written once both tees finished, so
 * an existing exit file means the output files are complete. The tees ignore
 * catchable signals (an ignored signal stays ignored across exec) and the
 * wrapper traps them (a trap is reset in the command), so a signal to the
 * process group reaches the command without cutting its output or losing
 * its exit status; only SIGKILL ends them all. The
 * command's environment is pruned to E2B_ENV_KEEP's names when that is set. */
static const char WRAPPER[] =
    "d=$1; shift\n"
    "[ -d \"${d%/*}\" ] || mkdir -m 1777 \"${d%/*}\" 2>/dev/null\n"
    "umask 077; mkdir -p \"$d\" || exit 125\n"
    "cat /proc/sys/kernel/random/boot_id > \"$d/boot\" 2>/dev/null\n"
    "if [ -n \"${E2B_ENV_KEEP+x}\" ]; then\n"
    "  k=\" $E2B_ENV_KEEP PATH \"\n"
    "  for v in $(compgen -e); do case \"$k\" in *\" $v \"*) ;; *) unset \"$v\" 2>/dev/null;; esac; done\n"
    "fi\n"
    "unset E2B_ENV_KEEP\n"
    "exec 3> >(trap '' TERM INT HUP QUIT; exec tee -a \"$d/out\"); o=$!\n"
    "exec 4> >(trap '' TERM INT HUP QUIT; exec tee -a \"$d/err\" >&2 3>&-); e=$!\n"
    "trap : TERM INT HUP QUIT\n"
    "\"$@\" >&3 2>&4 3>&- 4>&-\n"
    "rc=$?\n"
    "exec 3>&- 4>&-\n"
    "wait $o $e 2>/dev/null\n"
    "echo $rc > \"$d/exit.tmp\" && mv -f \"$d/exit.tmp\" \"$d/exit\"\n"
    "exit $rc\n";

/* The same environment pruning for untracked (PTY) commands. */
static const char ENV_ONLY[] =
    "if [ -n \"${E2B_ENV_KEEP+x}\" ]; then\n"
    "  k=\" $E2B_ENV_KEEP PATH \"\n"
    "  for v in $(compgen -e); do case \"$k\" in *\" $v \"*) ;; *) unset \"$v\" 2>/dev/null;; esac; done\n"
    "fi\n"
    "unset E2B_ENV_KEEP\n"
    "exec \"$@\"\n";

enum { MODE_LIVE, MODE_POLL };
enum { R_OUT, R_ERR, R_EXIT };

typedef struct track_state {
  e2b_sbx *sbx;
  char *tag;
  char *dir;
  int tracked;
  int mode;
  uint32_t pid;
  int started;       /* START emitted */
  int64_t off[2];    /* bytes received of stdout, stderr */
  e2b_req *live;     /* LIVE: the Start stream; POLL: a Connect stream used as a wake-up */
  e2b_req *list;     /* attach: finding the pid/tag */
  e2b_req *read;     /* a file read in flight */
  int reading;       /* R_* of the read in flight */
  int64_t read_got;
  growbuf small;     /* exit and boot file contents */
  int exit_known, exit_code;
  char status[64];
  int gone;          /* the process no longer exists */
  int final_pass;    /* exit known: read both files to their end, then finish */
  int pass_new;      /* bytes seen in the current polling pass */
  int files_missing; /* out, err and exit all absent: not a tracked process */
  int64_t missing_since_ms; /* started, files not there yet: since when */
  long poll_ms;
  int64_t last_contact_ms;
  long idle_ms;
  int wake;          /* the wake-up stream saw output: poll now */
  int64_t wake_retry_at;
  e2b_error last_err;
} track_state;

static void track_free(void *p) {
  track_state *s = p;
  e2b_req_free(s->live);
  e2b_req_free(s->list);
  e2b_req_free(s->read);
  e2b_growbuf_free(&s->small);
  free(s->tag);
  free(s->dir);
  e2b_sbx_release(s->sbx);
  free(s);
}

static char *scratch_dir(const char *tag) {
  size_t n = strlen(tag) * 2 + sizeof SCRATCH_ROOT + 2;
  char *dir = malloc(n);
  if (!dir) return NULL;
  int len = snprintf(dir, n, "%s/", SCRATCH_ROOT);
  for (const unsigned char *t = (const unsigned char *)tag; *t; t++)
    len += snprintf(dir + len, n - (size_t)len, "%02x", *t);
  return dir;
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

static void fail(e2b_req *op, const e2b_error *err) { e2b_op_finish(op, err); }

static void nomem(e2b_req *op) {
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
  fail(op, &err);
}

static void emit_start(e2b_req *op, track_state *s) {
  if (s->started) return;
  s->started = 1;
  if (emit(op, E2B_EVENT_START, NULL, 0, 0, NULL) != 0) nomem(op);
}

static void finish_with_end(e2b_req *op, track_state *s) {
  if (emit(op, E2B_EVENT_END, NULL, 0, s->exit_code, s->status) != 0) return nomem(op);
  e2b_op_finish(op, NULL);
}

static int over_cap(e2b_req *op) {
  if (op->queued_bytes < E2B_STREAM_QUEUE_CAP) return 0;
  op->throttled = 1; /* the reader's consume kicks us again */
  return 1;
}

/* ---- live mode ---- */

static void to_poll(e2b_req *op, track_state *s, const e2b_error *why) {
  if (why) s->last_err = *why;
  e2b_req_free(s->live);
  s->live = NULL;
  s->mode = MODE_POLL;
  s->poll_ms = POLL_MIN_MS;
  s->last_contact_ms = e2b_now_ms();
  e2b_op_kick(op);
}

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
      if (n->ev.type == E2B_EVENT_STDOUT) s->off[0] += (int64_t)n->ev.len;
      if (n->ev.type == E2B_EVENT_STDERR) s->off[1] += (int64_t)n->ev.len;
      n->ev.pid = s->pid;
      e2b_req_push_node(op, n);
    }
  }
  if (s->live->queue_head || !e2b_req_done(s->live)) return;
  /* The stream is over without an end event. */
  const e2b_error *err = e2b_req_error(s->live);
  e2b_error protocol;
  if (!err) {
    e2b_err_set(&protocol, E2B_ERR_PROTOCOL, op->op, "process stream ended without an end event");
    err = &protocol;
  }
  if (!s->tracked || !s->started) return fail(op, err);
  to_poll(op, s, err);
}

/* ---- poll mode ---- */

static const char *const file_names[] = {"out", "err", "exit"};

static void start_read(e2b_req *op, track_state *s, int which) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", s->dir, file_names[which]);
  e2b_error err;
  s->reading = which;
  s->read_got = 0;
  s->small.len = 0;
  s->read = e2b_op_child(
      op, e2b_file_read(s->sbx, path, "root", which < R_EXIT ? s->off[which] : 0, &err));
  if (!s->read) {
    s->last_err = err;
    e2b_req_arm_timer(op, s->poll_ms);
  }
}

/* Keeps a Connect stream by tag as the wake-up signal while the process lives. */
static void wake_step(e2b_req *op, track_state *s) {
  if (s->gone || s->exit_known) return;
  if (!s->live) {
    if (e2b_now_ms() < s->wake_retry_at) return;
    e2b_error err;
    s->live = e2b_op_child(op, e2b_proc_connect(s->sbx, 0, s->tag, s->idle_ms, &err));
    if (!s->live) s->wake_retry_at = e2b_now_ms() + POLL_MAX_MS;
    return;
  }
  queued *n;
  while ((n = e2b_req_pop_node(s->live))) {
    if (n->ev.type == E2B_EVENT_START) {
      if (!s->pid) s->pid = n->ev.pid;
    } else if (n->ev.type == E2B_EVENT_END) {
      s->exit_known = 1;
      s->exit_code = n->ev.exit_code;
      snprintf(s->status, sizeof s->status, "%s", n->ev.status ? n->ev.status : "");
    } else {
      s->wake = 1; /* new output exists: read it from the files */
    }
    s->last_contact_ms = e2b_now_ms();
    free(n);
  }
  if (!e2b_req_done(s->live)) return;
  const e2b_error *err = e2b_req_error(s->live);
  if (err && err->code == E2B_ERR_NOT_FOUND) s->gone = 1;
  e2b_req_free(s->live);
  s->live = NULL;
  s->wake_retry_at = e2b_now_ms() + s->poll_ms;
}

static void read_done(e2b_req *op, track_state *s) {
  queued *n;
  while ((n = e2b_req_pop_node(s->read))) {
    if (s->reading <= R_ERR) {
      n->ev.type = s->reading == R_OUT ? E2B_EVENT_STDOUT : E2B_EVENT_STDERR;
      n->ev.pid = s->pid;
      s->off[s->reading] += (int64_t)n->ev.len;
      s->read_got += (int64_t)n->ev.len;
      s->pass_new += n->ev.len > 0;
      e2b_req_push_node(op, n);
    } else {
      if (s->small.len < 256) e2b_growbuf_append(&s->small, n->ev.data, n->ev.len);
      free(n);
    }
  }
}

/* No kept output at all. A process reported started is running or has run
 * under the wrapper: its files are on their way, so look again (bounded). */
static void files_missing(e2b_req *op, track_state *s) {
  int64_t now = e2b_now_ms();
  if (s->started && !s->missing_since_ms) s->missing_since_ms = now;
  if (s->started && now - s->missing_since_ms < KEPT_GRACE_MS) {
    e2b_req_arm_timer(op, s->poll_ms);
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

static void poll_step(e2b_req *op, track_state *s) {
  wake_step(op, s);
  if (s->read) {
    if (!over_cap(op)) read_done(op, s);
    if (!e2b_req_done(s->read) || s->read->queue_head) return;
    /* a copy: the error lives in the request freed just below */
    e2b_error err_copy, *err = NULL;
    if (e2b_req_error(s->read)) err = memcpy(&err_copy, e2b_req_error(s->read), sizeof err_copy);
    int which = s->reading, status = e2b_req_status(s->read);
    e2b_req_free(s->read);
    s->read = NULL;
    /* 416: nothing past our offset yet; 404: that file does not exist (yet). */
    int absent = err && status == 404;
    if (err && status != 416 && !absent) {
      s->last_err = *err;
      if (e2b_now_ms() - s->last_contact_ms > s->idle_ms) {
        e2b_error idle = *err;
        snprintf(idle.message, sizeof idle.message,
                 "idle timeout: the sandbox could not be read for %ld ms (idle_timeout_ms); last: %.200s",
                 s->idle_ms, err->message);
        idle.code = E2B_ERR_TIMEOUT;
        return fail(op, &idle);
      }
      e2b_req_arm_timer(op, s->poll_ms);
      if (s->poll_ms < POLL_MAX_MS) s->poll_ms *= 2;
      return;
    }
    s->last_contact_ms = e2b_now_ms();
    if (which == R_OUT) s->files_missing = absent;
    if (which == R_ERR) s->files_missing &= absent;
    if (which == R_EXIT) {
      s->files_missing &= absent;
      if (!absent && s->small.len) {
        s->exit_known = 1;
        s->exit_code = atoi(s->small.data);
        snprintf(s->status, sizeof s->status, "exit status %d", s->exit_code);
      }
    }
    if (which == R_OUT) return start_read(op, s, R_ERR);
    if (which == R_ERR && !s->exit_known) return start_read(op, s, R_EXIT);
    /* A full pass is over. */
    if (s->files_missing && !s->exit_known) return files_missing(op, s);
    s->missing_since_ms = 0;
    if (s->exit_known || s->gone) {
      if (s->final_pass && !s->pass_new) {
        if (!s->exit_known) {
          s->exit_code = -1;
          snprintf(s->status, sizeof s->status, "killed (no exit status recorded)");
        }
        return finish_with_end(op, s);
      }
      s->final_pass = 1;
      s->pass_new = 0;
      return start_read(op, s, R_OUT);
    }
    if (s->pass_new || s->wake) {
      s->poll_ms = POLL_MIN_MS;
      s->wake = 0;
      s->pass_new = 0;
      return start_read(op, s, R_OUT);
    }
    e2b_req_arm_timer(op, s->poll_ms);
    if (s->poll_ms < POLL_MAX_MS) s->poll_ms *= 2;
    return;
  }
  if (op->timer_at_ms && !s->wake && !s->exit_known && !s->gone) return;
  e2b_req_disarm_timer(op);
  s->wake = 0;
  s->pass_new = 0;
  if (!over_cap(op)) start_read(op, s, R_OUT);
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
      /* the wrapper's $0 says its output is kept (a tag alone does not) */
      kept = p->arg_count > 2 && strcmp(p->args[2], "e2b-proc") == 0;
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
  } else if (!(s->dir = scratch_dir(s->tag))) {
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
    to_poll(op, s, NULL);
  } else {
    e2b_error cerr;
    s->live = e2b_op_child(op, e2b_proc_connect(s->sbx, s->pid, NULL, s->idle_ms, &cerr));
    if (!s->live) return fail(op, &cerr);
  }
}

static void track_advance(e2b_req *op) {
  track_state *s = op->state;
  if (s->list) return list_step(op, s);
  if (s->mode == MODE_LIVE && s->live) live_step(op, s);
  else if (s->mode == MODE_POLL) poll_step(op, s);
}

/* ---- entry points ---- */

static track_state *new_state(e2b_sbx *sbx, const char *tag, long idle_ms) {
  track_state *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->sbx = sbx;
  e2b_sbx_retain(sbx);
  s->idle_ms = idle_ms > 0 ? idle_ms : 90000;
  s->tracked = 1;
  if (tag && !(s->tag = strdup(tag))) {
    track_free(s);
    return NULL;
  }
  return s;
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

e2b_req *e2b_proc_track(e2b_sbx *sbx, const e2b_proc_opts *opts, unsigned flags, e2b_error *err) {
  const char *op = "process.start";
  e2b_error_clear(err);
  /* The caller's own fields are checked as they are (the wrapper moves them). */
  if (!sbx || e2b_proc_opts_check(opts, err) != 0) {
    if (!sbx) e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "sandbox handle is required");
    return NULL;
  }
  char gen[E2B_UUID_SIZE + 8];
  const char *tag = opts->tag;
  if (!tag) {
    char id[E2B_UUID_SIZE];
    if (e2b_uuid4(id) != 0) {
      e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "random generator unavailable");
      return NULL;
    }
    snprintf(gen, sizeof gen, "e2b-%s", id);
    tag = gen;
  }
  int env_replace = (flags & E2B_TRACK_ENV_REPLACE) != 0;
  int keep = !(flags & E2B_TRACK_NO_KEEP) && opts->pty_cols == 0;
  track_state *s = new_state(sbx, tag, opts->idle_timeout_ms);
  char *dir = s ? scratch_dir(tag) : NULL;
  char *names = env_replace ? env_names(opts->env, opts->env_count) : NULL;
  size_t n = opts->arg_count + 5;
  const char **args = calloc(n, sizeof *args);
  e2b_kv *env = calloc(opts->env_count + 1, sizeof *env);
  if (!s || !dir || (env_replace && !names) || !args || !env) {
    free(dir);
    free(names);
    free(args);
    free(env);
    if (s) track_free(s);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return NULL;
  }
  s->dir = dir;
  s->tracked = keep;
  /* Kept: /bin/bash -c WRAPPER e2b-proc DIR cmd args...; not kept: the
   * command itself, or under ENV_ONLY to prune its environment. */
  size_t a = 0;
  if (keep || env_replace) {
    args[a++] = "-c";
    args[a++] = keep ? WRAPPER : ENV_ONLY;
    args[a++] = keep ? "e2b-proc" : "e2b-env";
    if (keep) args[a++] = dir;
    args[a++] = opts->cmd;
  }
  for (size_t i = 0; i < opts->arg_count; i++) args[a++] = opts->args[i];
  size_t ne = 0;
  for (size_t i = 0; i < opts->env_count; i++) env[ne++] = opts->env[i];
  if (names) env[ne++] = (e2b_kv){"E2B_ENV_KEEP", names};
  e2b_proc_opts wrapped = *opts;
  wrapped.cmd = keep || env_replace ? "/bin/bash" : opts->cmd;
  wrapped.args = args;
  wrapped.arg_count = a;
  wrapped.env = env;
  wrapped.env_count = ne;
  wrapped.tag = tag;
  e2b_req *op_req = NULL;
  s->live = e2b_proc_start(sbx, &wrapped, err);
  free(args);
  free(env);
  free(names);
  if (!s->live) {
    track_free(s);
    return NULL;
  }
  op_req = e2b_op_new(sbx->client->loop, op, track_advance, s, track_free, err);
  if (op_req) e2b_op_child(op_req, s->live);
  return op_req;
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
  track_state *s = new_state(sbx, tag, idle_timeout_ms);
  if (!s) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return NULL;
  }
  s->pid = pid;
  s->off[0] = stdout_offset;
  s->off[1] = stderr_offset;
  s->mode = MODE_POLL;
  s->list = e2b_proc_list(sbx, err);
  if (!s->list) {
    track_free(s);
    return NULL;
  }
  e2b_req *op_req = e2b_op_new(sbx->client->loop, op, track_advance, s, track_free, err);
  if (op_req) e2b_op_child(op_req, s->list);
  return op_req;
}

e2b_req *e2b_proc_forget(e2b_sbx *sbx, const char *tag, e2b_error *err) {
  e2b_error_clear(err);
  if (!sbx || !tag || !*tag) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "process.forget", "tag is required");
    return NULL;
  }
  char *dir = scratch_dir(tag);
  if (!dir) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "process.forget", "out of memory");
    return NULL;
  }
  e2b_req *req = e2b_fs_remove(sbx, dir, "root", err);
  free(dir);
  return req;
}

static const track_state *tstate(const e2b_req *req) {
  return req->advance == track_advance ? req->state : NULL;
}

uint32_t e2b_req_proc_pid(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s ? s->pid : 0;
}

const char *e2b_req_proc_tag(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s ? s->tag : NULL;
}

const char *e2b_req_proc_dir(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s && s->tracked ? s->dir : NULL;
}

int e2b_req_proc_tracked(const e2b_req *req) {
  const track_state *s = tstate(req);
  return s ? s->tracked : 0;
}
