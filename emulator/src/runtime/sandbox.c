/* sandbox.c — registry, lifecycle transitions, deadlines and meta.json. */
#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "codec.h"
#include "netpolicy.h"
#include "netrules.h"
#include "log.h"
#include "store.h"
#include "tree.h"
#include "diskuse.h"
#include "util.h"
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <stdarg.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_timer_cv = PTHREAD_COND_INITIALIZER;
static sandbox **g_sbs;
static size_t g_n, g_cap;
static char *g_root; /* state_dir/sandboxes */
static pthread_t g_timer, g_sampler;
static int g_stopping, g_timer_started, g_sampler_started;
static pthread_cond_t g_sampler_cv = PTHREAD_COND_INITIALIZER;
static int g_expiries; /* expiry threads running (g_mu) */
#define MAX_EXPIRIES 64      /* at once: more due sandboxes wait for one of them */
static pthread_cond_t g_expiries_cv = PTHREAD_COND_INITIALIZER;

#define METRIC_INTERVAL_MS 5000

/* ---- registry ---- */

void sandbox_ref(sandbox *sb) {
  pthread_mutex_lock(&g_mu);
  sb->refs++;
  pthread_mutex_unlock(&g_mu);
}

static void sandbox_free(sandbox *sb) {
  free(sb->template_id);
  free(sb->default_user);
  free(sb->default_workdir);
  free(sb->alias);
  free(sb->envd_token);
  json_decref(sb->metadata);
  json_decref(sb->env_vars);
  json_decref(sb->network);
  free(sb->traffic_token);
  json_decref(sb->volume_mounts);
  json_decref(sb->mounts);
  for (size_t i = 0; i < sb->log_n; i++) {
    sb_log *l = &sb->logs[(sb->log_head + i) % SB_LOG_CAP];
    free(l->message);
    json_decref(l->fields);
  }
  free(sb->dir);
  pthread_rwlock_destroy(&sb->lock);
  pthread_mutex_destroy(&sb->aux_mu);
  free(sb);
}

void sandbox_unref(sandbox *sb) {
  if (!sb) return;
  pthread_mutex_lock(&g_mu);
  int last = --sb->refs == 0;
  pthread_mutex_unlock(&g_mu);
  if (last) sandbox_free(sb);
}

sandbox *sandbox_get(const char *id) {
  sandbox *found = NULL;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_n; i++)
    if (strcmp(g_sbs[i]->id, id) == 0 && !g_sbs[i]->hidden) {
      found = g_sbs[i];
      found->refs++;
      break;
    }
  pthread_mutex_unlock(&g_mu);
  return found;
}

sandbox **sandbox_list(size_t *n) {
  pthread_mutex_lock(&g_mu);
  sandbox **v = xcalloc(g_n + 1, sizeof *v);
  size_t k = 0;
  for (size_t i = 0; i < g_n; i++) {
    if (g_sbs[i]->hidden) continue;
    v[k] = g_sbs[i];
    v[k++]->refs++;
  }
  *n = k;
  pthread_mutex_unlock(&g_mu);
  return v;
}

void sandbox_list_free(sandbox **v, size_t n) {
  for (size_t i = 0; i < n; i++) sandbox_unref(v[i]);
  free(v);
}

/* Fails once shutdown began, so no sandbox can outlive the server. */
static int registry_add(sandbox *sb) {
  pthread_mutex_lock(&g_mu);
  if (g_stopping) {
    pthread_mutex_unlock(&g_mu);
    return -1;
  }
  if (g_n == g_cap) {
    g_cap = g_cap ? g_cap * 2 : 16;
    g_sbs = xrealloc(g_sbs, g_cap * sizeof *g_sbs);
  }
  g_sbs[g_n++] = sb;
  sb->refs++;
  pthread_cond_broadcast(&g_timer_cv);
  pthread_mutex_unlock(&g_mu);
  return 0;
}

static void registry_remove(sandbox *sb) {
  int found = 0;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_n; i++)
    if (g_sbs[i] == sb) {
      g_sbs[i] = g_sbs[--g_n];
      found = 1;
      break;
    }
  pthread_mutex_unlock(&g_mu);
  if (found) sandbox_unref(sb);
}

/* state and end_at change under both the sandbox write lock and g_mu, so the
 * timer (g_mu) and request threads (either lock) read consistent values. */
static void set_state(sandbox *sb, sb_state st, int64_t end_at_ms) {
  pthread_mutex_lock(&g_mu);
  sb->state = st;
  sb->end_at_ms = end_at_ms;
  pthread_cond_broadcast(&g_timer_cv);
  pthread_mutex_unlock(&g_mu);
}

sandbox_view sandbox_view_of(sandbox *sb) {
  pthread_mutex_lock(&g_mu);
  sandbox_view v = {sb->state, sb->end_at_ms};
  pthread_mutex_unlock(&g_mu);
  return v;
}

/* ---- meta.json: everything needed to restore the sandbox later ---- */

static void write_meta(sandbox *sb) {
  if (sb->hidden) return;
  char started[E2B_TIME_SIZE], end[E2B_TIME_SIZE];
  sandbox_view v = sandbox_view_of(sb);
  e2b_time_format(sb->started_at_ms, started);
  e2b_time_format(v.end_at_ms, end);
  const char *state = v.state == SB_RUNNING ? "running" : v.state == SB_PAUSED ? "paused" : "killed";
  pthread_mutex_lock(&sb->aux_mu);
  json_t *m = json_pack(
      "{s:s, s:s, s:s, s:s?, s:b, s:s?, s:b, s:b, s:b, s:b, s:i, s:O, s:O, s:O, s:s, s:s, s:s, s:b,"
      " s:b, s:I, s:s?, s:O, s:O, s:s?, s:s?}",
      "sandboxID", sb->id, "templateID", sb->template_id, "clientID", sb->client_id, "alias",
      sb->alias, "secure", sb->secure, "envdAccessToken", sb->envd_token, "allowInternetAccess",
      sb->allow_internet, "autoPause", sb->auto_pause, "autoPauseMemory", sb->auto_pause_memory,
      "autoResume", sb->auto_resume, "timeout", sb->timeout_s, "metadata", sb->metadata, "envVars", sb->env_vars, "network",
      sb->network, "startedAt", started, "endAt", end, "state", state, "pausedMemory",
      sb->paused_memory, "keepTmp", sb->keep_tmp, "startedAtMs", (json_int_t)sb->started_at_ms, "trafficAccessToken", sb->traffic_token,
      "volumeMounts", sb->volume_mounts, "mounts", sb->mounts, "defaultUser", sb->default_user, "defaultWorkdir",
      sb->default_workdir);
  pthread_mutex_unlock(&sb->aux_mu);
  char *text = m ? json_dumps(m, JSON_INDENT(2)) : NULL;
  char *path = xasprintf("%s/meta.json", sb->dir);
  if (!text || write_file_atomic(path, text, strlen(text), 0600) != 0)
    log_msg("sandbox %s: cannot write meta.json", sb->id);
  free(path);
  free(text);
  json_decref(m);
}

/* ---- logs and metrics ---- */

/* fields as E2B's: a map of strings (a number is written out). */
static json_t *string_fields(json_t *fields) {
  const char *key;
  json_t *v;
  void *tmp;
  json_object_foreach_safe(fields, tmp, key, v) {
    if (json_is_string(v)) continue;
    char *text = json_is_integer(v) ? xasprintf("%lld", (long long)json_integer_value(v))
                                    : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    json_object_set_new(fields, key, json_string(text ? text : ""));
    free(text);
  }
  return fields;
}

