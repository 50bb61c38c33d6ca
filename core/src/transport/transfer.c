/* transfer.c — one HTTP transfer, curl's side of a request: building and
 * starting the easy handle, its header and body callbacks (buffered
 * answers, Connect streams, downloads), retries of idempotent calls with
 * jittered backoff (honouring Retry-After) within the call's budget, and
 * the client's cap on control-plane requests in flight. What a transfer
 * hands its reader is queue.c's; what it uploads, upload.c's. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The parser of a 2xx whose body says nothing we keep. */
int e2b_parse_nothing(e2b_req *req, json_t *body, e2b_error *err) { return 0; }

/* ---- the easy handle ---- */

e2b_req *e2b_req_new(e2b_loop *loop, const char *op, e2b_error *err) {
  /* curl's error buffer lives after the struct: composites, which share the
   * struct, have no transfer and so no need of it. */
  e2b_req *req = calloc(1, sizeof *req + CURL_ERROR_SIZE);
  if (!req || !(req->easy = curl_easy_init())) {
    free(req);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "out of memory");
    return NULL;
  }
  req->xfer.curl_error = (char *)(req + 1);
  e2b_req_init(req, loop, op);
  req->xfer.ok_status_min = 200;
  req->xfer.ok_status_max = 299;
  e2b_envelope_decoder_init(&req->xfer.decoder, E2B_MAX_ENVELOPE);
  return req;
}

/* Statuses up to max count as answers (the body goes to the parser) rather
 * than as the request's failure: for calls where a 404 is a reply. */
void e2b_req_accept_status(e2b_req *req, int max) { req->xfer.ok_status_max = max; }

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

/* What the transfer owns, freed with its request (e2b_req_free). */
void e2b_transfer_free(e2b_req *req) {
  if (req->easy) curl_easy_cleanup(req->easy);
  curl_slist_free_all(req->headers);
  curl_mime_free(req->mime);
  e2b_growbuf_free(&req->xfer.request_body);
  e2b_growbuf_free(&req->xfer.response_body);
  e2b_upload_free(req);
  e2b_envelope_decoder_free(&req->xfer.decoder);
}

/* ---- the control-plane cap ---- */

static void start_queued(e2b_client *c);

static void release_slot(e2b_req *req) {
  if (!req->holds_slot) return;
  req->holds_slot = 0;
  req->client->inflight--;
  start_queued(req->client);
}

void e2b_slot_queue_remove(e2b_req **head, e2b_req **tail, e2b_req *req) {
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
  e2b_slot_queue_remove(&req->client->queue_head, &req->client->queue_tail, req);
  req->queued = 0;
}

void e2b_transfer_detach(e2b_req *req) {
  if (req->xfer.added) {
    curl_multi_remove_handle(req->loop->multi, req->easy);
    e2b_loop_count_transfer(req->loop, -1);
    req->xfer.added = 0;
  }
  if (req->client) {
    unqueue(req);
    release_slot(req);
  }
  e2b_req_disarm_timer(req);
  req->xfer.waiting_retry = 0;
}

void e2b_transfer_stop(e2b_req *req, const e2b_error *err) {
  if (req->done) return;
  e2b_queue_release_end(req);
  req->err = *err;
  if (!req->err.op[0]) snprintf(req->err.op, sizeof req->err.op, "%s", req->op);
  req->done = 1;
  e2b_transfer_detach(req);
  e2b_req_mark_dirty(req);
}

/* ---- curl callbacks ---- */

/* The client whose servers answered req over HTTP/2 learns it (saw_h2). */
static void note_http_version(e2b_req *req) {
  long version = 0;
  e2b_client *owner = req->client ? req->client : req->sbx ? req->sbx->client : NULL;
  curl_easy_getinfo(req->easy, CURLINFO_HTTP_VERSION, &version);
  if (owner && version == CURL_HTTP_VERSION_2_0) owner->saw_h2 = 1;
}

static size_t on_header(char *line, size_t size, size_t n, void *ud) {
  e2b_req *req = ud;
  size_t len = size * n;
  req->xfer.last_byte_ms = e2b_now_ms();
  if (len > 12 && strncmp(line, "HTTP/", 5) == 0) {
    long code = 0;
    curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &code);
    req->status = (int)code;
    note_http_version(req);
    /* A new status line (after 100 Continue or a redirect) starts afresh. */
    req->xfer.response_body.len = 0;
  } else if (len > 12 && strncasecmp(line, "retry-after:", 12) == 0) {
    long secs = strtol(line + 12, NULL, 10);
    if (secs >= 0) req->xfer.retry_after_ms = secs * 1000;
  }
  return len;
}

static int is_ok_status(const e2b_req *req) {
  return req->status >= req->xfer.ok_status_min && req->status <= req->xfer.ok_status_max;
}

static void fail_protocol(e2b_req *req, const char *what) {
  e2b_err_set(&req->err, E2B_ERR_PROTOCOL, req->op, "%s", what);
}

