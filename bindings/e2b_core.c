/*
 * e2b_core.c — the Lua binding of libe2b: module "e2b.core".
 *
 * Thin by design: it converts Lua tables to libe2b option structs and results
 * back, and exposes requests as userdata. Waiting, scheduling and the public
 * API live in Lua (the files under lua/e2b/). Wrong argument types raise (programmer
 * errors); runtime failures return nil, err. No global state: everything is
 * reachable from userdata or the registry of the calling Lua state.
 *
 * Userdata: loop, client, sbx, req. The C objects behind them are reference
 * counted, so the garbage collector may finalise them in any order.
 */
#include "compat.h"
#include "e2b.h"
#include "codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOOP_MT "e2b.core.loop"
#define CLIENT_MT "e2b.core.client"
#define SBX_MT "e2b.core.sbx"
#define REQ_MT "e2b.core.req"
#define ERROR_MT_KEY "e2b.core.error_mt"

/* ---- shared loop state (refcounted: requests keep it alive) ---- */

typedef struct lloop {
  int refs;
  e2b_loop *loop;
  lua_Integer *ready; /* ids of requests notified since the last step */
  size_t ready_len, ready_cap;
  lua_Integer next_id;
} lloop;

static void lloop_release(lloop *l) {
  if (--l->refs > 0) return;
  e2b_loop_release(l->loop);
  free(l->ready);
  free(l);
}

typedef struct { lloop *l; } loop_ud;
typedef struct { e2b_client *c; lloop *l; } client_ud;
typedef struct { e2b_sbx *s; lloop *l; } sbx_ud;

typedef enum {
  RES_NONE,      /* true */
  RES_SANDBOX,   /* one sandbox table */
  RES_SANDBOXES, /* array + next token */
  RES_ENTRY,
  RES_ENTRIES,
  RES_PROCS,
  RES_WRITTEN,   /* written path */
  RES_STREAM,    /* true once the stream ended cleanly */
  RES_SNAPSHOTS,
  RES_VOLUMES,
  RES_RUN,
  RES_DOCTOR,
  RES_EGRESS
} result_kind;

typedef struct {
  e2b_req *req;
  lloop *l;
  lua_Integer id;
  result_kind kind;
} req_ud;

/* ---- errors ---- */

static void push_error_table(lua_State *L, const e2b_error *err) {
  lua_createtable(L, 0, 6);
  lua_pushstring(L, e2b_code_name(err->code));
  lua_setfield(L, -2, "kind");
  lua_pushstring(L, err->message);
  lua_setfield(L, -2, "message");
  if (err->op[0]) {
    lua_pushstring(L, err->op);
    lua_setfield(L, -2, "op");
  }
  if (err->status) {
    lua_pushinteger(L, err->status);
    lua_setfield(L, -2, "status");
  }
  lua_pushboolean(L, err->retryable);
  lua_setfield(L, -2, "retryable");
  if (err->retry_after_ms >= 0) {
    lua_pushinteger(L, (lua_Integer)err->retry_after_ms);
    lua_setfield(L, -2, "retry_after_ms");
  }
  lua_getfield(L, LUA_REGISTRYINDEX, ERROR_MT_KEY);
  if (lua_istable(L, -1))
    lua_setmetatable(L, -2);
  else
    lua_pop(L, 1);
}

static int push_fail(lua_State *L, const e2b_error *err) {
  lua_pushnil(L);
  push_error_table(L, err);
  return 2;
}

/* ---- option readers (the Lua layer validates first; these stay strict) ---- */

static const char *opt_string(lua_State *L, int t, const char *field) {
  lua_getfield(L, t, field);
  const char *s = NULL;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "%s must be a string", field);
    s = lua_tostring(L, -1); /* stays alive: the options table holds it */
  }
  lua_pop(L, 1);
  return s;
}

