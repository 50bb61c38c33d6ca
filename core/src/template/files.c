/* files.c — the files a template's COPY step takes from this machine:
 * which paths its source names (a path or a glob pattern under the context
 * directory, a directory with everything under it, ignore patterns left
 * out), their hash as the official SDKs compute it (E2B's cache key for the
 * layer), and the gzip tar E2B unpacks (zlib's deflate at its default level,
 * as the SDKs' tar libraries use). Both are a job done in slices (a budget
 * of bytes read per call), so a loop can interleave it with everything else;
 * every file is read in pieces: only the list of paths is held, bounded by
 * E2B_TEMPLATE_FILES_MAX, and deflate's window. */
#define _GNU_SOURCE
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <mbedtls/sha256.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define PIECE (64 * 1024)
#define ENTRY_COST 4096 /* budget one path costs beside its bytes: many small files still yield */

typedef struct paths {
  char **items; /* relative to the context, '/'-separated; "" is the context itself */
  size_t n, cap;
} paths;

static void paths_free(paths *p) {
  for (size_t i = 0; i < p->n; i++) free(p->items[i]);
  free(p->items);
}

static int fail(e2b_error *err, e2b_code code, const char *fmt, const char *path) {
  e2b_err_set(err, code, "template", fmt, path);
  return -1;
}

static int paths_add(paths *p, const char *rel, e2b_error *err) {
  if (p->n >= E2B_TEMPLATE_FILES_MAX) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "template", "COPY takes more than %d paths", E2B_TEMPLATE_FILES_MAX);
    if (err) snprintf(err->field, sizeof err->field, "src");
    return -1;
  }
  if (p->n == p->cap) {
    void *grown = e2b_grow(p->items, &p->cap, sizeof *p->items, 64);
    if (!grown) return fail(err, E2B_ERR_UNAVAILABLE, "out of memory%s", "");
    p->items = grown;
  }
  if (!(p->items[p->n] = strdup(rel))) return fail(err, E2B_ERR_UNAVAILABLE, "out of memory%s", "");
  p->n++;
  return 0;
}

/* rel normalized in place: no "." components, no empty ones, ".." folded. */
static void normalize(char *rel) {
  char *out = rel, *p = rel;
  while (*p) {
    size_t n = strcspn(p, "/");
    if (n == 2 && p[0] == '.' && p[1] == '.') {
      while (out > rel && *--out != '/') {
      }
    } else if (n && !(n == 1 && p[0] == '.')) {
      if (out > rel) *out++ = '/';
      memmove(out, p, n);
      out += n;
    }
    p += n;
    while (*p == '/') p++;
  }
  *out = 0;
}

/* A pattern matches a path, or a directory above it (ignoring a directory
 * ignores what is in it); "**" / prefixes match at any depth. */
static int ignored(const paths *ign, const char *rel) {
  for (size_t i = 0; i < ign->n; i++) {
    const char *pat = ign->items[i];
    int any_depth = strncmp(pat, "**/", 3) == 0;
    if (any_depth) pat += 3;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", pat);
    size_t bl = strlen(buf);
    while (bl > 0 && buf[bl - 1] == '/') buf[--bl] = 0;
    if (bl >= 3 && !strcmp(buf + bl - 3, "/**")) buf[bl - 3] = 0;
    for (const char *from = rel; from;) {
      for (const char *end = from;; end++) {
        if (*end == '/' || !*end) {
          char head[4096];
          snprintf(head, sizeof head, "%.*s", (int)(end - from), from);
          if (fnmatch(buf, head, FNM_PATHNAME) == 0) return 1;
          if (!*end) break;
        }
      }
      from = any_depth && strchr(from, '/') ? strchr(from, '/') + 1 : NULL;
    }
  }
  return 0;
}

static char *join(const char *ctx, const char *rel) {
  size_t n = strlen(ctx) + strlen(rel) + 2;
  char *full = malloc(n);
  if (full) snprintf(full, n, *rel ? "%s/%s" : "%s", ctx, rel);
  return full;
}

