/* agent_fs.c — file operations executed inside the sandbox's mount namespace. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "agent.h"
#include "codec.h"
#include "pjson.h"
#include "util.h"

#define MAX_MAPS 4
/* ListDir's bounds (envd has none; e2b-local keeps memory bounded): about
 * 250 bytes of answer per entry, several times that while it is relayed. */
#define LIST_MAX_ENTRIES 20000
#define LIST_MAX_ENTRIES_S "20000"
#define LIST_MAX_DEPTH 64
#define LIST_MAX_DEPTH_S "64"

static struct {
  char *virt, *real;
} g_maps[MAX_MAPS];
static int g_nmaps;

void afs_add_map(const char *virt, const char *real) {
  if (g_nmaps >= MAX_MAPS) return;
  g_maps[g_nmaps].virt = xstrdup(virt);
  g_maps[g_nmaps].real = xstrdup(real);
  g_nmaps++;
}

/* Replaces prefix `from` of `path` (on a component boundary) by `to`. */
static char *swap_prefix(const char *path, const char *from, const char *to) {
  size_t n = strlen(from);
  if (strncmp(path, from, n) != 0 || (path[n] != '\0' && path[n] != '/')) return NULL;
  return xasprintf("%s%s", to, path + n);
}

char *afs_to_real(const char *virt) {
  for (int i = 0; i < g_nmaps; i++) {
    char *r = swap_prefix(virt, g_maps[i].virt, g_maps[i].real);
    if (r) return r;
  }
  return xstrdup(virt);
}

char *afs_to_virt(const char *real) {
  for (int i = 0; i < g_nmaps; i++) {
    char *r = swap_prefix(real, g_maps[i].real, g_maps[i].virt);
    if (r) return r;
  }
  return xstrdup(real);
}

static const char *req_str(json_t *req, const char *key) {
  const char *s = json_string_value(json_object_get(req, key));
  return s ? s : "";
}

static int req_int(json_t *req, const char *key, int dflt) {
  json_t *v = json_object_get(req, key);
  return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

/* Names match the generated /etc/passwd of every sandbox. */
static const char *id_name(unsigned id, char buf[16]) {
  if (id == 0) return "root";
  if (id == 1000) return "user";
  snprintf(buf, 16, "%u", id);
  return buf;
}

/* Go's os.FileMode.String() form, which envd reports as `permissions`: a
 * letter for each of Go's mode bits that is set, in Go's order
 * ("dalTLDpSugct?"; a character device is both D and c), or "-" for none,
 * then rwx for the nine permission bits. */
static void perm_string(mode_t m, char out[24]) {
  const struct {
    int on;
    char c;
  } bits[] = {{S_ISDIR(m), 'd'},  {S_ISLNK(m), 'L'},       {S_ISBLK(m) || S_ISCHR(m), 'D'},
              {S_ISFIFO(m), 'p'}, {S_ISSOCK(m), 'S'},      {(m & S_ISUID) != 0, 'u'},
              {(m & S_ISGID) != 0, 'g'}, {S_ISCHR(m), 'c'}, {(m & S_ISVTX) != 0, 't'}};
  size_t n = 0;
  for (size_t i = 0; i < sizeof bits / sizeof *bits; i++)
    if (bits[i].on) out[n++] = bits[i].c;
  if (!n) out[n++] = '-';
  const char *rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; i++) out[n++] = (m & (1u << (8 - i))) ? rwx[i] : '-';
  out[n] = '\0';
}

/* envd's types: a file or a directory; anything else has none (its zero
 * value, which protobuf JSON leaves out). */
static const char *file_type(mode_t m) {
  if (S_ISDIR(m)) return "FILE_TYPE_DIRECTORY";
  if (S_ISREG(m)) return "FILE_TYPE_FILE";
  return NULL;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s && s[1] ? s + 1 : (s ? "/" : p);
}

#define META_PREFIX "user.e2b."

