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

/* One structured log line (GET /v2/sandboxes/{id}/logs). */
typedef struct sb_log {
  int64_t ts_ms;
  int level; /* 0 debug, 1 info, 2 warn, 3 error */
  char *message;
  json_t *fields;
} sb_log;

/* One metrics sample (GET /sandboxes/{id}/metrics). */
typedef struct sb_metric {
  int64_t ts_ms;
  double cpu_pct;
  uint64_t mem_used, disk_used;
} sb_metric;

#define SANDBOX_CPUS 2 /* nominal: sandboxes share the host's CPUs and memory */
#define SANDBOX_MEMORY_MB 512
#define SANDBOX_DISK_MB 10240
/* diskSizeMB: SANDBOX_DISK_MB, or E2B_LOCAL_DISK_MB from the environment. */
int sandbox_disk_mb(void);
/* Processes + threads, enforced by the pids cgroup. E2B runs a sandbox's
 * commands in envd.service, which sets no TasksMax (e2b-dev/infra
 * packages/orchestrator/pkg/template/build/core/rootfs/files/
 * envd.service.tpl), so systemd's default caps it: 15% of the guest's
 * threads-max, which the kernel sets to RAM / 128 KiB (about 3,900 in a
 * 512 MiB VM), near 580 tasks with envd's own threads. Never more lenient:
 * a little below that. */
#define SANDBOX_PIDS_MAX 560
#define SB_LOG_CAP 1000
#define SB_METRIC_CAP 720 /* one hour at one sample per 5 s */

typedef struct sandbox {
  char id[24];
  char client_id[24];
  char *template_id;
  char *alias;
  char *envd_token; /* NULL unless secure */
  int secure, allow_internet;
  int auto_pause, auto_pause_memory, auto_resume;
  int timeout_s; /* from create: the lifetime an auto-resume grants */
  json_t *metadata, *env_vars; /* objects */
  char *traffic_token; /* set when public traffic is off: required on port hosts */
  json_t *volume_mounts; /* [{name,path}] as the API reports them */
  json_t *mounts;        /* [{src,dst,ro}] for the runtime (volumes, template dirs) */
  int hidden;            /* template builds: never listed nor reachable */
  char *default_user, *default_workdir; /* a built template's USER and WORKDIR, envd's defaults; NULL: user, its home */
  int64_t started_at_ms;
  char *dir;

  /* guarded by aux_mu: logs, metrics, the network config */
  pthread_mutex_t aux_mu;
  json_t *network;
  sb_log logs[SB_LOG_CAP];
  size_t log_head, log_n;
  sb_metric metrics[SB_METRIC_CAP];
  size_t met_head, met_n;
  uint64_t last_cpu_ticks;
  int64_t last_cpu_ms;

  /* guarded by lock (the rwlock) and, for reads from the timer, the registry */
  pthread_rwlock_t lock;
  sb_state state;
  int paused_memory;
  int keep_tmp; /* cold only because e2b-local restarted: E2B would have kept memory, so /tmp stays */
  int64_t end_at_ms;
  const char *kill_reason; /* static text: the timer kills it now, never pauses (guarded by g_mu) */
  int expiring; /* its deadline's kill or pause is under way on a thread of its own (g_mu) */
  runtime rt;
  channel *chan;
  proc_table *procs;

  int refs; /* guarded by the registry mutex */
} sandbox;

struct tpl_ref;
typedef struct sandbox_params {
  const struct tpl_ref *tpl; /* what it starts from */
  int timeout_s;
  int secure, allow_internet, public_traffic;
  int auto_pause, auto_pause_memory, auto_resume;
  int hidden;
  const char *default_user, *default_workdir; /* envd's defaults (NULL: user, its home) */
  json_t *metadata, *env_vars, *network; /* borrowed; NULL = none */
  json_t *volume_mounts;                 /* borrowed [{name,path,src}] or NULL */
} sandbox_params;

/* The registry lives under state_dir/sandboxes; starts the deadline timer
 * and the metrics sampler. Sandboxes found there from a previous run come
 * back paused (filesystem: their files, no processes). */
