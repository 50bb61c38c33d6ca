/* transfer.c — one HTTP transfer as an e2b_req: the curl callbacks that
 * feed bodies, streams and uploads, bounded queues with backpressure,
 * retries of idempotent calls with jittered backoff (honouring
 * Retry-After), and the client's cap on control-plane requests in flight. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The parser of a 2xx whose body says nothing we keep. */
int e2b_parse_nothing(e2b_req *req, json_t *body, e2b_error *err) { return 0; }

/* ---- upload pieces ---- */

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

/* ---- download chunk nodes, reused the same way (at most a queue's worth) ---- */

#define SPARE_CHUNKS 16

/* A spare node is taken only for at least half its size, so the queue's
 * memory stays within twice the bytes it counts. */
static queued *chunk_node(e2b_req *req, size_t len) {
  queued *node = req->spare;
  if (node && node->cap >= len && node->cap / 2 <= len) {
    req->spare = node->next;
    req->spare_count--;
  } else {
    if (!(node = malloc(sizeof *node + len))) return NULL;
    node->cap = len;
  }
  size_t cap = node->cap;
  memset(node, 0, sizeof *node);
  node->cap = cap;
  return node;
}

static void recycle(e2b_req *req, queued *node) {
  if (node->cap == 0 || req->spare_count >= SPARE_CHUNKS) {
    free(node);
    return;
  }
  node->next = req->spare;
  req->spare = node;
  req->spare_count++;
}

static void free_spare_chunks(e2b_req *req) {
  while (req->spare) {
    queued *next = req->spare->next;
    free(req->spare);
    req->spare = next;
  }
  req->spare_count = 0;
}

/* ---- life cycle ---- */

static const e2b_req_hooks transfer_hooks;

void e2b_req_init(e2b_req *req, e2b_loop *loop, const char *op) {
  req->loop = loop;
  req->hooks = &transfer_hooks;
  e2b_loop_retain(loop);
  snprintf(req->op, sizeof req->op, "%s", op);
  e2b_error_clear(&req->err);
  req->retry_after_ms = -1;
}

e2b_req *e2b_req_new(e2b_loop *loop, const char *op, e2b_error *err) {
  /* curl's error buffer lives after the struct: composites, which share the
   * struct, have no transfer and so no need of it. */
  e2b_req *req = calloc(1, sizeof *req + CURL_ERROR_SIZE);
  if (!req || !(req->easy = curl_easy_init())) {
    free(req);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return NULL;
  }
  req->curl_error = (char *)(req + 1);
  e2b_req_init(req, loop, op);
  req->ok_status_min = 200;
  req->ok_status_max = 299;
  e2b_envelope_decoder_init(&req->decoder, E2B_MAX_ENVELOPE);
  return req;
}

