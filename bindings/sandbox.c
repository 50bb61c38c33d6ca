/* sandbox.c — the sandbox handle userdata: envd processes and files. */
#include "auxiliar.h"
#include "whole.h"

#include <lualib.h> /* LUA_FILEHANDLE on the 5.1 ABI */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- sandbox handle (envd) ---- */

#define check_sbx(L) ((sbx_ud *)e2bL_check((L), &e2bL_sbx_class))

/* What is still queued to be forgotten goes first (unattended). */
static void sbx_release(void *ud) {
  sbx_ud *u = ud;
  e2b_sbx_flush_forgets(u->s);
  e2b_sbx_release(u->s);
}

/* A process is named by pid (number) or tag (string). */
static void check_target(lua_State *L, int idx, uint32_t *pid, const char **tag) {
  *pid = 0;
  *tag = NULL;
  if (lua_type(L, idx) == LUA_TSTRING)
    *tag = lua_tostring(L, idx);
  else
    *pid = (uint32_t)luaL_checkinteger(L, idx);
}

/* A process named by pid or tag (argument 2 of a call on a sandbox). */
typedef struct {
  uint32_t pid;
  const char *tag;
} proc_target;

static sbx_ud *check_proc(lua_State *L, proc_target *t) {
  sbx_ud *u = check_sbx(L);
  check_target(L, 2, &t->pid, &t->tag);
  return u;
}

/* Reads {cmd, args, shell, env, cwd, user, tag, stdin, pty_cols, pty_rows,
 * timeout_ms, keepalive_s, idle_timeout_ms} at t. */
static void read_proc_opts(lua_State *L, int t, e2b_proc_opts *o) {
  memset(o, 0, sizeof *o);
  o->cmd = e2bL_opt_string(L, t, "cmd");
  o->args = e2bL_opt_strings(L, t, "args", &o->arg_count);
  o->shell = e2bL_opt_string(L, t, "shell");
  o->env = e2bL_opt_kvs(L, t, "env", &o->env_count);
  o->cwd = e2bL_opt_string(L, t, "cwd");
  o->user = e2bL_opt_string(L, t, "user");
  o->tag = e2bL_opt_string(L, t, "tag");
  o->stdin_open = e2bL_opt_tristate(L, t, "stdin") == E2B_YES;
  o->pty_cols = (unsigned)e2bL_opt_integer(L, t, "pty_cols", 0);
  o->pty_rows = (unsigned)e2bL_opt_integer(L, t, "pty_rows", 0);
  o->timeout_ms = (long)e2bL_opt_integer(L, t, "timeout_ms", 0);
  o->keepalive_s = (long)e2bL_opt_integer(L, t, "keepalive_s", 0);
  o->idle_timeout_ms = (long)e2bL_opt_integer(L, t, "idle_timeout_ms", 0);
}

/* run(start_opts, run_opts) -> the request of e2b_run_with; run_opts:
 * { stdin = bytes, max_output = n, keep = "all"|"tail"|"none",
 *   chunks_stdout, chunks_stderr (take those chunks with read()),
 *   track, env_replace, keep_output (false: E2B_TRACK_NO_KEEP; nil: the core's default) }. */
