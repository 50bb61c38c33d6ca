/* cgsweep.h — the last step of a sandbox's kill: nothing may be left in its
 * cgroups, not even in a child cgroup someone made below them and froze. */
#ifndef EMU_CGSWEEP_H
#define EMU_CGSWEEP_H

typedef struct cg_swept {
  int left;   /* processes found in dir itself */
  int hidden; /* processes found in cgroups below it */
  int stuck;  /* still there when the sweep gave up */
  int below;  /* cgroups found below it (someone inside made them), removed */
} cg_swept;

/* Thaws (v1 freezer.state, v2 cgroup.freeze) and SIGKILLs every process in
 * the cgroup directory dir and in every cgroup below it until they are
 * gone (at most ~1 s), then removes the cgroups below it (dir itself is
 * its owner's to remove). */
cg_swept cg_sweep(const char *dir);

/* This server's own level below parent, parent/server-<pid>, made (NULL if
 * it cannot be), after the levels of servers that are gone (a SIGKILLed one
 * leaves its own) were swept as above and removed. Its caller removes it at
 * exit, as a server that ends well does. */
char *cg_server_level(const char *parent);

#endif
