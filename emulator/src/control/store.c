/* store.c — operator templates, snapshots and volumes on disk. */
#define _GNU_SOURCE
#include "store.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "log.h"
#include "tree.h"
#include "util.h"

typedef struct tpl {
  char *name, *src, *files;
  int is_script, built;
  json_t *ro_mounts;
} tpl;

typedef struct snap {
  char *key, *id, *sandbox_id, *dir;
  json_t *names, *ro_mounts;
  json_t *env_vars; /* the sandbox's env vars: E2B's snapshot keeps envd's memory */
  int64_t created_ms;
} snap;

typedef struct vol {
  char *id, *name, *token, *dir;
} vol;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
/* files of templates/snapshots: readers copy from them, replace/delete writes */
static pthread_rwlock_t g_files = PTHREAD_RWLOCK_INITIALIZER;
static char *g_state;
static tpl *g_tpls;
static size_t g_ntpl;
static snap *g_snaps;
static size_t g_nsnap;
static vol *g_vols;
static size_t g_nvol;

const char *store_state_dir(void) { return g_state; }

#define META_MAX (1 << 20)

json_t *store_load_meta(const char *path) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  json_t *j = NULL;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= META_MAX)
    j = json_loadfd(fd, JSON_REJECT_DUPLICATES, NULL);
  if (fd >= 0) close(fd);
  if (j && !json_is_object(j)) {
    json_decref(j);
    j = NULL;
  }
  return j;
}

int store_mounts_valid(json_t *v) {
  if (!json_is_array(v)) return 0;
  for (size_t i = 0; i < json_array_size(v); i++) {
    json_t *m = json_array_get(v, i);
    const char *src = json_string_value(json_object_get(m, "src"));
    const char *dst = json_string_value(json_object_get(m, "dst"));
    if (!src || !dst || src[0] != '/' || dst[0] != '/' || !json_is_boolean(json_object_get(m, "ro"))) return 0;
  }
  return 1;
}

int store_is_dir(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int save_json(const char *path, json_t *j) {
  char *text = json_dumps(j, JSON_INDENT(2));
  int rc = text ? write_file_atomic(path, text, strlen(text), 0600) : -1;
  free(text);
  return rc;
}

static int valid_name(const char *s, int allow_dot) {
  if (!s || !*s || strlen(s) > 128) return 0;
  for (const char *p = s; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && !(allow_dot && *p == '.')) return 0;
  return 1;
}

/* ---- snapshots on disk ---- */

static json_t *snap_info(const snap *s) { return json_pack("{s:s, s:O}", "snapshotID", s->id, "names", s->names); }

static void snap_free(snap *s) {
  free(s->key);
  free(s->id);
  free(s->sandbox_id);
  free(s->dir);
  json_decref(s->names);
  json_decref(s->ro_mounts);
  json_decref(s->env_vars);
}

static void vol_free(vol *v) {
  free(v->id);
  free(v->name);
  free(v->token);
  free(v->dir);
}

/* The volume whose id (by_name: name) is key; the caller holds g_mu. */
static vol *vol_find_locked(const char *key, int by_name) {
  for (size_t i = 0; i < g_nvol; i++)
    if (strcmp(by_name ? g_vols[i].name : g_vols[i].id, key) == 0) return &g_vols[i];
  return NULL;
}

/* Calls keep(name, dir, meta) for each <state>/<kind>/<name>/meta.json;
 * an entry it does not keep (an interrupted create) is removed. */
static void load_entries(const char *kind, int (*keep)(const char *name, const char *dir, json_t *meta)) {
  char *root = xasprintf("%s/%s", g_state, kind);
  mkdir_p(root, 0700);
  DIR *d = opendir(root);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char *dir = xasprintf("%s/%s", root, de->d_name);
    char *mp = xasprintf("%s/meta.json", dir);
    json_t *m = store_is_dir(dir) ? store_load_meta(mp) : NULL;
    if (!m || !keep(de->d_name, dir, m)) rm_rf(dir);
    json_decref(m);
    free(mp);
    free(dir);
  }
  if (d) closedir(d);
  free(root);
}