static int sbx_run(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  e2b_proc_opts o;
  read_proc_opts(L, 2, &o);
  e2b_run_opts ro = {.keep = e2bL_keep_of(L, e2bL_opt_string(L, 3, "keep")),
                     .track = e2bL_opt_tristate(L, 3, "track") == E2B_YES};
  lua_getfield(L, 3, "stdin");
  ro.stdin_data = lua_isnil(L, -1) ? NULL : luaL_checklstring(L, -1, &ro.stdin_len);
  lua_Integer max = e2bL_opt_integer(L, 3, "max_output", 0);
  luaL_argcheck(L, max >= 0, 3, "max_output must be positive");
  ro.max_output = (size_t)max;
  ro.chunks = (e2bL_opt_tristate(L, 3, "chunks_stdout") == E2B_YES ? E2B_STREAM_STDOUT : 0) |
              (e2bL_opt_tristate(L, 3, "chunks_stderr") == E2B_YES ? E2B_STREAM_STDERR : 0);
  ro.track_flags = (e2bL_opt_tristate(L, 3, "env_replace") == E2B_YES ? E2B_TRACK_ENV_REPLACE : 0) |
                   (e2bL_opt_tristate(L, 3, "keep_output") == E2B_NO ? E2B_TRACK_NO_KEEP : 0);
  e2b_error err;
  e2b_req *req = e2b_run_with(u->s, &o, &ro, &err);
  lua_pop(L, 1); /* stdin: copied by now */
  return e2bL_push_req(L, u->l, req, &err);
}

/* boot_id(tag) -> a request whose result is the boot id the kept
 * process started under (e2b_proc_boot_id) */
static int sbx_boot_id(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  return e2bL_push_req(L, u->l, e2b_proc_boot_id(u->s, luaL_checkstring(L, 2), &err), &err);
}

/* track(start_opts, env_replace?, keep_output?, at_end?, park?) -> e2b_proc_track's process stream;
 * keep_output false: E2B_TRACK_NO_KEEP; park: true always, false never; nil: the core's default */
