/* sandbox_limits.h — per-sandbox kernel limits: the memory and pids
 * controllers of cgroup v2 (one directory per sandbox, which also freezes)
 * or of cgroup v1 (one directory per controller), one child cgroup per
 * sandbox under the server's own. */
#ifndef EMU_LIMITS_H
#define EMU_LIMITS_H

#include <jansson.h>
#include <stdint.h>

typedef struct limits {
  char *mem;  /* memory cgroup directory (the v2 directory on v2), or NULL */
  char *pids; /* pids cgroup directory (v1 only), or NULL */
  char *v2;   /* the sandbox's cgroup v2 directory, or NULL */
} limits;

/* Finds the hierarchies and holds all sandboxes together to pids_total
 * processes and threads (<= 0: three quarters of limits_host_tasks());
 * logs once what this host cannot enforce. cgroup v2 is used when its
 * memory and pids controllers can be delegated, else cgroup v1. */
void limits_init(long pids_total);
/* 2 when sandboxes live in cgroup v2 (whose cgroup.freeze also pauses
 * them), 1 for cgroup v1, 0 when neither could be set up. */
int limits_version(void);
/* The host's limit on tasks: kernel.pid_max, or threads-max when lower. */
long limits_host_tasks(void);
/* Removes this server's level of the hierarchy (after every sandbox's). */
void limits_shutdown(void);
/* Creates the sandbox's cgroups with their limits. What cannot be created is
 * left NULL (the sandbox starts anyway: limits_report says so). */
void limits_create(limits *l, const char *id, uint64_t mem_bytes, int pids_max);
/* The cgroup.procs files a new sandbox joins (NULL-terminated, up to 2). */
void limits_procs(const limits *l, char *out[3]);
/* Removes the cgroups (every process must be gone). */
void limits_destroy(limits *l);
/* {"memory": "cgroup-v2"|"cgroup-v1"|"unavailable", "pids": ...,
 * "pids_total": the budget of all sandboxes together (0: none),
 * "disk": "watched"} */
json_t *limits_report(void);

#endif
