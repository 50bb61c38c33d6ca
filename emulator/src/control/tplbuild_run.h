/* tplbuild_run.h — the state of one running template build, shared by the
 * runner (tplbuild_run.c) and its steps and cache (tplbuild_steps.c). */
#ifndef EMU_TPLBUILD_RUN_H
#define EMU_TPLBUILD_RUN_H

#include <jansson.h>

#include "sandbox.h"
#include "store.h"
#include "tplbuild.h"
#include "util.h"

typedef struct tb_run {
  tb_build *b;
  json_t *spec;      /* the v2 trigger body */
  sandbox *sb;       /* the build sandbox, once booted */
  json_t *env;       /* ENV so far {key: value} */
  json_t *ro_mounts; /* the base's read-only mounts, kept by the result */
  char user[16];     /* USER so far */
  char *workdir;     /* WORKDIR so far, or NULL (the user's home) */
  char template_id[24];
  char failed_step[16];
  char err[600];
  int64_t started_ms; /* mono_ms() when the build began: its log's last line says how long */
  int done;
} tb_run;

/* root and user only: a sandbox's /etc/passwd has no one else. */
int tb_user_ids(const char *user, int *uid, int *gid, const char **home);
int tb_exec(tb_run *rc, json_t *argv, const char *user, const char *cwd, const char *step);
/* Runs argv as user; its stdout (at most 32 KiB, else -1) into out. The exit code, or -1. */
int tb_capture(tb_run *rc, json_t *argv, const char *user, sbuf *out);
int tb_shell(tb_run *rc, const char *script, json_t *args, const char *user, const char *cwd, const char *step);
sandbox *tb_boot(tb_run *rc, const tpl_ref *t);
/* Boots the sandbox (from base, or from the longest cached prefix) and runs
 * the steps not cached, caching each. 0, or -1 with rc->err/failed_step. */
int tb_run_steps(tb_run *rc, const tpl_ref *base);
/* COPY (tplfiles.c): the uploaded archive of filesHash, unpacked in the
 * sandbox and moved to the destination as Docker's COPY does. */
int tb_step_copy(tb_run *rc, json_t *step, const char *label);
/* Copies the sandbox's home, root and tmp to dst (made). 0 or -1. */
int tb_save_tree(sandbox *sb, const char *dst);

#endif
