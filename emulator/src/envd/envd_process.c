/* envd_process.c — process.Process: Start, Connect, List, SendInput,
 * StreamInput, CloseStdin, SendSignal, Update. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "codec.h"
#include "connect_rpc.h"
#include "egress.h"
#include "envdver.h"
#include "pjson.h"
#include "sandbox.h"
#include "util.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* ---- events ---- */

static json_t *event(const char *kind, json_t *body) {
  return json_pack("{s:{s:o}}", "event", kind, body);
}

#define COALESCE_MAX (1u << 20) /* bytes of queued output merged into one data event */

/* A data event straight into an envelope: output dominates the traffic, so
 * the JSON codec's form is written directly (no JSON tree, no escaping:
 * base64 needs none). */
static void data_envelope(sbuf *out, int kind, const unsigned char *data, size_t len, const pb_msg *pb) {
  const char *field = kind == PEV_STDOUT ? "stdout" : kind == PEV_STDERR ? "stderr" : "pty";
  if (pb) {
    /* bytes travel raw in the binary codec: no base64 at all */
    uint8_t hdr[E2B_ENV_HEADER_SIZE];
    uint32_t inner_tag = kind == PEV_STDOUT ? 1 : kind == PEV_STDERR ? 2 : 3;
    sbuf d = {0}, ev = {0}, top = {0};
    pb_append_bytes(&d, inner_tag, data, len);      /* DataEvent */
    pb_append_bytes(&ev, 2, d.data, d.len);         /* ProcessEvent.data */
    pb_append_bytes(&top, 1, ev.data, ev.len);      /* StartResponse.event */
    e2b_envelope_header(0, (uint32_t)top.len, hdr);
    sbuf_append(out, hdr, sizeof hdr);
    sbuf_append(out, top.data, top.len);
    sbuf_free(&d);
    sbuf_free(&ev);
    sbuf_free(&top);
    return;
  }
  size_t blen = 4 * ((len + 2) / 3);
  char pre[64];
  int plen = snprintf(pre, sizeof pre, "{\"event\":{\"data\":{\"%s\":\"", field);
  static const char post[] = "\"}}}";
  uint8_t hdr[E2B_ENV_HEADER_SIZE];
  e2b_envelope_header(0, (uint32_t)((size_t)plen + blen + sizeof post - 1), hdr);
  sbuf_reserve(out, sizeof hdr + (size_t)plen + blen + sizeof post);
  sbuf_append(out, hdr, sizeof hdr);
  sbuf_append(out, pre, (size_t)plen);
  out->len += e2b_b64_encode(data, len, out->data + out->len); /* its NUL fits: post follows */
  sbuf_append(out, post, sizeof post - 1);
}

/* Go's ProcessState rendering, which envd reports. */
static json_t *end_event(int status) {
  char text[96];
  json_t *end = json_object();
  if (WIFEXITED(status)) {
    int code = WEXITSTATUS(status);
    snprintf(text, sizeof text, "exit status %d", code);
    if (code) json_object_set_new(end, "exitCode", json_integer(code));
    json_object_set_new(end, "exited", json_true());
    json_object_set_new(end, "status", json_string(text));
    if (code) json_object_set_new(end, "error", json_string(text));
  } else {
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    e2b_signal_status(sig, text, sizeof text - sizeof " (core dumped)");
    if (WIFSIGNALED(status) && WCOREDUMP(status)) strcat(text, " (core dumped)");
    json_object_set_new(end, "exitCode", json_integer(-1));
    json_object_set_new(end, "status", json_string(text));
    json_object_set_new(end, "error", json_string(text));
  }
  return event("end", end);
}

/* ---- the event stream shared by Start and Connect ---- */

typedef struct pstream {
  sandbox *sb;
  proc *p;
  proc_sub *sub;
  int client_fd;
  int keepalive_ms;
  int started;
  const pb_msg *pb;
  proc_event *held; /* taken from the queue but not sent yet (another kind) */
  sbuf merged;
} pstream;