/* Handles one complete Connect envelope of a process stream. */
static int on_envelope(e2b_req *req) {
  e2b_envelope_decoder *d = &req->xfer.decoder;
  if (req->xfer.end_stream_seen) {
    fail_protocol(req, "data after the end of the stream");
    return -1;
  }
  if (d->flags & E2B_ENV_FLAG_COMPRESSED) {
    fail_protocol(req, "compressed stream message (never negotiated)");
    return -1;
  }
  if (d->flags & E2B_ENV_FLAG_END_STREAM) {
    req->xfer.end_stream_seen = 1;
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
  if (node) e2b_queue_push(req, node);
  return 0;
}

static size_t on_stream_body(e2b_req *req, const uint8_t *data, size_t len) {
  size_t pos = 0;
  while (pos < len) {
    size_t used = 0;
    e2b_envelope_status st = e2b_envelope_feed(&req->xfer.decoder, data + pos, len - pos, &used);
    pos += used;
    if (st == E2B_ENV_FRAME) {
      int rc = on_envelope(req);
      e2b_envelope_decoder_reset(&req->xfer.decoder);
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
  queued *node = e2b_queue_chunk(req, len);
  if (!node) {
    e2b_err_set(&req->err, E2B_ERR_UNAVAILABLE, req->op, "out of memory");
    return 0;
  }
  memcpy(node + 1, data, len);
  node->ev.type = E2B_EVENT_STDOUT;
  node->ev.data = (const uint8_t *)(node + 1);
  node->ev.len = len;
  node->len = len;
  e2b_queue_push(req, node);
  return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud) {
  e2b_req *req = ud;
  size_t len = size * n;
  req->xfer.last_byte_ms = e2b_now_ms();
  if (req->status == 0) {
    long code = 0;
    curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &code);
    req->status = (int)code;
  }
  if (req->mode == BODY_BUFFER || !is_ok_status(req)) {
    if (req->xfer.response_body.len + len > E2B_MAX_JSON_BODY) {
      fail_protocol(req, "response body larger than 16 MiB");
      return 0;
    }
    if (e2b_growbuf_append(&req->xfer.response_body, data, len) != 0) return 0;
    return len;
  }
  /* Once bytes reach the consumer, repeating the request could repeat them. */
  req->idempotent = 0;
  /* A stream's answer is coming, so its request was sent (curl has read its
   * headers too), and streams are never sent twice (neither retried nor
   * redirected): its body, which for a kept command holds the whole wrapper
   * script, and its header list are no longer needed while the stream may
   * stay open for hours. */
  if (req->mode != BODY_CHUNKS && (req->xfer.request_body.data || req->headers)) {
    e2b_growbuf_free(&req->xfer.request_body);
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

static void finish_buffered(e2b_req *req) {
  if (!req->parse) return;
  json_error_t jerr;
  json_t *root = NULL;
  if (req->xfer.response_body.len > 0) {
    root = json_loadb(req->xfer.response_body.data, req->xfer.response_body.len, JSON_DECODE_ANY, &jerr);
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
  int64_t quiet = e2b_now_ms() - req->xfer.last_byte_ms;
  if (req->recv_paused || quiet < req->idle_ms) {
    e2b_req_arm_timer(req, req->recv_paused ? req->idle_ms : req->idle_ms - quiet);
    return;
  }
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_TIMEOUT, req->op,
              "idle timeout: the stream was silent for %ld ms (idle_timeout_ms)", req->idle_ms);
  e2b_transfer_stop(req, &err);
}

static const e2b_client *req_client(const e2b_req *req) {
  return req->client ? req->client : req->sbx ? req->sbx->client : NULL;
}

void e2b_req_set_unary(e2b_req *req, const e2b_client *c) {
  req->xfer.unary_ms = c->request_timeout_ms;
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
  if (req->xfer.sends++ == 0) return CURL_PREREQFUNC_OK;
  req->xfer.replay_refused = 1;
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
              c ? c->budget_ms : 0, req->xfer.attempts, req->xfer.attempts == 1 ? "" : "s");
}

/* Caps this attempt by what is left of the call's budget; 0 once it is spent. */
static int cap_attempt(e2b_req *req) {
  const e2b_client *c = req_client(req);
  if (!req->xfer.unary_ms || !c) return 1;
  int64_t now = e2b_now_ms();
  if (!req->xfer.budget_end_ms) req->xfer.budget_end_ms = now + c->budget_ms;
  int64_t left = req->xfer.budget_end_ms - now;
  if (left <= 0) return 0;
  curl_easy_setopt(req->easy, CURLOPT_TIMEOUT_MS, (long)(left < req->xfer.unary_ms ? left : req->xfer.unary_ms));
  return 1;
}

/* Three budgets can expire; the error says which one. */
static void name_budget(e2b_req *req) {
  curl_off_t connected = 0;
  curl_easy_getinfo(req->easy, CURLINFO_CONNECT_TIME_T, &connected);
  const e2b_client *c = req_client(req);
  long request_ms = c ? c->request_timeout_ms : 0;
  if (req->xfer.budget_end_ms && e2b_now_ms() >= req->xfer.budget_end_ms - 5) return budget_spent(req);
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
  if (req->xfer.retry_after_ms >= 0) return req->xfer.retry_after_ms < 60000 ? req->xfer.retry_after_ms : 60000;
  int64_t cap = 250;
  for (int i = 1; i < req->xfer.attempts && cap < 4000; i++) cap *= 2;
  unsigned char r = 0;
  e2b_random_bytes(&r, 1);
  return cap / 2 + (cap / 2) * r / 255; /* jitter in [cap/2, cap] */
}

/* Decides whether a failed attempt is repeated; arms the retry timer if so. */
static int schedule_retry(e2b_req *req, CURLcode rc) {
  const e2b_client *c = req->client ? req->client : req->sbx ? req->sbx->client : NULL;
  if (!c || req->xfer.attempts > c->max_retries || req->mode == BODY_EVENTS || req->mode == BODY_WATCH) return 0;
  if (!req->err.retryable) return 0;
  if (!req->idempotent && !never_reached_server(req, rc)) return 0;
  if (req->mime || req->up.started || req->up.ended) return 0; /* uploads are not replayed */
  int64_t wait = backoff_ms(req);
  if (req->xfer.budget_end_ms && e2b_now_ms() + wait >= req->xfer.budget_end_ms) return 0;
  req->xfer.waiting_retry = 1;
  e2b_req_arm_timer(req, wait);
  if (req->client) release_slot(req);
  return 1;
}

static void start_transfer(e2b_req *req);

static void retry_now(e2b_req *req) {
  req->xfer.waiting_retry = 0;
  e2b_error_clear(&req->err);
  req->status = 0;
  req->xfer.retry_after_ms = -1;
  req->xfer.response_body.len = 0;
  start_transfer(req);
}

/* curl finished req's transfer with rc (the loop took it out of the multi). */
void e2b_transfer_completed(e2b_req *req, CURLcode rc) {
  if (req->done) return;
  e2b_queue_release_end(req);
  if (req->client) release_slot(req);
  if (req->err.code == E2B_OK) {
    long code = 0;
    curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code) req->status = (int)code;
    if (rc == CURLE_ABORTED_BY_CALLBACK && req->xfer.replay_refused) {
      e2b_err_set(&req->err, E2B_ERR_UNAVAILABLE, req->op,
                  "the connection closed before any answer; the request is not sent again, as the "
                  "server may have carried it out");
    } else if (rc != CURLE_OK) {
      e2b_err_from_curl(&req->err, rc, req->op, req->xfer.curl_error);
      if (rc == CURLE_OPERATION_TIMEDOUT) name_budget(req);
    } else if (!is_ok_status(req)) {
      e2b_err_from_http(&req->err, req->status, req->error_style, req->op,
                        req->xfer.response_body.data, req->xfer.response_body.len, req->xfer.retry_after_ms);
    } else if (req->mode == BODY_BUFFER) {
      finish_buffered(req);
    } else if ((req->mode == BODY_EVENTS || req->mode == BODY_WATCH) && !req->xfer.end_stream_seen) {
      fail_protocol(req, e2b_envelope_idle(&req->xfer.decoder)
                             ? "stream ended without an end-of-stream message"
                             : "stream ended inside a message");
    }
    if (req->err.code != E2B_OK && schedule_retry(req, rc)) return;
  }
  if (!req->err.op[0]) snprintf(req->err.op, sizeof req->err.op, "%s", req->op);
  req->done = 1;
  e2b_req_mark_dirty(req);
}

/* req's own timer fired (e2b_req_timer_fired): a retry's backoff ended,
 * or a stream's held end event or idle budget is due. */
void e2b_transfer_timer(e2b_req *req) {
  if (req->xfer.waiting_retry) {
    retry_now(req);
    return;
  }
  e2b_queue_release_end(req); /* if held: the body still has not ended, the idle check takes over */
  idle_check(req);
}

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
    e2b_transfer_stop(req, &spent);
    return;
  }
  req->xfer.attempts++;
  req->xfer.sends = 0;
  req->xfer.replay_refused = 0;
  if (req->idle_ms) {
    req->xfer.last_byte_ms = e2b_now_ms();
    e2b_req_arm_timer(req, req->idle_ms);
  }
  if (curl_multi_add_handle(req->loop->multi, req->easy) != CURLM_OK) {
    e2b_error err;
    e2b_err_set(&err, E2B_ERR_UNAVAILABLE, req->op, "could not start the transfer");
    e2b_transfer_stop(req, &err);
    return;
  }
  req->xfer.added = 1;
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
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, req->xfer.curl_error);
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
  /* Once its servers answered over HTTP/2, a transfer that finds no
   * connection to its host waits for one being set up to say whether it
   * multiplexes, rather than opening its own: 20 runs started together on
   * a new sandbox open 1 connection, not 20 (bench/README.md#network).
   * Not before: over HTTP/1.1 that wait is a set-up's time lost. */
  if (owner && owner->saw_h2) curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  (void)err;
  start_transfer(req);
  return 0;
}

/* ---- stream consumers ---- */
