/* test_loop.c — what a host event loop learns from e2b_loop_timeout: nothing
 * scheduled on an idle loop, curl's own timer while a transfer runs, and a
 * retry's backoff while no transfer runs (when a host must not poll). Only
 * loopback sockets this test opens itself. */
#include "internal.h"
#include "loopback.h"
#include "testing.h"

static void idle_loop_has_no_deadline(void) {
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  CHECK(loop != NULL);
  if (!loop) return;
  CHECK(e2b_loop_timeout(loop) == -1);
  CHECK(e2b_loop_step(loop, 0) == 0);
  CHECK(e2b_loop_timeout(loop) == -1);
  e2b_loop_release(loop);
}

/* curl's per-attempt timeout is a deadline the host must honour even if the
 * silent server never makes a socket ready. */
static void running_transfer_has_curls_deadline(void) {
  int port = 0, fd = listen_loopback(&port);
  CHECK(fd >= 0);
  if (fd < 0) return;
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  e2b_client *c = loopback_client(loop, port, E2B_NO_RETRY);
  CHECK(c != NULL);
  e2b_req *req = c ? e2b_sandbox_kill(c, "sbxundertest", &err) : NULL;
  CHECK(req != NULL);
  if (req) {
    for (int i = 0; i < 5; i++) e2b_loop_step(loop, 10);
    CHECK(!e2b_req_done(req));
    CHECK(e2b_loop_active(loop) == 1);
    long next = e2b_loop_timeout(loop);
    CHECK(next >= 0 && next <= 30000);
    CHECK(e2b_req_wait(req, 20) == 0); /* still unanswered: the wait gives up */
    e2b_req_free(req);
    e2b_loop_step(loop, 0);
    CHECK(e2b_loop_active(loop) == 0);
  }
  e2b_client_release(c);
  e2b_loop_release(loop);
  close(fd);
}

/* Between attempts nothing runs: only the backoff timer says when to step. */
static void retry_backoff_is_the_deadline(void) {
  int port = 0, fd = listen_loopback(&port);
  CHECK(fd >= 0);
  if (fd < 0) return;
  close(fd); /* now refused: the call never reached a server, so it is retried */
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  e2b_client *c = loopback_client(loop, port, 3);
  e2b_req *req = c ? e2b_sandbox_kill(c, "sbxundertest", &err) : NULL;
  CHECK(req != NULL);
  if (req) {
    for (int i = 0; i < 200 && !req->xfer.waiting_retry && !e2b_req_done(req); i++)
      e2b_loop_step(loop, 10);
    CHECK(req->xfer.waiting_retry);
    CHECK(loop->transfers == 0); /* no transfer: e2b_loop_active counts the timer alone */
    long next = e2b_loop_timeout(loop);
    CHECK(next >= 0 && next <= 250); /* the first backoff is at most 250 ms */
    e2b_req_free(req);
    CHECK(e2b_loop_timeout(loop) == -1);
  }
  e2b_client_release(c);
  e2b_loop_release(loop);
}

int main(void) {
  RUN(idle_loop_has_no_deadline);
  RUN(running_transfer_has_curls_deadline);
  RUN(retry_backoff_is_the_deadline);
  return TESTING_DONE();
}