static int pstream_fill(void *ctx, sbuf *out) {
  pstream *s = ctx;
  if (!s->started) {
    s->started = 1;
    rpc_env_msg(out, event("start", json_pack("{s:i}", "pid", proc_pid(s->p))), s->pb);
    return 0;
  }
  proc_event *ev = s->held;
  s->held = NULL;
  if (!ev) switch (proc_sub_next(s->sub, s->keepalive_ms, s->client_fd, &ev)) {
    case PSUB_TIMEOUT:
      rpc_env_msg(out, event("keepalive", json_object()), s->pb);
      return 0;
    case PSUB_HANGUP:
      return STREAM_CLIENT_LEFT; /* the process keeps running (E2B semantics) */
    default:
      break;
    }
  int done = ev->kind == PEV_END;
  if (done && !sandbox_is_running(s->sb)) {
    /* The sandbox went away under the process: E2B's connection just drops
     * (no end event), and the SDK then finds the sandbox gone. */
    proc_event_free(s->sub, ev);
    return -1;
  }
  if (!done) {
    /* output that queued up meanwhile leaves in one event, order kept */
    int kind = ev->kind;
    s->merged.len = 0;
    sbuf_append(&s->merged, ev->data, ev->len);
    proc_event_free(s->sub, ev);
    proc_event *nx = NULL;
    while (s->merged.len < COALESCE_MAX && proc_sub_next(s->sub, 0, -1, &nx) == PSUB_EVENT) {
      if (nx->kind != kind) {
        s->held = nx;
        break;
      }
      sbuf_append(&s->merged, nx->data, nx->len);
      proc_event_free(s->sub, nx);
    }
    data_envelope(out, kind, (const unsigned char *)s->merged.data, s->merged.len, s->pb);
    return 0;
  }
  /* At the request's deadline envd's stream ends with the context's error
   * and no end event: the request context is done before the process's own
   * (same timeout, made after it) kills it. */
  int deadline = done && proc_deadline_hit(s->p);
  if (!deadline) rpc_env_msg(out, end_event(ev->status), s->pb);
  if (done) {
    rpc_err e = {0};
    if (deadline) rpc_fail(&e, "deadline_exceeded", "context deadline exceeded");
    rpc_env_end(out, &e);
  }
  proc_event_free(s->sub, ev);
  return done;
}

static void pstream_free(void *ctx) {
  pstream *s = ctx;
  if (s->held) proc_event_free(s->sub, s->held);
  sbuf_free(&s->merged);
  proc_unsubscribe(s->sub);
  proc_unref(s->p);
  sandbox_unref(s->sb);
  free(s);
}

static void pstream_start(rpc_call *c, proc *p, proc_sub *sub, stream_src *src) {
  pstream *s = xcalloc(1, sizeof *s);
  sandbox_ref(c->sb);
  s->sb = c->sb;
  s->p = p;
  s->sub = sub;
  s->client_fd = http_client_fd(c->r->conn);
  s->keepalive_ms = c->keepalive_ms;
  s->pb = c->out_pb;
  *src = (stream_src){pstream_fill, pstream_free, s};
}

/* ---- Start ---- */

static void env_add(json_t *env, const char *k, const char *v) {
  json_array_append_new(env, json_sprintf("%s=%s", k, v));
}

/* Defaults, then the sandbox's envVars and envd's own E2B_* variables (which
 * those cannot replace), then the request's envs (last wins), as envd does. */
static json_t *build_env(rpc_call *c, json_t *req_envs) {
  json_t *merged = json_pack("{s:s, s:s, s:s, s:s, s:s}", "PATH", DEFAULT_PATH, "HOME",
                             c->user->home, "USER", c->user->name, "LOGNAME", c->user->name,
                             "SHELL", "/bin/bash");
  /* the egress proxy: the sandbox's only way out (none without isolation) */
  for (const char *const *kv = egress_env(); *kv; kv++) {
    const char *eq = strchr(*kv, '=');
    char key[32];
    snprintf(key, sizeof key, "%.*s", (int)(eq - *kv), *kv);
    json_object_set_new(merged, key, json_string(eq + 1));
  }
  json_t *envd_env = sandbox_envd_env(c->sb);
  json_object_update(merged, envd_env);
  json_decref(envd_env);
  json_object_update(merged, req_envs); /* the process's own win */
  json_t *env = json_array();
  const char *k;
  json_t *v;
  json_object_foreach(merged, k, v) env_add(env, k, json_string_value(v));
  json_decref(merged);
  return env;
}

static int parse_pty(json_t *msg, json_t **pty, rpc_err *e) {
  json_t *p = pj_get(msg, "pty", NULL);
  *pty = NULL;
  if (!p) return 0;
  json_t *size = pj_get(p, "size", NULL);
  uint32_t cols = 80, rows = 24;
  if (!json_is_object(p) || pj_uint32(pj_get(size, "cols", NULL), 80, &cols) ||
      pj_uint32(pj_get(size, "rows", NULL), 24, &rows)) {
    rpc_fail(e, "invalid_argument", "invalid pty size");
    return -1;
  }
  *pty = json_pack("{s:i, s:i}", "cols", (int)(cols ? cols : 80), "rows", (int)(rows ? rows : 24));
  return 0;
}


