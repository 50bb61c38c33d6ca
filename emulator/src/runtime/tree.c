/* tree.c — directory trees a sandbox wrote, walked without recursion: a
 * sandbox controls their depth, and the server walks them on request
 * threads with 256 KiB stacks. */
#define _GNU_SOURCE
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

static int is_dot(const char *n) { return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])); }

static int open_dir_at(int at, const char *name, dev_t dev) {
  int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != dev)) { /* another mount: not ours */
    close(fd);
    errno = EXDEV;
    return -1;
  }
  return fd;
}

/* Removes what dir holds that can go at once (files, empty directories),
 * pass after pass until a pass removes nothing. Returns 1 with *sub open on
 * a non-empty subdirectory (its name in *name), 0 once dir is empty, -1. */
static int clear_dir(int dir, dev_t dev, int *sub, char **name) {
  for (;;) {
    int fd = dup(dir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
      if (fd >= 0) close(fd);
      return -1;
    }
    int removed = 0, rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
      if (is_dot(de->d_name)) continue;
      if (unlinkat(dir, de->d_name, 0) == 0 || errno == ENOENT) {
        removed = 1;
      } else if (errno != EISDIR && errno != EPERM) {
        rc = -1;
      } else if (unlinkat(dir, de->d_name, AT_REMOVEDIR) == 0 || errno == ENOENT) {
        removed = 1;
      } else if (errno != ENOTEMPTY && errno != EEXIST) {
        rc = -1;
      } else if ((*sub = open_dir_at(dir, de->d_name, dev)) < 0) {
        rc = -1;
      } else {
        *name = xstrdup(de->d_name);
        rc = 1;
      }
    }
    closedir(d);
    if (rc != 0 || !removed) return rc;
  }
}

typedef struct names {
  char **v;
  size_t n, cap;
} names;

static void names_push(names *s, char *name) {
  if (s->n == s->cap) s->v = xrealloc(s->v, (s->cap = s->cap ? s->cap * 2 : 64) * sizeof *s->v);
  s->v[s->n++] = name;
}

/* Empties the directory open as top: down into each non-empty
 * subdirectory, back up with "..", removing each once it is empty. */
static int clear_tree(int top, dev_t dev) {
  names path = {0};
  int cur = dup(top), rc = cur < 0 ? -1 : 0;
  while (rc == 0) {
    int sub = -1;
    char *name = NULL;
    int step = clear_dir(cur, dev, &sub, &name);
    if (step == 1) {
      names_push(&path, name);
      close(cur);
      cur = sub;
      continue;
    }
    if (step < 0 || path.n == 0) {
      rc = step;
      break;
    }
    int up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(cur);
    cur = up;
    char *done = path.v[--path.n];
    if (up < 0 || (unlinkat(up, done, AT_REMOVEDIR) != 0 && errno != ENOENT)) rc = -1;
    free(done);
  }
  if (cur >= 0) close(cur);
  while (path.n) free(path.v[--path.n]);
  free(path.v);
  return rc;
}

int rm_rf(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode)) return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
  int top = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (top < 0) return -1;
  int rc = clear_tree(top, st.st_dev);
  close(top);
  return rc == 0 && rmdir(path) != 0 && errno != ENOENT ? -1 : rc;
}

/* ---- disk usage: one open directory per level, at most TREE_MAX_DEPTH ---- */

uint64_t disk_usage(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return 0;
  uint64_t total = (uint64_t)st.st_blocks * 512;
  if (!S_ISDIR(st.st_mode)) return total;
  DIR **stack = xcalloc(TREE_MAX_DEPTH, sizeof *stack);
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || !(stack[0] = fdopendir(fd))) {
    if (fd >= 0) close(fd);
    free(stack);
    return total;
  }
  size_t depth = 1;
  while (depth > 0) {
    struct dirent *de = readdir(stack[depth - 1]);
    if (!de) {
      closedir(stack[--depth]);
      continue;
    }
    if (is_dot(de->d_name)) continue;
    int dir = dirfd(stack[depth - 1]);
    struct stat es;
    if (fstatat(dir, de->d_name, &es, AT_SYMLINK_NOFOLLOW) != 0) continue;
    total += (uint64_t)es.st_blocks * 512;
    if (!S_ISDIR(es.st_mode) || es.st_dev != st.st_dev) continue;
    if (depth == TREE_MAX_DEPTH) { /* unmeasurable: over any limit */
      while (depth > 0) closedir(stack[--depth]);
      free(stack);
      return UINT64_MAX;
    }
    int sub = open_dir_at(dir, de->d_name, st.st_dev);
    DIR *d = sub >= 0 ? fdopendir(sub) : NULL;
    if (d)
      stack[depth++] = d;
    else if (sub >= 0)
      close(sub);
  }
  free(stack);
  return total;
}