void sandbox_log(sandbox *sb, int level, json_t *fields, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&sb->aux_mu);
  if (sb->log_n == SB_LOG_CAP) {
    sb_log *old = &sb->logs[sb->log_head];
    free(old->message);
    json_decref(old->fields);
    sb->log_head = (sb->log_head + 1) % SB_LOG_CAP;
    sb->log_n--;
  }
  sb_log *l = &sb->logs[(sb->log_head + sb->log_n++) % SB_LOG_CAP];
  l->ts_ms = now_ms();
  l->level = level;
  l->message = xstrdup(msg);
  l->fields = fields ? string_fields(fields) : json_object();
  pthread_mutex_unlock(&sb->aux_mu);
}

static const char *LEVELS[] = {"debug", "info", "warn", "error"};

json_t *sandbox_logs(sandbox *sb, int64_t from_ms, int64_t to_ms, int backward, int min_level,
                     const char *search, long limit, int v1) {
  json_t *entries = json_array(), *lines = json_array();
  pthread_mutex_lock(&sb->aux_mu);
  for (size_t k = 0; k < sb->log_n && (long)json_array_size(entries) < limit; k++) {
    size_t i = backward ? sb->log_n - 1 - k : k;
    sb_log *l = &sb->logs[(sb->log_head + i) % SB_LOG_CAP];
    if (l->ts_ms < from_ms || (to_ms > 0 && l->ts_ms > to_ms) || l->level < min_level) continue;
    if (search && *search && !strstr(l->message, search)) continue;
    char ts[E2B_TIME_SIZE];
    e2b_time_format(l->ts_ms, ts);
    json_array_append_new(entries, json_pack("{s:s, s:s, s:s, s:O}", "timestamp", ts, "level", LEVELS[l->level],
                                             "message", l->message, "fields", l->fields));
    if (v1) json_array_append_new(lines, json_pack("{s:s, s:s}", "timestamp", ts, "line", l->message));
  }
  pthread_mutex_unlock(&sb->aux_mu);
  if (v1) return json_pack("{s:o, s:o}", "logs", lines, "logEntries", entries);
  json_decref(lines);
  return json_pack("{s:o}", "logs", entries);
}

/* One sample of a running sandbox (read lock held by the caller). */
/* Hands the sandbox to the timer thread for a kill (from threads that a
 * kill would join or that hold the sandbox's lock). First reason wins. */
static void kill_soon(sandbox *sb, const char *reason) {
  pthread_mutex_lock(&g_mu);
  if (!sb->kill_reason) sb->kill_reason = reason;
  sb->end_at_ms = 0;
  pthread_cond_broadcast(&g_timer_cv);
  pthread_mutex_unlock(&g_mu);
}

static int g_disk_mb = SANDBOX_DISK_MB;

int sandbox_disk_mb(void) { return g_disk_mb; }

/* Disk is watched, not enforced by the kernel (see emulator/README.md): a
 * sandbox whose files outgrow diskSizeMB is killed, with its files, so one
 * sandbox cannot fill the host's disk. */
static void watch_disk(sandbox *sb, uint64_t used, uint64_t hidden) {
  if (used <= (uint64_t)g_disk_mb << 20) return;
  pthread_mutex_lock(&g_mu);
  int first = sb->kill_reason == NULL;
  pthread_mutex_unlock(&g_mu);
  if (!first) return;
  if (used == UINT64_MAX)
    log_msg("sandbox %s: its files cannot be measured (a tree deeper than %d levels, or more than %d descriptors "
            "or %d mappings to look at): killing the sandbox", sb->id, TREE_MAX_DEPTH, DISKUSE_MAX_ENTRIES,
            DISKUSE_MAX_MAPS);
  else
    log_msg("sandbox %s: its files use %llu MiB (%llu MiB of it in deleted files still open or mapped), over diskSizeMB %d: "
            "killing the sandbox", sb->id, (unsigned long long)(used >> 20), (unsigned long long)(hidden >> 20),
            g_disk_mb);
  kill_soon(sb, "its files outgrew diskSizeMB");
}

/* What a running sandbox's files take (read lock held): its tree, plus the
 * deleted files its processes still hold (*hidden); UINT64_MAX when it
 * cannot be measured. */
static uint64_t disk_used(sandbox *sb, uint64_t *hidden) {
  struct stat st;
  *hidden = stat(sb->dir, &st) == 0 ? runtime_hidden_disk(&sb->rt, st.st_dev) : 0;
  uint64_t tree = disk_usage(sb->dir);
  if (tree == UINT64_MAX || *hidden == UINT64_MAX) return UINT64_MAX;
  return tree + *hidden;
}

static void sample_locked(sandbox *sb) {
  uint64_t ticks = 0, rss = 0, hidden = 0;
  runtime_sample(&sb->rt, &ticks, &rss);
  uint64_t disk = disk_used(sb, &hidden);
  int64_t now = now_ms();
  pthread_mutex_lock(&sb->aux_mu);
  double pct = 0;
  if (sb->last_cpu_ms > 0 && now > sb->last_cpu_ms && ticks >= sb->last_cpu_ticks) {
    double secs = (double)(ticks - sb->last_cpu_ticks) / (double)sysconf(_SC_CLK_TCK);
    pct = 100.0 * secs / ((double)(now - sb->last_cpu_ms) / 1000.0) / SANDBOX_CPUS;
    if (pct > 100) pct = 100;
  }
  sb->last_cpu_ticks = ticks;
  sb->last_cpu_ms = now;
  if (sb->met_n == SB_METRIC_CAP) {
    sb->met_head = (sb->met_head + 1) % SB_METRIC_CAP;
    sb->met_n--;
  }
  sb_metric *m = &sb->metrics[(sb->met_head + sb->met_n++) % SB_METRIC_CAP];
  m->ts_ms = now;
  m->cpu_pct = pct;
  m->mem_used = rss;
  m->disk_used = disk == UINT64_MAX ? (uint64_t)g_disk_mb << 20 : disk; /* unmeasurable: full */
  pthread_mutex_unlock(&sb->aux_mu);
  watch_disk(sb, disk, hidden);
}

static json_t *metric_json(const sb_metric *m) {
  char ts[E2B_TIME_SIZE];
  e2b_time_format(m->ts_ms, ts);
  return json_pack("{s:s, s:I, s:i, s:f, s:I, s:I, s:I, s:I, s:I}", "timestamp", ts, "timestampUnix",
                   (json_int_t)(m->ts_ms / 1000), "cpuCount", SANDBOX_CPUS, "cpuUsedPct", m->cpu_pct, "memUsed",
                   (json_int_t)m->mem_used, "memTotal", (json_int_t)SANDBOX_MEMORY_MB << 20, "memCache", (json_int_t)0,
                   "diskUsed", (json_int_t)m->disk_used, "diskTotal", (json_int_t)g_disk_mb << 20);
}

