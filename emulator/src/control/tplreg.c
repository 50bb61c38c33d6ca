/* tplreg.c — the registry of templates built through E2B's template-build
 * API: names and tags to builds, each build's status and logs, names and
 * tags read as E2B's id package reads them; what a sandbox starts from when
 * it names a built template. The routes are tplbuild.c's. */
#define _GNU_SOURCE
#include "tplbuild.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "log.h"
#include "sandbox.h"
#include "tree.h"
#include "util.h"

#define MAX_TEMPLATES 256
#define MAX_BUILDS 8 /* per template; older untagged ones are dropped */
#define MAX_TAGS 64  /* per template */
#define MAX_LOGS 10000
#define MAX_LOG_MSG 4096
#define LOG_BUDGET ((size_t)64 << 20) /* log bytes of all builds; the oldest finished builds' logs go first */
#define MAX_RUNNING 4 /* builds in progress at once, as E2B's per-team limit */
#define STATUS_PAGE 100

enum { TB_WAITING, TB_BUILDING, TB_READY, TB_ERROR };
static const char *STATUS_NAMES[] = {"waiting", "building", "ready", "error"};

typedef struct tb_tpl tb_tpl;
struct tb_build {
  char id[E2B_UUID_SIZE];
  tb_tpl *tpl;
  int status;
  json_t *logs; /* [{timestamp, level, message, step?}] */
  size_t log_bytes;
  char *reason, *reason_step;
  char *files, *start_cmd, *ready_cmd, *user, *workdir;
  json_t *env, *ro_mounts;
  json_t *tags; /* assigned once ready */
  int64_t created_ms;
  int cancel;         /* a newer build of the template started */
  struct sandbox *sb; /* the build's sandbox while it runs (the runner's reference) */
};

struct tb_tpl {
  char id[24];
  char *name;
  json_t *tags; /* {tag: {buildID, createdAt}} */
  tb_build *builds[MAX_BUILDS];
  size_t nbuild;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_idle = PTHREAD_COND_INITIALIZER;
static tb_tpl *g_tpls[MAX_TEMPLATES];
static size_t g_ntpl;
static int g_running, g_stopping;
static size_t g_log_bytes;
static char *g_dir;

static void save_tpl(const tb_tpl *t);

int tb_stopping(void) {
  pthread_mutex_lock(&g_mu);
  int s = g_stopping;
  pthread_mutex_unlock(&g_mu);
  return s;
}


static void build_free(tb_build *b) {
  g_log_bytes -= b->log_bytes;
  json_decref(b->logs);
  json_decref(b->env);
  json_decref(b->ro_mounts);
  json_decref(b->tags);
  free(b->reason);
  free(b->reason_step);
  free(b->files);
  free(b->start_cmd);
  free(b->ready_cmd);
  free(b->user);
  free(b->workdir);
  free(b);
}

static void tpl_free(tb_tpl *t) {
  for (size_t i = 0; i < t->nbuild; i++) build_free(t->builds[i]);
  json_decref(t->tags);
  free(t->name);
  free(t);
}

void tplreg_stop(void) {
  pthread_mutex_lock(&g_mu);
  g_stopping = 1;
  pthread_mutex_unlock(&g_mu);
}

void tplreg_shutdown(void) {
  pthread_mutex_lock(&g_mu);
  g_stopping = 1;
  while (g_running > 0) pthread_cond_wait(&g_idle, &g_mu);
  for (size_t i = 0; i < g_ntpl; i++) tpl_free(g_tpls[i]);
  g_ntpl = 0;
  pthread_mutex_unlock(&g_mu);
  free(g_dir);
  g_dir = NULL;
}

/* ---- names, as E2B's id.ParseName reads them ---- */

static int clean_part(const char *s, size_t n, int dots, char *out, const char *what, char *err, size_t cap) {
  while (n && isspace((unsigned char)*s)) s++, n--;
  while (n && isspace((unsigned char)s[n - 1])) n--;
  int ok = n > 0 && n < 129;
  for (size_t i = 0; ok && i < n; i++) {
    char c = (char)tolower((unsigned char)s[i]);
    ok = isdigit((unsigned char)c) || (c >= 'a' && c <= 'z') || c == '-' || c == '_' || (dots && c == '.');
    out[i] = c;
  }
  if (ok) out[n] = '\0';
  else snprintf(err, cap, "invalid %s: %.*s", what, (int)(n < 200 ? n : 200), s);
  return ok ? 0 : -1;
}

int tplreg_parse_name(const char *input, tplreg_name *p, char *err, size_t cap) {
  memset(p, 0, sizeof *p);
  if (!input) input = "";
  const char *colon = strchr(input, ':');
  size_t idlen = colon ? (size_t)(colon - input) : strlen(input);
  if (colon) {
    p->has_tag = 1;
    if (clean_part(colon + 1, strlen(colon + 1), 1, p->tag, "tag", err, cap)) return -1;
    if (strcmp(p->tag, "default") == 0) p->tag[0] = '\0';
  }
  const char *slash = memchr(input, '/', idlen);
  if (slash) {
    if (clean_part(input, (size_t)(slash - input), 0, p->ns, "namespace", err, cap)) return -1;
    idlen -= (size_t)(slash + 1 - input);
    input = slash + 1;
  }
  if (clean_part(input, idlen, 0, p->alias, "template ID", err, cap)) return -1;
  if (p->ns[0] && strcmp(p->ns, TEAM_NAMESPACE) != 0) {
    snprintf(err, cap, "namespace '%s' must match your team '%s'", p->ns, TEAM_NAMESPACE);
    return -2;
  }
  return 0;
}

/* What Go's uuid.Parse takes among [a-z0-9._-] strings: 8-4-4-4-12 or 32 hex digits. */
int tplreg_uuid_shaped(const char *s) {
  size_t n = strlen(s);
  if (n == 32) {
    for (size_t i = 0; i < n; i++)
      if (!isxdigit((unsigned char)s[i])) return 0;
    return 1;
  }
  if (n != 36) return 0;
  for (int i = 0; i < 36; i++) {
    int dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i])) return 0;
  }
  return 1;
}