/* envd keeps file metadata as user.e2b.<key> extended attributes. */
static json_t *read_metadata(const char *real) {
  char names[8192];
  ssize_t n = llistxattr(real, names, sizeof names);
  if (n <= 0) return NULL;
  json_t *m = NULL;
  for (char *k = names; k < names + n; k += strlen(k) + 1) {
    if (strncmp(k, META_PREFIX, strlen(META_PREFIX)) != 0) continue;
    char val[4097];
    ssize_t vl = lgetxattr(real, k, val, sizeof val - 1);
    if (vl < 0) continue;
    val[vl] = '\0';
    if (!m) m = json_object();
    json_object_set_new(m, k + strlen(META_PREFIX), pj_text(val));
  }
  return m;
}

/* Each upload replaces all of a file's metadata. */
static int write_metadata(int fd, json_t *meta) {
  char names[8192];
  ssize_t n = flistxattr(fd, names, sizeof names);
  for (char *k = names; n > 0 && k < names + n; k += strlen(k) + 1)
    if (strncmp(k, META_PREFIX, strlen(META_PREFIX)) == 0) fremovexattr(fd, k);
  const char *key;
  json_t *v;
  json_object_foreach(meta, key, v) {
    char *name = xasprintf(META_PREFIX "%s", key);
    const char *val = json_string_value(v);
    int rc = fsetxattr(fd, name, val ? val : "", val ? strlen(val) : 0, 0);
    free(name);
    if (rc != 0) return errno;
  }
  return 0;
}

/* A Timestamp as protobuf's JSON writes it, which envd's times are: the
 * fraction in 0, 3, 6 or 9 digits, as the nanoseconds need. */
static void time_text(struct timespec t, char out[48]) {
  struct tm tm;
  time_t secs = t.tv_sec;
  if (!gmtime_r(&secs, &tm)) tm = (struct tm){.tm_year = 70, .tm_mday = 1};
  int n = snprintf(out, 48, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                   tm.tm_hour, tm.tm_min, tm.tm_sec);
  long ns = t.tv_nsec;
  if (ns % 1000000 == 0 && ns)
    n += snprintf(out + n, 48 - (size_t)n, ".%03ld", ns / 1000000);
  else if (ns % 1000 == 0 && ns)
    n += snprintf(out + n, 48 - (size_t)n, ".%06ld", ns / 1000);
  else if (ns)
    n += snprintf(out + n, 48 - (size_t)n, ".%09ld", ns);
  snprintf(out + n, 48 - (size_t)n, "Z");
}

/* A symlink's part of its EntryInfo, as envd makes it: the target's type and
 * permission bits, and the fully resolved target; a link that resolves to
 * nothing has neither, and its own path as its target. */
static void symlink_fields(json_t *e, const char *virt, const char *real) {
  struct stat target;
  char *resolved = realpath(real, NULL);
  if (!resolved || stat(resolved, &target) != 0) {
    json_object_set_new(e, "symlinkTarget", pj_text(virt));
    free(resolved);
    return;
  }
  char *v = afs_to_virt(resolved);
  json_object_set_new(e, "symlinkTarget", pj_text(v));
  free(v);
  free(resolved);
  const char *type = file_type(target.st_mode);
  if (type) json_object_set_new(e, "type", json_string(type));
  if (target.st_mode & 0777) json_object_set_new(e, "mode", json_integer(target.st_mode & 0777));
}

/* EntryInfo (proto3 JSON: zero values left out) of the sandbox path `virt`,
 * from lstat, as envd builds it: `mode` holds the permission bits only. */