json_t *sandbox_metrics(sandbox *sb, int64_t from_s, int64_t to_s, int latest_only) {
  pthread_rwlock_rdlock(&sb->lock);
  pthread_mutex_lock(&sb->aux_mu);
  int empty = sb->met_n == 0;
  pthread_mutex_unlock(&sb->aux_mu);
  if (empty && sb->state == SB_RUNNING) sample_locked(sb);
  pthread_rwlock_unlock(&sb->lock);
  json_t *out = latest_only ? NULL : json_array();
  pthread_mutex_lock(&sb->aux_mu);
  if (latest_only) {
    if (sb->met_n) out = metric_json(&sb->metrics[(sb->met_head + sb->met_n - 1) % SB_METRIC_CAP]);
  } else {
    for (size_t i = 0; i < sb->met_n; i++) {
      sb_metric *m = &sb->metrics[(sb->met_head + i) % SB_METRIC_CAP];
      int64_t t = m->ts_ms / 1000;
      if ((from_s && t < from_s) || (to_s && t > to_s)) continue;
      json_array_append_new(out, metric_json(m));
    }
  }
  pthread_mutex_unlock(&sb->aux_mu);
  return out;
}

json_t *sandbox_network_json(sandbox *sb) {
  pthread_mutex_lock(&sb->aux_mu);
  json_t *n = json_deep_copy(sb->network);
  pthread_mutex_unlock(&sb->aux_mu);
  return n;
}

/* The host's free-space floor: under it, the running sandbox whose files
 * take the most is killed (one a second), whatever its diskSizeMB allows,
 * so sandboxes together never fill the disk under the state directory. A
 * sandbox under FLOOR_MIN_BLAME is never blamed: the disk was filled by
 * something else. */
static uint64_t g_floor_bytes;
#define FLOOR_MIN_BLAME (16ull << 20)

static uint64_t host_free_bytes(void) {
  struct statvfs vs;
  if (statvfs(g_root, &vs) != 0) return UINT64_MAX;
  return (uint64_t)vs.f_bavail * vs.f_frsize;
}

/* The running sandbox (not already being killed) whose files take the most;
 * referenced, *used its size. */
static sandbox *largest_user(uint64_t *used) {
  size_t n;
  sandbox **v = sandbox_list(&n);
  sandbox *worst = NULL;
  *used = 0;
  for (size_t i = 0; i < n; i++) {
    if (pthread_rwlock_tryrdlock(&v[i]->lock) != 0) continue; /* mid-transition */
    pthread_mutex_lock(&g_mu);
    int dying = v[i]->kill_reason != NULL;
    pthread_mutex_unlock(&g_mu);
    uint64_t hidden, u = v[i]->state == SB_RUNNING && !dying ? disk_used(v[i], &hidden) : 0;
    pthread_rwlock_unlock(&v[i]->lock);
    if (u > *used || !worst) {
      worst = v[i];
      *used = u;
    }
  }
  if (worst) sandbox_ref(worst);
  sandbox_list_free(v, n);
  return worst;
}

/* When no sandbox was to blame, the next look (a measurement of every
 * sandbox) waits FLOOR_QUIET_MS: a disk something else keeps full does
 * not cost a walk of every tree each second. */
#define FLOOR_QUIET_MS 5000

static void guard_floor(void) {
  static int64_t warned, quiet_until;
  if (mono_ms() < quiet_until) return;
  uint64_t avail = host_free_bytes();
  if (avail >= g_floor_bytes) return;
  uint64_t used;
  sandbox *sb = largest_user(&used);
  if (!sb || used < FLOOR_MIN_BLAME) quiet_until = mono_ms() + FLOOR_QUIET_MS;
  if (sb && used >= FLOOR_MIN_BLAME) {
    log_msg("sandbox %s: only %llu MiB free on the host's disk (floor %llu MiB) and its files take the most "
            "(%llu MiB): killing the sandbox", sb->id, (unsigned long long)(avail >> 20),
            (unsigned long long)(g_floor_bytes >> 20), used == UINT64_MAX ? 0ull : (unsigned long long)(used >> 20));
    kill_soon(sb, "the host's disk fell below its free-space floor");
  } else if (mono_ms() - warned >= 60000) {
    warned = mono_ms();
    log_msg("only %llu MiB free on the host's disk (floor %llu MiB), and no sandbox takes %llu MiB",
            (unsigned long long)(avail >> 20), (unsigned long long)(g_floor_bytes >> 20), FLOOR_MIN_BLAME >> 20);
  }
  if (sb) sandbox_unref(sb);
}

/* Each second: the free-space floor; each METRIC_INTERVAL_MS: a sample of
 * every running sandbox (metrics, the diskSizeMB watch). */
static void *sampler_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  for (int tick = 1; !g_stopping; tick++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&g_sampler_cv, &g_mu, &ts);
    if (g_stopping) break;
    pthread_mutex_unlock(&g_mu);
    guard_floor();
    if (tick % (METRIC_INTERVAL_MS / 1000) == 0) {
      size_t n;
      sandbox **v = sandbox_list(&n);
      for (size_t i = 0; i < n; i++) {
        if (pthread_rwlock_tryrdlock(&v[i]->lock) != 0) continue; /* mid-transition: next round */
        if (v[i]->state == SB_RUNNING) sample_locked(v[i]);
        pthread_rwlock_unlock(&v[i]->lock);
      }
      sandbox_list_free(v, n);
    }
    pthread_mutex_lock(&g_mu);
  }
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

/* ---- runtime boot / teardown (write lock held) ---- */