/* E2B's ValidateAndDeduplicateTags: a new array of cleaned tags, or NULL with err. */
json_t *tplreg_clean_tags(json_t *in, char *err, size_t cap) {
  json_t *out = json_array();
  for (size_t i = 0; i < json_array_size(in); i++) {
    const char *t = json_string_value(json_array_get(in, i));
    char c[130], why[300];
    if (clean_part(t, strlen(t), 1, c, "tag", why, sizeof why) == 0 && tplreg_uuid_shaped(c))
      snprintf(why, sizeof why, "tag cannot be a UUID");
    else if (clean_part(t, strlen(t), 1, c, "tag", why, sizeof why) == 0)
      why[0] = '\0';
    if (why[0]) {
      snprintf(err, cap, "invalid tag '%.130s': %s", t, why);
      json_decref(out);
      return NULL;
    }
    int seen = 0;
    for (size_t j = 0; j < json_array_size(out); j++) seen |= strcmp(json_string_value(json_array_get(out, j)), c) == 0;
    if (!seen) json_array_append_new(out, json_string(c));
  }
  return out;
}

int tplreg_string_array(json_t *v, size_t max) {
  if (!json_is_array(v) || json_array_size(v) > max) return 0;
  for (size_t i = 0; i < json_array_size(v); i++)
    if (!json_is_string(json_array_get(v, i))) return 0;
  return 1;
}

/* ---- registry (callers hold g_mu) ---- */

static tb_tpl *find_tpl(const char *alias_or_id) {
  for (size_t i = 0; i < g_ntpl; i++)
    if (strcmp(g_tpls[i]->name, alias_or_id) == 0 || strcmp(g_tpls[i]->id, alias_or_id) == 0) return g_tpls[i];
  return NULL;
}

static tb_build *find_build(tb_tpl *t, const char *id) {
  for (size_t i = 0; t && i < t->nbuild; i++)
    if (strcmp(t->builds[i]->id, id) == 0) return t->builds[i];
  return NULL;
}

static int build_tagged(tb_tpl *t, tb_build *b) {
  const char *k;
  json_t *v;
  json_object_foreach(t->tags, k, v) if (strcmp(json_string_value(json_object_get(v, "buildID")), b->id) == 0) return 1;
  return 0;
}

