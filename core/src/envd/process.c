/* process.c — envd's process.Process service over Connect with the JSON codec,
 * and the one starter of envd RPCs (filesystem.c's calls start here too). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Starts an RPC whose body is `body` (consumed). */
e2b_req *e2b_sbx_rpc(e2b_sbx *sbx, const char *op, const char *method_path, const char *user,
                     json_t *body, int stream, req_parse_fn parse, e2b_error *err) {
  if (!body) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return NULL;
  }
  e2b_req *req = e2b_req_new(sbx->client->loop, op, err);
  if (!req) {
    json_decref(body);
    return NULL;
  }
  req->mode = stream ? BODY_EVENTS : BODY_BUFFER;
  req->parse = parse;
  int rc = e2b_sbx_prepare_rpc(sbx, req, method_path, user, body, stream, err);
  json_decref(body);
  if (rc != 0) {
    e2b_req_free(req);
    return NULL;
  }
  return e2b_req_start(req, err) == 0 ? req : NULL;
}

const e2b_error *e2b_proc_stream_cut(const e2b_req *stream, const char *op, e2b_error *scratch) {
  const e2b_error *err = e2b_req_error(stream);
  if (err) return err;
  e2b_err_set(scratch, E2B_ERR_PROTOCOL, op, "process stream ended without an end event");
  return scratch;
}

long e2b_idle_budget_ms(long idle_ms) { return idle_ms > 0 ? idle_ms : E2B_DEFAULT_IDLE_TIMEOUT_MS; }

/* The idle budget: a stream that delivers nothing (not even a keepalive,
 * which envd sends every keepalive_s) for idle_ms fails as a timeout, so a
 * command never hangs on an unreachable sandbox. */
static int add_stream_headers(e2b_req *req, long keepalive_s, long idle_ms, long timeout_ms,
                              e2b_error *err) {
  char v[32];
  idle_ms = e2b_idle_budget_ms(idle_ms);
  if (keepalive_s <= 0) keepalive_s = idle_ms / 3000 > 0 ? idle_ms / 3000 : 1;
  if (keepalive_s > 50) keepalive_s = 50;
  req->idle_ms = idle_ms; /* watched by the transfer's idle timer */
  snprintf(v, sizeof v, "%ld", keepalive_s);
  if (e2b_req_add_header(req, "Keepalive-Ping-Interval", v, err) != 0) return -1;
  if (timeout_ms > 0) {
    snprintf(v, sizeof v, "%ld", timeout_ms);
    if (e2b_req_add_header(req, "Connect-Timeout-Ms", v, err) != 0) return -1;
  }
  return 0;
}

static json_t *selector(uint32_t pid, const char *tag) {
  json_t *sel = json_object();
  if (tag)
    json_object_set_new(sel, "tag", json_string(tag));
  else
    json_object_set_new(sel, "pid", json_integer(pid));
  return sel;
}

e2b_req *e2b_sbx_stream_rpc(e2b_sbx *sbx, const char *op, const char *method_path, const char *user,
                            json_t *body, long keepalive_s, long idle_ms, long timeout_ms,
                            unsigned flags, e2b_error *err) {
  /* Stream headers must be added before the transfer starts, so build by hand. */
  e2b_req *req = e2b_req_new(sbx->client->loop, op, err);
  if (!req) {
    json_decref(body);
    return NULL;
  }
  int rc = !body ? -1 : e2b_sbx_prepare_rpc(sbx, req, method_path, user, body, 1, err);
  json_decref(body);
  if (rc == 0) rc = add_stream_headers(req, keepalive_s, idle_ms, timeout_ms, err);
  if (flags & E2B_STREAM_WATCH) req->mode = BODY_WATCH;
  req->watch_all = (flags & E2B_STREAM_WATCH_ALL) != 0;
  /* curl's default 16 KiB receive buffer per transfer is most of what an
   * idle stream costs; events are small and rare, output is not. */
  if (flags & E2B_STREAM_EVENTS) curl_easy_setopt(req->easy, CURLOPT_BUFFERSIZE, E2B_EVENT_STREAM_BUFFER);
  if (rc != 0) {
    if (err->code == E2B_OK) e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    e2b_req_free(req);
    return NULL;
  }
  return e2b_req_typed(e2b_req_start(req, err) == 0 ? req : NULL, E2B_RESULT_STREAM);
}

