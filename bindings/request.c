/* request.c — the request userdata: results, events, byte reads, uploads. */
#include "auxiliar.h"
#include "whole.h"

#include <lualib.h> /* LUA_FILEHANDLE on the 5.1 ABI */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- requests ---- */

static const e2bL_class REQ; /* defined with its methods, below */
#define check_req(L) ((req_ud *)e2bL_check((L), &REQ))

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
int e2bL_push_req(lua_State *L, lloop *l, e2b_req *req, const e2b_error *err) {
  if (!req) return e2bL_push_fail(L, err);
  req_ud *r = e2bL_new_ud(L, sizeof *r, &REQ, l, req);
  r->id = ++l->next_id;
  e2b_req_set_notify(req, on_notify, r);
  return 1;
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

/* ---- results: one pusher per e2b_result_kind ---- */

typedef void (*push_at_fn)(lua_State *L, const e2b_req *req, size_t i);

static void sandbox_at(lua_State *L, const e2b_req *req, size_t i) {
  e2bL_push_sandbox(L, e2b_req_sandbox_at(req, i));
}
static void entry_at(lua_State *L, const e2b_req *req, size_t i) {
  e2bL_push_entry(L, e2b_req_entry_at(req, i));
}
static void proc_at(lua_State *L, const e2b_req *req, size_t i) {
  e2bL_push_proc_info(L, e2b_req_proc_at(req, i));
}
static void snapshot_at(lua_State *L, const e2b_req *req, size_t i) {
  e2bL_push_snapshot(L, e2b_req_snapshot_at(req, i));
}
static void volume_at(lua_State *L, const e2b_req *req, size_t i) {
  e2bL_push_volume(L, e2b_req_volume_at(req, i));
}
static void vol_entry_at(lua_State *L, const e2b_req *req, size_t i) {
  const e2b_vol_entry *e = e2b_req_vol_entry_at(req, i);
  lua_createtable(L, 0, 11);
  e2bL_set_str(L, "name", e->name);
  e2bL_set_str(L, "path", e->path);
  e2bL_set_str(L, "type", e->type);
  e2bL_set_int(L, "size", e->size);
  e2bL_set_int(L, "mode", e->mode);
  e2bL_set_int(L, "uid", e->uid);
  e2bL_set_int(L, "gid", e->gid);
  if (e->target) e2bL_set_str(L, "target", e->target);
  e2bL_set_int(L, "atime", e->atime_ms);
  e2bL_set_int(L, "mtime", e->mtime_ms);
  e2bL_set_int(L, "ctime", e->ctime_ms);
}
static void log_at(lua_State *L, const e2b_req *req, size_t i) {
  e2bL_push_log_entry(L, e2b_req_log_at(req, i));
}

static void metric_at(lua_State *L, const e2b_req *req, size_t i) {
  const e2b_metric *m = e2b_req_metric_at(req, i);
  lua_createtable(L, 0, 8);
  e2bL_set_int(L, "timestamp", m->timestamp_ms);
  e2bL_set_int(L, "cpu_count", m->cpu_count);
  lua_pushnumber(L, m->cpu_used_pct);
  lua_setfield(L, -2, "cpu_used_pct");
  e2bL_set_int(L, "mem_used", m->mem_used);
  e2bL_set_int(L, "mem_total", m->mem_total);
  e2bL_set_int(L, "mem_cache", m->mem_cache);
  e2bL_set_int(L, "disk_used", m->disk_used);
  e2bL_set_int(L, "disk_total", m->disk_total);
}

static int push_true(lua_State *L, const e2b_req *req) {
  (void)req;
  lua_pushboolean(L, 1);
  return 1;
}

static int push_sandbox(lua_State *L, const e2b_req *req) {
  e2bL_push_sandbox(L, e2b_req_sandbox(req));
  lua_pushboolean(L, e2b_req_resumed(req));
  return 2;
}

/* After a page of sandboxes: the token of the next page (nil on the last). */
static int push_next_token(lua_State *L, const e2b_req *req) {
  const char *tok = e2b_req_next_token(req);
  if (tok)
    lua_pushstring(L, tok);
  else
    lua_pushnil(L);
  return 1;
}

/* A result that is one value: push(L, get(req)). */
#define ONE_VALUE(name, push, get)                      \
  static int name(lua_State *L, const e2b_req *req) { \
    push(L, get(req));                                  \
    return 1;                                           \
  }

ONE_VALUE(push_entry, e2bL_push_entry, e2b_req_entry)
ONE_VALUE(push_written, lua_pushstring, e2b_req_written_path)
ONE_VALUE(push_boot_id, lua_pushstring, e2b_req_boot_id)
ONE_VALUE(push_run, e2bL_push_run, e2b_req_run_result)
ONE_VALUE(push_doctor, e2bL_push_doctor, e2b_req_doctor_report)
ONE_VALUE(push_egress, e2bL_push_egress, e2b_req_egress_report)
ONE_VALUE(push_template, e2bL_push_template_answer, e2b_req_template_answer)

/* How Lua sees each e2b_result_kind (the core says which a request holds):
 * a list (count, item i by at) and/or values pushed by push. A stream's
 * result is its clean end: true, like a call with no result. */
static const struct {
  size_t (*count)(const e2b_req *req);
  push_at_fn at;
  int (*push)(lua_State *L, const e2b_req *req);
} pushers[] = {
    [E2B_RESULT_NONE] = {.push = push_true},
    [E2B_RESULT_SANDBOX] = {.push = push_sandbox},
    [E2B_RESULT_SANDBOXES] = {e2b_req_sandbox_count, sandbox_at, push_next_token},
    [E2B_RESULT_ENTRY] = {.push = push_entry},
    [E2B_RESULT_ENTRIES] = {e2b_req_entry_count, entry_at, NULL},
    [E2B_RESULT_PROCS] = {e2b_req_proc_count, proc_at, NULL},
    [E2B_RESULT_WRITTEN] = {.push = push_written},
    [E2B_RESULT_STREAM] = {.push = push_true},
    [E2B_RESULT_SNAPSHOTS] = {e2b_req_snapshot_count, snapshot_at, NULL},
    [E2B_RESULT_VOLUMES] = {e2b_req_volume_count, volume_at, NULL},
    [E2B_RESULT_RUN] = {.push = push_run},
    [E2B_RESULT_DOCTOR] = {.push = push_doctor},
    [E2B_RESULT_EGRESS] = {.push = push_egress},
    [E2B_RESULT_BOOT_ID] = {.push = push_boot_id},
    [E2B_RESULT_LOGS] = {e2b_req_log_count, log_at, NULL},
    [E2B_RESULT_METRICS] = {e2b_req_metric_count, metric_at, NULL},
    [E2B_RESULT_VOL_ENTRIES] = {e2b_req_vol_entry_count, vol_entry_at, NULL},
    [E2B_RESULT_TEMPLATE] = {.push = push_template}};

/* result() -> value | nil, err; raises if called before the request is done. */
static int req_result(lua_State *L) {
  req_ud *r = check_req(L);
  if (!e2b_req_done(r->req)) luaL_error(L, "request still running");
  const e2b_error *err = e2b_req_error(r->req);
  size_t kind = (size_t)e2b_req_result_kind(r->req);
  if (err) {
    int n = e2bL_push_fail(L, err);
    /* a failed run's error also carries what it kept (a timeout's output) */
    if (kind == E2B_RESULT_RUN) e2bL_push_partial(L, e2b_req_run_result(r->req));
    return n;
  }
  if (kind >= sizeof pushers / sizeof *pushers) kind = E2B_RESULT_NONE;
  int n = 0;
  if (pushers[kind].count) {
    size_t items = pushers[kind].count(r->req);
    lua_createtable(L, (int)items, 0);
    for (size_t i = 0; i < items; i++) {
      pushers[kind].at(L, r->req, i);
      lua_rawseti(L, -2, (int)i + 1);
    }
    n = 1;
  }
  return n + (pushers[kind].push ? pushers[kind].push(L, r->req) : 0);
}

static const char *event_stream_name(e2b_event_type t) {
  return t == E2B_EVENT_STDOUT ? "stdout" : t == E2B_EVENT_STDERR ? "stderr" : "pty";
}

/* Pushes one string of up to max bytes taken from the queued events,
 * starting with ev (already peeked), consuming what it takes; with
 * same_type it stops at an event of another type. */
static void push_joined(lua_State *L, e2b_req *req, e2b_proc_event ev, size_t max, int same_type) {
  e2b_event_type type = ev.type;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  int rc = 1;
  while (rc == 1 && (!same_type || ev.type == type) && max > 0) {
    size_t take = ev.len < max ? ev.len : max;
    luaL_addlstring(&b, (const char *)ev.data, take);
    max -= take;
    e2b_req_consume(req, take);
    rc = e2b_req_peek_event(req, &ev);
  }
  luaL_pushresult(&b);
}

/* One event of a process stream (and of a run: the chunks it hands on):
 *   "start", pid | "stdout"|"stderr"|"pty", bytes (<= max, consecutive chunks
 *   of one stream joined) | "end", exit_code, exited, status, error |
 *   "fs", name, type (a directory watch). */
static int push_event(lua_State *L, e2b_req *req, e2b_proc_event ev, size_t max) {
  switch (ev.type) {
  case E2B_EVENT_START:
    lua_pushliteral(L, "start");
    lua_pushinteger(L, ev.pid);
    e2b_req_consume(req, 0);
    return 2;
  case E2B_EVENT_FS: /* a watch's change: "fs", name, type */
    lua_pushliteral(L, "fs");
    lua_pushlstring(L, (const char *)ev.data, ev.len);
    lua_pushstring(L, ev.status);
    e2b_req_consume(req, ev.len);
    return 3;
  case E2B_EVENT_END:
    lua_pushliteral(L, "end");
    lua_pushinteger(L, ev.exit_code);
    lua_pushboolean(L, ev.exited);
    lua_pushstring(L, ev.status ? ev.status : "");
    if (ev.error)
      lua_pushstring(L, ev.error);
    else
      lua_pushnil(L);
    e2b_req_consume(req, 0);
    return 5;
  default:
    lua_pushstring(L, event_stream_name(ev.type));
    push_joined(L, req, ev, max, 1);
    return 2;
  }
}

/* read(max) on a process stream: one event (push_event); read_bytes(max) on
 * a download: bytes (<= max). Either: nil (nothing queued yet) | false
 * (the stream is over; see result()). */
static int take(lua_State *L, int events) {
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
  if (events) return push_event(L, r->req, ev, (size_t)max);
  push_joined(L, r->req, ev, (size_t)max, 0);
  return 1;
}

static int req_read(lua_State *L) { return take(L, 1); }
static int req_read_bytes(lua_State *L) { return take(L, 0); }

/* Adds len to the byte count offsets[name] (the table at idx). */
static void count_taken(lua_State *L, int idx, const char *name, size_t len) {
  lua_getfield(L, idx, name);
  lua_Integer n = lua_tointeger(L, -1) + (lua_Integer)len;
  lua_pop(L, 1);
  lua_pushinteger(L, n);
  lua_setfield(L, idx, name);
}

/* Moves the output chunk ev (peeked) into out; with want also into a Lua
 * string of up to max bytes of consecutive chunks of that stream (pushed).
 * 0, or -1 with err when out refused a chunk (nothing pushed). */
static int collect_chunk(lua_State *L, e2b_req *req, e2b_output *out, e2b_proc_event ev, int want,
                         e2b_error *err) {
  luaL_Buffer b;
  if (want) luaL_buffinit(L, &b);
  e2b_event_type type = ev.type;
  size_t max = 1 << 20;
  int rc = 1;
  while (rc == 1 && ev.type == type && max > 0) {
    size_t take = want && ev.len > max ? max : ev.len;
    if (e2b_output_add(out, type, ev.data, take, err) != 0) return -1; /* b holds nothing yet on the stack */
    count_taken(L, 3, event_stream_name(type), take);
    if (want) {
      luaL_addlstring(&b, (const char *)ev.data, take);
      max -= take;
    }
    e2b_req_consume(req, take);
    if (!want) return 0;
    rc = e2b_req_peek_event(req, &ev);
  }
  luaL_pushresult(&b);
  return 0;
}

/* collect(out, want, offsets) on a process stream: the collect of
 * Process:wait, in C as e2b_run_with's. Moves every queued output chunk
 * into out (a core.output: what is kept, all, tail or none, is its call),
 * adding each chunk's length to offsets[stream]; nothing becomes a Lua
 * string unless want[stream] (a callback's stream): then, once added,
 * "stdout"|"stderr"|"pty", bytes are returned for it. Other events as
 * read(): "end", exit_code, exited, status, error; a "start" is skipped.
 * nil when nothing more is queued, false when the stream is over;
 * "refused", err when out refused a chunk (max_output). */
static int req_collect(lua_State *L) {
  req_ud *r = check_req(L);
  e2b_output *out = e2bL_check_output(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  luaL_checktype(L, 4, LUA_TTABLE);
  lua_settop(L, 4);
  lua_insert(L, 3); /* offsets at 3, want at 4: count_taken's index stays fixed */
  e2b_proc_event ev;
  int rc;
  while ((rc = e2b_req_peek_event(r->req, &ev)) == 1) {
    if (ev.type == E2B_EVENT_START) {
      e2b_req_consume(r->req, 0);
      continue;
    }
    if (ev.type != E2B_EVENT_STDOUT && ev.type != E2B_EVENT_STDERR && ev.type != E2B_EVENT_PTY)
      return push_event(L, r->req, ev, 1 << 20);
    lua_getfield(L, 4, event_stream_name(ev.type));
    int want = lua_toboolean(L, -1);
    lua_pop(L, 1);
    e2b_error err;
    e2b_error_clear(&err);
    if (want) lua_pushstring(L, event_stream_name(ev.type));
    if (collect_chunk(L, r->req, out, ev, want, &err) != 0) {
      lua_pushliteral(L, "refused");
      e2bL_push_fail(L, &err);
      lua_remove(L, -2); /* push_fail's nil */
      return 2;
    }
    if (want) return 2;
  }
  if (rc == 0)
    lua_pushnil(L);
  else
    lua_pushboolean(L, 0);
  return 1;
}

/* The FILE of an open Lua file at idx, else NULL. Every Lua's file
 * userdata starts with its FILE pointer (5.1 and LuaJIT: NULL once closed;
 * 5.2+: luaL_Stream, closed when closef is NULL). */
static FILE *open_file(lua_State *L, int idx) {
  void *u = luaL_testudata(L, idx, LUA_FILEHANDLE);
  if (!u) return NULL;
#if LUA_VERSION_NUM >= 502
  if (!((luaL_Stream *)u)->closef) return NULL;
#endif
  return *(FILE **)u;
}

/* drain(to) on a download: moves everything queued into `to` (a
 * core.buffer, or an open file, written directly) without making Lua
 * strings. Returns ended, bytes moved (ended: the download is over, see
 * result()); nil, message when `to` could not take them. */
static int req_drain(lua_State *L) {
  req_ud *r = check_req(L);
  lwhole *b = lwhole_test(L, 2);
  FILE *f = b ? NULL : open_file(L, 2);
  luaL_argcheck(L, b || f, 2, "a core.buffer or an open file");
  e2b_proc_event ev;
  size_t moved = 0;
  int rc;
  while ((rc = e2b_req_peek_event(r->req, &ev)) == 1) {
    if (b ? lwhole_append(b, ev.data, ev.len) != 0 : fwrite(ev.data, 1, ev.len, f) != ev.len) {
      lua_pushnil(L);
      lua_pushstring(L, b ? "out of memory" : strerror(errno));
      return 2;
    }
    moved += ev.len;
    e2b_req_consume(r->req, ev.len);
  }
  lua_pushboolean(L, rc < 0);
  lua_pushinteger(L, (lua_Integer)moved);
  return 2;
}

/* process() -> { pid, tag, kept, parked } of a process stream of e2b_proc_track
 * (kept: its output is saved in the sandbox) */
static int req_process(lua_State *L) {
  req_ud *r = check_req(L);
  lua_createtable(L, 0, 4);
  e2bL_set_int(L, "pid", e2b_req_proc_pid(r->req));
  e2bL_set_str(L, "tag", e2b_req_proc_tag(r->req));
  e2bL_set_bool(L, "kept", e2b_req_proc_kept(r->req) != NULL);
  e2bL_set_bool(L, "parked", e2b_req_proc_parked(r->req) != 0);
  return 1;
}

/* killed() -> tells a process stream of e2b_proc_track its caller killed the process */
static int req_killed(lua_State *L) {
  e2b_req_proc_killed(check_req(L)->req);
  return 0;
}

static int req_send(lua_State *L) {
  req_ud *r = check_req(L);
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  lua_pushboolean(L, e2b_req_send(r->req, data, len) == 0);
  return 1;
}

/* send_from(file, max) on an upload: reads up to max bytes of an open file
 * straight into the upload (no Lua string between). Returns the bytes
 * read, 0 at the file's end; nil, message when reading failed or the
 * upload takes no more. */
static int req_send_from(lua_State *L) {
  req_ud *r = check_req(L);
  FILE *f = open_file(L, 2);
  luaL_argcheck(L, f != NULL, 2, "an open file");
  lua_Integer max = luaL_optinteger(L, 3, 1 << 20);
  luaL_argcheck(L, max > 0, 3, "max must be positive");
  char *room = e2b_req_send_room(r->req, (size_t)max);
  if (!room) {
    lua_pushnil(L);
    lua_pushstring(L, "the upload takes no more input");
    return 2;
  }
  size_t n = fread(room, 1, (size_t)max, f);
  if (n == 0 && ferror(f)) {
    lua_pushnil(L);
    lua_pushstring(L, strerror(errno));
    return 2;
  }
  e2b_req_send_commit(r->req, n);
  lua_pushinteger(L, (lua_Integer)n);
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

static void req_release(void *ud) { e2b_req_free(((req_ud *)ud)->req); }

static const luaL_Reg req_methods[] = {
    {"id", req_id},
    {"done", req_done},
    {"result", req_result},
    {"read", req_read},
    {"read_bytes", req_read_bytes},
    {"drain", req_drain},
    {"collect", req_collect},
    {"send", req_send},
    {"send_from", req_send_from},
    {"finish", req_finish},
    {"pending", req_pending},
    {"cancel", req_cancel},
    {"process", req_process},
    {"killed", req_killed},
    {NULL, NULL}};

static const e2bL_class REQ = {REQ_MT, "request", offsetof(req_ud, req), req_release, req_methods};

void e2bL_open_req(lua_State *L) { e2bL_open_class(L, &REQ); }