/* Everything under the directory rel (not following links), ignored paths left out. */
static int walk(const paths *ign, const char *ctx, const char *rel, paths *out, e2b_error *err) {
  char *full = join(ctx, rel);
  DIR *d = full ? opendir(full) : NULL;
  free(full);
  if (!d) return fail(err, E2B_ERR_INVALID_ARGUMENT, "cannot read the directory %s", *rel ? rel : ".");
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char *child = *rel ? join(rel, e->d_name) : strdup(e->d_name);
    if (!child) rc = fail(err, E2B_ERR_UNAVAILABLE, "out of memory%s", "");
    else if (!ignored(ign, child)) {
      char *cf = join(ctx, child);
      struct stat st;
      rc = paths_add(out, child, err);
      if (rc == 0 && cf && lstat(cf, &st) == 0 && S_ISDIR(st.st_mode)) rc = walk(ign, ctx, child, out, err);
      free(cf);
    }
    free(child);
  }
  closedir(d);
  return rc;
}

/* The context with glob's special characters escaped. */
static char *escaped(const char *s) {
  char *out = malloc(strlen(s) * 2 + 1), *o = out;
  if (!out) return NULL;
  for (; *s; s++) {
    if (strchr("*?[]\\", *s)) *o++ = '\\';
    *o++ = *s;
  }
  *o = 0;
  return out;
}

/* glob with GLOB_PERIOD lets a wildcard take "." and "..": only a source
 * that names them takes them. */
static int dot_entry(const char *match, const char *src) {
  const char *base = strrchr(match, '/'), *last = strrchr(src, '/');
  base = base ? base + 1 : match;
  last = last ? last + 1 : src;
  return (!strcmp(base, ".") || !strcmp(base, "..")) && strcmp(base, last) != 0;
}

#define DOCKERIGNORE_MAX (1 << 20) /* bytes of .dockerignore read */
#define IGNORES_MAX 10000           /* patterns, the template's and .dockerignore's */

/* The patterns left out: the template's, then the context's .dockerignore
 * (as the SDKs read it: lines trimmed, empty ones and comments skipped). */
static int load_ignores(const e2b_template *t, const char *ctx, paths *ign, e2b_error *err) {
  memset(ign, 0, sizeof *ign);
  for (size_t i = 0; i < t->ignore_count; i++)
    if (t->ignore[i] && *t->ignore[i] && paths_add(ign, t->ignore[i], err)) return -1;
  char *path = join(ctx, ".dockerignore"), line[4096];
  FILE *f = path ? fopen(path, "r") : NULL;
  free(path);
  long taken = 0;
  while (f && taken < DOCKERIGNORE_MAX && fgets(line, sizeof line, f)) {
    taken += (long)strlen(line);
    char *b = line, *e = line + strlen(line);
    while (*b == ' ' || *b == '\t') b++;
    while (e > b && strchr(" \t\r\n", e[-1])) *--e = 0;
    if (*b && *b != '#' && (ign->n >= IGNORES_MAX || paths_add(ign, b, err))) {
      fclose(f);
      if (ign->n >= IGNORES_MAX) fail(err, E2B_ERR_INVALID_ARGUMENT, "more than 10000 ignore patterns%s", "");
      return -1;
    }
  }
  if (f) fclose(f);
  return 0;
}