static lua_Integer opt_integer(lua_State *L, int t, const char *field, lua_Integer dflt) {
  lua_getfield(L, t, field);
  lua_Integer v = dflt;
  if (!lua_isnil(L, -1)) {
    if (!lua_isinteger(L, -1)) luaL_error(L, "%s must be an integer", field);
    v = lua_tointeger(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* nil -> E2B_UNSET, else 0/1. */
static int opt_tristate(lua_State *L, int t, const char *field) {
  lua_getfield(L, t, field);
  int v = E2B_UNSET;
  if (!lua_isnil(L, -1)) {
    if (!lua_isboolean(L, -1)) luaL_error(L, "%s must be a boolean", field);
    v = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* Scratch memory that the garbage collector reclaims (no leak on raise). */
static void *scratch(lua_State *L, size_t size) {
  return size ? compat_newuserdata(L, size) : (lua_pushnil(L), NULL);
}

/* Reads table field `field` (string -> string map) into a scratch kv array
 * left on the stack. */
static const e2b_kv *opt_kvs(lua_State *L, int t, const char *field, size_t *count) {
  *count = 0;
  lua_getfield(L, t, field);
  int m = lua_gettop(L);
  if (lua_isnil(L, m)) {
    lua_pushnil(L); /* keep the stack shape: one scratch slot */
    lua_remove(L, m);
    return NULL;
  }
  luaL_argcheck(L, lua_istable(L, m), 1, field);
  size_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, m)) {
    if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "%s: keys and values must be strings", field);
    n++;
    lua_pop(L, 1);
  }
  e2b_kv *kv = scratch(L, n * sizeof *kv);
  lua_pushnil(L);
  size_t i = 0;
  while (lua_next(L, m)) {
    kv[i].key = lua_tostring(L, -2);
    kv[i].value = lua_tostring(L, -1);
    i++;
    lua_pop(L, 1);
  }
  /* The map table stays referenced by the options table; keep only scratch. */
  lua_remove(L, m);
  *count = n;
  return kv;
}

/* Reads an array of strings into a scratch array left on the stack. */
static const char *const *opt_strings(lua_State *L, int t, const char *field, size_t *count) {
  *count = 0;
  lua_getfield(L, t, field);
  int a = lua_gettop(L);
  if (lua_isnil(L, a)) {
    lua_pushnil(L);
    lua_remove(L, a);
    return NULL;
  }
  luaL_argcheck(L, lua_istable(L, a), 1, field);
  size_t n = lua_rawlen(L, a);
  const char **s = scratch(L, n * sizeof *s);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, a, (int)i + 1);
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "%s[%d] must be a string", field, (int)i + 1);
    s[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  lua_remove(L, a);
  *count = n;
  return s;
}

/* ---- result conversion ---- */

static void set_str(lua_State *L, const char *k, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

static void push_map(lua_State *L, const e2b_map *m) {
  lua_createtable(L, 0, (int)m->count);
  for (size_t i = 0; i < m->count; i++) {
    lua_pushstring(L, m->values[i]);
    lua_setfield(L, -2, m->keys[i]);
  }
}

static void push_sandbox(lua_State *L, const e2b_sandbox *s) {
  lua_createtable(L, 0, 16);
  set_str(L, "sandbox_id", s->sandbox_id);
  set_str(L, "template_id", s->template_id);
  set_str(L, "alias", s->alias);
  set_str(L, "client_id", s->client_id);
  set_str(L, "envd_version", s->envd_version);
  set_str(L, "envd_access_token", s->envd_access_token);
  set_str(L, "traffic_access_token", s->traffic_access_token);
  set_str(L, "domain", s->domain);
  set_str(L, "state", s->state == E2B_STATE_RUNNING  ? "running"
                      : s->state == E2B_STATE_PAUSED ? "paused"
                                                     : NULL);
  if (s->started_at_ms) set_int(L, "started_at", s->started_at_ms);
  if (s->end_at_ms) set_int(L, "end_at", s->end_at_ms);
  if (s->cpu_count) set_int(L, "cpu_count", s->cpu_count);
  if (s->memory_mb) set_int(L, "memory_mb", s->memory_mb);
  if (s->disk_size_mb) set_int(L, "disk_size_mb", s->disk_size_mb);
  set_str(L, "on_timeout", s->on_timeout);
  if (s->auto_resume >= 0) {
    lua_pushboolean(L, s->auto_resume);
    lua_setfield(L, -2, "auto_resume");
  }
  push_map(L, &s->metadata);
  lua_setfield(L, -2, "metadata");
}

static void push_entry(lua_State *L, const e2b_entry *e) {
  lua_createtable(L, 0, 10);
  set_str(L, "name", e->name);
  set_str(L, "path", e->path);
  set_str(L, "type", e->type);
  set_int(L, "size", e->size);
  set_int(L, "mode", e->mode);
  set_str(L, "permissions", e->permissions);
  set_str(L, "owner", e->owner);
  set_str(L, "group", e->group);
  if (e->modified_at_ms) set_int(L, "modified_at", e->modified_at_ms);
  set_str(L, "symlink_target", e->symlink_target);
}

static void push_proc_info(lua_State *L, const e2b_proc_info *p) {
  lua_createtable(L, 0, 5);
  set_int(L, "pid", p->pid);
  set_str(L, "tag", p->tag);
  set_str(L, "cmd", p->cmd);
  set_str(L, "cwd", p->cwd);
  lua_createtable(L, (int)p->arg_count, 0);
  for (size_t i = 0; i < p->arg_count; i++) {
    lua_pushstring(L, p->args[i]);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "args");
}

static void push_snapshot(lua_State *L, const e2b_snapshot *sn) {
  lua_createtable(L, 0, 2);
  set_str(L, "snapshot_id", sn->snapshot_id);
  lua_createtable(L, (int)sn->name_count, 0);
  for (size_t i = 0; i < sn->name_count; i++) {
    lua_pushstring(L, sn->names[i]);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "names");
}

static void push_volume(lua_State *L, const e2b_volume *v) {
  lua_createtable(L, 0, 3);
  set_str(L, "volume_id", v->volume_id);
  set_str(L, "name", v->name);
  set_str(L, "token", v->token);
}

static void push_tri(lua_State *L, const char *k, int v) {
  if (v < 0) return; /* unknown stays nil */
  lua_pushboolean(L, v);
  lua_setfield(L, -2, k);
}

static void push_doctor(lua_State *L, const e2b_doctor_report *r) {
  lua_createtable(L, 0, 12);
  push_tri(L, "auth", r->auth);
  set_str(L, "create_route", r->create_route);
  set_str(L, "envd_version", r->envd_version);
  push_tri(L, "envd", r->envd);
  push_tri(L, "stdin_close", r->stdin_close);
  push_tri(L, "group_signals", r->group_signals);
  push_tri(L, "volumes", r->volumes);
  push_tri(L, "snapshots", r->snapshots);
  push_tri(L, "network_update", r->network_update);
  push_tri(L, "pagination", r->pagination);
  set_str(L, "limits", r->limits);
  if (r->notes[0]) set_str(L, "notes", r->notes);
}

static void push_egress(lua_State *L, const e2b_egress_report *r) {
  static const char *const verdicts[] = {"inconclusive", "filtered", "open"};
  lua_createtable(L, 0, 5);
  set_str(L, "verdict", verdicts[r->verdict]);
  set_int(L, "allowed_code", r->allowed_code);
  set_int(L, "denied_code", r->denied_code);
  set_int(L, "ip_code", r->ip_code);
  set_str(L, "detail", r->detail);
}

static void push_run(lua_State *L, const e2b_run_result *r) {
  lua_createtable(L, 0, 6);
  set_int(L, "exit_code", r->exit_code);
  lua_pushlstring(L, (const char *)r->out, r->out_len);
  lua_setfield(L, -2, "stdout");
  lua_pushlstring(L, (const char *)r->err, r->err_len);
  lua_setfield(L, -2, "stderr");
  set_str(L, "status", r->status);
  set_int(L, "bytes_dropped", (lua_Integer)r->dropped);
}

/* ---- requests ---- */

static void on_notify(e2b_req *req, void *ud) {
  req_ud *r = ud;
  lloop *l = r->l;
  if (l->ready_len == l->ready_cap) {
    size_t cap = l->ready_cap ? l->ready_cap * 2 : 64;
    lua_Integer *p = realloc(l->ready, cap * sizeof *p);
    if (!p) return; /* the waiter times out and re-checks; nothing is lost but latency */
    l->ready = p;
    l->ready_cap = cap;
  }
  l->ready[l->ready_len++] = r->id;
  (void)req;
}

/* Wraps a started request (or the failure to start one). */
static int push_req(lua_State *L, lloop *l, e2b_req *req, result_kind kind, const e2b_error *err) {
  if (!req) return push_fail(L, err);
  req_ud *r = compat_newuserdata(L, sizeof *r);
  r->req = req;
  r->l = l;
  l->refs++;
  r->id = ++l->next_id;
  r->kind = kind;
  luaL_setmetatable(L, REQ_MT);
  e2b_req_set_notify(req, on_notify, r);
  return 1;
}

static req_ud *check_req(lua_State *L) {
  req_ud *r = luaL_checkudata(L, 1, REQ_MT);
  if (!r->req) luaL_error(L, "request is closed");
  return r;
}

static int req_id(lua_State *L) {
  req_ud *r = luaL_checkudata(L, 1, REQ_MT);
  lua_pushinteger(L, r->id);
  return 1;
}

static int req_done(lua_State *L) {
  req_ud *r = check_req(L);
  lua_pushboolean(L, e2b_req_done(r->req));
  return 1;
}

static int req_status(lua_State *L) {
  req_ud *r = check_req(L);
  lua_pushinteger(L, e2b_req_status(r->req));
  return 1;
}

/* result() -> value | nil, err; raises if called before the request is done. */
static int req_result(lua_State *L) {
  req_ud *r = check_req(L);
  if (!e2b_req_done(r->req)) luaL_error(L, "request still running");
  const e2b_error *err = e2b_req_error(r->req);
  if (err) return push_fail(L, err);
  switch (r->kind) {
  case RES_SANDBOX:
    push_sandbox(L, e2b_req_sandbox(r->req));
    lua_pushboolean(L, e2b_req_resumed(r->req));
    return 2;
  case RES_SANDBOXES: {
    size_t n = e2b_req_sandbox_count(r->req);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
      push_sandbox(L, e2b_req_sandbox_at(r->req, i));
      lua_rawseti(L, -2, (int)i + 1);
    }
    const char *tok = e2b_req_next_token(r->req);
    if (tok)
      lua_pushstring(L, tok);
    else
      lua_pushnil(L);
    return 2;
  }
  case RES_ENTRY:
    push_entry(L, e2b_req_entry(r->req));
    return 1;
  case RES_ENTRIES: {
    size_t n = e2b_req_entry_count(r->req);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
      push_entry(L, e2b_req_entry_at(r->req, i));
      lua_rawseti(L, -2, (int)i + 1);
    }
    return 1;
  }
  case RES_PROCS: {
    size_t n = e2b_req_proc_count(r->req);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
      push_proc_info(L, e2b_req_proc_at(r->req, i));
      lua_rawseti(L, -2, (int)i + 1);
    }
    return 1;
  }
  case RES_WRITTEN:
    lua_pushstring(L, e2b_req_written_path(r->req));
    return 1;
  case RES_SNAPSHOTS:
  case RES_VOLUMES: {
    size_t n = r->kind == RES_SNAPSHOTS ? e2b_req_snapshot_count(r->req) : e2b_req_volume_count(r->req);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
      if (r->kind == RES_SNAPSHOTS)
        push_snapshot(L, e2b_req_snapshot_at(r->req, i));
      else
        push_volume(L, e2b_req_volume_at(r->req, i));
      lua_rawseti(L, -2, (int)i + 1);
    }
    return 1;
  }
  case RES_RUN:
    push_run(L, e2b_req_run_result(r->req));
    return 1;
  case RES_DOCTOR:
    push_doctor(L, e2b_req_doctor_report(r->req));
    return 1;
  case RES_EGRESS:
    push_egress(L, e2b_req_egress_report(r->req));
    return 1;
  case RES_NONE:
  case RES_STREAM:
    break;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* partial() -> the run result even when the run failed (a timeout keeps its output), or nil. */