/* A snapshot's meta.json as store_snapshot_create writes it. */
static int snapshot_meta_valid(const char *name, json_t *m) {
  json_t *names = json_object_get(m, "names");
  if (!valid_name(name, 1) || !json_is_string(json_object_get(m, "snapshotID")) ||
      !json_is_string(json_object_get(m, "sandboxID")) || !json_is_array(names) ||
      !json_is_integer(json_object_get(m, "createdMs")) || !store_mounts_valid(json_object_get(m, "roMounts")))
    return 0;
  for (size_t i = 0; i < json_array_size(names); i++)
    if (!json_is_string(json_array_get(names, i))) return 0;
  return 1;
}

static int keep_snapshot(const char *name, const char *dir, json_t *m) {
  const char *id = json_string_value(json_object_get(m, "snapshotID"));
  if (!snapshot_meta_valid(name, m)) {
    log_msg("snapshot %s: unusable meta.json, removing it", name);
    return 0;
  }
  g_snaps = xrealloc(g_snaps, (g_nsnap + 1) * sizeof *g_snaps);
  snap *s = &g_snaps[g_nsnap++];
  s->key = xstrdup(name);
  s->id = xstrdup(id);
  s->sandbox_id = xstrdup(json_string_value(json_object_get(m, "sandboxID")));
  s->dir = xstrdup(dir);
  s->names = json_incref(json_object_get(m, "names"));
  if (!s->names) s->names = json_array();
  s->ro_mounts = json_incref(json_object_get(m, "roMounts"));
  if (!s->ro_mounts) s->ro_mounts = json_array();
  s->env_vars = json_incref(json_object_get(m, "envVars"));
  if (!json_is_object(s->env_vars)) json_decref(s->env_vars), s->env_vars = json_object();
  s->created_ms = json_integer_value(json_object_get(m, "createdMs"));
  return 1;
}

static int keep_volume(const char *name, const char *dir, json_t *m) {
  const char *vname = json_string_value(json_object_get(m, "name"));
  const char *token = json_string_value(json_object_get(m, "token"));
  if (!vname || !token || !valid_name(vname, 0) || !valid_name(name, 0)) return 0;
  g_vols = xrealloc(g_vols, (g_nvol + 1) * sizeof *g_vols);
  vol *v = &g_vols[g_nvol++];
  v->id = xstrdup(name);
  v->name = xstrdup(vname);
  v->token = xstrdup(token);
  v->dir = xasprintf("%s/data", dir);
  return 1;
}

int store_init(const char *state_dir) {
  g_state = xstrdup(state_dir);
  char *t = xasprintf("%s/templates", state_dir);
  rm_rf(t); /* rebuilt from the operator's sources at every start */
  int rc = mkdir_p(t, 0700);
  free(t);
  load_entries("snapshots", keep_snapshot);
  load_entries("volumes", keep_volume);
  return rc;
}

void store_shutdown(void) {
  for (size_t i = 0; i < g_ntpl; i++) {
    free(g_tpls[i].name);
    free(g_tpls[i].src);
    free(g_tpls[i].files);
    json_decref(g_tpls[i].ro_mounts);
  }
  for (size_t i = 0; i < g_nsnap; i++) snap_free(&g_snaps[i]);
  for (size_t i = 0; i < g_nvol; i++) vol_free(&g_vols[i]);
  free(g_tpls);
  free(g_snaps);
  free(g_vols);
  g_tpls = NULL;
  g_snaps = NULL;
  g_vols = NULL;
  g_ntpl = g_nsnap = g_nvol = 0;
  free(g_state);
  g_state = NULL;
}

/* ---- templates ---- */

static const char *SEEDED[] = {"home", "root", "tmp", NULL};

/* A directory template: home/user, root and tmp become the seed (home owned
 * by user), other top-level directories are mounted read-only. */
