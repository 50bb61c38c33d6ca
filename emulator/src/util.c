/* util.c — allocation, buffers, clocks and file helpers. */
#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) abort();
  return p;
}

void *xcalloc(size_t n, size_t m) {
  void *p = calloc(n ? n : 1, m ? m : 1);
  if (!p) abort();
  return p;
}

void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) abort();
  return p;
}

char *xstrdup(const char *s) {
  char *p = strdup(s ? s : "");
  if (!p) abort();
  return p;
}

char *xasprintf(const char *fmt, ...) {
  va_list ap;
  char *out = NULL;
  va_start(ap, fmt);
  int n = vasprintf(&out, fmt, ap);
  va_end(ap);
  if (n < 0) abort();
  return out;
}

void sbuf_reserve(sbuf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  b->data = xrealloc(b->data, cap);
  b->cap = cap;
}

void sbuf_append(sbuf *b, const void *data, size_t n) {
  sbuf_reserve(b, n);
  if (n) memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void sbuf_appendf(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) abort();
  sbuf_append(b, s, (size_t)n);
  free(s);
}

void sbuf_free(sbuf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mkdir_p(const char *path, mode_t mode) {
  char *p = xstrdup(path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, mode) != 0 && errno != EEXIST) {
      free(p);
      return -1;
    }
    *s = '/';
  }
  int rc = mkdir(p, mode);
  free(p);
  return rc != 0 && errno != EEXIST ? -1 : 0;
}

/* ---- tree walks with bounded stack ----
 * A sandbox decides how deep its tree is, and these run on 256 KiB request
 * threads: no recursion. One directory stream is open at a time; each level
 * keeps its (dev, inode), its name and where its listing stopped (telldir).
 * The way back up is "..", checked against the recorded (dev, inode), so a
 * directory moved meanwhile stops the walk instead of leading it out of the
 * tree. Symlinks are never followed and other mounts never entered. */

typedef struct tree_level {
  dev_t dev;
  ino_t ino;
  long off;    /* where this level's listing resumes, when resume is set */
  int resume;
  char *name; /* this level's name in its parent (NULL for the root) */
} tree_level;

typedef struct tree_walk {
  tree_level *v;
  size_t n, cap, max_depth;
  int fd;    /* the deepest level's directory */
  int fails; /* entries that could not be read or removed */
  /* called for each entry not entered, and (leaving=1) for each directory
   * once its contents were walked, with w->fd its parent */
  void (*visit)(struct tree_walk *w, const char *name, const struct stat *st, int leaving);
  uint64_t sum;
} tree_walk;

static void walk_push(tree_walk *w, const struct stat *st, const char *name) {
  if (w->n == w->cap) {
    w->cap = w->cap ? w->cap * 2 : 64;
    w->v = xrealloc(w->v, w->cap * sizeof *w->v);
  }
  w->v[w->n++] = (tree_level){st->st_dev, st->st_ino, 0, 0, name ? xstrdup(name) : NULL};
}

static void walk_free(tree_walk *w) {
  for (size_t i = 0; i < w->n; i++) free(w->v[i].name);
  free(w->v);
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
}