/* proto3 strings must be UTF-8; bytes that are not belong in stdin or a file. */
static int utf8_field(const char *s, const char *op, e2b_error *err, const char *fmt, size_t i) {
  if (!s || e2b_utf8_valid(s, strlen(s))) return 0;
  char field[64];
  snprintf(field, sizeof field, fmt, i);
  e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s is not valid UTF-8", field);
  return -1;
}

int e2b_proc_opts_check(const e2b_proc_opts *o, e2b_error *err) {
  const char *op = "process.start";
  if (o && o->shell && (o->cmd || o->arg_count || !*o->shell)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "shell: %s",
                *o->shell ? "a command string takes no cmd or args" : "the command string is empty");
    return -1;
  }
  if (!o || (!o->shell && (!o->cmd || !*o->cmd))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "cmd is required");
    return -1;
  }
  if (utf8_field(o->cmd, op, err, "cmd", 0) || utf8_field(o->shell, op, err, "shell", 0) || utf8_field(o->cwd, op, err, "cwd", 0) ||
      utf8_field(o->user, op, err, "user", 0) || utf8_field(o->tag, op, err, "tag", 0))
    return -1;
  for (size_t i = 0; i < o->arg_count; i++) {
    if (!o->args || !o->args[i]) {
      e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "args[%zu] is missing", i + 1);
      return -1;
    }
    if (utf8_field(o->args[i], op, err, "args[%zu]", i + 1)) return -1;
  }
  for (size_t i = 0; i < o->env_count; i++) {
    if (!o->env || !o->env[i].key || !*o->env[i].key || !o->env[i].value ||
        strchr(o->env[i].key, '=')) {
      e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op,
                  "env: names must be non-empty, without '=', and have a value");
      return -1;
    }
    if (utf8_field(o->env[i].key, op, err, "env name %zu", i + 1) ||
        utf8_field(o->env[i].value, op, err, "env value %zu", i + 1))
      return -1;
  }
  if (o->timeout_ms < 0 || o->keepalive_s < 0 || o->idle_timeout_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "%s must not be negative",
                o->timeout_ms < 0 ? "timeout_ms" : o->keepalive_s < 0 ? "keepalive_s" : "idle_timeout_ms");
    return -1;
  }
  if ((o->pty_cols == 0) != (o->pty_rows == 0)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "pty needs both cols and rows");
    return -1;
  }
  return 0;
}

e2b_req *e2b_proc_start(e2b_sbx *sbx, const e2b_proc_opts *o, e2b_error *err) {
  return e2b_proc_start_stream(sbx, o, 0, err);
}

e2b_req *e2b_proc_start_stream(e2b_sbx *sbx, const e2b_proc_opts *o, unsigned flags,
                               e2b_error *err) {
  if (e2b_need_sbx(sbx, "process.start", err) || e2b_proc_opts_check(o, err)) return NULL;
  e2b_proc_opts spelled;
  const char *argv[3];
  o = e2b_proc_opts_spelled(o, &spelled, argv);
  json_t *process = json_object(), *args = json_array(), *body = json_object();
  if (!process || !args || !body) {
    json_decref(process);
    json_decref(args);
    json_decref(body);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "process.start", "out of memory");
    return NULL;
  }
  json_object_set_new(process, "cmd", json_string(o->cmd));
  for (size_t i = 0; i < o->arg_count; i++) json_array_append_new(args, json_stringn(o->args[i], strlen(o->args[i])));
  json_object_set_new(process, "args", args);
  if (o->env_count) {
    json_t *envs = json_object();
    for (size_t i = 0; i < o->env_count; i++) json_object_set_new(envs, o->env[i].key, json_string(o->env[i].value));
    json_object_set_new(process, "envs", envs);
  }
  if (o->cwd) json_object_set_new(process, "cwd", json_string(o->cwd));
  json_object_set_new(body, "process", process);
  if (o->pty_cols) {
    json_t *size = json_object(), *pty = json_object();
    json_object_set_new(size, "cols", json_integer(o->pty_cols));
    json_object_set_new(size, "rows", json_integer(o->pty_rows));
    json_object_set_new(pty, "size", size);
    json_object_set_new(body, "pty", pty);
  } else {
    json_object_set_new(body, "stdin", json_boolean(o->stdin_open));
  }
  if (o->tag) json_object_set_new(body, "tag", json_string(o->tag));
  return e2b_sbx_stream_rpc(sbx, "process.start", "/process.Process/Start", o->user, body, o->keepalive_s,
                            o->idle_timeout_ms, o->timeout_ms, flags, err);
}

