/* outwatch.c — one WatchDir stream per sandbox tells kept-output readers
 * when their files grew.
 *
 * A kept command writes its output straight into files (no tee per
 * command); a reader that wants it live reads those files from its offsets.
 * Instead of every reader polling, the readers of one sandbox share one
 * envd watch on the scratch directory: an event naming a reader's file
 * wakes that reader. The watch exists only while someone waits on it. When
 * it (re)starts or is lost every reader is woken once, so nothing written
 * in between is missed; while it is down readers fall back to their own
 * backing-off timers.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define RETRY_MIN_MS 50
#define RETRY_MAX_MS 2000

typedef struct subscriber {
  e2b_req *op;
  e2b_wake_fn wake;
  char *prefix; /* entry names "<prefix>.<file>" */
} subscriber;

struct e2b_outwatch {
  e2b_sbx *sbx;  /* not retained: the sandbox owns the watch */
  char *dir;
  e2b_req *op;   /* drives the stream; never seen by callers */
  e2b_req *stream;
  int live;      /* the stream said it watches */
  long retry_ms;
  subscriber *subs;
  size_t n, cap;
};

static void wake_all(struct e2b_outwatch *w) {
  for (size_t i = 0; i < w->n; i++) w->subs[i].wake(w->subs[i].op, 0);
}

static void dispatch(struct e2b_outwatch *w, const uint8_t *name, size_t len) {
  const uint8_t *base = name;
  for (size_t i = 0; i < len; i++)
    if (name[i] == '/') base = name + i + 1;
  size_t blen = len - (size_t)(base - name);
  for (size_t i = 0; i < w->n; i++) {
    size_t pl = strlen(w->subs[i].prefix);
    if (blen > pl + 1 && memcmp(base, w->subs[i].prefix, pl) == 0 && base[pl] == '.')
      w->subs[i].wake(w->subs[i].op, (char)base[pl + 1]);
  }
}

static void start_stream(struct e2b_outwatch *w) {
  e2b_error err;
  json_t *body = json_object();
  if (body) json_object_set_new(body, "path", json_string(w->dir));
  w->stream = e2b_op_child(w->op, e2b_sbx_stream_rpc(w->sbx, "process.watch",
                                                     "/filesystem.Filesystem/WatchDir", "root",
                                                     body, 30, 90000, 0, 1, &err));
  if (!w->stream) e2b_req_arm_timer(w->op, w->retry_ms);
}

static void lost(struct e2b_outwatch *w) {
  e2b_req_free(w->stream);
  w->stream = NULL;
  w->live = 0;
  wake_all(w);
  e2b_req_arm_timer(w->op, w->retry_ms);
  if (w->retry_ms < RETRY_MAX_MS) w->retry_ms *= 2;
}

static void watch_advance(e2b_req *op) {
  struct e2b_outwatch *w = op->state;
  if (!w->stream) {
    if (op->timer_at_ms) return;
    return start_stream(w);
  }
  queued *q;
  while ((q = e2b_req_pop_node(w->stream))) {
    if (q->ev.type == E2B_EVENT_START) {
      w->live = 1;
      w->retry_ms = RETRY_MIN_MS;
      wake_all(w);
    } else {
      dispatch(w, q->ev.data, q->ev.len);
    }
    free(q);
  }
  if (e2b_req_done(w->stream)) lost(w);
}

static void watch_free(void *p) {
  struct e2b_outwatch *w = p;
  e2b_req_free(w->stream);
  for (size_t i = 0; i < w->n; i++) free(w->subs[i].prefix);
  free(w->subs);
  free(w->dir);
  free(w);
}

static struct e2b_outwatch *watch_new(e2b_sbx *sbx, const char *dir) {
  struct e2b_outwatch *w = calloc(1, sizeof *w);
  if (!w || !(w->dir = strdup(dir))) {
    free(w);
    return NULL;
  }
  w->sbx = sbx;
  w->retry_ms = RETRY_MIN_MS;
  e2b_error err;
  w->op = e2b_op_new(sbx->client->loop, "process.watch", watch_advance, w, watch_free, &err);
  return w->op ? w : NULL;
}

int e2b_outwatch_subscribe(e2b_sbx *sbx, const char *dir, const char *prefix, e2b_req *op,
                           e2b_wake_fn wake) {
  if (!sbx->outwatch && !(sbx->outwatch = watch_new(sbx, dir))) return -1;
  struct e2b_outwatch *w = sbx->outwatch;
  if (w->n == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 8;
    subscriber *subs = realloc(w->subs, cap * sizeof *subs);
    if (!subs) return -1;
    w->subs = subs;
    w->cap = cap;
  }
  char *p = strdup(prefix);
  if (!p) return -1;
  w->subs[w->n++] = (subscriber){op, wake, p};
  return 0;
}

void e2b_outwatch_unsubscribe(e2b_sbx *sbx, e2b_req *op) {
  struct e2b_outwatch *w = sbx ? sbx->outwatch : NULL;
  if (!w) return;
  for (size_t i = 0; i < w->n; i++) {
    if (w->subs[i].op != op) continue;
    free(w->subs[i].prefix);
    w->subs[i] = w->subs[--w->n];
    break;
  }
  if (w->n == 0) e2b_outwatch_free(sbx);
}

int e2b_outwatch_live(const e2b_sbx *sbx) { return sbx->outwatch && sbx->outwatch->live; }

void e2b_outwatch_free(e2b_sbx *sbx) {
  struct e2b_outwatch *w = sbx->outwatch;
  if (!w) return;
  sbx->outwatch = NULL;
  e2b_req_free(w->op); /* frees w through watch_free */
}