/* The agent could not start it: envd's words for why (a missing cwd is
 * checked first and named). Clears the reply; returns -1. */
static int start_refused(rpc_err *e, ipc_msg *reply, const char *cmd, const char *dir) {
  if (json_is_true(json_object_get(reply->body, "cwd_missing")))
    rpc_fail(e, "invalid_argument", "cwd '%s' does not exist", dir);
  else
    rpc_fail(e, reply->err == ENOENT || reply->err == EACCES || reply->err == ENOTDIR ? "invalid_argument" : "internal",
             "failed to start process '%s': %s", cmd, strerror(reply->err));
  ipc_msg_clear(reply);
  return -1;
}
/* From 0.5.4 envd runs every command through `/bin/sh -c '... exec nice -n
 * N "$@"'`, so a command that cannot be executed still starts: nice says
 * why on stderr and exits 127 (not found) or 126. A refused exec is turned
 * into that: req's argv becomes a shell saying it. 1 when it did. */
static int as_envd_wrapper(const ipc_msg *reply, const char *cmd, json_t *req) {
  static const int exec_errors[] = {ENOENT, EACCES, ENOTDIR, ENOEXEC, ELOOP, ENAMETOOLONG, EISDIR, ETXTBSY, EPERM};
  int err = reply->err, known = 0;
  for (size_t i = 0; i < sizeof exec_errors / sizeof *exec_errors; i++) known |= err == exec_errors[i];
  if (!known || envd_below(ENVD_SINCE_NICE_WRAPPER) || json_is_true(json_object_get(reply->body, "cwd_missing")))
    return 0;
  char *why = xasprintf("/usr/bin/nice: '%s': %s", cmd, strerror(err));
  json_object_set_new(req, "argv", json_pack("[s, s, s, s, s]", "/bin/sh", "-c",
                                             err == ENOENT ? "printf '%s\\n' \"$1\" >&2; exit 127"
                                                           : "printf '%s\\n' \"$1\" >&2; exit 126",
                                             "sh", why));
  free(why);
  return 1;
}

static int start(rpc_call *c, stream_src *src, rpc_err *e) {
  json_t *pc = pj_get(c->msg, "process", NULL);
  const char *cmd = NULL, *cwd = NULL, *tag = NULL;
  json_t *args = pj_get(pc, "args", NULL), *envs = NULL, *pty = NULL;
  int with_stdin = 1;
  if (!json_is_object(pc) || pj_string(pj_get(pc, "cmd", NULL), "", &cmd) || !*cmd) {
    rpc_fail(e, "invalid_argument", "process.cmd is required");
    return -1;
  }
  if (pj_string(pj_get(pc, "cwd", NULL), NULL, &cwd) || pj_string(pj_get(c->msg, "tag", NULL), NULL, &tag) ||
      pj_bool(pj_get(c->msg, "stdin", NULL), 1, &with_stdin) || (args && !json_is_array(args))) {
    rpc_fail(e, "invalid_argument", "invalid process configuration");
    return -1;
  }
  if (envd_below(ENVD_SINCE_STDIN_FLAG)) with_stdin = 1; /* before the flag: always open */
  if (pj_string_map(pj_get(pc, "envs", NULL), &envs)) {
    rpc_fail(e, "invalid_argument", "process.envs must map strings to strings");
    return -1;
  }
  if (parse_pty(c->msg, &pty, e)) {
    json_decref(envs);
    return -1;
  }
  json_t *argv = json_pack("[s]", cmd);
  for (size_t i = 0; i < json_array_size(args); i++) {
    json_t *a = json_array_get(args, i);
    if (!json_is_string(a)) {
      rpc_fail(e, "invalid_argument", "process.args must be strings");
      json_decref(argv);
      json_decref(envs);
      json_decref(pty);
      return -1;
    }
    json_array_append(argv, a);
  }
  /* no cwd: the built template's WORKDIR when it has one, as envd's default workdir */
  const char *dflt = (!cwd || !*cwd) && c->sb ? c->sb->default_workdir : NULL;
  char *dir = rpc_resolve_path(c->user, dflt ? dflt : cwd);
  json_t *req = json_pack("{s:o, s:o, s:s, s:i, s:i, s:b}", "argv", argv, "env", build_env(c, envs),
                          "cwd", dir, "uid", c->user->uid, "gid", c->user->gid, "stdin",
                          pty ? 0 : with_stdin);
  if (pty) json_object_set_new(req, "pty", pty);
  /* List reports the configuration as requested. */
  json_t *config = json_pack("{s:s, s:o, s:o}", "cmd", cmd, "args",
                             args ? json_incref(args) : json_array(), "envs", envs);
  if (cwd) json_object_set_new(config, "cwd", json_string(cwd));
  /* proto3 JSON omits empty repeated and map fields */
  if (json_array_size(json_object_get(config, "args")) == 0) json_object_del(config, "args");
  if (json_object_size(json_object_get(config, "envs")) == 0) json_object_del(config, "envs");
  int64_t deadline = c->timeout_ms > 0 ? mono_ms() + c->timeout_ms : 0;
  spawn_result sp;
  ipc_msg reply;
  int rc = sandbox_spawn(c->sb, req, config, tag, deadline, &sp, &reply);
  if (!rc && reply.err && as_envd_wrapper(&reply, cmd, req)) {
    ipc_msg_clear(&reply);
    rc = sandbox_spawn(c->sb, req, config, tag, deadline, &sp, &reply);
  }
  json_decref(req);
  json_decref(config);
  if (rc) rpc_fail_errno(e, -rc, "cannot start the process");
  else if (reply.err) rc = start_refused(e, &reply, cmd, dir);
  free(dir);
  if (rc) return -1;
  ipc_msg_clear(&reply);
  pstream_start(c, sp.p, sp.sub, src);
  return 0;
}