static int sbx_track(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 6); /* the option readers leave scratch above: absent flags must read as nil */
  e2b_proc_opts o;
  read_proc_opts(L, 2, &o);
  e2b_error err;
  unsigned park = lua_isnil(L, 6) ? 0 : lua_toboolean(L, 6) ? E2B_TRACK_PARK : E2B_TRACK_NO_PARK;
  unsigned flags = (lua_toboolean(L, 3) ? E2B_TRACK_ENV_REPLACE : 0) |
                   (lua_isboolean(L, 4) && !lua_toboolean(L, 4) ? E2B_TRACK_NO_KEEP : 0) |
                   (lua_toboolean(L, 5) ? E2B_TRACK_AT_END : 0) | park;
  e2b_req *req = e2b_proc_track(u->s, &o, flags, &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* attach(pid_or_tag, stdout_offset?, stderr_offset?, idle_timeout_ms?) */
static int sbx_attach(lua_State *L) {
  proc_target t;
  sbx_ud *u = check_proc(L, &t);
  e2b_error err;
  e2b_req *req = e2b_proc_attach(u->s, t.pid, t.tag, (int64_t)luaL_optinteger(L, 3, 0),
                                 (int64_t)luaL_optinteger(L, 4, 0),
                                 (long)luaL_optinteger(L, 5, 0), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* stop_async(pid, kept): a kill's first signal, fire and forget (for
 * finalizers, which cannot wait); the loop frees the request. */
static int sbx_stop_async(lua_State *L) {
  sbx_ud *u = luaL_checkudata(L, 1, SBX_MT);
  if (!u->s) return 0; /* finalized first: nothing left to send from */
  e2b_proc_stop_async(u->s, (uint32_t)luaL_checkinteger(L, 2), lua_toboolean(L, 3));
  return 0;
}

/* explain(req) -> a request finishing with what the failure of req (a
 * finished envd request of this sandbox, not yet closed) means for the
 * sandbox: gone, paused, or that error itself; nothing when it needs no
 * look. The core reads req's own error: nothing is rebuilt from Lua. */
static int sbx_explain(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  req_ud *r = luaL_checkudata(L, 2, REQ_MT);
  const e2b_error *err = r->req && e2b_req_done(r->req) ? e2b_req_error(r->req) : NULL;
  if (!err) return 0;
  e2b_error orig = *err;
  e2b_req *req = e2b_sbx_explain(u->s, &orig);
  if (!req) return 0;
  return e2bL_push_req(L, u->l, req, &orig);
}

/* end_async(pid, tag): a dropped kept command's stop, then its files'
 * removal, in that order, unattended (e2b_proc_end_async). */
static int sbx_end_async(lua_State *L) {
  sbx_ud *u = luaL_checkudata(L, 1, SBX_MT);
  if (!u->s) return 0;
  e2b_proc_end_async(u->s, (uint32_t)luaL_checkinteger(L, 2), luaL_checkstring(L, 3));
  return 0;
}

/* forget_async(tag, user?): removes kept output lazily (the core decides when). */
static int sbx_forget_async(lua_State *L) {
  sbx_ud *u = luaL_checkudata(L, 1, SBX_MT);
  if (!u->s) return 0;
  e2b_proc_forget_later(u->s, luaL_checkstring(L, 2), luaL_optstring(L, 3, "root"));
  return 0;
}

/* flush_forgets(drop?): sends the removal of kept output still queued
 * (unattended), or with drop just forgets the queue (the sandbox is gone). */
static int sbx_flush_forgets(lua_State *L) {
  sbx_ud *u = luaL_checkudata(L, 1, SBX_MT);
  if (u->s && lua_toboolean(L, 2)) e2b_sbx_drop_forgets(u->s);
  else if (u->s) e2b_sbx_flush_forgets(u->s);
  return 0;
}

static int sbx_close_stdin(lua_State *L) {
  proc_target t;
  sbx_ud *u = check_proc(L, &t);
  e2b_error err;
  return e2bL_push_req(L, u->l, e2b_proc_close_stdin(u->s, t.pid, t.tag, &err), &err);
}

/* signal(pid_or_tag, signo, pid?): by pid, once envd's list shows it
 * (with the tag when given) */
static int sbx_signal(lua_State *L) {
  proc_target t;
  sbx_ud *u = check_proc(L, &t);
  uint32_t pid = t.tag ? (uint32_t)luaL_optinteger(L, 4, 0) : t.pid;
  e2b_error err;
  e2b_req *req = e2b_proc_signal_listed(u->s, pid, t.tag, (int)luaL_checkinteger(L, 3), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* resize(pid_or_tag, cols, rows) */
static int sbx_resize(lua_State *L) {
  proc_target t;
  sbx_ud *u = check_proc(L, &t);
  e2b_error err;
  e2b_req *req = e2b_proc_resize(u->s, t.pid, t.tag, (unsigned)luaL_checkinteger(L, 3),
                                 (unsigned)luaL_checkinteger(L, 4), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* Calls of one shape each share a body (by_path, by_bytes, ...); each Lua
 * method is a C function of its own, registered beside its name in
 * sbx_methods. */
typedef e2b_req *(*by_path_fn)(e2b_sbx *sbx, const char *path, const char *user, e2b_error *err);
typedef e2b_req *(*bytes_fn)(e2b_sbx *sbx, uint32_t pid, const char *tag, const void *data, size_t len,
                             int pty, e2b_error *err);

/* name(pid_or_tag, bytes, pty?): feed writes in pieces, then closes stdin */
static int by_bytes(lua_State *L, bytes_fn call) {
  proc_target t;
  sbx_ud *u = check_proc(L, &t);
  size_t len;
  const char *data = luaL_checklstring(L, 3, &len);
  e2b_error err;
  e2b_req *req = call(u->s, t.pid, t.tag, data, len, lua_toboolean(L, 4), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

static int sbx_send_input(lua_State *L) { return by_bytes(L, e2b_proc_send_input); }
static int sbx_feed(lua_State *L) { return by_bytes(L, e2b_proc_feed); }

/* kill(pid_or_tag, ms): ms is how long the group may take to go (SIGKILL,
 * done once it is gone: kill.c) */
static int sbx_kill(lua_State *L) {
  proc_target t;
  sbx_ud *u = check_proc(L, &t);
  lua_Integer ms = luaL_optinteger(L, 3, 0);
  e2b_error err;
  return e2bL_push_req(L, u->l, e2b_proc_kill(u->s, t.pid, t.tag, (long)ms, &err), &err);
}

/* name(path, user?); write's request is an upload: feed it with send/finish */
static int by_path(lua_State *L, by_path_fn call) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  e2b_req *req = call(u->s, luaL_checkstring(L, 2), luaL_optstring(L, 3, NULL), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

static int sbx_stat(lua_State *L) { return by_path(L, e2b_fs_stat); }
static int sbx_mkdir(lua_State *L) { return by_path(L, e2b_fs_mkdir); }
static int sbx_remove(lua_State *L) { return by_path(L, e2b_fs_remove); }
static int sbx_write(lua_State *L) { return by_path(L, e2b_file_write); }

static int sbx_processes(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  return e2bL_push_req(L, u->l, e2b_proc_list(u->s, &err), &err);
}

static int sbx_list(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  e2b_req *req = e2b_fs_list(u->s, luaL_checkstring(L, 2), (long)luaL_optinteger(L, 3, 0),
                             luaL_optstring(L, 4, NULL), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

static int sbx_move(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  e2b_req *req = e2b_fs_move(u->s, luaL_checkstring(L, 2), luaL_checkstring(L, 3),
                             luaL_optstring(L, 4, NULL), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* read(path, user?, offset?) -> download request */
static int sbx_read(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  e2b_req *req = e2b_file_read(u->s, luaL_checkstring(L, 2), luaL_optstring(L, 3, NULL),
                               (int64_t)luaL_optinteger(L, 4, 0), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* url(path, operation, user?, expires_unix?) -> signed URL | nil, err */
static int sbx_url(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  char *url = e2b_file_url(u->s, luaL_checkstring(L, 2), luaL_checkstring(L, 3),
                           luaL_optstring(L, 4, NULL), (int64_t)luaL_optinteger(L, 5, 0), &err);
  if (!url) return e2bL_push_fail(L, &err);
  lua_pushstring(L, url);
  free(url);
  return 1;
}

/* watch(path, {user=, recursive=, timeout_ms=}?) -> watch stream request */
static int sbx_watch(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_watch_opts o = {0};
  if (lua_istable(L, 3)) {
    o.user = e2bL_opt_string(L, 3, "user");
    o.timeout_ms = (long)e2bL_opt_integer(L, 3, "timeout_ms", 0);
    lua_getfield(L, 3, "recursive");
    o.recursive = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  e2b_error err;
  e2b_req *req = e2b_fs_watch(u->s, luaL_checkstring(L, 2), &o, &err);
  return e2bL_push_req(L, u->l, req, &err);
}

static const luaL_Reg sbx_methods[] = {
    {"close_stdin", sbx_close_stdin},
    {"signal", sbx_signal},
    {"resize", sbx_resize},
    {"send_input", sbx_send_input},
    {"feed", sbx_feed},
    {"kill", sbx_kill},
    {"processes", sbx_processes},
    {"stat", sbx_stat},
    {"mkdir", sbx_mkdir},
    {"remove", sbx_remove},
    {"write", sbx_write},
    {"list", sbx_list},
    {"move", sbx_move},
    {"read", sbx_read},
    {"url", sbx_url},
    {"watch", sbx_watch},
    {"run", sbx_run},
    {"track", sbx_track},
    {"attach", sbx_attach},
    {"stop_async", sbx_stop_async},
    {"end_async", sbx_end_async},
    {"forget_async", sbx_forget_async},
    {"flush_forgets", sbx_flush_forgets},
    {"explain", sbx_explain},
    {"boot_id", sbx_boot_id},
    {NULL, NULL}};

const e2bL_class e2bL_sbx_class = {SBX_MT, "sandbox handle", offsetof(sbx_ud, s), sbx_release,
                                   sbx_methods};

void e2bL_open_sbx(lua_State *L) { e2bL_open_class(L, &e2bL_sbx_class); }