/* Room for one more build: drops the oldest finished, untagged one. */
static int make_room(tb_tpl *t) {
  if (t->nbuild < MAX_BUILDS) return 0;
  for (size_t i = 0; i < t->nbuild; i++) {
    tb_build *b = t->builds[i];
    if (b->status == TB_BUILDING || build_tagged(t, b)) continue;
    char *dir = xasprintf("%s/%s/%s", g_dir, t->id, b->id);
    store_files_lock(1);
    rm_rf(dir);
    store_files_lock(0);
    free(dir);
    build_free(b);
    memmove(&t->builds[i], &t->builds[i + 1], (t->nbuild - i - 1) * sizeof *t->builds);
    t->nbuild--;
    return 0;
  }
  return -1;
}

static char *iso_time(int64_t ms) {
  time_t s = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&s, &tm);
  char buf[64];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%03dZ", (int)(ms % 1000));
  return xstrdup(buf);
}

static json_t *time_json(int64_t ms) {
  char *s = iso_time(ms);
  json_t *j = json_string(s);
  free(s);
  return j;
}

/* ---- the runner's view ---- */

/* Frees the log of the finished build created first; 0 when none has one. */
static int drop_oldest_logs(void) {
  tb_build *oldest = NULL;
  for (size_t i = 0; i < g_ntpl; i++)
    for (size_t j = 0; j < g_tpls[i]->nbuild; j++) {
      tb_build *b = g_tpls[i]->builds[j];
      if (b->log_bytes && (b->status == TB_READY || b->status == TB_ERROR) &&
          (!oldest || b->created_ms < oldest->created_ms))
        oldest = b;
    }
  if (!oldest) return 0;
  json_array_clear(oldest->logs);
  g_log_bytes -= oldest->log_bytes;
  oldest->log_bytes = 0;
  return 1;
}

void tb_log(tb_build *b, const char *level, const char *step, const char *fmt, ...) {
  char msg[MAX_LOG_MSG + 1];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *e = json_pack("{s:o, s:s, s:s}", "timestamp", time_json(now_ms()), "level", level, "message", msg);
  if (!e) e = json_pack("{s:o, s:s, s:s}", "timestamp", time_json(now_ms()), "level", level, "message", "(output not UTF-8)");
  if (step) json_object_set_new(e, "step", json_string(step));
  size_t bytes = strlen(msg) + 64;
  pthread_mutex_lock(&g_mu);
  while (g_log_bytes + bytes > LOG_BUDGET && drop_oldest_logs()) {
  }
  if (json_array_size(b->logs) < MAX_LOGS && g_log_bytes + bytes <= LOG_BUDGET) {
    json_array_append(b->logs, e);
    b->log_bytes += bytes;
    g_log_bytes += bytes;
  }
  pthread_mutex_unlock(&g_mu);
  json_decref(e);
}

char *tb_dir(tb_build *b) { return xasprintf("%s/%s/%s", g_dir, b->tpl->id, b->id); }

static void assign_tag(tb_tpl *t, const char *tag, const char *build_id) {
  if (!json_object_get(t->tags, tag) && json_object_size(t->tags) >= MAX_TAGS) return;
  json_object_set_new(t->tags, tag, json_pack("{s:s, s:o}", "buildID", build_id, "createdAt", time_json(now_ms())));
}

static char *dup_or_null(const char *s) { return s ? xstrdup(s) : NULL; }

void tb_finish(tb_build *b, const tb_result *ok, const char *step, const char *msg) {
  pthread_mutex_lock(&g_mu);
  if (b->cancel) { /* its tags are the newer build's to take */
    ok = NULL;
    msg = TB_CANCELLED;
  }
  b->sb = NULL;
  if (ok) {
    b->files = xstrdup(ok->files);
    b->env = json_deep_copy(ok->env);
    b->ro_mounts = json_deep_copy(ok->ro_mounts);
    b->start_cmd = dup_or_null(ok->start_cmd);
    b->ready_cmd = dup_or_null(ok->ready_cmd);
    b->user = dup_or_null(ok->user);
    b->workdir = dup_or_null(ok->workdir);
    for (size_t i = 0; i < json_array_size(b->tags); i++)
      assign_tag(b->tpl, json_string_value(json_array_get(b->tags, i)), b->id);
    b->status = TB_READY;
  } else {
    b->reason = xstrdup(msg ? msg : "build failed");
    b->reason_step = dup_or_null(step);
    b->status = TB_ERROR;
  }
  save_tpl(b->tpl);
  if (--g_running == 0) pthread_cond_broadcast(&g_idle);
  pthread_mutex_unlock(&g_mu);
}

