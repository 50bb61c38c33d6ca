/* internal.h — libe2b's private structures, shared by its source files. */
#ifndef E2B_INTERNAL_H
#define E2B_INTERNAL_H

#include "e2b.h"
#include "codec.h"

#include <curl/curl.h>
#include <stddef.h>
#include <jansson.h>

/* Limits that keep memory bounded whatever the peer sends. */
#define E2B_MAX_JSON_BODY (16u << 20)     /* unary JSON responses */
#define E2B_MAX_ENVELOPE (16u << 20)      /* one Connect stream message */
#define E2B_STREAM_QUEUE_CAP (4u << 20)   /* queued stream bytes before the transfer pauses */
#define E2B_FILE_IO_BUFFER (256L << 10)   /* curl's socket buffers for /files transfers */
#define E2B_EVENT_STREAM_BUFFER 1024L /* curl's receive buffer for streams of events, not output */
#define E2B_SMALL_READ_BUFFER 1024L   /* curl's least receive buffer: a /files read known to be small */
#define E2B_UPLOAD_LOW_WATER (1u << 20)   /* upload backlog at which the producer is told to send more */
#define E2B_UPLOAD_QUEUE_CAP (1u << 20)   /* queued upload bytes a producer should not exceed */
#define E2B_IDLE_CONNECTIONS 64L        /* finished connections curl keeps for reuse, at least */
#define E2B_IDLE_CONNECTIONS_MAX 256L   /* and at most, after a burst (E2B_IDLE_HOLD_MS) */
#define E2B_IDLE_HOLD_MS 30000          /* how long a burst's connections are kept for the next */
#define E2B_ENVD_PORT 49983

typedef struct e2b_bridge e2b_bridge;
typedef struct e2b_sock {
  int fd;
  int what; /* CURL_POLL_IN / _OUT / _INOUT */
} e2b_sock;

struct e2b_loop {
  int refs;
  CURLM *multi;
  e2b_req *dirty;   /* requests that progressed since the last notification round */
  e2b_req **timers; /* requests with an armed timer (retries, backoffs, deadlines) */
  size_t timer_count, timer_cap;
  size_t unattended; /* autofree requests not yet finished */
  e2b_sock *socks;   /* curl's sockets and what it waits for on each (events.c) */
  size_t sock_count, sock_cap;
  int ep, wake;      /* their epoll set and e2b_loop_wakeup's eventfd (Linux) */
  int pid;           /* the process the set belongs to: a forked child makes its own */
  e2b_bridge *bridge; /* the readiness bridge, once a host opened it */
  size_t transfers;  /* easy handles in the multi (see e2b_loop_count_transfer) */
  size_t peak;       /* the most of them at once since peak_at, E2B_IDLE_HOLD_MS at most ago */
  int64_t peak_at;
  size_t starts;     /* process starts waiting for their answer (startq.c) */
  size_t streams_held; /* kept commands running on with their own streams (track.c) */
  struct e2b_start_wait *start_head, *start_tail; /* starts waiting for a slot */
};

struct e2b_client {
  int refs;
  e2b_loop *loop;
  char *api_key;
  char *domain;
  char *api_url;
  char *sandbox_url;
  char *ca_file;            /* extra CAs to trust (curl's CAINFO), or NULL */
  char *template_id;
  char *user_agent;
  long request_timeout_ms;
  long budget_ms;           /* one unary call, every attempt and backoff included */
  int max_retries;          /* extra attempts for retryable failures */
  int max_inflight;         /* control-plane requests in flight at once; 0: no cap */
  int inflight;
  e2b_req *queue_head, *queue_tail; /* control-plane requests waiting for a slot */
  e2b_req *create_owner;    /* the provisioning that holds the create slot */
  e2b_req *create_queue_head, *create_queue_tail;
  char *owner;              /* owner tag written into created sandboxes */
  int page_size;
  int create_route;         /* E2B_ROUTE_*: the create route this backend answered (create.c) */
  int connect_route;        /* E2B_CONNECT_*: whether its connect route answered (lifecycle.c) */
  int saw_h2;               /* one of its servers answered over HTTP/2: transfers wait to multiplex (transfer.c) */
};

/* Which create route a client found its backend to have: the live API's
 * POST /v2/sandboxes, or only POST /sandboxes (E2B built from e2b-dev/infra). */
enum { E2B_ROUTE_UNKNOWN = 0, E2B_ROUTE_V2, E2B_ROUTE_V1 };
/* Whether it has POST /sandboxes/{id}/connect, or only /resume (E2B built
 * from e2b-dev/infra before connect came, in October 2025). */
enum { E2B_CONNECT_UNKNOWN = 0, E2B_CONNECT_ROUTE, E2B_CONNECT_RESUME };

/* How many tags of large kept output a sandbox handle remembers (forget.c). */
#define E2B_LARGE_MAX 16

struct e2b_sbx {
  int refs;
  e2b_client *client;
  char *sandbox_id;
  char *access_token;
  char *envd_url;
  char *direct_url; /* the sandbox's own envd host: what a signed URL names */
  char *envd_version; /* as the control plane reported it; NULL: unknown */
  /* While kept-output readers wait on it: the watch holds a reference
   * (so the handle never goes before it), and ends once no reader is left
   * and the owner released the handle (kept/release.c). */
  struct e2b_outwatch *outwatch;
  int released;                  /* the owner called e2b_sbx_release */
  struct e2b_forget *forgets;    /* kept files the next command may remove */
  size_t forget_count, forget_cap;
  size_t forget_waited;          /* kept commands started since the queue was last emptied */
  char *large[E2B_LARGE_MAX];    /* tags whose kept files are large: removed by the next command */
  int64_t large_bytes[E2B_LARGE_MAX]; /* ... and how many bytes their readers saw */
  size_t large_count;
  size_t followed; /* kept commands whose wrappers follow their files (track.c) */
  int unfollowable; /* a wrapper said following does not work here: none is asked to again */
  e2b_error gone; /* set once a look found the sandbox gone (gone.c) */
};