static int build_dir_template(tpl *t, char *err, size_t errcap) {
  t->ro_mounts = json_array();
  DIR *d = opendir(t->src);
  if (!d) {
    snprintf(err, errcap, "cannot read template directory %s: %s", t->src, strerror(errno));
    return -1;
  }
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) && rc == 0) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    char *p = xasprintf("%s/%s", t->src, de->d_name);
    struct stat st;
    int seeded = 0;
    for (int i = 0; SEEDED[i]; i++) seeded |= strcmp(de->d_name, SEEDED[i]) == 0;
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode) && !seeded) {
      char *real = realpath(p, NULL);
      char *dst = xasprintf("/%s", de->d_name);
      json_array_append_new(t->ro_mounts, json_pack("{s:s, s:s, s:b}", "src", real ? real : p, "dst", dst, "ro", 1));
      free(dst);
      free(real);
    }
    free(p);
  }
  closedir(d);
  const char *from[] = {"home/user", "root", "tmp"};
  const char *to[] = {"home", "root", "tmp"};
  for (int i = 0; i < 3 && rc == 0; i++) {
    char *s = xasprintf("%s/%s", t->src, from[i]);
    char *dst = xasprintf("%s/%s", t->files, to[i]);
    struct stat st;
    if (stat(s, &st) == 0 && S_ISDIR(st.st_mode)) {
      if (copy_tree(s, dst) != 0) {
        snprintf(err, errcap, "cannot copy %s", s);
        rc = -1;
      } else if (i == 0) {
        char *argv[] = {"/bin/chown", "-R", "1000:1000", "--", dst, NULL};
        run_wait(argv);
      }
    }
    free(s);
    free(dst);
  }
  return rc;
}

int store_register_template(const char *spec, char *err, size_t errcap) {
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec || !eq[1]) {
    snprintf(err, errcap, "--template expects NAME=PATH (a directory or a setup script)");
    return -1;
  }
  char *name = strndup(spec, (size_t)(eq - spec));
  if (!valid_name(name, 1) || strcmp(name, "base") == 0) {
    snprintf(err, errcap, "invalid template name '%s' (letters, digits, '.', '_', '-'; not 'base')", name);
    free(name);
    return -1;
  }
  for (size_t i = 0; i < g_ntpl; i++)
    if (strcmp(g_tpls[i].name, name) == 0) {
      snprintf(err, errcap, "template '%s' is registered twice", name);
      free(name);
      return -1;
    }
  struct stat st;
  if (stat(eq + 1, &st) != 0 || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))) {
    snprintf(err, errcap, "template '%s': %s is neither a directory nor a script", name, eq + 1);
    free(name);
    return -1;
  }
  tpl t = {.name = name, .src = realpath(eq + 1, NULL), .is_script = S_ISREG(st.st_mode)};
  if (!t.src) t.src = xstrdup(eq + 1);
  t.files = xasprintf("%s/templates/%s/files", g_state, name);
  mkdir_p(t.files, 0755);
  if (t.is_script) {
    t.ro_mounts = json_array();
  } else if (build_dir_template(&t, err, errcap) != 0) {
    free(t.name);
    free(t.src);
    free(t.files);
    json_decref(t.ro_mounts);
    return -1;
  } else {
    t.built = 1;
  }
  g_tpls = xrealloc(g_tpls, (g_ntpl + 1) * sizeof *g_tpls);
  g_tpls[g_ntpl++] = t;
  return 0;
}

json_t *store_pending_builds(void) {
  json_t *a = json_array();
  for (size_t i = 0; i < g_ntpl; i++)
    if (g_tpls[i].is_script && !g_tpls[i].built)
      json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "name", g_tpls[i].name, "script", g_tpls[i].src, "files", g_tpls[i].files));
  return a;
}

void store_template_built(const char *name, const char *files_dir, int ok) {
  (void)files_dir;
  for (size_t i = 0; i < g_ntpl; i++)
    if (strcmp(g_tpls[i].name, name) == 0) g_tpls[i].built = ok;
}

/* "local/name:default" -> "name"; NULL for another tag. */
static char *normalize_ref(const char *ref) {
  const char *s = ref;
  if (strncmp(s, TEAM_NAMESPACE "/", strlen(TEAM_NAMESPACE) + 1) == 0) s += strlen(TEAM_NAMESPACE) + 1;
  char *k = xstrdup(s);
  char *colon = strchr(k, ':');
  if (colon) {
    if (strcmp(colon + 1, "default") != 0) {
      free(k);
      return NULL;
    }
    *colon = '\0';
  }
  return k;
}