/* ---- resolving and deleting ---- */

static tb_build *tagged_build(tb_tpl *t, const char *tag) {
  json_t *v = json_object_get(t->tags, tag[0] ? tag : "default");
  return v ? find_build(t, json_string_value(json_object_get(v, "buildID"))) : NULL;
}

int tplbuild_resolve(const char *ref, tpl_ref *out) {
  tplreg_name p;
  char err[300];
  if (tplreg_parse_name(ref, &p, err, sizeof err) != 0) return -ENOENT;
  pthread_mutex_lock(&g_mu);
  tb_tpl *t = find_tpl(p.alias);
  tb_build *b = t ? tagged_build(t, p.tag) : NULL;
  int rc = -ENOENT;
  if (b && b->status == TB_READY) {
    memset(out, 0, sizeof *out);
    out->template_id = xstrdup(t->id);
    out->alias = xstrdup(t->name);
    out->files = xstrdup(b->files);
    out->ro_mounts = b->ro_mounts ? json_deep_copy(b->ro_mounts) : json_array();
    out->env_vars = json_deep_copy(b->env);
    out->env_defaults = 1;
    out->start_cmd = dup_or_null(b->start_cmd);
    out->ready_cmd = dup_or_null(b->ready_cmd);
    out->start_user = dup_or_null(b->user);
    out->start_cwd = dup_or_null(b->workdir);
    rc = 0;
  }
  pthread_mutex_unlock(&g_mu);
  return rc;
}

int tplbuild_alias(const char *ref, char *tid, size_t tcap, char *msg, size_t mcap) {
  tplreg_name p;
  char err[300];
  int pr = tplreg_parse_name(ref, &p, err, sizeof err);
  if (pr == -1) return snprintf(msg, mcap, "Invalid alias format: %s", err), 400;
  if (pr == -2) return snprintf(msg, mcap, "%s", err), 400;
  pthread_mutex_lock(&g_mu);
  tb_tpl *t = find_tpl(p.alias);
  int status = 0;
  if (t && strchr(ref, ':') && !json_object_get(t->tags, p.tag[0] ? p.tag : "default")) {
    snprintf(msg, mcap, "tag '%s' does not exist for template '%s'", p.tag[0] ? p.tag : "default", p.alias);
    status = 404;
  } else if (t) {
    snprintf(tid, tcap, "%s", t->id);
    status = 200;
  }
  pthread_mutex_unlock(&g_mu);
  return status;
}

int tplbuild_delete(const char *ref) {
  tplreg_name p;
  char err[300];
  if (tplreg_parse_name(ref, &p, err, sizeof err) != 0) return -ENOENT;
  pthread_mutex_lock(&g_mu);
  tb_tpl *t = find_tpl(p.alias);
  int rc = t ? 0 : -ENOENT;
  for (size_t i = 0; t && i < t->nbuild; i++)
    if (t->builds[i]->status == TB_BUILDING) rc = -EBUSY;
  if (rc == 0) {
    char *dir = xasprintf("%s/%s", g_dir, t->id);
    store_files_lock(1);
    rm_rf(dir);
    store_files_lock(0);
    free(dir);
    size_t i = 0;
    while (g_tpls[i] != t) i++;
    memmove(&g_tpls[i], &g_tpls[i + 1], (g_ntpl - i - 1) * sizeof *g_tpls);
    g_ntpl--;
    tpl_free(t);
  }
  pthread_mutex_unlock(&g_mu);
  return rc;
}


static int name_taken_elsewhere(const char *alias) {
  if (strcmp(alias, "base") == 0) return 1;
  tpl_ref t;
  if (store_resolve_template(alias, &t) != 0) return 0;
  tpl_ref_free(&t);
  return 1;
}

static tb_tpl *template_for(const char *alias, int *status, char *err, size_t cap) {
  tb_tpl *t = find_tpl(alias);
  if (t) return t;
  if (name_taken_elsewhere(alias)) {
    *status = 409;
    snprintf(err, cap, "Alias '%s' is already used", alias);
    return NULL;
  }
  if (g_ntpl >= MAX_TEMPLATES) {
    *status = 429;
    snprintf(err, cap, "e2b-local keeps at most %d built templates: delete one first", MAX_TEMPLATES);
    return NULL;
  }
  t = xcalloc(1, sizeof *t);
  if (e2b_random_alnum(t->id, 20) != 0) {
    free(t);
    *status = 500;
    snprintf(err, cap, "Failed to generate template id");
    return NULL;
  }
  t->name = xstrdup(alias);
  t->tags = json_object();
  g_tpls[g_ntpl++] = t;
  return t;
}

