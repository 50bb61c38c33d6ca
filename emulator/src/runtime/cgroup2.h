/* cgroup2.h — the cgroup v2 plumbing a sandbox's limits need: where our
 * own cgroup is, which controllers a level offers, and delegating them to
 * the levels below. */
#ifndef EMU_CGROUP2_H
#define EMU_CGROUP2_H

/* The directory of our own cgroup v2, from the text of /proc/self/mountinfo
 * and /proc/self/cgroup, and in *mount the hierarchy's mount point; NULL
 * when there is no cgroup2 mount or no "0::" line (pure text: the C tests
 * feed it). */
char *cg2_own_dir(const char *mountinfo, const char *self_cgroup, char **mount);
/* Whether the space-separated controller list holds every one of want's. */
int cg2_has_controllers(const char *list, const char *want);
/* Our own cgroup v2 directory on this host (and its mount point), or NULL. */
char *cg2_own(char **mount);
/* Makes `controllers` (e.g. "memory pids") usable in children of dir:
 * enabled in its cgroup.subtree_control. 0, or -errno (EBUSY: dir has
 * processes of its own, which cgroup v2 forbids for a delegating level). */
int cg2_delegate(const char *dir, const char *controllers);
/* Freezes (1) or thaws (0) the cgroup at dir and waits until cgroup.events
 * says it is so (at most ~1 s). 0 or -errno. */
int cg2_freeze(const char *dir, int frozen);
/* Kills every process in the cgroup (cgroup.kill, Linux 5.14+). 0 or -errno. */
int cg2_kill(const char *dir);

#endif
