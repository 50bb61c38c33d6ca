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
  while (req->send_head) {
    sendbuf *next = req->send_head->next;
    free(req->send_head);
    req->send_head = next;
  }
  req->send_tail = NULL;
  req->send_pending = 0;
  free(req->send_spare);
  req->send_spare = NULL;
  free(req->send_fill);
  req->send_fill = NULL;
}

/* Reusing a taken piece for the next one (callers send equal pieces)
 * spares malloc a fresh mapping, its page faults and its return to the
 * kernel for every MiB. */
static void spare_send(e2b_req *req, sendbuf *b) {
  if (req->send_spare && req->send_spare->cap >= b->cap) {
    free(b);
    return;
  }
  free(req->send_spare);
  req->send_spare = b;
}
void e2b_upload_free(e2b_req *req) { free_sends(req); }

/* curl's read callback of an upload (CURLOPT_READFUNCTION, or a mime
 * part's): pauses while the producer is behind, ends once it said so. */
size_t e2b_upload_read_cb(char *buf, size_t size, size_t n, void *ud) {
  e2b_req *req = ud;
  size_t room = size * n, before = req->send_pending, given = 0;
  if (before == 0) {
    if (req->send_ended) return 0;
    req->send_paused = 1;
    return CURL_READFUNC_PAUSE;
  }
  while (given < room && req->send_head) {
    sendbuf *b = req->send_head;
    size_t take = b->len - b->off < room - given ? b->len - b->off : room - given;
    memcpy(buf + given, b->data + b->off, take);
    b->off += take;
    given += take;
    if (b->off == b->len) {
      req->send_head = b->next;
      if (!req->send_head) req->send_tail = NULL;
      spare_send(req, b);
    }
  }
  req->send_pending -= given;
  /* The producer hears when the backlog falls to the low-water mark, not
   * only once it is gone: refilled before curl runs dry, the upload never
   * stalls on a round trip through the caller. */
  if (req->send_pending == 0 ||
      (before > E2B_UPLOAD_LOW_WATER && req->send_pending <= E2B_UPLOAD_LOW_WATER))
    e2b_req_mark_dirty(req);
  return given;
}


static void wake_upload(e2b_req *req) {
  if (req->send_paused) {
    req->send_paused = 0;
    curl_easy_pause(req->easy, CURLPAUSE_CONT);
  }
}

/* The spare piece, or a new one, with room for len bytes (not queued). */
static sendbuf *send_piece(e2b_req *req, size_t len) {
  sendbuf *b = req->send_spare;
  if (b && b->cap >= len) {
    req->send_spare = NULL;
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
  if (req->send_tail)
    req->send_tail->next = b;
  else
    req->send_head = b;
  req->send_tail = b;
  req->send_pending += b->len;
  req->send_started = 1;
  wake_upload(req);
}

int e2b_req_send(e2b_req *req, const void *data, size_t len) {
  if (req->done || req->send_ended) return -1;
  if (len == 0) return 0;
  sendbuf *b = send_piece(req, len);
  if (!b) return -1;
  memcpy(b->data, data, len);
  b->len = len;
  queue_piece(req, b);
  return 0;
}

void *e2b_req_send_room(e2b_req *req, size_t max) {
  if (req->done || req->send_ended || max == 0) return NULL;
  if (req->send_fill && req->send_fill->cap >= max) return req->send_fill->data;
  if (req->send_fill) spare_send(req, req->send_fill);
  req->send_fill = send_piece(req, max);
  return req->send_fill ? req->send_fill->data : NULL;
}

int e2b_req_send_commit(e2b_req *req, size_t n) {
  sendbuf *b = req->send_fill;
  if (!b || n > b->cap || req->done || req->send_ended) return -1;
  if (n == 0) return 0; /* the room stays for the next call */
  req->send_fill = NULL;
  b->len = n;
  queue_piece(req, b);
  return 0;
}

int e2b_req_send_end(e2b_req *req) {
  if (req->done) return -1;
  req->send_ended = 1;
  wake_upload(req);
  return 0;
}

size_t e2b_req_send_pending(const e2b_req *req) { return req->send_pending; }
