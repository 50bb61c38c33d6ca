/* volcontent.c — the volume content API (/volumecontent/{id}/path|dir|file):
 * files inside one volume's data directory, reached with that volume's token.
 *
 * Sandboxes write into volumes, so what is there is untrusted: every path is
 * resolved beneath the volume's directory by openat2 with no symlink, magic
 * link or mount crossing allowed anywhere on the way, and every final
 * operation works on a descriptor or a (directory fd, name) pair, never on a
 * path that a sandbox could swap between a check and its use. */
#define _GNU_SOURCE
#include "volcontent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pjson.h"
#include "sandbox.h"
#include "store.h"
#include "tree.h"
#include "util.h"

#define VC_PATH_MAX 4096
#define VC_DEPTH_MAX 32        /* list depth bound */
#define VC_LIST_MAX 10000      /* entries one listing may return */
#define VC_DISCARD_MAX (8u << 20) /* body bytes read after an error is decided */
#define VC_ID_MAX 65534        /* uids/gids sandboxes use: root 0, user 1000, nogroup 65534 */
/* E2B's volume service (e2b-dev/infra, packages/orchestrator, volumes): a
 * new entry without uid/gid is owned by 9090:9090, a new file without a
 * mode is 0666, a new directory (parents made on the way too) 0777, set
 * after creation so no umask trims them; a forced overwrite sets them again
 * (those given, else these), whatever the file had. */
#define VC_DEFAULT_ID 9090
#define VC_FILE_MODE 0666
#define VC_DIR_MODE 0777

typedef struct vc_req {
  int root;             /* O_PATH descriptor of the volume's data directory */
  int status;           /* an error already decided (answered at completion) */
  char msg[300];
  char rel[VC_PATH_MAX]; /* normalized path beneath root, "" for the root */
  int fd;               /* upload target */
  uint64_t written, limit;
  size_t discarded;
} vc_req;

static void vc_free(void *p) {
  vc_req *v = p;
  if (v->root >= 0) close(v->root);
  if (v->fd >= 0) close(v->fd);
  free(v);
}

static void fail(vc_req *v, int status, const char *fmt, const char *arg) {
  if (v->status) return;
  v->status = status;
  snprintf(v->msg, sizeof v->msg, fmt, arg);
}

/* This API's errors carry a string code. */
static enum MHD_Result vc_error(http_req *r, unsigned status, const char *msg) {
  char code[8];
  snprintf(code, sizeof code, "%u", status);
  return http_json(r->conn, status, json_pack("{s:s, s:o}", "code", code, "message", pj_text(msg)));
}

static void fail_errno(vc_req *v, int err) {
  const char *p = *v->rel ? v->rel : "/";
  switch (err) {
  case ENOENT: fail(v, 404, "path '/%.200s' not found", *v->rel ? v->rel : ""); break;
  case ELOOP: case EXDEV: fail(v, 400, "path '%.200s' goes through a symlink or mount (refused)", p); break;
  case ENOTDIR: fail(v, 400, "a component of '%.200s' is not a directory", p); break;
  case EEXIST: fail(v, 409, "path '%.200s' already exists", p); break;
  case EISDIR: fail(v, 400, "path '%.200s' is a directory", p); break;
  case ENOTEMPTY: fail(v, 409, "directory '%.200s' is not empty", p); break;
  case EACCES: case EPERM: fail(v, 403, "permission denied on '%.200s'", p); break;
  case ENOSPC: case EDQUOT: fail(v, 507, "no space left for '%.200s'", p); break;
  case ENAMETOOLONG: fail(v, 400, "path '%.200s' is too long", p); break;
  default: fail(v, 500, "cannot access '%.200s'", p); break;
  }
}

/* openat2 beneath dirfd: no symlink, magic link or other mount on the way,
 * and O_NOFOLLOW in flags keeps a final symlink from being followed. */
static int beneath(int dirfd, const char *path, int flags, mode_t mode) {
  struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC), .mode = flags & O_CREAT ? mode : 0,
                         .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
  long fd = syscall(SYS_openat2, dirfd, *path ? path : ".", &how, sizeof how);
  return (int)fd;
}

