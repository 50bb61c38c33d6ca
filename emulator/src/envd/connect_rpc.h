/* connect_rpc.h — Connect protocol framing for envd's services, JSON and
 * binary protobuf codecs (pb.c), client streams (StreamInput):
 * unary calls, server streams (enveloped request and response, exactly one
 * end-stream frame) and the mapping of errors to Connect codes. */
#ifndef EMU_CONNECT_RPC_H
#define EMU_CONNECT_RPC_H

#include <jansson.h>
#include <stdint.h>

#include "http.h"
#include "pb.h"

struct sandbox;

typedef struct rpc_err {
  const char *code; /* Connect code string; NULL = no error */
  char msg[256];
} rpc_err;

void rpc_fail(rpc_err *e, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An agent errno as a Connect error (ENOENT -> not_found, ...). */
void rpc_fail_errno(rpc_err *e, int err, const char *what);

/* The sandbox user a call acts as. */
typedef struct rpc_user {
  const char *name;
  int uid, gid;
  const char *home;
} rpc_user;
/* "user" / "root"; NULL when unknown. */
const rpc_user *rpc_user_by_name(const char *name);
/* 1 and the user's name (truncated to cap) when auth is "Basic
 * base64(<user>:<anything>)", as Go's Request.BasicAuth reads it; else 0:
 * the header names no user. */
int rpc_basic_user(const char *auth, char *name, size_t cap);
/* Absolute, cleaned sandbox path: "~" and relative paths resolve against home. */
char *rpc_resolve_path(const rpc_user *u, const char *path);

typedef struct rpc_call {
  http_req *r;
  struct sandbox *sb;
  json_t *msg; /* the request message */
  const rpc_user *user;
  int64_t timeout_ms;  /* Connect-Timeout-Ms, 0 = none */
  int keepalive_ms;    /* Keepalive-Ping-Interval */
  const pb_msg *out_pb; /* binary protobuf codec: the response message's table (NULL: JSON) */
} rpc_call;

typedef int (*rpc_unary_fn)(rpc_call *c, json_t **resp, rpc_err *e);
/* Fills *src with a producer that writes data envelopes and the end-stream
 * envelope itself; on error returns -1 with *e set (answered as end-stream). */
typedef int (*rpc_stream_fn)(rpc_call *c, stream_src *src, rpc_err *e);

/* Client streams (StreamInput): called per request message as it arrives,
 * then once at the end with msg NULL; return -1 with *e set to stop. */
typedef int (*rpc_client_stream_fn)(rpc_call *c, json_t *msg, void **state, rpc_err *e);

typedef struct rpc_method {
  const char *path; /* "/process.Process/Start" */
  rpc_unary_fn unary;
  rpc_stream_fn stream;
  const pb_msg *in, *out; /* message tables for the binary codec */
  rpc_client_stream_fn client_stream;
} rpc_method;

/* Sets up r to parse and dispatch a Connect call to m (on completion). */
void rpc_route(http_req *r, const rpc_method *m);

/* Envelope writers for stream producers. */
void rpc_env_msg(sbuf *out, json_t *msg, const pb_msg *pb); /* steals msg; pb NULL = JSON */
void rpc_env_end(sbuf *out, const rpc_err *e);


extern const rpc_method ENVD_PROCESS_METHODS[];
extern const rpc_method ENVD_FS_METHODS[];

#endif
