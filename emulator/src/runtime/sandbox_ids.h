/* sandbox_ids.h — each sandbox's own block of host uids and gids.
 *
 * The kernel charges per-user limits (inotify instances and watches,
 * RLIMIT_NPROC, pending signals, POSIX message queue bytes, user
 * namespaces…) to a host uid; in a user namespace, also to the uid that
 * owns it. Were every sandbox's `user` one host uid (and its root host
 * root), one sandbox holding all its inotify instances would leave none to
 * another sandbox, or to the server. So, with a root server, each running
 * sandbox gets a block of 65536 host ids of its own, from a slot only it
 * holds (a lock file shared by every e2b-local on the host): a user
 * namespace owned by the block's first uid maps the sandbox's ids 0..65535
 * onto it. Its files stay where they were, with the ids they had: the
 * state directory and the host's system are bound through idmapped mounts
 * over the same namespace, so a file of uid 1000 on disk is uid 1000 in
 * every sandbox, and snapshots, templates and volumes move unchanged. */
#ifndef EMU_SANDBOX_IDS_H
#define EMU_SANDBOX_IDS_H

#include <stdint.h>

#define IDS_BLOCK 65536u
#define IDS_DEFAULT_BASE 1879048192u /* 0x70000000: past the ranges distributions hand out */

typedef struct sandbox_ids {
  uint32_t base; /* host uid and gid of the sandbox's root; its id N is base + N */
  int userns;    /* the sandbox's user namespace (a descriptor), or -1 */
  int lock;      /* the slot's lock file, held while the sandbox lives, or -1 */
} sandbox_ids;

/* The host ids sandboxes take: blocks from base up to 2^31. 0 or -errno
 * (EINVAL: no whole block fits there). */
int ids_configure(uint32_t base);
uint32_t ids_base(void);
uint32_t ids_slots(void);

/* Takes a free slot and makes its user namespace. 0 or -errno; on error
 * ids is left empty (userns and lock -1). */
int ids_acquire(sandbox_ids *ids);
/* Closes the namespace and gives the slot back (idempotent). After every
 * process of the sandbox is gone. */
void ids_release(sandbox_ids *ids);

/* One path to bind through the sandbox's idmapping. */
typedef struct ids_path {
  const char *path;
  int required; /* a failure fails the sandbox (else the path stays as it is) */
} ids_path;

/* In a forked child, before it execs bubblewrap: a mount namespace of its
 * own where each path is replaced by an idmapped copy of itself, then the
 * block's first uid, then the sandbox's user namespace (where it is root).
 * Async-signal-safe. 0 or -errno. */
int ids_enter(const sandbox_ids *ids, const ids_path *paths, int npaths);

#endif