int e2b_req_add_header(e2b_req *req, const char *name, const char *value, e2b_error *err) {
  size_t n = strlen(name) + strlen(value) + 3;
  char *line = malloc(n);
  if (!line) goto nomem;
  snprintf(line, n, "%s: %s", name, value);
  struct curl_slist *l = curl_slist_append(req->headers, line);
  free(line);
  if (!l) goto nomem;
  req->headers = l;
  return 0;
nomem:
  e2b_err_set(err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
  return -1;
}

static void free_queue(e2b_req *req) {
  queued *q = req->queue_head;
  while (q) {
    queued *next = q->next;
    free(q);
    q = next;
  }
  req->queue_head = req->queue_tail = NULL;
  req->queued_bytes = 0;
  free(req->held_end);
  req->held_end = NULL;
  free(req->current);
  req->current = NULL;
  free_spare_chunks(req);
}

static void free_results(e2b_req *req) {
  for (size_t i = 0; i < req->sandbox_count; i++) e2b_sandbox_info_clear(&req->sandboxes[i]);
  free(req->sandboxes);
  for (size_t i = 0; i < req->entry_count; i++) e2b_entry_clear(&req->entries[i]);
  free(req->entries);
  for (size_t i = 0; i < req->proc_count; i++) e2b_proc_info_clear(&req->procs[i]);
  free(req->procs);
  free(req->next_token);
  free(req->written_path);
  if (req->result_free) req->result_free(req->result);
}

/* ---- the control-plane cap ---- */

static void start_queued(e2b_client *c);

static void release_slot(e2b_req *req) {
  if (!req->holds_slot) return;
  req->holds_slot = 0;
  req->client->inflight--;
  start_queued(req->client);
}

void e2b_queue_remove(e2b_req **head, e2b_req **tail, e2b_req *req) {
  for (e2b_req **p = head; *p; p = &(*p)->queue_next) {
    if (*p == req) {
      *p = req->queue_next;
      break;
    }
  }
  *tail = NULL;
  for (e2b_req *r = *head; r; r = r->queue_next) *tail = r;
  req->queue_next = NULL;
}

static void unqueue(e2b_req *req) {
  if (!req->queued) return;
  e2b_queue_remove(&req->client->queue_head, &req->client->queue_tail, req);
  req->queued = 0;
}

static void detach(e2b_req *req) {
  if (req->added) {
    curl_multi_remove_handle(req->loop->multi, req->easy);
    e2b_loop_count_transfer(req->loop, -1);
    req->added = 0;
  }
  if (req->client) {
    unqueue(req);
    release_slot(req);
  }
  e2b_req_disarm_timer(req);
  req->waiting_retry = 0;
}

void e2b_req_free(e2b_req *req) {
  if (!req) return;
  if (req->autofree) req->loop->unattended--;
  detach(req);
  for (e2b_req **p = &req->loop->dirty; *p; p = &(*p)->dirty_next) {
    if (*p == req) {
      *p = req->dirty_next;
      break;
    }
  }
  if (req->state_free) req->state_free(req); /* a composite's (op.c) */
  if (req->easy) curl_easy_cleanup(req->easy);
  curl_slist_free_all(req->headers);
  curl_mime_free(req->mime);
  e2b_growbuf_free(&req->request_body);
  e2b_growbuf_free(&req->response_body);
  free_sends(req);
  e2b_envelope_decoder_free(&req->decoder);
  free_queue(req);
  free_results(req);
  if (req->sbx) e2b_sbx_unref(req->sbx);
  if (req->client) e2b_client_release(req->client);
  e2b_loop_release(req->loop);
  free(req);
}

void e2b_req_autofree(e2b_req *req) {
  req->notify = NULL;
  if (!req->autofree) req->loop->unattended++;
  req->autofree = 1;
  if (req->done) e2b_req_mark_dirty(req); /* the next round frees it */
}

static void release_end(e2b_req *req);

/* How long a finished process's stream may take to end its body once
 * nobody reads it (e2b_req_release). */
#define LINGER_MS 2000

void e2b_req_release(e2b_req *req) {
  if (!req) return;
  if (!req->added || req->done || req->autofree || req->mode != BODY_EVENTS || !req->proc_ended) {
    e2b_req_free(req);
    return;
  }
  req->parent = NULL;
  req->lingering = 1;
  e2b_req_autofree(req);
  e2b_req_arm_timer(req, LINGER_MS);
}

void e2b_req_fail(e2b_req *req, const e2b_error *err) {
  if (req->done) return;
  release_end(req);
  req->err = *err;
  if (!req->err.op[0]) snprintf(req->err.op, sizeof req->err.op, "%s", req->op);
  req->done = 1;
  detach(req);
  e2b_req_mark_dirty(req);
}

void e2b_req_cancel(e2b_req *req) {
  if (req->done) return;
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_CANCELED, req->op, "canceled");
  e2b_req_fail(req, &err);
}

int e2b_req_done(const e2b_req *req) { return req->done; }

const e2b_error *e2b_req_error(const e2b_req *req) {
  return req->done && req->err.code != E2B_OK ? &req->err : NULL;
}

int e2b_req_status(const e2b_req *req) { return req->status; }

e2b_result_kind e2b_req_result_kind(const e2b_req *req) { return req->result_kind; }

e2b_req *e2b_req_typed(e2b_req *req, e2b_result_kind kind) {
  if (req) req->result_kind = kind;
  return req;
}

e2b_loop *e2b_req_loop(const e2b_req *req) { return req->loop; }

void e2b_req_set_notify(e2b_req *req, e2b_notify_fn fn, void *userdata) {
  req->notify = fn;
  req->notify_ud = userdata;
}

