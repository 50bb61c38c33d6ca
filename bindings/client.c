/* client.c — the client userdata: control-plane calls and their option tables. */
#include "auxiliar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- client ---- */

static const e2bL_class CLIENT; /* defined with its methods, below */
#define check_client(L) ((client_ud *)e2bL_check((L), &CLIENT))

int e2bL_core_client(lua_State *L) {
  loop_ud *lu = e2bL_check_loop(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  e2b_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.api_key = e2bL_opt_string(L, 2, "api_key");
  cfg.domain = e2bL_opt_string(L, 2, "domain");
  cfg.api_url = e2bL_opt_string(L, 2, "api_url");
  cfg.sandbox_url = e2bL_opt_string(L, 2, "sandbox_url");
  cfg.template_id = e2bL_opt_string(L, 2, "template");
  cfg.user_agent = e2bL_opt_string(L, 2, "user_agent");
  cfg.request_timeout_ms = (long)e2bL_opt_integer(L, 2, "request_timeout_ms", 0);
  cfg.budget_ms = (long)e2bL_opt_integer(L, 2, "budget_ms", 0);
  cfg.max_retries = (int)e2bL_opt_count(L, 2, "max_retries"); /* Lua's 0: E2B_NO_RETRY */
  cfg.max_inflight = (int)e2bL_opt_integer(L, 2, "max_inflight", 0);
  cfg.owner = e2bL_opt_string(L, 2, "owner");
  cfg.page_size = (int)e2bL_opt_integer(L, 2, "page_size", 0);
  cfg.ca_file = e2bL_opt_string(L, 2, "ca_file");
  e2b_error err;
  e2b_client *c = e2b_client_new(lu->l->loop, &cfg, &err);
  if (!c) return e2bL_push_fail(L, &err);
  e2bL_new_ud(L, sizeof(client_ud), &CLIENT, lu->l, c);
  return 1;
}

static void client_release(void *ud) { e2b_client_release(((client_ud *)ud)->c); }

static int client_config(lua_State *L) {
  client_ud *u = check_client(L);
  lua_createtable(L, 0, 5);
  e2bL_set_str(L, "api_url", e2b_client_api_url(u->c));
  e2bL_set_str(L, "domain", e2b_client_domain(u->c));
  e2bL_set_str(L, "sandbox_url", e2b_client_sandbox_url(u->c));
  e2bL_set_str(L, "ca_file", e2b_client_ca_file(u->c));
  e2bL_set_str(L, "template", e2b_client_template(u->c));
  e2bL_set_str(L, "owner", e2b_client_owner(u->c));
  lua_pushinteger(L, e2b_client_request_timeout_ms(u->c));
  lua_setfield(L, -2, "request_timeout_ms");
  lua_pushinteger(L, e2b_client_budget_ms(u->c));
  lua_setfield(L, -2, "budget_ms");
  e2bL_set_bool(L, "has_api_key", e2b_client_has_api_key(u->c) != 0);
  return 1;
}

/* Reads the create fields of table t (scratch arrays stay on the stack). */
static void read_create_opts(lua_State *L, int t, e2b_create_opts *o) {
  memset(o, 0, sizeof *o);
  o->template_id = e2bL_opt_string(L, t, "template");
  o->timeout_ms = (long)e2bL_opt_integer(L, t, "timeout_ms", 0);
  o->secure = e2bL_opt_tristate(L, t, "secure");
  o->allow_internet_access = e2bL_opt_tristate(L, t, "allow_internet_access");
  o->metadata = e2bL_opt_kvs(L, t, "metadata", &o->metadata_count);
  o->env = e2bL_opt_kvs(L, t, "env", &o->env_count);
  o->auto_pause = e2bL_opt_tristate(L, t, "auto_pause");
  o->auto_pause_memory = e2bL_opt_tristate(L, t, "auto_pause_memory");
  o->auto_resume = e2bL_opt_tristate(L, t, "auto_resume");
  o->allow_out = e2bL_opt_strings(L, t, "allow_out", &o->allow_out_count);
  o->deny_out = e2bL_opt_strings(L, t, "deny_out", &o->deny_out_count);
  o->network = e2bL_opt_tristate(L, t, "send_network") == E2B_YES;
  o->v1_route = e2bL_opt_tristate(L, t, "v1_route") == E2B_YES;
  o->volume_mounts = e2bL_opt_kvs(L, t, "volume_mounts", &o->volume_mount_count);
  o->mcp = e2bL_opt_string(L, t, "mcp");
}

/* Reads rules = { [domain] = { [header] = value } } at t into scratch left
 * on the stack (the Lua layer has checked the shape). */
static const e2b_net_rule *read_rules(lua_State *L, int t, size_t *count) {
  *count = 0;
  lua_getfield(L, t, "rules");
  int m = lua_gettop(L);
  if (!lua_istable(L, m)) return NULL;
  size_t n = 0;
  for (lua_pushnil(L); lua_next(L, m); lua_pop(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING) luaL_error(L, "rules: keys must be strings");
    n++;
  }
  e2b_net_rule *r = n ? compat_newuserdata(L, n * sizeof *r) : NULL;
  size_t i = 0;
  for (lua_pushnil(L); lua_next(L, m); lua_pop(L, 1)) r[i++].domain = lua_tostring(L, -2);
  luaL_checkstack(L, (int)n + 4, "rules");
  for (i = 0; i < n; i++) r[i].headers = e2bL_opt_kvs(L, m, r[i].domain, &r[i].header_count);
  *count = n;
  return r;
}

static const e2b_egress_proxy *read_proxy(lua_State *L, int t) {
  lua_getfield(L, t, "egress_proxy");
  int m = lua_gettop(L);
  if (!lua_istable(L, m)) return NULL;
  e2b_egress_proxy *p = compat_newuserdata(L, sizeof *p);
  p->address = e2bL_opt_string(L, m, "address");
  p->username = e2bL_opt_string(L, m, "username");
  p->password = e2bL_opt_string(L, m, "password");
  return p;
}

/* Reads { allow_internet_access, allow_out, deny_out, rules, egress_proxy,
 * allow_public_traffic, mask_request_host } at t (scratch stays on the stack). */
static void read_network(lua_State *L, int t, e2b_network *n) {
  memset(n, 0, sizeof *n);
  n->allow_internet_access = e2bL_opt_tristate(L, t, "allow_internet_access");
  n->allow_out = e2bL_opt_strings(L, t, "allow_out", &n->allow_out_count);
  n->deny_out = e2bL_opt_strings(L, t, "deny_out", &n->deny_out_count);
  n->allow_public_traffic = e2bL_opt_tristate(L, t, "allow_public_traffic");
  n->mask_request_host = e2bL_opt_string(L, t, "mask_request_host");
  n->rules = read_rules(L, t, &n->rule_count);
  n->egress_proxy = read_proxy(L, t);
}

/* network_check(policy, update) -> true | nil, err: libe2b's judgement of
 * a network policy (read as read_network), without any call. */
int e2bL_core_network_check(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int update = lua_toboolean(L, 2);
  const char *op = luaL_optstring(L, 3, update ? "set_network" : "create");
  e2b_network net;
  read_network(L, 1, &net);
  e2b_error err;
  if (e2b_network_check(&net, update, op, &err) != 0) return e2bL_push_fail(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

/* lifecycle_check({ auto_pause, auto_pause_memory, auto_resume }, op) ->
 * true | nil, err: libe2b's judgement of a lifecycle, without any call. */
int e2bL_core_lifecycle_check(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  e2b_error err;
  if (e2b_lifecycle_check(e2bL_opt_tristate(L, 1, "auto_pause"), e2bL_opt_tristate(L, 1, "auto_pause_memory"),
                          e2bL_opt_tristate(L, 1, "auto_resume"), luaL_optstring(L, 2, "create"), &err) != 0)
    return e2bL_push_fail(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

static int client_create(lua_State *L) {
  client_ud *u = check_client(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  e2b_create_opts o;
  read_create_opts(L, 2, &o);
  e2b_error err;
  e2b_req *req = e2b_sandbox_create(u->c, &o, &err);
  return e2bL_push_req(L, u->l, req, &err);
}

static int client_pause(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_pause(u->c, luaL_checkstring(L, 2), lua_toboolean(L, 3), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* Reads {metadata=, states={"running"|"paused"...}, limit=, next_token=,
 * template=, started_after= (epoch ms), order= ("asc"|"desc")} at t; an
 * order it does not know goes to the core as out of range. */
static void read_list_opts(lua_State *L, int t, e2b_list_opts *o) {
  o->metadata = e2bL_opt_kvs(L, t, "metadata", &o->metadata_count);
  o->limit = (int)e2bL_opt_integer(L, t, "limit", 0);
  o->next_token = e2bL_opt_string(L, t, "next_token");
  o->template_id = e2bL_opt_string(L, t, "template");
  o->started_after_ms = (int64_t)e2bL_opt_integer(L, t, "started_after", 0);
  const char *order = e2bL_opt_string(L, t, "order");
  o->order = !order ? 0 : strcmp(order, "asc") == 0 ? E2B_ORDER_ASC : strcmp(order, "desc") == 0 ? E2B_ORDER_DESC : -1;
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

/* Calls of one shape each share a body (by_id, by_id_ms, ...); each Lua
 * method is a C function of its own, named after it and registered beside
 * it in client_methods. */
typedef e2b_req *(*by_id_fn)(e2b_client *c, const char *id, e2b_error *err);
typedef e2b_req *(*by_id_ms_fn)(e2b_client *c, const char *id, long ms, e2b_error *err);
typedef e2b_req *(*by_list_fn)(e2b_client *c, const e2b_list_opts *o, e2b_error *err);
typedef e2b_req *(*plain_fn)(e2b_client *c, e2b_error *err);
/* A volume's content: name(volume_id, token, path, ...) */
typedef e2b_req *(*vol_path_fn)(e2b_client *c, const char *id, const char *token, const char *path,
                                e2b_error *err);
typedef e2b_req *(*vol_opts_fn)(e2b_client *c, const char *id, const char *token, const char *path,
                                const e2b_vol_write_opts *o, e2b_error *err);

/* name(volume_id, token, path) */
static int vol_path(lua_State *L, vol_path_fn call) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = call(u->c, luaL_checkstring(L, 2), luaL_checkstring(L, 3),
                                            luaL_checkstring(L, 4), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* name(volume_id, token, path, { uid =, gid =, mode =, force = }) */
static int vol_opts(lua_State *L, vol_opts_fn call) {
  client_ud *u = check_client(L);
  e2b_vol_write_opts o;
  memset(&o, 0, sizeof o);
  if (!lua_isnoneornil(L, 5)) {
    luaL_checktype(L, 5, LUA_TTABLE);
    static const char *const names[] = {"uid", "gid", "mode"};
    uint32_t *fields[] = {&o.uid, &o.gid, &o.mode};
    for (unsigned i = 0; i < 3; i++) {
      lua_Integer v = e2bL_opt_integer(L, 5, names[i], -1);
      if (v < 0) continue; /* absent (the Lua layer checked the range) */
      if (v > (lua_Integer)UINT32_MAX) luaL_error(L, "%s is out of range", names[i]);
      *fields[i] = (uint32_t)v;
      o.given |= 1u << i;
    }
    lua_getfield(L, 5, "force");
    o.force = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  e2b_error err;
  e2b_req *req = call(u->c, luaL_checkstring(L, 2), luaL_checkstring(L, 3),
                                            luaL_checkstring(L, 4), &o, &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* vol_list(volume_id, token, path, depth?) */
static int client_vol_list(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_vol_list(u->c, luaL_checkstring(L, 2), luaL_checkstring(L, 3), luaL_checkstring(L, 4),
                              (long)luaL_optinteger(L, 5, 0), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* name(id) */
static int by_id(lua_State *L, by_id_fn call) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = call(u->c, luaL_checkstring(L, 2), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* name(id, ms): ms optional (0) or required */
static int by_id_ms(lua_State *L, by_id_ms_fn call, int required) {
  client_ud *u = check_client(L);
  const char *id = luaL_checkstring(L, 2);
  lua_Integer ms = required ? luaL_checkinteger(L, 3) : luaL_optinteger(L, 3, 0);
  e2b_error err;
  return e2bL_push_req(L, u->l, call(u->c, id, (long)ms, &err), &err);
}

/* metrics(sandbox_id, start_ms?, end_ms?) */
static int client_metrics(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_metrics(u->c, luaL_checkstring(L, 2), (int64_t)luaL_optinteger(L, 3, 0),
                                     (int64_t)luaL_optinteger(L, 4, 0), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* list{metadata=, states=, limit=, next_token=}: one page; find{metadata=, states=}: every page */
static int by_list(lua_State *L, by_list_fn call) {
  client_ud *u = check_client(L);
  e2b_list_opts o;
  memset(&o, 0, sizeof o);
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    read_list_opts(L, 2, &o);
  }
  e2b_error err;
  return e2bL_push_req(L, u->l, call(u->c, &o, &err), &err);
}

/* name() */
static int plain(lua_State *L, plain_fn call) {
  client_ud *u = check_client(L);
  e2b_error err;
  return e2bL_push_req(L, u->l, call(u->c, &err), &err);
}

static int client_info(lua_State *L) { return by_id(L, e2b_sandbox_get); }
static int client_kill(lua_State *L) { return by_id(L, e2b_sandbox_end); }
static int client_describe(lua_State *L) { return by_id(L, e2b_sandbox_describe); }
static int client_destroy(lua_State *L) { return by_id(L, e2b_sandbox_destroy); }
static int client_create_volume(lua_State *L) { return by_id(L, e2b_volume_create); }
static int client_delete_snapshot(lua_State *L) { return by_id(L, e2b_snapshot_delete); }
static int client_delete_volume(lua_State *L) { return by_id(L, e2b_volume_delete); }
static int client_volume_open(lua_State *L) { return by_id(L, e2b_volume_open); }
/* attach(sandbox_id, timeout_ms?, lifetime_ms?): lifetime_ms when the caller
 * paused the sandbox and knows the lifetime it was created with. */
static int client_attach(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_attach_paused(u->c, luaL_checkstring(L, 2), (long)luaL_optinteger(L, 3, 0),
                                           (long)luaL_optinteger(L, 4, 0), &err);
  return e2bL_push_req(L, u->l, req, &err);
}
static int client_resume(lua_State *L) { return by_id_ms(L, e2b_sandbox_resume, 0); }
static int client_reap(lua_State *L) { return by_id_ms(L, e2b_sandbox_reap, 0); }
static int client_reap_preview(lua_State *L) { return by_id_ms(L, e2b_sandbox_reap_preview, 0); }
static int client_set_timeout(lua_State *L) { return by_id_ms(L, e2b_sandbox_set_timeout, 1); }
static int client_keep_alive(lua_State *L) { return by_id_ms(L, e2b_sandbox_keep_alive, 1); }
static int client_list(lua_State *L) { return by_list(L, e2b_sandbox_list); }
static int client_find(lua_State *L) { return by_list(L, e2b_sandbox_find); }
static int client_volumes(lua_State *L) { return plain(L, e2b_volume_list); }
static int client_doctor(lua_State *L) { return plain(L, e2b_doctor); }
static int client_vol_stat(lua_State *L) { return vol_path(L, e2b_vol_stat); }
static int client_vol_remove(lua_State *L) { return vol_path(L, e2b_vol_remove); }
static int client_vol_read(lua_State *L) { return vol_path(L, e2b_vol_read); }
static int client_vol_mkdir(lua_State *L) { return vol_opts(L, e2b_vol_mkdir); }
static int client_vol_write(lua_State *L) { return vol_opts(L, e2b_vol_write); }
static int client_vol_set_metadata(lua_State *L) { return vol_opts(L, e2b_vol_set_metadata); }

/* provision{ <create fields>, id, ready_timeout_ms, setup_script, setup_name,
 *            setup_timeout_ms, user, network = {...} } */
static int client_provision(lua_State *L) {
  client_ud *u = check_client(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  e2b_provision_opts o;
  memset(&o, 0, sizeof o);
  read_create_opts(L, 2, &o.create);
  o.id = e2bL_opt_string(L, 2, "id");
  o.ready_timeout_ms = (long)e2bL_opt_count(L, 2, "ready_timeout_ms"); /* Lua's 0: do not wait */
  lua_getfield(L, 2, "setup_script");
  if (!lua_isnil(L, -1)) o.setup_script = luaL_checklstring(L, -1, &o.setup_len);
  lua_pop(L, 1); /* the options table keeps the string alive */
  o.setup_name = e2bL_opt_string(L, 2, "setup_name");
  o.setup_timeout_ms = (long)e2bL_opt_integer(L, 2, "setup_timeout_ms", 0);
  o.user = e2bL_opt_string(L, 2, "user");
  e2b_network net;
  lua_getfield(L, 2, "network");
  if (lua_istable(L, -1)) {
    read_network(L, lua_gettop(L), &net);
    o.network = &net;
  }
  e2b_error err;
  e2b_req *req = e2b_sandbox_provision(u->c, &o, &err);
  return e2bL_push_req(L, u->l, req, &err);
}

static int client_fork(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_sandbox_fork(u->c, luaL_checkstring(L, 2), (long)luaL_optinteger(L, 3, 0),
                                  (int)luaL_optinteger(L, 4, 1), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

static int client_set_network(lua_State *L) {
  client_ud *u = check_client(L);
  const char *id = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  e2b_network net;
  read_network(L, 3, &net);
  e2b_error err;
  return e2bL_push_req(L, u->l, e2b_sandbox_set_network(u->c, id, &net, &err), &err);
}

static int client_snapshot(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_snapshot_create(u->c, luaL_checkstring(L, 2), luaL_checkstring(L, 3), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* snapshots(name?, sandbox_id?) */
static int client_snapshots(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_error err;
  e2b_req *req = e2b_snapshot_list_for(u->c, luaL_optstring(L, 2, NULL), luaL_optstring(L, 3, NULL), &err);
  return e2bL_push_req(L, u->l, req, &err);
}

/* logs(sandbox_id, {cursor_ms, limit, backward, level, search}) */
static int client_logs(lua_State *L) {
  client_ud *u = check_client(L);
  const char *id = luaL_checkstring(L, 2);
  e2b_logs_opts o;
  memset(&o, 0, sizeof o);
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    o.cursor_ms = (int64_t)e2bL_opt_integer(L, 3, "cursor_ms", 0);
    o.limit = (int)e2bL_opt_integer(L, 3, "limit", 0);
    o.backward = e2bL_opt_tristate(L, 3, "backward") == E2B_YES;
    o.level = e2bL_opt_string(L, 3, "level");
    o.search = e2bL_opt_string(L, 3, "search");
  }
  e2b_error err;
  return e2bL_push_req(L, u->l, e2b_sandbox_logs(u->c, id, &o, &err), &err);
}

/* verify_egress{allow_host, allowed_url, denied_url, ip_url, template, timeout_ms} */
static int client_verify_egress(lua_State *L) {
  client_ud *u = check_client(L);
  e2b_egress_opts o;
  memset(&o, 0, sizeof o);
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    o.allow_host = e2bL_opt_string(L, 2, "allow_host");
    o.allowed_url = e2bL_opt_string(L, 2, "allowed_url");
    o.denied_url = e2bL_opt_string(L, 2, "denied_url");
    o.ip_url = e2bL_opt_string(L, 2, "ip_url");
    o.template_id = e2bL_opt_string(L, 2, "template");
    o.timeout_ms = (long)e2bL_opt_integer(L, 2, "timeout_ms", 0);
  }
  e2b_error err;
  return e2bL_push_req(L, u->l, e2b_verify_egress(u->c, &o, &err), &err);
}

/* sandbox(sandbox_id, access_token?, domain?, envd_version?) -> sbx */
static int client_sandbox(lua_State *L) {
  client_ud *u = check_client(L);
  const char *id = luaL_checkstring(L, 2);
  const char *token = luaL_optstring(L, 3, NULL);
  const char *domain = luaL_optstring(L, 4, NULL);
  const char *version = luaL_optstring(L, 5, NULL);
  e2b_error err;
  e2b_sbx *s = e2b_sbx_new(u->c, id, token, domain, &err);
  if (!s) return e2bL_push_fail(L, &err);
  if (e2b_sbx_set_envd_version(s, version) != 0) {
    e2b_sbx_release(s);
    return luaL_error(L, "out of memory");
  }
  e2bL_new_ud(L, sizeof(sbx_ud), &e2bL_sbx_class, u->l, s);
  return 1;
}

static const luaL_Reg client_methods[] = {
    {"config", client_config},
    {"create", client_create},
    {"pause", client_pause},
    {"sandbox", client_sandbox},
    {"provision", client_provision},
    {"fork", client_fork},
    {"set_network", client_set_network},
    {"snapshot", client_snapshot},
    {"snapshots", client_snapshots},
    {"verify_egress", client_verify_egress},
    {"logs", client_logs},
    {"metrics", client_metrics},
    {"info", client_info},
    {"kill", client_kill},
    {"describe", client_describe},
    {"destroy", client_destroy},
    {"create_volume", client_create_volume},
    {"delete_snapshot", client_delete_snapshot},
    {"delete_volume", client_delete_volume},
    {"volume_open", client_volume_open},
    {"attach", client_attach},
    {"resume", client_resume},
    {"reap", client_reap},
    {"reap_preview", client_reap_preview},
    {"set_timeout", client_set_timeout},
    {"keep_alive", client_keep_alive},
    {"list", client_list},
    {"find", client_find},
    {"volumes", client_volumes},
    {"doctor", client_doctor},
    {"vol_list", client_vol_list},
    {"vol_stat", client_vol_stat},
    {"vol_remove", client_vol_remove},
    {"vol_read", client_vol_read},
    {"vol_mkdir", client_vol_mkdir},
    {"vol_write", client_vol_write},
    {"vol_set_metadata", client_vol_set_metadata},
    {NULL, NULL}};

static const e2bL_class CLIENT = {CLIENT_MT, "client", offsetof(client_ud, c), client_release,
                                  client_methods};

void e2bL_open_client(lua_State *L) { e2bL_open_class(L, &CLIENT); }
