/* template.c — templates built in code: core.template_check,
 * core.template_step_check, core.template_name_check, core.template_hash and
 * core.template_json, core.dockerfile_parse (libe2b's rules, template.c and template/files.c), and the
 * client's template_* calls (template/build.c), each one request. A template
 * arrives as the table e2b.template's builder keeps:
 *   { from_image=, from_template=, start_cmd=, ready_cmd=, force=, context=,
 *     ignore = {...}, steps = { {type=, args={...}, force=, force_upload=,
 *     resolve_symlinks=}, ... } } */
#include "auxiliar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int opt_bool(lua_State *L, int t, const char *field) {
  lua_getfield(L, t, field);
  int v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* The step table at idx into *s; its args array is scratch left on the stack. */
static void read_step(lua_State *L, int idx, e2b_template_step *s) {
  luaL_checkstack(L, 4, "template steps");
  s->type = e2bL_opt_string(L, idx, "type");
  s->args = e2bL_opt_strings(L, idx, "args", &s->arg_count);
  s->force = opt_bool(L, idx, "force");
  s->force_upload = opt_bool(L, idx, "force_upload");
  s->resolve_symlinks = opt_bool(L, idx, "resolve_symlinks");
}

/* The template table at idx into *t (scratch stays on the stack until the call returns). */
static void read_template(lua_State *L, int idx, e2b_template *t) {
  luaL_checktype(L, idx, LUA_TTABLE);
  memset(t, 0, sizeof *t);
  t->from_image = e2bL_opt_string(L, idx, "from_image");
  t->from_template = e2bL_opt_string(L, idx, "from_template");
  t->start_cmd = e2bL_opt_string(L, idx, "start_cmd");
  t->ready_cmd = e2bL_opt_string(L, idx, "ready_cmd");
  t->context = e2bL_opt_string(L, idx, "context");
  t->force = opt_bool(L, idx, "force");
  t->ignore = e2bL_opt_strings(L, idx, "ignore", &t->ignore_count);
  lua_getfield(L, idx, "registry");
  if (lua_istable(L, -1)) {
    int r = lua_gettop(L); /* stays on the stack: its strings live as long as the call */
    e2b_template_registry *g = &t->registry;
    g->type = e2bL_opt_string(L, r, "type");
    g->username = e2bL_opt_string(L, r, "username");
    g->password = e2bL_opt_string(L, r, "password");
    g->aws_access_key_id = e2bL_opt_string(L, r, "access_key_id");
    g->aws_secret_access_key = e2bL_opt_string(L, r, "secret_access_key");
    g->aws_region = e2bL_opt_string(L, r, "region");
    g->gcp_service_account_json = e2bL_opt_string(L, r, "service_account_json");
  }
  lua_getfield(L, idx, "steps");
  int steps = lua_gettop(L);
  size_t n = lua_istable(L, steps) ? lua_rawlen(L, steps) : 0;
  e2b_template_step *s = lua_newuserdata(L, n ? n * sizeof *s : 1);
  memset(s, 0, n * sizeof *s);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, steps, (lua_Integer)i + 1);
    luaL_checktype(L, -1, LUA_TTABLE);
    read_step(L, lua_gettop(L), &s[i]); /* leaves the step table and its scratch */
  }
  t->steps = s;
  t->step_count = n;
}

/* hashes{[i] = hex or false} -> an array of step_count pointers (scratch). */
static const char *const *read_hashes(lua_State *L, int idx, size_t n) {
  if (lua_isnoneornil(L, idx)) return NULL;
  luaL_checktype(L, idx, LUA_TTABLE);
  const char **h = lua_newuserdata(L, n ? n * sizeof *h : 1);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, idx, (lua_Integer)i + 1);
    h[i] = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL; /* the table keeps it */
    lua_pop(L, 1);
  }
  return h;
}

