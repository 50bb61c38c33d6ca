/* syscall_filter.h — the system-call filter every process of a sandbox runs under
 * (bwrap's --seccomp): what a sandbox may not ask of the host's kernel. */
#ifndef EMU_SYSCALL_FILTER_H
#define EMU_SYSCALL_FILTER_H

#include <stddef.h>

/* The filter as a BPF program for bwrap (libseccomp's export): *len bytes,
 * owned by the caller, or NULL when it cannot be built (logged). */
void *sandbox_filter_build(size_t *len);
/* A new descriptor holding the program at offset 0 (a sealed memfd,
 * close-on-exec: the spawned child dups it for bwrap), or -errno. */
int sandbox_filter_fd(const void *prog, size_t len);

#endif