static snap *find_snap_locked(const char *ref) {
  char *k = normalize_ref(ref);
  snap *found = NULL;
  for (size_t i = 0; k && i < g_nsnap && !found; i++)
    if (strcmp(g_snaps[i].key, k) == 0 || strcmp(g_snaps[i].id, ref) == 0) found = &g_snaps[i];
  free(k);
  return found;
}

void store_files_lock(int take) {
  if (take)
    pthread_rwlock_wrlock(&g_files);
  else
    pthread_rwlock_unlock(&g_files);
}

int store_resolve_template(const char *ref, tpl_ref *out) {
  memset(out, 0, sizeof *out);
  if (strcmp(ref, "base") == 0) {
    out->template_id = xstrdup("base");
    out->alias = xstrdup("base");
    out->ro_mounts = json_array();
    return 0;
  }
  pthread_mutex_lock(&g_mu);
  int rc = -ENOENT;
  for (size_t i = 0; i < g_ntpl; i++) {
    if (strcmp(g_tpls[i].name, ref) != 0 || !g_tpls[i].built) continue;
    out->template_id = xstrdup(ref);
    out->alias = xstrdup(ref);
    out->files = xstrdup(g_tpls[i].files);
    out->ro_mounts = json_deep_copy(g_tpls[i].ro_mounts);
    rc = 0;
  }
  snap *s = rc ? find_snap_locked(ref) : NULL;
  if (s) {
    out->template_id = xstrdup(s->id);
    out->alias = json_array_size(s->names) ? xstrdup(json_string_value(json_array_get(s->names, 0))) : NULL;
    out->files = xasprintf("%s/files", s->dir);
    out->ro_mounts = json_deep_copy(s->ro_mounts);
    out->env_vars = json_deep_copy(s->env_vars);
    rc = 0;
  }
  pthread_mutex_unlock(&g_mu);
  return rc;
}

int store_seed(const tpl_ref *t, const char *dst) {
  if (!t->files) return 0;
  pthread_rwlock_rdlock(&g_files);
  int rc = copy_tree(t->files, dst);
  pthread_rwlock_unlock(&g_files);
  return rc;
}

void tpl_ref_free(tpl_ref *t) {
  free(t->template_id);
  free(t->alias);
  free(t->files);
  json_decref(t->ro_mounts);
  json_decref(t->env_vars);
  free(t->start_cmd);
  free(t->ready_cmd);
  free(t->start_user);
  free(t->start_cwd);
  memset(t, 0, sizeof *t);
}

/* ---- snapshots ---- */