typedef struct e2b_forget {
  char *hex;  /* the tag in hex: the files' name */
  char *user; /* who ran it: that user or root may remove the files */
  int64_t bytes; /* large: what its readers saw (the next command takes it); 0 small */
} e2b_forget;

/* How a response body is handled. */
typedef enum req_body_mode {
  BODY_BUFFER,        /* collect (capped), parse at completion */
  BODY_EVENTS,        /* Connect server stream of process events */
  BODY_WATCH,         /* Connect server stream of WatchDir events */
  BODY_CHUNKS         /* raw bytes handed out as they arrive (file download) */
} req_body_mode;

/* How a non-2xx answer is turned into an e2b_error. */
typedef enum req_error_style {
  ERR_CONTROL,        /* control plane: {"code": int, "message"} */
  ERR_ENVD_HTTP,      /* envd /files, /health: {"code": int, "message"} */
  ERR_CONNECT         /* Connect RPC: {"code": "string", "message"} */
} req_error_style;

typedef struct queued {
  struct queued *next;
  e2b_proc_event ev;  /* data/status/error point into this allocation */
  size_t len;         /* bytes counted against the queue */
  int64_t size;       /* watch events: the entry's size (-1: not said) */
  size_t cap;         /* download chunks: bytes the node can hold (0: not reusable) */
} queued;

typedef struct growbuf {
  char *data;
  size_t len, cap;
} growbuf;

/* Called once with the full 2xx body of a BODY_BUFFER request. */
typedef int (*req_parse_fn)(e2b_req *req, json_t *body, e2b_error *err);

/* A composite request: a state machine over child requests and a timer. */
typedef void (*req_advance_fn)(e2b_req *req);

/* A list of a struct's fields (offsetof()s), for code that frees what a
 * struct owns from one list of it (e2b_free_fields, op kinds). */
#define E2B_FIELDS_END ((size_t)-1)
#define E2B_FIELDS(...) ((const size_t[]){__VA_ARGS__, E2B_FIELDS_END})

/* What the state of one kind of composite owns, said once (a static const
 * per kind, beside its constructor): op.c frees all of it with the op, in
 * this order, so no composite frees its own. */
enum { E2B_OP_HOLDS_NOTHING, E2B_OP_HOLDS_CLIENT, E2B_OP_HOLDS_SBX };
typedef struct e2b_op_kind {
  size_t size;                  /* of the state, zeroed at creation (op->state) */
  void (*release)(void *state); /* first, the whole state still there: the odd owned thing */
  const size_t *children;       /* then these e2b_req * (a child in flight is canceled) */
  const size_t *fanouts;        /* e2b_req ** arrays of children, each before its size_t count */
  const size_t *kvs;            /* e2b_kv_dup's arrays, each before its size_t count */
  const size_t *bufs;           /* growbufs */
  const size_t *allocs;         /* then these pointers, with free() */
  int holds;                    /* E2B_OP_HOLDS_*: the client or sandbox the op is made for, */
  size_t ref;                   /* retained into this field at creation, released last */
  size_t key;                   /* the char * field that gets e2b_op_new's key copied (list it in allocs) */
} e2b_op_kind;

/* What transfer.c alone keeps of a transfer: its curl buffers, its attempts
 * and budgets, the stream decoder (req->xfer). */
typedef struct e2b_xfer {
  char *curl_error;      /* CURL_ERROR_SIZE bytes after the request (composites: NULL) */
  int added;             /* the easy handle is in the multi */
  int ok_status_min, ok_status_max;
  growbuf request_body;
  growbuf response_body; /* BUFFER bodies and error bodies */
  long retry_after_ms;   /* the answer's Retry-After (-1: none) */
  int attempts;
  int waiting_retry;
  int sends;             /* e2b_req_no_replay: this attempt's sends so far (curl's pre-request calls) */
  int replay_refused;    /* curl wanted to send it again: refused */
  long unary_ms;         /* unary calls: per-attempt timeout (0: a stream, no cap) */
  int64_t budget_end_ms; /* unary calls: no attempt or retry past this (set at the first) */
  int64_t last_byte_ms;  /* streams: when the last byte (or header) arrived */
  e2b_envelope_decoder decoder;
  int end_stream_seen;
} e2b_xfer;

/* What a caller uploads, in the pieces it sent, never copied again
 * (upload.c; req->up). */
typedef struct e2b_upload {
  struct sendbuf *head, *tail, *spare; /* spare: a taken piece kept for reuse */
  struct sendbuf *fill;  /* e2b_req_send_room: the piece the caller is filling */
  size_t pending;        /* bytes queued and not yet taken by curl */
  int started;           /* bytes were queued: the request cannot be replayed */
  int ended;
  int paused;
} e2b_upload;

struct e2b_req {
  /* the object (req.c) */
  e2b_loop *loop;
  char op[32];
  e2b_client *client;  /* the one it is made for (a reference), or */
  e2b_sbx *sbx;        /* the sandbox handle (a reference) */
  int done;
  int status;          /* the HTTP status of a transfer's answer */
  e2b_error err;
  int autofree;        /* nobody waits: the loop frees it once it completes */
  int lingering;       /* released, finishing its body unattended (e2b_req_release) */
  int64_t timer_at_ms; /* 0: not armed (loop.c) */
  e2b_notify_fn notify;
  void *notify_ud;
  int dirty;           /* in the loop's list to notify (loop.c) */
  e2b_req *dirty_next;
  /* the one result slot: what the request carries once done, freed with it
   * by result_free, whose identity also tells its shape to the file that
   * made it (e2b_sandboxes); result_kind says which accessors read it */
  void *result;
  void (*result_free)(void *);
  e2b_result_kind result_kind;

  /* a composite (op.c) */
  req_advance_fn advance;
  void *state;
  const e2b_op_kind *kind; /* what the state owns */
  void (*state_free)(e2b_req *req); /* op.c's, so e2b_req_free frees a composite's state */
  e2b_req *parent;     /* set on children of a composite */
  int throttled;       /* composite stopped filling its queue: the reader is behind */