/* ---- selector-based calls ---- */

static proc *select_proc(rpc_call *c, rpc_err *e) {
  json_t *sel = pj_get(c->msg, "process", NULL);
  uint32_t pid = 0;
  const char *tag = NULL;
  if (!json_is_object(sel) || pj_uint32(pj_get(sel, "pid", NULL), 0, &pid) ||
      pj_string(pj_get(sel, "tag", NULL), NULL, &tag) || (!pid && !tag)) {
    rpc_fail(e, "invalid_argument", "a process selector (pid or tag) is required");
    return NULL;
  }
  proc_table *t = sandbox_procs(c->sb);
  if (!t) {
    rpc_fail(e, "unavailable", "sandbox is not running");
    return NULL;
  }
  proc *p = proc_find(t, (int)pid, tag);
  proc_table_unref(t);
  if (!p) {
    if (pid)
      rpc_fail(e, "not_found", "process with pid %u not found", pid);
    else
      rpc_fail(e, "not_found", "process with tag %s not found", tag);
  }
  return p;
}

static int connect_stream(rpc_call *c, stream_src *src, rpc_err *e) {
  proc *p = select_proc(c, e);
  if (!p) return -1;
  proc_sub *sub = proc_subscribe(p);
  if (!sub) {
    rpc_fail(e, "not_found", "process %d has already ended", proc_pid(p));
    proc_unref(p);
    return -1;
  }
  pstream_start(c, p, sub, src);
  return 0;
}

static int list(rpc_call *c, json_t **resp, rpc_err *e) {
  proc_table *t = sandbox_procs(c->sb);
  if (!t) {
    rpc_fail(e, "unavailable", "sandbox is not running");
    return -1;
  }
  *resp = json_pack("{s:o}", "processes", proc_table_list(t));
  proc_table_unref(t);
  return 0;
}

static int write_input(proc *p, json_t *input, rpc_err *e) {
  json_t *in_stdin = pj_get(input, "stdin", NULL), *in_pty = pj_get(input, "pty", NULL);
  if (!json_is_object(input) || (!in_stdin && !in_pty)) {
    rpc_fail(e, "invalid_argument", "input.stdin or input.pty is required");
    return -1;
  }
  uint8_t *data = NULL;
  size_t n = 0;
  if (pj_bytes(in_pty ? in_pty : in_stdin, &data, &n)) {
    rpc_fail(e, "invalid_argument", "input is not valid base64");
    return -1;
  }
  int rc = proc_write_stdin(p, data, n, in_pty != NULL);
  free(data);
  if (rc == -EBADF)
    rpc_fail(e, "failed_precondition", in_pty ? "process %d has no pty" : "stdin of process %d is closed or was not enabled", proc_pid(p));
  else if (rc)
    rpc_fail(e, "internal", "cannot write to process %d: %s", proc_pid(p), strerror(-rc));
  return rc ? -1 : 0;
}

static int send_input(rpc_call *c, json_t **resp, rpc_err *e) {
  proc *p = select_proc(c, e);
  if (!p) return -1;
  int rc = write_input(p, pj_get(c->msg, "input", NULL), e);
  proc_unref(p);
  return rc;
}

static int close_stdin(rpc_call *c, json_t **resp, rpc_err *e) {
  proc *p = select_proc(c, e);
  if (!p) return -1;
  int rc = proc_close_stdin(p);
  if (rc) rpc_fail(e, "failed_precondition", "stdin of process %d is already closed or was not enabled", proc_pid(p));
  proc_unref(p);
  return rc ? -1 : 0;
}

