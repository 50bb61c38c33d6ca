/* test_startq.c — process starts in flight: the first E2B_STARTS_IN_FLIGHT
 * take a slot at once, later ones queue in order, an answered start hands
 * its slot to the first in the queue (kicking its op), a queued start that
 * goes away leaves the queue, and an owned copy of the options outlives the
 * caller's. No network: ops here have no transfer. */
#include "internal.h"
#include "testing.h"

#include <stdlib.h>

static void no_advance(e2b_req *op) { (void)op; }
static const e2b_op_kind no_state = {.size = sizeof(int)};

#define EXTRA 5

static void test_slots_queue_and_hand_over(void) {
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  CHECK(loop != NULL);
  e2b_config cfg = {.api_key = "test-key", .api_url = "http://127.0.0.1:1"};
  e2b_client *c = loop ? e2b_client_new(loop, &cfg, &err) : NULL; /* its loop is the ops' */
  CHECK(c != NULL);
  if (!c) return;
  size_t n = E2B_STARTS_IN_FLIGHT + EXTRA;
  e2b_start_wait *w = calloc(n, sizeof *w);
  e2b_req **ops = calloc(n, sizeof *ops);
  int took = 0;
  for (size_t i = 0; i < n; i++) {
    ops[i] = e2b_op_new(&no_state, c, NULL, "test", no_advance, NULL, &err);
    w[i].op = ops[i];
    took += e2b_startq_take(loop, &w[i]);
  }
  CHECK(took == E2B_STARTS_IN_FLIGHT);
  CHECK(loop->starts == E2B_STARTS_IN_FLIGHT);
  CHECK(w[E2B_STARTS_IN_FLIGHT].queued && !w[E2B_STARTS_IN_FLIGHT].slot);
  CHECK(e2b_startq_take(loop, &w[E2B_STARTS_IN_FLIGHT]) == 0); /* asking again keeps its place */
  /* The second queued start goes away: it leaves the queue, nothing else moves. */
  e2b_startq_release(loop, &w[E2B_STARTS_IN_FLIGHT + 1]);
  CHECK(!w[E2B_STARTS_IN_FLIGHT + 1].queued && loop->starts == E2B_STARTS_IN_FLIGHT);
  /* An answered start hands its slot to the first queued one. */
  e2b_startq_release(loop, &w[0]);
  CHECK(!w[0].slot);
  CHECK(w[E2B_STARTS_IN_FLIGHT].slot && !w[E2B_STARTS_IN_FLIGHT].queued);
  CHECK(e2b_startq_take(loop, &w[E2B_STARTS_IN_FLIGHT]) == 1);
  CHECK(loop->starts == E2B_STARTS_IN_FLIGHT);
  /* Then in order: the next release skips the one that left. */
  e2b_startq_release(loop, &w[1]);
  CHECK(w[E2B_STARTS_IN_FLIGHT + 2].slot && !w[E2B_STARTS_IN_FLIGHT + 1].slot);
  for (size_t i = 0; i < n; i++) e2b_startq_release(loop, &w[i]);
  CHECK(loop->starts == 0 && loop->start_head == NULL && loop->start_tail == NULL);
  for (size_t i = 0; i < n; i++) e2b_req_free(ops[i]);
  free(ops);
  free(w);
  e2b_client_release(c);
  e2b_loop_release(loop);
}

static void test_opts_copy_is_deep(void) {
  char cmd[] = "sh", a0[] = "-c", a1[] = "echo hi", key[] = "K", val[] = "v", cwd[] = "/tmp";
  const char *args[] = {a0, a1};
  e2b_kv env[] = {{key, val}};
  e2b_proc_opts o = {.cmd = cmd, .args = args, .arg_count = 2, .env = env, .env_count = 1,
                     .cwd = cwd, .user = NULL, .tag = NULL, .timeout_ms = 1234};
  e2b_proc_opts *d = e2b_proc_opts_dup(&o);
  CHECK(d != NULL);
  if (!d) return;
  cmd[0] = a0[0] = a1[0] = key[0] = val[0] = cwd[0] = 'X'; /* the caller's memory changes */
  CHECK_STR(d->cmd, "sh");
  CHECK(d->arg_count == 2);
  CHECK_STR(d->args[0], "-c");
  CHECK_STR(d->args[1], "echo hi");
  CHECK(d->env_count == 1);
  CHECK_STR(d->env[0].key, "K");
  CHECK_STR(d->env[0].value, "v");
  CHECK_STR(d->cwd, "/tmp");
  CHECK(d->user == NULL && d->tag == NULL && d->timeout_ms == 1234);
  e2b_proc_opts_free(d);
  e2b_proc_opts empty = {.cmd = "true"};
  d = e2b_proc_opts_dup(&empty);
  CHECK(d && d->args == NULL && d->env == NULL && d->arg_count == 0);
  e2b_proc_opts_free(d);
}

int main(void) {
  RUN(test_slots_queue_and_hand_over);
  RUN(test_opts_copy_is_deep);
  return TESTING_DONE();
}