/* ---- curl callbacks ---- */

static size_t on_header(char *line, size_t size, size_t n, void *ud) {
  e2b_req *req = ud;
  size_t len = size * n;
  req->last_byte_ms = e2b_now_ms();
  if (len > 12 && strncmp(line, "HTTP/", 5) == 0) {
    long code = 0;
    curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &code);
    req->status = (int)code;
    /* A new status line (after 100 Continue or a redirect) starts afresh. */
    req->response_body.len = 0;
  } else if (len > 12 && strncasecmp(line, "retry-after:", 12) == 0) {
    long secs = strtol(line + 12, NULL, 10);
    if (secs >= 0) req->retry_after_ms = secs * 1000;
  }
  return len;
}

static int is_ok_status(const e2b_req *req) {
  return req->status >= req->ok_status_min && req->status <= req->ok_status_max;
}

static void enqueue(e2b_req *req, queued *node) {
  if (req->queue_tail)
    req->queue_tail->next = node;
  else
    req->queue_head = node;
  req->queue_tail = node;
  req->queued_bytes += node->len;
  e2b_req_mark_dirty(req);
}

/* A process's end event is handed on once its stream's body has ended too
 * (the end-of-stream message and the body's last bytes follow it at
 * once), or END_HOLD_MS after it at the latest: a caller that starts its
 * next command on seeing the end then finds this connection free again,
 * rather than opening another while this one finishes. The body's end
 * comes in the same breath from envd; the bound only matters for a server
 * that never ends it, and 200 ms was short enough that a loaded host
 * (load 12: the suite's three spec files at a time beside other builds)
 * handed the end over first and the next command opened a connection. */
#define END_HOLD_MS 1000

static void push_queued(e2b_req *req, queued *node) {
  if (req->mode == BODY_EVENTS && !req->advance && node->ev.type == E2B_EVENT_END && !req->done) {
    req->proc_ended = 1;
    if (!req->held_end) {
      req->held_end = node;
      e2b_req_arm_timer(req, END_HOLD_MS);
      return;
    }
  }
  enqueue(req, node);
}

/* The held end event goes to the reader now. */
static void release_end(e2b_req *req) {
  queued *node = req->held_end;
  if (!node) return;
  req->held_end = NULL;
  enqueue(req, node);
}

static void fail_protocol(e2b_req *req, const char *what) {
  e2b_err_set(&req->err, E2B_ERR_PROTOCOL, req->op, "%s", what);
}

/* Handles one complete Connect envelope of a process stream. */
static int on_envelope(e2b_req *req) {
  e2b_envelope_decoder *d = &req->decoder;
  if (req->end_stream_seen) {
    fail_protocol(req, "data after the end of the stream");
    return -1;
  }
  if (d->flags & E2B_ENV_FLAG_COMPRESSED) {
    fail_protocol(req, "compressed stream message (never negotiated)");
    return -1;
  }
  if (d->flags & E2B_ENV_FLAG_END_STREAM) {
    req->end_stream_seen = 1;
    json_t *root = json_loadb((const char *)d->payload, d->payload_len, 0, NULL);
    json_t *error = json_object_get(root, "error");
    if (!json_is_object(root)) {
      fail_protocol(req, "end of stream is not a JSON object");
    } else if (json_is_object(error)) {
      e2b_err_from_connect(&req->err, json_string_value(json_object_get(error, "code")),
                           json_string_value(json_object_get(error, "message")), req->op);
    }
    json_decref(root);
    return req->err.code == E2B_OK ? 0 : -1;
  }
  queued *node = NULL;
  int rc = req->mode == BODY_WATCH
               ? e2b_parse_watch_event((const char *)d->payload, d->payload_len, req->watch_all, &node,
                                       &req->err)
               : e2b_parse_proc_event((const char *)d->payload, d->payload_len, &node, &req->err);
  if (rc != 0) return -1;
  if (node) push_queued(req, node);
  return 0;
}