static void on_exit_cb(void *ctx, int pid, int status) {
  proc_table *t = ctx;
  proc_table_exited(t, pid, status);
  sandbox *sb = sandbox_get(proc_table_key(t));
  if (!sb) return;
  if (WIFEXITED(status))
    sandbox_log(sb, 1, json_pack("{s:i, s:i}", "pid", pid, "exitCode", WEXITSTATUS(status)),
                "process %d exited with status %d", pid, WEXITSTATUS(status));
  else
    sandbox_log(sb, 1, json_pack("{s:i}", "pid", pid), "process %d was killed by signal %d", pid,
                WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  sandbox_unref(sb);
}

/* The agent died on its own (crash, OOM, external kill): end every stream;
 * envd then answers 502 until the sandbox is killed or times out. */
static void on_broken_cb(void *ctx) {
  proc_table *t = ctx;
  log_msg("sandbox %s: its agent exited unexpectedly", proc_table_key(t));
  proc_table_abort(t);
}

static int signal_by_key(const char *key, int pid, int sig) {
  sandbox *sb = sandbox_get(key);
  if (!sb) return -ENOENT;
  int rc = sandbox_signal(sb, pid, sig);
  sandbox_unref(sb);
  return rc;
}

/* The agent sent something malformed: it is no longer trusted, and only its
 * own sandbox pays. The timer thread kills it (this is the channel's reader
 * thread, which a kill joins). Logged once: the channel is cut after this. */
static void on_violation_cb(void *ctx, const char *why) {
  const char *key = proc_table_key((proc_table *)ctx);
  log_msg("sandbox %s: its agent broke the protocol (%s): killing the sandbox", key, why);
  sandbox *sb = sandbox_get(key);
  if (!sb) return;
  kill_soon(sb, "its agent broke the protocol");
  sandbox_unref(sb);
}

#define MAX_LISTENERS 4
static const sandbox_listener *g_listeners[MAX_LISTENERS];
static size_t g_listener_count;

void sandbox_listen(const sandbox_listener *l) {
  if (g_listener_count < MAX_LISTENERS) g_listeners[g_listener_count++] = l;
}

/* Calls member m of every listener that has one. */
#define TELL(m, ...)                                                                 \
  do {                                                                                \
    for (size_t i_ = 0; i_ < g_listener_count; i_++)                                  \
      if (g_listeners[i_]->m) g_listeners[i_]->m(__VA_ARGS__);                        \
  } while (0)

static void on_watch_cb(void *ctx, json_t *ev) { TELL(watch_event, proc_table_key((proc_table *)ctx), ev); }

/* A connection nobody takes is closed (no listener: no egress). */
static void on_egress_cb(void *ctx, int fd) {
  int taken = 0;
  for (size_t i = 0; i < g_listener_count; i++)
    if (g_listeners[i]->egress_conn && !taken++) g_listeners[i]->egress_conn(proc_table_key((proc_table *)ctx), fd);
  if (!taken) close(fd);
}

static int boot_locked(sandbox *sb) {
  runtime_config cfg = {sb->id, sb->dir, sb->mounts, (uint64_t)SANDBOX_MEMORY_MB << 20,
                        SANDBOX_PIDS_MAX};
  int rc = runtime_start(&sb->rt, &cfg);
  if (rc) return rc;
  sb->procs = proc_table_new(signal_by_key, sb->id);
  static const channel_ops ops = {on_exit_cb, on_broken_cb, on_watch_cb, on_egress_cb,
                                  on_violation_cb};
  sb->chan = channel_open(sb->rt.sock, &ops, sb->procs); /* the channel owns the socket */
  if (!sb->chan) {
    rc = -errno;
    log_msg("sandbox %s: cannot start its agent channel: %s", sb->id, strerror(-rc));
    sb->rt.sock = -1;
    runtime_stop(&sb->rt);
    proc_table_unref(sb->procs);
    sb->procs = NULL;
    return rc;
  }
  return 0;
}

static void teardown_locked(sandbox *sb) {
  channel_expect_close(sb->chan);
  if (sb->rt.pid > 0) runtime_stop(&sb->rt);
  channel_close(sb->chan);
  sb->chan = NULL;
  sb->rt.sock = -1;
  TELL(closed, sb->id); /* its processes are gone: so are their connections and watches */
  if (sb->procs) {
    proc_table_abort(sb->procs);
    proc_table_unref(sb->procs);
    sb->procs = NULL;
  }
}

/* ---- lifecycle ---- */

static int64_t deadline_from(int timeout_s) { return now_ms() + (int64_t)timeout_s * 1000; }

static sandbox *sandbox_alloc(void) {
  sandbox *sb = xcalloc(1, sizeof *sb);
  pthread_rwlockattr_t ra;
  pthread_rwlockattr_init(&ra);
  /* writers (kill/pause) must not starve behind a steady flow of envd calls */
  pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&sb->lock, &ra);
  pthread_rwlockattr_destroy(&ra);
  pthread_mutex_init(&sb->aux_mu, NULL);
  sb->refs = 1;
  sb->rt.sock = -1;
  return sb;
}

sandbox *sandbox_create(const sandbox_params *p, const char **err) {
  sandbox *sb = sandbox_alloc();
  sb->id[0] = 'i';
  char token[41], traffic[41];
  if (e2b_random_alnum(sb->id + 1, 19) != 0 || e2b_random_hex(sb->client_id, 8) != 0 ||
      e2b_random_hex(token, 40) != 0 || e2b_random_hex(traffic, 40) != 0) {
    sandbox_free(sb);
    *err = "random generator unavailable";
    return NULL;
  }
  sb->template_id = xstrdup(p->tpl->template_id);
  sb->alias = p->tpl->alias ? xstrdup(p->tpl->alias) : NULL;
  sb->secure = p->secure;
  sb->envd_token = p->secure ? xstrdup(token) : NULL;
  sb->traffic_token = p->public_traffic ? NULL : xstrdup(traffic);
  sb->allow_internet = p->allow_internet;
  sb->auto_pause = p->auto_pause;
  sb->auto_pause_memory = p->auto_pause_memory;
  sb->auto_resume = p->auto_resume;
  sb->timeout_s = p->timeout_s;
  sb->hidden = p->hidden;
  sb->default_user = p->default_user ? xstrdup(p->default_user) : NULL;
  sb->default_workdir = p->default_workdir ? xstrdup(p->default_workdir) : NULL;
  sb->metadata = p->metadata ? json_deep_copy(p->metadata) : json_object();
  sb->env_vars = p->env_vars ? json_deep_copy(p->env_vars) : json_object();
  sb->network = p->network ? json_deep_copy(p->network) : json_object();
  sb->volume_mounts = json_array();
  sb->mounts = json_deep_copy(p->tpl->ro_mounts);
  for (size_t i = 0; i < json_array_size(p->volume_mounts); i++) {
    json_t *vm = json_array_get(p->volume_mounts, i);
    json_array_append_new(sb->volume_mounts, json_pack("{s:O, s:O}", "name", json_object_get(vm, "name"), "path",
                                                       json_object_get(vm, "path")));
    json_array_append_new(sb->mounts, json_pack("{s:O, s:O, s:b}", "src", json_object_get(vm, "src"), "dst",
                                                json_object_get(vm, "path"), "ro", 0));
  }
  sb->started_at_ms = now_ms();
  sb->end_at_ms = deadline_from(p->timeout_s);
  sb->state = SB_RUNNING;
  sb->dir = xasprintf("%s/%s", g_root, sb->id);
  if (mkdir(sb->dir, 0700) != 0 || chmod(sb->dir, runtime_state_dir_mode()) != 0) {
    *err = "cannot create the sandbox directory";
    sandbox_free(sb);
    return NULL;
  }
  if (store_seed(p->tpl, sb->dir) != 0) {
    rm_rf(sb->dir);
    *err = "cannot copy the template's files";
    sandbox_free(sb);
    return NULL;
  }
  pthread_rwlock_wrlock(&sb->lock);
  int rc = boot_locked(sb);
  pthread_rwlock_unlock(&sb->lock);
  if (rc) {
    log_msg("sandbox %s: cannot start: %s", sb->id, strerror(-rc));
    rm_rf(sb->dir);
    *err = "cannot start the sandbox";
    sandbox_free(sb);
    return NULL;
  }
  if (registry_add(sb) != 0) {
    pthread_rwlock_wrlock(&sb->lock);
    teardown_locked(sb);
    pthread_rwlock_unlock(&sb->lock);
    rm_rf(sb->dir);
    *err = "the server is shutting down";
    sandbox_free(sb);
    return NULL;
  }
  write_meta(sb);
  sandbox_log(sb, 1, json_pack("{s:s}", "templateID", sb->template_id), "sandbox created (timeout %ds)", p->timeout_s);
  if (!sb->hidden) log_msg("sandbox %s: created (template %s, timeout %ds)", sb->id, sb->template_id, p->timeout_s);
  return sb;
}

