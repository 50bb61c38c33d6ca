/* test_kinds.c — every request says what its result is (e2b_req_result_kind)
 * from the moment it is made, so a caller holding only the request (a
 * binding) picks the right accessors. Nothing is sent: the client points at
 * a loopback socket this test opens and never answers, and the loop is never
 * stepped. */
#include "e2b.h"
#include "loopback.h"
#include "testing.h"

#include <stdio.h>

/* Checks that req was made and says kind, then frees it. */
static void expect(e2b_req *req, e2b_result_kind kind, const char *what) {
  CHECK(req != NULL);
  if (!req) {
    fprintf(stderr, "  %s: not made\n", what);
    return;
  }
  if (e2b_req_result_kind(req) != kind)
    fprintf(stderr, "  %s: kind %d, want %d\n", what, (int)e2b_req_result_kind(req), (int)kind);
  CHECK(e2b_req_result_kind(req) == kind);
  e2b_req_free(req);
}

static void control_plane_kinds(e2b_client *c) {
  e2b_error err;
  expect(e2b_sandbox_create(c, NULL, &err), E2B_RESULT_SANDBOX, "create");
  expect(e2b_sandbox_connect(c, "sbx", 0, &err), E2B_RESULT_SANDBOX, "connect");
  expect(e2b_sandbox_get(c, "sbx", &err), E2B_RESULT_SANDBOX, "get");
  expect(e2b_sandbox_describe(c, "sbx", &err), E2B_RESULT_SANDBOX, "describe");
  expect(e2b_sandbox_attach(c, "sbx", 0, &err), E2B_RESULT_SANDBOX, "attach");
  expect(e2b_sandbox_resume(c, "sbx", 0, &err), E2B_RESULT_SANDBOX, "resume");
  expect(e2b_sandbox_list(c, NULL, &err), E2B_RESULT_SANDBOXES, "list");
  expect(e2b_sandbox_find(c, NULL, &err), E2B_RESULT_SANDBOXES, "find");
  expect(e2b_sandbox_fork(c, "sbx", 0, 1, &err), E2B_RESULT_SANDBOXES, "fork");
  expect(e2b_sandbox_reap(c, "owner", 0, &err), E2B_RESULT_SANDBOXES, "reap");
  expect(e2b_sandbox_reap_preview(c, "owner", 0, &err), E2B_RESULT_SANDBOXES, "reap_preview");
  expect(e2b_sandbox_kill(c, "sbx", &err), E2B_RESULT_NONE, "kill");
  expect(e2b_sandbox_destroy(c, "sbx", &err), E2B_RESULT_NONE, "destroy");
  expect(e2b_sandbox_set_timeout(c, "sbx", 1000, &err), E2B_RESULT_NONE, "set_timeout");
  expect(e2b_sandbox_keep_alive(c, "sbx", 1000, &err), E2B_RESULT_NONE, "keep_alive");
  expect(e2b_sandbox_pause(c, "sbx", 1, &err), E2B_RESULT_NONE, "pause");
  e2b_network net = {0};
  expect(e2b_sandbox_set_network(c, "sbx", &net, &err), E2B_RESULT_NONE, "set_network");
  expect(e2b_snapshot_create(c, "sbx", "snap", &err), E2B_RESULT_SNAPSHOTS, "snapshot");
  expect(e2b_snapshot_list(c, NULL, &err), E2B_RESULT_SNAPSHOTS, "snapshots");
  expect(e2b_snapshot_delete(c, "snap", &err), E2B_RESULT_NONE, "delete_snapshot");
  expect(e2b_volume_create(c, "vol", &err), E2B_RESULT_VOLUMES, "create_volume");
  expect(e2b_volume_list(c, &err), E2B_RESULT_VOLUMES, "volumes");
  expect(e2b_volume_delete(c, "vol", &err), E2B_RESULT_NONE, "delete_volume");
  expect(e2b_doctor(c, &err), E2B_RESULT_DOCTOR, "doctor");
  expect(e2b_verify_egress(c, NULL, &err), E2B_RESULT_EGRESS, "verify_egress");
  e2b_provision_opts po = {0};
  expect(e2b_sandbox_provision(c, &po, &err), E2B_RESULT_SANDBOX, "provision");
}

static void envd_kinds(e2b_sbx *s) {
  e2b_error err;
  e2b_proc_opts po = {0};
  po.cmd = "true";
  expect(e2b_proc_start(s, &po, &err), E2B_RESULT_STREAM, "start");
  expect(e2b_proc_connect(s, 1, NULL, 0, &err), E2B_RESULT_STREAM, "connect");
  expect(e2b_proc_track(s, &po, 0, &err), E2B_RESULT_STREAM, "track");
  expect(e2b_proc_attach(s, 0, "tag", 0, 0, 0, &err), E2B_RESULT_STREAM, "attach");
  expect(e2b_file_read(s, "/f", NULL, 0, &err), E2B_RESULT_STREAM, "read");
  expect(e2b_file_write(s, "/f", NULL, &err), E2B_RESULT_WRITTEN, "write");
  expect(e2b_proc_list(s, &err), E2B_RESULT_PROCS, "processes");
  expect(e2b_fs_stat(s, "/f", NULL, &err), E2B_RESULT_ENTRY, "stat");
  expect(e2b_fs_mkdir(s, "/d", NULL, &err), E2B_RESULT_ENTRY, "mkdir");
  expect(e2b_fs_move(s, "/f", "/g", NULL, &err), E2B_RESULT_ENTRY, "move");
  expect(e2b_fs_list(s, "/d", 1, NULL, &err), E2B_RESULT_ENTRIES, "list");
  expect(e2b_fs_remove(s, "/f", NULL, &err), E2B_RESULT_NONE, "remove");
  expect(e2b_envd_health(s, &err), E2B_RESULT_NONE, "health");
  expect(e2b_proc_send_input(s, 1, NULL, "x", 1, 0, &err), E2B_RESULT_NONE, "send_input");
  expect(e2b_proc_close_stdin(s, 1, NULL, &err), E2B_RESULT_NONE, "close_stdin");
  expect(e2b_proc_signal(s, 1, NULL, 15, &err), E2B_RESULT_NONE, "signal");
  expect(e2b_proc_resize(s, 1, NULL, 80, 24, &err), E2B_RESULT_NONE, "resize");
  expect(e2b_proc_forget(s, "tag", &err), E2B_RESULT_NONE, "forget");
}

static void every_request_says_its_kind(void) {
  loopback_env env;
  int rc = loopback_env_open(&env);
  CHECK(rc == 0);
  if (rc == 0) {
    control_plane_kinds(env.client);
    envd_kinds(env.sbx);
  }
  loopback_env_close(&env);
}

int main(void) {
  RUN(every_request_says_its_kind);
  return TESTING_DONE();
}