static int ok_or_fail(lua_State *L, int rc, const e2b_error *err) {
  if (rc != 0) return e2bL_push_fail(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

/* template_check(t) -> true | nil, err */
static int core_template_check(lua_State *L) {
  e2b_template t;
  e2b_error err;
  read_template(L, 1, &t);
  return ok_or_fail(L, e2b_template_check(&t, &err), &err);
}

/* template_step_check(step, index) -> true | nil, err (index from 1) */
static int core_template_step_check(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer i = luaL_checkinteger(L, 2);
  e2b_template_step s;
  e2b_error err;
  read_step(L, 1, &s);
  return ok_or_fail(L, e2b_template_step_check(&s, (size_t)(i > 0 ? i - 1 : 0), &err), &err);
}

/* template_name_check(name, field, tag?) -> true | nil, err */
static int core_template_name_check(lua_State *L) {
  const char *v = luaL_optstring(L, 1, NULL), *field = luaL_checkstring(L, 2);
  e2b_error err;
  int rc = lua_toboolean(L, 3) ? e2b_template_tag_check(v, field, &err) : e2b_template_name_check(v, field, &err);
  return ok_or_fail(L, rc, &err);
}

/* template_hash(t, step) -> hex | nil, err (step from 1) */
static int core_template_hash(lua_State *L) {
  e2b_template t;
  e2b_error err;
  char hex[E2B_TEMPLATE_HASH_LEN + 1];
  lua_Integer step = luaL_checkinteger(L, 2);
  read_template(L, 1, &t);
  if (step < 1 || (size_t)step > t.step_count) return luaL_argerror(L, 2, "no such step");
  if (e2b_template_files_hash(&t, (size_t)step - 1, hex, &err) != 0) return e2bL_push_fail(L, &err);
  lua_pushstring(L, hex);
  return 1;
}

/* template_json(t, hashes?, skip_cache?) -> text | nil, err: a body to show,
 * so a registry's secrets are "***" in it */
static int core_template_json(lua_State *L) {
  e2b_template t;
  e2b_error err;
  read_template(L, 1, &t);
  unsigned flags = E2B_TEMPLATE_REDACT | (lua_toboolean(L, 3) ? E2B_TEMPLATE_SKIP_CACHE : 0);
  char *text = e2b_template_json(&t, read_hashes(L, 2, t.step_count), flags, &err);
  if (!text) return e2bL_push_fail(L, &err);
  lua_pushstring(L, text);
  free(text);
  return 1;
}

/* dockerfile_parse(text) -> { from_image =, start_cmd =, steps = { {type =, args = {...}}, ... } } | nil, err */
static int core_dockerfile_parse(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  e2b_dockerfile d;
  e2b_error err;
  if (e2b_dockerfile_parse(text, len, &d, &err) != 0) return e2bL_push_fail(L, &err);
  lua_createtable(L, 0, 3);
  e2bL_set_str(L, "from_image", d.from_image);
  e2bL_set_str(L, "start_cmd", d.start_cmd);
  lua_createtable(L, (int)d.step_count, 0);
  for (size_t i = 0; i < d.step_count; i++) {
    lua_createtable(L, 0, 2);
    e2bL_set_str(L, "type", d.steps[i].type);
    lua_createtable(L, (int)d.steps[i].arg_count, 0);
    for (size_t k = 0; k < d.steps[i].arg_count; k++) {
      lua_pushstring(L, d.steps[i].args[k]);
      lua_rawseti(L, -2, (lua_Integer)k + 1);
    }
    lua_setfield(L, -2, "args");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "steps");
  e2b_dockerfile_free(&d);
  return 1;
}

/* template_quote(s) -> s as one sh word | nil, err (a NUL byte in s) */
static int core_template_quote(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  char *q = e2b_template_quote(s, len);
  if (!q && memchr(s, 0, len)) {
    e2b_error err;
    memset(&err, 0, sizeof err);
    err.code = E2B_ERR_INVALID_ARGUMENT;
    snprintf(err.op, sizeof err.op, "template");
    snprintf(err.message, sizeof err.message, "a command line cannot carry a NUL byte");
    return e2bL_push_fail(L, &err);
  }
  if (!q) return luaL_error(L, "out of memory");
  lua_pushstring(L, q);
  free(q);
  return 1;
}

static client_ud *check_client(lua_State *L) {
  client_ud *u = luaL_checkudata(L, 1, CLIENT_MT);
  if (!u->c) luaL_error(L, "client is closed");
  return u;
}

/* client:template_request{name=, tags={...}, cpu_count=, memory_mb=, min_free_disk_mb=} */
static int client_template_request(lua_State *L) {
  client_ud *u = check_client(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  e2b_template_build_opts o;
  memset(&o, 0, sizeof o);
  o.name = e2bL_opt_string(L, 2, "name");
  o.tags = e2bL_opt_strings(L, 2, "tags", &o.tag_count);
  o.cpu_count = (int)e2bL_opt_integer(L, 2, "cpu_count", 0);
  o.memory_mb = (int)e2bL_opt_integer(L, 2, "memory_mb", 0);
  o.min_free_disk_mb = (int)e2bL_opt_integer(L, 2, "min_free_disk_mb", -1);
  e2b_error err;
  return e2bL_push_req(L, u->l, e2b_template_request(u->c, &o, &err), &err);
}

/* client:template_file_link(template_id, hash) */
static int client_template_file_link(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_template_file_link(u->c, luaL_checkstring(L, 2), luaL_checkstring(L, 3), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* client:template_hash(t, step) (step from 1): the answer's hash, computed
 * a slice per loop step */
static int client_template_hash(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_template t;
  e2b_error err;
  lua_Integer step = luaL_checkinteger(L, 3);
  read_template(L, 2, &t);
  if (step < 1 || (size_t)step > t.step_count) return luaL_argerror(L, 3, "no such step");
  return e2bL_push_req(L, u->l, e2b_template_hash(u->c, &t, (size_t)step - 1, &err), &err);
}

/* client:template_upload(t, step, url, headers?) (step from 1) */
static int client_template_upload(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_template t;
  e2b_error err;
  lua_Integer step = luaL_checkinteger(L, 3);
  const char *url = luaL_checkstring(L, 4);
  size_t nh = 0;
  lua_settop(L, 5);
  lua_newtable(L);
  lua_pushvalue(L, 5);
  lua_setfield(L, -2, "headers");
  const e2b_kv *h = e2bL_opt_kvs(L, 6, "headers", &nh);
  read_template(L, 2, &t);
  if (step < 1 || (size_t)step > t.step_count) return luaL_argerror(L, 3, "no such step");
  e2b_req *req = e2b_template_upload(u->c, &t, (size_t)step - 1, url, h, nh, &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* client:template_start(template_id, build_id, t, hashes, skip_cache) */
static int client_template_start(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_template t;
  e2b_error err;
  const char *tid = luaL_checkstring(L, 2), *bid = luaL_checkstring(L, 3);
  int skip = lua_toboolean(L, 6);
  read_template(L, 4, &t);
  const char *const *hashes = read_hashes(L, 5, t.step_count);
  return e2bL_push_req(L, u->l, e2b_template_start(u->c, tid, bid, &t, hashes, skip, &err), &err);
}

/* client:template_status(template_id, build_id, logs_offset) */
static int client_template_status(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_template_status(u->c, luaL_checkstring(L, 2), luaL_checkstring(L, 3),
                                     (long)luaL_optinteger(L, 4, 0), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* client:template_exists(name) */
static int client_template_exists(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  return e2bL_push_req(L, u->l, e2b_template_exists(u->c, luaL_checkstring(L, 2), &err), &err);
}

/* The array of strings at idx (scratch left on the stack). */
static const char *const *strings_at(lua_State *L, int idx, size_t *n) {
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_newtable(L);
  lua_pushvalue(L, idx);
  lua_setfield(L, -2, "tags");
  return e2bL_opt_strings(L, lua_gettop(L), "tags", n);
}

/* client:template_assign_tags(target, tags) / template_remove_tags(name, tags) */
static int client_template_tags_change(lua_State *L) {
  client_ud *u = check_client(L);
  const char *name = luaL_checkstring(L, 2);
  size_t n;
  lua_settop(L, 3);
  const char *const *tags = strings_at(L, 3, &n);
  e2b_error err;
  e2b_req *req = lua_toboolean(L, lua_upvalueindex(1)) ? e2b_template_remove_tags(u->c, name, tags, n, &err)
                                                        : e2b_template_assign_tags(u->c, name, tags, n, &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* client:template_tags(template_id) */
static int client_template_tags(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  return e2bL_push_req(L, u->l, e2b_template_tags(u->c, luaL_checkstring(L, 2), &err), &err);
}

/* Adds the core.template_* functions to the module at -1 and the
 * template_* methods to the client class. */
void e2bL_open_template(lua_State *L) {
  static const luaL_Reg functions[] = {{"template_check", core_template_check},
                                       {"template_step_check", core_template_step_check},
                                       {"template_name_check", core_template_name_check},
                                       {"template_hash", core_template_hash},
                                       {"template_json", core_template_json},
                                       {"template_quote", core_template_quote},
                                       {"dockerfile_parse", core_dockerfile_parse},
                                       {NULL, NULL}};
  static const luaL_Reg methods[] = {{"template_request", client_template_request},
                                     {"template_file_link", client_template_file_link},
                                     {"template_hash", client_template_hash},
                                     {"template_upload", client_template_upload},
                                     {"template_start", client_template_start},
                                     {"template_status", client_template_status},
                                     {"template_exists", client_template_exists},
                                     {"template_tags", client_template_tags},
                                     {NULL, NULL}};
  for (const luaL_Reg *f = functions; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, -2, f->name);
  }
  luaL_getmetatable(L, CLIENT_MT);
  lua_getfield(L, -1, "__index");
  for (const luaL_Reg *m = methods; m->name; m++) {
    lua_pushcfunction(L, m->func);
    lua_setfield(L, -2, m->name);
  }
  for (int remove = 0; remove < 2; remove++) {
    lua_pushboolean(L, remove);
    lua_pushcclosure(L, client_template_tags_change, 1);
    lua_setfield(L, -2, remove ? "template_remove_tags" : "template_assign_tags");
  }
  lua_pop(L, 2);
}