static json_t *entry_info(const char *virt, int *err) {
  char *real = afs_to_real(virt);
  struct stat st;
  if (lstat(real, &st) != 0) {
    *err = errno;
    free(real);
    return NULL;
  }
  char perm[24], ob[16], gb[16], tbuf[48], size[32];
  perm_string(st.st_mode, perm);
  time_text(st.st_mtim, tbuf);
  snprintf(size, sizeof size, "%lld", (long long)st.st_size);
  json_t *e = json_pack("{s:o, s:o, s:s, s:s, s:s, s:s, s:s}", "name", pj_text(base_name(virt)), "path",
                        pj_text(virt), "size", size, "permissions", perm, "owner", id_name(st.st_uid, ob),
                        "group", id_name(st.st_gid, gb), "modifiedTime", tbuf);
  if (st.st_size == 0) json_object_del(e, "size");
  if (S_ISLNK(st.st_mode)) {
    symlink_fields(e, virt, real);
  } else {
    const char *type = file_type(st.st_mode);
    if (type) json_object_set_new(e, "type", json_string(type));
    if (st.st_mode & 0777) json_object_set_new(e, "mode", json_integer(st.st_mode & 0777));
  }
  json_t *meta = read_metadata(real);
  if (meta) json_object_set_new(e, "metadata", meta);
  free(real);
  return e;
}

int afs_stat(json_t *req, json_t **out) {
  int err = 0;
  json_t *e = entry_info(req_str(req, "path"), &err);
  if (!e) return err;
  *out = json_pack("{s:o}", "entry", e);
  return 0;
}

static char *join(const char *dir, const char *name) {
  return strcmp(dir, "/") == 0 ? xasprintf("/%s", name) : xasprintf("%s/%s", dir, name);
}

/* One listing's bounds: the answer is built in memory here and in the
 * server, so it is refused (clearly) rather than grown without limit. */
typedef struct listing {
  json_t *arr;
  const char *why; /* set with E2BIG */
} listing;

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir (without . and ..), sorted bytewise as envd lists them;
 * NULL with *err (E2BIG past what a listing may hold). */
static char **sorted_names(DIR *d, size_t room, size_t *n, int *err) {
  char **names = NULL;
  size_t cap = 0;
  struct dirent *de;
  *n = 0;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    if (*n >= room) {
      *err = E2BIG;
      break;
    }
    if (*n == cap) names = xrealloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
    names[(*n)++] = xstrdup(de->d_name);
  }
  if (*n) qsort(names, *n, sizeof *names, by_name);
  return names;
}

/* Lists dir `virt` (whose entries are at `level`), `depth` levels down, in
 * name order, each directory's contents right after it (as envd walks). */
