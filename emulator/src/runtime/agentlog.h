/* agentlog.h — the agent's stdout/stderr: a pipe the server reads and logs
 * as the sandbox's, so no server descriptor ever enters a sandbox. */
#ifndef EMU_AGENTLOG_H
#define EMU_AGENTLOG_H

/* Starts a reader for one agent; returns the pipe's write end (CLOEXEC, the
 * caller closes it once the agent holds it) or -errno. The reader ends at EOF. */
int agentlog_start(const char *sandbox_id);

#endif