static int cmp_paths(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The paths steps[step]'s source takes, sorted, each once. */
static int collect(const e2b_template *t, size_t step, paths *out, e2b_error *err) {
  memset(out, 0, sizeof *out);
  const char *ctx = t->context && *t->context ? t->context : ".", *src = t->steps[step].args[0];
  char *ectx = escaped(ctx), *pattern = ectx ? join(ectx, src) : NULL;
  free(ectx);
  if (!pattern) return fail(err, E2B_ERR_UNAVAILABLE, "out of memory%s", "");
  paths ign;
  if (load_ignores(t, ctx, &ign, err)) {
    free(pattern);
    paths_free(&ign);
    return -1;
  }
  glob_t g;
  int grc = glob(pattern, GLOB_PERIOD, NULL, &g), rc = 0;
  free(pattern);
  for (size_t i = 0; grc == 0 && rc == 0 && i < g.gl_pathc; i++) {
    if (dot_entry(g.gl_pathv[i], src)) continue;
    char *rel = strdup(g.gl_pathv[i] + strlen(ctx) + (g.gl_pathv[i][strlen(ctx)] == '/'));
    if (!rel) rc = fail(err, E2B_ERR_UNAVAILABLE, "out of memory%s", "");
    else {
      normalize(rel);
      struct stat st;
      char *full = join(ctx, rel);
      if (*rel && ignored(&ign, rel)) {
      } else if ((rc = paths_add(out, rel, err)) == 0 && full && lstat(full, &st) == 0 && S_ISDIR(st.st_mode))
        rc = walk(&ign, ctx, rel, out, err);
      free(full);
    }
    free(rel);
  }
  if (grc == 0) globfree(&g);
  paths_free(&ign);
  if (rc == 0 && out->n == 0) rc = fail(err, E2B_ERR_NOT_FOUND, "COPY: no files match %s", src);
  if (rc) return paths_free(out), -1;
  qsort(out->items, out->n, sizeof *out->items, cmp_paths);
  size_t w = 0;
  for (size_t i = 0; i < out->n; i++) {
    if (w && !strcmp(out->items[w - 1], out->items[i])) free(out->items[i]);
    else out->items[w++] = out->items[i];
  }
  out->n = w;
  return 0;
}

/* ---- the job: the hash or the tar, a slice at a time ---- */

struct e2b_files_job {
  char *ctx;
  int resolve;
  int fd;              /* the tar's; -1: the hash */
  paths p;
  size_t next;         /* the next path to begin */
  FILE *cur;           /* the file whose bytes are being read */
  long long left, size; /* tar: bytes of cur still owed, and its size */
  int done;
  mbedtls_sha256_context sha;
  z_stream z;
  int z_open;
  unsigned char digest[32];
  unsigned char piece[PIECE], out[PIECE];
};

static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Deflates n bytes (flush Z_FINISH: the rest, to the stream's end) into fd. */
static int gz_deflate(e2b_files_job *j, const void *data, size_t n, int flush) {
  j->z.next_in = (Bytef *)(uintptr_t)data;
  j->z.avail_in = (uInt)n;
  for (;;) {
    j->z.next_out = j->out;
    j->z.avail_out = PIECE;
    int zrc = deflate(&j->z, flush);
    if (zrc == Z_STREAM_ERROR || write_all(j->fd, j->out, PIECE - j->z.avail_out)) return -1;
    if (flush == Z_FINISH ? zrc == Z_STREAM_END : j->z.avail_in == 0 && j->z.avail_out != 0) return 0;
  }
}

static int gz_write(e2b_files_job *j, const void *data, size_t n) { return gz_deflate(j, data, n, Z_NO_FLUSH); }

/* ustar header fields */
enum { T_NAME = 0, T_MODE = 100, T_UID = 108, T_GID = 116, T_SIZE = 124, T_MTIME = 136, T_SUM = 148,
       T_TYPE = 156, T_LINK = 157, T_MAGIC = 257, T_VERSION = 263 };
#define SIZE_FIELD_MAX 077777777777LL

static void octal(unsigned char *h, size_t off, size_t width, long long v) {
  snprintf((char *)h + off, width, "%0*llo", (int)width - 1, v);
}

/* One PAX record "len key=value\n", len counting itself. */
static size_t pax_record(char *out, size_t cap, const char *key, const char *value) {
  size_t body = strlen(key) + strlen(value) + 3, len = body + 1;
  while (snprintf(NULL, 0, "%zu", len) + body != len) len++;
  return (size_t)snprintf(out, cap, "%zu %s=%s\n", len, key, value);
}

static int header(e2b_files_job *j, const char *name, char type, const struct stat *st, long long size,
                  const char *link) {
  unsigned char h[512] = {0};
  snprintf((char *)h + T_NAME, 100, "%s", name);
  octal(h, T_MODE, 8, st ? (long long)(st->st_mode & 07777) : 0644);
  octal(h, T_UID, 8, 0);
  octal(h, T_GID, 8, 0);
  octal(h, T_SIZE, 12, size > SIZE_FIELD_MAX ? 0 : size);
  octal(h, T_MTIME, 12, st ? (long long)st->st_mtime : 0);
  h[T_TYPE] = (unsigned char)type;
  if (link) snprintf((char *)h + T_LINK, 100, "%s", link);
  memcpy(h + T_MAGIC, "ustar", 6);
  memcpy(h + T_VERSION, "00", 2);
  memset(h + T_SUM, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += h[i];
  snprintf((char *)h + T_SUM, 8, "%06o", sum);
  return gz_write(j, h, 512);
}

static int pad(e2b_files_job *j, long long size) {
  static const unsigned char zeros[512];
  return size % 512 ? gz_write(j, zeros, (size_t)(512 - size % 512)) : 0;
}

/* An entry's header, preceded by a PAX header when its name, link or size
 * does not fit ustar's fields. */
static int entry(e2b_files_job *j, const char *name, char type, const struct stat *st, long long size,
                 const char *link) {
  char records[3 * 4200 + 64];
  size_t n = 0;
  if (strlen(name) >= 100) n += pax_record(records + n, sizeof records - n, "path", name);
  if (link && strlen(link) >= 100) n += pax_record(records + n, sizeof records - n, "linkpath", link);
  if (size > SIZE_FIELD_MAX) {
    char num[32];
    snprintf(num, sizeof num, "%lld", size);
    n += pax_record(records + n, sizeof records - n, "size", num);
  }
  if (n && (header(j, "PaxHeader", 'x', NULL, (long long)n, NULL) || gz_write(j, records, n) || pad(j, (long long)n)))
    return -1;
  return header(j, name, type, st, size, link);
}

/* ---- beginning a path: what comes before (or instead of) its bytes ---- */

static void sha_text(mbedtls_sha256_context *sha, const char *s) {
  mbedtls_sha256_update_ret(sha, (const unsigned char *)s, strlen(s));
}

static void sha_stats(mbedtls_sha256_context *sha, const struct stat *st) {
  char num[32];
  snprintf(num, sizeof num, "%lu", (unsigned long)st->st_mode);
  sha_text(sha, num);
  snprintf(num, sizeof num, "%lld", (long long)st->st_size);
  sha_text(sha, num);
}

/* The hash: the path, then a link as itself unless it is followed
 * (resolve_symlinks, and its target a file or a directory), else the
 * stats, and a file's bytes to come. */
static int begin_hash(e2b_files_job *j, const char *rel, const char *full) {
  struct stat st, target;
  sha_text(&j->sha, rel);
  if (lstat(full, &st) != 0) return -1;
  if (S_ISLNK(st.st_mode) &&
      !(j->resolve && stat(full, &target) == 0 && (S_ISREG(target.st_mode) || S_ISDIR(target.st_mode)))) {
    char link[4096];
    ssize_t n = readlink(full, link, sizeof link - 1);
    if (n < 0) return -1;
    link[n] = 0;
    sha_stats(&j->sha, &st);
    sha_text(&j->sha, link);
    return 0;
  }
  if (stat(full, &st) != 0) return -1;
  sha_stats(&j->sha, &st);
  if (S_ISREG(st.st_mode) && !(j->cur = fopen(full, "rb"))) return -1;
  return 0;
}

/* The tar: the entry's header, and a file's bytes to come (exactly its size). */
static int begin_tar(e2b_files_job *j, const char *rel, const char *full) {
  char link[4096];
  struct stat st, target;
  if (!*rel) return 0; /* the context itself */
  if (lstat(full, &st) != 0) return -1;
  if (S_ISLNK(st.st_mode) && j->resolve && stat(full, &target) == 0 &&
      (S_ISREG(target.st_mode) || S_ISDIR(target.st_mode)))
    st = target;
  if (S_ISLNK(st.st_mode)) {
    ssize_t n = readlink(full, link, sizeof link - 1);
    if (n < 0) return -1;
    link[n] = 0;
    return entry(j, rel, '2', &st, 0, link);
  }
  if (S_ISDIR(st.st_mode)) {
    char name[4200];
    snprintf(name, sizeof name, "%s/", rel);
    return entry(j, name, '5', &st, 0, NULL);
  }
  if (!S_ISREG(st.st_mode)) return 0; /* a socket, fifo or device: nothing E2B could copy */
  if (entry(j, rel, '0', &st, (long long)st.st_size, NULL) || !(j->cur = fopen(full, "rb"))) return -1;
  j->left = j->size = (long long)st.st_size;
  return 0;
}

/* One piece of cur's bytes into the hash or the tar; at its end, cur is
 * closed (a file that shrank under the tar is an error). */
static int read_piece(e2b_files_job *j, size_t *spent) {
  size_t want = PIECE;
  if (j->fd >= 0 && j->left < PIECE) want = (size_t)j->left;
  size_t got = want ? fread(j->piece, 1, want, j->cur) : 0;
  *spent += got;
  if (got && (j->fd >= 0 ? gz_write(j, j->piece, got) : (mbedtls_sha256_update_ret(&j->sha, j->piece, got), 0)))
    return -1;
  j->left -= (long long)got;
  if (got == want && want) return 0;
  int bad = ferror(j->cur) || (j->fd >= 0 && j->left != 0);
  fclose(j->cur);
  j->cur = NULL;
  return bad || (j->fd >= 0 && pad(j, j->size)) ? -1 : 0;
}

static int end_job(e2b_files_job *j) {
  j->done = 1;
  if (j->fd < 0) return mbedtls_sha256_finish_ret(&j->sha, j->digest) ? -1 : 0;
  static const unsigned char end[1024];
  return gz_write(j, end, sizeof end) || gz_deflate(j, NULL, 0, Z_FINISH) ? -1 : 0;
}

int e2b_files_job_run(e2b_files_job *j, size_t budget, e2b_error *err) {
  size_t spent = 0;
  while (!j->done && spent < budget) {
    const char *rel = j->cur ? j->p.items[j->next - 1] : NULL;
    int rc = 0;
    if (j->cur) {
      rc = read_piece(j, &spent);
    } else if (j->next == j->p.n) {
      if (end_job(j)) return fail(err, E2B_ERR_UNAVAILABLE, "COPY: cannot write the archive%s", "");
    } else {
      rel = j->p.items[j->next++];
      char *full = join(j->ctx, rel);
      rc = !full ? -1 : j->fd < 0 ? begin_hash(j, rel, full) : begin_tar(j, rel, full);
      free(full);
      spent += ENTRY_COST;
    }
    if (rc)
      return fail(err, E2B_ERR_INVALID_ARGUMENT,
                  j->fd < 0 ? "COPY: cannot read %s" : "COPY: cannot read %s (or it changed while archived)", rel);
  }
  return j->done;
}

static int copy_step(const e2b_template *t, size_t step, e2b_error *err) {
  if (e2b_template_check(t, err)) return -1;
  if (step >= t->step_count || strcmp(t->steps[step].type, "COPY"))
    return fail(err, E2B_ERR_INVALID_ARGUMENT, "step %s is no COPY", "");
  return 0;
}

e2b_files_job *e2b_files_job_new(const e2b_template *t, size_t step, int fd, e2b_error *err) {
  if (copy_step(t, step, err)) return NULL;
  e2b_files_job *j = calloc(1, sizeof *j);
  if (!j) return fail(err, E2B_ERR_UNAVAILABLE, "out of memory%s", ""), NULL;
  const e2b_template_step *s = &t->steps[step];
  j->fd = fd;
  j->resolve = s->resolve_symlinks;
  if (collect(t, step, &j->p, err)) return free(j), NULL;
  j->ctx = strdup(t->context && *t->context ? t->context : ".");
  mbedtls_sha256_init(&j->sha);
  mbedtls_sha256_starts_ret(&j->sha, 0);
  if (fd >= 0) j->z_open = deflateInit2(&j->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  if (!j->ctx || (fd >= 0 && !j->z_open)) {
    e2b_files_job_free(j);
    return fail(err, E2B_ERR_UNAVAILABLE, "out of memory%s", ""), NULL;
  }
  sha_text(&j->sha, "COPY ");
  sha_text(&j->sha, s->args[0]);
  sha_text(&j->sha, " ");
  sha_text(&j->sha, s->args[1]);
  return j;
}

void e2b_files_job_hash(const e2b_files_job *j, char out[E2B_TEMPLATE_HASH_LEN + 1]) {
  for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", j->digest[i]);
}

void e2b_files_job_free(e2b_files_job *j) {
  if (!j) return;
  if (j->cur) fclose(j->cur);
  if (j->z_open) deflateEnd(&j->z);
  mbedtls_sha256_free(&j->sha);
  paths_free(&j->p);
  free(j->ctx);
  free(j);
}

/* The whole job at once, on the calling thread. */
static int run_all(const e2b_template *t, size_t step, int fd, char *hash, e2b_error *err) {
  e2b_files_job *j = e2b_files_job_new(t, step, fd, err);
  int rc = j ? e2b_files_job_run(j, SIZE_MAX, err) : -1;
  if (rc == 1 && hash) e2b_files_job_hash(j, hash);
  e2b_files_job_free(j);
  return rc == 1 ? 0 : -1;
}

int e2b_template_files_hash(const e2b_template *t, size_t step, char out[E2B_TEMPLATE_HASH_LEN + 1], e2b_error *err) {
  return run_all(t, step, -1, out, err);
}

int e2b_template_tar(const e2b_template *t, size_t step, int fd, e2b_error *err) {
  if (fd < 0) return fail(err, E2B_ERR_INVALID_ARGUMENT, "no file to write the archive to%s", "");
  return run_all(t, step, fd, NULL, err);
}
