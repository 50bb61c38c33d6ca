/* files.c — the files a template's COPY step takes from this machine:
 * which paths its source names (a path or a glob pattern under the context
 * directory, a directory with everything under it, ignore patterns left
 * out), their hash as the official SDKs compute it (E2B's cache key for the
 * layer), and the gzip tar E2B unpacks. Every file is read in pieces: only
 * the list of paths is held, bounded by E2B_TEMPLATE_FILES_MAX. */
#define _GNU_SOURCE
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <mbedtls/sha256.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIECE (64 * 1024)

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

/* ---- the hash ---- */

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

static int sha_file(mbedtls_sha256_context *sha, const char *full, unsigned char *piece) {
  FILE *f = fopen(full, "rb");
  if (!f) return -1;
  size_t n;
  while ((n = fread(piece, 1, PIECE, f)) > 0) mbedtls_sha256_update_ret(sha, piece, n);
  int bad = ferror(f);
  fclose(f);
  return bad ? -1 : 0;
}

/* A link is hashed as itself unless it is followed (resolve_symlinks, and
 * its target a file or a directory). */
static int sha_path(mbedtls_sha256_context *sha, const char *full, int resolve, unsigned char *piece) {
  struct stat st, target;
  if (lstat(full, &st) != 0) return -1;
  if (S_ISLNK(st.st_mode) &&
      !(resolve && stat(full, &target) == 0 && (S_ISREG(target.st_mode) || S_ISDIR(target.st_mode)))) {
    char link[4096];
    ssize_t n = readlink(full, link, sizeof link - 1);
    if (n < 0) return -1;
    link[n] = 0;
    sha_stats(sha, &st);
    sha_text(sha, link);
    return 0;
  }
  if (stat(full, &st) != 0) return -1;
  sha_stats(sha, &st);
  return S_ISREG(st.st_mode) ? sha_file(sha, full, piece) : 0;
}

static int copy_step(const e2b_template *t, size_t step, e2b_error *err) {
  if (e2b_template_check(t, err)) return -1;
  if (step >= t->step_count || strcmp(t->steps[step].type, "COPY"))
    return fail(err, E2B_ERR_INVALID_ARGUMENT, "step %s is no COPY", "");
  return 0;
}

int e2b_template_files_hash(const e2b_template *t, size_t step, char out[E2B_TEMPLATE_HASH_LEN + 1], e2b_error *err) {
  paths p;
  if (copy_step(t, step, err) || collect(t, step, &p, err)) return -1;
  const char *ctx = t->context && *t->context ? t->context : ".";
  const e2b_template_step *s = &t->steps[step];
  unsigned char *piece = malloc(PIECE), digest[32];
  mbedtls_sha256_context sha;
  mbedtls_sha256_init(&sha);
  mbedtls_sha256_starts_ret(&sha, 0);
  sha_text(&sha, "COPY ");
  sha_text(&sha, s->args[0]);
  sha_text(&sha, " ");
  sha_text(&sha, s->args[1]);
  int rc = piece ? 0 : fail(err, E2B_ERR_UNAVAILABLE, "out of memory%s", "");
  for (size_t i = 0; rc == 0 && i < p.n; i++) {
    char *full = join(ctx, p.items[i]);
    sha_text(&sha, p.items[i]);
    if (!full || sha_path(&sha, full, s->resolve_symlinks, piece) != 0)
      rc = fail(err, E2B_ERR_INVALID_ARGUMENT, "COPY: cannot read %s", p.items[i]);
    free(full);
  }
  mbedtls_sha256_finish_ret(&sha, digest);
  mbedtls_sha256_free(&sha);
  free(piece);
  paths_free(&p);
  for (int i = 0; rc == 0 && i < 32; i++) snprintf(out + 2 * i, 3, "%02x", digest[i]);
  return rc;
}

/* ---- the gzip tar ---- */

typedef struct gz {
  int fd;
  int failed;
  uint32_t crc, isize, table[256];
  size_t len;
  unsigned char buf[65535]; /* one stored deflate block */
} gz;

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

static void gz_block(gz *g, int final) {
  unsigned char h[5] = {(unsigned char)final, (unsigned char)(g->len & 0xff), (unsigned char)(g->len >> 8),
                        (unsigned char)(~g->len & 0xff), (unsigned char)((~g->len >> 8) & 0xff)};
  if (write_all(g->fd, h, 5) || write_all(g->fd, g->buf, g->len)) g->failed = 1;
  g->len = 0;
}

static void gz_init(gz *g, int fd) {
  memset(g, 0, sizeof *g);
  g->fd = fd;
  g->crc = 0xffffffffu;
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    g->table[i] = c;
  }
  static const unsigned char header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
  if (write_all(fd, header, sizeof header)) g->failed = 1;
}

static void gz_write(gz *g, const void *data, size_t n) {
  const unsigned char *p = data;
  g->isize += (uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    g->crc = g->table[(g->crc ^ p[i]) & 0xff] ^ (g->crc >> 8);
    g->buf[g->len++] = p[i];
    if (g->len == sizeof g->buf) gz_block(g, 0);
  }
}