/* "/a//./b/" -> "a/b"; ".." anywhere, over-long paths or names refused. */
static int normalize(const char *in, char *out, size_t cap) {
  size_t o = 0;
  while (*in) {
    while (*in == '/') in++;
    size_t n = strcspn(in, "/");
    if (n == 0) break;
    if (n == 2 && in[0] == '.' && in[1] == '.') return -1;
    if (n > 255) return -1;
    if (!(n == 1 && in[0] == '.')) {
      if (o + n + 2 > cap) return -1;
      if (o) out[o++] = '/';
      memcpy(out + o, in, n);
      o += n;
    }
    in += n;
  }
  out[o] = '\0';
  return 0;
}

/* Opens the parent directory of v->rel (O_PATH) and points *name at the last component. */
static int open_parent(vc_req *v, const char **name) {
  char *slash = strrchr(v->rel, '/');
  if (!slash) {
    *name = v->rel;
    int fd = dup(v->root);
    if (fd < 0) fail_errno(v, errno);
    return fd;
  }
  *slash = '\0';
  int fd = beneath(v->root, v->rel, O_PATH | O_DIRECTORY, 0);
  int err = errno;
  *slash = '/';
  *name = slash + 1;
  if (fd < 0) fail_errno(v, err);
  return fd;
}

static void put_time(json_t *o, const char *key, struct timespec ts) {
  struct tm tm;
  char buf[64];
  time_t t = ts.tv_sec;
  gmtime_r(&t, &tm);
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%09ldZ", ts.tv_nsec);
  json_object_set_new(o, key, json_string(buf));
}

/* VolumeEntryStat of name in dirfd (never following a final symlink); the
 * mode is the permission bits only, as E2B reports it (setuid, setgid and
 * sticky bits a sandbox set are not shown). */
static json_t *entry_json(int dirfd, const char *name, const char *rel) {
  struct stat st;
  if (fstatat(dirfd, *name ? name : "", &st, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH)) != 0)
    return NULL;
  const char *type = S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "directory"
                     : S_ISLNK(st.st_mode) ? "symlink" : "unknown";
  char *path = xasprintf("/%s", rel);
  /* names a sandbox chose need not be UTF-8: pj_text keeps them printable */
  json_t *o = json_pack("{s:o, s:s, s:o, s:I, s:I, s:I, s:I}", "name", pj_text(*name ? name : "/"), "type", type,
                        "path", pj_text(path), "size", (json_int_t)st.st_size, "mode", (json_int_t)(st.st_mode & 0777),
                        "uid", (json_int_t)st.st_uid, "gid", (json_int_t)st.st_gid);
  free(path);
  if (S_ISLNK(st.st_mode)) {
    char target[VC_PATH_MAX];
    ssize_t n = readlinkat(dirfd, name, target, sizeof target - 1);
    if (n >= 0) {
      target[n] = '\0';
      json_object_set_new(o, "target", pj_text(target));
    }
  }
  put_time(o, "atime", st.st_atim);
  put_time(o, "mtime", st.st_mtim);
  put_time(o, "ctime", st.st_ctim);
  return o;
}

/* The stat of v->rel, or NULL with the error decided. */
static json_t *stat_rel(vc_req *v) {
  const char *name;
  int pfd = open_parent(v, &name);
  if (pfd < 0) return NULL;
  json_t *o = entry_json(pfd, name, v->rel);
  if (!o) fail_errno(v, errno);
  close(pfd);
  return o;
}

static enum MHD_Result answer(http_req *r, vc_req *v, unsigned status, json_t *o) {
  if (!o) return vc_error(r, v->status ? (unsigned)v->status : 500, v->msg);
  return http_json(r->conn, status, o);
}

/* ---- query parameters ---- */

/* An optional unsigned query value at most max; -1 when absent, -2 when invalid. */
static long query_num(http_req *r, const char *key, long max) {
  const char *s = http_query(r->conn, key);
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long n = strtol(s, &end, 10);
  return (*end || errno || n < 0 || n > max) ? -2 : n;
}

static int query_true(http_req *r, const char *key) {
  const char *s = http_query(r->conn, key);
  return s && (strcmp(s, "true") == 0 || strcmp(s, "1") == 0);
}

