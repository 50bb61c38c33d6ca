/* tplfiles.c — the archives a template's COPY steps upload: the upload link
 * (GET /templates/{id}/files/{hash} answers it), the upload itself (a PUT
 * signed for that hash, streamed to disk, bounded), and the COPY step, which
 * unpacks the archive inside the build sandbox after the host has filtered
 * it through the safe-tar filter (codec/tarsafe.c): no absolute or '..' name,
 * no path through a symlink of the archive, no device, no owner, no set-id
 * bit reaches the sandbox from an archive. Symlinks are kept as written,
 * wherever they point: E2B's builder unpacks with tar inside the sandbox,
 * which keeps them so (the SDK's copy of an absolute symlink depends on it). */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mbedtls/sha256.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "codec.h"
#include "log.h"
#include "sandbox.h"
#include "tplbuild.h"
#include "tplbuild_run.h"
#include "tree.h"
#include "util.h"

#define MAX_UPLOAD (1024LL * 1024 * 1024)        /* an archive as uploaded */
#define MAX_UNPACKED (4LL * 1024 * 1024 * 1024)  /* the tar inside it */
#define DISCARD_MAX (8LL * 1024 * 1024)
#define MAX_ARCHIVES 256 /* kept; the oldest go first */
#define MAX_ARCHIVE_BYTES (8LL * 1024 * 1024 * 1024)

static char g_secret[65];
static char *g_files_dir;

int tplfiles_init(const char *state_dir) {
  free(g_files_dir);
  g_files_dir = xasprintf("%s/template-files", state_dir);
  rm_rf(g_files_dir);
  if (mkdir_p(g_files_dir, 0700) != 0) return -1;
  return e2b_random_hex(g_secret, 64);
}

int tplfiles_hash_ok(const char *hash) {
  if (!hash || strlen(hash) != 64) return 0;
  for (const char *p = hash; *p; p++)
    if (!isdigit((unsigned char)*p) && !(*p >= 'a' && *p <= 'f')) return 0;
  return 1;
}

static char *archive_path(const char *hash) { return xasprintf("%s/%s", g_files_dir, hash); }

int tplfiles_present(const char *hash) {
  char *p = archive_path(hash);
  struct stat st;
  int ok = lstat(p, &st) == 0 && S_ISREG(st.st_mode);
  free(p);
  return ok;
}

