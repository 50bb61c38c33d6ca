/* sandbox.c — registry, lifecycle transitions, deadlines and meta.json. */
#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "log.h"
#include "util.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_timer_cv = PTHREAD_COND_INITIALIZER;
static sandbox **g_sbs;
static size_t g_n, g_cap;
static char *g_root; /* state_dir/sandboxes */
static pthread_t g_timer;
static int g_stopping, g_timer_started;

/* ---- registry ---- */

void sandbox_ref(sandbox *sb) {
  pthread_mutex_lock(&g_mu);
  sb->refs++;
  pthread_mutex_unlock(&g_mu);
}

static void sandbox_free(sandbox *sb) {
  free(sb->template_id);
  free(sb->alias);
  free(sb->envd_token);
  json_decref(sb->metadata);
  json_decref(sb->env_vars);
  json_decref(sb->network);
  free(sb->dir);
  pthread_rwlock_destroy(&sb->lock);
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
    if (strcmp(g_sbs[i]->id, id) == 0) {
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
  for (size_t i = 0; i < g_n; i++) {
    v[i] = g_sbs[i];
    v[i]->refs++;
  }
  *n = g_n;
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
  char started[E2B_TIME_SIZE], end[E2B_TIME_SIZE];
  sandbox_view v = sandbox_view_of(sb);
  e2b_time_format(sb->started_at_ms, started);
  e2b_time_format(v.end_at_ms, end);
  const char *state = v.state == SB_RUNNING ? "running" : v.state == SB_PAUSED ? "paused" : "killed";
  json_t *m = json_pack(
      "{s:s, s:s, s:s, s:s?, s:b, s:s?, s:b, s:b, s:b, s:b, s:i, s:O, s:O, s:O, s:s, s:s, s:s, s:b}",
      "sandboxID", sb->id, "templateID", sb->template_id, "clientID", sb->client_id, "alias",
      sb->alias, "secure", sb->secure, "envdAccessToken", sb->envd_token, "allowInternetAccess",
      sb->allow_internet, "autoPause", sb->auto_pause, "autoPauseMemory", sb->auto_pause_memory,
      "autoResume", sb->auto_resume, "timeout", sb->timeout_s, "metadata", sb->metadata, "envVars", sb->env_vars, "network",
      sb->network, "startedAt", started, "endAt", end, "state", state, "pausedMemory",
      sb->paused_memory);
  char *text = m ? json_dumps(m, JSON_INDENT(2)) : NULL;
  char *path = xasprintf("%s/meta.json", sb->dir);
  if (!text || write_file_atomic(path, text, strlen(text), 0600) != 0)
    log_msg("sandbox %s: cannot write meta.json", sb->id);
  free(path);
  free(text);
  json_decref(m);
}

/* ---- runtime boot / teardown (write lock held) ---- */

static void on_exit_cb(void *ctx, int pid, int status) {
  proc_table_exited((proc_table *)ctx, pid, status);
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

static int boot_locked(sandbox *sb) {
  runtime_config cfg = {sb->id, sb->dir, sb->allow_internet};
  int rc = runtime_start(&sb->rt, &cfg);
  if (rc) return rc;
  sb->procs = proc_table_new(signal_by_key, sb->id);
  static const channel_ops ops = {on_exit_cb, on_broken_cb};
  sb->chan = channel_open(sb->rt.sock, &ops, sb->procs); /* the channel owns the socket */
  return 0;
}

static void teardown_locked(sandbox *sb) {
  channel_expect_close(sb->chan);
  if (sb->rt.pid > 0) runtime_stop(&sb->rt);
  channel_close(sb->chan);
  sb->chan = NULL;
  sb->rt.sock = -1;
  if (sb->procs) {
    proc_table_abort(sb->procs);
    proc_table_unref(sb->procs);
    sb->procs = NULL;
  }
}

/* ---- lifecycle ---- */

static int64_t deadline_from(int timeout_s) { return now_ms() + (int64_t)timeout_s * 1000; }

sandbox *sandbox_create(const sandbox_params *p, const char **err) {
  sandbox *sb = xcalloc(1, sizeof *sb);
  sb->id[0] = 'i';
  char token[41];
  if (e2b_random_alnum(sb->id + 1, 19) != 0 || e2b_random_hex(sb->client_id, 8) != 0 ||
      e2b_random_hex(token, 40) != 0) {
    free(sb);
    *err = "random generator unavailable";
    return NULL;
  }
  pthread_rwlockattr_t ra;
  pthread_rwlockattr_init(&ra);
  /* writers (kill/pause) must not starve behind a steady flow of envd calls */
  pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&sb->lock, &ra);
  pthread_rwlockattr_destroy(&ra);
  sb->refs = 1;
  sb->template_id = xstrdup(p->template_id);
  sb->alias = xstrdup(p->template_id);
  sb->secure = p->secure;
  sb->envd_token = p->secure ? xstrdup(token) : NULL;
  sb->allow_internet = p->allow_internet;
  sb->auto_pause = p->auto_pause;
  sb->auto_pause_memory = p->auto_pause_memory;
  sb->auto_resume = p->auto_resume;
  sb->timeout_s = p->timeout_s;
  sb->metadata = p->metadata ? json_deep_copy(p->metadata) : json_object();
  sb->env_vars = p->env_vars ? json_deep_copy(p->env_vars) : json_object();
  sb->network = p->network ? json_deep_copy(p->network) : json_object();
  sb->started_at_ms = now_ms();
  sb->end_at_ms = deadline_from(p->timeout_s);
  sb->state = SB_RUNNING;
  sb->dir = xasprintf("%s/%s", g_root, sb->id);
  sb->rt.sock = -1;
  if (mkdir(sb->dir, 0700) != 0 || chmod(sb->dir, runtime_state_dir_mode()) != 0) {
    *err = "cannot create the sandbox directory";
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
  log_msg("sandbox %s: created (template %s, timeout %ds)", sb->id, sb->template_id, p->timeout_s);
  return sb;
}

int sandbox_kill(sandbox *sb) {
  pthread_rwlock_wrlock(&sb->lock);
  if (sb->state == SB_KILLED) {
    pthread_rwlock_unlock(&sb->lock);
    return -ENOENT;
  }
  teardown_locked(sb);
  set_state(sb, SB_KILLED, sb->end_at_ms);
  pthread_rwlock_unlock(&sb->lock);
  registry_remove(sb);
  rm_rf(sb->dir);
  log_msg("sandbox %s: killed", sb->id);
  return 0;
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
    set_state(sb, SB_PAUSED, sb->end_at_ms);
  }
  pthread_rwlock_unlock(&sb->lock);
  if (!rc) {
    write_meta(sb);
    log_msg("sandbox %s: paused (%s)", sb->id, memory ? "memory" : "filesystem");
  }
  return rc;
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
      rc = boot_locked(sb); /* cold boot: new processes, new boot id */
    }
    if (!rc) {
      sb->paused_memory = 0;
      set_state(sb, SB_RUNNING, deadline);
      *resumed = 1;
    }
  }
  pthread_rwlock_unlock(&sb->lock);
  if (!rc) write_meta(sb);
  if (*resumed) log_msg("sandbox %s: resumed", sb->id);
  return rc;
}

