/* util.h — small helpers shared by the server and the agent. */
#ifndef EMU_UTIL_H
#define EMU_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Allocation failures abort: the server cannot do anything useful without memory. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Growable byte buffer. */
typedef struct sbuf {
  char *data;
  size_t len, cap;
} sbuf;
void sbuf_reserve(sbuf *b, size_t extra);
void sbuf_append(sbuf *b, const void *data, size_t n);
void sbuf_appendf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbuf_free(sbuf *b);
/* Appends up to 16 MiB of path's bytes to b; -1 when it cannot be read. */
int sbuf_append_file(sbuf *b, const char *path);

int64_t now_ms(void);  /* wall clock, ms since the epoch */
int64_t mono_ms(void); /* monotonic clock, ms */

int mkdir_p(const char *path, mode_t mode);
int write_file(const char *path, const void *data, size_t n, mode_t mode);
/* Writes via a temp file + rename so readers never see a partial file. */
int write_file_atomic(const char *path, const void *data, size_t n, mode_t mode);

/* Lexical clean of an absolute path ("/a/./b/../c//" -> "/a/c"), like Go's path.Clean. */
char *path_clean(const char *path);

/* Writes all n bytes, retrying on EINTR/short writes. Returns 0 or -1 (errno set). */
int write_all(int fd, const void *data, size_t n);

void set_cloexec(int fd, int on);

/* The oldest entry (by mtime) of dir, other than keep (NULL: none), cut to
 * cap - 1 bytes into oldest ("" when none); *n and *bytes count all its
 * entries but dot-names. -1 when dir cannot be opened. */
int dir_oldest(const char *dir, const char *keep, char *oldest, size_t cap, long long *n, long long *bytes);

/* Whether at least `reserve` descriptors are still free under the soft
 * RLIMIT_NOFILE (always true when the limit is under 4 * reserve). */
int fds_available(int reserve);

/* Reads /proc/<pid>/stat into buf and returns the fields after the command
 * name (from the state on), or NULL when the process is gone. The name may
 * hold spaces and parentheses, so the last ')' ends it. */
char *proc_stat_fields(int pid, char *buf, size_t cap);

/* Runs argv (absolute path) with stdio on /dev/null and waits; returns its
 * exit status (0..255), or -1 when it could not run or died by a signal. */
int run_wait(char *const argv[]);
/* Copies the contents of directory src into dst (created when missing),
 * preserving modes, owners, times, symlinks and extended attributes. */
int copy_tree(const char *src, const char *dst);

#endif