static size_t on_stream_body(e2b_req *req, const uint8_t *data, size_t len) {
  size_t pos = 0;
  while (pos < len) {
    size_t used = 0;
    e2b_envelope_status st = e2b_envelope_feed(&req->decoder, data + pos, len - pos, &used);
    pos += used;
    if (st == E2B_ENV_FRAME) {
      int rc = on_envelope(req);
      e2b_envelope_decoder_reset(&req->decoder);
      if (rc != 0) return 0; /* aborts the transfer; req->err says why */
    } else if (st == E2B_ENV_TOO_LARGE) {
      fail_protocol(req, "stream message larger than 16 MiB");
      return 0;
    } else if (st == E2B_ENV_NOMEM) {
      e2b_err_set(&req->err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
      return 0;
    }
  }
  return len;
}

static size_t on_chunk_body(e2b_req *req, const uint8_t *data, size_t len) {
  queued *node = chunk_node(req, len);
  if (!node) {
    e2b_err_set(&req->err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return 0;
  }
  memcpy(node + 1, data, len);
  node->ev.type = E2B_EVENT_STDOUT;
  node->ev.data = (const uint8_t *)(node + 1);
  node->ev.len = len;
  node->len = len;
  push_queued(req, node);
  return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud) {
  e2b_req *req = ud;
  size_t len = size * n;
  req->last_byte_ms = e2b_now_ms();
  if (req->status == 0) {
    long code = 0;
    curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &code);
    req->status = (int)code;
  }
  if (req->mode == BODY_BUFFER || !is_ok_status(req)) {
    if (req->response_body.len + len > E2B_MAX_JSON_BODY) {
      fail_protocol(req, "response body larger than 16 MiB");
      return 0;
    }
    if (e2b_growbuf_append(&req->response_body, data, len) != 0) return 0;
    return len;
  }
  /* Once bytes reach the consumer, repeating the request could repeat them. */
  req->idempotent = 0;
  /* A stream's answer is coming, so its request was sent (curl has read its
   * headers too), and streams are never sent twice (neither retried nor
   * redirected): its body, which for a kept command holds the whole wrapper
   * script, and its header list are no longer needed while the stream may
   * stay open for hours. */
  if (req->mode != BODY_CHUNKS && (req->request_body.data || req->headers)) {
    e2b_growbuf_free(&req->request_body);
    curl_slist_free_all(req->headers);
    req->headers = NULL;
  }
  /* Backpressure: refuse (and so pause) while the consumer is behind; curl
   * hands the same bytes again after unpausing. */
  if (req->queued_bytes >= E2B_STREAM_QUEUE_CAP) {
    req->recv_paused = 1;
    return CURL_WRITEFUNC_PAUSE;
  }
  if (req->mode == BODY_EVENTS || req->mode == BODY_WATCH) return on_stream_body(req, (const uint8_t *)data, len);
  return on_chunk_body(req, (const uint8_t *)data, len);
}

static size_t on_upload(char *buf, size_t size, size_t n, void *ud) {
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

size_t e2b_upload_read_cb(char *buf, size_t size, size_t n, void *ud);
size_t e2b_upload_read_cb(char *buf, size_t size, size_t n, void *ud) {
  return on_upload(buf, size, n, ud);
}

static void finish_buffered(e2b_req *req) {
  if (!req->parse) return;
  json_error_t jerr;
  json_t *root = NULL;
  if (req->response_body.len > 0) {
    root = json_loadb(req->response_body.data, req->response_body.len, JSON_DECODE_ANY, &jerr);
    if (!root) {
      e2b_err_set(&req->err, E2B_ERR_PROTOCOL, req->op, "response is not JSON: %s", jerr.text);
      return;
    }
  }
  req->parse(req, root, &req->err);
  json_decref(root);
}

/* The idle budget of a stream: nothing at all (not even a keepalive) for
 * idle_ms fails it. A transfer paused because its reader is behind is not
 * idle: the silence is ours. */
static void idle_check(e2b_req *req) {
  if (req->done || !req->idle_ms) return;
  int64_t quiet = e2b_now_ms() - req->last_byte_ms;
  if (req->recv_paused || quiet < req->idle_ms) {
    e2b_req_arm_timer(req, req->recv_paused ? req->idle_ms : req->idle_ms - quiet);
    return;
  }
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_TIMEOUT, req->op,
              "idle timeout: the stream was silent for %ld ms (idle_timeout_ms)", req->idle_ms);
  e2b_req_fail(req, &err);
}

static const e2b_client *req_client(const e2b_req *req) {
  return req->client ? req->client : req->sbx ? req->sbx->client : NULL;
}

void e2b_req_set_unary(e2b_req *req, const e2b_client *c) {
  req->unary_ms = c->request_timeout_ms;
  curl_easy_setopt(req->easy, CURLOPT_TIMEOUT_MS, c->request_timeout_ms);
}

/* curl calls this before each send of the request, its own repeats on a
 * fresh connection included (when a reused one closed with no answer). */
static int on_prereq(void *cls, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                     int conn_local_port) {
  (void)conn_primary_ip;
  (void)conn_local_ip;
  (void)conn_primary_port;
  (void)conn_local_port;
  e2b_req *req = cls;
  if (req->sends++ == 0) return CURL_PREREQFUNC_OK;
  req->replay_refused = 1;
  return CURL_PREREQFUNC_ABORT;
}

void e2b_req_no_replay(e2b_req *req) {
  curl_easy_setopt(req->easy, CURLOPT_PREREQFUNCTION, on_prereq);
  curl_easy_setopt(req->easy, CURLOPT_PREREQDATA, req);
}

static void budget_spent(e2b_req *req) {
  const e2b_client *c = req_client(req);
  e2b_err_set(&req->err, E2B_ERR_TIMEOUT, req->op,
              "no answer within the call's total budget of %ld ms (budget_ms), %d attempt%s",
              c ? c->budget_ms : 0, req->attempts, req->attempts == 1 ? "" : "s");
}

/* Caps this attempt by what is left of the call's budget; 0 once it is spent. */
static int cap_attempt(e2b_req *req) {
  const e2b_client *c = req_client(req);
  if (!req->unary_ms || !c) return 1;
  int64_t now = e2b_now_ms();
  if (!req->budget_end_ms) req->budget_end_ms = now + c->budget_ms;
  int64_t left = req->budget_end_ms - now;
  if (left <= 0) return 0;
  curl_easy_setopt(req->easy, CURLOPT_TIMEOUT_MS, (long)(left < req->unary_ms ? left : req->unary_ms));
  return 1;
}

/* Three budgets can expire; the error says which one. */
static void name_budget(e2b_req *req) {
  curl_off_t connected = 0;
  curl_easy_getinfo(req->easy, CURLINFO_CONNECT_TIME_T, &connected);
  const e2b_client *c = req_client(req);
  long request_ms = c ? c->request_timeout_ms : 0;
  if (req->budget_end_ms && e2b_now_ms() >= req->budget_end_ms - 5) return budget_spent(req);
  if (connected == 0)
    snprintf(req->err.message, sizeof req->err.message,
             "connect timeout: no connection within %ld ms (request_timeout_ms)", request_ms);
  else
    snprintf(req->err.message, sizeof req->err.message,
             "request timeout: no complete answer within %ld ms (request_timeout_ms)", request_ms);
}

/* ---- retries ---- */

/* Failures after which the request cannot have been processed. */
static int never_reached_server(const e2b_req *req, CURLcode rc) {
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
         (rc == CURLE_OK && req->status == 429);
}

static int64_t backoff_ms(const e2b_req *req) {
  if (req->retry_after_ms >= 0) return req->retry_after_ms < 60000 ? req->retry_after_ms : 60000;
  int64_t cap = 250;
  for (int i = 1; i < req->attempts && cap < 4000; i++) cap *= 2;
  unsigned char r = 0;
  e2b_random_bytes(&r, 1);
  return cap / 2 + (cap / 2) * r / 255; /* jitter in [cap/2, cap] */
}

/* Decides whether a failed attempt is repeated; arms the retry timer if so. */
static int schedule_retry(e2b_req *req, CURLcode rc) {
  const e2b_client *c = req->client ? req->client : req->sbx ? req->sbx->client : NULL;
  if (!c || req->attempts > c->max_retries || req->mode == BODY_EVENTS || req->mode == BODY_WATCH) return 0;
  if (!req->err.retryable) return 0;
  if (!req->idempotent && !never_reached_server(req, rc)) return 0;
  if (req->mime || req->send_started || req->send_ended) return 0; /* uploads are not replayed */
  int64_t wait = backoff_ms(req);
  if (req->budget_end_ms && e2b_now_ms() + wait >= req->budget_end_ms) return 0;
  req->waiting_retry = 1;
  e2b_req_arm_timer(req, wait);
  if (req->client) release_slot(req);
  return 1;
}

static void start_transfer(e2b_req *req);

static void retry_now(e2b_req *req) {
  req->waiting_retry = 0;
  e2b_error_clear(&req->err);
  req->status = 0;
  req->retry_after_ms = -1;
  req->response_body.len = 0;
  start_transfer(req);
}

static void complete(e2b_req *req, CURLcode rc) {
  if (req->done) return;
  release_end(req);
  if (req->client) release_slot(req);
  if (req->err.code == E2B_OK) {
    long code = 0;
    curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code) req->status = (int)code;
    if (rc == CURLE_ABORTED_BY_CALLBACK && req->replay_refused) {
      e2b_err_set(&req->err, E2B_ERR_UNAVAILABLE, req->op,
                  "the connection closed before any answer; the request is not sent again, as the "
                  "server may have carried it out");
    } else if (rc != CURLE_OK) {
      e2b_err_from_curl(&req->err, rc, req->op, req->curl_error);
      if (rc == CURLE_OPERATION_TIMEDOUT) name_budget(req);
    } else if (!is_ok_status(req)) {
      e2b_err_from_http(&req->err, req->status, req->error_style, req->op,
                        req->response_body.data, req->response_body.len, req->retry_after_ms);
    } else if (req->mode == BODY_BUFFER) {
      finish_buffered(req);
    } else if ((req->mode == BODY_EVENTS || req->mode == BODY_WATCH) && !req->end_stream_seen) {
      fail_protocol(req, e2b_envelope_idle(&req->decoder)
                             ? "stream ended without an end-of-stream message"
                             : "stream ended inside a message");
    }
    if (req->err.code != E2B_OK && schedule_retry(req, rc)) return;
  }
  if (!req->err.op[0]) snprintf(req->err.op, sizeof req->err.op, "%s", req->op);
  req->done = 1;
  e2b_req_mark_dirty(req);
}