/* uid, gid and mode from the query: defaults for new entries, bounded. A
 * server that is not root cannot give files away: an id not given is then
 * -1 (left as the server's own, and stat reports that). */
static int owner_mode(http_req *r, vc_req *v, long *uid, long *gid, long *mode, long def_mode) {
  *uid = query_num(r, "uid", VC_ID_MAX);
  *gid = query_num(r, "gid", VC_ID_MAX);
  *mode = query_num(r, "mode", 0777);
  if (*uid == -2 || *gid == -2) fail(v, 400, "uid and gid must be integers from 0 to %.200s", "65534");
  if (*mode == -2) fail(v, 400, "mode must be an integer from 0 to 0777 (%.200s)", "no setuid, setgid or sticky bits");
  if (*uid < 0) *uid = geteuid() == 0 ? VC_DEFAULT_ID : -1;
  if (*gid < 0) *gid = geteuid() == 0 ? VC_DEFAULT_ID : -1;
  if (*mode < 0) *mode = def_mode;
  return v->status ? -1 : 0;
}

/* ---- handlers ---- */

static enum MHD_Result h_stat(http_req *r) {
  vc_req *v = r->ctx;
  return answer(r, v, 200, stat_rel(v));
}

/* Changes owner and mode of fd (O_PATH); refuses symlinks and hard-linked files. */
static int set_meta(vc_req *v, int fd, long uid, long gid, long mode) {
  struct stat st;
  if (fstat(fd, &st) != 0) return fail_errno(v, errno), -1;
  if (S_ISLNK(st.st_mode)) return fail(v, 400, "'%.200s' is a symlink: its metadata cannot be changed", v->rel), -1;
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
    return fail(v, 400, "'%.200s' is not a file or a directory", v->rel), -1;
  if (S_ISREG(st.st_mode) && st.st_nlink > 1)
    return fail(v, 400, "'%.200s' has other hard links (refused)", v->rel), -1;
  if ((uid >= 0 || gid >= 0) && fchownat(fd, "", (uid_t)uid, (gid_t)gid, AT_EMPTY_PATH) != 0)
    return fail_errno(v, errno), -1;
  if (mode >= 0) {
    char procpath[64]; /* the descriptor's own inode: no path lookup a sandbox could redirect */
    snprintf(procpath, sizeof procpath, "/proc/self/fd/%d", fd);
    if (fchmodat(AT_FDCWD, procpath, (mode_t)mode, 0) != 0) return fail_errno(v, errno), -1;
  }
  return 0;
}

static long body_id(json_t *b, const char *key, long max, vc_req *v) {
  json_t *j = json_object_get(b, key);
  if (!j || json_is_null(j)) return -1;
  if (!json_is_integer(j) || json_integer_value(j) < 0 || json_integer_value(j) > max) {
    fail(v, 400, "field '%.200s' is out of range", key);
    return -1;
  }
  return (long)json_integer_value(j);
}

static enum MHD_Result h_patch(http_req *r) {
  vc_req *v = r->ctx;
  enum MHD_Result res;
  json_t *b = http_body_json(r, &res);
  if (!b) return res;
  long uid = body_id(b, "uid", VC_ID_MAX, v), gid = body_id(b, "gid", VC_ID_MAX, v), mode = body_id(b, "mode", 0777, v);
  json_decref(b);
  if (v->status) return vc_error(r, (unsigned)v->status, v->msg);
  int fd = beneath(v->root, v->rel, O_PATH | O_NOFOLLOW, 0);
  if (fd < 0) fail_errno(v, errno);
  int rc = fd < 0 ? -1 : set_meta(v, fd, uid, gid, mode);
  if (fd >= 0) close(fd);
  return answer(r, v, 200, rc == 0 ? stat_rel(v) : NULL);
}