static int req_partial(lua_State *L) {
  req_ud *r = check_req(L);
  const e2b_run_result *rr = r->kind == RES_RUN ? e2b_req_run_result(r->req) : NULL;
  if (!rr) return 0;
  push_run(L, rr);
  return 1;
}

static const char *event_stream_name(e2b_event_type t) {
  return t == E2B_EVENT_STDOUT ? "stdout" : t == E2B_EVENT_STDERR ? "stderr" : "pty";
}

/* read(max) on a process stream:
 *   "start", pid | "stdout"|"stderr"|"pty", bytes (<= max, consecutive chunks
 *   of one stream joined) | "end", exit_code, exited, status, error |
 *   nil (nothing queued yet) | false (stream over; see result()). */
static int req_read(lua_State *L) {
  req_ud *r = check_req(L);
  lua_Integer max = luaL_optinteger(L, 2, 1 << 20);
  luaL_argcheck(L, max > 0, 2, "max must be positive");
  e2b_proc_event ev;
  int rc = e2b_req_peek_event(r->req, &ev);
  if (rc == 0) {
    lua_pushnil(L);
    return 1;
  }
  if (rc < 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  switch (ev.type) {
  case E2B_EVENT_START:
    lua_pushliteral(L, "start");
    lua_pushinteger(L, ev.pid);
    e2b_req_consume(r->req, 0);
    return 2;
  case E2B_EVENT_END:
    lua_pushliteral(L, "end");
    lua_pushinteger(L, ev.exit_code);
    lua_pushboolean(L, ev.exited);
    lua_pushstring(L, ev.status ? ev.status : "");
    if (ev.error)
      lua_pushstring(L, ev.error);
    else
      lua_pushnil(L);
    e2b_req_consume(r->req, 0);
    return 5;
  default: {
    e2b_event_type type = ev.type;
    luaL_Buffer b;
    size_t left = (size_t)max;
    lua_pushstring(L, event_stream_name(type));
    luaL_buffinit(L, &b);
    while (rc == 1 && ev.type == type && left > 0) {
      size_t take = ev.len < left ? ev.len : left;
      luaL_addlstring(&b, (const char *)ev.data, take);
      left -= take;
      e2b_req_consume(r->req, take);
      rc = e2b_req_peek_event(r->req, &ev);
    }
    luaL_pushresult(&b);
    return 2;
  }
  }
}

/* read_bytes(max) on a download: bytes (<= max) | nil (nothing yet) | false (end). */
static int req_read_bytes(lua_State *L) {
  req_ud *r = check_req(L);
  lua_Integer max = luaL_optinteger(L, 2, 1 << 20);
  luaL_argcheck(L, max > 0, 2, "max must be positive");
  e2b_proc_event ev;
  int rc = e2b_req_peek_event(r->req, &ev);
  if (rc <= 0) {
    if (rc == 0)
      lua_pushnil(L);
    else
      lua_pushboolean(L, 0);
    return 1;
  }
  luaL_Buffer b;
  size_t left = (size_t)max;
  luaL_buffinit(L, &b);
  while (rc == 1 && left > 0) {
    size_t take = ev.len < left ? ev.len : left;
    luaL_addlstring(&b, (const char *)ev.data, take);
    left -= take;
    e2b_req_consume(r->req, take);
    rc = e2b_req_peek_event(r->req, &ev);
  }
  luaL_pushresult(&b);
  return 1;
}

/* process() -> { pid, tag, dir, tracked } of a tracked process stream */
static int req_process(lua_State *L) {
  req_ud *r = check_req(L);
  lua_createtable(L, 0, 4);
  set_int(L, "pid", e2b_req_proc_pid(r->req));
  set_str(L, "tag", e2b_req_proc_tag(r->req));
  set_str(L, "dir", e2b_req_proc_dir(r->req));
  lua_pushboolean(L, e2b_req_proc_tracked(r->req));
  lua_setfield(L, -2, "tracked");
  return 1;
}

static int req_queued(lua_State *L) {
  req_ud *r = check_req(L);
  lua_pushinteger(L, (lua_Integer)e2b_req_queued(r->req));
  return 1;
}

static int req_send(lua_State *L) {
  req_ud *r = check_req(L);
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  lua_pushboolean(L, e2b_req_send(r->req, data, len) == 0);
  return 1;
}

static int req_finish(lua_State *L) {
  req_ud *r = check_req(L);
  lua_pushboolean(L, e2b_req_send_end(r->req) == 0);
  return 1;
}

static int req_pending(lua_State *L) {
  req_ud *r = check_req(L);
  lua_pushinteger(L, (lua_Integer)e2b_req_send_pending(r->req));
  return 1;
}

static int req_cancel(lua_State *L) {
  req_ud *r = check_req(L);
  e2b_req_cancel(r->req);
  return 0;
}

static int req_close(lua_State *L) {
  req_ud *r = luaL_checkudata(L, 1, REQ_MT);
  if (r->req) {
    e2b_req_free(r->req);
    r->req = NULL;
    lloop_release(r->l);
    r->l = NULL;
  }
  return 0;
}

/* ---- loop ---- */

static int core_loop(lua_State *L) {
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  if (!loop) return push_fail(L, &err);
  lloop *l = calloc(1, sizeof *l);
  if (!l) {
    e2b_loop_release(loop);
    return luaL_error(L, "out of memory");
  }
  l->refs = 1;
  l->loop = loop;
  loop_ud *u = compat_newuserdata(L, sizeof *u);
  u->l = l;
  luaL_setmetatable(L, LOOP_MT);
  return 1;
}

static loop_ud *check_loop(lua_State *L, int idx) {
  loop_ud *u = luaL_checkudata(L, idx, LOOP_MT);
  if (!u->l) luaL_error(L, "loop is closed");
  return u;
}

/* step(timeout_ms) -> array of notified request ids (or nil), running transfers */
static int loop_step(lua_State *L) {
  loop_ud *u = check_loop(L, 1);
  lua_Integer timeout = luaL_optinteger(L, 2, 0);
  lloop *l = u->l;
  int running = e2b_loop_step(l->loop, timeout > 0 ? (long)timeout : 0);
  if (l->ready_len == 0) {
    lua_pushnil(L);
  } else {
    lua_createtable(L, (int)l->ready_len, 0);
    for (size_t i = 0; i < l->ready_len; i++) {
      lua_pushinteger(L, l->ready[i]);
      lua_rawseti(L, -2, (int)i + 1);
    }
    l->ready_len = 0;
  }
  lua_pushinteger(L, running);
  return 2;
}

static int loop_active(lua_State *L) {
  loop_ud *u = check_loop(L, 1);
  lua_pushinteger(L, e2b_loop_active(u->l->loop));
  return 1;
}

/* How long closing a loop (at the latest, when the Lua state closes) may
 * spend sending what finalizers left unattended: a kill of a process
 * group, the removal of kept output. */
#define SETTLE_MS 2000

static int loop_gc(lua_State *L) {
  loop_ud *u = luaL_checkudata(L, 1, LOOP_MT);
  if (u->l) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (e2b_loop_unattended(u->l->loop) > 0) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      long spent = (long)(t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
      if (spent >= SETTLE_MS) break;
      e2b_loop_step(u->l->loop, 50);
    }
    lloop_release(u->l);
    u->l = NULL;
  }
  return 0;
}