/* A timer of req fired: a retry's backoff ended, a composite's wait is
 * over, or a stream's idle budget is to be checked. */
static void on_timer(e2b_req *req) {
  if (req->waiting_retry)
    retry_now(req);
  else if (req->advance)
    e2b_req_mark_dirty(req); /* composites advance on their timer */
  else if (req->lingering)
    e2b_req_fail(req, &(e2b_error){.code = E2B_ERR_TIMEOUT}); /* its connection is closed with it */
  else {
    release_end(req); /* if held: the body still has not ended, the idle check takes over */
    idle_check(req);
  }
}

/* What the loop calls back: it knows requests only through this table. */
static const e2b_req_hooks transfer_hooks = {complete, on_timer, e2b_req_free};

/* ---- starting ---- */

static void start_transfer(e2b_req *req) {
  e2b_client *c = req->client;
  if (c && c->max_inflight > 0 && c->inflight >= c->max_inflight) {
    req->queued = 1;
    if (c->queue_tail)
      c->queue_tail->queue_next = req;
    else
      c->queue_head = req;
    c->queue_tail = req;
    return;
  }
  if (c) {
    c->inflight++;
    req->holds_slot = 1;
  }
  if (!cap_attempt(req)) {
    budget_spent(req);
    e2b_error spent = req->err;
    e2b_req_fail(req, &spent);
    return;
  }
  req->attempts++;
  req->sends = 0;
  req->replay_refused = 0;
  if (req->idle_ms) {
    req->last_byte_ms = e2b_now_ms();
    e2b_req_arm_timer(req, req->idle_ms);
  }
  if (curl_multi_add_handle(req->loop->multi, req->easy) != CURLM_OK) {
    e2b_error err;
    e2b_err_set(&err, E2B_ERR_UNAVAILABLE, req->op, "could not start the transfer");
    e2b_req_fail(req, &err);
    return;
  }
  req->added = 1;
  e2b_loop_count_transfer(req->loop, +1);
}