  /* a transfer, as its call's constructor sets it up (control/, envd/) */
  CURL *easy;
  struct curl_slist *headers;
  curl_mime *mime;
  req_body_mode mode;
  int watch_all;       /* BODY_WATCH: queue every event, typed (e2b_fs_watch) */
  req_error_style error_style;
  req_parse_fn parse;
  int idempotent;      /* may be repeated after any retryable failure */
  long idle_ms;        /* streams: fail when nothing arrives for this long */
  /* its control-plane slot (transfer.c) */
  int queued;          /* waiting for a control-plane slot */
  e2b_req *queue_next;
  int holds_slot;
  e2b_xfer xfer;       /* transfer.c's own */

  /* what it hands its reader (queue.c) */
  queued *queue_head, *queue_tail;
  size_t queued_bytes;
  int recv_paused;     /* the transfer is paused: the reader is behind */
  queued *current;     /* event or chunk last handed out; freed on the next call */
  queued *spare;       /* downloads: consumed chunk nodes kept for reuse */
  unsigned spare_count;
  int proc_ended;      /* a process stream whose end event arrived */
  queued *held_end;    /* that end event, held until the body ends */

  e2b_upload up;       /* what a caller uploads (upload.c) */
};

/* ---- events.c: curl's sockets and timer, and the wait on them ---- */
int e2b_events_init(e2b_loop *loop);  /* 0: no descriptor left for the set */
void e2b_events_free(e2b_loop *loop);
int e2b_events_perform(e2b_loop *loop); /* acts on what is ready; returns how many sockets were */
void e2b_events_wait(e2b_loop *loop, long timeout_ms); /* until one is ready, or a wakeup */
void e2b_events_wakeup(e2b_loop *loop); /* any thread */
void e2b_events_watch(e2b_loop *loop, int fd, int what); /* CURL_POLL_*: into the set (the socket callback) */
int e2b_events_fd(e2b_loop *loop); /* the set, this process's own (-1: none) */

/* ---- bridge.c ---- */
void e2b_bridge_stepped(e2b_loop *loop); /* re-arms the watcher after a step */
unsigned long e2b_bridge_wakes(const e2b_loop *loop);     /* bytes written to the host (tests) */

