/* outwatch.c — one WatchDir stream per sandbox tells kept-output readers
 * when their files grew.
 *
 * A kept command writes its output straight into files (no tee per
 * command); a reader that wants it live reads those files from its offsets.
 * Instead of every reader polling, the readers of one sandbox share one
 * envd watch on the scratch directory: an event naming a reader's file
 * wakes that reader. The watch starts when a first reader waits on it and,
 * while the handle's owner still holds it, stays LINGER_MS after the last
 * one leaves (it holds a reference to the handle; release.c ends it once
 * the owner let go and no reader is left): ending a stream mid-body
 * closes its connection, so a watch per command would cost a new
 * connection (a TCP and TLS set-up over a real network) for every command
 * that outlives its first pass. Past that it goes dormant (no stream) until
 * a reader comes; a watch whose name set turned lossy is dropped instead,
 * so a fresh one answers exactly again. When it (re)starts or is lost
 * every reader is woken once, so nothing written in between is missed;
 * while it is down readers fall back to their own backing-off timers.
 *
 * A parked reader (track.c: a long-running kept command whose own stream
 * was closed to save a connection on both sides) learns its end from the
 * exit file through this watch. A command killed with SIGKILL never writes
 * that file, so while any reader is parked one process list per sandbox
 * every LOOK_EVERY_MS, shared by all of them, says whose process is gone.
 * Only a list that answered counts: a list that failed says nothing, and a
 * list sent before a reader parked says nothing about it.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* The first retry after a loss comes late enough for the readers' own look
 * (a killed sandbox's Connect answers 502, then the control plane 404) to
 * have said the sandbox is gone, so a gone sandbox gets no new watch. */
#define RETRY_MIN_MS 200
#define RETRY_MAX_MS 2000
/* How often parked readers' processes are looked for: a SIGKILLed parked
 * command is reported ended within about this plus one list. */
#define LOOK_EVERY_MS 1500
/* How long a watch nobody waits on keeps its stream for the next reader. */
#define LINGER_MS 10000
/* ... and how many events it carries meanwhile: each kept command the
 * sandbox runs sends it several (its files made, written, closed, removed)
 * that nobody reads: a burst of commands cost the client about twice its
 * CPU, e2b-local a third more (bench/README.md, burst). A few commands'
 * worth. */
#define LINGER_EVENTS 64

typedef struct subscriber {
  e2b_req *op;
  e2b_wake_fn wake;
  char *prefix; /* entry names "<prefix>.<file>" */
  const char *tag;   /* parked: its process's tag (the reader's own string) */
  int64_t parked_ms; /* parked: since when */
} subscriber;

struct e2b_outwatch {
  e2b_sbx *sbx;  /* held (a reference), so the handle never goes first */
  char *dir;
  e2b_req *op;   /* drives the stream; never seen by callers */
  e2b_req *stream;
  e2b_req *list;  /* what grew before the watch started */
  int live;      /* the stream said it watches */
  e2b_nameset seen; /* processes whose files changed since the watch started, so a
                     * reader that joins later knows whether it missed anything */
  long retry_ms;
  int64_t retry_at;  /* no stream: when to start one again */
  e2b_req *look;     /* a process list for the parked readers */
  int64_t look_sent_ms, next_look_ms;
  size_t parked;     /* subscribers parked */
  int64_t contact_ms; /* the last event or list that answered */
  int64_t idle_since; /* no subscriber since then (0: some) */
  size_t idle_events; /* events carried since then */
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
  /* the file: out, err or exit (any other wakes nobody) */
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
  /* Sizes let a reader skip what it has; an older envd's events carry none,
   * and every event then wakes its reader (the same reads, a few more). */
  if (body && !e2b_envd_below(w->sbx, E2B_ENVD_WATCH_ENTRY))
    json_object_set_new(body, "includeEntry", json_true());
  w->stream = e2b_op_child(w->op, e2b_sbx_stream_rpc(w->sbx, "process.watch",
                                                     "/filesystem.Filesystem/WatchDir", "root",
                                                     body, 30, E2B_DEFAULT_IDLE_TIMEOUT_MS, 0,
                                                     E2B_STREAM_WATCH | E2B_STREAM_EVENTS, &err));
  if (!w->stream) w->retry_at = e2b_now_ms() + w->retry_ms;
}