static void start_queued(e2b_client *c) {
  while (c->queue_head && (c->max_inflight <= 0 || c->inflight < c->max_inflight)) {
    e2b_req *req = c->queue_head;
    c->queue_head = req->queue_next;
    if (!c->queue_head) c->queue_tail = NULL;
    req->queued = 0;
    req->queue_next = NULL;
    start_transfer(req);
  }
}

int e2b_req_start(e2b_req *req, e2b_error *err) {
  CURL *e = req->easy;
  curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)req);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, req->curl_error);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, req->headers);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, req);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, req);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  /* TLS verification is always on; these are curl's defaults, stated so no
   * later change can silently drop them. */
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
  /* ca_file replaces curl's CA bundle; its CA directory (Debian:
   * /etc/ssl/certs) stays, so public endpoints still verify. */
  const e2b_client *owner = req->client ? req->client : req->sbx ? req->sbx->client : NULL;
  if (owner && owner->ca_file) curl_easy_setopt(e, CURLOPT_CAINFO, owner->ca_file);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  if (req->mime) curl_easy_setopt(e, CURLOPT_MIMEPOST, req->mime);
  (void)err;
  start_transfer(req);
  return 0;
}

/* ---- stream consumers ---- */

static void maybe_unpause(e2b_req *req) {
  /* A composite refills its queue from its children when asked. */
  if (req->advance) {
    if (req->throttled && !req->done && req->queued_bytes < E2B_STREAM_QUEUE_CAP / 2) {
      req->throttled = 0;
      e2b_req_mark_dirty(req);
    }
    return;
  }
  if (req->recv_paused && !req->done && req->queued_bytes < E2B_STREAM_QUEUE_CAP / 2) {
    req->recv_paused = 0;
    curl_easy_pause(req->easy, CURLPAUSE_CONT);
  }
}