static int gz_finish(gz *g) {
  if (g->len) gz_block(g, 0);
  gz_block(g, 1);
  uint32_t crc = g->crc ^ 0xffffffffu;
  unsigned char t[8] = {(unsigned char)crc,       (unsigned char)(crc >> 8),      (unsigned char)(crc >> 16),
                        (unsigned char)(crc >> 24), (unsigned char)g->isize,        (unsigned char)(g->isize >> 8),
                        (unsigned char)(g->isize >> 16), (unsigned char)(g->isize >> 24)};
  if (write_all(g->fd, t, 8)) g->failed = 1;
  return g->failed ? -1 : 0;
}

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

static void header(gz *g, const char *name, char type, const struct stat *st, long long size, const char *link) {
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
  gz_write(g, h, 512);
}

static void pad(gz *g, long long size) {
  static const unsigned char zeros[512];
  if (size % 512) gz_write(g, zeros, (size_t)(512 - size % 512));
}

/* An entry's header, preceded by a PAX header when its name, link or size
 * does not fit ustar's fields. */
static void entry(gz *g, const char *name, char type, const struct stat *st, long long size, const char *link) {
  char records[3 * 4200 + 64];
  size_t n = 0;
  if (strlen(name) >= 100) n += pax_record(records + n, sizeof records - n, "path", name);
  if (link && strlen(link) >= 100) n += pax_record(records + n, sizeof records - n, "linkpath", link);
  if (size > SIZE_FIELD_MAX) {
    char num[32];
    snprintf(num, sizeof num, "%lld", size);
    n += pax_record(records + n, sizeof records - n, "size", num);
  }
  if (n) {
    header(g, "PaxHeader", 'x', NULL, (long long)n, NULL);
    gz_write(g, records, n);
    pad(g, (long long)n);
  }
  header(g, name, type, st, size, link);
}

/* A file's bytes, exactly size of them (a file that shrank is an error). */
static int file_body(gz *g, const char *full, long long size, unsigned char *piece) {
  FILE *f = fopen(full, "rb");
  if (!f) return -1;
  long long left = size;
  while (left > 0) {
    size_t want = left > PIECE ? PIECE : (size_t)left, got = fread(piece, 1, want, f);
    if (got == 0) break;
    gz_write(g, piece, got);
    left -= (long long)got;
  }
  fclose(f);
  pad(g, size);
  return left ? -1 : 0;
}

static int tar_path(gz *g, const char *ctx, const char *rel, int resolve, unsigned char *piece) {
  char *full = join(ctx, rel), link[4096];
  struct stat st, target;
  int rc = -1;
  if (!full || lstat(full, &st) != 0) goto out;
  if (S_ISLNK(st.st_mode) && resolve && stat(full, &target) == 0 && (S_ISREG(target.st_mode) || S_ISDIR(target.st_mode)))
    st = target;
  if (S_ISLNK(st.st_mode)) {
    ssize_t n = readlink(full, link, sizeof link - 1);
    if (n < 0) goto out;
    link[n] = 0;
    entry(g, rel, '2', &st, 0, link);
    rc = 0;
  } else if (S_ISDIR(st.st_mode)) {
    char name[4200];
    snprintf(name, sizeof name, "%s/", rel);
    entry(g, name, '5', &st, 0, NULL);
    rc = 0;
  } else if (S_ISREG(st.st_mode)) {
    entry(g, rel, '0', &st, (long long)st.st_size, NULL);
    rc = file_body(g, full, (long long)st.st_size, piece);
  } else {
    rc = 0; /* a socket, fifo or device: nothing E2B could copy */
  }
out:
  free(full);
  return rc;
}

int e2b_template_tar(const e2b_template *t, size_t step, int fd, e2b_error *err) {
  paths p;
  if (copy_step(t, step, err) || collect(t, step, &p, err)) return -1;
  const char *ctx = t->context && *t->context ? t->context : ".";
  gz *g = malloc(sizeof *g);
  unsigned char *piece = malloc(PIECE);
  int rc = g && piece ? 0 : fail(err, E2B_ERR_UNAVAILABLE, "out of memory%s", "");
  if (rc == 0) gz_init(g, fd);
  for (size_t i = 0; rc == 0 && i < p.n; i++)
    if (*p.items[i] && tar_path(g, ctx, p.items[i], t->steps[step].resolve_symlinks, piece) != 0)
      rc = fail(err, E2B_ERR_INVALID_ARGUMENT, "COPY: cannot read %s (or it changed while archived)", p.items[i]);
  if (rc == 0) {
    static const unsigned char end[1024];
    gz_write(g, end, sizeof end);
    if (gz_finish(g) != 0) rc = fail(err, E2B_ERR_UNAVAILABLE, "COPY: cannot write the archive%s", "");
  }
  free(piece);
  free(g);
  paths_free(&p);
  return rc;
}