json_t *store_snapshot_create(const char *sandbox_id, const char *name, const char *sandbox_dir,
                              json_t *ro_mounts, json_t *env_vars, const char **err) {
  char *key = NULL;
  if (name && *name) {
    key = normalize_ref(name);
    if (!key || !valid_name(key, 1)) {
      free(key);
      *err = "invalid snapshot name (letters, digits, '.', '_', '-', optionally local/ and :default)";
      return NULL;
    }
  } else {
    key = xmalloc(21);
    if (e2b_random_alnum(key, 20) != 0) {
      free(key);
      *err = "random generator unavailable";
      return NULL;
    }
  }
  char *dir = xasprintf("%s/snapshots/%s", g_state, key);
  char *tmp = xasprintf("%s/snapshots/.new-%s-%lld", g_state, key, (long long)now_ms());
  int rc = 0;
  for (int i = 0; SEEDED[i] && rc == 0; i++) {
    char *s = xasprintf("%s/%s", sandbox_dir, SEEDED[i]);
    char *d = xasprintf("%s/files/%s", tmp, SEEDED[i]);
    rc = copy_tree(s, d);
    free(s);
    free(d);
  }
  if (rc != 0) {
    rm_rf(tmp);
    free(tmp);
    free(dir);
    free(key);
    *err = "cannot copy the sandbox's files";
    return NULL;
  }
  snap s = {.key = key, .sandbox_id = xstrdup(sandbox_id), .dir = dir, .created_ms = now_ms()};
  if (name && *name) {
    s.id = xasprintf(TEAM_NAMESPACE "/%s:default", key);
    s.names = json_pack("[s]", s.id);
  } else {
    s.id = xasprintf("%s:default", key);
    s.names = json_array();
  }
  s.ro_mounts = json_deep_copy(ro_mounts ? ro_mounts : json_array());
  s.env_vars = json_deep_copy(json_is_object(env_vars) ? env_vars : json_object());
  json_t *meta = json_pack("{s:s, s:O, s:s, s:I, s:O, s:O}", "snapshotID", s.id, "names", s.names, "sandboxID",
                           sandbox_id, "createdMs", (json_int_t)s.created_ms, "roMounts", s.ro_mounts,
                           "envVars", s.env_vars);
  char *mp = xasprintf("%s/meta.json", tmp);
  save_json(mp, meta);
  free(mp);
  json_decref(meta);
  /* swap in: sandboxes being seeded from an older build finish first */
  pthread_rwlock_wrlock(&g_files);
  pthread_mutex_lock(&g_mu);
  snap *old = find_snap_locked(key);
  if (old) {
    rm_rf(old->dir);
    snap_free(old);
    *old = g_snaps[--g_nsnap];
  }
  rename(tmp, dir);
  g_snaps = xrealloc(g_snaps, (g_nsnap + 1) * sizeof *g_snaps);
  g_snaps[g_nsnap++] = s;
  json_t *info = snap_info(&s);
  pthread_mutex_unlock(&g_mu);
  pthread_rwlock_unlock(&g_files);
  free(tmp);
  return info;
}

static int snap_cmp(const void *a, const void *b) {
  const snap *x = *(snap *const *)a, *y = *(snap *const *)b;
  if (x->created_ms != y->created_ms) return x->created_ms > y->created_ms ? -1 : 1;
  return strcmp(y->key, x->key);
}

json_t *store_snapshot_list(const char *sandbox_id, const char *name, long limit, const char *token,
                            char **next, const char **err) {
  long long cur_ms = 0;
  char cur_key[160] = "";
  *next = NULL;
  if (token && *token && sscanf(token, "%lld_%159s", &cur_ms, cur_key) != 2) {
    *err = "invalid nextToken";
    return NULL;
  }
  char *want = name && *name ? normalize_ref(name) : NULL;
  json_t *arr = json_array();
  pthread_mutex_lock(&g_mu);
  snap **v = xcalloc(g_nsnap + 1, sizeof *v);
  size_t n = 0;
  for (size_t i = 0; i < g_nsnap; i++) {
    snap *s = &g_snaps[i];
    if (sandbox_id && *sandbox_id && strcmp(s->sandbox_id, sandbox_id) != 0) continue;
    if (name && *name && (!want || (strcmp(s->key, want) != 0 && strcmp(s->id, name) != 0))) continue;
    v[n++] = s;
  }
  qsort(v, n, sizeof *v, snap_cmp);
  long shown = 0;
  snap *last = NULL;
  for (size_t i = 0; i < n; i++) {
    snap *s = v[i];
    if (*cur_key && (s->created_ms > cur_ms || (s->created_ms == cur_ms && strcmp(s->key, cur_key) >= 0)))
      continue;
    if (shown == limit) {
      *next = xasprintf("%lld_%s", (long long)last->created_ms, last->key);
      break;
    }
    json_array_append_new(arr, snap_info(s));
    last = s;
    shown++;
  }
  pthread_mutex_unlock(&g_mu);
  free(v);
  free(want);
  return arr;
}

int store_snapshot_delete(const char *ref) {
  pthread_rwlock_wrlock(&g_files);
  pthread_mutex_lock(&g_mu);
  snap *s = find_snap_locked(ref);
  int rc = -ENOENT;
  if (s) {
    rm_rf(s->dir);
    snap_free(s);
    *s = g_snaps[--g_nsnap];
    rc = 0;
  }
  pthread_mutex_unlock(&g_mu);
  pthread_rwlock_unlock(&g_files);
  return rc;
}

/* ---- volumes ---- */