/* 1 when id could be one of ours: letters and digits, short enough. */
static int valid_id(const char *id) {
  size_t n = strlen(id);
  if (n == 0 || n >= sizeof(((sandbox *)0)->id)) return 0;
  for (const char *p = id; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return 0;
  return 1;
}

/* A meta.json as write_meta writes it, for the sandbox directory id. */
static int meta_valid(json_t *m, const char *id) {
  const char *st = json_string_value(json_object_get(m, "state"));
  const char *sid = json_string_value(json_object_get(m, "sandboxID"));
  json_t *timeout = json_object_get(m, "timeout");
  if (!st || (strcmp(st, "running") != 0 && strcmp(st, "paused") != 0) || !sid || strcmp(sid, id) != 0) return 0;
  if (!json_is_string(json_object_get(m, "templateID")) || !json_is_integer(timeout) ||
      json_integer_value(timeout) < 0 || json_integer_value(timeout) > INT_MAX)
    return 0;
  static const char *objects[] = {"metadata", "envVars", "network"};
  for (int i = 0; i < 3; i++)
    if (json_object_get(m, objects[i]) && !json_is_object(json_object_get(m, objects[i]))) return 0;
  json_t *vm = json_object_get(m, "volumeMounts"), *mounts = json_object_get(m, "mounts");
  return (!vm || json_is_array(vm)) && (!mounts || store_mounts_valid(mounts));
}

/* The string fields the restore copies are strings (meta_valid checks the
 * rest): a crash or a disk error may have damaged any of them. */
static int usable_meta(json_t *m) {
  static const char *strings[] = {"clientID", "alias", "envdAccessToken", "endAt", "trafficAccessToken", "defaultUser",
                                  "defaultWorkdir"};
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
    json_t *v = json_object_get(m, strings[i]);
    if (v && !json_is_null(v) && !json_is_string(v)) return 0;
  }
  return 1;
}

/* A sandbox left on disk by a previous run: it comes back paused (its
 * processes ended with that run; its files are all there). Anything else
 * found there (a removal cut short, a symlink, a malformed meta.json) is
 * removed: a sandbox may have written under these directories. */
static void restore_one(const char *id) {
  char *dir = xasprintf("%s/%s", g_root, id);
  char *mp = xasprintf("%s/meta.json", dir);
  json_t *m = valid_id(id) && store_is_dir(dir) ? store_load_meta(mp) : NULL;
  free(mp);
  const char *st = json_string_value(json_object_get(m, "state"));
  if (!m || !meta_valid(m, id) || !usable_meta(m)) {
    log_msg("sandbox %s: no usable meta.json, removing its leftovers", valid_id(id) ? id : "(invalid name)");
    rm_rf(dir);
    free(dir);
    json_decref(m);
    return;
  }
  sandbox *sb = sandbox_alloc();
  memcpy(sb->id, id, strlen(id) + 1); /* valid_id: it fits */
  snprintf(sb->client_id, sizeof sb->client_id, "%s", json_string_value(json_object_get(m, "clientID")) ?: "");
  sb->template_id = xstrdup(json_string_value(json_object_get(m, "templateID")));
  const char *alias = json_string_value(json_object_get(m, "alias"));
  sb->alias = alias ? xstrdup(alias) : NULL;
  sb->secure = json_is_true(json_object_get(m, "secure"));
  const char *tok = json_string_value(json_object_get(m, "envdAccessToken"));
  sb->envd_token = tok ? xstrdup(tok) : NULL;
  const char *tt = json_string_value(json_object_get(m, "trafficAccessToken"));
  sb->traffic_token = tt ? xstrdup(tt) : NULL;
  const char *du = json_string_value(json_object_get(m, "defaultUser"));
  const char *dw = json_string_value(json_object_get(m, "defaultWorkdir"));
  if (du && (strcmp(du, "root") == 0 || strcmp(du, "user") == 0)) sb->default_user = xstrdup(du);
  if (dw && dw[0] == '/') sb->default_workdir = xstrdup(dw);
  sb->allow_internet = json_is_true(json_object_get(m, "allowInternetAccess"));
  sb->auto_pause = json_is_true(json_object_get(m, "autoPause"));
  sb->auto_pause_memory = json_is_true(json_object_get(m, "autoPauseMemory"));
  sb->auto_resume = json_is_true(json_object_get(m, "autoResume"));
  sb->timeout_s = (int)json_integer_value(json_object_get(m, "timeout"));
#define OBJ_OR(key, dflt) (json_object_get(m, key) ? json_incref(json_object_get(m, key)) : (dflt))
  sb->metadata = OBJ_OR("metadata", json_object());
  sb->env_vars = OBJ_OR("envVars", json_object());
  sb->network = OBJ_OR("network", json_object());
  sb->volume_mounts = OBJ_OR("volumeMounts", json_array());
  sb->mounts = OBJ_OR("mounts", json_array());
#undef OBJ_OR
  sb->started_at_ms = json_integer_value(json_object_get(m, "startedAtMs"));
  int64_t end = 0;
  e2b_time_parse(json_string_value(json_object_get(m, "endAt")) ?: "", &end);
  sb->end_at_ms = end;
  sb->state = SB_PAUSED;
  sb->paused_memory = 0;
  sb->keep_tmp = json_is_true(json_object_get(m, "keepTmp"));
  sb->dir = dir;
  /* st points into m: the log line below needs it after m is released */
  char was[16];
  snprintf(was, sizeof was, "%s", st);
  json_decref(m);
  if (registry_add(sb) != 0) {
    sandbox_free(sb);
    return;
  }
  write_meta(sb);
  sandbox_log(sb, 2, NULL, "e2b-local restarted: the sandbox is paused (its files are kept, its processes ended)");
  log_msg("sandbox %s: restored as paused (was %s)", sb->id, was);
  sandbox_unref(sb);
}

static void restore_all(void) {
  DIR *d = opendir(g_root);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (de->d_name[0] != '.') restore_one(de->d_name);
  if (d) closedir(d);
}

int sandbox_is_running(sandbox *sb) {
  pthread_rwlock_rdlock(&sb->lock); /* waits out a kill in progress */
  int running = sb->state == SB_RUNNING;
  pthread_rwlock_unlock(&sb->lock);
  return running;
}

int sandbox_kill(sandbox *sb) {
  pthread_rwlock_wrlock(&sb->lock);
  if (sb->state == SB_KILLED) {
    pthread_rwlock_unlock(&sb->lock);
    return -ENOENT;
  }
  /* Killed before its processes go: a client whose stream the teardown
   * cuts looks the sandbox up at once, and must find it gone, not running
   * (it would report the cut as a network failure). */
  set_state(sb, SB_KILLED, sb->end_at_ms);
  teardown_locked(sb);
  pthread_rwlock_unlock(&sb->lock);
  registry_remove(sb);
  rm_rf(sb->dir);
  if (!sb->hidden) log_msg("sandbox %s: killed", sb->id);
  return 0;
}

int sandbox_refresh(sandbox *sb, int duration_s) {
  pthread_rwlock_wrlock(&sb->lock);
  int rc = 0;
  int64_t d = deadline_from(duration_s);
  if (sb->state == SB_KILLED)
    rc = -ENOENT;
  else if (d > sb->end_at_ms)
    set_state(sb, sb->state, d);
  pthread_rwlock_unlock(&sb->lock);
  if (!rc) write_meta(sb);
  return rc;
}

