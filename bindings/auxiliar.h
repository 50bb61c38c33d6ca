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
#define ERROR_MT_KEY "e2b.core.error_mt"
/* ---- shared loop state (refcounted: requests keep it alive) ---- */

typedef struct lloop {
  int refs;
  e2b_loop *loop;
  lua_Integer *ready; /* ids of requests notified since the last step */
  size_t ready_len, ready_cap;
  lua_Integer next_id;
} lloop;


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
  RES_EGRESS,
  RES_BOOT_ID    /* a string */
} result_kind;

typedef struct {
  e2b_req *req;
  lloop *l;
  lua_Integer id;
  result_kind kind;
} req_ud;

void e2bL_lloop_release(lloop *l);
void e2bL_push_error_table(lua_State *L, const e2b_error *err);
int e2bL_push_fail(lua_State *L, const e2b_error *err);
const char *e2bL_opt_string(lua_State *L, int t, const char *field);
lua_Integer e2bL_opt_integer(lua_State *L, int t, const char *field, lua_Integer dflt);
int e2bL_opt_tristate(lua_State *L, int t, const char *field);
void *e2bL_scratch(lua_State *L, size_t size);
const e2b_kv *e2bL_opt_kvs(lua_State *L, int t, const char *field, size_t *count);
const char *const *e2bL_opt_strings(lua_State *L, int t, const char *field, size_t *count);
void e2bL_set_str(lua_State *L, const char *k, const char *v);
void e2bL_set_int(lua_State *L, const char *k, lua_Integer v);
void e2bL_push_map(lua_State *L, const e2b_map *m);
void e2bL_push_sandbox(lua_State *L, const e2b_sandbox *s);
void e2bL_push_entry(lua_State *L, const e2b_entry *e);
void e2bL_push_proc_info(lua_State *L, const e2b_proc_info *p);
void e2bL_push_snapshot(lua_State *L, const e2b_snapshot *sn);
void e2bL_push_volume(lua_State *L, const e2b_volume *v);
void e2bL_push_tri(lua_State *L, const char *k, int v);
void e2bL_push_doctor(lua_State *L, const e2b_doctor_report *r);
void e2bL_push_egress(lua_State *L, const e2b_egress_report *r);
void e2bL_push_run(lua_State *L, const e2b_run_result *r);
void e2bL_push_partial(lua_State *L, const e2b_run_result *r);
e2b_keep e2bL_keep_of(lua_State *L, const char *keep);
int e2bL_push_req(lua_State *L, lloop *l, e2b_req *req, result_kind kind, const e2b_error *err);
loop_ud *e2bL_check_loop(lua_State *L, int idx);
void e2bL_new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc);

/* Each object file registers its metatable. */
void e2bL_open_loop(lua_State *L);
void e2bL_open_client(lua_State *L);
void e2bL_open_sbx(lua_State *L);
void e2bL_open_req(lua_State *L);
void e2bL_open_output(lua_State *L);
int e2bL_core_output(lua_State *L);
int e2bL_core_loop(lua_State *L);
int e2bL_core_client(lua_State *L);

#endif
