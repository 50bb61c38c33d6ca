/* envd_fs.c — filesystem.Filesystem: Stat, ListDir, MakeDir, Move, Remove.
 * The work happens in the agent, inside the sandbox's mount namespace, as
 * the call's user. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect_rpc.h"
#include "envd_watch.h"
#include "pjson.h"
#include "sandbox.h"
#include "util.h"

/* Go's text for an errno: glibc's, lowercased at its start ("file exists"). */
static const char *go_errno_text(int err) {
  static __thread char buf[128];
  snprintf(buf, sizeof buf, "%s", strerror(err));
  if (buf[0] >= 'A' && buf[0] <= 'Z') buf[0] = (char)(buf[0] - 'A' + 'a');
  return buf;
}

/* What E2B's envd says for the common failures of each operation (its
 * messages wrap Go's os errors: "lstat <path>: no such file or directory").
 * body: the agent's reply (a ListDir's first missing component, a MakeDir
 * whose first look failed). 1 when err is one of them. */
static int envd_says(rpc_err *e, uint32_t type, int err, const json_t *body, const char *what, const char *dst) {
  const char *missing = json_string_value(json_object_get(body, "missing"));
  /* envd works as root, so it never meets a permission error; the ones
   * e2b-local meets, acting as the call's user, keep their own words */
  if (err == EACCES || err == EPERM) return 0;
  if (err == ENOENT && type == IPC_STAT)
    rpc_fail(e, "not_found", "file not found: lstat %s: no such file or directory", what);
  else if (type == IPC_STAT)
    rpc_fail(e, "internal", "error getting file info: lstat %s: %s", what, go_errno_text(err));
  else if (err == ENOENT && type == IPC_LISTDIR)
    rpc_fail(e, "not_found", "path not found: lstat %s: no such file or directory", missing ? missing : what);
  else if (err == ENOTDIR && type == IPC_LISTDIR)
    rpc_fail(e, "invalid_argument", "path is not a directory: %s", what);
  else if (type == IPC_MKDIR && json_is_true(json_object_get(body, "stat_failed")))
    rpc_fail(e, "internal", "error getting file info: stat %s: %s", what, go_errno_text(err));
  else if (err == EEXIST && type == IPC_MKDIR)
    rpc_fail(e, "already_exists", "directory already exists: %s", what);
  else if (err == ENOTDIR && type == IPC_MKDIR)
    rpc_fail(e, "invalid_argument", "path already exists but it is not a directory: %s", what);
  else if (err == ENOENT && type == IPC_MOVE)
    rpc_fail(e, "not_found", "source file not found: rename %s %s: no such file or directory", what, dst);
  else if (type == IPC_MOVE)
    rpc_fail(e, "internal", "error renaming: rename %s %s: %s", what, dst, go_errno_text(err));
  else if (type == IPC_REMOVE)
    rpc_fail(e, "internal", "error removing file or directory: unlinkat %s: %s", what, go_errno_text(err));
  else
    return 0;
  return 1;
}

static void other_failure(rpc_err *e, const ipc_msg *reply, const char *what) {
  const char *detail = json_string_value(json_object_get(reply->body, "message"));
  if (reply->err == EEXIST)
    rpc_fail(e, "already_exists", "%s: the directory already exists", what);
  else if (reply->err == ENOENT)
    rpc_fail(e, "not_found", "%s: no such file or directory", what);
  else if (reply->err == E2BIG && detail)
    rpc_fail(e, "out_of_range", "%s: %s", what, detail);
  else
    rpc_fail_errno(e, reply->err, what);
}

/* Runs one agent file operation; the agent's reply body is the response.
 * what: the path it acts on; dst: a move's destination (else NULL). */
static int fs_call(rpc_call *c, uint32_t type, json_t *req, json_t **resp, rpc_err *e,
                   const char *what, const char *dst) {
  ipc_msg reply;
  int rc = sandbox_call(c->sb, type, req, &reply);
  json_decref(req);
  if (rc) {
    rpc_fail_errno(e, -rc, what);
    return -1;
  }
  if (reply.err) {
    if (!envd_says(e, type, reply.err, reply.body, what, dst)) other_failure(e, &reply, what);
    ipc_msg_clear(&reply);
    return -1;
  }
  *resp = json_incref(reply.body);
  ipc_msg_clear(&reply);
  return 0;
}