static enum MHD_Result h_remove(http_req *r) {
  vc_req *v = r->ctx;
  if (!*v->rel) return vc_error(r, 400, "the volume's root cannot be removed");
  const char *name;
  int pfd = open_parent(v, &name);
  if (pfd < 0) return vc_error(r, (unsigned)v->status, v->msg);
  struct stat st;
  if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    fail_errno(v, errno);
  } else if (!S_ISDIR(st.st_mode)) {
    if (unlinkat(pfd, name, 0) != 0) fail_errno(v, errno);
  } else {
    /* the bounded tree walk, anchored at the parent's own inode */
    char *p = xasprintf("/proc/self/fd/%d/%s", pfd, name);
    if (rm_rf(p) != 0) fail(v, 500, "cannot remove all of '%.200s'", v->rel);
    free(p);
  }
  close(pfd);
  return v->status ? vc_error(r, (unsigned)v->status, v->msg) : http_empty(r->conn, 204);
}

/* ---- directories ---- */

typedef struct walk_item {
  char *rel;
  int level;
} walk_item;

/* Appends the entries of directory rel (at level) to out; queues subdirectories. */
static int list_one(vc_req *v, const char *rel, int level, int depth, json_t *out, walk_item **q, size_t *qn,
                    size_t *qcap) {
  int fd = beneath(v->root, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
  if (fd < 0) return level == 1 ? (fail_errno(v, errno), -1) : 0; /* vanished meanwhile */
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return fail_errno(v, errno), -1;
  }
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    if (json_array_size(out) >= VC_LIST_MAX) {
      fail(v, 400, "more than 10000 entries under '%.200s': list a deeper path or a smaller depth", v->rel);
      break;
    }
    char *child = *rel ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
    json_t *e = entry_json(dirfd(d), de->d_name, child);
    if (e) {
      int is_dir = strcmp(json_string_value(json_object_get(e, "type")), "directory") == 0;
      json_array_append_new(out, e);
      if (is_dir && level < depth && strlen(child) < VC_PATH_MAX - 256) {
        if (*qn == *qcap) *q = xrealloc(*q, (*qcap = *qcap ? *qcap * 2 : 16) * sizeof **q);
        (*q)[(*qn)++] = (walk_item){child, level + 1};
        child = NULL;
      }
    }
    free(child);
  }
  closedir(d);
  return v->status ? -1 : 0;
}

static enum MHD_Result h_list(http_req *r) {
  vc_req *v = r->ctx;
  long depth = query_num(r, "depth", VC_DEPTH_MAX);
  if (depth == -2 || depth == 0) return vc_error(r, 400, "depth must be an integer from 1 to 32");
  if (depth < 0) depth = 1;
  json_t *out = json_array();
  walk_item *q = NULL;
  size_t qn = 0, qcap = 0, qi = 0;
  int rc = list_one(v, v->rel, 1, (int)depth, out, &q, &qn, &qcap);
  for (; rc == 0 && qi < qn; qi++) rc = list_one(v, q[qi].rel, q[qi].level, (int)depth, out, &q, &qn, &qcap);
  for (size_t i = 0; i < qn; i++) free(q[i].rel);
  free(q);
  if (rc != 0) {
    json_decref(out);
    return vc_error(r, (unsigned)v->status, v->msg);
  }
  return http_json(r->conn, 200, out);
}