json_t *sandbox_snapshot(sandbox *sb, const char *name, const char **err) {
  pthread_rwlock_wrlock(&sb->lock);
  json_t *info = NULL;
  if (sb->state == SB_KILLED) {
    *err = "the sandbox was killed";
  } else {
    /* the sandbox is paused while its files are copied, then goes on */
    int froze = sb->state == SB_RUNNING && runtime_freeze(&sb->rt) == 0;
    info = store_snapshot_create(sb->id, name, sb->dir, sb->mounts, sb->env_vars, err);
    if (froze) runtime_thaw(&sb->rt);
  }
  pthread_rwlock_unlock(&sb->lock);
  if (info)
    sandbox_log(sb, 1, json_pack("{s:O}", "snapshotID", json_object_get(info, "snapshotID")), "snapshot created");
  return info;
}

int sandbox_set_network(sandbox *sb, json_t *network, int allow_internet) {
  pthread_rwlock_wrlock(&sb->lock);
  int rc = sb->state == SB_KILLED ? -ENOENT : 0;
  if (!rc) {
    /* the egress proxy reads the policy under aux_mu for every new connection */
    pthread_mutex_lock(&sb->aux_mu);
    sb->allow_internet = allow_internet;
    json_decref(sb->network);
    sb->network = json_deep_copy(network);
    pthread_mutex_unlock(&sb->aux_mu);
  }
  pthread_rwlock_unlock(&sb->lock);
  if (!rc) {
    TELL(policy_changed, sb->id); /* open relays the new policy denies are closed */
    write_meta(sb);
    sandbox_log(sb, 1, NULL, "network configuration updated (internet access %s)", allow_internet ? "on" : "off");
  }
  return rc;
}

/* sandbox_get, hidden ones included (template setup scripts use the network too). */
static sandbox *get_any(const char *id) {
  sandbox *sb = NULL;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_n && !sb; i++)
    if (strcmp(g_sbs[i]->id, id) == 0) sb = g_sbs[i];
  if (sb) sb->refs++;
  pthread_mutex_unlock(&g_mu);
  return sb;
}

int sandbox_connect_inside(const char *id, const char *host, int port) {
  sandbox *sb = get_any(id);
  if (!sb) return -ESRCH;
  json_t *req = json_pack("{s:i, s:s}", "port", port, "host", host);
  ipc_msg reply;
  int rc = sandbox_call(sb, IPC_CONNECT, req, &reply);
  json_decref(req);
  sandbox_unref(sb);
  if (rc) return rc;
  rc = reply.err ? -reply.err : ipc_take_fd(&reply, 0);
  ipc_msg_clear(&reply);
  return rc == -1 ? -EIO : rc; /* -1: a reply without its descriptor */
}

struct netpolicy *sandbox_egress_policy(const char *id) {
  sandbox *sb = get_any(id);
  if (!sb) return NULL;
  pthread_mutex_lock(&sb->aux_mu);
  netpolicy *p = netpolicy_compile(sb->allow_internet, json_object_get(sb->network, "allowOut"),
                                   json_object_get(sb->network, "denyOut"));
  pthread_mutex_unlock(&sb->aux_mu);
  sandbox_unref(sb);
  return p;
}

size_t sandbox_egress_headers(const char *id, const char *host, struct netrules_set *out) {
  out->h = NULL;
  out->n = 0;
  sandbox *sb = get_any(id);
  if (!sb) return 0;
  pthread_mutex_lock(&sb->aux_mu);
  netrules_lookup(json_object_get(sb->network, "rules"), host, out);
  pthread_mutex_unlock(&sb->aux_mu);
  sandbox_unref(sb);
  return out->n;
}

int sandbox_volume_in_use(const char *name) {
  size_t n;
  sandbox **v = sandbox_list(&n);
  int used = 0;
  for (size_t i = 0; i < n && !used; i++)
    for (size_t k = 0; k < json_array_size(v[i]->volume_mounts); k++) {
      const char *vn = json_string_value(json_object_get(json_array_get(v[i]->volume_mounts, k), "name"));
      if (vn && strcmp(vn, name) == 0) used = 1;
    }
  sandbox_list_free(v, n);
  return used;
}

json_t *sandbox_envd_env(sandbox *sb) {
  json_t *env = json_deep_copy(sb->env_vars);
  if (!env) env = json_object();
  json_object_set_new(env, "E2B_SANDBOX", json_string("true"));
  json_object_set_new(env, "E2B_SANDBOX_ID", json_string(sb->id));
  json_object_set_new(env, "E2B_TEMPLATE_ID", json_string(sb->template_id));
  return env;
}

int sandbox_template_in_use(const char *template_id) {
  size_t n;
  sandbox **v = sandbox_list(&n);
  int used = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v[i]->template_id, template_id) != 0) continue;
    pthread_rwlock_rdlock(&v[i]->lock);
    int state = v[i]->state;
    pthread_rwlock_unlock(&v[i]->lock);
    if (state == SB_RUNNING) used = 1;
    else if (state == SB_PAUSED && !used) used = 2;
  }
  sandbox_list_free(v, n);
  return used;
}

int sandbox_set_timeout(sandbox *sb, int timeout_s) {
  pthread_rwlock_wrlock(&sb->lock);
  int rc = 0;
  if (sb->state == SB_KILLED)
    rc = -ENOENT;
  else
    set_state(sb, sb->state, deadline_from(timeout_s));
  pthread_rwlock_unlock(&sb->lock);
  if (!rc) write_meta(sb);
  return rc;
}

int sandbox_pause(sandbox *sb, int memory) {
  pthread_rwlock_wrlock(&sb->lock);
  int rc = 0;
  if (sb->state != SB_RUNNING) {
    rc = sb->state == SB_PAUSED ? -EALREADY : -ENOENT;
  } else if (memory) {
    rc = runtime_freeze(&sb->rt);
  } else {
    teardown_locked(sb); /* filesystem-only: processes end, files stay */
  }
  if (!rc) {
    sb->paused_memory = memory;
    if (!memory) sb->keep_tmp = 0; /* a filesystem-only pause is a cold boot on E2B too */
    set_state(sb, SB_PAUSED, sb->end_at_ms);
  }
  pthread_rwlock_unlock(&sb->lock);
  if (!rc) {
    write_meta(sb);
    sandbox_log(sb, 1, NULL, "sandbox paused (%s)", memory ? "memory" : "filesystem");
    log_msg("sandbox %s: paused (%s)", sb->id, memory ? "memory" : "filesystem");
  }
  return rc;
}

/* A cold boot starts with an empty /tmp, as E2B's base images wipe it at
 * boot (systemd-tmpfiles' `D /tmp`); the directory itself is made again. */
static void empty_tmp(sandbox *sb) {
  char *tmp = xasprintf("%s/tmp", sb->dir);
  if (rm_rf(tmp) != 0) log_msg("sandbox %s: cannot empty /tmp: %s", sb->id, strerror(errno));
  free(tmp);
}

int sandbox_connect(sandbox *sb, int timeout_s, int force_cold, int only_paused, int *resumed) {
  pthread_rwlock_wrlock(&sb->lock);
  int rc = 0;
  *resumed = 0;
  int64_t deadline = deadline_from(timeout_s);
  if (sb->state == SB_KILLED) {
    rc = -ENOENT;
  } else if (sb->state == SB_RUNNING) {
    if (only_paused)
      rc = -EALREADY;
    else if (deadline > sb->end_at_ms)
      set_state(sb, SB_RUNNING, deadline); /* connect never shortens */
  } else {
    if (sb->paused_memory && !force_cold) {
      rc = runtime_thaw(&sb->rt);
    } else {
      if (sb->paused_memory) teardown_locked(sb);
      if (!sb->keep_tmp) empty_tmp(sb);
      sb->keep_tmp = 0;
      rc = boot_locked(sb); /* cold boot: new processes, new boot id, empty /tmp */
    }
    if (!rc) {
      sb->paused_memory = 0;
      set_state(sb, SB_RUNNING, deadline);
      *resumed = 1;
    }
  }
  pthread_rwlock_unlock(&sb->lock);
  if (!rc) write_meta(sb);
  if (*resumed) {
    sandbox_log(sb, 1, NULL, "sandbox resumed");
    log_msg("sandbox %s: resumed", sb->id);
  }
  return rc;
}

