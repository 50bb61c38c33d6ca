/* envd_watch.h — directory watches (envd_watch.c). */
#ifndef EMU_ENVD_WATCH_H
#define EMU_ENVD_WATCH_H

#include <jansson.h>

#include "connect_rpc.h"
#include "sandbox.h"

/* An agent event for sandbox `key` (channel reader thread). */
void watch_deliver(const char *key, json_t *event);
/* The sandbox's agent is gone (kill, pause, restart): watches end. */
void watch_close_sandbox(const char *key);
/* What envd's watchers learn of sandboxes (sandbox_listen it). */
extern const sandbox_listener watch_sandbox_listener;
/* Frees the watchers left at exit (polling ones never removed). */
void watch_shutdown(void);

int watch_dir(rpc_call *c, stream_src *src, rpc_err *e);
int watcher_create(rpc_call *c, json_t **resp, rpc_err *e);
int watcher_events(rpc_call *c, json_t **resp, rpc_err *e);
int watcher_remove(rpc_call *c, json_t **resp, rpc_err *e);

#endif