/* Every operation runs as the call's user inside the sandbox (agent_ident.c). */
static json_t *as_user(rpc_call *c, json_t *req) {
  json_object_set_new(req, "uid", json_integer(c->user->uid));
  json_object_set_new(req, "gid", json_integer(c->user->gid));
  return req;
}

static int path_arg(rpc_call *c, const char *field, char **out, rpc_err *e) {
  const char *p = NULL;
  if (pj_string(pj_get(c->msg, field, NULL), "", &p)) {
    rpc_fail(e, "invalid_argument", "field '%s' must be a string", field);
    return -1;
  }
  *out = rpc_resolve_path(c->user, p);
  return 0;
}

/* An operation whose only argument is "path". */
static int path_call(rpc_call *c, int op, json_t **resp, rpc_err *e) {
  char *path;
  if (path_arg(c, "path", &path, e)) return -1;
  int rc = fs_call(c, op, as_user(c, json_pack("{s:s}", "path", path)), resp, e, path, NULL);
  free(path);
  return rc;
}

static int stat_(rpc_call *c, json_t **resp, rpc_err *e) {
  return path_call(c, IPC_STAT, resp, e);
}

static int list_dir(rpc_call *c, json_t **resp, rpc_err *e) {
  char *path;
  uint32_t depth = 1;
  if (pj_uint32(pj_get(c->msg, "depth", NULL), 1, &depth)) {
    rpc_fail(e, "invalid_argument", "depth must be a non-negative integer");
    return -1;
  }
  if (path_arg(c, "path", &path, e)) return -1;
  if (depth == 0) depth = 1;
  if (depth > 1000000) depth = 1000000; /* the agent bounds the walk itself */
  int rc = fs_call(c, IPC_LISTDIR, as_user(c, json_pack("{s:s, s:i}", "path", path, "depth", (int)depth)), resp, e, path,
                   NULL);
  free(path);
  return rc;
}

static int make_dir(rpc_call *c, json_t **resp, rpc_err *e) {
  return path_call(c, IPC_MKDIR, resp, e);
}

static int move(rpc_call *c, json_t **resp, rpc_err *e) {
  char *src, *dst;
  if (path_arg(c, "source", &src, e)) return -1;
  if (path_arg(c, "destination", &dst, e)) {
    free(src);
    return -1;
  }
  int rc = fs_call(c, IPC_MOVE,
                   as_user(c, json_pack("{s:s, s:s}", "source", src, "destination", dst)),
                   resp, e, src, dst);
  free(src);
  free(dst);
  return rc;
}

static int remove_(rpc_call *c, json_t **resp, rpc_err *e) {
  return path_call(c, IPC_REMOVE, resp, e);
}

const rpc_method ENVD_FS_METHODS[] = {
    {"/filesystem.Filesystem/Stat", stat_, NULL, &PB_STAT_REQUEST, &PB_ENTRY_RESPONSE, NULL},
    {"/filesystem.Filesystem/ListDir", list_dir, NULL, &PB_LISTDIR_REQUEST, &PB_LISTDIR_RESPONSE, NULL},
    {"/filesystem.Filesystem/MakeDir", make_dir, NULL, &PB_STAT_REQUEST, &PB_ENTRY_RESPONSE, NULL},
    {"/filesystem.Filesystem/Move", move, NULL, &PB_MOVE_REQUEST, &PB_ENTRY_RESPONSE, NULL},
    {"/filesystem.Filesystem/Remove", remove_, NULL, &PB_STAT_REQUEST, &PB_EMPTY, NULL},
    {"/filesystem.Filesystem/WatchDir", NULL, watch_dir, &PB_WATCH_REQUEST, &PB_WATCH_RESPONSE, NULL},
    {"/filesystem.Filesystem/CreateWatcher", watcher_create, NULL, &PB_WATCH_REQUEST, &PB_CREATE_WATCHER_RESPONSE, NULL},
    {"/filesystem.Filesystem/GetWatcherEvents", watcher_events, NULL, &PB_WATCHER_ID_REQUEST, &PB_WATCHER_EVENTS_RESPONSE, NULL},
    {"/filesystem.Filesystem/RemoveWatcher", watcher_remove, NULL, &PB_WATCHER_ID_REQUEST, &PB_EMPTY, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