int sandbox_wakeable(sandbox *sb) {
  /* only memory snapshots can be auto-resumed (filesystem ones need connect) */
  pthread_rwlock_rdlock(&sb->lock);
  int ok = sb->state == SB_RUNNING || (sb->state == SB_PAUSED && sb->auto_resume && sb->paused_memory);
  pthread_rwlock_unlock(&sb->lock);
  return ok;
}

int sandbox_wake(sandbox *sb) {
  sandbox_view v = sandbox_view_of(sb);
  if (v.state == SB_RUNNING) return 1;
  if (!sandbox_wakeable(sb)) return 0;
  int resumed = 0;
  int rc = sandbox_connect(sb, sb->timeout_s, 0, 0, &resumed);
  return rc == 0;
}

/* ---- envd side ---- */

/* The current boot's channel (referenced) when the sandbox runs, else
 * NULL; *procs (when asked) gets that boot's process table, referenced. */
static channel *running_channel(sandbox *sb, proc_table **procs) {
  pthread_rwlock_rdlock(&sb->lock);
  channel *c = sb->state == SB_RUNNING ? sb->chan : NULL;
  if (c) channel_ref(c);
  if (c && procs) {
    *procs = sb->procs;
    proc_table_ref(*procs);
  }
  pthread_rwlock_unlock(&sb->lock);
  return c;
}

/* No lock is held across the wait: the agent is the sandbox's, and a kill,
 * a pause or the deadline timer must never wait for it. A kill fails the
 * call (-EPIPE); the call's deadline bounds it otherwise. */
int sandbox_call(sandbox *sb, uint32_t type, json_t *req, ipc_msg *reply) {
  memset(reply, 0, sizeof *reply);
  channel *c = running_channel(sb, NULL);
  int rc = c ? channel_call(c, type, req, reply) : -ESRCH;
  channel_unref(c);
  return rc == -EPIPE ? -ESRCH : rc;
}

/* A spawn reply carries a positive pid, the output (relay socket or pty)
 * and, when asked for, stdin's pipe. */
static int spawn_reply_ok(json_t *req, const ipc_msg *reply) {
  json_t *pid = json_object_get(reply->body, "pid");
  int want = !json_object_get(req, "pty") && json_is_true(json_object_get(req, "stdin")) ? 2 : 1;
  return json_is_integer(pid) && json_integer_value(pid) > 0 && json_integer_value(pid) <= INT32_MAX &&
         reply->nfds == want;
}

/* Descriptors a spawn must leave free. A spawn's reply brings one or two
 * (its output, its stdin), and a reply whose descriptors cannot be
 * installed arrives truncated, which reads as a broken protocol and costs the whole sandbox;
 * connections, file transfers and other sandboxes' replies need some too. So
 * a spawn is refused (EMFILE) while fewer are free. */
#define SPAWN_FD_RESERVE 1024

static int spawn_fds_ok(void) {
  if (fds_available(SPAWN_FD_RESERVE)) return 1;
  static int64_t logged;
  int64_t now = mono_ms(), then = __atomic_load_n(&logged, __ATOMIC_RELAXED);
  if (now - then >= 1000 && __atomic_compare_exchange_n(&logged, &then, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    log_msg("fewer than %d descriptors left: refusing new processes", SPAWN_FD_RESERVE);
  return 0;
}

/* Registers a started process in t, the table of the boot that started it,
 * unless that boot ended meanwhile (its processes are gone: -ESRCH). */
static int spawn_register(sandbox *sb, proc_table *t, json_t *req, json_t *config, const char *tag,
                          int64_t deadline_ms, spawn_result *out, ipc_msg *reply) {
  int is_pty = json_object_get(req, "pty") != NULL;
  int with_stdin = json_is_true(json_object_get(req, "stdin"));
  int pid = (int)json_integer_value(json_object_get(reply->body, "pid"));
  proc_spec spec = {.pid = pid, .config = config, .tag = tag, .out_fd = -1, .in_fd = -1, .pty_fd = -1,
                    .deadline_ms = deadline_ms};
  pthread_rwlock_rdlock(&sb->lock);
  if (sb->procs != t) { /* killed or rebooted while the agent answered */
    pthread_rwlock_unlock(&sb->lock);
    ipc_msg_clear(reply);
    return -ESRCH;
  }
  if (is_pty) {
    spec.pty_fd = ipc_take_fd(reply, 0);
  } else {
    spec.out_fd = ipc_take_fd(reply, 0);
    if (with_stdin) spec.in_fd = ipc_take_fd(reply, 1);
  }
  /* Registered under the read lock: a kill cannot slip in between. */
  out->p = proc_register(t, &spec, &out->sub);
  sandbox_log(sb, 1, json_pack("{s:i, s:O}", "pid", pid, "cmd", json_object_get(config, "cmd")),
              "process %d started", pid);
  pthread_rwlock_unlock(&sb->lock);
  return 0;
}

int sandbox_spawn(sandbox *sb, json_t *req, json_t *config, const char *tag, int64_t deadline_ms,
                  spawn_result *out, ipc_msg *reply) {
  memset(out, 0, sizeof *out);
  memset(reply, 0, sizeof *reply);
  if (!spawn_fds_ok()) return -EMFILE;
  proc_table *t = NULL;
  channel *c = running_channel(sb, &t);
  int rc = c ? channel_call(c, IPC_SPAWN, req, reply) : -ESRCH;
  channel_unref(c);
  if (rc == 0 && reply->err == 0 && !spawn_reply_ok(req, reply)) {
    ipc_msg_clear(reply);
    rc = -EPROTO;
  }
  if (rc == 0 && reply->err == 0) rc = spawn_register(sb, t, req, config, tag, deadline_ms, out, reply);
  if (t) proc_table_unref(t);
  if (out->p && proc_unserved(out->p)) sandbox_signal(sb, proc_pid(out->p), SIGKILL);
  return rc == -EPIPE ? -ESRCH : rc;
}

int sandbox_signal(sandbox *sb, int pid, int sig) {
  json_t *req = json_pack("{s:i, s:i}", "pid", pid, "sig", sig);
  ipc_msg reply;
  int rc = sandbox_call(sb, IPC_SIGNAL, req, &reply);
  json_decref(req);
  if (rc == 0) {
    rc = -reply.err;
    ipc_msg_clear(&reply);
  }
  return rc;
}

proc_table *sandbox_procs(sandbox *sb) {
  pthread_rwlock_rdlock(&sb->lock);
  proc_table *t = sb->state == SB_RUNNING ? sb->procs : NULL;
  if (t) proc_table_ref(t);
  pthread_rwlock_unlock(&sb->lock);
  return t;
}

/* ---- deadlines ---- */

static void expire(sandbox *sb) {
  pthread_mutex_lock(&g_mu);
  const char *reason = sb->kill_reason;
  pthread_mutex_unlock(&g_mu);
  if (reason) {
    sandbox_log(sb, 2, NULL, "killed: %s", reason);
    sandbox_kill(sb);
    return;
  }
  sandbox_log(sb, 1, NULL, "timeout reached: %s", sb->auto_pause ? "pausing" : "killing");
  if (sb->auto_pause) {
    log_msg("sandbox %s: timeout reached, pausing", sb->id);
    sandbox_pause(sb, sb->auto_pause_memory);
  } else {
    log_msg("sandbox %s: timeout reached, killing", sb->id);
    sandbox_kill(sb);
  }
}

static void *expiry_main(void *arg) {
  sandbox *sb = arg;
  /* re-checked: a setTimeout may have just moved it */
  sandbox_view v = sandbox_view_of(sb);
  if (v.state == SB_RUNNING && v.end_at_ms <= now_ms()) expire(sb);
  pthread_mutex_lock(&g_mu);
  sb->expiring = 0;
  if (--g_expiries == 0) pthread_cond_broadcast(&g_expiries_cv);
  pthread_cond_broadcast(&g_timer_cv); /* a deadline set meanwhile is looked at again */
  pthread_mutex_unlock(&g_mu);
  sandbox_unref(sb);
  return NULL;
}

/* Each due sandbox is killed or paused on a thread of its own: a kill that
 * takes its time (a big tree to remove, a sandbox slow to die) never delays
 * another sandbox's deadline. Inline when no thread can be made. */
static void start_expiry(sandbox *sb) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t t;
  int rc = pthread_create(&t, &attr, expiry_main, sb);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    pthread_mutex_unlock(&g_mu);
    expiry_main(sb);
    pthread_mutex_lock(&g_mu);
  }
}

