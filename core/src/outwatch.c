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
  e2b_req *list;  /* what grew before the watch started */
  int live;      /* the stream said it watches */
  e2b_nameset seen; /* processes whose files changed since the watch started, so a
                     * reader that joins later knows whether it missed anything */
  long retry_ms;
  subscriber *subs;
  size_t n, cap;
};

static void wake_all(struct e2b_outwatch *w) {
  for (size_t i = 0; i < w->n; i++) w->subs[i].wake(w->subs[i].op, 0, -1);
}

static void dispatch(struct e2b_outwatch *w, const uint8_t *name, size_t len, int64_t size) {
  const uint8_t *base = name;
  for (size_t i = 0; i < len; i++)
    if (name[i] == '/') base = name + i + 1;
  size_t blen = len - (size_t)(base - name);
  const char *dot = memchr(base, '.', blen);
  if (dot) e2b_nameset_add(&w->seen, (const char *)base, (size_t)(dot - (const char *)base));
  if (!dot) return;
  /* the file: out, err or exit (.boot and others wake nobody) */
  size_t el = blen - (size_t)(dot + 1 - (const char *)base);
  const char *ext = dot + 1;
  char file = el == 3 && !memcmp(ext, "out", 3) ? 'o' : el == 3 && !memcmp(ext, "err", 3) ? 'e'
            : el == 4 && !memcmp(ext, "exit", 4) ? 'x' : 0;
  if (!file) return;
  size_t nl = (size_t)(dot - (const char *)base);
  for (size_t i = 0; i < w->n; i++) {
    if (strlen(w->subs[i].prefix) == nl && memcmp(base, w->subs[i].prefix, nl) == 0)
      w->subs[i].wake(w->subs[i].op, file, size);
  }
}

static void start_stream(struct e2b_outwatch *w) {
  e2b_error err;
  json_t *body = json_object();
  if (body) json_object_set_new(body, "path", json_string(w->dir));
  if (body) json_object_set_new(body, "includeEntry", json_true()); /* sizes: skip what we have */
  w->stream = e2b_op_child(w->op, e2b_sbx_stream_rpc(w->sbx, "process.watch",
                                                     "/filesystem.Filesystem/WatchDir", "root",
                                                     body, 30, 90000, 0,
                                                     E2B_STREAM_WATCH | E2B_STREAM_EVENTS, &err));
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

/* Readers that joined before the watch started may have missed writes: one
 * listing says whose files are non-empty, instead of a read per reader. */
static void list_before(struct e2b_outwatch *w) {
  e2b_error err;
  e2b_req_free(w->list);
  w->list = e2b_op_child(w->op, e2b_fs_list(w->sbx, w->dir, 1, "root", &err));
  if (!w->list) wake_all(w);
}

static void list_step(struct e2b_outwatch *w) {
  if (!w->list || !e2b_req_done(w->list)) return;
  if (e2b_req_error(w->list)) {
    wake_all(w);
  } else {
    for (size_t i = 0; i < e2b_req_entry_count(w->list); i++) {
      const e2b_entry *e = e2b_req_entry_at(w->list, i);
      if (e->size > 0 && e->name) dispatch(w, (const uint8_t *)e->name, strlen(e->name), e->size);
    }
  }
  e2b_req_free(w->list);
  w->list = NULL;
}

static void watch_advance(e2b_req *op) {
  struct e2b_outwatch *w = op->state;
  list_step(w);
  if (!w->stream) {
    if (op->timer_at_ms) return;
    return start_stream(w);
  }
  queued *q;
  while ((q = e2b_req_pop_node(w->stream))) {
    if (q->ev.type == E2B_EVENT_START) {
      w->live = 1;
      e2b_nameset_clear(&w->seen);
      w->retry_ms = RETRY_MIN_MS;
      list_before(w);
    } else {
      dispatch(w, q->ev.data, q->ev.len, q->size);
    }
    free(q);
  }
  if (e2b_req_done(w->stream)) lost(w);
}

static void watch_free(void *p) {
  struct e2b_outwatch *w = p;
  e2b_nameset_clear(&w->seen);
  e2b_req_free(w->list);
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
  /* Not live yet: the listing made when it starts covers what came before.
   * Live: the listing (once done) and the events since saw every write. */
  if (!w->live) return 0;
  if (w->list) return 1;
  return e2b_nameset_maybe(&w->seen, prefix, strlen(prefix));
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