static json_t *vol_json(const vol *v, int with_token) {
  json_t *o = json_pack("{s:s, s:s}", "volumeID", v->id, "name", v->name);
  if (with_token) json_object_set_new(o, "token", json_string(v->token));
  return o;
}

json_t *store_volume_create(const char *name, int *status, const char **err) {
  if (!valid_name(name, 0)) {
    *status = 400;
    *err = "volume name must match ^[a-zA-Z0-9_-]+$";
    return NULL;
  }
  char id[21], token[41];
  if (e2b_random_alnum(id, 20) != 0 || e2b_random_hex(token, 40) != 0) {
    *status = 500;
    *err = "random generator unavailable";
    return NULL;
  }
  pthread_mutex_lock(&g_mu);
  if (vol_find_locked(name, 1)) {
    pthread_mutex_unlock(&g_mu);
    *status = 409;
    *err = "a volume with this name already exists";
    return NULL;
  }
  char *dir = xasprintf("%s/volumes/%s", g_state, id);
  vol v = {xstrdup(id), xstrdup(name), xstrdup(token), xasprintf("%s/data", dir)};
  json_t *meta = json_pack("{s:s, s:s, s:s}", "volumeID", id, "name", name, "token", token);
  char *mp = xasprintf("%s/meta.json", dir);
  int rc = mkdir_p(v.dir, 0755);
  if (rc == 0 && chown(v.dir, 1000, 1000) != 0) rc = -1;
  if (rc == 0) rc = save_json(mp, meta);
  json_decref(meta);
  free(mp);
  json_t *out = NULL;
  if (rc == 0) {
    g_vols = xrealloc(g_vols, (g_nvol + 1) * sizeof *g_vols);
    g_vols[g_nvol++] = v;
    out = vol_json(&v, 1);
    *status = 201;
  } else {
    rm_rf(dir);
    free(v.id);
    free(v.name);
    free(v.token);
    free(v.dir);
    *status = 500;
    *err = "cannot create the volume's directory";
  }
  pthread_mutex_unlock(&g_mu);
  free(dir);
  return out;
}

json_t *store_volume_list(void) {
  json_t *a = json_array();
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_nvol; i++) json_array_append_new(a, vol_json(&g_vols[i], 0));
  pthread_mutex_unlock(&g_mu);
  return a;
}

json_t *store_volume_get(const char *id) {
  pthread_mutex_lock(&g_mu);
  const vol *v = vol_find_locked(id, 0);
  json_t *o = v ? vol_json(v, 1) : NULL;
  pthread_mutex_unlock(&g_mu);
  return o;
}

/* A copy of the directory (want_dir) or the name of the volume found by
 * name (by_name) or id, taken under the lock; NULL when there is none. */
static char *volume_field(const char *key, int by_name, int want_dir) {
  pthread_mutex_lock(&g_mu);
  const vol *v = vol_find_locked(key, by_name);
  char *copy = v ? xstrdup(want_dir ? v->dir : v->name) : NULL;
  pthread_mutex_unlock(&g_mu);
  return copy;
}

char *store_volume_dir_by_name(const char *name) { return volume_field(name, 1, 1); }

char *store_volume_name_by_id(const char *id) { return volume_field(id, 0, 0); }

char *store_volume_dir_by_token(const char *id, const char *token, int *status) {
  pthread_mutex_lock(&g_mu);
  const vol *v = vol_find_locked(id, 0);
  char *d = NULL;
  if (!v)
    *status = 404;
  else if (!token || !e2b_secure_streq(token, v->token))
    *status = 401;
  else
    d = xstrdup(v->dir);
  pthread_mutex_unlock(&g_mu);
  return d;
}

int store_volume_delete(const char *id) {
  pthread_mutex_lock(&g_mu);
  int rc = -ENOENT;
  for (size_t i = 0; i < g_nvol; i++) {
    if (strcmp(g_vols[i].id, id) != 0) continue;
    char *dir = xasprintf("%s/volumes/%s", g_state, id);
    rm_rf(dir);
    free(dir);
    vol_free(&g_vols[i]);
    g_vols[i] = g_vols[--g_nvol];
    rc = 0;
    break;
  }
  pthread_mutex_unlock(&g_mu);
  return rc;
}