e2b_req *e2b_proc_connect(e2b_sbx *sbx, uint32_t pid, const char *tag, long idle_timeout_ms,
                          e2b_error *err) {
  return e2b_proc_connect_stream(sbx, pid, tag, idle_timeout_ms, 0, err);
}

e2b_req *e2b_proc_connect_stream(e2b_sbx *sbx, uint32_t pid, const char *tag, long idle_timeout_ms,
                                 unsigned flags, e2b_error *err) {
  if (e2b_need_sbx(sbx, "process.connect", err)) return NULL;
  if (!tag && pid == 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "process.connect", "pid or tag is required");
    return NULL;
  }
  json_t *body = json_object();
  if (body) json_object_set_new(body, "process", selector(pid, tag));
  return e2b_sbx_stream_rpc(sbx, "process.connect", "/process.Process/Connect", NULL, body, 0,
                            idle_timeout_ms, 0, flags, err);
}


static int need_pid(uint32_t pid, const char *tag, const char *op, e2b_error *err) {
  if (pid == 0 && !tag) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "pid or tag is required");
    return -1;
  }
  if (tag && (!*tag || !e2b_utf8_valid(tag, strlen(tag)))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "tag must be a non-empty UTF-8 string");
    return -1;
  }
  return 0;
}

e2b_req *e2b_proc_send_input(e2b_sbx *sbx, uint32_t pid, const char *tag, const void *data,
                             size_t len, int pty, e2b_error *err) {
  const char *op = "process.send_input";
  if (e2b_need_sbx(sbx, op, err) || need_pid(pid, tag, op, err)) return NULL;
  if (len && !data) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "data is required");
    return NULL;
  }
  char *b64 = e2b_b64_encode_alloc(data ? data : "", len);
  json_t *input = json_object(), *body = json_object();
  if (!b64 || !input || !body) {
    free(b64);
    json_decref(input);
    json_decref(body);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return NULL;
  }
  json_object_set_new(input, pty ? "pty" : "stdin", json_string(b64));
  free(b64);
  json_object_set_new(body, "process", selector(pid, tag));
  json_object_set_new(body, "input", input);
  return e2b_sbx_rpc(sbx, op, "/process.Process/SendInput", NULL, body, 0, e2b_parse_nothing, err);
}

static json_t *pid_body(uint32_t pid, const char *tag) {
  json_t *body = json_object();
  if (body) json_object_set_new(body, "process", selector(pid, tag));
  return body;
}

e2b_req *e2b_proc_close_stdin(e2b_sbx *sbx, uint32_t pid, const char *tag, e2b_error *err) {
  const char *op = "process.close_stdin";
  if (e2b_need_sbx(sbx, op, err) || need_pid(pid, tag, op, err) ||
      e2b_envd_need(sbx, op, "closing stdin", E2B_ENVD_CLOSE_STDIN, err))
    return NULL;
  e2b_req *req = e2b_sbx_rpc(sbx, op, "/process.Process/CloseStdin", NULL, pid_body(pid, tag), 0,
                             e2b_parse_nothing, err);
  if (req) req->idempotent = 1;
  return req;
}

