/* store.h — what outlives sandboxes, on disk under the state directory:
 * operator templates (state/templates), snapshots (state/snapshots) and
 * volumes (state/volumes). */
#ifndef EMU_STORE_H
#define EMU_STORE_H

#include <jansson.h>
#include <stddef.h>

#define TEAM_NAMESPACE "local"

int store_init(const char *state_dir);
void store_shutdown(void);
const char *store_state_dir(void);

/* Reads a meta.json written by an earlier run: NULL unless it is a regular
 * file (not a symlink) of at most 1 MiB holding a JSON object. Everything
 * under the state directory is read back as untrusted. */
json_t *store_load_meta(const char *path);
/* 1 when v is an array of mounts {src, dst: absolute paths, ro: boolean}. */
int store_mounts_valid(json_t *v);
/* 1 when path is a directory itself (not a symlink to one). */
int store_is_dir(const char *path);

/* ---- templates -------------------------------------------------------------
 * "base" is the host's own userland. An operator adds more with
 * --template NAME=PATH: a directory (its home/user, root and tmp seed the
 * sandbox's; every other top-level directory is mounted read-only at the same
 * path), or an executable setup script run once as root in a fresh sandbox
 * when e2b-local starts (its files become the template). */
int store_register_template(const char *spec, char *err, size_t errcap);
/* The names of the script templates still to build (store_template_built after). */
json_t *store_pending_builds(void); /* [{name, script}] */
void store_template_built(const char *name, const char *files_dir, int ok);

/* What a sandbox starts from. */
typedef struct tpl_ref {
  char *template_id; /* as reported by the API */
  char *alias;       /* template alias / snapshot name, or NULL */
  char *files;       /* directory holding home/, tmp/, root/ to copy, or NULL */
  json_t *ro_mounts; /* [{src,dst,ro:true}] (never NULL) */
  json_t *env_vars;  /* a snapshot's: its sandbox's env vars; a built template's ENV */
  int env_defaults;  /* env_vars are defaults the create's envVars add to (built templates) */
  char *start_cmd, *ready_cmd; /* a built template's start and ready commands, run at each create, or NULL */
  char *start_user, *start_cwd; /* its user and directory (NULL: user, its home) */
} tpl_ref;
/* base, the operator's templates and snapshots: 0, or -ENOENT for an
 * unknown template (tplbuild_resolve_any adds built templates). */
int store_resolve_template(const char *ref, tpl_ref *out);
/* Whoever removes a directory store_seed may be copying from holds this
 * (1: take it for writing, 0: release it). */
void store_files_lock(int take);
void tpl_ref_free(tpl_ref *t);
/* Copies the template's files into a new sandbox directory. 0 or -1. */
int store_seed(const tpl_ref *t, const char *dst);

/* ---- snapshots ---- */
/* Copies the sandbox directory's home/, tmp/ and root/ (the caller keeps the
 * sandbox still) and keeps its env vars. Returns SnapshotInfo, or NULL with *err. */
json_t *store_snapshot_create(const char *sandbox_id, const char *name, const char *sandbox_dir,
                              json_t *ro_mounts, json_t *env_vars, const char **err);
/* SnapshotInfo[] newest first; *next gets the next page's token (malloc) or NULL. */
json_t *store_snapshot_list(const char *sandbox_id, const char *name, long limit, const char *token,
                            char **next, const char **err);
/* 0, -ENOENT. */
int store_snapshot_delete(const char *ref);

/* ---- volumes ---- */
json_t *store_volume_create(const char *name, int *status, const char **err);
json_t *store_volume_list(void);
json_t *store_volume_get(const char *id);        /* VolumeAndToken or NULL */
char *store_volume_dir_by_name(const char *name); /* host directory or NULL */
char *store_volume_name_by_id(const char *id);   /* NULL when unknown */
/* The data directory of volume id when token is its token (compared in
 * constant time); else NULL with *status 404 (no such volume) or 401. */
char *store_volume_dir_by_token(const char *id, const char *token, int *status);
int store_volume_delete(const char *id);         /* 0, -ENOENT */

#endif
