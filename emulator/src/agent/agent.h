/* agent.h — the in-sandbox agent (`e2b-local agent --fd N`).
 *
 * It is pid 1 of the sandbox: it spawns commands on request, relays their
 * output up to the server (agent_relay.c), reaps every zombie and reports the exit status
 * of the processes it spawned. File operations run here so that paths resolve
 * exactly as the sandbox's own processes see them. */
#ifndef EMU_AGENT_H
#define EMU_AGENT_H

#include <jansson.h>
#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

int agent_main(int argc, char **argv);

/* ---- agent_exec.c: starting commands ---- */
/* A command's stdio: a pty, or pipes (stdin: a pipe kept open, or /dev/null). */
typedef struct agent_stdio {
  int in[2], out[2], er[2];
  int master, slave;
} agent_stdio;

/* A JSON array of strings as a NULL-ended array of copies (a non-string: ""). */
char **agent_str_array(json_t *arr);
void agent_free_str_array(char **v);
/* Chooses the OOM score commands get (once, at start: see agent_exec.c). */
void agent_pick_child_oom(void);
/* Without isolation: HOME and TMPDIR name the host directories behind them. */
void agent_map_env(char ***envp);
/* Without isolation: arguments that are sandbox paths name the host's. */
void agent_map_argv(char **argv);
/* Pipes (stdin: a pipe when want_stdin, else /dev/null) or a pty of pty's
 * size; 0 or an errno. Close with agent_close_stdio. */
int agent_open_stdio(json_t *pty, int want_stdin, agent_stdio *s);
void agent_close_stdio(agent_stdio *s);
/* Forks and execs argv as the request says (uid, gid, cwd) on s: the pid,
 * or -errno, the exec's own failure included. */
pid_t agent_fork_exec(json_t *req, char **argv, char **envp, const agent_stdio *s, int is_pty, int session);
struct passwd;
/* Runs argv as the request's uid/gid (in its cwd) with env plus pw's
 * identity variables, on fds as stdin/stdout/stderr: the pid, or -errno. */
pid_t agent_run(json_t *req, json_t *argv, json_t *env, const struct passwd *pw, const int fds[3]);

/* ---- agent_conn.c: IPC_CONNECT, never waited for ---- */
/* Starts request id's loopback connect; its reply goes on sock, now or
 * once it completes or times out (aconn_run). */
void aconn_begin(uint32_t id, json_t *req, int sock);
struct pollfd;
/* The connects in progress, at most max, into p (POLLOUT); lowers
 * *timeout_ms (-1: none yet) to the nearest deadline. */
int aconn_fds(struct pollfd *p, int max, int *timeout_ms);
/* Answers those p says are done and those whose time is up. */
void aconn_run(const struct pollfd *p, int n, int sock);

/* ---- agent_relay.c: commands' output up to the server ---- */
/* Relays the read ends of a command's stdout and stderr pipes (owned by
 * the relay from then on) to a new socket whose other end, *server_end, goes
 * to the server (ipc.h); 0 or an errno (the pipes are then still the
 * caller's). */
int relay_start(int out_fd, int err_fd, int *server_end);
/* The descriptor to poll for relaying (-1 when none could be made). */
int relay_fd(void);
/* Moves what is ready, without waiting. */
void relay_run(void);

/* ---- agent_fs.c: file operations, all on sandbox-visible paths ---- */

/* Without isolation, sandbox paths (/home/user, /tmp, /root) are mapped onto
 * host directories; these translate in both directions (identity otherwise). */
void afs_add_map(const char *virt, const char *real);
char *afs_to_real(const char *virt);
/* 0 when the virtual path is a directory, else an errno (ENOTDIR, ENOENT...). */
int afs_dir_errno(const char *virt);
char *afs_to_virt(const char *real);

/* Each returns 0 or a positive errno; *out receives the reply body. */
int afs_stat(json_t *req, json_t **out);
int afs_listdir(json_t *req, json_t **out);
int afs_mkdir(json_t *req, json_t **out);
int afs_move(json_t *req, json_t **out);
int afs_remove(json_t *req, json_t **out);
int afs_open_read(json_t *req, json_t **out, int *fd);
int afs_open_write(json_t *req, json_t **out, int *fd);

/* ---- agent_ident.c: the user a file operation runs as ---- */

/* Takes uid/gid as the filesystem identity until ident_leave (a no-op for
 * root, or when the agent itself is not privileged); 0 or an errno. */
int ident_enter(int uid, int gid);
/* The same from a request's "uid"/"gid" (absent: the unprivileged user). */
int ident_enter_req(json_t *req);
void ident_leave(void);

/* ---- agent_watch.c ---- */
#define AW_MAX_WATCHES 256
/* a pipe and an inotify descriptor each */
#define AW_POLL_MAX (2 * AW_MAX_WATCHES)
/* Starts a watch; *life: the write end of its pipe, for the server to hold
 * (closing it ends the watch). */
int aw_watch(json_t *req, json_t **out, int *life);
/* What to poll for the watches (each one's pipe, and its inotify descriptor
 * unless it rests); returns how many. *timeout_ms (-1: none) is lowered to
 * how soon a resting watch (see AW_REST_MS) must be polled again. */
int aw_fds(struct pollfd *p, int max, int *timeout_ms);
/* After the poll: ends the watches the server let go, sends the others'
 * pending events up. */
void aw_run(const struct pollfd *p, int n, int sock);

#endif