e2b_req *e2b_proc_signal(e2b_sbx *sbx, uint32_t pid, const char *tag, int signo, e2b_error *err) {
  const char *op = "process.signal";
  if (e2b_need_sbx(sbx, op, err) || need_pid(pid, tag, op, err)) return NULL;
  /* envd's SendSignal knows these two and answers any other "unimplemented":
   * refused here, before anything is sent. */
  if (signo != 9 && signo != 15) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op,
                "envd delivers only SIGKILL (9) and SIGTERM (15), not signal %d", signo);
    return NULL;
  }
  json_t *body = pid_body(pid, tag);
  if (body) json_object_set_new(body, "signal", json_string(signo == 9 ? "SIGNAL_SIGKILL" : "SIGNAL_SIGTERM"));
  e2b_req *req =
      e2b_sbx_rpc(sbx, op, "/process.Process/SendSignal", NULL, body, 0, e2b_parse_nothing, err);
  if (req) req->idempotent = 1;
  return req;
}

e2b_req *e2b_proc_resize(e2b_sbx *sbx, uint32_t pid, const char *tag, unsigned cols, unsigned rows,
                         e2b_error *err) {
  const char *op = "process.resize";
  if (e2b_need_sbx(sbx, op, err) || need_pid(pid, tag, op, err)) return NULL;
  if (cols == 0 || rows == 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "cols and rows must be positive");
    return NULL;
  }
  json_t *body = pid_body(pid, tag), *size = json_object(), *pty = json_object();
  json_object_set_new(size, "cols", json_integer(cols));
  json_object_set_new(size, "rows", json_integer(rows));
  json_object_set_new(pty, "size", size);
  if (body) json_object_set_new(body, "pty", pty);
  else json_decref(pty);
  return e2b_sbx_rpc(sbx, op, "/process.Process/Update", NULL, body, 0, e2b_parse_nothing, err);
}

/* A listed process, shown as the command it runs when the wrapper runs it. */
static int proc_item(json_t *obj, void *out) {
  if (e2b_parse_proc_info(obj, out) != 0) return -1;
  e2b_wrapper_unwrap(out);
  return 0;
}

/* What a process list leaves in the result slot (E2B_RESULT_PROCS). */
typedef struct proc_list {
  e2b_proc_info *items;
  size_t count;
} proc_list;

static void proc_list_free(void *p) {
  proc_list *l = p;
  for (size_t i = 0; i < l->count; i++) e2b_proc_info_clear(&l->items[i]);
  free(l->items);
  free(l);
}

static const proc_list *procs_in(const e2b_req *req) {
  static const proc_list none;
  return req->result && req->result_free == proc_list_free ? req->result : &none;
}

static int parse_proc_list(e2b_req *req, json_t *body, e2b_error *err) {
  if (body && !json_is_object(body)) {
    e2b_err_set(err, E2B_ERR_PROTOCOL, req->op, "response is not an object");
    return -1;
  }
  proc_list *l = calloc(1, sizeof *l);
  if (!l) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return -1;
  }
  req->result = l;
  req->result_free = proc_list_free;
  void *items;
  int rc = e2b_parse_items(json_object_get(body, "processes"), sizeof *l->items, proc_item, &items,
                           &l->count, req->op, "process %zu is malformed", err);
  l->items = items;
  return rc;
}

e2b_req *e2b_proc_list(e2b_sbx *sbx, e2b_error *err) {
  const char *op = "process.list";
  if (e2b_need_sbx(sbx, op, err)) return NULL;
  e2b_req *req =
      e2b_sbx_rpc(sbx, op, "/process.Process/List", NULL, json_object(), 0, parse_proc_list, err);
  if (req) req->idempotent = 1;
  return e2b_req_typed(req, E2B_RESULT_PROCS);
}

size_t e2b_req_proc_count(const e2b_req *req) { return procs_in(req)->count; }
const e2b_proc_info *e2b_req_proc_at(const e2b_req *req, size_t i) {
  const proc_list *l = procs_in(req);
  return i < l->count ? &l->items[i] : NULL;
}