int sandbox_registry_init(const char *state_dir);
/* Stops the timers and every sandbox: kills them (keep = 0), or ends their
 * processes and keeps them on disk as paused (keep = 1, a --state dir). */
void sandbox_registry_shutdown(int keep);

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
/* 1 while running; waits for a kill or pause in progress to finish. */
int sandbox_is_running(sandbox *sb);
int sandbox_set_timeout(sandbox *sb, int timeout_s);
int sandbox_pause(sandbox *sb, int memory);
/* Resumes a paused sandbox (*resumed=1) or extends a running one's deadline. */
int sandbox_connect(sandbox *sb, int timeout_s, int force_cold, int only_paused, int *resumed);

/* Extends the deadline to now + duration when that is later (refreshes). */
int sandbox_refresh(sandbox *sb, int duration_s);
/* Copies the sandbox's files into a snapshot (frozen meanwhile when running). */
json_t *sandbox_snapshot(sandbox *sb, const char *name, const char **err);
/* Replaces the network config; the egress proxy applies it from the next
 * connection on and closes open relays it denies. */
int sandbox_set_network(sandbox *sb, json_t *network, int allow_internet);
/* The current egress policy of sandbox `id` (hidden ones included), compiled;
 * NULL when it is gone. Free with netpolicy_free. */
struct netpolicy;
/* Components that follow sandboxes (the egress proxy, envd's watchers)
 * listen instead of sandbox.c calling them by name: no call circle. Any
 * member may be NULL. Registered before any sandbox boots. */
typedef struct sandbox_listener {
  void (*watch_event)(const char *id, json_t *event); /* the agent saw a watched change */
  void (*egress_conn)(const char *id, int fd);        /* the agent passed up a connection */
  void (*policy_changed)(const char *id);             /* its network configuration was replaced */
  void (*closed)(const char *id);                     /* its processes and channel are gone */
} sandbox_listener;
void sandbox_listen(const sandbox_listener *l);

struct netpolicy *sandbox_egress_policy(const char *id);
/* The headers network.rules add to a request from sandbox id to host (lower
 * case), as the rules are now. Returns out->n; clear with netrules_set_clear. */
struct netrules_set;
size_t sandbox_egress_headers(const char *id, const char *host, struct netrules_set *out);
/* A connection to host:port on the loopback of sandbox `id` (host: a
 * loopback literal or "localhost"), made by its agent: a descriptor, or
 * -errno (-ECONNREFUSED when nothing listens there, -ESRCH not running). */
int sandbox_connect_inside(const char *id, const char *host, int port);
/* Is a volume mounted by any (running or paused) sandbox? */
int sandbox_volume_in_use(const char *name);
/* 1 when a running sandbox was created from the template (or snapshot),
 * else 2 when a paused one was, else 0. */
int sandbox_template_in_use(const char *template_id);
/* The env vars envd gives every process of the sandbox: the create's
 * envVars, then the ones envd sets itself (E2B_SANDBOX, E2B_SANDBOX_ID,
 * E2B_TEMPLATE_ID), which those cannot replace. A new object. */
json_t *sandbox_envd_env(sandbox *sb);

/* Logs and metrics. */
void sandbox_log(sandbox *sb, int level, json_t *fields, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Entries with ts in [from_ms, to_ms], forward or backward, at least min_level,
 * containing search (may be NULL); at most limit. */
json_t *sandbox_logs(sandbox *sb, int64_t from_ms, int64_t to_ms, int backward, int min_level,
                     const char *search, long limit, int v1);
/* Samples with ts in [from_s, to_s] seconds (0 = open); one fresh sample when
 * there is none yet. latest_only: just the newest (or NULL when not running). */
json_t *sandbox_metrics(sandbox *sb, int64_t from_s, int64_t to_s, int latest_only);
json_t *sandbox_network_json(sandbox *sb); /* new reference */

/* Resumes a memory-paused sandbox created with autoResume (inbound envd
 * traffic wakes it, as on E2B). Returns 1 when it is running afterwards. */
int sandbox_wake(sandbox *sb);
/* 1 when it is running or sandbox_wake would resume it (nothing changes). */
int sandbox_wakeable(sandbox *sb);

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
