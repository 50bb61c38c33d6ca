/* templates.c — builds the operator's script templates when e2b-local
 * starts: each script runs once, as root, in a fresh hidden sandbox made from
 * "base"; what it leaves in /home/user, /root and /tmp becomes the template. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "sandbox.h"
#include "store.h"
#include "templates.h"
#include "util.h"

#define BUILD_TIMEOUT_S 1800

static int run_setup(sandbox *sb, int log_fd) {
  json_t *req = json_pack("{s:[s,s], s:[s,s,s,s,s], s:s, s:i, s:i, s:b}", "argv", "/bin/bash",
                          "/tmp/.e2b-template-setup", "env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                          "HOME=/root", "USER=root", "LOGNAME=root", "SHELL=/bin/bash", "cwd", "/root", "uid", 0, "gid",
                          0, "stdin", 0);
  json_t *env = json_object_get(req, "env");
  for (const char *const *kv = egress_env(); *kv; kv++) json_array_append_new(env, json_string(*kv));
  json_t *config = json_pack("{s:s}", "cmd", "/bin/bash");
  spawn_result sp;
  ipc_msg reply;
  int rc = sandbox_spawn(sb, req, config, NULL, mono_ms() + (int64_t)BUILD_TIMEOUT_S * 1000, &sp, &reply);
  json_decref(req);
  json_decref(config);
  if (rc || reply.err) {
    if (!rc) ipc_msg_clear(&reply);
    return -1;
  }
  ipc_msg_clear(&reply);
  int status = -1;
  for (;;) {
    proc_event *ev = NULL;
    if (proc_sub_next(sp.sub, -1, -1, &ev) != PSUB_EVENT) break;
    if (ev->kind == PEV_END) {
      status = ev->status;
      proc_event_free(sp.sub, ev);
      break;
    }
    if (write_all(log_fd, ev->data, ev->len) != 0) {
      /* the log is best effort */
    }
    proc_event_free(sp.sub, ev);
  }
  proc_unsubscribe(sp.sub);
  proc_unref(sp.p);
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int build_one(const char *name, const char *script, const char *files) {
  tpl_ref base;
  store_resolve_template("base", &base);
  sandbox_params p = {.tpl = &base, .timeout_s = BUILD_TIMEOUT_S, .allow_internet = 1, .public_traffic = 1,
                      .auto_pause_memory = 1, .hidden = 1};
  const char *err = NULL;
  sandbox *sb = sandbox_create(&p, &err);
  tpl_ref_free(&base);
  if (!sb) {
    log_msg("template %s: cannot start a build sandbox: %s", name, err ? err : "?");
    return -1;
  }
  char *dst = xasprintf("%s/tmp/.e2b-template-setup", sb->dir);
  char *logp = xasprintf("%s/../build.log", files);
  int rc = -1;
  int src = open(script, O_RDONLY | O_CLOEXEC);
  int log_fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  sbuf text = {0};
  char buf[65536];
  ssize_t n;
  while (src >= 0 && (n = read(src, buf, sizeof buf)) > 0) sbuf_append(&text, buf, (size_t)n);
  if (src >= 0 && write_file(dst, text.data ? text.data : "", text.len, 0755) == 0) {
    int code = run_setup(sb, log_fd >= 0 ? log_fd : 2);
    unlink(dst);
    if (code == 0) {
      sandbox_pause(sb, 0); /* processes end; the files stay still while copied */
      static const char *dirs[] = {"home", "root", "tmp"};
      rc = 0;
      for (int i = 0; i < 3 && rc == 0; i++) {
        char *from = xasprintf("%s/%s", sb->dir, dirs[i]);
        char *to = xasprintf("%s/%s", files, dirs[i]);
        rc = copy_tree(from, to);
        free(from);
        free(to);
      }
    } else {
      log_msg("template %s: setup script %s failed (exit %d); its output is in %s", name, script, code, logp);
    }
  }
  if (src >= 0) close(src);
  if (log_fd >= 0) close(log_fd);
  sbuf_free(&text);
  sandbox_kill(sb);
  sandbox_unref(sb);
  free(dst);
  free(logp);
  return rc;
}

int templates_build_all(void) {
  json_t *pending = store_pending_builds();
  int failed = 0;
  for (size_t i = 0; i < json_array_size(pending); i++) {
    json_t *t = json_array_get(pending, i);
    const char *name = json_string_value(json_object_get(t, "name"));
    log_msg("template %s: building (setup script)", name);
    int rc = build_one(name, json_string_value(json_object_get(t, "script")), json_string_value(json_object_get(t, "files")));
    store_template_built(name, NULL, rc == 0);
    if (rc == 0)
      log_msg("template %s: ready", name);
    else
      failed++;
  }
  json_decref(pending);
  return failed ? -1 : 0;
}