static tb_build *register_build(const char *alias, json_t *tags, int *status, char *err, size_t cap) {
  if (g_running >= MAX_RUNNING) {
    *status = 429;
    snprintf(err, cap, "you have reached the maximum number of concurrent template builds (%d)", MAX_RUNNING);
    return NULL;
  }
  tb_tpl *t = template_for(alias, status, err, cap);
  if (!t) return NULL;
  if (make_room(t) != 0) {
    *status = 429;
    snprintf(err, cap, "template '%s' has %d builds in use (tagged or building)", alias, MAX_BUILDS);
    return NULL;
  }
  tb_build *b = xcalloc(1, sizeof *b);
  if (e2b_uuid4(b->id) != 0) {
    free(b);
    *status = 500;
    snprintf(err, cap, "Failed to generate build id");
    return NULL;
  }
  b->tpl = t;
  b->logs = json_array();
  b->tags = json_incref(tags);
  b->created_ms = now_ms();
  t->builds[t->nbuild++] = b;
  return b;
}

int tplreg_level_rank(const char *l) {
  static const char *names[] = {"debug", "info", "warn", "error"};
  for (int i = 0; i < 4; i++)
    if (l && strcmp(l, names[i]) == 0) return i;
  return -1;
}

static json_t *step_warnings(json_t *entries, const char *step) {
  json_t *out = json_array();
  for (size_t i = 0; i < json_array_size(entries); i++) {
    json_t *e = json_array_get(entries, i);
    const char *s = json_string_value(json_object_get(e, "step"));
    if (s && strcmp(s, step) == 0 && tplreg_level_rank(json_string_value(json_object_get(e, "level"))) >= 2)
      json_array_append(out, e);
  }
  return out;
}

static json_t *status_json(tb_build *b, const char *tid, long long offset, long long limit, int min_level) {
  json_t *out = json_pack("{s:s, s:s, s:s, s:[], s:[]}", "templateID", tid, "buildID", b->id, "status",
                          STATUS_NAMES[b->status], "logs", "logEntries");
  if (b->status == TB_WAITING) return out;
  json_t *entries = json_object_get(out, "logEntries");
  for (size_t i = offset > 0 ? (size_t)offset : 0; i < json_array_size(b->logs) && (long long)json_array_size(entries) < limit; i++) {
    json_t *e = json_array_get(b->logs, i);
    if (tplreg_level_rank(json_string_value(json_object_get(e, "level"))) >= min_level) json_array_append(entries, e);
  }
  if (b->reason) {
    json_t *reason = json_pack("{s:s}", "message", b->reason);
    if (b->reason_step) {
      json_object_set_new(reason, "step", json_string(b->reason_step));
      json_object_set_new(reason, "logEntries", step_warnings(entries, b->reason_step));
    }
    json_object_set_new(out, "reason", reason);
  }
  return out;
}


/* ---- on disk: <state>/built/<template id>/{meta.json, <build id>/files/} ----
 * meta.json holds the name, the tags and the finished builds (not their logs);
 * what a restart reads back is untrusted: any field out of shape, any build
 * whose files are missing, makes the template's directory leftovers to remove. */

static json_t *build_json(const tb_build *b) {
  json_t *o = json_pack("{s:s, s:s, s:I}", "id", b->id, "status", STATUS_NAMES[b->status], "createdMs",
                        (json_int_t)b->created_ms);
  if (b->status == TB_ERROR) {
    json_object_set_new(o, "reason", json_string(b->reason));
    if (b->reason_step) json_object_set_new(o, "reasonStep", json_string(b->reason_step));
    return o;
  }
  json_object_set_new(o, "env", json_deep_copy(b->env));
  json_object_set_new(o, "roMounts", b->ro_mounts ? json_deep_copy(b->ro_mounts) : json_array());
  const char *keys[] = {"startCmd", "readyCmd", "user", "workdir"};
  const char *vals[] = {b->start_cmd, b->ready_cmd, b->user, b->workdir};
  for (int i = 0; i < 4; i++)
    if (vals[i]) json_object_set_new(o, keys[i], json_string(vals[i]));
  return o;
}

