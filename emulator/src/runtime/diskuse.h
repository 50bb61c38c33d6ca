/* diskuse.h — the disk a sandbox's processes hold that its tree no longer
 * shows: regular files deleted (no name left) while still open or mapped. */
#ifndef EMU_DISKUSE_H
#define EMU_DISKUSE_H

#include <stdint.h>
#include <sys/types.h>

/* How many descriptors and mappings one measurement looks at, at most: a
 * sandbox with more cannot be measured (counted as full). */
#define DISKUSE_MAX_ENTRIES 262144
#define DISKUSE_MAX_MAPS 1048576

/* Bytes allocated (st_blocks) to regular files on device dev that have no
 * name left (st_nlink 0) and that one of pids holds open (/proc/PID/fd) or
 * mapped (/proc/PID/maps), each file counted once. UINT64_MAX when more
 * than the bounds above would have to be looked at. */
uint64_t diskuse_hidden(const pid_t *pids, int n, dev_t dev);

#endif
