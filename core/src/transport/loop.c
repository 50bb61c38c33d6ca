/* loop.c — the loop object: one libcurl multi handle shared by every
 * client and sandbox handle of a Lua state or program, the list of armed
 * timers and the list of requests to notify. A request joins its loop
 * here (e2b_req_init); stepping the loop is step.c's. */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t e2b_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int curl_ready; /* curl_global_init once per process */

e2b_loop *e2b_loop_new(e2b_error *err) {
  e2b_error_clear(err);
  if (!curl_ready) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      e2b_err_set(err, E2B_ERR_UNAVAILABLE, "loop", "libcurl could not be initialised");
      return NULL;
    }
    curl_ready = 1;
  }
  e2b_loop *loop = calloc(1, sizeof *loop);
  if (!loop || !(loop->multi = curl_multi_init())) {
    free(loop);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "loop", "out of memory");
    return NULL;
  }
  loop->refs = 1;
  if (!e2b_events_init(loop)) {
    e2b_events_free(loop);
    curl_multi_cleanup(loop->multi);
    free(loop);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "loop", "no descriptor left for an epoll set");
    return NULL;
  }
  return loop;
}

void e2b_loop_retain(e2b_loop *loop) { loop->refs++; }

void e2b_loop_release(e2b_loop *loop) {
  if (!loop || --loop->refs > 0) return;
  e2b_loop_bridge_close(loop); /* joins the watcher before curl's sockets go */
  curl_multi_cleanup(loop->multi);
  e2b_events_free(loop); /* after curl, whose cleanup still reports sockets */
  free(loop->socks);
  free(loop->timers);
  free(loop);
}

/* curl keeps every finished connection up to 4x the transfers it has: with
 * thousands of streams open, thousands of idle sockets, each a thread and a
 * buffer in a server like e2b-local. The cache counts connections in use
 * too, so its size follows the transfers running, plus idle ones to reuse:
 * as many as the busiest moment of the last E2B_IDLE_HOLD_MS had running
 * (within E2B_IDLE_CONNECTIONS..E2B_IDLE_CONNECTIONS_MAX), so that the next
 * burst of an agent's commands finds its connections (a TCP and a TLS
 * set-up each over a real network) where the last one left them, as the
 * SDK's pool keeps them. Past the hold curl closes the extra ones as
 * connections come back to a smaller cache. */
void e2b_loop_count_transfer(e2b_loop *loop, int delta) {
  int64_t now = e2b_now_ms();
  if (delta > 0)
    loop->transfers++;
  else if (loop->transfers > 0)
    loop->transfers--;
  if (loop->transfers >= loop->peak || now - loop->peak_at > E2B_IDLE_HOLD_MS) {
    loop->peak = loop->transfers;
    loop->peak_at = now;
  }
  long idle = (long)loop->peak;
  if (idle < E2B_IDLE_CONNECTIONS) idle = E2B_IDLE_CONNECTIONS;
  if (idle > E2B_IDLE_CONNECTIONS_MAX) idle = E2B_IDLE_CONNECTIONS_MAX;
  curl_multi_setopt(loop->multi, CURLMOPT_MAXCONNECTS, (long)loop->transfers + idle);
}

int e2b_loop_active(const e2b_loop *loop) { return (int)loop->transfers + (int)loop->timer_count; }

size_t e2b_loop_unattended(const e2b_loop *loop) { return loop->unattended; }

void e2b_loop_wakeup(e2b_loop *loop) { e2b_events_wakeup(loop); }

/* The fields every request starts with (a transfer or a composite op). */
void e2b_req_init(e2b_req *req, e2b_loop *loop, const char *op) {
  req->loop = loop;
  e2b_loop_retain(loop);
  snprintf(req->op, sizeof req->op, "%s", op);
  e2b_error_clear(&req->err);
  req->xfer.retry_after_ms = -1;
}

/* ---- timers ---- */

void e2b_req_arm_timer(e2b_req *req, int64_t delay_ms) {
  e2b_loop *loop = req->loop;
  if (!req->timer_at_ms) {
    if (loop->timer_count == loop->timer_cap) {
      e2b_req **t = e2b_grow(loop->timers, &loop->timer_cap, sizeof *t, 16);
      if (!t) return; /* the request then completes on its own schedule only */
      loop->timers = t;
    }
    loop->timers[loop->timer_count++] = req;
  }
  req->timer_at_ms = e2b_now_ms() + (delay_ms > 0 ? delay_ms : 0);
  if (req->timer_at_ms == 0) req->timer_at_ms = 1;
}

void e2b_req_disarm_timer(e2b_req *req) {
  if (!req->timer_at_ms) return;
  e2b_loop *loop = req->loop;
  for (size_t i = 0; i < loop->timer_count; i++) {
    if (loop->timers[i] == req) {
      loop->timers[i] = loop->timers[--loop->timer_count];
      break;
    }
  }
  req->timer_at_ms = 0;
}

/* ---- notifications ---- */

void e2b_req_mark_dirty(e2b_req *req) {
  if (req->dirty) return;
  req->dirty = 1;
  req->dirty_next = req->loop->dirty;
  req->loop->dirty = req;
}