/* ---- error.c ---- */
void e2b_err_set(e2b_error *err, e2b_code code, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int e2b_err_failed(const e2b_error *err);
void e2b_err_from_curl(e2b_error *err, CURLcode rc, const char *op, const char *detail);
void e2b_err_from_http(e2b_error *err, int status, req_error_style style, const char *op,
                       const char *body, size_t body_len, long retry_after_ms);
void e2b_err_from_connect(e2b_error *err, const char *connect_code, const char *message,
                          const char *op);
e2b_code e2b_code_from_connect(const char *connect_code);

/* The files of the transport depend one way, each calling only those after
 * it: step.c -> req.c -> transfer.c -> queue.c, upload.c -> loop.c ->
 * bridge.c; prepare.c calls transfer.c, op.c calls req.c. step.c calls
 * req.c and transfer.c by name. */

/* ---- mem.c: owned-memory helpers (they call nothing else) ---- */
char *e2b_strdup0(const char *s); /* NULL-safe strdup */
/* s cut to at most max bytes, never inside a UTF-8 sequence; NULL stays NULL. */
char *e2b_dup_cut(const char *s, size_t max);
int e2b_growbuf_append(growbuf *b, const void *data, size_t len);
void e2b_growbuf_free(growbuf *b);

/* free()s the pointers of obj at offsets (an E2B_FIELDS list; NULL: none). */
void e2b_free_fields(void *obj, const size_t *offsets);
/* The same, then obj itself (NULL: nothing): a result struct's free. */
void e2b_free_owned(void *obj, const size_t *offsets);
/* Frees a secret (API key, access token) after wiping its bytes, so it does
 * not linger in freed memory. NULL is fine. */
void e2b_free_secret(char *secret);
/* Room for more of the *cap items of size bytes at items, which are full:
 * the array at twice the size (first items the first time), *cap updated;
 * NULL when out of memory, items and *cap untouched. */
void *e2b_grow(void *items, size_t *cap, size_t size, size_t first);

/* ---- envdver.c: the envd version a sandbox reports ---- */
/* 1 when the sandbox reports an envd older than need; and a
 * refusal (unsupported, naming feature and need) of a call that needs it. */
int e2b_envd_below(const e2b_sbx *sbx, const char *need);
int e2b_envd_need(const e2b_sbx *sbx, const char *op, const char *feature, const char *need,
                  e2b_error *err);
#define E2B_ENVD_CLOSE_STDIN "0.5.2"  /* process.Process/CloseStdin */
#define E2B_ENVD_WATCH_ENTRY "0.6.3"  /* WatchDir's includeEntry */
#define E2B_ENVD_WATCH_RECURSIVE "0.1.4" /* WatchDir's recursive */

/* ---- loop.c: the loop object, its timers and its list to notify ---- */
int64_t e2b_now_ms(void);
void e2b_loop_retain(e2b_loop *loop);
/* The fields every request starts with (a transfer or a composite op). */
void e2b_req_init(e2b_req *req, e2b_loop *loop, const char *op);
void e2b_req_arm_timer(e2b_req *req, int64_t delay_ms);
void e2b_req_disarm_timer(e2b_req *req);
void e2b_req_mark_dirty(e2b_req *req);
/* A transfer entered (+1) or left (-1) the multi: keeps curl's connection
 * cache at the transfers running plus as many idle ones as a recent burst
 * used (E2B_IDLE_CONNECTIONS to E2B_IDLE_CONNECTIONS_MAX). */
void e2b_loop_count_transfer(e2b_loop *loop, int delta);

/* ---- step.c: stepping the loop (the public e2b_loop_step, e2b_req_wait) ---- */

/* ---- req.c: the request object (the public e2b_req_* accessors) ---- */
/* Says what a new request's result is (e2b_req_result_kind): every public
 * constructor returns through it. NULL passes through. */
e2b_req *e2b_req_typed(e2b_req *req, e2b_result_kind kind);
void e2b_req_fail(e2b_req *req, const e2b_error *err);
/* Frees req, except a process stream whose end event arrived while its
 * body is still open: only the end-of-stream message and the body's last
 * bytes are to come, so it finishes unattended (at most LINGER_MS) and its
 * connection goes back to the pool instead of being closed under it. What
 * composites call on their children. */
void e2b_req_release(e2b_req *req);
/* req's timer fired (step.c): a composite advances, a lingering stream
 * ends, a transfer retries or checks its idle budget. */
void e2b_req_timer_fired(e2b_req *req);

/* ---- queue.c: what a request hands its reader ---- */
/* A node for len bytes of a download: a spare one when it fits, else new. */
queued *e2b_queue_chunk(e2b_req *req, size_t len);
/* Queues node for the reader (a process's end event may be held a while,
 * until the body ends: END_HOLD_MS). */
void e2b_queue_push(e2b_req *req, queued *node);
void e2b_queue_release_end(e2b_req *req); /* the held end event goes to the reader now */
void e2b_queue_free(e2b_req *req);
queued *e2b_req_pop_node(e2b_req *req);
void e2b_req_push_node(e2b_req *req, queued *node);

/* ---- upload.c: what a caller uploads ---- */
/* curl's read callback of an upload (CURLOPT_READFUNCTION, a mime part's). */
size_t e2b_upload_read_cb(char *buf, size_t size, size_t n, void *ud);
void e2b_upload_free(e2b_req *req);

/* ---- transfer.c: HTTP transfers, curl only ---- */
e2b_req *e2b_req_new(e2b_loop *loop, const char *op, e2b_error *err);
void e2b_req_accept_status(e2b_req *req, int max);
int e2b_req_add_header(e2b_req *req, const char *name, const char *value, e2b_error *err);
int e2b_req_start(e2b_req *req, e2b_error *err); /* adds to the multi; frees req on failure */
/* curl finished req's transfer with rc, the loop having taken it out of the
 * multi (step.c): the answer is judged, retried or delivered. */
void e2b_transfer_completed(e2b_req *req, CURLcode rc);
/* req's own timer (e2b_req_timer_fired): a retry's backoff ended, a held
 * end event or the idle budget is due. */
void e2b_transfer_timer(e2b_req *req);
/* Ends req with err at once (e2b_req_fail): curl lets go of it, its
 * control-plane slot and its timer are freed. */
void e2b_transfer_stop(e2b_req *req, const e2b_error *err);
/* Takes req out of the multi, the slot queue, its slot and the timers. */
void e2b_transfer_detach(e2b_req *req);
void e2b_transfer_free(e2b_req *req); /* what the transfer owns (e2b_req_free) */
/* Marks req as a unary call of c: each attempt is capped by request_timeout_ms
 * and all of them together (with backoff) by budget_ms. */
void e2b_req_set_unary(e2b_req *req, const e2b_client *c);
/* A request that must never reach the server twice (a process's Start, a
 * create): it keeps the connection reuse every other call has, but when a
 * reused connection turns out closed with no answer, curl's own silent
 * second send (on a fresh connection) is refused and the call fails with
 * kind unavailable, as if that connection had died under it. */
void e2b_req_no_replay(e2b_req *req);
/* The req_parse_fn of calls whose 2xx body carries nothing to keep. */
int e2b_parse_nothing(e2b_req *req, json_t *body, e2b_error *err);

/* Takes req out of the client's waiting list head..tail (for a control
 * slot, or the create slot): unlinks it and finds the new tail. */
void e2b_slot_queue_remove(e2b_req **head, e2b_req **tail, e2b_req *req);

/* ---- lifecycle.c: helpers shared by composites ---- */
int64_t e2b_wall_ms(void);
int e2b_take_sandboxes(e2b_req *dst, e2b_req *src);
/* Moves the first sandbox of req's result to *out (req keeps none): -1 when
 * it has none. */
int e2b_take_sandbox(e2b_req *req, e2b_sandbox_info *out);

/* control.c: the create body for the v2 route (NewSandboxV2) or, with v1,
 * the v1 one (NewSandbox: the same and `secure`); NULL with err when the
 * options are refused. e2b_api_create POSTs it (owning it) to that route. */
json_t *e2b_create_body(const e2b_client *c, const e2b_create_opts *o, int v1, e2b_error *err);
e2b_req *e2b_api_create(e2b_client *c, json_t *body, int v1, e2b_error *err);
/* network.c: a network policy judged (update: for PUT /sandboxes/{id}/network,
 * which takes no ingress fields) — 0, or -1 with err naming the field — and
 * translated: for a create {"allow_internet_access", "network"?} to set over
 * the body, for an update the PUT body. n NULL: open egress. */
json_t *e2b_network_fields(const e2b_network *n, int update, const char *op, e2b_error *err);
int e2b_is_ip_or_cidr(const char *s);
/* create.c: e2b_sandbox_create with extra's members (borrowed; NULL: none)
 * set over the body, for what the options cannot say (a fork's copy of its
 * parent's network and volume mounts). */
e2b_req *e2b_create_with(e2b_client *c, const e2b_create_opts *o, json_t *extra, e2b_error *err);
/* What the control plane's sandbox answers leave in the result slot
 * (E2B_RESULT_SANDBOX, _SANDBOXES; control.c). */
typedef struct e2b_sandbox_set {
  e2b_sandbox_info *items;
  size_t count;
  char *next_token; /* a page's: the next page's token; NULL on the last */
  int resumed;      /* a connect's: it resumed a paused sandbox (201) */
  json_t *detail;   /* a GET /sandboxes/{id}'s answer itself (e2b_api_detail) */
} e2b_sandbox_set;
/* req's sandbox list, made empty on first use: NULL when out of memory or
 * when the slot holds a result of another shape. */
e2b_sandbox_set *e2b_sandboxes(e2b_req *req);
/* The same to read: never NULL (an empty list when req holds none). */
const e2b_sandbox_set *e2b_sandboxes_in(const e2b_req *req);
/* GET /sandboxes/{id}: the sandbox (e2b_req_sandbox) and, in the list's
 * detail, the answer's JSON object itself (for fields the record does not keep). */
e2b_req *e2b_api_detail(e2b_client *c, const char *sandbox_id, e2b_error *err);

/* ---- template/files.c: a COPY's hash or gzip tar, done in slices ---- */
typedef struct e2b_files_job e2b_files_job;
/* The job for steps[step] (checked; its paths collected now): the tar into
 * fd, or (fd -1) the files hash. NULL with err. */
e2b_files_job *e2b_files_job_new(const e2b_template *t, size_t step, int fd, e2b_error *err);
/* Reads about budget bytes of files (a path costs some too): 1 when the job
 * is done, 0 when more is left, -1 with err. */
int e2b_files_job_run(e2b_files_job *j, size_t budget, e2b_error *err);
void e2b_files_job_hash(const e2b_files_job *j, char out[E2B_TEMPLATE_HASH_LEN + 1]);
void e2b_files_job_free(e2b_files_job *j);

/* ---- template/build.c: a template call's answer, read from JSON (for fuzz_template) ---- */
enum { E2B_TEMPLATE_ANSWER_REQUEST, E2B_TEMPLATE_ANSWER_LINK, E2B_TEMPLATE_ANSWER_STATUS,
       E2B_TEMPLATE_ANSWER_TAGS, E2B_TEMPLATE_ANSWER_ASSIGNED };
/* Reads body as the answer of that kind of call into req->result (freed with req). */
int e2b_template_parse_answer(e2b_req *req, int kind, json_t *body, e2b_error *err);

/* ---- op.c: composite requests ---- */
/* A composite of kind for client c or sandbox sbx (one of them: its loop is
 * the op's; the kind says whether the op holds it), its state zeroed but for
 * a copy of key, the string it is about (an id, an owner, a tag; NULL: none,
 * and only for a kind with a key field), and its first step due from the
 * loop: fill the rest of the state before returning to it. */
e2b_req *e2b_op_new(const e2b_op_kind *kind, e2b_client *c, e2b_sbx *sbx, const char *op,
                    req_advance_fn advance, const char *key, e2b_error *err);
/* Frees op (a state not filled in) and says "out of memory" in err: NULL. */
e2b_req *e2b_op_nomem(e2b_req *op, e2b_error *err);
/* Makes child report to op: its progress runs op's advance. */
e2b_req *e2b_op_child(e2b_req *op, e2b_req *child);
/* Finishes op with err (NULL: success). */
void e2b_op_finish(e2b_req *op, const e2b_error *err);
/* Runs op's advance once, soon (from the next notification round). */
void e2b_op_kick(e2b_req *op);
/* Owned copies of the caller's e2b_kv arrays, for composites that outlive
 * the call: the same type the raw calls take, so no conversion per call.
 * On failure *dst is NULL and nothing is left allocated. */
int e2b_kv_dup(e2b_kv **dst, const e2b_kv *src, size_t n);
void e2b_kv_free(e2b_kv *kv, size_t n);

/* ---- client.c ---- */
char *e2b_url_escape(const char *s);
void e2b_client_retain(e2b_client *c);
/* The references requests hold on a handle; the last unref frees it. The
 * owner's own hold goes through e2b_sbx_release (kept/release.c). */
void e2b_sbx_retain(e2b_sbx *sbx);
void e2b_sbx_unref(e2b_sbx *sbx);
/* Clears err; -1 with err naming op when sbx is NULL (every envd call's first check). */
int e2b_need_sbx(const e2b_sbx *sbx, const char *op, e2b_error *err);

/* ---- gone.c: an envd failure that may be the sandbox's end ---- */
int e2b_envd_looks_dead(const e2b_error *err);
/* The error a look found the sandbox gone with, or NULL. */
const e2b_error *e2b_sbx_gone(const e2b_sbx *sbx);

/* ---- prepare.c: a request's URL, method, body and headers ---- */
int e2b_client_prepare_control(e2b_client *c, e2b_req *req, const char *method, const char *path,
                               json_t *body, e2b_error *err);
int e2b_sbx_prepare_rpc(e2b_sbx *sbx, e2b_req *req, const char *method_path, const char *user,
                        json_t *body, int stream, e2b_error *err);
int e2b_client_prepare_volume(e2b_client *c, e2b_req *req, const char *method, const char *path,
                              const char *token, json_t *body, e2b_error *err);

/* ---- control.c: raw control-plane calls ---- */
e2b_req *e2b_control(e2b_client *c, const char *op, const char *method, const char *path,
                     json_t *body, req_parse_fn parse, int idempotent, e2b_error *err);
/* e2b_control on a path it takes and frees; a NULL path (a failed
 * allocation) is an out-of-memory error, body released. */
e2b_req *e2b_control_at(e2b_client *c, const char *op, const char *method, char *path, json_t *body,
                        req_parse_fn parse, int idempotent, e2b_error *err);
/* The list filters beyond metadata and state (template, started_after,
 * order): 0, or -1 with err naming the field. */
int e2b_list_filters_check(const e2b_list_opts *o, const char *op, e2b_error *err);
e2b_req *e2b_on_sandbox(e2b_client *c, const char *op, const char *method, const char *id,
                        const char *suffix, json_t *body, req_parse_fn parse, int idempotent,
                        e2b_error *err);
char *e2b_id_path(const char *prefix, const char *id, const char *suffix);
int e2b_take_next_token(e2b_req *req, char **out, e2b_error *err);
e2b_req *e2b_api_pause(e2b_client *c, const char *sandbox_id, int memory, e2b_error *err);
e2b_req *e2b_api_refresh(e2b_client *c, const char *sandbox_id, long seconds, e2b_error *err);
e2b_req *e2b_api_resume(e2b_client *c, const char *sandbox_id, long timeout_ms, e2b_error *err);

/* ---- process.c ---- */
/* Starts an envd RPC (streamed or unary) whose body is `body` (consumed; NULL:
 * out of memory): the request, or NULL with err set. */
e2b_req *e2b_sbx_rpc(e2b_sbx *sbx, const char *op, const char *method_path, const char *user,
                     json_t *body, int stream, req_parse_fn parse, e2b_error *err);
int e2b_proc_opts_check(const e2b_proc_opts *o, e2b_error *err);
/* Why a finished process stream stopped before its end event: its own error,
 * or else (it ended cleanly but early) a protocol error for op in *scratch. */
const e2b_error *e2b_proc_stream_cut(const e2b_req *stream, const char *op, e2b_error *scratch);
/* What a stream carries, for e2b_sbx_stream_rpc. */
#define E2B_STREAM_WATCH 1u  /* WatchDir events (else process events) */
#define E2B_STREAM_WATCH_ALL 4u /* with E2B_STREAM_WATCH: every event, typed (e2b_fs_watch) */
#define E2B_STREAM_EVENTS 2u /* events only, never a command's output: curl gets a small
                              * receive buffer (E2B_EVENT_STREAM_BUFFER), since thousands
                              * of such streams may be open at once */
/* The idle budget a caller's idle_ms means: 0 (or less) is
 * E2B_DEFAULT_IDLE_TIMEOUT_MS. The one place that default is applied: every
 * stream's (process.c), and the budget a kept reader gives failed reads
 * while its stream is parked or broken (track.c). */
long e2b_idle_budget_ms(long idle_ms);
/* A server-streaming envd RPC with the idle budget of add_stream_headers. */
e2b_req *e2b_sbx_stream_rpc(e2b_sbx *sbx, const char *op, const char *method_path, const char *user,
                            json_t *body, long keepalive_s, long idle_ms, long timeout_ms,
                            unsigned flags, e2b_error *err);
/* filesystem.c: a listing's depth (e2b_fs_list, e2b_vol_list): 0 becomes
 * E2B_DEFAULT_LIST_DEPTH; 0, or -1 with err when out of range. */
int e2b_list_depth(long *depth, const char *op, e2b_error *err);
/* control.c: 0 when v is a tri-state (E2B_DEFAULT, E2B_YES, E2B_NO), else
 * -1 with err naming field; the second checks every tri-state of o. */
int e2b_tristate_check(int v, const char *field, const char *op, e2b_error *err);
int e2b_create_tristates_check(const e2b_create_opts *o, const char *op, e2b_error *err);
/* control.c: o->mcp, when set, is the text of a JSON object: 0, or -1 with
 * err naming "mcp". */
int e2b_create_mcp_check(const e2b_create_opts *o, const char *op, e2b_error *err);
/* wrapper.c: o, or with a shell string (o->shell) o spelled as E2B runs
 * one, bash -l -c shell, in *tmp with argv as its args. */
const e2b_proc_opts *e2b_proc_opts_spelled(const e2b_proc_opts *o, e2b_proc_opts *tmp, const char *argv[3]);
/* A Start stream (e2b_proc_start_stream's) whose caller went before envd
 * answered it (a canceled or dropped run or spawn): awaited unattended, and
 * the process its start event names is ended as a dropped handle's is — a
 * kept command (tag given) by e2b_proc_end_async, any other by
 * e2b_proc_stop_async — so no process nobody owns is left running. Takes
 * stream (kill.c). */
void e2b_proc_adopt_start(e2b_sbx *sbx, e2b_req *stream, const char *tag);
/* e2b_proc_start and e2b_proc_connect with e2b_sbx_stream_rpc's flags. */
e2b_req *e2b_proc_start_stream(e2b_sbx *sbx, const e2b_proc_opts *opts, unsigned flags,
                               e2b_error *err);
e2b_req *e2b_proc_connect_stream(e2b_sbx *sbx, uint32_t pid, const char *tag, long idle_timeout_ms,
                                 unsigned flags, e2b_error *err);

/* ---- forget.c: kept files, removed at once or by the next command ---- */
#define E2B_KEPT_ROOT "/tmp/.e2b-proc"
/* A boot id (/proc/sys/kernel/random/boot_id) is a UUID: 36 characters. */
#define E2B_BOOT_ID_LEN 36
char *e2b_kept_prefix(const char *tag); /* E2B_KEPT_ROOT/<hex tag> */
/* filesystem.c: e2b_file_read with curl's receive buffer of `buffer` bytes (1 KiB to
 * E2B_FILE_IO_BUFFER): curl holds it for the whole transfer, so a read
 * known to be small asks for little (thousands may be in flight at once). */
e2b_req *e2b_file_read_sized(e2b_sbx *sbx, const char *path, const char *user, int64_t offset,
                             long buffer, e2b_error *err);
char *e2b_take_forgets(e2b_sbx *sbx, const char *user);
/* A command starting with tag writes that tag's files again: an earlier
 * command's name waiting for removal would remove the new ones. */
void e2b_forget_unqueue(e2b_sbx *sbx, const char *tag);
/* Whether `bytes` of tag's kept output make it large; a large one is
 * remembered with the most bytes told, so once e2b_proc_forget_later has
 * it the next kept command removes it (at once past a bound). */
int e2b_kept_large(e2b_sbx *sbx, const char *tag, int64_t bytes);
void e2b_return_forgets(e2b_sbx *sbx, const char *names, const char *user);

/* ---- wrapper.c: the on-sandbox wrapper of kept commands ---- */
/* What starts a command wrapped: opts (borrowed, not copied) with argv and
 * environment rebuilt, in arrays the struct owns. */
typedef struct e2b_wrapped {
  e2b_proc_opts opts;
  const char **args;
  e2b_kv *env;
  char *names;
  char *script; /* a kept command's wrapper (E2B_PROC) */
  int announces; /* the wrapper checks the program and says E2B_WRAPPER_READY first */
} e2b_wrapped;
/* The first byte a checking wrapper writes to its stdout once the program
 * it runs was found (a shell word, as printf's format). */
#define E2B_WRAPPER_READY "+"
/* A kept wrapper that may park (E2B_WRAP_PARKABLE) traps every signal it
 * can, so only SIGKILL ends it without a status. */
#define E2B_WRAP_PARKABLE 1u
/* A single-shot run's wrapper (E2B_TRACK_SWEEP: a generated tag, never
 * the caller's, which may name a later command's files by then) whose
 * output all came inline with its end leaves its files to the sandbox: it appends
 * "SECONDS HEXNAME" to /tmp/.e2b-proc/swept-<euid>, and a later such
 * wrapper of that user whose list's first line is E2B_KEPT_SWEEP_S old
 * removes, in the background, every listed command that ended at least
 * that long ago. Its caller then has everything and removes nothing: no
 * request once its handle closes, and no name waiting for a batch. A
 * listed command's files stay that long for a reader whose stream was cut
 * before the end reached it: past its idle budget (at most half of it,
 * or it is not listed) that reader has failed, so the files are never
 * removed under one. */
#define E2B_WRAP_SWEEP 2u
#define E2B_KEPT_SWEEP_S 180
/* e2b_proc_track's flag (not public) for run.c's single-shot runs. */
#define E2B_TRACK_SWEEP (1u << 24)
/* Whether a kept process's wrapper listed its files for the sandbox's
 * sweep (E2B_WRAP_SWEEP): then they are not the caller's to remove. */
int e2b_req_proc_swept(const e2b_req *req);
/* A kept wrapper given a follow nonce copies its files onto its own stdout
 * and stderr as they grow (`tail`, where the sandbox has it), and ends its
 * stderr with a trailer instead of its stdout with the flags letter: NUL,
 * E2B_FOLLOW_TRAILER, the nonce (E2B_FOLLOW_NONCE_LEN lowercase hex digits,
 * random per command, so no output ends with it by chance), the flags
 * letter, a newline. */
#define E2B_FOLLOW_TRAILER "E2B="
#define E2B_FOLLOW_NONCE_LEN 8
#define E2B_FOLLOW_TRAILER_LEN (1 + 4 + E2B_FOLLOW_NONCE_LEN + 2)
/* Kept when prefix is set (its output goes to files at prefix, and the
 * forgets' files are removed); the environment pruned to opts's when
 * env_replace; how: E2B_WRAP_*; follow: the nonce, or NULL not to follow.
 * 0, or -1 out of memory (nothing left allocated). */
int e2b_wrap(e2b_wrapped *w, const e2b_proc_opts *opts, const char *prefix, int env_replace,
             const char *forgets, unsigned how, const char *follow);
void e2b_wrapped_free(e2b_wrapped *w);
/* Shows a process e2b_proc_track wrapped as the command it runs. */
void e2b_wrapper_unwrap(e2b_proc_info *p);
/* What a wrapper said on its own stream, read as wrapper.c writes it
 * (bounded): that it found the program (E2B_WRAPPER_READY), or why not
 * ("!ENOENT"/"!EACCES" on stderr), and at a kept command's end the inlined
 * files and the flags letter. */
typedef struct e2b_wrapper_report {
  int announces;     /* it says E2B_WRAPPER_READY before it runs the program */
  int nonempty;      /* bit 0 out, bit 1 err; -1 not said */
  int inlined;       /* bit 0 out, bit 1 err came in out/err */
  growbuf out, err;  /* its own stdout and stderr (bounded) */
  int over;          /* they were more than a wrapper writes: not ours to trust */
  int unfollowed;    /* its trailer said following does not work in this sandbox */
  char start_err[8]; /* it could not start the command: "ENOENT" or "EACCES" */
} e2b_wrapper_report;
/* The most a kept wrapper copies of a file into its own stream at the end. */
#define E2B_WRAPPER_INLINE_MAX 32768
/* Whether n, a stdout chunk of a wrapper that announces, is its
 * announcement (its first byte), which is then taken off n. */
int e2b_wrapper_announced(const e2b_wrapper_report *r, queued *n);
/* Keeps data the wrapper wrote in into (r->out or r->err); past what a
 * wrapper writes, r->over is set instead. */
void e2b_wrapper_heard(e2b_wrapper_report *r, growbuf *into, const uint8_t *data, size_t len);
/* What its stderr said before an announcement: why the program could not start. */
void e2b_wrapper_refusal(e2b_wrapper_report *r);
/* A kept wrapper's stream ended: the flags letter (taken off r->out), or
 * else a refusal. */
void e2b_wrapper_ended(e2b_wrapper_report *r);
/* Following with nonce: how many of the last bytes of data (len of them)
 * may be the start of the trailer, and so wait for the bytes after them. */
size_t e2b_wrapper_trailer_hold(const char *nonce, const uint8_t *data, size_t len);
/* Following, ended: 1 when held is the whole trailer (its flags then set
 * r's nonempty and inlined, which means "came whole on the stream"), else 0. */
int e2b_wrapper_trailer(e2b_wrapper_report *r, const char *nonce, const uint8_t *held, size_t len);
/* A kept exit file's status: "-?DIGITS" then a space (the boot id
 * follows). Returns the space's index, or -1 when the file does not start
 * with one: the command has not ended (the file holds the boot id, perhaps
 * bash's job report behind it). */
long e2b_kept_status(const char *data, size_t len, long *status);

/* ---- startq.c: process starts waiting for their answer ---- */
/* 256: a start that waits for its answer holds its transfer (about 14 KB),
 * and 4,000 spawns at once peaked at 101-120 MB with 1,024 in flight against
 * 76-80 MB with 256, started as fast (bench/README.md, 2026-12-05). 256
 * outruns what one server answers, and on a 100 ms link still allows about
 * 2,500 starts a second. A test build may lower it to exercise the queue. */
#ifndef E2B_STARTS_IN_FLIGHT
#define E2B_STARTS_IN_FLIGHT 256
#endif
/* Kept commands of one loop that keep their own streams once they ran for
 * 2 s, when not told to park or not (track.c): each such stream costs about
 * 11 KB here and a connection and a thread in e2b-local, 10,000 of them
 * about 110 MB more than parked (bench/README.md, 2026-12-05); 256 keep
 * envd's immediate end for what most programs run at once. */
/* Kept commands of one sandbox handle whose wrappers follow their files
 * onto their streams at once (track.c): each runs two `tail` processes
 * there, and each of those holds one of the sandbox user's inotify
 * instances, of which Linux allows 128 by default (E2B's VMs too), shared
 * with envd's watches and the user's own programs. Past this, a streaming
 * reader reads the files beside the sandbox's watch instead. */
#ifndef E2B_FOLLOWED_PER_SANDBOX
#define E2B_FOLLOWED_PER_SANDBOX 8
#endif
#ifndef E2B_STREAMS_HELD
#define E2B_STREAMS_HELD 256
#endif
typedef struct e2b_start_wait {
  struct e2b_start_wait *prev, *next; /* in the loop's queue while queued */
  e2b_req *op;  /* kicked when a slot comes to it */
  int slot;     /* holds one of the E2B_STARTS_IN_FLIGHT slots */
  int queued;
} e2b_start_wait;
/* 1 when w holds a slot (taken now, or handed to it); else 0 and w waits in
 * the loop's queue, and w->op is kicked once a slot is handed to it. */
int e2b_startq_take(e2b_loop *loop, e2b_start_wait *w);
/* Gives up w's slot (passing it to the first waiter) or its place in the queue. */
void e2b_startq_release(e2b_loop *loop, e2b_start_wait *w);
/* An owned deep copy of o (strings, args, env), or NULL without memory. */
e2b_proc_opts *e2b_proc_opts_dup(const e2b_proc_opts *o);
void e2b_proc_opts_free(e2b_proc_opts *o);

/* ---- nameset.c: the names a watch saw change ---- */
#define E2B_NAMESET_MAX 4096 /* slots; past 3/4 of them the set turns lossy */
typedef struct e2b_nameset {
  char **slots; /* open addressing, cap of them; NULL while empty */
  size_t count, cap;
  int lossy;    /* full, or an insert failed: every name may be in it */
} e2b_nameset;
void e2b_nameset_add(e2b_nameset *set, const char *name, size_t len);
/* 1 when name was added (or the set is lossy), else 0. */
int e2b_nameset_maybe(const e2b_nameset *set, const char *name, size_t len);
void e2b_nameset_clear(e2b_nameset *set); /* empty again, nothing allocated */

/* ---- shline.c: how the wrapper runs a kept command string ---- */

typedef enum e2b_sh_plan {
  E2B_SH_SUBSHELL,   /* eval in a subshell: any string */
  E2B_SH_OWN_SHELL,  /* one call of a harmless builtin: in the wrapper's own shell */
  E2B_SH_EXEC,       /* one simple command of a plainly named program: exec'd by the subshell */
  E2B_SH_LIST_EXEC   /* a `;` list whose last part is such a program: the rest, then exec it */
} e2b_sh_plan;
/* The plan for the command string s; *tail: E2B_SH_LIST_EXEC's last part
 * (a pointer into s), else NULL. */
e2b_sh_plan e2b_sh_plan_of(const char *s, const char **tail);

/* ---- outwatch.c: one WatchDir stream per sandbox wakes kept-output readers ---- */
typedef void (*e2b_wake_fn)(e2b_req *op, char file, int64_t size);
/* op is woken (wake(op, c, size)) when an entry named `<prefix>.<c>...` of
 * dir changes (size: its size then, -1 when not said), and with c = 0
 * whenever the watch is lost.
 * Returns 1 when op must read once to catch up (the watch saw its files
 * change, or cannot tell), 0 when not (or when the watch is not live yet:
 * the listing it makes when it starts will tell), -1 on failure (no
 * memory: op polls on its own). */
int e2b_outwatch_subscribe(e2b_sbx *sbx, const char *dir, const char *prefix, e2b_req *op,
                           e2b_wake_fn wake);
void e2b_outwatch_unsubscribe(e2b_sbx *sbx, e2b_req *op);
/* The owner released sbx: its watch ends now unless a reader waits on it
 * (then when the last one leaves). */
void e2b_outwatch_orphaned(e2b_sbx *sbx);
/* Whether events are flowing (else subscribers poll on their own timers). */
int e2b_outwatch_live(const e2b_sbx *sbx);
/* A subscriber parks (tag: its process's tag, kept by the caller until it
 * unparks or unsubscribes) or unparks (tag NULL): while any is parked its
 * process is looked for in a shared list, and one found gone is woken with
 * file 'g'. */
void e2b_outwatch_park(e2b_sbx *sbx, e2b_req *op, const char *tag);
/* When the watch last heard from the sandbox (an event or a list), ms. */
int64_t e2b_outwatch_contact(const e2b_sbx *sbx);

/* ---- parse.c: JSON -> result structs ---- */
int e2b_parse_sandbox(json_t *obj, e2b_sandbox_info *out);
void e2b_sandbox_info_clear(e2b_sandbox_info *sb);
int e2b_parse_entry(json_t *obj, e2b_entry *out);
void e2b_entry_clear(e2b_entry *e);
int e2b_parse_proc_info(json_t *obj, e2b_proc_info *out);
void e2b_proc_info_clear(e2b_proc_info *p);
/* The one reader of a list answer: each item of the JSON array list is
 * parsed by item into the next of size-byte slots (0: keep it, 1: it was
 * cleared and is left out, -1: malformed), in an array made here (*items,
 * NULL when empty), *count of them kept. A malformed item fails the answer,
 * err saying bad (a format taking the item's index) for op: -1, as for no
 * memory. What was kept stays the caller's to free either way. */
int e2b_parse_items(json_t *list, size_t size, int (*item)(json_t *, void *), void **items,
                    size_t *count, const char *op, const char *bad, e2b_error *err);
/* Decodes one process event message into a queue node; *node NULL for keepalives. */
int e2b_parse_proc_event(const char *json, size_t len, queued **node, e2b_error *err);
/* A filesystem event of a watch stream (never handed to users). */
#define E2B_EVENT_FS_INTERNAL ((e2b_event_type)100)
int e2b_parse_watch_event(const char *json, size_t len, int all, queued **node, e2b_error *err);
const char *e2b_json_str(json_t *obj, const char *camel, const char *snake);
/* An integer field (a number, a whole real or a decimal string) within
 * [lo, hi] into *out (0 when absent); -1 when present and not one. */
int e2b_json_int(json_t *obj, const char *camel, const char *snake, int64_t lo, int64_t hi,
                 int64_t *out);

#endif
