/* http.h — request context and response helpers on top of libmicrohttpd. */
#ifndef EMU_HTTP_H
#define EMU_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>

#include "faults.h"
#include "util.h"

struct sandbox;

#define HTTP_JSON_LIMIT (1u << 20) /* control-plane and unary bodies */

typedef struct http_req http_req;
struct http_req {
  struct MHD_Connection *conn;
  const char *method, *url;
  sbuf body;
  size_t body_limit; /* bodies beyond this are discarded and answered 413 */
  int too_large;
  size_t discarded;
  /* Streaming body consumer (instead of buffering); returns 0 or -1 to stop. */
  int (*on_body)(http_req *r, const char *data, size_t n);
  /* Called once the whole body arrived; must queue a response. */
  enum MHD_Result (*on_complete)(http_req *r);
  void *ctx;
  void (*ctx_free)(void *ctx);
  struct sandbox *sb; /* referenced, for envd requests */
  int early_status;   /* when set, answer this error at completion */
  char early_msg[400];
  char early_sandbox[64]; /* an edge 502 names the sandbox not found, as E2B's does */
  const char *early_code; /* a Connect code string: the body is {"code": it, "message"} */
  fault_hit fault;    /* an injected fault that applies to this request */
  int streamed;       /* the response is a stream (drop_mid_stream applies there) */
  int fault_shape;    /* how the injected status answers: FAULT_API, FAULT_CONNECT, FAULT_EDGE */
  char fault_sandbox[64]; /* the sandbox an envd fault names (FAULT_EDGE) */
  int64_t started_ms; /* for the request log */
  unsigned status;    /* the status queued, 0 while none */
};

/* Global facts handlers need. */
typedef struct server_info {
  const char *api_key;
  const char *admin_token; /* X-Admin-Token for /_e2b_local/ (loopback only) */
  char domain[128]; /* localhost:PORT */
  char base_url[160];
  int log_requests; /* --log-requests: one line per request (method, path, status, time) */
  int self_hosted;  /* --api: 0 live; 1 self-hosted, the routes of E2B built from e2b-dev/infra,
                     * without the live API's POST /v2/sandboxes and /v2/sandboxes/{id}/connect;
                     * 2 self-hosted-no-connect, infra before its connect route (October 2025) */
} server_info;
extern server_info g_server;

/* The status this thread last queued (MHD serves a connection on one
 * thread), then 0: how the request log learns a response's status. */
unsigned http_take_status(void);
/* A handler answered on the connection itself (an upgraded tunnel over
 * TLS, tls_tunnel.h) with this status and now drops it (MHD_NO): the log
 * shows the status, and MHD's words for a dropped request are not said.
 * http_take_raw: whether this thread did so, then 0. */
void http_answered_raw(unsigned status);
int http_take_raw(void);
/* Whether this thread just ended a stream because its client left
 * (STREAM_CLIENT_LEFT), then 0: an ordinary close, not worth a log line. */
int http_take_client_left(void);

const char *http_header(struct MHD_Connection *c, const char *name);
const char *http_query(struct MHD_Connection *c, const char *name);
int http_client_fd(struct MHD_Connection *c);

/* Each queues a response and returns MHD's result. json bodies are stolen. */
enum MHD_Result http_json(struct MHD_Connection *c, unsigned status, json_t *body);
enum MHD_Result http_json_hdr(struct MHD_Connection *c, unsigned status, json_t *body,
                              const char *hname, const char *hvalue);
enum MHD_Result http_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
enum MHD_Result http_empty(struct MHD_Connection *c, unsigned status);
/* The same with one header (name NULL: none). */
enum MHD_Result http_empty_h(struct MHD_Connection *c, unsigned status, const char *name, const char *value);
enum MHD_Result http_bytes(struct MHD_Connection *c, unsigned status, const char *content_type,
                           const void *data, size_t len);

/* A streaming (chunked) body produced on demand. fill() may block; it appends
 * bytes to out and returns 0 to continue, 1 when the body is complete, -1
 * to abort the connection (logged: the stream failed), or STREAM_CLIENT_LEFT
 * when the client closed its end (a stream it no longer needs: not logged). */
#define STREAM_CLIENT_LEFT (-2)
typedef struct stream_src {
  int (*fill)(void *ctx, sbuf *out);
  void (*free)(void *ctx);
  void *ctx;
} stream_src;
/* size: the body's length, or MHD_SIZE_UNKNOWN (chunked). connect_frames:
 * the body is Connect envelopes (drop_mid_stream counts messages, not bytes). */
enum MHD_Result http_stream(http_req *r, unsigned status, const char *content_type, uint64_t size,
                            int connect_frames, stream_src src);
/* The same with any response headers: headers is an array of [name, value]. */
enum MHD_Result http_stream_h(http_req *r, unsigned status, json_t *headers, uint64_t size, int connect_frames,
                              stream_src src);

/* len bytes of the regular file fd from offset from, as an
 * application/octet-stream body read 64 KiB at a time; fd is closed when the
 * response is done with it. A file that shrank meanwhile aborts the
 * connection (the promised length cannot be met). */
enum MHD_Result http_stream_file(http_req *r, unsigned status, int fd, uint64_t from, uint64_t len);

/* Parses r->body as JSON; on failure queues 400 and returns NULL with *res set. */
json_t *http_body_json(http_req *r, enum MHD_Result *res);

#endif
