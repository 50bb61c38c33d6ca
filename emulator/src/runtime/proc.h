/* proc.h — the server's view of a sandbox's spawned processes.
 *
 * One reader thread per table (per sandbox) reads every process's
 * stdout/stderr (or pty) from the socket the agent relays them on (ipc.h),
 * through one epoll set, and appends each chunk to every subscriber of that
 * process's bounded queue. A full queue stops the reading of that process
 * only (the agent then stops reading its pipes and its writes block:
 * backpressure); with no subscriber, output is dropped. The
 * end event follows once the exit status is known and every pipe hit EOF,
 * or, once the process was cut (a SIGKILL or SIGTERM, the deadline), once
 * the status is known: envd then stops waiting for its output to close. */
#ifndef EMU_PROC_H
#define EMU_PROC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct proc_table proc_table;
typedef struct proc proc;
typedef struct proc_sub proc_sub;

enum proc_ev_kind { PEV_STDOUT, PEV_STDERR, PEV_PTY, PEV_END };

/* One chunk of output (or the end), shared by every subscriber's queue. */
typedef struct proc_event {
  int refs; /* guarded by the table mutex */
  int kind;
  int status; /* PEV_END: wait status */
  size_t len;
  unsigned char data[]; /* len bytes */
} proc_event;

/* Sends `sig` to `pid` alone (via the agent), as envd does. The table is
 * keyed by its sandbox's id, not a pointer: reader threads may outlive it. */
typedef int (*proc_signal_fn)(const char *key, int pid, int sig);

proc_table *proc_table_new(proc_signal_fn sig, const char *key);
void proc_table_ref(proc_table *t);
const char *proc_table_key(const proc_table *t);
void proc_table_unref(proc_table *t);
/* Every current process is taken as killed (the agent is gone). */
void proc_table_abort(proc_table *t);
/* Exit notification from the agent (may arrive before proc_register). */
void proc_table_exited(proc_table *t, int pid, int status);
json_t *proc_table_list(proc_table *t);

typedef struct proc_spec {
  int pid;
  json_t *config; /* ProcessConfig JSON as reported by List (reference taken) */
  const char *tag;
  int out_fd;                /* the output relay (ipc.h); ownership passes */
  int in_fd, pty_fd;         /* -1 when absent; ownership passes */
  int64_t deadline_ms;               /* monotonic; 0 = none */
} proc_spec;

/* Registers a spawned process and returns it with a first subscriber already
 * attached (so no output is missed); the caller owns one ref on the proc. */
proc *proc_register(proc_table *t, const proc_spec *spec, proc_sub **first);
/* Whether proc_register could not start the process's output reader: the
 * process has ended for its subscribers and must be killed by the caller. */
int proc_unserved(const proc *p);
/* Looks up by pid (>0) or tag (as envd does: it can miss, see proc.c);
 * returns a new ref or NULL. */
proc *proc_find(proc_table *t, int pid, const char *tag);
void proc_unref(proc *p);
int proc_pid(const proc *p);

/* NULL once the process has ended. */
proc_sub *proc_subscribe(proc *p);
void proc_unsubscribe(proc_sub *s);

enum { PSUB_EVENT = 0, PSUB_TIMEOUT = 1, PSUB_HANGUP = 2 };
/* Waits for the next event up to timeout_ms (-1 = forever), also returning
 * PSUB_HANGUP when watch_fd (the client's socket) is closed by the peer. */
int proc_sub_next(proc_sub *s, int timeout_ms, int watch_fd, proc_event **ev);
void proc_event_free(proc_sub *s, proc_event *ev); /* drops the caller's reference */

int proc_write_stdin(proc *p, const void *data, size_t n, int to_pty); /* 0 or -errno */
int proc_close_stdin(proc *p);
int proc_resize(proc *p, unsigned cols, unsigned rows);
/* Sets or moves the deadline at which the process group is killed. */
void proc_set_deadline(proc *p, int64_t deadline_ms);
int proc_deadline_hit(proc *p);
/* A SIGKILL or SIGTERM was sent: its end no longer waits for its output to
 * close (a child may hold the pipes), as envd cancels its output then. */
void proc_cut(proc *p);

/* Blocks until every reader thread has finished (at shutdown). */
void proc_wait_all_readers(void);

#endif
