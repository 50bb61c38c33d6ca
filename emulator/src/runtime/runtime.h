/* runtime.h — how a sandbox's processes are run on the host: one agent per
 * sandbox under bubblewrap (or as a plain child without isolation), a freezer
 * cgroup (or SIGSTOP) for memory pause, and a kill that leaves nothing behind. */
#ifndef EMU_RUNTIME_H
#define EMU_RUNTIME_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox_ids.h"
#include "sandbox_limits.h"

typedef struct runtime {
  pid_t pid;    /* host pid of bwrap (or of the agent without isolation) */
  int sock;     /* server end of the control channel, owned by the caller after start */
  char *cgroup; /* freezer cgroup directory, or NULL */
  int frozen_by_signal;
  limits lim;   /* memory and pids cgroups */
  sandbox_ids ids; /* its own host uids (with runtime_own_ids), else userns and lock -1 */
} runtime;

typedef struct runtime_config {
  const char *id;  /* sandbox id (hostname, cgroup name) */
  const char *dir; /* the sandbox's state directory */
  json_t *mounts; /* [{src,dst,ro}]: volumes and template directories (may be NULL) */
  uint64_t mem_bytes; /* memory limit (the memoryMB the API reports); 0 = none */
  int pids_max;       /* process + thread limit; 0 = none */
} runtime_config;

/* Probes bubblewrap and the freezer; prints one warning when isolation is off.
 * The flags come from --no-isolation and --no-freezer (SIGSTOP pause);
 * sandbox_pids from --sandbox-pids (0: the default, see limits_init). */
void runtime_init(int force_no_isolation, int force_no_freezer, long sandbox_pids);
int runtime_isolated(void);
/* With bubblewrap and a root server: each sandbox runs as host uids of its
 * own (sandbox_ids.h), its state under state_dir bound through idmapped
 * mounts. Probes it once, before any sandbox boots; when the host cannot
 * (no root, no idmapped mounts there), logs a warning and sandboxes share
 * host uids as before. 1 when on. */
int runtime_own_ids(const char *state_dir, uint32_t base);
mode_t runtime_state_dir_mode(void);
/* Sandboxes trust e2b-local's CA (ca_file, its certificate only: never the
 * key): bound read-only at ca_dest, and appended to a copy of the host's
 * bundle_dest bound over that path, when the host has one. Before any
 * sandbox boots. */
void runtime_set_trust(const char *ca_file, const char *ca_dest, const char *bundle_dest);
/* Stops the spawner thread (after every sandbox is gone). */
void runtime_shutdown(void);

/* Creates home/, tmp/, root/ and the generated /etc files (idempotent). */
int runtime_prepare_dir(const char *dir);

/* Starts the agent. Returns 0 or -errno. */
int runtime_start(runtime *rt, const runtime_config *cfg);
/* Kills every process of the sandbox and reaps the agent. */
void runtime_stop(runtime *rt);
int runtime_freeze(runtime *rt);
int runtime_thaw(runtime *rt);
/* CPU time (clock ticks) and resident memory (bytes) of every process of
 * the sandbox, summed, and how many there are. */
int runtime_sample(const runtime *rt, uint64_t *cpu_ticks, uint64_t *rss_bytes);
/* Number of host processes still belonging to the sandbox (for checks). */
int runtime_count_processes(const runtime *rt);
/* Disk its processes hold in deleted files on device dev (diskuse.h);
 * UINT64_MAX when that cannot be measured. */
uint64_t runtime_hidden_disk(const runtime *rt, dev_t dev);

#endif
