/* auxiliar.c — the binding's shared helpers: loop state, errors, option readers, result conversion. */
#include "auxiliar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void e2bL_lloop_release(lloop *l) {
  if (--l->refs > 0) return;
  e2b_loop_release(l->loop);
  free(l->ready);
  free(l);
}

/* ---- errors ---- */

static void e2bL_push_error_table(lua_State *L, const e2b_error *err) {
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
  if (err->field[0]) {
    lua_pushstring(L, err->field);
    lua_setfield(L, -2, "field");
  }
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

int e2bL_push_fail(lua_State *L, const e2b_error *err) {
  lua_pushnil(L);
  e2bL_push_error_table(L, err);
  return 2;
}

/* ---- option readers (the Lua layer validates first; these stay strict) ---- */

const char *e2bL_opt_string(lua_State *L, int t, const char *field) {
  lua_getfield(L, t, field);
  const char *s = NULL;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "%s must be a string", field);
    s = lua_tostring(L, -1); /* stays alive: the options table holds it */
  }
  lua_pop(L, 1);
  return s;
}

lua_Integer e2bL_opt_integer(lua_State *L, int t, const char *field, lua_Integer dflt) {
  lua_getfield(L, t, field);
  lua_Integer v = dflt;
  if (!lua_isnil(L, -1)) {
    if (!lua_isinteger(L, -1)) luaL_error(L, "%s must be an integer", field);
    v = lua_tointeger(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* nil -> 0 (libe2b's default), 0 -> -1 (its "none"), n -> n (see auxiliar.h). */
lua_Integer e2bL_opt_count(lua_State *L, int t, const char *field) {
  lua_getfield(L, t, field);
  int absent = lua_isnil(L, -1);
  lua_pop(L, 1);
  if (absent) return 0;
  lua_Integer v = e2bL_opt_integer(L, t, field, 0);
  return v == 0 ? -1 : v;
}

/* nil -> E2B_DEFAULT, true -> E2B_YES, false -> E2B_NO. */
int e2bL_opt_tristate(lua_State *L, int t, const char *field) {
  lua_getfield(L, t, field);
  int v = E2B_DEFAULT;
  if (!lua_isnil(L, -1)) {
    if (!lua_isboolean(L, -1)) luaL_error(L, "%s must be a boolean", field);
    v = lua_toboolean(L, -1) ? E2B_YES : E2B_NO;
  }
  lua_pop(L, 1);
  return v;
}

/* Scratch memory that the garbage collector reclaims (no leak on raise). */
static void *e2bL_scratch(lua_State *L, size_t size) {
  return size ? compat_newuserdata(L, size) : (lua_pushnil(L), NULL);
}

/* Reads table field `field` (string -> string map) into a scratch kv array
 * left on the stack. */
const e2b_kv *e2bL_opt_kvs(lua_State *L, int t, const char *field, size_t *count) {
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
  e2b_kv *kv = e2bL_scratch(L, n * sizeof *kv);
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
const char *const *e2bL_opt_strings(lua_State *L, int t, const char *field, size_t *count) {
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
  const char **s = e2bL_scratch(L, n * sizeof *s);
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

void e2bL_set_str(lua_State *L, const char *k, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

void e2bL_set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

void e2bL_set_bool(lua_State *L, const char *k, int v) {
  if (v < 0) return;
  lua_pushboolean(L, v);
  lua_setfield(L, -2, k);
}

/* t[k] = an array of the n strings s, for the table on top. */
static void set_strings(lua_State *L, const char *k, char *const *s, size_t n) {
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, s[i]);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, k);
}

/* t.network = { allow_out, deny_out, allow_public_traffic, mask_request_host,
 * rules = { [domain] = { Name = value } }, egress_proxy = { address, username } } */
static void push_network(lua_State *L, const e2b_sandbox_info *s) {
  lua_createtable(L, 0, 6);
  set_strings(L, "allow_out", s->allow_out, s->allow_out_count);
  set_strings(L, "deny_out", s->deny_out, s->deny_out_count);
  e2bL_set_bool(L, "allow_public_traffic", s->allow_public_traffic);
  e2bL_set_str(L, "mask_request_host", s->mask_request_host);
  if (s->rule_count) {
    lua_createtable(L, 0, (int)s->rule_count);
    for (size_t i = 0; i < s->rule_count; i++) {
      const e2b_map *m = &s->rule_headers[i];
      lua_createtable(L, 0, (int)m->count);
      for (size_t k = 0; k < m->count; k++) e2bL_set_str(L, m->keys[k], m->values[k]);
      lua_setfield(L, -2, s->rule_domains[i]);
    }
    lua_setfield(L, -2, "rules");
  }
  if (s->egress_proxy_address) {
    lua_createtable(L, 0, 2);
    e2bL_set_str(L, "address", s->egress_proxy_address);
    e2bL_set_str(L, "username", s->egress_proxy_username);
    lua_setfield(L, -2, "egress_proxy");
  }
  lua_setfield(L, -2, "network");
}

void e2bL_push_sandbox(lua_State *L, const e2b_sandbox_info *s) {
  lua_createtable(L, 0, 16);
  e2bL_set_str(L, "sandbox_id", s->sandbox_id);
  e2bL_set_str(L, "template_id", s->template_id);
  e2bL_set_str(L, "alias", s->alias);
  e2bL_set_str(L, "client_id", s->client_id);
  e2bL_set_str(L, "envd_version", s->envd_version);
  e2bL_set_str(L, "envd_access_token", s->envd_access_token);
  e2bL_set_str(L, "mcp_token", s->mcp_token);
  e2bL_set_str(L, "traffic_access_token", s->traffic_access_token);
  e2bL_set_str(L, "domain", s->domain);
  e2bL_set_str(L, "state", s->state == E2B_STATE_RUNNING  ? "running"
                      : s->state == E2B_STATE_PAUSED ? "paused"
                                                     : NULL);
  if (s->started_at_ms) e2bL_set_int(L, "started_at", s->started_at_ms);
  if (s->end_at_ms) e2bL_set_int(L, "end_at", s->end_at_ms);
  if (s->cpu_count) e2bL_set_int(L, "cpu_count", s->cpu_count);
  if (s->memory_mb) e2bL_set_int(L, "memory_mb", s->memory_mb);
  if (s->disk_size_mb) e2bL_set_int(L, "disk_size_mb", s->disk_size_mb);
  e2bL_set_str(L, "on_timeout", s->on_timeout);
  e2bL_set_bool(L, "auto_resume", s->auto_resume);
  e2bL_set_bool(L, "allow_internet_access", s->allow_internet_access);
  if (s->network) push_network(L, s);
  /* The identity keys are the core's stored format: Lua gets their meaning
   * (id, owner) and the caller's own pairs, never the keys themselves. */
  const char *id = NULL, *owner = NULL, *lifetime = NULL;
  lua_createtable(L, 0, (int)s->metadata.count);
  for (size_t i = 0; i < s->metadata.count; i++) {
    if (strcmp(s->metadata.keys[i], E2B_META_ID) == 0) {
      id = s->metadata.values[i];
    } else if (strcmp(s->metadata.keys[i], E2B_META_OWNER) == 0) {
      owner = s->metadata.values[i];
    } else if (strcmp(s->metadata.keys[i], E2B_META_TIMEOUT) == 0) {
      lifetime = s->metadata.values[i];
    } else if (strncmp(s->metadata.keys[i], E2B_META_PREFIX, strlen(E2B_META_PREFIX)) != 0) {
      lua_pushstring(L, s->metadata.values[i]);
      lua_setfield(L, -2, s->metadata.keys[i]);
    }
  }
  lua_setfield(L, -2, "metadata");
  e2bL_set_str(L, "id", id ? id : s->sandbox_id);
  e2bL_set_str(L, "owner", owner);
  /* the lifetime it was created with: a later resume asks for it */
  long long ms = lifetime ? strtoll(lifetime, NULL, 10) : 0;
  if (ms > 0 && ms <= INT32_MAX * 1000LL) e2bL_set_int(L, "lifetime_ms", ms);
}

void e2bL_push_entry(lua_State *L, const e2b_entry *e) {
  lua_createtable(L, 0, 10);
  e2bL_set_str(L, "name", e->name);
  e2bL_set_str(L, "path", e->path);
  e2bL_set_str(L, "type", e->type);
  e2bL_set_int(L, "size", e->size);
  e2bL_set_int(L, "mode", e->mode);
  e2bL_set_str(L, "permissions", e->permissions);
  e2bL_set_str(L, "owner", e->owner);
  e2bL_set_str(L, "group", e->group);
  if (e->modified_at_ms) e2bL_set_int(L, "modified_at", e->modified_at_ms);
  e2bL_set_str(L, "symlink_target", e->symlink_target);
}

void e2bL_push_proc_info(lua_State *L, const e2b_proc_info *p) {
  lua_createtable(L, 0, 6);
  e2bL_set_int(L, "pid", p->pid);
  e2bL_set_str(L, "tag", p->tag);
  e2bL_set_str(L, "cmd", p->cmd);
  e2bL_set_str(L, "cwd", p->cwd);
  e2bL_set_bool(L, "kept", p->kept != 0);
  set_strings(L, "args", p->args, p->arg_count);
}

void e2bL_push_snapshot(lua_State *L, const e2b_snapshot *sn) {
  lua_createtable(L, 0, 2);
  e2bL_set_str(L, "snapshot_id", sn->snapshot_id);
  set_strings(L, "names", sn->names, sn->name_count);
}

void e2bL_push_volume(lua_State *L, const e2b_volume *v) {
  lua_createtable(L, 0, 3);
  e2bL_set_str(L, "volume_id", v->volume_id);
  e2bL_set_str(L, "name", v->name);
  e2bL_set_str(L, "token", v->token);
}

void e2bL_push_log_entry(lua_State *L, const e2b_log_entry *e) {
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, (lua_Integer)e->timestamp_ms);
  lua_setfield(L, -2, "timestamp");
  e2bL_set_str(L, "level", e->level);
  e2bL_set_str(L, "message", e->message);
  lua_createtable(L, 0, (int)e->fields.count);
  for (size_t i = 0; i < e->fields.count; i++) {
    lua_pushstring(L, e->fields.values[i]);
    lua_setfield(L, -2, e->fields.keys[i]);
  }
  lua_setfield(L, -2, "fields");
}

/* The answer of a template call, as a table (request.c's pusher for E2B_RESULT_TEMPLATE). */
void e2bL_push_template_answer(lua_State *L, const e2b_template_answer *a) {
  lua_createtable(L, 0, 12);
  if (!a) return;
  e2bL_set_str(L, "template_id", a->template_id);
  e2bL_set_str(L, "build_id", a->build_id);
  e2bL_set_str(L, "url", a->url);
  e2bL_set_str(L, "hash", a->hash);
  e2bL_set_str(L, "status", a->status);
  e2bL_set_str(L, "reason", a->reason);
  e2bL_set_str(L, "reason_step", a->reason_step);
  e2bL_set_bool(L, "present", a->present);
  e2bL_set_bool(L, "exists", a->exists);
  lua_createtable(L, (int)a->tag_count, 0);
  for (size_t i = 0; i < a->tag_count; i++) {
    lua_pushstring(L, a->tags[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "tags");
  lua_createtable(L, 0, (int)a->headers.count);
  for (size_t i = 0; i < a->headers.count; i++) {
    lua_pushstring(L, a->headers.values[i]);
    lua_setfield(L, -2, a->headers.keys[i]);
  }
  lua_setfield(L, -2, "headers");
  lua_createtable(L, (int)a->log_count, 0);
  for (size_t i = 0; i < a->log_count; i++) {
    e2bL_push_log_entry(L, &a->logs[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "logs");
  lua_createtable(L, (int)a->tag_list_count, 0);
  for (size_t i = 0; i < a->tag_list_count; i++) {
    lua_createtable(L, 0, 3);
    e2bL_set_str(L, "tag", a->tag_list[i].tag);
    e2bL_set_str(L, "build_id", a->tag_list[i].build_id);
    e2bL_set_int(L, "created_at", a->tag_list[i].created_ms);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "tag_list");
}

void e2bL_push_doctor(lua_State *L, const e2b_doctor_report *r) {
  lua_createtable(L, 0, 12);
  e2bL_set_bool(L, "auth", r->auth);
  e2bL_set_str(L, "create_route", r->create_route);
  e2bL_set_str(L, "envd_version", r->envd_version);
  e2bL_set_bool(L, "envd", r->envd);
  e2bL_set_bool(L, "stdin_close", r->stdin_close);
  e2bL_set_bool(L, "group_signals", r->group_signals);
  e2bL_set_bool(L, "volumes", r->volumes);
  e2bL_set_bool(L, "snapshots", r->snapshots);
  e2bL_set_bool(L, "network_update", r->network_update);
  e2bL_set_bool(L, "pagination", r->pagination);
  e2bL_set_str(L, "limits", r->limits);
  if (r->notes[0]) e2bL_set_str(L, "notes", r->notes);
}

void e2bL_push_egress(lua_State *L, const e2b_egress_report *r) {
  static const char *const verdicts[] = {"inconclusive", "filtered", "open"};
  lua_createtable(L, 0, 5);
  e2bL_set_str(L, "verdict", verdicts[r->verdict]);
  e2bL_set_int(L, "allowed_code", r->allowed_code);
  e2bL_set_int(L, "denied_code", r->denied_code);
  e2bL_set_int(L, "ip_code", r->ip_code);
  e2bL_set_str(L, "detail", r->detail);
}

/* A run's result as sbx:run returns it: pty only for a pty, bytes_dropped
 * only when the tail was kept (the pid only on a failure: e2bL_push_partial). */
void e2bL_push_run(lua_State *L, const e2b_run_result *r) {
  lua_createtable(L, 0, 9);
  e2bL_set_int(L, "exit_code", r->exit_code);
  e2bL_set_bool(L, "ok", r->exit_code == 0);
  lua_pushlstring(L, (const char *)r->out, r->out_len);
  lua_setfield(L, -2, "stdout");
  lua_pushlstring(L, (const char *)r->err, r->err_len);
  lua_setfield(L, -2, "stderr");
  if (r->pty) {
    lua_pushlstring(L, (const char *)r->pty, r->pty_len);
    lua_setfield(L, -2, "pty");
  }
  e2bL_set_str(L, "status", r->status);
  e2bL_set_str(L, "error", r->error);
  if (r->keep == E2B_KEEP_TAIL) e2bL_set_int(L, "bytes_dropped", (lua_Integer)r->dropped);
}

/* What a failed run had (stdout, stderr, pid), on the error table on top;
 * nothing when the command never started. */
void e2bL_push_partial(lua_State *L, const e2b_run_result *r) {
  if (!r || !r->pid) return;
  lua_pushlstring(L, (const char *)r->out, r->out_len);
  lua_setfield(L, -2, "stdout");
  lua_pushlstring(L, (const char *)r->err, r->err_len);
  lua_setfield(L, -2, "stderr");
  e2bL_set_int(L, "pid", (lua_Integer)r->pid);
}

/* NULL -> E2B_KEEP_DEFAULT, else "all" | "tail" | "none". */
e2b_keep e2bL_keep_of(lua_State *L, const char *k) {
  static const char *const names[] = {"all", "tail", "none", NULL};
  static const e2b_keep modes[] = {E2B_KEEP_ALL, E2B_KEEP_TAIL, E2B_KEEP_NONE};
  if (!k) return E2B_KEEP_DEFAULT;
  for (int i = 0; names[i]; i++)
    if (strcmp(k, names[i]) == 0) return modes[i];
  luaL_error(L, "keep must be \"all\", \"tail\" or \"none\"");
  return E2B_KEEP_DEFAULT;
}

/* Class `name` with its methods; the finalizer on top of the stack (popped)
 * is its __gc and __close, and its close when add_close. */
static void new_class(lua_State *L, const char *name, const luaL_Reg *methods, int add_close) {
  int gc = lua_gettop(L);
  luaL_newmetatable(L, name);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  if (add_close) {
    lua_pushvalue(L, gc);
    lua_setfield(L, -2, "close");
  }
  lua_setfield(L, -2, "__index");
  lua_pushvalue(L, gc);
  lua_setfield(L, -2, "__gc");
#if LUA_VERSION_NUM >= 504
  lua_pushvalue(L, gc);
  lua_setfield(L, -2, "__close");
#endif
  lua_pop(L, 2);
}

void e2bL_new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc) {
  lua_pushcfunction(L, gc);
  new_class(L, name, methods, 0);
}

/* The core handle of an object of class c (NULL once closed). */
static void *handle_of(void *u, const e2bL_class *c) {
  void *h;
  memcpy(&h, (char *)u + c->handle, sizeof h);
  return h;
}

void *e2bL_check(lua_State *L, const e2bL_class *c) {
  void *u = luaL_checkudata(L, 1, c->name);
  if (!handle_of(u, c)) luaL_error(L, "%s is closed", c->what);
  return u;
}

/* close(), __gc and __close of every e2bL_class (upvalue 1: the class). */
static int close_object(lua_State *L) {
  const e2bL_class *c = lua_touserdata(L, lua_upvalueindex(1));
  lloop **u = luaL_checkudata(L, 1, c->name); /* its first field: the loop reference */
  if (handle_of(u, c)) {
    c->release(u);
    void *none = NULL;
    memcpy((char *)u + c->handle, &none, sizeof none);
    e2bL_lloop_release(*u);
    *u = NULL;
  }
  return 0;
}

void e2bL_open_class(lua_State *L, const e2bL_class *c) {
  lua_pushlightuserdata(L, (void *)(uintptr_t)c);
  lua_pushcclosure(L, close_object, 1);
  new_class(L, c->name, c->methods, 1);
}

void *e2bL_new_ud(lua_State *L, size_t size, const e2bL_class *c, lloop *l, void *h) {
  lloop **u = compat_newuserdata(L, size);
  memset(u, 0, size);
  *u = l;
  memcpy((char *)u + c->handle, &h, sizeof h);
  l->refs++;
  luaL_setmetatable(L, c->name);
  return u;
}