static void token_for(const char *hash, char out[65]) {
  unsigned char d[32];
  char *text = xasprintf("%s/%s", g_secret, hash);
  mbedtls_sha256_ret((const unsigned char *)text, strlen(text), d, 0);
  free(text);
  for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

char *tplfiles_upload_url(const char *hash) {
  char tok[65];
  token_for(hash, tok);
  return xasprintf("%s/template-files/%s?token=%s", g_server.base_url, hash, tok);
}

/* ---- PUT /template-files/{hash}?token= ---- */

typedef struct upload {
  int fd;
  char *tmp, *dst;
  long long written;
  unsigned status;
  char msg[160];
} upload;

static void upload_free(void *p) {
  upload *u = p;
  if (u->fd >= 0) close(u->fd);
  if (u->tmp) unlink(u->tmp);
  free(u->tmp);
  free(u->dst);
  free(u);
}

static int upload_body(http_req *r, const char *data, size_t n) {
  upload *u = r->ctx;
  if (u->status) {
    u->written += (long long)n;
    return u->written > DISCARD_MAX ? -1 : 0;
  }
  if (u->written + (long long)n > MAX_UPLOAD) {
    u->status = 413;
    snprintf(u->msg, sizeof u->msg, "archive larger than %lld bytes", MAX_UPLOAD);
    u->written = 0;
    return 0;
  }
  if (write_all(u->fd, data, n) != 0) {
    u->status = 507;
    snprintf(u->msg, sizeof u->msg, "cannot store the archive: %s", strerror(errno));
  }
  u->written += (long long)n;
  return 0;
}

/* Keeps at most MAX_ARCHIVES archives of MAX_ARCHIVE_BYTES in all: the
 * oldest (by mtime) go first, never the one just stored (keep). */
static void trim_archives(const char *keep) {
  for (;;) {
    char oldest[80];
    long long n, bytes;
    if (dir_oldest(g_files_dir, keep, oldest, sizeof oldest, &n, &bytes) != 0) return;
    if ((n <= MAX_ARCHIVES && bytes <= MAX_ARCHIVE_BYTES) || !oldest[0]) return;
    char *p = archive_path(oldest);
    unlink(p);
    free(p);
  }
}

static enum MHD_Result upload_done(http_req *r) {
  upload *u = r->ctx;
  if (u->status) return http_error(r->conn, u->status, "%s", u->msg);
  int rc = close(u->fd);
  u->fd = -1;
  if (rc != 0 || rename(u->tmp, u->dst) != 0) return http_error(r->conn, 507, "cannot store the archive");
  free(u->tmp);
  u->tmp = NULL;
  trim_archives(strrchr(u->dst, '/') + 1);
  return http_empty(r->conn, 200);
}

/* Refused before its body: the server answers (and reads at most a bounded part of the body). */
static void refuse(http_req *r, upload *u, int status, const char *msg) {
  u->status = (unsigned)status;
  r->early_status = status;
  snprintf(r->early_msg, sizeof r->early_msg, "%s", msg);
}

void tplfiles_route(http_req *r) {
  const char *hash = r->url + strlen("/template-files/");
  const char *token = http_query(r->conn, "token");
  upload *u = xcalloc(1, sizeof *u);
  u->fd = -1;
  r->ctx = u;
  r->ctx_free = upload_free;
  r->on_body = upload_body;
  r->on_complete = upload_done;
  char want[65];
  if (!tplfiles_hash_ok(hash)) {
    refuse(r, u, 404, "no such upload");
    return;
  }
  token_for(hash, want);
  if (strcmp(r->method, "PUT") != 0 || !token || !e2b_secure_streq(token, want)) {
    refuse(r, u, 403, "the upload link is not valid for this archive");
    return;
  }
  const char *cl = http_header(r->conn, "Content-Length");
  if (cl && strtoull(cl, NULL, 10) > (unsigned long long)MAX_UPLOAD) {
    refuse(r, u, 413, "archive larger than 1073741824 bytes");
    return;
  }
  char rnd[17];
  if (e2b_random_hex(rnd, 16) == 0) u->tmp = xasprintf("%s/.part-%s", g_files_dir, rnd);
  u->dst = archive_path(hash);
  u->fd = u->tmp ? open(u->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
  if (u->fd < 0) refuse(r, u, 507, "cannot store the archive");
}

/* ---- unpacking: a gzip tar in, filtered tar out ----
 * E2B's builder unpacks a COPY's archive with `tar -xzf`: only gzip. A plain
 * tar (the SDKs' gzip: false) fails there as GNU tar fails it, so here too. */

typedef struct sink {
  int fd;
  long long n;
} sink;

static int sink_write(void *ud, const void *data, size_t len) {
  sink *s = ud;
  s->n += (long long)len;
  if (s->n > MAX_UNPACKED) return -1;
  return write_all(s->fd, data, len);
}

static int feed_gzip(int in, e2b_tarsafe *t, sink *s) {
  z_stream z = {0};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return -1;
  unsigned char *ibuf = xmalloc(65536), *obuf = xmalloc(65536); /* not on the stack, never TLS */
  int zr = Z_OK, rc = 0;
  ssize_t n;
  while (rc == 0 && zr != Z_STREAM_END && (n = read(in, ibuf, 65536)) > 0) {
    z.next_in = ibuf;
    z.avail_in = (uInt)n;
    while (rc == 0 && z.avail_in > 0 && zr != Z_STREAM_END) {
      z.next_out = obuf;
      z.avail_out = 65536;
      zr = inflate(&z, Z_NO_FLUSH);
      if (zr != Z_OK && zr != Z_STREAM_END) rc = -1;
      else if (e2b_tarsafe_feed(t, obuf, 65536 - z.avail_out, sink_write, s) != 0) rc = -1;
    }
  }
  if (zr != Z_STREAM_END) rc = -1;
  inflateEnd(&z);
  free(ibuf);
  free(obuf);
  return rc;
}

static int prepare_fd(const char *hash, int out, char *err, size_t errcap) {
  char *p = archive_path(hash);
  int in = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  free(p);
  if (in < 0) {
    snprintf(err, errcap, "failed to open files object from storage: the archive %.64s was not uploaded", hash);
    return -1;
  }
  unsigned char magic[2] = {0};
  ssize_t m = pread(in, magic, 2, 0);
  e2b_tarsafe *t = e2b_tarsafe_new();
  if (t) e2b_tarsafe_for_sandbox(t);
  sink s = {.fd = out};
  int gz = m == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  int rc = t && gz ? feed_gzip(in, t, &s) : -1;
  if (rc == 0 && e2b_tarsafe_finish(t) != 0) rc = -1;
  if (t && !gz) {
    snprintf(err, errcap, "failed to extract files: exit status 2 (gzip: stdin: not in gzip format)");
  } else if (rc != 0) {
    const char *why = t ? e2b_tarsafe_error(t) : NULL;
    snprintf(err, errcap, "failed to extract files: %.300s",
             why ? why : s.n > MAX_UNPACKED ? "the archive unpacks past 4 GiB" : "not a gzip-compressed tar archive");
  }
  e2b_tarsafe_free(t);
  close(in);
  return rc;
}

/* ---- the COPY step ---- */

/* Unpacks, then moves the source (its owner and mode set) to the target:
 * a directory's contents merge into it; a file or symlink goes to it, or
 * inside it when it ends in '/'. Relative targets start at the workdir. */
static const char COPY_SCRIPT[] =
    "set -o pipefail\n"
    "tarball=$1 src=$2 dest=$3 owner=$4 mode=$5\n"
    "stage=$(mktemp -d /tmp/.e2b-copy-XXXXXX) || exit 1\n"
    "trap 'rm -rf -- \"$stage\" \"$tarball\"' EXIT\n"
    "tar -xf \"$tarball\" -C \"$stage\" --no-same-owner || exit 1\n"
    "entry=$stage/$src\n"
    "if [ ! -e \"$entry\" ] && [ ! -L \"$entry\" ]; then echo \"source path does not exist: $src\" >&2; exit 1; fi\n"
    "case $dest in /*) ;; *) dest=$PWD/$dest ;; esac\n"
    "if [ -d \"$entry\" ] && [ ! -L \"$entry\" ]; then\n"
    "  chown -R -- \"$owner\" \"$entry\" && { [ -z \"$mode\" ] || chmod -R -- \"$mode\" \"$entry\"; } || exit 1\n"
    "  mkdir -p -- \"$dest\" || exit 1\n"
    "  (cd \"$entry\" && tar -cf - .) | tar -xf - -C \"$dest\" --keep-directory-symlink --no-overwrite-dir\n"
    "else\n"
    "  chown -h -- \"$owner\" \"$entry\" || exit 1\n"
    "  if [ ! -L \"$entry\" ] && [ -n \"$mode\" ]; then chmod -- \"$mode\" \"$entry\" || exit 1; fi\n"
    "  case $dest in */) mkdir -p -- \"$dest\" ;; *) mkdir -p -- \"$(dirname -- \"$dest\")\" ;; esac || exit 1\n"
    "  mv -f -- \"$entry\" \"$dest\"\n"
    "fi\n";

/* The part of a source path before its first glob component (src/x*.txt gives src). */
static char *glob_base(const char *src) {
  while (src[0] == '.' && src[1] == '/') src += 2;
  char *out = xstrdup(src);
  char *p = out;
  while (*p) {
    char *end = strchr(p, '/');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (memchr(p, '*', n) || memchr(p, '?', n) || memchr(p, '[', n) || memchr(p, '{', n)) {
      *(p > out ? p - 1 : p) = '\0';
      break;
    }
    p += n + (end ? 1 : 0);
  }
  size_t len = strlen(out);
  while (len > 1 && out[len - 1] == '/') out[--len] = '\0';
  if (!*out) {
    free(out);
    out = xstrdup(".");
  }
  return out;
}

static int owner_ok(const char *o, char *out, size_t cap) {
  int uid, gid;
  const char *home;
  char u[64];
  const char *colon = strchr(o, ':');
  snprintf(u, sizeof u, "%.*s", colon ? (int)(colon - o) : 63, o);
  if (tb_user_ids(u, &uid, &gid, &home) != 0 || (colon && tb_user_ids(colon + 1, &uid, &gid, &home) != 0)) return 0;
  snprintf(out, cap, "%s:%s", u, colon ? colon + 1 : u);
  return 1;
}

static int mode_ok(const char *m) {
  size_t n = strlen(m);
  if (n > 4) return 0;
  for (size_t i = 0; i < n; i++)
    if (m[i] < '0' || m[i] > '7') return 0;
  return 1;
}

/* The filtered archive as a new file in the sandbox's /tmp (never through
 * anything the sandbox put there: O_EXCL | O_NOFOLLOW, a random name). */
static char *stage_archive(tb_run *rc, const char *hash) {
  char rnd[17];
  if (e2b_random_hex(rnd, 16) != 0) return NULL;
  char *inside = xasprintf("/tmp/.e2b-copy-%s.tar", rnd);
  char *host = xasprintf("%s%s", rc->sb->dir, inside);
  int fd = open(host, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  int ok = fd >= 0 && prepare_fd(hash, fd, rc->err, sizeof rc->err) == 0;
  if (fd < 0) snprintf(rc->err, sizeof rc->err, "cannot stage the archive: %s", strerror(errno));
  if (fd >= 0 && close(fd) != 0) ok = 0;
  if (!ok && fd >= 0) unlink(host);
  free(host);
  if (!ok) {
    free(inside);
    return NULL;
  }
  return inside;
}

int tb_step_copy(tb_run *rc, json_t *step, const char *label) {
  json_t *a = json_object_get(step, "args");
  const char *hash = json_string_value(json_object_get(step, "filesHash"));
  const char *owner = json_string_value(json_array_get(a, 2)), *mode = json_string_value(json_array_get(a, 3));
  char own[140];
  if (json_array_size(a) < 2)
    return snprintf(rc->err, sizeof rc->err, "COPY requires a local path and a container path argument"), -1;
  if (!hash || !*hash) return snprintf(rc->err, sizeof rc->err, "COPY requires files hash to be set"), -1;
  if (!tplfiles_hash_ok(hash)) return snprintf(rc->err, sizeof rc->err, "COPY: invalid files hash"), -1;
  if (!owner_ok(owner && *owner ? owner : rc->user, own, sizeof own))
    return snprintf(rc->err, sizeof rc->err, "COPY: unknown owner '%.64s' (root and user only)", owner), -1;
  if (mode && !mode_ok(mode)) return snprintf(rc->err, sizeof rc->err, "COPY: invalid mode '%.16s'", mode), -1;
  char *tarball = stage_archive(rc, hash);
  if (!tarball) return -1;
  char *src = glob_base(json_string_value(json_array_get(a, 0)));
  json_t *args = json_pack("[s, s, s, s, s]", tarball, src, json_string_value(json_array_get(a, 1)), own, mode ? mode : "");
  int uid, gid;
  const char *home = "/home/user";
  tb_user_ids(rc->user, &uid, &gid, &home);
  int code = tb_shell(rc, COPY_SCRIPT, args, "root", rc->workdir ? rc->workdir : home, label);
  json_decref(args);
  free(src);
  free(tarball);
  if (code != 0) return snprintf(rc->err, sizeof rc->err, "failed to move files in sandbox: exit status %d", code), -1;
  return 0;
}
