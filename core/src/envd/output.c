/* output.c — what a run keeps of a command's output, the one place its
 * rules live: per stream at most max_output bytes; "all" fails past that,
 * "tail" keeps the last max_output bytes and counts what it dropped from
 * the front, "none" keeps nothing; by default a stream the caller takes as
 * chunks is the caller's (kept only when asked). e2b_run keeps its result
 * with it, and a binding collecting a process to its end uses the same.
 * A tail is a ring of at most max_output bytes, so keeping the tail of a
 * long output costs a copy per byte, never a move of what is kept. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct ring {
  uint8_t *data;
  size_t cap, len, head; /* the bytes are data[(head + i) % cap], i < len */
} ring;

struct e2b_output {
  size_t max;
  e2b_keep keep;
  unsigned discard; /* E2B_STREAM_* bits kept by nobody */
  ring r[3];        /* stdout, stderr, pty */
  size_t dropped;
};

static int stream_index(e2b_event_type t) {
  return t == E2B_EVENT_STDOUT ? 0 : t == E2B_EVENT_STDERR ? 1 : t == E2B_EVENT_PTY ? 2 : -1;
}

e2b_output *e2b_output_new(size_t max_output, e2b_keep keep, unsigned chunks) {
  if (!max_output) max_output = E2B_DEFAULT_MAX_OUTPUT;
  if (keep < E2B_KEEP_DEFAULT || keep > E2B_KEEP_NONE) return NULL;
  e2b_output *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  o->max = max_output;
  o->keep = keep;
  if (keep == E2B_KEEP_NONE) o->discard = E2B_STREAM_STDOUT | E2B_STREAM_STDERR;
  else if (keep == E2B_KEEP_DEFAULT) o->discard = chunks & (E2B_STREAM_STDOUT | E2B_STREAM_STDERR);
  return o;
}

void e2b_output_free(e2b_output *o) {
  if (!o) return;
  for (int i = 0; i < 3; i++) free(o->r[i].data);
  free(o);
}

/* Room for want bytes while the ring has not wrapped (head 0). It starts
 * small: thousands of live handles each keep a line or two, and a 4 KiB
 * start was a sixth of what such a handle cost; doubling keeps the copies
 * of a long output amortized. */
static int ring_grow(ring *r, size_t want, size_t max) {
  if (r->cap >= want) return 0;
  size_t cap = r->cap ? r->cap : 64;
  while (cap < want) cap *= 2;
  if (cap > max) cap = max;
  uint8_t *p = realloc(r->data, cap);
  if (!p) return -1;
  r->data = p;
  r->cap = cap;
  return 0;
}

static void ring_write(ring *r, const uint8_t *data, size_t len) {
  size_t at = (r->head + r->len) % r->cap;
  size_t first = r->cap - at < len ? r->cap - at : len;
  memcpy(r->data + at, data, first);
  memcpy(r->data, data + first, len - first);
  r->len += len;
}

/* Keeps the last max bytes: drops from the front, counting what it dropped. */
static int ring_tail(ring *r, const uint8_t *data, size_t len, size_t max, size_t *dropped) {
  if (r->len + len <= max) {
    if (r->head == 0 && ring_grow(r, r->len + len, max) != 0) return -1;
    ring_write(r, data, len);
    return 0;
  }
  if (r->head == 0 && ring_grow(r, max, max) != 0) return -1;
  if (len >= max) {
    *dropped += r->len + (len - max);
    r->head = r->len = 0;
    ring_write(r, data + (len - max), max);
    return 0;
  }
  size_t drop = r->len + len - max;
  *dropped += drop;
  r->head = (r->head + drop) % r->cap;
  r->len -= drop;
  ring_write(r, data, len);
  return 0;
}

int e2b_output_add(e2b_output *o, e2b_event_type stream, const void *data, size_t len, e2b_error *err) {
  int i = stream_index(stream);
  unsigned bit = i == 1 ? E2B_STREAM_STDERR : E2B_STREAM_STDOUT;
  if (i < 0 || (o->discard & bit) || len == 0) return 0;
  ring *r = &o->r[i];
  if (o->keep == E2B_KEEP_TAIL) {
    if (ring_tail(r, data, len, o->max, &o->dropped) == 0) return 0;
  } else if (r->len + len > o->max) {
    static const char *const names[] = {"stdout", "stderr", "pty"};
    e2b_err_set(err, E2B_ERR_SANDBOX, "run",
                "%s exceeded max_output (%zu bytes); keep its tail (keep = \"tail\") or read it "
                "as it comes (spawn() and read())",
                names[i], o->max);
    return 1;
  } else if (ring_grow(r, r->len + len, o->max) == 0) {
    ring_write(r, data, len);
    return 0;
  }
  e2b_err_set(err, E2B_ERR_UNAVAILABLE, "run", "out of memory");
  return -1;
}

const uint8_t *e2b_output_data(e2b_output *o, e2b_event_type stream, size_t *len) {
  int i = stream_index(stream);
  *len = 0;
  if (i < 0 || !o->r[i].len) return (const uint8_t *)"";
  ring *r = &o->r[i];
  if (r->head + r->len > r->cap) { /* wrapped: make it one run of bytes */
    uint8_t *p = malloc(r->cap);
    if (!p) return NULL;
    size_t first = r->cap - r->head;
    memcpy(p, r->data + r->head, first);
    memcpy(p + first, r->data, r->len - first);
    free(r->data);
    r->data = p;
    r->head = 0;
  }
  *len = r->len;
  return r->data + r->head;
}

size_t e2b_output_dropped(const e2b_output *o) { return o->dropped; }

e2b_keep e2b_output_keep(const e2b_output *o) { return o->keep; }