/* Writes t's meta.json; the caller holds g_mu. */
static void save_tpl(const tb_tpl *t) {
  json_t *builds = json_array();
  for (size_t i = 0; i < t->nbuild; i++)
    if (t->builds[i]->status == TB_READY || t->builds[i]->status == TB_ERROR)
      json_array_append_new(builds, build_json(t->builds[i]));
  json_t *m = json_pack("{s:s, s:s, s:O, s:o}", "id", t->id, "name", t->name, "tags", t->tags, "builds", builds);
  char *dir = xasprintf("%s/%s", g_dir, t->id);
  char *path = xasprintf("%s/meta.json", dir);
  char *text = json_dumps(m, JSON_INDENT(1));
  if (mkdir_p(dir, 0700) != 0 || !text || write_file_atomic(path, text, strlen(text), 0600) != 0)
    log_msg("template %s: cannot save %s", t->name, path);
  free(text);
  free(path);
  free(dir);
  json_decref(m);
}

static int opt_string(json_t *o, const char *key, char **out) {
  json_t *v = json_object_get(o, key);
  if (!v) return 0;
  if (!json_is_string(v)) return -1;
  *out = xstrdup(json_string_value(v));
  return 0;
}

static int string_values(json_t *o) {
  const char *k;
  json_t *v;
  if (!json_is_object(o)) return 0;
  json_object_foreach(o, k, v) if (!json_is_string(v)) return 0;
  return 1;
}

/* One finished build from meta.json, or NULL when it is out of shape. */
static tb_build *load_build(tb_tpl *t, const char *dir, json_t *o) {
  const char *id = json_string_value(json_object_get(o, "id"));
  const char *st = json_string_value(json_object_get(o, "status"));
  int ready = st && strcmp(st, "ready") == 0, failed = st && strcmp(st, "error") == 0;
  if (!id || !tplreg_uuid_shaped(id) || (!ready && !failed) || !json_is_integer(json_object_get(o, "createdMs")))
    return NULL;
  tb_build *b = xcalloc(1, sizeof *b);
  snprintf(b->id, sizeof b->id, "%s", id);
  b->tpl = t;
  b->logs = json_array();
  b->tags = json_array();
  b->created_ms = json_integer_value(json_object_get(o, "createdMs"));
  b->status = ready ? TB_READY : TB_ERROR;
  int bad = opt_string(o, "reason", &b->reason) || opt_string(o, "reasonStep", &b->reason_step) ||
            opt_string(o, "startCmd", &b->start_cmd) || opt_string(o, "readyCmd", &b->ready_cmd) ||
            opt_string(o, "user", &b->user) || opt_string(o, "workdir", &b->workdir);
  if (ready) {
    b->files = xasprintf("%s/%s/files", dir, id);
    b->env = json_deep_copy(json_object_get(o, "env"));
    b->ro_mounts = json_deep_copy(json_object_get(o, "roMounts"));
    bad |= !string_values(b->env) || !store_mounts_valid(b->ro_mounts) || !store_is_dir(b->files) ||
           (b->user && strcmp(b->user, "root") != 0 && strcmp(b->user, "user") != 0);
  } else {
    bad |= !b->reason;
  }
  if (bad) build_free(b);
  return bad ? NULL : b;
}

static int load_tags(tb_tpl *t, json_t *tags) {
  const char *k;
  json_t *v;
  if (!json_is_object(tags) || json_object_size(tags) > MAX_TAGS) return -1;
  json_object_foreach(tags, k, v) {
    char c[130], why[300];
    const char *bid = json_string_value(json_object_get(v, "buildID"));
    if (clean_part(k, strlen(k), 1, c, "tag", why, sizeof why) != 0 || strcmp(c, k) != 0 || !bid ||
        !json_is_string(json_object_get(v, "createdAt")))
      return -1;
    if (find_build(t, bid)) json_object_set(t->tags, k, v); /* a tag of a build that is gone goes too */
  }
  return 0;
}