static void lost(struct e2b_outwatch *w) {
  e2b_req_free(w->stream);
  w->stream = NULL;
  w->live = 0;
  if (!w->n) return; /* dormant: the next reader starts it again */
  wake_all(w);
  w->retry_at = e2b_now_ms() + w->retry_ms;
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

/* ---- parked readers: is their process still there? ---- */

static int listed(const e2b_req *list, const char *tag) {
  for (size_t i = 0; i < e2b_req_proc_count(list); i++) {
    const e2b_proc_info *p = e2b_req_proc_at(list, i);
    if (p->tag && strcmp(p->tag, tag) == 0) return 1;
  }
  return 0;
}

static void look_step(struct e2b_outwatch *w) {
  if (!w->look || !e2b_req_done(w->look)) return;
  e2b_req *list = w->look;
  w->look = NULL;
  w->next_look_ms = e2b_now_ms() + LOOK_EVERY_MS;
  /* A failed list could not look: that is never "not there". */
  if (!e2b_req_error(list)) {
    w->contact_ms = e2b_now_ms();
    /* a wake only marks its reader and kicks it (it never unsubscribes here) */
    for (size_t i = 0; i < w->n; i++) {
      subscriber *sub = &w->subs[i];
      if (sub->tag && sub->parked_ms < w->look_sent_ms && !listed(list, sub->tag))
        sub->wake(sub->op, 'g', -1);
    }
  }
  e2b_req_free(list);
}

static void look(struct e2b_outwatch *w) {
  e2b_error err;
  w->look_sent_ms = e2b_now_ms();
  w->look = e2b_op_child(w->op, e2b_proc_list(w->sbx, &err));
  if (!w->look) w->next_look_ms = w->look_sent_ms + LOOK_EVERY_MS;
}

/* One timer for both: the stream's retry and the parked readers' look. */
static void rearm(struct e2b_outwatch *w) {
  int64_t at = w->stream ? 0 : w->n ? w->retry_at : 0;
  if (!w->n && w->stream) at = w->idle_since + LINGER_MS;
  if (w->parked && !w->look && (!at || w->next_look_ms < at)) at = w->next_look_ms;
  if (at) e2b_req_arm_timer(w->op, at - e2b_now_ms());
  else e2b_req_disarm_timer(w->op);
}

static void stream_events(struct e2b_outwatch *w) {
  queued *q;
  while ((q = e2b_req_pop_node(w->stream))) {
    w->contact_ms = e2b_now_ms();
    if (q->ev.type == E2B_EVENT_START) {
      w->live = 1;
      e2b_nameset_clear(&w->seen);
      w->retry_ms = RETRY_MIN_MS;
      list_before(w);
    } else {
      dispatch(w, q->ev.data, q->ev.len, q->size);
      if (!w->n) w->idle_events++;
    }
    free(q);
  }
  if (e2b_req_done(w->stream)) lost(w);
}

static void watch_advance(e2b_req *op) {
  struct e2b_outwatch *w = op->state;
  list_step(w);
  look_step(w);
  int64_t now = e2b_now_ms();
  if (!w->n && w->stream && now >= w->idle_since + LINGER_MS) lost(w);
  if (!w->stream && w->n && now >= w->retry_at && !e2b_sbx_gone(w->sbx)) start_stream(w);
  if (w->stream) stream_events(w);
  if (!w->n && w->stream && w->idle_events >= LINGER_EVENTS) lost(w);
  if (w->parked && !w->look && now >= w->next_look_ms) look(w);
  rearm(w);
}

static void watch_release(void *p) {
  struct e2b_outwatch *w = p;
  e2b_nameset_clear(&w->seen);
  for (size_t i = 0; i < w->n; i++) free(w->subs[i].prefix);
}

/* It holds a reference to its sandbox: the handle cannot go before it, so
 * the handle's last reference (client.c) never needs to know of it. */
#define WATCH_AT(f) offsetof(struct e2b_outwatch, f)
static const e2b_op_kind watch_kind = {
    .size = sizeof(struct e2b_outwatch), .release = watch_release,
    .children = E2B_FIELDS(WATCH_AT(look), WATCH_AT(list), WATCH_AT(stream)),
    .allocs = E2B_FIELDS(WATCH_AT(subs), WATCH_AT(dir)), .key = WATCH_AT(dir),
    .holds = E2B_OP_HOLDS_SBX, .ref = WATCH_AT(sbx)};

static struct e2b_outwatch *watch_new(e2b_sbx *sbx, const char *dir) {
  e2b_error err;
  e2b_req *op = e2b_op_new(&watch_kind, NULL, sbx, "process.watch", watch_advance, dir, &err);
  struct e2b_outwatch *w = op ? op->state : NULL;
  if (!w) return NULL;
  w->op = op;
  w->retry_ms = RETRY_MIN_MS;
  return w;
}

/* Frees the watch and its requests. Never called inside the watch's own
 * advance, and always while someone else still holds the handle (the
 * owner in e2b_sbx_release, the leaving reader in unsubscribe), so the
 * references it gives back are never the handle's last. */
static void watch_free(e2b_sbx *sbx) {
  struct e2b_outwatch *w = sbx->outwatch;
  if (!w) return;
  sbx->outwatch = NULL;
  e2b_req_free(w->op); /* frees w, its state */
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
  w->subs[w->n++] = (subscriber){op, wake, p, NULL, 0};
  w->idle_since = 0;
  if (!w->stream) e2b_op_kick(w->op); /* dormant, or new: start it now */
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
    if (w->subs[i].tag) w->parked--;
    free(w->subs[i].prefix);
    w->subs[i] = w->subs[--w->n];
    break;
  }
  if (w->n) return;
  /* Nobody to linger for once the owner let go; a lossy name set or no
   * stream: a fresh watch answers exactly again. */
  if (w->seen.lossy || !w->stream || sbx->released) {
    watch_free(sbx);
    return;
  }
  w->idle_since = e2b_now_ms();
  w->idle_events = 0;
  rearm(w);
}

void e2b_outwatch_park(e2b_sbx *sbx, e2b_req *op, const char *tag) {
  struct e2b_outwatch *w = sbx ? sbx->outwatch : NULL;
  if (!w) return;
  for (size_t i = 0; i < w->n; i++) {
    subscriber *sub = &w->subs[i];
    if (sub->op != op || !sub->tag == !tag) continue;
    w->parked += tag ? 1 : (size_t)-1;
    sub->tag = tag;
    sub->parked_ms = e2b_now_ms();
    /* the first parked reader: the first look comes a period from now */
    if (tag && w->parked == 1 && !w->look) w->next_look_ms = sub->parked_ms + LOOK_EVERY_MS;
    e2b_op_kick(w->op);
    return;
  }
}

int64_t e2b_outwatch_contact(const e2b_sbx *sbx) { return sbx->outwatch ? sbx->outwatch->contact_ms : 0; }

int e2b_outwatch_live(const e2b_sbx *sbx) { return sbx->outwatch && sbx->outwatch->live; }

void e2b_outwatch_orphaned(e2b_sbx *sbx) {
  if (sbx->outwatch && !sbx->outwatch->n) watch_free(sbx);
}
