/* sandbox.h — the sandbox registry and lifecycle (create, pause, resume,
 * kill, deadlines). Sandboxes are reference counted so a kill during an open
 * stream is safe; all runtime transitions take the sandbox's write lock while
 * envd calls hold its read lock. */
#ifndef EMU_SANDBOX_H
#define EMU_SANDBOX_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "channel.h"
#include "proc.h"
#include "runtime.h"

typedef enum { SB_RUNNING, SB_PAUSED, SB_KILLED } sb_state;

typedef struct sandbox {
  char id[24];
  char client_id[24];
  char *template_id;
  char *alias;
  char *envd_token; /* NULL unless secure */
  int secure, allow_internet;
  int auto_pause, auto_pause_memory, auto_resume;
  int timeout_s; /* from create: the lifetime an auto-resume grants */
  json_t *metadata, *env_vars, *network; /* objects */
  int64_t started_at_ms;
  char *dir;

  /* guarded by lock (the rwlock) and, for reads from the timer, the registry */
  pthread_rwlock_t lock;
  sb_state state;
  int paused_memory;
  int64_t end_at_ms;
  runtime rt;
  channel *chan;
  proc_table *procs;

  int refs; /* guarded by the registry mutex */
} sandbox;

typedef struct sandbox_params {
  const char *template_id;
  int timeout_s;
  int secure, allow_internet;
  int auto_pause, auto_pause_memory, auto_resume;
  json_t *metadata, *env_vars, *network; /* borrowed; NULL = none */
} sandbox_params;

/* The registry lives under state_dir/sandboxes; starts the deadline timer. */
int sandbox_registry_init(const char *state_dir);
/* Kills every sandbox and stops the timer. */
void sandbox_registry_shutdown(void);

/* Returns a new reference; *err gets a message on failure. */
sandbox *sandbox_create(const sandbox_params *p, const char **err);
sandbox *sandbox_get(const char *id); /* new reference or NULL (killed ones are gone) */
void sandbox_ref(sandbox *sb);
void sandbox_unref(sandbox *sb);
/* Snapshot of every live sandbox (each referenced); free with sandbox_list_free. */
sandbox **sandbox_list(size_t *n);
void sandbox_list_free(sandbox **v, size_t n);

/* Each returns 0 or -errno: -ENOENT gone, -EALREADY already paused/running. */
int sandbox_kill(sandbox *sb);
int sandbox_set_timeout(sandbox *sb, int timeout_s);
int sandbox_pause(sandbox *sb, int memory);
/* Resumes a paused sandbox (*resumed=1) or extends a running one's deadline. */
int sandbox_connect(sandbox *sb, int timeout_s, int force_cold, int only_paused, int *resumed);

/* Resumes a memory-paused sandbox created with autoResume (inbound envd
 * traffic wakes it, as on E2B). Returns 1 when it is running afterwards. */
int sandbox_wake(sandbox *sb);

/* Snapshot of the mutable fields for responses. */
typedef struct sandbox_view {
  sb_state state;
  int64_t end_at_ms;
} sandbox_view;
sandbox_view sandbox_view_of(sandbox *sb);

/* ---- envd side: calls into a running sandbox's agent ---- */
/* -ESRCH when the sandbox is not running (the caller answers 502). */
int sandbox_call(sandbox *sb, uint32_t type, json_t *req, ipc_msg *reply);
typedef struct spawn_result {
  proc *p;
  proc_sub *sub;
} spawn_result;
int sandbox_spawn(sandbox *sb, json_t *req, json_t *config, const char *tag, int64_t deadline_ms,
                  spawn_result *out, ipc_msg *reply);
int sandbox_signal(sandbox *sb, int pid, int sig);
/* The process table of the current boot (referenced), or NULL when not running. */
proc_table *sandbox_procs(sandbox *sb);

#endif
