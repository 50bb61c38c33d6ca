/* agent_fs.c — file operations executed inside the sandbox's mount namespace. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "agent.h"
#include "codec.h"
#include "pjson.h"
#include "util.h"

#define MAX_MAPS 4
#define LIST_MAX_ENTRIES 100000

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

/* Go's os.FileMode.String() form, which envd reports as `permissions`. */
static void perm_string(mode_t m, char out[12]) {
  char t = '-';
  if (S_ISDIR(m)) t = 'd';
  else if (S_ISLNK(m)) t = 'L';
  else if (S_ISFIFO(m)) t = 'p';
  else if (S_ISSOCK(m)) t = 'S';
  else if (S_ISCHR(m)) t = 'c';
  else if (S_ISBLK(m)) t = 'D';
  const char *rwx = "rwxrwxrwx";
  out[0] = t;
  for (int i = 0; i < 9; i++) out[i + 1] = (m & (1u << (8 - i))) ? rwx[i] : '-';
  out[10] = '\0';
}

static const char *file_type(mode_t m) {
  if (S_ISDIR(m)) return "FILE_TYPE_DIRECTORY";
  if (S_ISLNK(m)) return "FILE_TYPE_SYMLINK";
  if (S_ISREG(m)) return "FILE_TYPE_FILE";
  return "FILE_TYPE_UNSPECIFIED";
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

/* EntryInfo (proto3 JSON) of the sandbox path `virt`, from lstat. */
static json_t *entry_info(const char *virt, int *err) {
  char *real = afs_to_real(virt);
  struct stat st;
  if (lstat(real, &st) != 0) {
    *err = errno;
    free(real);
    return NULL;
  }
  char perm[12], ob[16], gb[16], tbuf[E2B_TIME_SIZE], size[32];
  perm_string(st.st_mode, perm);
  int64_t mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
  e2b_time_format(mtime_ms, tbuf);
  snprintf(size, sizeof size, "%lld", (long long)st.st_size);
  json_t *e = json_pack("{s:o, s:s, s:o, s:s, s:I, s:s, s:s, s:s, s:s}", "name", pj_text(base_name(virt)),
                        "type", file_type(st.st_mode), "path", pj_text(virt), "size", size, "mode",
                        (json_int_t)(st.st_mode & 07777), "permissions", perm, "owner",
                        id_name(st.st_uid, ob), "group", id_name(st.st_gid, gb), "modifiedTime",
                        tbuf);
  if (st.st_size == 0) json_object_del(e, "size"); /* proto3 JSON omits zero values */
  json_t *meta = read_metadata(real);
  if (meta) json_object_set_new(e, "metadata", meta);
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    char *resolved = realpath(real, NULL);
    if (resolved) {
      char *v = afs_to_virt(resolved);
      json_object_set_new(e, "symlinkTarget", pj_text(v));
      free(v);
      free(resolved);
    } else {
      ssize_t n = readlink(real, target, sizeof target - 1);
      if (n >= 0) {
        target[n] = '\0';
        json_object_set_new(e, "symlinkTarget", pj_text(target));
      }
    }
  }
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

static int list_into(json_t *arr, const char *virt, int depth) {
  char *real = afs_to_real(virt);
  DIR *d = opendir(real);
  free(real);
  if (!d) return errno;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    if (json_array_size(arr) >= LIST_MAX_ENTRIES) break;
    char *child = join(virt, de->d_name);
    int err = 0;
    json_t *e = entry_info(child, &err);
    if (e) {
      int is_dir = strcmp(json_string_value(json_object_get(e, "type")), "FILE_TYPE_DIRECTORY") == 0;
      json_array_append_new(arr, e);
      /* Unreadable subdirectories are listed but not descended into. */
      if (is_dir && depth > 1) list_into(arr, child, depth - 1);
    }
    free(child);
  }
  closedir(d);
  return 0;
}

int afs_listdir(json_t *req, json_t **out) {
  const char *virt = req_str(req, "path");
  char *real = afs_to_real(virt);
  struct stat st;
  int rc = stat(real, &st);
  free(real);
  if (rc != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return ENOTDIR;
  json_t *arr = json_array();
  int err = list_into(arr, virt, req_int(req, "depth", 1));
  if (err) {
    json_decref(arr);
    return err;
  }
  *out = json_pack("{s:o}", "entries", arr);
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
  if (stat(real, &st) == 0) err = S_ISDIR(st.st_mode) ? EEXIST : ENOTDIR;
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

int afs_remove(json_t *req, json_t **out) {
  char *real = afs_to_real(req_str(req, "path"));
  struct stat st;
  int err = 0;
  /* Like Go's os.RemoveAll (what envd uses): a missing path is not an error. */
  if (lstat(real, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      rm_rf(real);
      if (lstat(real, &st) == 0) err = EBUSY;
    } else if (unlink(real) != 0) {
      err = errno;
    }
  }
  free(real);
  if (!err) *out = json_object();
  return err;
}

/* O_NONBLOCK keeps a FIFO from blocking the agent; only regular files pass. */
static int open_regular(const char *real, int flags, mode_t mode, int *fd_out, struct stat *st) {
  int fd = open(real, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
  if (fd < 0) return errno;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    int e = S_ISDIR(st->st_mode) ? EISDIR : EINVAL;
    close(fd);
    return e;
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