static int take_queued(e2b_req *req) {
  free(req->current);
  req->current = NULL;
  queued *node = req->queue_head;
  if (!node) {
    maybe_unpause(req);
    return req->done ? -1 : 0;
  }
  req->queue_head = node->next;
  if (!req->queue_head) req->queue_tail = NULL;
  req->queued_bytes -= node->len;
  req->current = node;
  maybe_unpause(req);
  return 1;
}

int e2b_req_next_event(e2b_req *req, e2b_proc_event *ev) {
  int rc = take_queued(req);
  if (rc == 1)
    *ev = req->current->ev;
  else
    memset(ev, 0, sizeof *ev);
  return rc;
}

int e2b_req_next_chunk(e2b_req *req, const uint8_t **data, size_t *len) {
  int rc = take_queued(req);
  *data = rc == 1 ? req->current->ev.data : NULL;
  *len = rc == 1 ? req->current->ev.len : 0;
  return rc;
}

size_t e2b_req_queued(const e2b_req *req) { return req->queued_bytes; }

int e2b_req_peek_event(e2b_req *req, e2b_proc_event *ev) {
  if (!req->queue_head) {
    memset(ev, 0, sizeof *ev);
    maybe_unpause(req);
    return req->done ? -1 : 0;
  }
  *ev = req->queue_head->ev;
  return 1;
}

void e2b_req_consume(e2b_req *req, size_t n) {
  queued *head = req->queue_head;
  if (!head) return;
  if (head->ev.len > n) {
    head->ev.data += n;
    head->ev.len -= n;
    head->len -= n;
    req->queued_bytes -= n;
  } else {
    req->queue_head = head->next;
    if (!req->queue_head) req->queue_tail = NULL;
    req->queued_bytes -= head->len;
    recycle(req, head);
  }
  maybe_unpause(req);
}

/* Moves queued output between requests without copying (composites). */
queued *e2b_req_pop_node(e2b_req *req) {
  queued *node = req->queue_head;
  if (!node) return NULL;
  req->queue_head = node->next;
  if (!req->queue_head) req->queue_tail = NULL;
  req->queued_bytes -= node->len;
  node->next = NULL;
  maybe_unpause(req);
  return node;
}

void e2b_req_push_node(e2b_req *req, queued *node) {
  node->next = NULL;
  push_queued(req, node);
}

/* ---- upload producers ---- */

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