static void *timer_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  while (!g_stopping) {
    int64_t now = now_ms(), next = INT64_MAX;
    sandbox *due = NULL;
    for (size_t i = 0; i < g_n && !due; i++) {
      sandbox *sb = g_sbs[i];
      if (sb->state != SB_RUNNING || sb->expiring) continue;
      if (sb->end_at_ms <= now) due = sb;
      else if (sb->end_at_ms < next) next = sb->end_at_ms;
    }
    if (due && g_expiries >= MAX_EXPIRIES) { /* each one that ends wakes the timer */
      pthread_cond_wait(&g_timer_cv, &g_mu);
      continue;
    }
    if (due) {
      due->expiring = 1;
      due->refs++;
      g_expiries++;
      start_expiry(due); /* may drop g_mu for a while: the list is looked at again */
      continue;
    }
    if (next == INT64_MAX) next = now + 3600 * 1000;
    struct timespec ts = {.tv_sec = next / 1000, .tv_nsec = (long)(next % 1000) * 1000000};
    pthread_cond_timedwait(&g_timer_cv, &g_mu, &ts);
  }
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

/* Marks dir as the top of unrelated trees (chattr +T): ext4's allocator
 * then starts each sandbox's directory in a block group of its own, not
 * beside its siblings, where every file a sandbox creates (a kept command
 * makes three) would search past the inodes of deleted sandboxes. Measured
 * in bench/README.md. A hint: filesystems without the flag ignore it. */
static void mark_top_of_trees(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  int flags = 0;
  if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && !(flags & FS_TOPDIR_FL)) {
    flags |= FS_TOPDIR_FL;
    (void)ioctl(fd, FS_IOC_SETFLAGS, &flags);
  }
  close(fd);
}

/* E2B_LOCAL_DISK_FLOOR_MB, else 2% of the state directory's filesystem,
 * at most 1 GiB. */
static void set_floor(const char *state_dir) {
  const char *env = getenv("E2B_LOCAL_DISK_FLOOR_MB");
  long mb = env ? strtol(env, NULL, 10) : -1;
  struct statvfs vs;
  if (mb >= 0 && mb <= (1L << 30)) {
    g_floor_bytes = (uint64_t)mb << 20;
  } else {
    uint64_t size = statvfs(state_dir, &vs) == 0 ? (uint64_t)vs.f_blocks * vs.f_frsize : 0;
    g_floor_bytes = size / 50 < (1ull << 30) ? size / 50 : 1ull << 30;
  }
}

int sandbox_registry_init(const char *state_dir) {
  const char *disk = getenv("E2B_LOCAL_DISK_MB");
  long mb = disk ? strtol(disk, NULL, 10) : 0;
  if (mb >= 1 && mb <= (1L << 30)) g_disk_mb = (int)mb;
  g_root = xasprintf("%s/sandboxes", state_dir);
  set_floor(state_dir);
  if (mkdir_p(g_root, 0700) != 0) return -errno;
  mark_top_of_trees(g_root);
  if (runtime_state_dir_mode() != 0700 &&
      (chmod(state_dir, runtime_state_dir_mode()) != 0 || chmod(g_root, runtime_state_dir_mode()) != 0))
    return -errno;
  restore_all();
  if (pthread_create(&g_timer, NULL, timer_main, NULL) != 0) return -EAGAIN;
  g_timer_started = 1;
  if (pthread_create(&g_sampler, NULL, sampler_main, NULL) != 0) return -EAGAIN;
  g_sampler_started = 1;
  return 0;
}

/* Ends the processes, keeps the files: the next run restores it paused. */
static void stop_keep(sandbox *sb) {
  pthread_rwlock_wrlock(&sb->lock);
  if (sb->state != SB_KILLED) {
    /* running or memory-paused: on E2B it would come back warm */
    sb->keep_tmp = sb->keep_tmp || sb->state == SB_RUNNING || sb->paused_memory;
    teardown_locked(sb);
    sb->paused_memory = 0;
    set_state(sb, SB_PAUSED, sb->end_at_ms);
  }
  pthread_rwlock_unlock(&sb->lock);
  write_meta(sb);
  registry_remove(sb);
}

void sandbox_registry_shutdown(int keep) {
  pthread_mutex_lock(&g_mu);
  g_stopping = 1;
  pthread_cond_broadcast(&g_timer_cv);
  pthread_cond_broadcast(&g_sampler_cv);
  pthread_mutex_unlock(&g_mu);
  if (g_timer_started) pthread_join(g_timer, NULL);
  if (g_sampler_started) pthread_join(g_sampler, NULL);
  pthread_mutex_lock(&g_mu);
  while (g_expiries > 0) pthread_cond_wait(&g_expiries_cv, &g_mu); /* the kills they started end */
  pthread_mutex_unlock(&g_mu);
  g_timer_started = g_sampler_started = 0;
  for (;;) {
    /* hidden ones too (template builds): never kept */
    pthread_mutex_lock(&g_mu);
    size_t n = g_n;
    sandbox **v = xcalloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++) {
      v[i] = g_sbs[i];
      v[i]->refs++;
    }
    pthread_mutex_unlock(&g_mu);
    for (size_t i = 0; i < n; i++) {
      if (keep && !v[i]->hidden)
        stop_keep(v[i]);
      else
        sandbox_kill(v[i]);
    }
    sandbox_list_free(v, n);
    if (n == 0) break;
  }
  free(g_sbs);
  g_sbs = NULL;
  g_n = g_cap = 0;
  if (!keep) rmdir(g_root);
  free(g_root);
  g_root = NULL;
}