static int list_into(listing *l, const char *virt, int depth, int level) {
  char *real = afs_to_real(virt);
  DIR *d = opendir(real);
  free(real);
  if (!d) return level == 1 ? errno : 0; /* unreadable subdirectories are listed, not entered */
  int err = 0;
  size_t n = 0;
  char **names = sorted_names(d, LIST_MAX_ENTRIES - json_array_size(l->arr), &n, &err);
  closedir(d);
  if (err) l->why = "the listing has more than " LIST_MAX_ENTRIES_S " entries: list a smaller depth or a subdirectory";
  for (size_t i = 0; i < n && !err; i++) {
    char *child = join(virt, names[i]);
    int ignored = 0;
    json_t *e = entry_info(child, &ignored);
    if (e) {
      int is_dir = strcmp(json_string_value(json_object_get(e, "type")), "FILE_TYPE_DIRECTORY") == 0;
      json_array_append_new(l->arr, e);
      if (is_dir && depth > 1 && level >= LIST_MAX_DEPTH) {
        l->why = "the tree is deeper than " LIST_MAX_DEPTH_S " levels: list a smaller depth or a subdirectory";
        err = E2BIG;
      } else if (is_dir && depth > 1) {
        err = list_into(l, child, depth - 1, level + 1);
      }
    }
    free(child);
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return err;
}

int afs_dir_errno(const char *virt) {
  char *real = afs_to_real(virt);
  struct stat st;
  int rc = stat(real, &st);
  int err = rc != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  free(real);
  return err;
}

/* The first component of virt that does not exist (envd's EvalSymlinks
 * names it in its error). Malloc'd. */
static char *first_missing(const char *virt) {
  char *p = xstrdup(virt);
  for (char *s = strchr(p + 1, '/');; s = strchr(s + 1, '/')) {
    if (s) *s = '\0';
    char *real = afs_to_real(p);
    struct stat st;
    int gone = lstat(real, &st) != 0 && errno == ENOENT;
    free(real);
    if (gone || !s) return p;
    *s = '/';
  }
}

int afs_listdir(json_t *req, json_t **out) {
  const char *virt = req_str(req, "path");
  int derr = afs_dir_errno(virt);
  if (derr == ENOENT) {
    char *missing = first_missing(virt);
    *out = json_pack("{s:s}", "missing", missing);
    free(missing);
  }
  if (derr) return derr;
  listing l = {json_array(), NULL};
  int err = list_into(&l, virt, req_int(req, "depth", 1), 1);
  if (err) {
    json_decref(l.arr);
    if (l.why) *out = json_pack("{s:s}", "message", l.why);
    return err;
  }
  *out = json_pack("{s:o}", "entries", l.arr);
  return 0;
}

/* Creates every missing directory of `real` (not the last component when
 * parent_only), owned by uid:gid like envd's ensureDirs. */
static int ensure_dirs(const char *real, int parent_only, int uid, int gid) {
  char *p = xstrdup(real);
  if (parent_only) {
    char *s = strrchr(p, '/');
    if (s) *s = '\0';
  }
  int rc = 0;
  size_t n = strlen(p);
  for (size_t i = 1; i <= n && rc == 0; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    char c = p[i];
    p[i] = '\0';
    if (mkdir(p, 0755) == 0) {
      if (lchown(p, (uid_t)uid, (gid_t)gid) != 0) rc = errno;
    } else if (errno != EEXIST) {
      rc = errno;
    } else {
      struct stat st;
      if (stat(p, &st) != 0) rc = errno;
      else if (!S_ISDIR(st.st_mode)) rc = ENOTDIR;
    }
    p[i] = c;
  }
  free(p);
  return rc;
}

int afs_mkdir(json_t *req, json_t **out) {
  const char *virt = req_str(req, "path");
  char *real = afs_to_real(virt);
  struct stat st;
  int err = 0;
  if (stat(real, &st) == 0) {
    err = S_ISDIR(st.st_mode) ? EEXIST : ENOTDIR;
  } else if (errno != ENOENT) {
    err = errno; /* envd's first look at the path failed, not the mkdir */
    *out = json_pack("{s:b}", "stat_failed", 1);
  }
  if (!err) err = ensure_dirs(real, 0, req_int(req, "uid", 1000), req_int(req, "gid", 1000));
  free(real);
  if (err) return err;
  json_t *e = entry_info(virt, &err);
  if (!e) return err;
  *out = json_pack("{s:o}", "entry", e);
  return 0;
}

int afs_move(json_t *req, json_t **out) {
  const char *dst = req_str(req, "destination");
  char *rs = afs_to_real(req_str(req, "source"));
  char *rd = afs_to_real(dst);
  struct stat st;
  int err = lstat(rs, &st) == 0 ? 0 : errno;
  if (!err) err = ensure_dirs(rd, 1, req_int(req, "uid", 1000), req_int(req, "gid", 1000));
  if (!err && rename(rs, rd) != 0) err = errno;
  free(rs);
  free(rd);
  if (err) return err;
  json_t *e = entry_info(dst, &err);
  if (!e) return err;
  *out = json_pack("{s:o}", "entry", e);
  return 0;
}

/* Go's os.RemoveAll (what envd uses) as the user: removes what it may and
 * reports the first refusal. Never follows a symlink nor leaves the mount. */
static int g_rm_err;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  int err = 0;
  if (flag == FTW_NS) err = EACCES; /* could not even look at it */
  else if ((flag == FTW_DP || flag == FTW_DNR) ? rmdir(path) != 0 : unlink(path) != 0) err = errno;
  if (flag == FTW_DNR && err) err = EACCES; /* its entries could not be listed */
  /* a refusal explains a directory left non-empty better than ENOTEMPTY */
  if (err && (!g_rm_err || g_rm_err == ENOTEMPTY || g_rm_err == EBUSY)) g_rm_err = err;
  return 0; /* keep going */
}