/* mkdir name in pfd, owned and moded as asked; 0, 1 when it already existed, -1. */
static int make_one(vc_req *v, int pfd, const char *name, long uid, long gid, long mode) {
  if (mkdirat(pfd, name, (mode_t)mode) != 0) {
    if (errno == EEXIST) return 1;
    return fail_errno(v, errno), -1;
  }
  int fd = beneath(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
  if (fd < 0) return fail_errno(v, errno), -1;
  int rc = set_meta(v, fd, uid, gid, mode);
  close(fd);
  return rc;
}

/* Makes every directory of v->rel's first upto bytes that is missing,
 * each opened beneath the last (none may be a symlink); 0 or -1. */
static int make_dirs(vc_req *v, size_t upto, long uid, long gid, long mode) {
  char saved = v->rel[upto];
  v->rel[upto] = '\0';
  int rc = 0, cur = dup(v->root);
  char *p = v->rel;
  while (rc >= 0 && cur >= 0 && *p) {
    char *slash = strchr(p, '/');
    if (slash) *slash = '\0';
    rc = make_one(v, cur, p, uid, gid, mode);
    int next = rc >= 0 && slash ? beneath(cur, p, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0) : -1;
    if (rc >= 0 && slash && next < 0) rc = -1, fail_errno(v, errno);
    if (slash) *slash = '/';
    close(cur);
    cur = next;
    if (!slash) break;
    p = slash + 1;
  }
  if (cur >= 0) close(cur);
  v->rel[upto] = saved;
  return rc < 0 ? -1 : 0;
}

static enum MHD_Result h_mkdir(http_req *r) {
  vc_req *v = r->ctx;
  long uid, gid, mode;
  if (owner_mode(r, v, &uid, &gid, &mode, VC_DIR_MODE) != 0) return vc_error(r, (unsigned)v->status, v->msg);
  if (!*v->rel) return vc_error(r, 409, "the volume's root already exists");
  int force = query_true(r, "force"), rc = 0;
  /* forced, missing parents get the default mode and the directory the one asked (E2B's) */
  char *slash = strrchr(v->rel, '/');
  if (force && slash) rc = make_dirs(v, (size_t)(slash - v->rel), uid, gid, VC_DIR_MODE);
  if (rc == 0) {
    const char *name;
    int pfd = open_parent(v, &name);
    rc = pfd < 0 ? -1 : make_one(v, pfd, name, uid, gid, mode);
    struct stat st;
    /* forced, an existing directory is success; anything else there is not */
    if (rc == 1 && (!force || fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)))
      fail(v, 409, "path '%.200s' already exists", v->rel), rc = -1;
    if (pfd >= 0) close(pfd);
  }
  return answer(r, v, 201, rc < 0 ? NULL : stat_rel(v));
}

/* ---- files ---- */

static enum MHD_Result h_read(http_req *r) {
  vc_req *v = r->ctx;
  /* O_NONBLOCK: a FIFO planted in the volume must not hang this thread */
  int fd = beneath(v->root, v->rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    fail_errno(v, errno);
    if (fd >= 0) close(fd);
    return vc_error(r, (unsigned)v->status, v->msg);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return vc_error(r, 400, S_ISDIR(st.st_mode) ? "path is a directory" : "path is not a regular file");
  }
  return http_stream_file(r, 200, fd, 0, (uint64_t)st.st_size);
}

/* Opens the upload target: created (or, with force, truncated) regular file,
 * never through a symlink, never a file with other hard links. */
static void open_upload(http_req *r, vc_req *v) {
  long uid, gid, mode;
  if (owner_mode(r, v, &uid, &gid, &mode, VC_FILE_MODE) != 0) return;
  if (!*v->rel) {
    fail(v, 400, "the path query parameter must name a file%.200s", "");
    return;
  }
  int flags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, force = query_true(r, "force");
  /* forced, missing parents are made first (E2B's file create does: its
   * ensureDirs), owned as the file; without force a missing one is 404 */
  char *slash = strrchr(v->rel, '/');
  if (force && slash && make_dirs(v, (size_t)(slash - v->rel), uid, gid, VC_DIR_MODE) != 0) return;
  int fd = beneath(v->root, v->rel, flags | O_CREAT | O_EXCL, (mode_t)mode);
  if (fd < 0 && errno == EEXIST && force) fd = beneath(v->root, v->rel, flags, 0);
  if (fd < 0) {
    fail_errno(v, errno);
    return;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
    close(fd);
    fail(v, 400, "'%.200s' is not a regular file with a single link (refused)", v->rel);
    return;
  }
  v->fd = fd;
  if (ftruncate(fd, 0) != 0) {
    fail_errno(v, errno);
    return;
  }
  /* new or forced over, the file gets the owner and mode asked (else E2B's
   * defaults): nothing a sandbox set on it (setuid, another owner) stays;
   * chown first, as it would clear what chmod set */
  if (fchown(fd, (uid_t)uid, (gid_t)gid) != 0 || fchmod(fd, (mode_t)mode) != 0) fail_errno(v, errno);
}

static int upload_body(http_req *r, const char *data, size_t n) {
  vc_req *v = r->ctx;
  if (v->status) { /* the answer is decided: drop a bounded amount */
    v->discarded += n;
    return v->discarded > VC_DISCARD_MAX ? -1 : 0;
  }
  if (v->written + n > v->limit) {
    fail(v, 413, "file larger than the %.200s limit", "diskSizeMB");
    return 0;
  }
  if (write_all(v->fd, data, n) != 0) fail_errno(v, errno);
  v->written += n;
  return 0;
}

