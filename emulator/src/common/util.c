/* util.c — allocation, buffers, clocks and file helpers. */
#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
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

int sbuf_append_file(sbuf *b, const char *path) {
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  char chunk[16384];
  size_t n;
  while (b->len < ((size_t)16 << 20) && (n = fread(chunk, 1, sizeof chunk, f)) > 0) sbuf_append(b, chunk, n);
  int bad = ferror(f);
  fclose(f);
  return bad ? -1 : 0;
}

/* Open descriptors, counted at most every 250 ms (a count walks them all). */
static int open_fd_count(void) {
  static int64_t at;
  static int count;
  int64_t now = mono_ms(), then = __atomic_load_n(&at, __ATOMIC_ACQUIRE);
  if (then && now - then < 250) return __atomic_load_n(&count, __ATOMIC_RELAXED);
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1; /* not even one descriptor to spare */
  int n = 0;
  while (readdir(d)) n++;
  closedir(d);
  __atomic_store_n(&count, n, __ATOMIC_RELAXED);
  __atomic_store_n(&at, now, __ATOMIC_RELEASE);
  return n;
}

/* Descriptors are handed out lowest first, so while the slot at
 * limit - reserve is free there are (nearly always) reserve free ones; only
 * once it is taken (a burst went that high) are the open ones counted. */
int fds_available(int reserve) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)1 << 30 ||
      rl.rlim_cur < (rlim_t)reserve * 4)
    return 1;
  int mark = (int)rl.rlim_cur - reserve;
  int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, mark);
  if (fd >= 0) close(fd);
  if (fd == mark || (fd < 0 && errno != EMFILE)) return 1;
  int n = open_fd_count();
  return n >= 0 && (int)rl.rlim_cur - n >= reserve;
}

char *proc_stat_fields(int pid, char *buf, size_t cap) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n <= 0) return NULL;
  buf[n] = '\0';
  char *rp = strrchr(buf, ')');
  return rp && rp[1] == ' ' ? rp + 2 : NULL;
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

static int older(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

int dir_oldest(const char *dir, const char *keep, char *oldest, size_t cap, long long *n, long long *bytes) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *de;
  struct timespec oldest_t = {0, 0};
  struct stat st;
  oldest[0] = '\0';
  *n = *bytes = 0;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    (*n)++;
    *bytes += st.st_size;
    if ((!keep || strcmp(de->d_name, keep) != 0) && (!oldest[0] || older(&st.st_mtim, &oldest_t))) {
      snprintf(oldest, cap, "%s", de->d_name);
      oldest_t = st.st_mtim;
    }
  }
  closedir(d);
  return 0;
}
