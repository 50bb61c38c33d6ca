/* tplbuild.h — templates built through E2B's template-build API (the SDKs'
 * Template builder): the registry of built templates, their builds and
 * tags (tplbuild.c), the build runner (tplbuild_run.c) and the uploaded
 * COPY archives (tplfiles.c). */
#ifndef EMU_TPLBUILD_H
#define EMU_TPLBUILD_H

#include <jansson.h>
#include <stddef.h>

#include "http.h"
#include "store.h"

typedef struct tb_build tb_build;

/* ---- routes (tplbuild.c) ---- */
int tplbuild_init(const char *state_dir); /* the registry and the archives */
/* Before the sandboxes stop: builds start no more steps. */
void tplbuild_stop(void);
/* After: waits for the builds in flight (their sandboxes are gone). */
void tplbuild_shutdown(void);

/* ---- registry (tplreg.c) ---- */
int tplreg_init(const char *state_dir);
void tplreg_stop(void);
void tplreg_shutdown(void);
/* store_resolve_template, then built templates. */
int tplbuild_resolve_any(const char *ref, tpl_ref *out);
/* A name as E2B's id.ParseName reads it: "[namespace/]alias[:tag]",
 * trimmed and lowercased. 0; -1 invalid (err: E2B's words); -2 another
 * team's namespace (err: E2B's message). */
typedef struct tplreg_name {
  char ns[130], alias[130], tag[130]; /* tag "" when none or "default" */
  int has_tag;
} tplreg_name;
int tplreg_parse_name(const char *input, tplreg_name *p, char *err, size_t cap);
int tplreg_uuid_shaped(const char *s);
/* E2B's ValidateAndDeduplicateTags: a new array, or NULL with err. */
json_t *tplreg_clean_tags(json_t *in, char *err, size_t cap);
int tplreg_string_array(json_t *v, size_t max);
int tplreg_level_rank(const char *level); /* debug 0 … error 3, -1 unknown */
/* Registers a waiting build of p->alias: the v3 response, or NULL with *status and err. */
json_t *tplreg_request(const tplreg_name *p, json_t *tags, int *status, char *err, size_t cap);
/* Starts waiting build bid of template id tid (unless refuse): 0; 1 when it
 * is not waiting; -1 when there is no such build. *out gets the build. */
int tplreg_begin(const char *tid, const char *bid, int refuse, tb_build **out);
/* The status route's body, or NULL for an unknown build. */
json_t *tplreg_status(const char *tid, const char *bid, long long offset, long long limit, int min_level);
int tplreg_known_id(const char *tid);
/* The id of the built template ref names (its name or id, any tag): 0, -ENOENT. */
int tplreg_id_of(const char *ref, char *out, size_t cap);
json_t *tplreg_tags(const char *alias); /* [{tag, buildID, createdAt}] or NULL */
/* Tags the build p's tag names: {tags, buildID}, or NULL with *status and msg. */
json_t *tplreg_tag_assign(const tplreg_name *p, json_t *tags, int *status, char *msg, size_t cap);
int tplreg_tag_remove(const tplreg_name *p, json_t *tags); /* 0, -ENOENT */
/* "name", "name:tag", "local/name[:tag]" or a template id: its tagged,
 * ready build. 0, or -ENOENT. */
int tplbuild_resolve(const char *ref, tpl_ref *out);
/* GET /templates/aliases/{alias} for built templates: 200 with the id in
 * tid (the alias is claimed when its first build is requested, as on E2B),
 * 400/404 with msg, or 0 when no built template goes by that name. */
int tplbuild_alias(const char *ref, char *tid, size_t tcap, char *msg, size_t mcap);
/* 0 (deleted), -ENOENT, or -EBUSY (a build of it is running). */
int tplbuild_delete(const char *ref);

/* Route handlers (control.c routes them; the API key is checked). */
enum MHD_Result tplbuild_h_request(http_req *r);  /* POST /v3/templates */
enum MHD_Result tplbuild_h_v2(http_req *r);       /* POST /v2/templates/{id}/builds/{build} */
enum MHD_Result tplbuild_h_get(http_req *r);      /* GET /templates/{id}/... (status, files, tags) */
enum MHD_Result tplbuild_h_tags_add(http_req *r); /* POST /templates/tags */
enum MHD_Result tplbuild_h_tags_del(http_req *r); /* DELETE /templates/tags */

/* ---- a build's progress, for the runner (tplreg.c) ---- */
/* One log entry; message is cut at 4 KiB, at most 10000 entries are kept. */
void tb_log(tb_build *b, const char *level, const char *step, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The build ended: ok, or failed at step ("base", "1"…, "finalize") with msg.
 * On success files is the result's directory, env its ENV values,
 * start/ready its commands, user and workdir its defaults. */
typedef struct tb_result {
  const char *files;
  json_t *env, *ro_mounts;
  const char *start_cmd, *ready_cmd, *user, *workdir;
} tb_result;
void tb_finish(tb_build *b, const tb_result *ok, const char *step, const char *msg);
/* The build's output directory (<state>/built/<template>/<build>): malloc. */
char *tb_dir(tb_build *b);
int tb_stopping(void);
/* The build's sandbox, so a newer build of the template can cancel it (kill
 * it); NULL before the runner lets go of it. */
struct sandbox;
void tb_attach(tb_build *b, struct sandbox *sb);
int tb_cancelled(tb_build *b);
#define TB_CANCELLED "build was cancelled: a newer build of the template started"

/* ---- the runner (tplbuild_run.c) ---- */
/* Runs spec (the v2 trigger body, validated) for b on a thread of its own. */
void tplbuild_run_start(tb_build *b, json_t *spec, const char *template_id);

/* ---- commands in a sandbox (tplexec.c) ---- */
/* A sandbox from a built template with a start command: the command started
 * in the background as the template's user in its workdir, then its ready
 * command run until it succeeds (at most 30 s). 0, or -1 when the start
 * failed or the ready command never succeeded. */
struct sandbox;
int tplbuild_boot_start(struct sandbox *sb, const tpl_ref *t);

/* ---- uploaded archives (tplfiles.c) ---- */
int tplfiles_init(const char *state_dir);
/* 1 when a files hash is 64 lowercase hex digits. */
int tplfiles_hash_ok(const char *hash);
int tplfiles_present(const char *hash);
/* The upload URL for hash (malloc). */
char *tplfiles_upload_url(const char *hash);
/* PUT /template-files/{hash}?token=… (no API key: the token). */
void tplfiles_route(http_req *r);

#endif