/* ---- client ---- */

static int core_client(lua_State *L) {
  loop_ud *lu = check_loop(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  e2b_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.api_key = opt_string(L, 2, "api_key");
  cfg.domain = opt_string(L, 2, "domain");
  cfg.api_url = opt_string(L, 2, "api_url");
  cfg.sandbox_url = opt_string(L, 2, "sandbox_url");
  cfg.template_id = opt_string(L, 2, "template");
  cfg.user_agent = opt_string(L, 2, "user_agent");
  if (!cfg.user_agent) cfg.user_agent = "lua-e2b/" E2B_VERSION; /* libe2b's default says libe2b */
  cfg.request_timeout_ms = (long)opt_integer(L, 2, "request_timeout_ms", 0);
  cfg.budget_ms = (long)opt_integer(L, 2, "budget_ms", 0);
  cfg.max_retries = (int)opt_integer(L, 2, "max_retries", 0);
  cfg.max_inflight = (int)opt_integer(L, 2, "max_inflight", 0);
  cfg.owner = opt_string(L, 2, "owner");
  cfg.page_size = (int)opt_integer(L, 2, "page_size", 0);
  cfg.ca_file = opt_string(L, 2, "ca_file");
  e2b_error err;
  e2b_client *c = e2b_client_new(lu->l->loop, &cfg, &err);
  if (!c) return push_fail(L, &err);
  client_ud *u = compat_newuserdata(L, sizeof *u);
  u->c = c;
  u->l = lu->l;
  u->l->refs++;
  luaL_setmetatable(L, CLIENT_MT);
  return 1;
}

static client_ud *check_client(lua_State *L) {
  client_ud *u = luaL_checkudata(L, 1, CLIENT_MT);
  if (!u->c) luaL_error(L, "client is closed");
  return u;
}

static int client_gc(lua_State *L) {
  client_ud *u = luaL_checkudata(L, 1, CLIENT_MT);
  if (u->c) {
    e2b_client_release(u->c);
    lloop_release(u->l);
    u->c = NULL;
  }
  return 0;
}

static int client_config(lua_State *L) {
  client_ud *u = check_client(L);
  lua_createtable(L, 0, 5);
  set_str(L, "api_url", e2b_client_api_url(u->c));
  set_str(L, "domain", e2b_client_domain(u->c));
  set_str(L, "sandbox_url", e2b_client_sandbox_url(u->c));
  set_str(L, "ca_file", e2b_client_ca_file(u->c));
  set_str(L, "template", e2b_client_template(u->c));
  set_str(L, "owner", e2b_client_owner(u->c));
  lua_pushinteger(L, e2b_client_request_timeout_ms(u->c));
  lua_setfield(L, -2, "request_timeout_ms");
  lua_pushinteger(L, e2b_client_budget_ms(u->c));
  lua_setfield(L, -2, "budget_ms");
  lua_pushboolean(L, e2b_client_has_api_key(u->c));
  lua_setfield(L, -2, "has_api_key");
  return 1;
}

/* Reads the create fields of table t (scratch arrays stay on the stack). */
static void read_create_opts(lua_State *L, int t, e2b_create_opts *o) {
  memset(o, 0, sizeof *o);
  o->template_id = opt_string(L, t, "template");
  o->timeout_ms = (long)opt_integer(L, t, "timeout_ms", 0);
  o->secure = opt_tristate(L, t, "secure");
  o->allow_internet_access = opt_tristate(L, t, "allow_internet_access");
  o->metadata = opt_kvs(L, t, "metadata", &o->metadata_count);
  o->env = opt_kvs(L, t, "env", &o->env_count);
  o->auto_pause = opt_tristate(L, t, "auto_pause");
  o->auto_pause_memory = opt_tristate(L, t, "auto_pause_memory");
  o->auto_resume = opt_tristate(L, t, "auto_resume");
  o->allow_out = opt_strings(L, t, "allow_out", &o->allow_out_count);
  o->deny_out = opt_strings(L, t, "deny_out", &o->deny_out_count);
  o->network = opt_tristate(L, t, "send_network") == 1;
  o->v1_route = opt_tristate(L, t, "v1_route") == 1;
  o->volume_mounts = opt_kvs(L, t, "volume_mounts", &o->volume_mount_count);
}

/* Reads { allow_internet_access, allow_out, deny_out } at t. */
static void read_network(lua_State *L, int t, e2b_network *n) {
  memset(n, 0, sizeof *n);
  n->allow_internet_access = opt_tristate(L, t, "allow_internet_access") != 0;
  n->allow_out = opt_strings(L, t, "allow_out", &n->allow_out_count);
  n->deny_out = opt_strings(L, t, "deny_out", &n->deny_out_count);
}

static int client_create(lua_State *L) {
  client_ud *u = check_client(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  e2b_create_opts o;
  read_create_opts(L, 2, &o);
  e2b_error err;
  e2b_req *req = e2b_sandbox_create(u->c, &o, &err);
  return push_req(L, u->l, req, RES_SANDBOX, &err);
}

static int client_connect(lua_State *L) {
  client_ud *u = check_client(L);
  const char *id = luaL_checkstring(L, 2);
  lua_Integer timeout = luaL_optinteger(L, 3, 0);
  e2b_error err;
  e2b_req *req = e2b_sandbox_connect(u->c, id, (long)timeout, &err);
  return push_req(L, u->l, req, RES_SANDBOX, &err);
}

static int client_info(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_get(u->c, luaL_checkstring(L, 2), &err);
  return push_req(L, u->l, req, RES_SANDBOX, &err);
}

static int client_kill(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_kill(u->c, luaL_checkstring(L, 2), &err);
  return push_req(L, u->l, req, RES_NONE, &err);
}

static int client_set_timeout(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_set_timeout(u->c, luaL_checkstring(L, 2), (long)luaL_checkinteger(L, 3), &err);
  return push_req(L, u->l, req, RES_NONE, &err);
}

static int client_pause(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_pause(u->c, luaL_checkstring(L, 2), lua_toboolean(L, 3), &err);
  return push_req(L, u->l, req, RES_NONE, &err);
}

/* Reads {metadata=, states={"running"|"paused"...}, limit=, next_token=} at t. */
static void read_list_opts(lua_State *L, int t, e2b_list_opts *o) {
  o->metadata = opt_kvs(L, t, "metadata", &o->metadata_count);
  o->limit = (int)opt_integer(L, t, "limit", 0);
  o->next_token = opt_string(L, t, "next_token");
  lua_getfield(L, t, "states");
  if (lua_istable(L, -1)) {
    for (int i = 1; i <= (int)lua_rawlen(L, -1); i++) {
      lua_rawgeti(L, -1, i);
      const char *s = lua_tostring(L, -1);
      if (s && strcmp(s, "running") == 0)
        o->states |= E2B_LIST_RUNNING;
      else if (s && strcmp(s, "paused") == 0)
        o->states |= E2B_LIST_PAUSED;
      else
        luaL_error(L, "states[%d] must be \"running\" or \"paused\"", i);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

/* list{metadata=, states=, limit=, next_token=}: one page */
static int client_list(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_list_opts o;
  memset(&o, 0, sizeof o);
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    read_list_opts(L, 2, &o);
  }
  e2b_error err;
  e2b_req *req = e2b_sandbox_list(u->c, &o, &err);
  return push_req(L, u->l, req, RES_SANDBOXES, &err);
}

/* provision{ <create fields>, id, ready_timeout_ms, setup_script, setup_name,
 *            setup_timeout_ms, user, network = {...} } */
static int client_provision(lua_State *L) {
  client_ud *u = check_client(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  e2b_provision_opts o;
  memset(&o, 0, sizeof o);
  read_create_opts(L, 2, &o.create);
  o.id = opt_string(L, 2, "id");
  o.ready_timeout_ms = (long)opt_integer(L, 2, "ready_timeout_ms", 0);
  lua_getfield(L, 2, "setup_script");
  if (!lua_isnil(L, -1)) o.setup_script = luaL_checklstring(L, -1, &o.setup_len);
  lua_pop(L, 1); /* the options table keeps the string alive */
  o.setup_name = opt_string(L, 2, "setup_name");
  o.setup_timeout_ms = (long)opt_integer(L, 2, "setup_timeout_ms", 0);
  o.user = opt_string(L, 2, "user");
  e2b_network net;
  lua_getfield(L, 2, "network");
  if (lua_istable(L, -1)) {
    read_network(L, lua_gettop(L), &net);
    o.network = &net;
  }
  e2b_error err;
  e2b_req *req = e2b_sandbox_provision(u->c, &o, &err);
  return push_req(L, u->l, req, RES_SANDBOX, &err);
}

/* find{metadata=, states=} -> every page */
static int client_find(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_list_opts o;
  memset(&o, 0, sizeof o);
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    read_list_opts(L, 2, &o);
  }
  e2b_error err;
  return push_req(L, u->l, e2b_sandbox_find(u->c, &o, &err), RES_SANDBOXES, &err);
}

static int client_describe(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  return push_req(L, u->l, e2b_sandbox_describe(u->c, luaL_checkstring(L, 2), &err), RES_SANDBOX, &err);
}

static int client_attach(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_attach(u->c, luaL_checkstring(L, 2), (long)luaL_optinteger(L, 3, 0), &err);
  return push_req(L, u->l, req, RES_SANDBOX, &err);
}

static int client_resume(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_resume(u->c, luaL_checkstring(L, 2), (long)luaL_optinteger(L, 3, 0), &err);
  return push_req(L, u->l, req, RES_SANDBOX, &err);
}

static int client_fork(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_fork(u->c, luaL_checkstring(L, 2), (long)luaL_optinteger(L, 3, 0),
                                  (int)luaL_optinteger(L, 4, 1), &err);
  return push_req(L, u->l, req, RES_SANDBOXES, &err);
}

static int client_destroy(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  return push_req(L, u->l, e2b_sandbox_destroy(u->c, luaL_checkstring(L, 2), &err), RES_NONE, &err);
}

static int client_keep_alive(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_keep_alive(u->c, luaL_checkstring(L, 2), (long)luaL_checkinteger(L, 3), &err);
  return push_req(L, u->l, req, RES_NONE, &err);
}

static int client_reap(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_reap(u->c, luaL_checkstring(L, 2), (long)luaL_optinteger(L, 3, 0), &err);
  return push_req(L, u->l, req, RES_SANDBOXES, &err);
}

static int client_set_network(lua_State *L) {
  client_ud *u = check_client(L);
  const char *id = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  e2b_network net;
  read_network(L, 3, &net);
  e2b_error err;
  return push_req(L, u->l, e2b_sandbox_set_network(u->c, id, &net, &err), RES_NONE, &err);
}

static int client_snapshot(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_snapshot_create(u->c, luaL_checkstring(L, 2), luaL_checkstring(L, 3), &err);
  return push_req(L, u->l, req, RES_SNAPSHOTS, &err);
}

static int client_snapshots(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  return push_req(L, u->l, e2b_snapshot_list(u->c, luaL_optstring(L, 2, NULL), &err), RES_SNAPSHOTS, &err);
}

static int client_delete_snapshot(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  return push_req(L, u->l, e2b_snapshot_delete(u->c, luaL_checkstring(L, 2), &err), RES_NONE, &err);
}

static int client_create_volume(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  return push_req(L, u->l, e2b_volume_create(u->c, luaL_checkstring(L, 2), &err), RES_VOLUMES, &err);
}

static int client_volumes(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  return push_req(L, u->l, e2b_volume_list(u->c, &err), RES_VOLUMES, &err);
}

static int client_delete_volume(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  return push_req(L, u->l, e2b_volume_delete(u->c, luaL_checkstring(L, 2), &err), RES_NONE, &err);
}

static int client_doctor(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  return push_req(L, u->l, e2b_doctor(u->c, &err), RES_DOCTOR, &err);
}

/* verify_egress{allow_host, allowed_url, denied_url, ip_url, template, timeout_ms} */
static int client_verify_egress(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_egress_opts o;
  memset(&o, 0, sizeof o);
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    o.allow_host = opt_string(L, 2, "allow_host");
    o.allowed_url = opt_string(L, 2, "allowed_url");
    o.denied_url = opt_string(L, 2, "denied_url");
    o.ip_url = opt_string(L, 2, "ip_url");
    o.template_id = opt_string(L, 2, "template");
    o.timeout_ms = (long)opt_integer(L, 2, "timeout_ms", 0);
  }
  e2b_error err;
  return push_req(L, u->l, e2b_verify_egress(u->c, &o, &err), RES_EGRESS, &err);
}

/* sandbox(sandbox_id, access_token?, domain?) -> sbx */
static int client_sandbox(lua_State *L) {
  client_ud *u = check_client(L);
  const char *id = luaL_checkstring(L, 2);
  const char *token = luaL_optstring(L, 3, NULL);
  const char *domain = luaL_optstring(L, 4, NULL);
  e2b_error err;
  e2b_sbx *s = e2b_sbx_new(u->c, id, token, domain, &err);
  if (!s) return push_fail(L, &err);
  sbx_ud *su = compat_newuserdata(L, sizeof *su);
  su->s = s;
  su->l = u->l;
  su->l->refs++;
  luaL_setmetatable(L, SBX_MT);
  return 1;
}

/* ---- sandbox handle (envd) ---- */

static sbx_ud *check_sbx(lua_State *L) {
  sbx_ud *u = luaL_checkudata(L, 1, SBX_MT);
  if (!u->s) luaL_error(L, "sandbox handle is closed");
  return u;
}

static int sbx_gc(lua_State *L) {
  sbx_ud *u = luaL_checkudata(L, 1, SBX_MT);
  if (u->s) {
    e2b_sbx_release(u->s);
    lloop_release(u->l);
    u->s = NULL;
  }
  return 0;
}

static int sbx_envd_url(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  lua_pushstring(L, e2b_sbx_envd_url(u->s));
  return 1;
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

/* Reads {cmd, args, env, cwd, user, tag, stdin, pty_cols, pty_rows,
 * timeout_ms, keepalive_s, idle_timeout_ms} at t. */
static void read_proc_opts(lua_State *L, int t, e2b_proc_opts *o) {
  memset(o, 0, sizeof *o);
  o->cmd = opt_string(L, t, "cmd");
  o->args = opt_strings(L, t, "args", &o->arg_count);
  o->env = opt_kvs(L, t, "env", &o->env_count);
  o->cwd = opt_string(L, t, "cwd");
  o->user = opt_string(L, t, "user");
  o->tag = opt_string(L, t, "tag");
  o->stdin_open = opt_tristate(L, t, "stdin") == 1;
  o->pty_cols = (unsigned)opt_integer(L, t, "pty_cols", 0);
  o->pty_rows = (unsigned)opt_integer(L, t, "pty_rows", 0);
  o->timeout_ms = (long)opt_integer(L, t, "timeout_ms", 0);
  o->keepalive_s = (long)opt_integer(L, t, "keepalive_s", 0);
  o->idle_timeout_ms = (long)opt_integer(L, t, "idle_timeout_ms", 0);
}

/* start{cmd=, args={}, env={}, cwd=, user=, tag=, stdin=bool, pty_cols=, pty_rows=,
 *       timeout_ms=, keepalive_s=} */
static int sbx_start(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  e2b_proc_opts o;
  read_proc_opts(L, 2, &o);
  e2b_error err;
  e2b_req *req = e2b_proc_start(u->s, &o, &err);
  return push_req(L, u->l, req, RES_STREAM, &err);
}

/* run(start_opts, stdin?, max_output?) -> request for e2b_run */
static int sbx_run(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t in_len = 0;
  const char *in = luaL_optlstring(L, 3, NULL, &in_len);
  lua_Integer max = luaL_optinteger(L, 4, 64 << 20);
  luaL_argcheck(L, max > 0, 4, "max_output must be positive");
  e2b_proc_opts o;
  read_proc_opts(L, 2, &o);
  e2b_error err;
  e2b_req *req = e2b_run(u->s, &o, in, in_len, (size_t)max, &err);
  return push_req(L, u->l, req, RES_RUN, &err);
}

/* track(start_opts, env_replace?, keep_output?) -> a tracked process stream */
static int sbx_track(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  e2b_proc_opts o;
  read_proc_opts(L, 2, &o);
  e2b_error err;
  unsigned flags = (lua_toboolean(L, 3) ? E2B_TRACK_ENV_REPLACE : 0) |
                   (lua_isnoneornil(L, 4) || lua_toboolean(L, 4) ? 0 : E2B_TRACK_NO_KEEP);
  e2b_req *req = e2b_proc_track(u->s, &o, flags, &err);
  return push_req(L, u->l, req, RES_STREAM, &err);
}

/* attach(pid_or_tag, stdout_offset?, stderr_offset?, idle_timeout_ms?) */
static int sbx_attach(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  uint32_t pid;
  const char *tag;
  check_target(L, 2, &pid, &tag);
  e2b_error err;
  e2b_req *req = e2b_proc_attach(u->s, pid, tag, (int64_t)luaL_optinteger(L, 3, 0),
                                 (int64_t)luaL_optinteger(L, 4, 0),
                                 (long)luaL_optinteger(L, 5, 0), &err);
  return push_req(L, u->l, req, RES_STREAM, &err);
}

static int sbx_forget(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  return push_req(L, u->l, e2b_proc_forget(u->s, luaL_checkstring(L, 2), &err), RES_NONE, &err);
}

/* signal_async(pid_or_tag, signo): fire and forget (for finalizers, which
 * cannot wait); the loop frees the request once it completes. */
static int sbx_signal_async(lua_State *L) {
  sbx_ud *u = luaL_checkudata(L, 1, SBX_MT);
  if (!u->s) return 0; /* finalized first: nothing left to send from */
  uint32_t pid;
  const char *tag;
  check_target(L, 2, &pid, &tag);
  e2b_error err;
  e2b_req *req = e2b_proc_signal(u->s, pid, tag, (int)luaL_checkinteger(L, 3), &err);
  if (req) e2b_req_autofree(req);
  return 0;
}

/* forget_async(tag): removes kept output unattended (cleanup that need not wait). */
static int sbx_forget_async(lua_State *L) {
  sbx_ud *u = luaL_checkudata(L, 1, SBX_MT);
  if (!u->s) return 0;
  e2b_error err;
  e2b_req *req = e2b_proc_forget(u->s, luaL_checkstring(L, 2), &err);
  if (req) e2b_req_autofree(req);
  return 0;
}

/* connect(pid_or_tag, keepalive_s?) */
static int sbx_connect(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  uint32_t pid;
  const char *tag;
  check_target(L, 2, &pid, &tag);
  e2b_error err;
  e2b_req *req = e2b_proc_connect(u->s, pid, tag, (long)luaL_optinteger(L, 3, 0), &err);
  return push_req(L, u->l, req, RES_STREAM, &err);
}

/* send_input(pid_or_tag, bytes, pty?) */
static int sbx_send_input(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  uint32_t pid;
  const char *tag;
  size_t len;
  check_target(L, 2, &pid, &tag);
  const char *data = luaL_checklstring(L, 3, &len);
  e2b_error err;
  e2b_req *req = e2b_proc_send_input(u->s, pid, tag, data, len, lua_toboolean(L, 4), &err);
  return push_req(L, u->l, req, RES_NONE, &err);
}

static int sbx_close_stdin(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  uint32_t pid;
  const char *tag;
  check_target(L, 2, &pid, &tag);
  e2b_error err;
  return push_req(L, u->l, e2b_proc_close_stdin(u->s, pid, tag, &err), RES_NONE, &err);
}

/* signal(pid_or_tag, signo) */
static int sbx_signal(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  uint32_t pid;
  const char *tag;
  check_target(L, 2, &pid, &tag);
  e2b_error err;
  e2b_req *req = e2b_proc_signal(u->s, pid, tag, (int)luaL_checkinteger(L, 3), &err);
  return push_req(L, u->l, req, RES_NONE, &err);
}

/* resize(pid_or_tag, cols, rows) */
static int sbx_resize(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  uint32_t pid;
  const char *tag;
  check_target(L, 2, &pid, &tag);
  e2b_error err;
  e2b_req *req = e2b_proc_resize(u->s, pid, tag, (unsigned)luaL_checkinteger(L, 3),
                                 (unsigned)luaL_checkinteger(L, 4), &err);
  return push_req(L, u->l, req, RES_NONE, &err);
}

static int sbx_processes(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  return push_req(L, u->l, e2b_proc_list(u->s, &err), RES_PROCS, &err);
}

static int sbx_stat(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  e2b_req *req = e2b_fs_stat(u->s, luaL_checkstring(L, 2), luaL_optstring(L, 3, NULL), &err);
  return push_req(L, u->l, req, RES_ENTRY, &err);
}

static int sbx_list(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  lua_Integer depth = luaL_optinteger(L, 3, 1);
  luaL_argcheck(L, depth >= 1, 3, "depth must be at least 1");
  e2b_req *req = e2b_fs_list(u->s, luaL_checkstring(L, 2), (unsigned)depth,
                             luaL_optstring(L, 4, NULL), &err);
  return push_req(L, u->l, req, RES_ENTRIES, &err);
}

static int sbx_mkdir(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  e2b_req *req = e2b_fs_mkdir(u->s, luaL_checkstring(L, 2), luaL_optstring(L, 3, NULL), &err);
  return push_req(L, u->l, req, RES_ENTRY, &err);
}

static int sbx_move(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  e2b_req *req = e2b_fs_move(u->s, luaL_checkstring(L, 2), luaL_checkstring(L, 3),
                             luaL_optstring(L, 4, NULL), &err);
  return push_req(L, u->l, req, RES_ENTRY, &err);
}

static int sbx_remove(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  e2b_req *req = e2b_fs_remove(u->s, luaL_checkstring(L, 2), luaL_optstring(L, 3, NULL), &err);
  return push_req(L, u->l, req, RES_NONE, &err);
}

/* read(path, user?, offset?) -> download request */
static int sbx_read(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  e2b_req *req = e2b_file_read(u->s, luaL_checkstring(L, 2), luaL_optstring(L, 3, NULL),
                               (int64_t)luaL_optinteger(L, 4, 0), &err);
  return push_req(L, u->l, req, RES_STREAM, &err);
}

/* write(path, user?) -> upload request; feed it with send/finish */
static int sbx_write(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  e2b_req *req = e2b_file_write(u->s, luaL_checkstring(L, 2), luaL_optstring(L, 3, NULL), &err);
  return push_req(L, u->l, req, RES_WRITTEN, &err);
}

/* url(path, operation, user?, expires_unix?) -> signed URL | nil, err */
static int sbx_url(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  char *url = e2b_file_url(u->s, luaL_checkstring(L, 2), luaL_checkstring(L, 3),
                           luaL_optstring(L, 4, NULL), (int64_t)luaL_optinteger(L, 5, 0), &err);
  if (!url) return push_fail(L, &err);
  lua_pushstring(L, url);
  free(url);
  return 1;
}

static int sbx_health(lua_State *L) {
  sbx_ud *u = check_sbx(L);
  e2b_error err;
  return push_req(L, u->l, e2b_envd_health(u->s, &err), RES_NONE, &err);
}

/* ---- module functions ---- */

static int core_now_ms(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
  return 1;
}

static int core_time_ms(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
  return 1;
}

static int core_uuid4(lua_State *L) {
  char id[E2B_UUID_SIZE];
  if (e2b_uuid4(id) != 0) return luaL_error(L, "random generator unavailable");
  lua_pushstring(L, id);
  return 1;
}

static int core_utf8_valid(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_pushboolean(L, e2b_utf8_valid(s, len));
  return 1;
}

/* host_pid() -> "hostname:pid", the default owner tag of created sandboxes. */
static int core_host_pid(lua_State *L) {
  char host[256];
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
  host[sizeof host - 1] = 0;
  lua_pushfstring(L, "%s:%d", host, (int)getpid());
  return 1;
}

/* set_error_metatable(mt): errors created here get mt (from lua/e2b/errors.lua). */
static int core_set_error_metatable(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushvalue(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, ERROR_MT_KEY);
  return 0;
}

static void new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc) {
  luaL_newmetatable(L, name);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__gc");
#if LUA_VERSION_NUM >= 504
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__close");
#endif
  lua_pop(L, 1);
}

int luaopen_e2b_core(lua_State *L) {
  static const luaL_Reg loop_methods[] = {
      {"step", loop_step}, {"active", loop_active}, {"close", loop_gc}, {NULL, NULL}};
  static const luaL_Reg client_methods[] = {
      {"config", client_config}, {"create", client_create}, {"connect", client_connect},
      {"info", client_info},     {"kill", client_kill},     {"set_timeout", client_set_timeout},
      {"pause", client_pause},   {"list", client_list},     {"sandbox", client_sandbox},
      {"provision", client_provision}, {"find", client_find}, {"describe", client_describe},
      {"attach", client_attach}, {"resume", client_resume}, {"fork", client_fork},
      {"destroy", client_destroy},
      {"keep_alive", client_keep_alive}, {"reap", client_reap},
      {"set_network", client_set_network}, {"snapshot", client_snapshot},
      {"snapshots", client_snapshots}, {"delete_snapshot", client_delete_snapshot},
      {"create_volume", client_create_volume}, {"volumes", client_volumes},
      {"delete_volume", client_delete_volume}, {"doctor", client_doctor},
      {"verify_egress", client_verify_egress},
      {"close", client_gc},      {NULL, NULL}};
  static const luaL_Reg sbx_methods[] = {
      {"envd_url", sbx_envd_url}, {"start", sbx_start},           {"connect", sbx_connect},
      {"send_input", sbx_send_input}, {"close_stdin", sbx_close_stdin}, {"signal", sbx_signal},
      {"resize", sbx_resize},     {"processes", sbx_processes},   {"stat", sbx_stat},
      {"list", sbx_list},         {"mkdir", sbx_mkdir},           {"move", sbx_move},
      {"remove", sbx_remove},     {"read", sbx_read},             {"write", sbx_write},
      {"url", sbx_url},           {"health", sbx_health},         {"run", sbx_run},
      {"track", sbx_track},       {"attach", sbx_attach},         {"forget", sbx_forget},
      {"signal_async", sbx_signal_async}, {"forget_async", sbx_forget_async},
      {"close", sbx_gc},
      {NULL, NULL}};
  static const luaL_Reg req_methods[] = {
      {"id", req_id},         {"done", req_done},     {"status", req_status},
      {"result", req_result}, {"read", req_read},     {"read_bytes", req_read_bytes},
      {"queued", req_queued}, {"send", req_send},     {"finish", req_finish},
      {"pending", req_pending}, {"cancel", req_cancel}, {"close", req_close},
      {"partial", req_partial},  {"process", req_process},
      {NULL, NULL}};
  static const luaL_Reg functions[] = {
      {"loop", core_loop},           {"client", core_client},
      {"now_ms", core_now_ms},       {"time_ms", core_time_ms},
      {"uuid4", core_uuid4},         {"utf8_valid", core_utf8_valid},
      {"host_pid", core_host_pid},
      {"set_error_metatable", core_set_error_metatable},
      {NULL, NULL}};
  new_class(L, LOOP_MT, loop_methods, loop_gc);
  new_class(L, CLIENT_MT, client_methods, client_gc);
  new_class(L, SBX_MT, sbx_methods, sbx_gc);
  new_class(L, REQ_MT, req_methods, req_close);
  luaL_newlib(L, functions);
  lua_pushstring(L, e2b_version());
  lua_setfield(L, -2, "VERSION");
  return 1;
}
