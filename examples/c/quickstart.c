/* quickstart.c — libe2b from C: create a sandbox, stream a command's output
 * as it is written, write a file and read it back, then kill the sandbox.
 *
 *   cc quickstart.c $(pkg-config --cflags --libs e2b) -o quickstart
 *   E2B_API_KEY=... ./quickstart                   # against E2B
 *   e2b-local exec -- ./quickstart                 # against a local e2b-local
 *
 * The client takes its settings from the environment (E2B_API_KEY,
 * E2B_DOMAIN, E2B_API_URL, ...) like the official SDKs. Every call below is
 * one request driven to completion by e2b_req_wait; an event-driven program
 * would call e2b_loop_step from its own loop instead. */
#include <e2b.h>

#include <stdio.h>
#include <string.h>

#define WAIT_MS 120000 /* the longest any one step below may take */

/* Waits for req and reports its failure; returns 0 when it succeeded. */
static int finish(e2b_req *req, const char *what) {
  if (!e2b_req_wait(req, WAIT_MS)) {
    fprintf(stderr, "%s: no answer in %d ms\n", what, WAIT_MS);
    return -1;
  }
  const e2b_error *err = e2b_req_error(req);
  if (err) {
    fprintf(stderr, "%s failed (%s): %s\n", what, e2b_code_name(err->code), err->message);
    return -1;
  }
  return 0;
}

static int fail(const char *what, const e2b_error *err) {
  fprintf(stderr, "%s failed (%s): %s\n", what, e2b_code_name(err->code), err->message);
  return -1;
}

/* Runs a command and prints its stdout while it runs, event by event. */
static int stream_command(e2b_loop *loop, e2b_sbx *sbx) {
  /* A command string, run as E2B runs one (bash -l -c); every field left
   * out of an initialiser is 0, which means its default. */
  e2b_proc_opts opts = {.shell = "for i in 1 2 3; do echo \"line $i\"; sleep 0.2; done"};
  e2b_error err;
  e2b_req *req = e2b_proc_start(sbx, &opts, &err);
  if (!req) return fail("process.start", &err);
  int exit_code = -1, rc;
  e2b_proc_event ev;
  while ((rc = e2b_req_next_event(req, &ev)) >= 0) {
    if (rc == 0) { /* nothing queued: let the transfer progress */
      e2b_loop_step(loop, 1000);
      continue;
    }
    if (ev.type == E2B_EVENT_START) printf("started pid %u\n", (unsigned)ev.pid);
    if (ev.type == E2B_EVENT_STDOUT) printf("stdout: %.*s", (int)ev.len, (const char *)ev.data);
    if (ev.type == E2B_EVENT_END) exit_code = ev.exit_code;
  }
  const e2b_error *end = e2b_req_error(req);
  if (end) rc = fail("process", end);
  else {
    printf("exit code %d\n", exit_code);
    rc = exit_code == 0 ? 0 : -1;
  }
  e2b_req_free(req);
  return rc;
}

/* Uploads text to path, then downloads it and compares. */
static int write_then_read(e2b_sbx *sbx, const char *path, const char *text) {
  e2b_error err;
  e2b_req *w = e2b_file_write(sbx, path, NULL, &err);
  if (!w) return fail("write", &err);
  int rc = e2b_req_send(w, text, strlen(text)) == 0 && e2b_req_send_end(w) == 0 ? 0 : -1;
  if (rc == 0) rc = finish(w, "write");
  if (rc == 0) printf("wrote %s\n", e2b_req_written_path(w));
  e2b_req_free(w);
  if (rc != 0) return rc;

  e2b_req *r = e2b_file_read(sbx, path, NULL, 0, &err);
  if (!r) return fail("read", &err);
  char back[256];
  size_t got = 0;
  const uint8_t *chunk;
  size_t len;
  int more;
  while ((more = e2b_req_next_chunk(r, &chunk, &len)) >= 0) {
    if (more == 0) {
      e2b_loop_step(e2b_req_loop(r), 1000);
      continue;
    }
    if (len > sizeof back - got) len = sizeof back - got; /* this file is small */
    memcpy(back + got, chunk, len);
    got += len;
  }
  rc = e2b_req_error(r) ? fail("read", e2b_req_error(r)) : 0;
  e2b_req_free(r);
  if (rc == 0 && (got != strlen(text) || memcmp(back, text, got) != 0)) {
    fprintf(stderr, "read back %zu bytes that differ from what was written\n", got);
    rc = -1;
  }
  if (rc == 0) printf("read back: %.*s", (int)got, back);
  return rc;
}

/* Creates a sandbox (waiting until it answers), works in it, kills it. */
static int session(e2b_loop *loop, e2b_client *client) {
  /* Zeroed options are E2B's defaults: secure, internet allowed. */
  e2b_provision_opts opts = {.create = {.timeout_ms = 120000}};
  e2b_error err;
  e2b_req *create = e2b_sandbox_provision(client, &opts, &err);
  if (!create) return fail("create", &err);
  if (finish(create, "create") != 0) {
    e2b_req_free(create);
    return -1;
  }
  const e2b_sandbox_info *sb = e2b_req_sandbox(create);
  printf("sandbox %s (template %s)\n", sb->sandbox_id, sb->template_id);
  e2b_sbx *sbx = e2b_sbx_new(client, sb->sandbox_id, sb->envd_access_token, sb->domain, &err);
  int rc = sbx ? 0 : fail("sandbox handle", &err);
  if (rc == 0) rc = stream_command(loop, sbx);
  if (rc == 0) rc = write_then_read(sbx, "/tmp/hello.txt", "hello from libe2b\n");
  e2b_sbx_release(sbx);

  e2b_req *kill = e2b_sandbox_kill(client, sb->sandbox_id, &err);
  if (!kill) rc = fail("kill", &err);
  else if (finish(kill, "kill") != 0) rc = -1;
  else printf("killed %s\n", sb->sandbox_id);
  e2b_req_free(kill);
  e2b_req_free(create);
  return rc;
}

int main(void) {
  printf("libe2b %s (built against %s)\n", e2b_version(), E2B_VERSION);
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  if (!loop) {
    fail("loop", &err);
    return 1;
  }
  e2b_client *client = e2b_client_new(loop, NULL, &err);
  int rc = client ? session(loop, client) : fail("client", &err);
  e2b_client_release(client);
  e2b_loop_release(loop);
  return rc == 0 ? 0 : 1;
}
