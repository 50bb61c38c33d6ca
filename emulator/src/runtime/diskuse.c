/* diskuse.c — deleted-but-open files of a sandbox's processes. A tree walk
 * (tree.c) sees only named files; a file unlinked while a process holds it
 * keeps its blocks until the last descriptor or mapping goes, and would let
 * a sandbox grow past diskSizeMB unseen. The kernel shows those files in
 * /proc/PID/fd and, mapped, in /proc/PID/maps (marked "(deleted)", reached
 * through /proc/PID/map_files); stat through those links reaches the file
 * itself (st_nlink 0 once deleted). The work is bounded: at most
 * DISKUSE_MAX_ENTRIES descriptors and DISKUSE_MAX_MAPS mappings a
 * measurement, one descriptor open at a time. */
#define _GNU_SOURCE
#include "diskuse.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util.h"

#define SEEN_CAP 4096 /* distinct deleted files remembered; past it each counts again (more, never less) */

typedef struct seen {
  ino_t ino[SEEN_CAP];
  int used[SEEN_CAP];
  int n;
} seen;

/* 1 when ino was not seen before (and now is). */
static int first_time(seen *s, ino_t ino) {
  if (s->n >= SEEN_CAP * 3 / 4) return 1;
  size_t i = (size_t)(ino * 0x9E3779B97F4A7C15ull) % SEEN_CAP;
  while (s->used[i]) {
    if (s->ino[i] == ino) return 0;
    i = (i + 1) % SEEN_CAP;
  }
  s->used[i] = 1;
  s->ino[i] = ino;
  s->n++;
  return 1;
}

/* Adds the deleted files behind pid's descriptors; returns 0, or -1 once
 * the entry budget *left is spent. */
static int scan_links(pid_t pid, dev_t dev, seen *s, uint64_t *total, long *left) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) { /* gone meanwhile */
    if (fd >= 0) close(fd);
    return 0;
  }
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    if (--*left < 0) {
      rc = -1;
      break;
    }
    struct stat st;
    if (fstatat(dirfd(d), de->d_name, &st, 0) != 0) continue; /* follows the link to the file */
    if (!S_ISREG(st.st_mode) || st.st_nlink != 0 || st.st_dev != dev) continue;
    if (first_time(s, st.st_ino)) *total += (uint64_t)st.st_blocks * 512;
  }
  closedir(d);
  return rc;
}

/* One /proc/PID/maps line: adds the deleted file it maps when it is on dev
 * (its "major:minor" field) and has no name left. */
static void map_line(pid_t pid, const char *line, dev_t dev, seen *s, uint64_t *total) {
  size_t len = strlen(line);
  static const char tail[] = " (deleted)\n";
  if (len < sizeof tail || strcmp(line + len - (sizeof tail - 1), tail) != 0) return;
  char range[64];
  unsigned maj, min;
  unsigned long long ino;
  if (sscanf(line, "%63s %*s %*s %x:%x %llu", range, &maj, &min, &ino) != 4 || ino == 0) return;
  if (maj != major(dev) || min != minor(dev)) return;
  char path[96];
  snprintf(path, sizeof path, "/proc/%d/map_files/%s", (int)pid, range);
  struct stat st; /* map_files needs the privilege the server has as root; without it, not counted */
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0 || st.st_dev != dev) return;
  if (first_time(s, st.st_ino)) *total += (uint64_t)st.st_blocks * 512;
}

/* Adds the deleted files pid maps (a mapping outlives its descriptor);
 * -1 once the line budget *left is spent. Only the lines that say
 * "(deleted)" cost a stat. */
static int scan_maps(pid_t pid, dev_t dev, seen *s, uint64_t *total, long *left) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
  FILE *f = fopen(path, "re");
  if (!f) return 0;
  char *line = NULL;
  size_t cap = 0;
  int rc = 0;
  while (getline(&line, &cap, f) > 0) {
    if (--*left < 0) {
      rc = -1;
      break;
    }
    map_line(pid, line, dev, s, total);
  }
  free(line);
  fclose(f);
  return rc;
}

uint64_t diskuse_hidden(const pid_t *pids, int n, dev_t dev) {
  seen *s = xcalloc(1, sizeof *s);
  uint64_t total = 0;
  long fds_left = DISKUSE_MAX_ENTRIES, maps_left = DISKUSE_MAX_MAPS;
  int over = 0;
  for (int i = 0; i < n && !over; i++)
    over = scan_links(pids[i], dev, s, &total, &fds_left) != 0 || scan_maps(pids[i], dev, s, &total, &maps_left) != 0;
  free(s);
  return over ? UINT64_MAX : total;
}
