/* sudo.h — passwordless sudo inside a sandbox, as E2B's base image has it.
 * Sandboxes run with no new privileges, so a setuid sudo cannot work: the
 * `sudo` in a sandbox's PATH (this binary, run under that name) asks the
 * agent, which is root there, to run the command for it. The request goes
 * over an abstract unix socket, which only the sandbox's own network
 * namespace reaches; without isolation there is none (it would reach the
 * host). */
#ifndef EMU_SUDO_H
#define EMU_SUDO_H

#include <sys/types.h>

#define SUDO_SOCKET "e2b-local-sudo" /* abstract: "\0" + this */
#define SUDO_REQUEST_MAX (256 * 1024)

/* The client: `sudo [-u USER] [-E] [-n] [-H] [-i|-s] [--] CMD ARGS...`. */
int sudo_main(int argc, char **argv);

#define SUDO_PENDING 64     /* connections waiting for their request */
#define SUDO_REQUEST_MS 1000 /* the time a connection has to send it */

/* The agent: a listening socket (-1 when it cannot), accepting requests
 * from the sandbox's processes, and their ends. Nothing here blocks: the
 * accepted connections wait for their request in the agent's poll. */
int sudo_listen(void);
void sudo_accept_all(int ls);
struct pollfd;
/* The connections waiting for their request, at most max, into p; lowers
 * *timeout_ms (-1: none yet) to the nearest one's remaining time. */
int sudo_pending_fds(struct pollfd *p, int max, int *timeout_ms);
/* Serves those p says are ready, drops those whose time is up. */
void sudo_pending_run(const struct pollfd *p, int n);
/* 1 when pid ran for a sudo client (which now gets its status). */
int sudo_reaped(pid_t pid, int status);

#endif
