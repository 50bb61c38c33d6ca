/* tplbuild_steps.c — a template build's steps (RUN, COPY, ENV, WORKDIR,
 * USER), each run inside the build sandbox, and the step cache: step i's key
 * is a hash of step i-1's key and step i's type, args and filesHash (the
 * first key: the base template and its files), and a cached step keeps the
 * sandbox's files and the build's ENV/USER/WORKDIR after it. A build starts
 * from the longest cached prefix of its steps unless `force` says otherwise. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mbedtls/sha256.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "log.h"
#include "store.h"
#include "tplbuild_run.h"
#include "tree.h"
#include "util.h"

#define MAX_STEPS 512
#define MAX_CACHE 64 /* cached steps kept; the oldest go first */
#define MAX_ENV 256
#define MAX_ENV_VALUE 32768

/* ---- keys ---- */

static void key_hex(const unsigned char d[32], char out[65]) {
  for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void chain(const char *prev, const char *a, const char *b, const char *c, char out[65]) {
  mbedtls_sha256_context s;
  unsigned char d[32];
  mbedtls_sha256_init(&s);
  mbedtls_sha256_starts_ret(&s, 0);
  const char *parts[] = {prev, a, b, c};
  for (int i = 0; i < 4; i++) mbedtls_sha256_update_ret(&s, (const unsigned char *)parts[i], strlen(parts[i]) + 1);
  mbedtls_sha256_finish_ret(&s, d);
  mbedtls_sha256_free(&s);
  key_hex(d, out);
}

static char *args_joined(json_t *step) {
  sbuf s = {0};
  json_t *args = json_object_get(step, "args");
  for (size_t i = 0; i < json_array_size(args); i++) {
    if (i) sbuf_append(&s, " ", 1);
    const char *a = json_string_value(json_array_get(args, i));
    sbuf_append(&s, a, strlen(a));
  }
  sbuf_append(&s, "", 1);
  return s.data;
}

static void step_key(const char *prev, json_t *step, char out[65]) {
  char *args = args_joined(step);
  const char *fh = json_string_value(json_object_get(step, "filesHash"));
  chain(prev, json_string_value(json_object_get(step, "type")), args, fh ? fh : "", out);
  free(args);
}

/* ---- the cache on disk: <state>/build-cache/<key>/{files/, state.json} ---- */

static char *cache_dir(const char *key) { return xasprintf("%s/build-cache/%s", store_state_dir(), key); }

static json_t *cache_state(const char *key) {
  char *dir = cache_dir(key);
  char *p = xasprintf("%s/state.json", dir);
  json_t *st = store_load_meta(p);
  free(p);
  free(dir);
  if (st && (!json_is_object(json_object_get(st, "env")) || !json_is_string(json_object_get(st, "user")))) {
    json_decref(st);
    st = NULL;
  }
  return st;
}

/* Removes the oldest entries beyond MAX_CACHE - 1. */
static void cache_trim(void) {
  char *root = xasprintf("%s/build-cache", store_state_dir());
  for (;;) {
    char oldest[80];
    long long n, bytes;
    if (dir_oldest(root, NULL, oldest, sizeof oldest, &n, &bytes) != 0) break;
    if (n < MAX_CACHE || !oldest[0]) break;
    char *p = xasprintf("%s/%s", root, oldest);
    store_files_lock(1);
    rm_rf(p);
    store_files_lock(0);
    free(p);
  }
  free(root);
}

static void cache_put(tb_run *rc, const char *key) {
  char *dir = cache_dir(key);
  char suffix[17];
  if (e2b_random_hex(suffix, 16) != 0) suffix[0] = '\0';
  char *tmp = xasprintf("%s.tmp-%s", dir, suffix);
  json_t *st = json_pack("{s:O, s:s, s:s?}", "env", rc->env, "user", rc->user, "workdir", rc->workdir);
  char *sp = xasprintf("%s/state.json", tmp);
  char *files = xasprintf("%s/files", tmp);
  char *text = json_dumps(st, 0);
  cache_trim();
  int ok = tb_save_tree(rc->sb, files) == 0 && text && write_file(sp, text, strlen(text), 0600) == 0;
  if (!ok || rename(tmp, dir) != 0) rm_rf(tmp); /* another build cached it first */
  free(text);
  free(files);
  free(sp);
  json_decref(st);
  free(tmp);
  free(dir);
}

int tb_save_tree(sandbox *sb, const char *dst) {
  static const char *dirs[] = {"home", "root", "tmp"};
  int rc = mkdir_p(dst, 0755);
  for (int i = 0; i < 3 && rc == 0; i++) {
    char *from = xasprintf("%s/%s", sb->dir, dirs[i]);
    char *to = xasprintf("%s/%s", dst, dirs[i]);
    rc = copy_tree(from, to);
    free(from);
    free(to);
  }
  return rc;
}

/* ---- the steps ---- */

static const char *arg(json_t *step, size_t i) {
  const char *s = json_string_value(json_array_get(json_object_get(step, "args"), i));
  return s ? s : "";
}

#define FAIL(...) (snprintf(rc->err, sizeof rc->err, __VA_ARGS__), -1)

static int step_run(tb_run *rc, json_t *step, const char *label) {
  size_t n = json_array_size(json_object_get(step, "args"));
  if (n < 1) return FAIL("RUN requires command argument");
  const char *user = n >= 2 && *arg(step, 1) ? arg(step, 1) : rc->user;
  int uid, gid;
  const char *home;
  if (tb_user_ids(user, &uid, &gid, &home) != 0)
    return FAIL("failed to run command '%.400s': command failed: unauthenticated: invalid username: '%.64s'", arg(step, 0), user);
  json_t *argv = json_pack("[s, s, s, s]", "/bin/bash", "-l", "-c", arg(step, 0)); /* a login shell, as E2B's builder */
  int code = tb_exec(rc, argv, user, rc->workdir, label);
  json_decref(argv);
  if (code != 0)
    return FAIL("failed to run command '%.400s': exit status %d", arg(step, 0), code);
  return 0;
}

/* A value as E2B's builder evaluates it: in the sandbox's shell, as root,
 * $VAR expanded but no command run (quotes, backslashes, backquotes and
 * "$(" escaped). NULL when that failed. */
static char *evaluate(tb_run *rc, const char *v) {
  sbuf esc = {0}, out = {0};
  static const char head[] = "printf \"%s\" \"";
  sbuf_append(&esc, head, strlen(head));
  for (const char *p = v; *p; p++) {
    if (*p == '\\' || *p == '"' || *p == '`' || (*p == '$' && p[1] == '(')) sbuf_append(&esc, "\\", 1);
    sbuf_append(&esc, p, 1);
  }
  sbuf_append(&esc, "\"", 2); /* the closing quote and the string's end */
  json_t *argv = json_pack("[s, s, s, s]", "/bin/bash", "-l", "-c", esc.data);
  int code = tb_capture(rc, argv, "root", &out);
  json_decref(argv);
  sbuf_free(&esc);
  sbuf_append(&out, "", 1);
  if (code == 0 && strlen(out.data) == out.len - 1) return out.data;
  sbuf_free(&out);
  return NULL;
}

static int step_env(tb_run *rc, json_t *step) {
  size_t n = json_array_size(json_object_get(step, "args"));
  if (n == 0) return FAIL("ENV does not support passing no arguments");
  if (n % 2) return FAIL("ENV requires both a key and value arguments");
  for (size_t i = 0; i < n; i += 2) {
    const char *k = arg(step, i), *v = arg(step, i + 1);
    if (!*k || strchr(k, '=') || strlen(k) > 256 || strlen(v) > MAX_ENV_VALUE)
      return FAIL("ENV: invalid key '%.100s' (non-empty, no '=', at most 256 bytes; values up to 32 KiB)", k);
    if (json_object_size(rc->env) >= MAX_ENV && !json_object_get(rc->env, k))
      return FAIL("ENV: at most %d variables", MAX_ENV);
    char *val = evaluate(rc, v);
    json_t *js = val ? json_string(val) : NULL;
    free(val);
    if (!js) return FAIL("failed to evaluate environment variable %.100s", k);
    json_object_set_new(rc->env, k, js);
  }
  return 0;
}

static int step_user(tb_run *rc, json_t *step) {
  int uid, gid;
  const char *home;
  if (json_array_size(json_object_get(step, "args")) < 1) return FAIL("USER requires a username argument");
  if (tb_user_ids(arg(step, 0), &uid, &gid, &home) != 0)
    return FAIL("USER '%.64s': e2b-local sandboxes have the users root and user only (no user can be added)", arg(step, 0));
  snprintf(rc->user, sizeof rc->user, "%s", arg(step, 0));
  return 0;
}

static int step_workdir(tb_run *rc, json_t *step, const char *label) {
  if (json_array_size(json_object_get(step, "args")) < 1) return FAIL("WORKDIR requires a path argument");
  const char *w = arg(step, 0);
  char *abs = w[0] == '/' ? xstrdup(w) : xasprintf("%s/%s", rc->workdir ? rc->workdir : "", w);
  char *clean = path_clean(abs);
  free(abs);
  /* made by root; what it had to create belongs to the user */
  const char *script = "p=$1; top=; while [ ! -e \"$p\" ]; do top=$p; p=$(dirname -- \"$p\"); done; "
                       "mkdir -p -- \"$1\" && { [ -z \"$top\" ] || chown -R -- \"$2:$2\" \"$top\"; }";
  json_t *args = json_pack("[s, s]", clean ? clean : "/", rc->user);
  int code = tb_shell(rc, script, args, "root", "/", label);
  json_decref(args);
  if (code != 0) {
    snprintf(rc->err, sizeof rc->err, "failed to create workdir %.400s: exit status %d", clean ? clean : w, code);
    free(clean);
    return -1;
  }
  free(rc->workdir);
  rc->workdir = clean;
  return 0;
}

static int run_step(tb_run *rc, json_t *step, const char *label) {
  const char *type = json_string_value(json_object_get(step, "type"));
  if (strcasecmp(type, "RUN") == 0) return step_run(rc, step, label);
  if (strcasecmp(type, "COPY") == 0) return tb_step_copy(rc, step, label);
  if (strcasecmp(type, "ENV") == 0) return step_env(rc, step);
  if (strcasecmp(type, "WORKDIR") == 0) return step_workdir(rc, step, label);
  if (strcasecmp(type, "USER") == 0) return step_user(rc, step);
  return FAIL("unsupported step type '%.64s'", type);
}

/* ---- the build's steps, from the longest cached prefix ---- */

static void restore(tb_run *rc, json_t *st) {
  json_object_update(rc->env, json_object_get(st, "env"));
  snprintf(rc->user, sizeof rc->user, "%s", json_string_value(json_object_get(st, "user")));
  const char *w = json_string_value(json_object_get(st, "workdir"));
  free(rc->workdir);
  rc->workdir = w ? xstrdup(w) : NULL;
}

/* How many leading steps are cached (keys[i] is step i+1's key). */
static size_t cached_prefix(tb_run *rc, json_t *steps, char (*keys)[65]) {
  if (json_is_true(json_object_get(rc->spec, "force"))) return 0;
  size_t k = 0;
  for (size_t i = 0; i < json_array_size(steps); i++) {
    if (json_is_true(json_object_get(json_array_get(steps, i), "force"))) break;
    char *dir = cache_dir(keys[i]);
    int have = store_is_dir(dir);
    free(dir);
    if (!have) break;
    k = i + 1;
  }
  return k;
}

static int boot_from(tb_run *rc, const tpl_ref *base, size_t k, char (*keys)[65]) {
  if (tb_stopping()) return FAIL("the server is stopping");
  json_t *st = k ? cache_state(keys[k - 1]) : NULL;
  tpl_ref from = *base;
  char *files = NULL;
  if (st) {
    restore(rc, st);
    char *dir = cache_dir(keys[k - 1]);
    files = xasprintf("%s/files", dir);
    free(dir);
    from.files = files;
  }
  rc->sb = tb_boot(rc, &from);
  free(files);
  json_decref(st);
  return rc->sb ? 0 : -1;
}

static char *describe(json_t *step) {
  char *args = args_joined(step);
  char *d = xasprintf("%s %.1000s", json_string_value(json_object_get(step, "type")), args);
  free(args);
  for (char *p = d; *p && p - d < 4; p++) *p = (char)toupper((unsigned char)*p);
  return d;
}

int tb_run_steps(tb_run *rc, const tpl_ref *base) {
  json_t *steps = json_object_get(rc->spec, "steps");
  size_t n = json_array_size(steps);
  if (n > MAX_STEPS) return FAIL("a template has at most %d steps", MAX_STEPS);
  char (*keys)[65] = xcalloc(n + 1, sizeof *keys);
  char first[65];
  chain(base->template_id, base->files ? base->files : "", "", "", first);
  for (size_t i = 0; i < n; i++) step_key(i ? keys[i - 1] : first, json_array_get(steps, i), keys[i]);
  size_t k = cached_prefix(rc, steps, keys);
  json_t *st = k ? cache_state(keys[k - 1]) : NULL;
  if (!st) k = 0; /* none, or half-written: rebuild */
  json_decref(st);
  int r = boot_from(rc, base, k, keys);
  for (size_t i = 0; r == 0 && i < n; i++) {
    char label[16];
    snprintf(label, sizeof label, "%zu", i + 1);
    char *d = describe(json_array_get(steps, i));
    tb_log(rc->b, "info", label, "%s[builder %zu/%zu] %s", i < k ? "CACHED " : "", i + 1, n, d);
    free(d);
    if (i < k) continue;
    snprintf(rc->failed_step, sizeof rc->failed_step, "%s", label);
    r = tb_stopping()         ? FAIL("the server is stopping")
        : tb_cancelled(rc->b) ? FAIL("%s", TB_CANCELLED)
                              : run_step(rc, json_array_get(steps, i), label);
    if (r == 0) cache_put(rc, keys[i]);
  }
  free(keys);
  return r;
}