/* Enters the subdirectory name of the current level (st: its lstat). */
static int walk_down(tree_walk *w, const char *name, const struct stat *st) {
  int fd = openat(w->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat now;
  if (fd < 0) return -1;
  if (fstat(fd, &now) != 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
    close(fd); /* replaced between the lstat and the open */
    return -1;
  }
  close(w->fd);
  w->fd = fd;
  walk_push(w, &now, name);
  return 0;
}

/* Back to the parent level; -1 if ".." is not the directory we came from. */
static int walk_up(tree_walk *w) {
  int fd = openat(w->fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  const tree_level *parent = &w->v[w->n - 2];
  if (fd < 0) return -1;
  if (fstat(fd, &st) != 0 || st.st_dev != parent->dev || st.st_ino != parent->ino) {
    close(fd);
    return -1;
  }
  close(w->fd);
  w->fd = fd;
  return 0;
}

/* The current level's listing, resumed where it stopped. */
static DIR *walk_stream(tree_walk *w) {
  int fd = dup(w->fd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return NULL;
  }
  const tree_level *l = &w->v[w->n - 1];
  if (l->resume)
    seekdir(d, l->off);
  else
    rewinddir(d); /* the duplicate shares the offset of earlier reads */
  return d;
}

/* Lists the current level from where it stopped; 1 when it descended into a
 * subdirectory (the caller lists that next), 0 when the level is done. */
static int walk_level(tree_walk *w) {
  DIR *d = walk_stream(w);
  if (!d) {
    w->fails++;
    return 0;
  }
  dev_t dev = w->v[0].dev;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    struct stat st;
    if (fstatat(w->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      w->fails++;
      continue;
    }
    if (S_ISDIR(st.st_mode) && st.st_dev == dev && w->n < w->max_depth) {
      char name[256];
      snprintf(name, sizeof name, "%s", de->d_name);
      w->v[w->n - 1].off = telldir(d);
      w->v[w->n - 1].resume = 1;
      closedir(d);
      if (walk_down(w, name, &st) == 0) return 1;
      w->fails++;
      return 1; /* not entered: the caller lists this level again, past it */
    }
    w->visit(w, de->d_name, &st, 0);
  }
  closedir(d);
  return 0;
}

/* Walks everything below the root level, depth first. */
static void walk_tree(tree_walk *w) {
  for (;;) {
    if (walk_level(w)) continue;
    if (w->n == 1) return;
    if (walk_up(w) != 0) {
      w->fails++;
      return; /* lost the way back: stop rather than guess */
    }
    tree_level done = w->v[--w->n];
    struct stat st;
    if (fstatat(w->fd, done.name, &st, AT_SYMLINK_NOFOLLOW) == 0) w->visit(w, done.name, &st, 1);
    free(done.name);
  }
}

/* Opens path's root level; 0 when path is a directory, 1 when it is
 * something else (*st filled), -1 when it cannot be read. */
static int walk_open(tree_walk *w, const char *path, struct stat *st) {
  w->fd = -1;
  if (lstat(path, st) != 0) return -1;
  if (!S_ISDIR(st->st_mode)) return 1;
  w->fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (w->fd < 0 || fstat(w->fd, st) != 0) return -1;
  walk_push(w, st, NULL);
  return 0;
}

static void rm_visit(tree_walk *w, const char *name, const struct stat *st, int leaving) {
  (void)leaving;
  if (unlinkat(w->fd, name, S_ISDIR(st->st_mode) ? AT_REMOVEDIR : 0) != 0) w->fails++;
}

int rm_rf(const char *path) {
  struct stat st;
  /* passes: a listing resumed after removals may skip an entry on some
   * filesystems; the next pass finds it */
  for (int pass = 0; pass < 3; pass++) {
    tree_walk w = {.max_depth = (size_t)1 << 20, .visit = rm_visit};
    int r = walk_open(&w, path, &st);
    if (r == 0) walk_tree(&w);
    walk_free(&w);
    if (r < 0) return errno == ENOENT ? 0 : -1;
    if (r == 1) return unlink(path);
    if (rmdir(path) == 0) return 0;
    if (errno != ENOTEMPTY && errno != EEXIST) return -1;
  }
  return -1;
}

int write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int write_file(const char *path, const void *data, size_t n, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  int rc = write_all(fd, data, n);
  if (close(fd) != 0) rc = -1;
  return rc;
}

int write_file_atomic(const char *path, const void *data, size_t n, mode_t mode) {
  char *tmp = xasprintf("%s.tmp", path);
  int rc = write_file(tmp, data, n, mode);
  if (rc == 0) rc = rename(tmp, path);
  if (rc != 0) unlink(tmp);
  free(tmp);
  return rc;
}

char *path_clean(const char *path) {
  size_t n = strlen(path);
  char *out = xmalloc(n + 2);
  size_t o = 0; /* out[0..o) is "/seg/seg", empty meaning the root */
  const char *s = path;
  while (*s) {
    while (*s == '/') s++;
    if (!*s) break;
    size_t len = strcspn(s, "/");
    if (len == 2 && s[0] == '.' && s[1] == '.') {
      while (o > 0 && out[o - 1] != '/') o--;
      if (o > 0) o--;
    } else if (!(len == 1 && s[0] == '.')) {
      out[o++] = '/';
      memcpy(out + o, s, len);
      o += len;
    }
    s += len;
  }
  if (o == 0) out[o++] = '/';
  out[o] = '\0';
  return out;
}

void set_cloexec(int fd, int on) {
  int fl = fcntl(fd, F_GETFD);
  if (fl < 0) return;
  fcntl(fd, F_SETFD, on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC));
}

int run_wait(char *const argv[]) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_init(&at);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
  pid_t pid;
  extern char **environ;
  int rc = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (rc != 0) return -1;
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int copy_tree(const char *src, const char *dst) {
  if (mkdir_p(dst, 0755) != 0) return -1;
  char *from = xasprintf("%s/.", src);
  char *argv[] = {"/bin/cp", "-a", "--", from, (char *)dst, NULL};
  int rc = run_wait(argv);
  free(from);
  return rc == 0 ? 0 : -1;
}

static void du_visit(tree_walk *w, const char *name, const struct stat *st, int leaving) {
  (void)name;
  (void)leaving;
  w->sum += (uint64_t)st->st_blocks * 512;
}

uint64_t disk_usage(const char *path) {
  /* deeper than 4096 levels a directory is counted, its contents are not */
  tree_walk w = {.max_depth = 4096, .visit = du_visit};
  struct stat st;
  int r = walk_open(&w, path, &st);
  if (r >= 0) w.sum += (uint64_t)st.st_blocks * 512;
  if (r == 0) walk_tree(&w);
  walk_free(&w);
  return w.sum;
}