static int load_tpl(const char *key, const char *dir, json_t *m) {
  const char *id = json_string_value(json_object_get(m, "id")), *name = json_string_value(json_object_get(m, "name"));
  json_t *builds = json_object_get(m, "builds");
  char c[130], why[300];
  if (!id || !name || strcmp(id, key) != 0 || strlen(id) >= sizeof((tb_tpl *)0)->id || g_ntpl >= MAX_TEMPLATES ||
      clean_part(name, strlen(name), 0, c, "template ID", why, sizeof why) != 0 || strcmp(c, name) != 0 ||
      find_tpl(name) || find_tpl(id) || !json_is_array(builds) || json_array_size(builds) > MAX_BUILDS)
    return -1;
  for (const char *p = id; *p; p++)
    if (!isalnum((unsigned char)*p)) return -1;
  tb_tpl *t = xcalloc(1, sizeof *t);
  snprintf(t->id, sizeof t->id, "%s", id);
  t->name = xstrdup(name);
  t->tags = json_object();
  for (size_t i = 0; i < json_array_size(builds); i++) {
    tb_build *b = load_build(t, dir, json_array_get(builds, i));
    if (!b || find_build(t, b->id)) {
      if (b) build_free(b);
      tpl_free(t);
      return -1;
    }
    t->builds[t->nbuild++] = b;
  }
  if (load_tags(t, json_object_get(m, "tags")) != 0) {
    tpl_free(t);
    return -1;
  }
  g_tpls[g_ntpl++] = t;
  return 0;
}

static void load_all(void) {
  DIR *d = opendir(g_dir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char *dir = xasprintf("%s/%s", g_dir, de->d_name);
    char *mp = xasprintf("%s/meta.json", dir);
    json_t *m = store_is_dir(dir) ? store_load_meta(mp) : NULL;
    if (!m || load_tpl(de->d_name, dir, m) != 0) {
      log_msg("built template %s: unusable meta.json, removing it", de->d_name);
      rm_rf(dir);
    }
    json_decref(m);
    free(mp);
    free(dir);
  }
  if (d) closedir(d);
}

int tplreg_init(const char *state_dir) {
  g_dir = xasprintf("%s/built", state_dir);
  char *cache = xasprintf("%s/build-cache", state_dir);
  rm_rf(cache); /* cached steps last as long as the server: an operator's template may differ at the next start */
  free(cache);
  if (mkdir_p(g_dir, 0700) != 0) return -1;
  pthread_mutex_lock(&g_mu);
  load_all();
  pthread_mutex_unlock(&g_mu);
  return 0;
}

/* ---- what the routes ask (each takes the lock) ---- */

json_t *tplreg_request(const tplreg_name *p, json_t *tags, int *status, char *err, size_t cap) {
  pthread_mutex_lock(&g_mu);
  tb_build *b = register_build(p->alias, tags, status, err, cap);
  if (b) save_tpl(b->tpl); /* the name is claimed, across a restart too */
  json_t *out = b ? json_pack("{s:s, s:s, s:[s], s:[s+], s:O, s:b}", "templateID", b->tpl->id, "buildID", b->id,
                              "aliases", p->alias, "names", TEAM_NAMESPACE "/", p->alias, "tags", tags, "public", 0)
                  : NULL;
  pthread_mutex_unlock(&g_mu);
  return out;
}

/* The build tid/bid (tid an id, not a name) or NULL; the caller holds g_mu. */
static tb_build *by_ids(const char *tid, const char *bid) {
  tb_tpl *t = find_tpl(tid);
  return t && strcmp(t->id, tid) == 0 ? find_build(t, bid) : NULL;
}

/* As E2B's CheckAndCancelConcurrentBuilds: the template's other running
 * builds are cancelled (their sandboxes killed) when b starts. */
static void cancel_others(tb_build *b, sandbox **kill, size_t *nkill) {
  for (size_t i = 0; i < b->tpl->nbuild; i++) {
    tb_build *o = b->tpl->builds[i];
    if (o == b || o->status != TB_BUILDING || o->cancel) continue;
    o->cancel = 1;
    if (o->sb) {
      sandbox_ref(o->sb);
      kill[(*nkill)++] = o->sb;
    }
  }
}

