/* channel.h — server side of the agent control channel: many HTTP threads may
 * call concurrently; one reader thread matches replies by id and forwards
 * exit notifications. */
#ifndef EMU_CHANNEL_H
#define EMU_CHANNEL_H

#include "ipc.h"

typedef struct channel channel;

typedef struct channel_ops {
  void (*on_exit)(void *ctx, int pid, int status); /* a spawned process was reaped */
  void (*on_broken)(void *ctx); /* the agent went away without channel_close */
  void (*on_watch)(void *ctx, json_t *event); /* IPC_WATCH_EVENT body (borrowed) */
  void (*on_egress)(void *ctx, int fd); /* IPC_EGRESS: a connection to the forwarder (owned) */
  /* The agent broke the protocol (malformed or oversized message, bad
   * field): the channel is cut; on_broken follows. May be NULL. */
  void (*on_violation)(void *ctx, const char *why);
} channel_ops;

/* Takes ownership of sock. NULL (errno set, sock closed) when its reader
 * thread cannot be made. */
channel *channel_open(int sock, const channel_ops *ops, void *ctx);
/* Every call has a deadline: the agent is untrusted and single-threaded, and
 * a sandbox can keep it busy. Past it the call fails with -ETIMEDOUT (the
 * agent's late reply is dropped). */
#define CHANNEL_CALL_TIMEOUT_MS 60000
/* Sends a request and waits for its reply, at most CHANNEL_CALL_TIMEOUT_MS.
 * Returns 0 (reply->err carries the agent's errno) or -errno: -EPIPE when
 * the channel is broken or closed (channel_close fails the calls in
 * flight), -ETIMEDOUT past the deadline. Hold a reference (channel_ref),
 * never a lock a kill needs, across it. */
int channel_call(channel *c, uint32_t type, json_t *req, ipc_msg *reply);
int channel_call_within(channel *c, uint32_t type, json_t *req, ipc_msg *reply, int timeout_ms);
/* References keep the channel's memory and socket for calls in flight. */
void channel_ref(channel *c);
void channel_unref(channel *c);
/* The agent is about to be killed on purpose: its EOF is not "unexpected". */
void channel_expect_close(channel *c);
/* Breaks the channel, fails pending calls, joins the reader and drops the
 * owner's reference (the last one frees). */
void channel_close(channel *c);

#endif
