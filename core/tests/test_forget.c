/* test_forget.c — when kept files are removed: a small output's tag waits
 * for a batch of eight of its user's, a large one (a MiB or more seen by a
 * reader) goes with the next kept command (at once past 64 MiB waiting),
 * and the list of large tags stays bounded, its oldest falling back to the
 * batch; a lone tag goes eight kept commands later. */
#include "internal.h"
#include "loopback.h"
#include "testing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t waiting(const e2b_sbx *s) { return s->forget_count; }
/* The bytes of large output among the names waiting. */
static int64_t waiting_bytes(const e2b_sbx *s) {
  int64_t sum = 0;
  for (size_t i = 0; i < s->forget_count; i++) sum += s->forgets[i].bytes;
  return sum;
}

static void small_outputs_wait_for_a_batch(e2b_sbx *s) {
  for (int i = 0; i < 7; i++) {
    char tag[16];
    snprintf(tag, sizeof tag, "small%d", i);
    CHECK(e2b_kept_large(s, tag, (1 << 20) - 1) == 0);
    e2b_proc_forget_later(s, tag, "user");
  }
  CHECK(waiting(s) == 7);
  CHECK(e2b_take_forgets(s, "user") == NULL); /* seven wait for an eighth */
}

/* A large one (a MiB or more seen by a reader) goes with the next kept
 * command of its user, not after a batch, and costs no request. */
static void large_output_goes_with_the_next_command(e2b_sbx *s, e2b_loop *loop) {
  size_t before = waiting(s), sent = e2b_loop_unattended(loop);
  CHECK(e2b_kept_large(s, "big", 1 << 20) == 1);
  CHECK(e2b_kept_large(s, "big", 3 << 20) == 1); /* its readers saw more: one entry, the larger size */
  CHECK(s->large_count == 1 && s->large_bytes[0] == 3 << 20);
  e2b_proc_forget_later(s, "big", "user");
  CHECK(waiting(s) == before + 1 && waiting_bytes(s) == 3 << 20);
  CHECK(e2b_loop_unattended(loop) == sent);
  CHECK(s->large_count == 0);
  char *names = e2b_take_forgets(s, "user"); /* with the small ones waiting beside it */
  CHECK(names != NULL && strstr(names, "626967") != NULL); /* hex of "big" */
  free(names);
  CHECK(waiting(s) == 0 && waiting_bytes(s) == 0);
}

/* Past FORGET_URGENT_MAX waiting, a large one is removed at once. */
static void large_outputs_past_a_bound_are_removed_at_once(e2b_sbx *s, e2b_loop *loop) {
  size_t sent = e2b_loop_unattended(loop);
  CHECK(e2b_kept_large(s, "b1", (int64_t)40 << 20) == 1);
  CHECK(e2b_kept_large(s, "b2", (int64_t)40 << 20) == 1);
  e2b_proc_forget_later(s, "b1", "user");
  CHECK(waiting(s) == 1 && e2b_loop_unattended(loop) == sent);
  e2b_proc_forget_later(s, "b2", "user");
  CHECK(waiting(s) == 1 && e2b_loop_unattended(loop) > sent);
  free(e2b_take_forgets(s, "user"));
  CHECK(waiting(s) == 0 && waiting_bytes(s) == 0);
}

static void large_list_is_bounded(e2b_sbx *s) {
  for (int i = 0; i < E2B_LARGE_MAX + 4; i++) {
    char tag[16];
    snprintf(tag, sizeof tag, "large%d", i);
    CHECK(e2b_kept_large(s, tag, (int64_t)1 << 30) == 1);
  }
  CHECK(s->large_count == E2B_LARGE_MAX);
  size_t before = waiting(s);
  e2b_proc_forget_later(s, "large0", "user"); /* evicted: waits for the batch, as a small one */
  CHECK(waiting(s) == before + 1 && s->forgets[before].bytes == 0);
  CHECK(strcmp(s->forgets[before].hex, "6c6172676530") == 0); /* hex of "large0" */
  e2b_proc_forget_later(s, "large19", "user"); /* listed, a GiB: past the bound, removed at once */
  CHECK(waiting(s) == before + 1);
  CHECK(s->large_count == E2B_LARGE_MAX - 1);
  e2b_sbx_drop_forgets(s);
  CHECK(waiting(s) == 0);
}

/* A lone name does not wait for seven more: it goes with the eighth kept
 * command started since it began to wait (a run's own files mostly go to
 * the sandbox's sweep, so names come slower than commands). */
static void a_lone_name_goes_after_a_batch_of_commands(e2b_sbx *s) {
  e2b_proc_forget_later(s, "lone", "user");
  for (int i = 1; i < 8; i++) CHECK(e2b_take_forgets(s, "user") == NULL);
  char *names = e2b_take_forgets(s, "user");
  CHECK(names != NULL && strcmp(names, "6c6f6e65") == 0); /* hex of "lone" */
  free(names);
  CHECK(waiting(s) == 0);
  CHECK(e2b_take_forgets(s, "user") == NULL); /* nothing waits: nothing counts */
}

/* A command starting with a tag writes that tag's files again: the name
 * of an earlier command with it leaves the queue (and the large list). */
static void a_reused_tag_leaves_the_queue(e2b_sbx *s) {
  e2b_proc_forget_later(s, "again", "user");
  e2b_proc_forget_later(s, "other", "user");
  CHECK(e2b_kept_large(s, "huge", 1 << 20) == 1);
  size_t large = s->large_count;
  e2b_forget_unqueue(s, "again");
  e2b_forget_unqueue(s, "huge");
  CHECK(waiting(s) == 1 && strcmp(s->forgets[0].hex, "6f74686572") == 0); /* hex of "other" */
  CHECK(s->large_count == large - 1);
}

static void forgetting(void) {
  loopback_env env;
  int rc = loopback_env_open(&env);
  CHECK(rc == 0);
  if (rc == 0) {
    small_outputs_wait_for_a_batch(env.sbx);
    large_output_goes_with_the_next_command(env.sbx, env.loop);
    large_outputs_past_a_bound_are_removed_at_once(env.sbx, env.loop);
    large_list_is_bounded(env.sbx);
    a_lone_name_goes_after_a_batch_of_commands(env.sbx);
    a_reused_tag_leaves_the_queue(env.sbx);
    e2b_sbx_drop_forgets(env.sbx);
  }
  /* The removes went to a peer that is gone by then: they fail and are freed. */
  CHECK(loopback_env_close(&env) == 0);
}

int main(void) {
  RUN(forgetting);
  return TESTING_DONE();
}
