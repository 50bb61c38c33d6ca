/* step.c — stepping the loop: firing due timers, letting curl perform,
 * handing finished transfers back to their requests, and the notification
 * round; the blocking wait on one request. Nothing here blocks inside a
 * transfer: waiting happens only in e2b_events_wait, at the caller's
 * request, and never past the next timer, ours or curl's. It sits at the top of the
 * transport and calls down by name: req.c for timers and unattended
 * requests, transfer.c for finished transfers. */
#include "internal.h"

#include <stdint.h>

/* ms until the next of our own timers (-1: none). */
static long timers_timeout(const e2b_loop *loop) {
  int64_t next = 0;
  for (size_t i = 0; i < loop->timer_count; i++)
    if (!next || loop->timers[i]->timer_at_ms < next) next = loop->timers[i]->timer_at_ms;
  if (!next) return -1;
  int64_t left = next - e2b_now_ms();
  return left > 0 ? (long)left : 0;
}

static void fire_timers(e2b_loop *loop) {
  int64_t now = e2b_now_ms();
  size_t i = 0;
  while (i < loop->timer_count) {
    e2b_req *req = loop->timers[i];
    if (req->timer_at_ms > now) {
      i++;
      continue;
    }
    loop->timers[i] = loop->timers[--loop->timer_count];
    req->timer_at_ms = 0;
    e2b_req_timer_fired(req);
  }
}

/* Delivered after curl returns, never from inside a curl callback, so a
 * notified caller may freely pause, unpause or cancel. A composite advances
 * before its own notification, so one round settles whole cascades. */
static int flush_notifications(e2b_loop *loop) {
  int n = 0;
  while (loop->dirty) {
    e2b_req *req = loop->dirty;
    loop->dirty = req->dirty_next;
    req->dirty = 0;
    req->dirty_next = NULL;
    n++;
    if (req->advance && !req->done) req->advance(req);
    if (req->parent)
      e2b_req_mark_dirty(req->parent);
    else if (req->notify)
      req->notify(req, req->notify_ud);
    if (req->autofree && req->done) e2b_req_free(req);
  }
  return n;
}

static void drain_completions(e2b_loop *loop) {
  CURLMsg *msg;
  int left;
  while ((msg = curl_multi_info_read(loop->multi, &left))) {
    if (msg->msg != CURLMSG_DONE) continue;
    e2b_req *req = NULL;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&req);
    CURLcode rc = msg->data.result;
    curl_multi_remove_handle(loop->multi, msg->easy_handle);
    e2b_loop_count_transfer(loop, -1);
    req->xfer.added = 0;
    e2b_transfer_completed(req, rc);
  }
}

/* *ready: how many of curl's sockets were ready. */
static int perform(e2b_loop *loop, int *ready) {
  fire_timers(loop);
  *ready = e2b_events_perform(loop);
  drain_completions(loop);
  return flush_notifications(loop);
}

/* libcurl moves one buffer per transfer and action: a 3.6 MB upload is ~60
 * of them. Performing again while a socket was ready (bounded, so a host's
 * event loop is never held long) does in one step what would otherwise take
 * one step per buffer, which matters to a host that cannot wait on curl's
 * sockets and steps at its own pace. */
#define DRAIN_MAX_ROUNDS 64
#define DRAIN_MAX_MS 2

static int perform_ready(e2b_loop *loop) {
  int ready = 0, progressed = perform(loop, &ready);
  int64_t until = e2b_now_ms() + DRAIN_MAX_MS;
  for (int i = 0; i < DRAIN_MAX_ROUNDS && ready && e2b_now_ms() < until; i++) progressed += perform(loop, &ready);
  return progressed;
}

/* ms until our timers or curl's are due (-1: neither). */
static long due_in(e2b_loop *loop) {
  long next = timers_timeout(loop);
  long curl_next = -1;
  if (curl_multi_timeout(loop->multi, &curl_next) != CURLM_OK) curl_next = -1;
  if (curl_next >= 0 && (next < 0 || curl_next < next)) next = curl_next;
  return next;
}

long e2b_loop_timeout(e2b_loop *loop) { return loop->dirty ? 0 : due_in(loop); }

int e2b_loop_step(e2b_loop *loop, long timeout_ms) {
  int progressed = perform_ready(loop);
  if (progressed == 0 && timeout_ms > 0) {
    long next = due_in(loop);
    if (next >= 0 && next < timeout_ms) timeout_ms = next;
    if (timeout_ms > 0x7fffffffL) timeout_ms = 0x7fffffffL;
    if (timeout_ms > 0) e2b_events_wait(loop, timeout_ms);
    perform_ready(loop);
  }
  e2b_bridge_stepped(loop);
  return e2b_loop_active(loop);
}

/* Steps until nothing is left unattended, for at most max_ms. */
size_t e2b_loop_settle(e2b_loop *loop, long max_ms) {
  if (max_ms <= 0) max_ms = E2B_DEFAULT_SETTLE_MS;
  int64_t deadline = e2b_now_ms() + max_ms;
  while (loop->unattended > 0 && e2b_now_ms() < deadline) e2b_loop_step(loop, 50);
  return loop->unattended;
}

/* The blocking face: steps the request's loop until it is done. */
int e2b_req_wait(e2b_req *req, long timeout_ms) {
  int64_t deadline = timeout_ms >= 0 ? e2b_now_ms() + timeout_ms : 0;
  while (!req->done) {
    long wait = 1000;
    if (timeout_ms >= 0) {
      int64_t left = deadline - e2b_now_ms();
      if (left <= 0) return 0;
      if (left < wait) wait = (long)left;
    }
    e2b_loop_step(req->loop, wait);
  }
  return 1;
}
