/* tree.h — walking directory trees a sandbox wrote: removal and disk usage
 * without recursion, so no depth can exhaust a thread's stack. */
#ifndef EMU_TREE_H
#define EMU_TREE_H

#include <stdint.h>

/* Removes path and everything under it, never following a symlink nor
 * crossing a mount; one descriptor open, the directory names on the heap.
 * 0, or -1 at the first entry it could not remove (the rest is left). */
int rm_rf(const char *path);

/* Bytes used on disk by everything under path (no symlinks, no other
 * mounts). A tree deeper than TREE_MAX_DEPTH cannot be measured: it counts
 * as UINT64_MAX, over any limit. */
#define TREE_MAX_DEPTH 4096
uint64_t disk_usage(const char *path);

#endif