int sandbox_wake(sandbox *sb) {
  sandbox_view v = sandbox_view_of(sb);
  if (v.state == SB_RUNNING) return 1;
  /* only memory snapshots can be auto-resumed (filesystem ones need connect) */
  pthread_rwlock_rdlock(&sb->lock);
  int eligible = sb->state == SB_PAUSED && sb->auto_resume && sb->paused_memory;
  pthread_rwlock_unlock(&sb->lock);
  if (!eligible) return 0;
  int resumed = 0;
  int rc = sandbox_connect(sb, sb->timeout_s, 0, 0, &resumed);
  return rc == 0;
}

/* ---- envd side ---- */

int sandbox_call(sandbox *sb, uint32_t type, json_t *req, ipc_msg *reply) {
  pthread_rwlock_rdlock(&sb->lock);
  int rc = sb->state == SB_RUNNING && sb->chan ? channel_call(sb->chan, type, req, reply) : -ESRCH;
  pthread_rwlock_unlock(&sb->lock);
  return rc == -EPIPE ? -ESRCH : rc;
}

int sandbox_spawn(sandbox *sb, json_t *req, json_t *config, const char *tag, int64_t deadline_ms,
                  spawn_result *out, ipc_msg *reply) {
  memset(out, 0, sizeof *out);
  pthread_rwlock_rdlock(&sb->lock);
  int rc = sb->state == SB_RUNNING && sb->chan ? channel_call(sb->chan, IPC_SPAWN, req, reply)
                                               : -ESRCH;
  if (rc == 0 && reply->err == 0) {
    int is_pty = json_object_get(req, "pty") != NULL;
    int with_stdin = json_is_true(json_object_get(req, "stdin"));
    proc_spec spec = {.pid = (int)json_integer_value(json_object_get(reply->body, "pid")),
                      .config = config,
                      .tag = tag,
                      .out_fd = -1,
                      .err_fd = -1,
                      .in_fd = -1,
                      .pty_fd = -1,
                      .deadline_ms = deadline_ms};
    if (is_pty) {
      spec.pty_fd = ipc_take_fd(reply, 0);
    } else {
      spec.out_fd = ipc_take_fd(reply, 0);
      spec.err_fd = ipc_take_fd(reply, 1);
      if (with_stdin) spec.in_fd = ipc_take_fd(reply, 2);
    }
    /* Registered under the read lock: a kill cannot slip in between. */
    out->p = proc_register(sb->procs, &spec, &out->sub);
  }
  pthread_rwlock_unlock(&sb->lock);
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
  if (sb->auto_pause) {
    log_msg("sandbox %s: timeout reached, pausing", sb->id);
    sandbox_pause(sb, sb->auto_pause_memory);
  } else {
    log_msg("sandbox %s: timeout reached, killing", sb->id);
    sandbox_kill(sb);
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
      if (sb->state != SB_RUNNING) continue;
      if (sb->end_at_ms <= now) {
        due = sb;
        due->refs++;
      } else if (sb->end_at_ms < next) {
        next = sb->end_at_ms;
      }
    }
    if (due) {
      pthread_mutex_unlock(&g_mu);
      /* re-checked under the sandbox lock: a setTimeout may have just moved it */
      sandbox_view v = sandbox_view_of(due);
      if (v.state == SB_RUNNING && v.end_at_ms <= now_ms()) expire(due);
      sandbox_unref(due);
      pthread_mutex_lock(&g_mu);
      continue;
    }
    struct timespec ts;
    if (next == INT64_MAX) next = now + 3600 * 1000;
    ts.tv_sec = next / 1000;
    ts.tv_nsec = (long)(next % 1000) * 1000000;
    pthread_cond_timedwait(&g_timer_cv, &g_mu, &ts);
  }
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

