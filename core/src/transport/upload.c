/* upload.c — the producer side of an upload: the pieces a caller hands
 * over (kept as handed, never copied again), the curl read callback that
 * drains them, and the wake-ups that keep curl fed without polling. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* One piece of an upload, as the producer handed it over. */
typedef struct sendbuf {
  struct sendbuf *next;
  size_t len, off, cap;
  char data[];
} sendbuf;

static void free_sends(e2b_req *req) {
  while (req->up.head) {
    sendbuf *next = req->up.head->next;
    free(req->up.head);
    req->up.head = next;
  }
  req->up.tail = NULL;
  req->up.pending = 0;
  free(req->up.spare);
  req->up.spare = NULL;
  free(req->up.fill);
  req->up.fill = NULL;
}

/* Reusing a taken piece for the next one (callers send equal pieces)
 * spares malloc a fresh mapping, its page faults and its return to the
 * kernel for every MiB. */
static void spare_send(e2b_req *req, sendbuf *b) {
  if (req->up.spare && req->up.spare->cap >= b->cap) {
    free(b);
    return;
  }
  free(req->up.spare);
  req->up.spare = b;
}
void e2b_upload_free(e2b_req *req) { free_sends(req); }

/* curl's read callback of an upload (CURLOPT_READFUNCTION, or a mime
 * part's): pauses while the producer is behind, ends once it said so. */
size_t e2b_upload_read_cb(char *buf, size_t size, size_t n, void *ud) {
  e2b_req *req = ud;
  size_t room = size * n, before = req->up.pending, given = 0;
  if (before == 0) {
    if (req->up.ended) return 0;
    req->up.paused = 1;
    return CURL_READFUNC_PAUSE;
  }
  while (given < room && req->up.head) {
    sendbuf *b = req->up.head;
    size_t take = b->len - b->off < room - given ? b->len - b->off : room - given;
    memcpy(buf + given, b->data + b->off, take);
    b->off += take;
    given += take;
    if (b->off == b->len) {
      req->up.head = b->next;
      if (!req->up.head) req->up.tail = NULL;
      spare_send(req, b);
    }
  }
  req->up.pending -= given;
  /* The producer hears when the backlog falls to the low-water mark, not
   * only once it is gone: refilled before curl runs dry, the upload never
   * stalls on a round trip through the caller. */
  if (req->up.pending == 0 ||
      (before > E2B_UPLOAD_LOW_WATER && req->up.pending <= E2B_UPLOAD_LOW_WATER))
    e2b_req_mark_dirty(req);
  return given;
}


static void wake_upload(e2b_req *req) {
  if (req->up.paused) {
    req->up.paused = 0;
    curl_easy_pause(req->easy, CURLPAUSE_CONT);
  }
}

/* The spare piece, or a new one, with room for len bytes (not queued). */
static sendbuf *send_piece(e2b_req *req, size_t len) {
  sendbuf *b = req->up.spare;
  if (b && b->cap >= len) {
    req->up.spare = NULL;
  } else if ((b = malloc(sizeof *b + len))) {
    b->cap = len;
  } else {
    return NULL;
  }
  b->next = NULL;
  b->len = 0;
  b->off = 0;
  return b;
}

static void queue_piece(e2b_req *req, sendbuf *b) {
  if (req->up.tail)
    req->up.tail->next = b;
  else
    req->up.head = b;
  req->up.tail = b;
  req->up.pending += b->len;
  req->up.started = 1;
  wake_upload(req);
}

int e2b_req_send(e2b_req *req, const void *data, size_t len) {
  if (req->done || req->up.ended) return -1;
  if (len == 0) return 0;
  sendbuf *b = send_piece(req, len);
  if (!b) return -1;
  memcpy(b->data, data, len);
  b->len = len;
  queue_piece(req, b);
  return 0;
}

void *e2b_req_send_room(e2b_req *req, size_t max) {
  if (req->done || req->up.ended || max == 0) return NULL;
  if (req->up.fill && req->up.fill->cap >= max) return req->up.fill->data;
  if (req->up.fill) spare_send(req, req->up.fill);
  req->up.fill = send_piece(req, max);
  return req->up.fill ? req->up.fill->data : NULL;
}

int e2b_req_send_commit(e2b_req *req, size_t n) {
  sendbuf *b = req->up.fill;
  if (!b || n > b->cap || req->done || req->up.ended) return -1;
  if (n == 0) return 0; /* the room stays for the next call */
  req->up.fill = NULL;
  b->len = n;
  queue_piece(req, b);
  return 0;
}

int e2b_req_send_end(e2b_req *req) {
  if (req->done) return -1;
  req->up.ended = 1;
  wake_upload(req);
  return 0;
}

size_t e2b_req_send_pending(const e2b_req *req) { return req->up.pending; }