static enum MHD_Result h_write(http_req *r) {
  vc_req *v = r->ctx;
  if (!v->status && close(v->fd) != 0) fail_errno(v, errno);
  else if (v->status && v->fd >= 0) close(v->fd);
  v->fd = -1;
  return answer(r, v, 201, v->status ? NULL : stat_rel(v));
}

/* ---- routing ---- */

static enum MHD_Result h_decided(http_req *r) {
  vc_req *v = r->ctx;
  return vc_error(r, (unsigned)v->status, v->msg);
}

static enum MHD_Result (*pick(const char *kind, const char *m))(http_req *) {
  if (strcmp(kind, "path") == 0)
    return !strcmp(m, "GET") ? h_stat : !strcmp(m, "PATCH") ? h_patch : !strcmp(m, "DELETE") ? h_remove : NULL;
  if (strcmp(kind, "dir") == 0) return !strcmp(m, "GET") ? h_list : !strcmp(m, "POST") ? h_mkdir : NULL;
  if (strcmp(kind, "file") == 0) return !strcmp(m, "GET") ? h_read : !strcmp(m, "PUT") ? h_write : NULL;
  return NULL;
}

/* Authorizes by the volume's own token, then resolves the path. */
static void prepare(http_req *r, vc_req *v, const char *id) {
  const char *auth = http_header(r->conn, "Authorization"), *tok = NULL;
  if (auth && strncasecmp(auth, "Bearer ", 7) == 0) tok = auth + 7;
  int status = 0;
  char *dir = store_volume_dir_by_token(id, tok, &status);
  if (!dir) {
    if (status == 404) fail(v, 404, "volume '%.200s' not found", id);
    else fail(v, 401, "%.200s", tok ? "invalid volume token" : "missing volume token (Authorization: Bearer)");
    return;
  }
  v->root = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  free(dir);
  if (v->root < 0) {
    fail(v, 404, "volume '%.200s' has no data directory", id);
    return;
  }
  const char *q = NULL;
  size_t qlen = 0;
  if (MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, "path", 4, &q, &qlen) != MHD_YES) q = NULL;
  if (q && strlen(q) != qlen) { /* a %00 would silently shorten the path */
    fail(v, 400, "path may not contain NUL bytes%.200s", "");
    return;
  }
  if (normalize(q ? q : "", v->rel, sizeof v->rel) != 0)
    fail(v, 400, "path must stay inside the volume (no '..', names up to 255 bytes, %.200s)", "4096 bytes in all");
}

void volcontent_route(http_req *r) {
  char id[128], kind[8];
  const char *rest = r->url + strlen("/volumecontent/");
  size_t n = strcspn(rest, "/");
  if (n == 0 || n >= sizeof id || rest[n] != '/') return; /* 404 */
  memcpy(id, rest, n);
  id[n] = '\0';
  size_t k = strcspn(rest + n + 1, "/");
  if (k >= sizeof kind || (rest[n + 1 + k] && strcmp(rest + n + 1 + k, "/") != 0)) return;
  memcpy(kind, rest + n + 1, k);
  kind[k] = '\0';
  if (strcmp(kind, "path") && strcmp(kind, "dir") && strcmp(kind, "file")) return;
  vc_req *v = xcalloc(1, sizeof *v);
  v->root = v->fd = -1;
  v->limit = (uint64_t)sandbox_disk_mb() << 20;
  r->ctx = v;
  r->ctx_free = vc_free;
  enum MHD_Result (*fn)(http_req *) = pick(kind, r->method);
  if (!fn) {
    fail(v, 405, "method %.200s not allowed here", r->method);
  } else {
    prepare(r, v, id);
  }
  if (fn == h_write) {
    r->on_body = upload_body;
    if (!v->status) open_upload(r, v);
  }
  r->on_complete = v->status ? h_decided : fn;
  if (v->status && fn == h_write) r->on_complete = h_write;
}
