/* tplbuild_run.c — runs one template build: a hidden sandbox from the base
 * (fromTemplate, or the e2bdev/base image that base stands for), each step
 * inside it (RUN, COPY, ENV, WORKDIR, USER) with its output as the build's
 * log, the start and ready commands, then the sandbox's files kept as the
 * build's result. Steps are cached by a chain of hashes (tplbuild_steps.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "sandbox.h"
#include "tplbuild.h"
#include "tplbuild_run.h"
#include "util.h"

#define READY_TIMEOUT_MS (5LL * 60 * 1000)

/* ---- the base ---- */

/* The template a build starts from: fromTemplate, or fromImage when it is
 * the image base stands for (no image is ever pulled). */
static int resolve_base(tb_run *rc, tpl_ref *out) {
  const char *from_tpl = json_string_value(json_object_get(rc->spec, "fromTemplate"));
  const char *img = json_string_value(json_object_get(rc->spec, "fromImage"));
  if (from_tpl) {
    if (tplbuild_resolve_any(from_tpl, out) == 0) return 0;
    snprintf(rc->err, sizeof rc->err, "template '%.200s' not found", from_tpl);
    return -1;
  }
  if (img && (strcmp(img, "e2bdev/base") == 0 || strcmp(img, "e2bdev/base:latest") == 0))
    return store_resolve_template("base", out);
  snprintf(rc->err, sizeof rc->err,
           "failed to pull image '%.200s': e2b-local builds offline and has no images; start from a local template "
           "(fromTemplate, e.g. 'base'; e2bdev/base is base)",
           img ? img : "");
  return -1;
}

/* ---- start and ready commands ---- */

static int start_and_ready(tb_run *rc) {
  const char *start = json_string_value(json_object_get(rc->spec, "startCmd"));
  const char *ready = json_string_value(json_object_get(rc->spec, "readyCmd"));
  if (start) {
    tb_log(rc->b, "info", "finalize", "[finalize] start command: %.2000s", start);
    json_t *args = json_pack("[s]", start);
    /* in the background: its output is not waited for */
    int code = tb_shell(rc, "nohup /bin/bash -c \"$1\" >/dev/null 2>&1 &", args, rc->user, rc->workdir, "finalize");
    json_decref(args);
    if (code != 0) {
      snprintf(rc->err, sizeof rc->err, "failed to start the start command (exit %d)", code);
      return -1;
    }
  }
  if (!ready) return 0;
  tb_log(rc->b, "info", "finalize", "[finalize] waiting for the ready command: %.2000s", ready);
  int64_t until = mono_ms() + READY_TIMEOUT_MS;
  for (;;) {
    json_t *args = json_pack("[s]", ready);
    int code = tb_shell(rc, "/bin/bash -c \"$1\"", args, rc->user, rc->workdir, "finalize");
    json_decref(args);
    if (code == 0) return 0;
    if (mono_ms() > until || tb_stopping() || tb_cancelled(rc->b)) break;
    usleep(500 * 1000);
  }
  snprintf(rc->err, sizeof rc->err, "the ready command did not succeed within %lld s", READY_TIMEOUT_MS / 1000);
  return -1;
}

/* ---- the whole build ---- */

/* A duration as E2B's builder logs it (Go's Duration truncated to seconds:
 * "0s", "42s", "3m5s", "1h0m7s"). */
static const char *go_seconds(char *out, size_t cap, int64_t ms) {
  int64_t s = ms > 0 ? ms / 1000 : 0;
  if (s >= 3600)
    snprintf(out, cap, "%lldh%lldm%llds", (long long)(s / 3600), (long long)(s % 3600 / 60), (long long)(s % 60));
  else if (s >= 60)
    snprintf(out, cap, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
  else
    snprintf(out, cap, "%llds", (long long)s);
  return out;
}

static int keep_result(tb_run *rc) {
  char *dir = tb_dir(rc->b);
  char *files = xasprintf("%s/files", dir);
  int r = tb_save_tree(rc->sb, files);
  if (r == 0) {
    tb_result res = {.files = files, .env = rc->env, .ro_mounts = rc->ro_mounts, .start_cmd = json_string_value(json_object_get(rc->spec, "startCmd")),
                     .ready_cmd = json_string_value(json_object_get(rc->spec, "readyCmd")), .user = rc->user,
                     .workdir = rc->workdir};
    char took[32];
    tb_log(rc->b, "info", NULL, "Build finished, took %s", go_seconds(took, sizeof took, mono_ms() - rc->started_ms));
    tb_finish(rc->b, &res, NULL, NULL); /* the last use of rc->b: the registry may drop it from now on */
  } else {
    snprintf(rc->err, sizeof rc->err, "cannot keep the build's files");
  }
  free(files);
  free(dir);
  return r;
}

static void run_build(tb_run *rc) {
  tpl_ref base = {0};
  rc->started_ms = mono_ms();
  rc->env = json_object();
  snprintf(rc->user, sizeof rc->user, "user");
  snprintf(rc->failed_step, sizeof rc->failed_step, "base");
  tb_log(rc->b, "info", NULL, "Building template %s", rc->template_id);
  if (resolve_base(rc, &base) != 0) goto out;
  if (json_is_object(base.env_vars)) json_object_update(rc->env, base.env_vars); /* a built template's ENV, a snapshot's envs */
  rc->ro_mounts = json_deep_copy(base.ro_mounts);
  if (base.start_user) snprintf(rc->user, sizeof rc->user, "%s", base.start_user);
  if (base.start_cwd) rc->workdir = xstrdup(base.start_cwd);
  if (tb_run_steps(rc, &base) != 0) goto out;
  snprintf(rc->failed_step, sizeof rc->failed_step, "finalize");
  if (start_and_ready(rc) != 0) goto out;
  sandbox_pause(rc->sb, 0); /* processes end; the files stay still while copied */
  if (keep_result(rc) != 0) goto out;
  rc->done = 1;
out:
  if (!rc->done && tb_cancelled(rc->b)) snprintf(rc->err, sizeof rc->err, "%s", TB_CANCELLED);
  if (!rc->done) {
    tb_log(rc->b, "error", rc->failed_step, "Build failed: %s", rc->err);
    tb_finish(rc->b, NULL, rc->failed_step, rc->err);
  }
  tpl_ref_free(&base);
}

static void *build_thread(void *arg) {
  tb_run *rc = arg;
  run_build(rc); /* its tb_finish detached the sandbox from the build */
  if (rc->sb) {
    sandbox_kill(rc->sb);
    sandbox_unref(rc->sb);
  }
  json_decref(rc->spec);
  json_decref(rc->env);
  json_decref(rc->ro_mounts);
  free(rc->workdir);
  free(rc);
  return NULL;
}

void tplbuild_run_start(tb_build *b, json_t *spec, const char *template_id) {
  tb_run *rc = xcalloc(1, sizeof *rc);
  rc->b = b;
  rc->spec = json_deep_copy(spec);
  snprintf(rc->template_id, sizeof rc->template_id, "%s", template_id);
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &a, build_thread, rc) != 0) {
    tb_finish(b, NULL, "base", "cannot start the build thread");
    json_decref(rc->spec);
    free(rc);
  }
  pthread_attr_destroy(&a);
}