int sandbox_registry_init(const char *state_dir) {
  g_root = xasprintf("%s/sandboxes", state_dir);
  if (mkdir_p(g_root, 0700) != 0) return -errno;
  if (runtime_state_dir_mode() != 0700 &&
      (chmod(state_dir, runtime_state_dir_mode()) != 0 || chmod(g_root, runtime_state_dir_mode()) != 0))
    return -errno;
  if (pthread_create(&g_timer, NULL, timer_main, NULL) != 0) return -EAGAIN;
  g_timer_started = 1;
  return 0;
}

void sandbox_registry_shutdown(void) {
  pthread_mutex_lock(&g_mu);
  g_stopping = 1;
  pthread_cond_broadcast(&g_timer_cv);
  pthread_mutex_unlock(&g_mu);
  if (g_timer_started) pthread_join(g_timer, NULL);
  g_timer_started = 0;
  for (;;) {
    size_t n;
    sandbox **v = sandbox_list(&n);
    for (size_t i = 0; i < n; i++) sandbox_kill(v[i]);
    sandbox_list_free(v, n);
    if (n == 0) break;
  }
  free(g_sbs);
  g_sbs = NULL;
  g_n = g_cap = 0;
  rmdir(g_root);
  free(g_root);
  g_root = NULL;
}