int tplreg_begin(const char *tid, const char *bid, int refuse, tb_build **out) {
  sandbox *kill[MAX_BUILDS];
  size_t nkill = 0;
  pthread_mutex_lock(&g_mu);
  tb_build *b = by_ids(tid, bid);
  int state = b ? b->status : -1;
  if (state == TB_WAITING && !refuse) {
    b->status = TB_BUILDING;
    g_running++;
    cancel_others(b, kill, &nkill);
  }
  pthread_mutex_unlock(&g_mu);
  for (size_t i = 0; i < nkill; i++) {
    sandbox_kill(kill[i]);
    sandbox_unref(kill[i]);
  }
  *out = b;
  return state < 0 ? -1 : state == TB_WAITING ? 0 : 1;
}

void tb_attach(tb_build *b, sandbox *sb) {
  pthread_mutex_lock(&g_mu);
  b->sb = sb;
  int cancelled = b->cancel;
  pthread_mutex_unlock(&g_mu);
  if (sb && cancelled) sandbox_kill(sb); /* cancelled while it booted */
}

int tb_cancelled(tb_build *b) {
  pthread_mutex_lock(&g_mu);
  int c = b->cancel;
  pthread_mutex_unlock(&g_mu);
  return c;
}

json_t *tplreg_status(const char *tid, const char *bid, long long offset, long long limit, int min_level) {
  pthread_mutex_lock(&g_mu);
  tb_build *b = by_ids(tid, bid);
  json_t *out = b ? status_json(b, tid, offset, limit, min_level) : NULL;
  pthread_mutex_unlock(&g_mu);
  return out;
}

int tplreg_id_of(const char *ref, char *out, size_t cap) {
  tplreg_name p;
  char err[300];
  if (tplreg_parse_name(ref, &p, err, sizeof err) != 0) return -ENOENT;
  pthread_mutex_lock(&g_mu);
  tb_tpl *t = find_tpl(p.alias);
  if (t) snprintf(out, cap, "%s", t->id);
  pthread_mutex_unlock(&g_mu);
  return t ? 0 : -ENOENT;
}

int tplreg_known_id(const char *tid) {
  pthread_mutex_lock(&g_mu);
  tb_tpl *t = find_tpl(tid);
  int known = t && strcmp(t->id, tid) == 0;
  pthread_mutex_unlock(&g_mu);
  return known;
}

json_t *tplreg_tags(const char *alias) {
  pthread_mutex_lock(&g_mu);
  tb_tpl *t = find_tpl(alias);
  json_t *out = t ? json_array() : NULL;
  const char *k;
  json_t *v;
  if (t)
    json_object_foreach(t->tags, k, v) json_array_append_new(
        out, json_pack("{s:s, s:O, s:O}", "tag", k, "buildID", json_object_get(v, "buildID"), "createdAt",
                       json_object_get(v, "createdAt")));
  pthread_mutex_unlock(&g_mu);
  return out;
}

json_t *tplreg_tag_assign(const tplreg_name *p, json_t *tags, int *status, char *msg, size_t cap) {
  pthread_mutex_lock(&g_mu);
  tb_tpl *t = find_tpl(p->alias);
  tb_build *b = t ? tagged_build(t, p->tag) : NULL;
  json_t *out = NULL;
  if (b) {
    for (size_t i = 0; i < json_array_size(tags); i++) assign_tag(t, json_string_value(json_array_get(tags, i)), b->id);
    out = json_pack("{s:O, s:s}", "tags", tags, "buildID", b->id);
    save_tpl(t);
  }
  pthread_mutex_unlock(&g_mu);
  *status = 404;
  if (!t) snprintf(msg, cap, "template '%s' not found", p->alias);
  else if (!out) snprintf(msg, cap, "tag '%s' does not exist for template '%s'", p->tag[0] ? p->tag : "default", p->alias);
  return out;
}

int tplreg_tag_remove(const tplreg_name *p, json_t *tags) {
  pthread_mutex_lock(&g_mu);
  tb_tpl *t = find_tpl(p->alias);
  for (size_t i = 0; t && i < json_array_size(tags); i++) json_object_del(t->tags, json_string_value(json_array_get(tags, i)));
  if (t) save_tpl(t);
  pthread_mutex_unlock(&g_mu);
  return t ? 0 : -ENOENT;
}

int tplbuild_resolve_any(const char *ref, tpl_ref *out) {
  if (store_resolve_template(ref, out) == 0) return 0;
  return tplbuild_resolve(ref, out);
}