/* As envd: the process is looked up first, and only SIGKILL and SIGTERM
 * exist (any other number is "unimplemented"). */
static int send_signal(rpc_call *c, json_t **resp, rpc_err *e) {
  static const char *const names[] = {"SIGNAL_UNSPECIFIED", "SIGNAL_SIGKILL", "SIGNAL_SIGTERM"};
  static const int nums[] = {0, SIGKILL, SIGTERM};
  int sig = 0;
  if (pj_enum(pj_get(c->msg, "signal", NULL), names, nums, sizeof nums / sizeof nums[0], &sig)) {
    rpc_fail(e, "invalid_argument", "signal is not a Signal");
    return -1;
  }
  proc *p = select_proc(c, e);
  if (!p) return -1;
  if (sig != SIGKILL && sig != SIGTERM) {
    rpc_fail(e, "unimplemented", "invalid signal: %d", sig);
    proc_unref(p);
    return -1;
  }
  proc_cut(p); /* as envd: the end comes once the pid exits */
  int rc = sandbox_signal(c->sb, proc_pid(p), sig);
  if (rc == -ESRCH) rc = 0; /* it ended meanwhile: the signal is moot */
  if (rc) rpc_fail_errno(e, -rc, "cannot signal the process");
  proc_unref(p);
  return rc ? -1 : 0;
}

static int update(rpc_call *c, json_t **resp, rpc_err *e) {
  json_t *pty = NULL;
  if (parse_pty(c->msg, &pty, e)) return -1;
  proc *p = select_proc(c, e);
  if (!p) {
    json_decref(pty);
    return -1;
  }
  int rc = 0;
  if (pty) {
    rc = proc_resize(p, (unsigned)json_integer_value(json_object_get(pty, "cols")),
                     (unsigned)json_integer_value(json_object_get(pty, "rows")));
    if (rc) rpc_fail(e, "failed_precondition", "process %d has no pty", proc_pid(p));
  }
  json_decref(pty);
  proc_unref(p);
  return rc ? -1 : 0;
}

/* StreamInput (client stream): start {process}, then data {input} messages
 * written as they arrive, keepalives ignored. *state holds the process. */
static int stream_input(rpc_call *c, json_t *msg, void **state, rpc_err *e) {
  proc *p = *state;
  if (!msg) { /* the end of the stream (or teardown) */
    if (p) proc_unref(p);
    *state = NULL;
    return 0;
  }
  json_t *start_ev = pj_get(msg, "start", NULL), *data = pj_get(msg, "data", NULL);
  if (start_ev) {
    if (p) {
      rpc_fail(e, "invalid_argument", "the stream was already started");
      return -1;
    }
    rpc_call sel = *c;
    sel.msg = start_ev;
    p = select_proc(&sel, e);
    if (!p) return -1;
    *state = p;
    return 0;
  }
  if (data) {
    if (!p) {
      rpc_fail(e, "invalid_argument", "the first message must be start {process}");
      return -1;
    }
    return write_input(p, pj_get(data, "input", NULL), e);
  }
  if (pj_get(msg, "keepalive", NULL)) return 0;
  rpc_fail(e, "invalid_argument", "expected start, data or keepalive");
  return -1;
}

const rpc_method ENVD_PROCESS_METHODS[] = {
    {"/process.Process/Start", NULL, start, &PB_START_REQUEST, &PB_PROCESS_STREAM_RESPONSE, NULL},
    {"/process.Process/Connect", NULL, connect_stream, &PB_CONNECT_REQUEST, &PB_PROCESS_STREAM_RESPONSE, NULL},
    {"/process.Process/List", list, NULL, &PB_LIST_REQUEST, &PB_LIST_RESPONSE, NULL},
    {"/process.Process/SendInput", send_input, NULL, &PB_SEND_INPUT_REQUEST, &PB_EMPTY, NULL},
    {"/process.Process/CloseStdin", close_stdin, NULL, &PB_CLOSE_STDIN_REQUEST, &PB_EMPTY, NULL},
    {"/process.Process/SendSignal", send_signal, NULL, &PB_SEND_SIGNAL_REQUEST, &PB_EMPTY, NULL},
    {"/process.Process/Update", update, NULL, &PB_UPDATE_REQUEST, &PB_EMPTY, NULL},
    {"/process.Process/StreamInput", NULL, NULL, &PB_STREAM_INPUT_REQUEST, &PB_EMPTY, stream_input},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
