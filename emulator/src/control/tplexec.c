/* tplexec.c — commands inside a template build's sandbox: booting it,
 * running a command as root or user with the build's ENV, its output
 * logged line by line as the build's log (lines cut at 4 KiB). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "egress.h"
#include "sandbox.h"
#include "tplbuild_run.h"
#include "util.h"

#define BUILD_TIMEOUT_S 3600
#define STEP_TIMEOUT_MS (30LL * 60 * 1000)
#define LINE_MAX_BYTES 4096
#define BOOT_READY_MS (30LL * 1000) /* well inside the SDKs' 60 s request timeout */
#define CAPTURE_MAX 32768

int tb_user_ids(const char *user, int *uid, int *gid, const char **home) {
  if (strcmp(user, "root") == 0) {
    *uid = *gid = 0;
    *home = "/root";
    return 0;
  }
  if (strcmp(user, "user") == 0) {
    *uid = *gid = 1000;
    *home = "/home/user";
    return 0;
  }
  return -1;
}

/* ---- one command inside the build sandbox, its output logged by line ---- */

typedef struct line_buf {
  tb_build *b;
  const char *step;
  sbuf *capture; /* instead of the log: stdout kept, at most CAPTURE_MAX bytes */
  int overflow;
  char buf[LINE_MAX_BYTES + 1];
  size_t n;
} line_buf;

static void flush_line(line_buf *lb) {
  lb->buf[lb->n] = '\0';
  if (lb->b) tb_log(lb->b, "info", lb->step, "%s", lb->buf); /* none: the output is dropped */
  lb->n = 0;
}

static void feed_lines(line_buf *lb, const char *data, size_t len) {
  if (lb->capture) {
    lb->overflow |= lb->capture->len + len > CAPTURE_MAX;
    if (!lb->overflow) sbuf_append(lb->capture, data, len);
    return;
  }
  for (size_t i = 0; i < len; i++) {
    if (data[i] == '\n') {
      flush_line(lb);
      continue;
    }
    if (data[i] != '\r') lb->buf[lb->n++] = data[i];
    if (lb->n == LINE_MAX_BYTES) flush_line(lb);
  }
}

static json_t *command_env(json_t *vars, const char *user, const char *home) {
  json_t *env = json_array();
  json_array_append_new(env, json_string("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
  json_array_append_new(env, json_pack("s+", "HOME=", home));
  json_array_append_new(env, json_pack("s+", "USER=", user));
  json_array_append_new(env, json_pack("s+", "LOGNAME=", user));
  json_array_append_new(env, json_string("SHELL=/bin/bash"));
  for (const char *const *kv = egress_env(); *kv; kv++) json_array_append_new(env, json_string(*kv));
  const char *k;
  json_t *v;
  json_object_foreach(vars, k, v) json_array_append_new(env, json_pack("s+++", k, "=", json_string_value(v), ""));
  return env;
}

/* Runs argv in sb as user in cwd with vars; its output, by line, is b's log
 * under step (b NULL: dropped). The exit code, or -1. */
static int exec_in(sandbox *sb, json_t *vars, json_t *argv, const char *user, const char *cwd, tb_build *b,
                   const char *step, int64_t timeout_ms, sbuf *capture) {
  int uid, gid;
  const char *home;
  if (tb_user_ids(user, &uid, &gid, &home) != 0) return -1;
  json_t *req = json_pack("{s:O, s:o, s:s, s:i, s:i, s:i}", "argv", argv, "env", command_env(vars, user, home), "cwd",
                          cwd ? cwd : home, "uid", uid, "gid", gid, "stdin", 0);
  json_t *config = json_pack("{s:s}", "cmd", json_string_value(json_array_get(argv, 0)));
  spawn_result sp;
  ipc_msg reply;
  int r = sandbox_spawn(sb, req, config, NULL, mono_ms() + timeout_ms, &sp, &reply);
  json_decref(req);
  json_decref(config);
  if (r || reply.err) {
    if (!r) ipc_msg_clear(&reply);
    return -1;
  }
  ipc_msg_clear(&reply);
  line_buf *lb = xcalloc(1, sizeof *lb);
  lb->b = b;
  lb->step = step;
  lb->capture = capture;
  int status = -1;
  for (;;) {
    proc_event *ev = NULL;
    if (proc_sub_next(sp.sub, -1, -1, &ev) != PSUB_EVENT) break;
    int end = ev->kind == PEV_END;
    if (end) status = ev->status;
    else if (!capture || ev->kind == PEV_STDOUT) feed_lines(lb, (const char *)ev->data, ev->len);
    proc_event_free(sp.sub, ev);
    if (end) break;
  }
  if (lb->n) flush_line(lb);
  int overflow = lb->overflow;
  free(lb);
  proc_unsubscribe(sp.sub);
  proc_unref(sp.p);
  if (overflow) return -1;
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int tb_exec(tb_run *rc, json_t *argv, const char *user, const char *cwd, const char *step) {
  return exec_in(rc->sb, rc->env, argv, user, cwd, rc->b, step, STEP_TIMEOUT_MS, NULL);
}

int tb_capture(tb_run *rc, json_t *argv, const char *user, sbuf *out) {
  return exec_in(rc->sb, rc->env, argv, user, NULL, NULL, NULL, STEP_TIMEOUT_MS, out);
}

/* bash -c script name args… */
int tb_shell(tb_run *rc, const char *script, json_t *args, const char *user, const char *cwd, const char *step) {
  json_t *argv = json_pack("[s, s, s, s]", "/bin/bash", "-c", script, "e2b-build");
  if (args) json_array_extend(argv, args);
  int code = tb_exec(rc, argv, user, cwd, step);
  json_decref(argv);
  return code;
}

sandbox *tb_boot(tb_run *rc, const tpl_ref *t) {
  sandbox_params p = {.tpl = t, .timeout_s = BUILD_TIMEOUT_S, .allow_internet = 1, .public_traffic = 1,
                      .auto_pause_memory = 1, .hidden = 1};
  const char *err = NULL;
  sandbox *sb = sandbox_create(&p, &err);
  if (!sb) snprintf(rc->err, sizeof rc->err, "cannot start the build sandbox: %.200s", err ? err : "?");
  else tb_attach(rc->b, sb);
  return sb;
}


/* ---- a built template's start command, at each sandbox's boot ---- */

int tplbuild_boot_start(sandbox *sb, const tpl_ref *t) {
  if (!t->start_cmd) return 0;
  const char *user = t->start_user ? t->start_user : "user";
  json_t *argv = json_pack("[s, s, s, s, s]", "/bin/bash", "-c", "nohup /bin/bash -c \"$1\" >/dev/null 2>&1 &",
                           "e2b-start", t->start_cmd);
  int code = exec_in(sb, sb->env_vars, argv, user, t->start_cwd, NULL, NULL, 10000, NULL);
  json_decref(argv);
  if (code != 0 || !t->ready_cmd) return code == 0 ? 0 : -1;
  int64_t until = mono_ms() + BOOT_READY_MS;
  argv = json_pack("[s, s, s]", "/bin/bash", "-c", t->ready_cmd);
  while ((code = exec_in(sb, sb->env_vars, argv, user, t->start_cwd, NULL, NULL, BOOT_READY_MS, NULL)) != 0 &&
         mono_ms() < until)
    usleep(200 * 1000);
  json_decref(argv);
  return code == 0 ? 0 : -1;
}
