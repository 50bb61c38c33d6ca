/* auxiliar.h — what the binding's object files share (LuaSocket's auxiliar
 * is the model): the userdata types and their metatable names, the option
 * readers, the result pushers and the request userdata's constructor. One
 * file per object: loop.c, client.c, sandbox.c, request.c; e2b_core.c is
 * the module. */
#ifndef E2B_BINDING_AUXILIAR_H
#define E2B_BINDING_AUXILIAR_H

#include "compat.h"
#include "e2b.h"

#define LOOP_MT "e2b.core.loop"
#define CLIENT_MT "e2b.core.client"
#define SBX_MT "e2b.core.sbx"
#define REQ_MT "e2b.core.req"
#define OUTPUT_MT "e2b.core.output"
#define TARSAFE_MT "e2b.core.tarsafe"
#define ERROR_MT_KEY "e2b.core.error_mt"
/* ---- shared loop state (refcounted: requests keep it alive) ---- */

typedef struct lloop {
  int refs;
  e2b_loop *loop;
  lua_Integer *ready; /* ids of requests notified since the last step */
  size_t ready_len, ready_cap;
  lua_Integer next_id;
} lloop;


/* Every object starts with its loop reference (e2bL_new_ud sets it); a
 * client, sandbox handle and request then hold their core handle. */
typedef struct { lloop *l; } loop_ud;
typedef struct { lloop *l; e2b_client *c; } client_ud;
typedef struct { lloop *l; e2b_sbx *s; } sbx_ud;
typedef struct {
  lloop *l;
  e2b_req *req;
  lua_Integer id;
} req_ud;

/* A class of object holding a loop reference and a core handle (LuaSocket's
 * auxiliar_newclass/checkclass are the model): one row says where its
 * handle is, what "is closed" calls it and how the handle is let go, so
 * one check and one close serve every such object. */
typedef struct {
  const char *name;          /* its metatable */
  const char *what;          /* "<what> is closed" */
  size_t handle;             /* offsetof the core handle in the userdata */
  void (*release)(void *ud); /* lets the handle go (the loop reference is e2bL_open_class's) */
  const luaL_Reg *methods;   /* close, __gc and __close are added */
} e2bL_class;

void e2bL_lloop_release(lloop *l);
extern const e2bL_class e2bL_sbx_class; /* client.c makes sandbox handles */
/* Registers class c: its close, __gc and __close release the handle and
 * the loop reference, once. */
void e2bL_open_class(lua_State *L, const e2bL_class *c);
/* The object of class c at argument 1; raises "<what> is closed" once closed. */
void *e2bL_check(lua_State *L, const e2bL_class *c);
int e2bL_push_fail(lua_State *L, const e2b_error *err);
const char *e2bL_opt_string(lua_State *L, int t, const char *field);
lua_Integer e2bL_opt_integer(lua_State *L, int t, const char *field, lua_Integer dflt);
/* An integer where Lua says "none" with 0 and "the default" with nil, as
 * libe2b says them with -1 (its E2B_NO_* values) and 0: nil -> 0, 0 -> -1. */
lua_Integer e2bL_opt_count(lua_State *L, int t, const char *field);
int e2bL_opt_tristate(lua_State *L, int t, const char *field);
const e2b_kv *e2bL_opt_kvs(lua_State *L, int t, const char *field, size_t *count);
const char *const *e2bL_opt_strings(lua_State *L, int t, const char *field, size_t *count);
void e2bL_set_str(lua_State *L, const char *k, const char *v);
void e2bL_set_int(lua_State *L, const char *k, lua_Integer v);
/* t[k] = v ~= 0 for the table on top; nothing when v < 0 (unknown stays nil). */
void e2bL_set_bool(lua_State *L, const char *k, int v);
void e2bL_push_sandbox(lua_State *L, const e2b_sandbox_info *s);
void e2bL_push_entry(lua_State *L, const e2b_entry *e);
void e2bL_push_proc_info(lua_State *L, const e2b_proc_info *p);
void e2bL_push_snapshot(lua_State *L, const e2b_snapshot *sn);
void e2bL_push_volume(lua_State *L, const e2b_volume *v);
void e2bL_push_log_entry(lua_State *L, const e2b_log_entry *e);
void e2bL_push_doctor(lua_State *L, const e2b_doctor_report *r);
void e2bL_push_egress(lua_State *L, const e2b_egress_report *r);
void e2bL_push_run(lua_State *L, const e2b_run_result *r);
/* Pushes a request userdata for req (its result kind comes from the core),
 * or nil, err when req is NULL. */
int e2bL_push_req(lua_State *L, lloop *l, e2b_req *req, const e2b_error *err);
/* A new userdata of size bytes of class c, zeroed but for its loop
 * reference l (which it now holds a reference on) and its handle h. */
void *e2bL_new_ud(lua_State *L, size_t size, const e2bL_class *c, lloop *l, void *h);
void e2bL_push_partial(lua_State *L, const e2b_run_result *r);
e2b_keep e2bL_keep_of(lua_State *L, const char *keep);
loop_ud *e2bL_check_loop(lua_State *L, int idx);
void e2bL_new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc);

/* Each object file registers its metatable. */
void e2bL_open_loop(lua_State *L);
void e2bL_open_client(lua_State *L);
void e2bL_open_sbx(lua_State *L);
void e2bL_open_req(lua_State *L);
void e2bL_open_output(lua_State *L);
int e2bL_core_output(lua_State *L);
/* The collector of the core.output at idx (raises when it is none or closed). */
e2b_output *e2bL_check_output(lua_State *L, int idx);
void e2bL_open_tarsafe(lua_State *L);
int e2bL_core_tarsafe(lua_State *L);
int e2bL_core_loop(lua_State *L);
int e2bL_core_network_check(lua_State *L);
int e2bL_core_lifecycle_check(lua_State *L);
int e2bL_core_client(lua_State *L);
/* Adds hostio.c's functions to the module table on top of the stack. */
void e2bL_open_hostio(lua_State *L);
/* Adds git.c's functions (git_check, git_status) likewise. */
void e2bL_open_git(lua_State *L);
void e2bL_open_template(lua_State *L);
void e2bL_push_template_answer(lua_State *L, const e2b_template_answer *a);

#endif