int afs_remove(json_t *req, json_t **out) {
  char *real = afs_to_real(req_str(req, "path"));
  struct stat st;
  int err = 0;
  /* a missing path is not an error */
  if (lstat(real, &st) == 0) {
    g_rm_err = 0;
    if (nftw(real, rm_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0) g_rm_err = errno;
    err = g_rm_err;
    if (!err && lstat(real, &st) == 0) err = EBUSY; /* e.g. a mount point below */
  } else if (errno != ENOENT) {
    err = errno;
  }
  free(real);
  if (!err) *out = json_object();
  return err;
}

/* Kernel pseudo-files (procfs, sysfs…) act on the context of whoever
 * reads or writes them, not of whoever opened them: a descriptor passed to
 * the server would read or set the host's values (/proc/sys/kernel/domainname
 * is the host's in the server's UTS namespace). Only data files pass. */
static int pseudo_fs(int fd) {
  static const unsigned long magic[] = {PROC_SUPER_MAGIC, SYSFS_MAGIC, CGROUP_SUPER_MAGIC,
                                        CGROUP2_SUPER_MAGIC, DEBUGFS_MAGIC, TRACEFS_MAGIC,
                                        SECURITYFS_MAGIC, SELINUX_MAGIC, SMACK_MAGIC, BPF_FS_MAGIC,
                                        EFIVARFS_MAGIC, PSTOREFS_MAGIC, BINFMTFS_MAGIC,
                                        0x62656570 /* configfs */, 0x65735543 /* fusectl */};
  struct statfs sf;
  if (fstatfs(fd, &sf) != 0) return 1;
  for (size_t i = 0; i < sizeof magic / sizeof magic[0]; i++)
    if ((unsigned long)sf.f_type == magic[i]) return 1;
  return 0;
}

/* Opens as the current (user's) identity, so an O_TRUNC clears set-id bits
 * as the user's own open would. O_NONBLOCK keeps a FIFO from blocking the
 * agent (the kernel truncates regular files only); only regular data files
 * pass. */
static int open_regular(const char *real, int flags, mode_t mode, int *fd_out, struct stat *st) {
  int fd = open(real, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
  if (fd < 0) return errno;
  int err = 0;
  if (fstat(fd, st) != 0) err = errno;
  else if (S_ISDIR(st->st_mode)) err = EISDIR;
  else if (!S_ISREG(st->st_mode) || pseudo_fs(fd)) err = EINVAL;
  if (err) {
    close(fd);
    return err;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  *fd_out = fd;
  return 0;
}

int afs_open_read(json_t *req, json_t **out, int *fd) {
  char *real = afs_to_real(req_str(req, "path"));
  struct stat st;
  int err = 0;
  if (stat(real, &st) == 0 && S_ISDIR(st.st_mode))
    err = EISDIR;
  else
    err = open_regular(real, O_RDONLY, 0, fd, &st);
  free(real);
  if (err) return err;
  *out = json_pack("{s:I}", "size", (json_int_t)st.st_size);
  return 0;
}

int afs_open_write(json_t *req, json_t **out, int *fd) {
  const char *virt = req_str(req, "path");
  int uid = req_int(req, "uid", 1000), gid = req_int(req, "gid", 1000);
  char *real = afs_to_real(virt);
  struct stat st;
  int err = 0;
  if (stat(real, &st) == 0 && S_ISDIR(st.st_mode)) err = EISDIR;
  if (!err) err = ensure_dirs(real, 1, uid, gid);
  if (!err) err = open_regular(real, O_WRONLY | O_CREAT | O_TRUNC, 0666, fd, &st);
  free(real);
  if (err) return err;
  if (fchown(*fd, (uid_t)uid, (gid_t)gid) != 0) {
    /* ownership is best effort (e.g. without privileges); the data still lands */
  }
  json_t *meta = json_object_get(req, "metadata");
  json_t *none = json_object();
  err = write_metadata(*fd, json_is_object(meta) ? meta : none);
  json_decref(none);
  if (err) {
    close(*fd);
    *fd = -1;
    return err == ENOTSUP ? EOPNOTSUPP : err;
  }
  *out = json_pack("{s:o}", "path", pj_text(virt));
  return 0;
}
