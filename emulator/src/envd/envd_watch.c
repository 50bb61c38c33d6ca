/* envd_watch.c — filesystem.Filesystem WatchDir (server stream) and the
 * polling watcher RPCs (CreateWatcher, GetWatcherEvents, RemoveWatcher).
 * The agent watches with inotify inside the sandbox; its events arrive on
 * the channel and are queued (bounded) per watcher here. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "codec.h"
#include "connect_rpc.h"
#include "envd_watch.h"
#include "envdver.h"
#include "pjson.h"
#include "sandbox.h"
#include "util.h"

/* Events kept per watcher. One more, or inotify's own overflow in the
 * sandbox, is an overflow: events were lost, so the watcher ends with the
 * error envd ends one with on fsnotify's overflow (its WatchDir stream ends
 * with it after the events before; its GetWatcherEvents answers it), never
 * with a silent gap. envd's polling list has no bound: here it is this. */
#define WATCH_QUEUE_MAX 10000
#define WATCH_OVERFLOW "watcher error: fsnotify: queue or buffer overflow"

typedef struct watcher {
  struct watcher *next;
  char id[40];  /* watcherId of the polling API */
  char key[32]; /* sandbox id */
  uint32_t agent_id;
  json_t *queue; /* FilesystemEvent[] */
  int closed, refs, efd;
  int overflowed; /* events were lost (WATCH_OVERFLOW) */
  int life; /* the agent's watch lives while this pipe end is open (agent_watch.c) */
} watcher;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static watcher *g_list;
/* Events that reached us between the agent's reply to IPC_WATCH and the
 * watcher's registration (the reply wakes the caller; the channel reader
 * goes on): kept briefly, claimed at registration. */
#define ORPHANS_MAX 256
static json_t *g_orphans; /* [{key, ev}] */

static void wake(watcher *w) {
  uint64_t one = 1;
  if (write(w->efd, &one, sizeof one) < 0) {
    /* saturated: the reader wakes anyway */
  }
}

/* The agent's watch ends once the pipe it watches is closed. */
static void end_agent_pipe_locked(watcher *w) {
  if (w->life >= 0) close(w->life);
  w->life = -1;
}

static void queue_locked(watcher *w, json_t *ev) {
  if (w->overflowed) return;
  if (json_is_true(json_object_get(ev, "overflow")) || json_array_size(w->queue) >= WATCH_QUEUE_MAX) {
    w->overflowed = 1;
    end_agent_pipe_locked(w);
    wake(w);
    return;
  }
  json_t *fe = json_pack("{s:O, s:O}", "name", json_object_get(ev, "name"), "type", json_object_get(ev, "type"));
  if (json_object_get(ev, "entry")) json_object_set(fe, "entry", json_object_get(ev, "entry"));
  json_array_append_new(w->queue, fe);
  wake(w);
}

void watch_deliver(const char *key, json_t *ev) {
  uint32_t id = (uint32_t)json_integer_value(json_object_get(ev, "id"));
  int found = 0;
  pthread_mutex_lock(&g_mu);
  for (watcher *w = g_list; w; w = w->next) {
    if (w->agent_id != id || strcmp(w->key, key) != 0) continue;
    found = 1;
    if (!w->closed) queue_locked(w, ev);
  }
  if (!found) {
    if (!g_orphans) g_orphans = json_array();
    if (json_array_size(g_orphans) >= ORPHANS_MAX) json_array_remove(g_orphans, 0);
    json_array_append_new(g_orphans, json_pack("{s:s, s:O}", "key", key, "ev", ev));
  }
  pthread_mutex_unlock(&g_mu);
}

void watch_close_sandbox(const char *key) {
  pthread_mutex_lock(&g_mu);
  for (watcher *w = g_list; w; w = w->next)
    if (strcmp(w->key, key) == 0) {
      w->closed = 1;
      wake(w);
    }
  pthread_mutex_unlock(&g_mu);
}

static void unref_locked(watcher *w) {
  if (--w->refs > 0) return;
  for (watcher **pp = &g_list; *pp; pp = &(*pp)->next)
    if (*pp == w) {
      *pp = w->next;
      break;
    }
  json_decref(w->queue);
  close(w->efd);
  if (w->life >= 0) close(w->life);
  free(w);
}

/* Ends the agent's watch now: its next pass sees the pipe closed, however
 * many requests wait on the channel. Called with g_mu held. */
static void end_agent_watch_locked(watcher *w) {
  w->closed = 1;
  end_agent_pipe_locked(w);
}

/* Starts an agent watch; the watcher is registered before any event. */
static watcher *start_watch(rpc_call *c, rpc_err *e) {
  const char *p = NULL;
  int recursive = 0, entry = 0;
  if (pj_string(pj_get(c->msg, "path", NULL), "", &p) || pj_bool(pj_get(c->msg, "recursive", NULL), 0, &recursive) ||
      pj_bool(pj_get(c->msg, "includeEntry", "include_entry"), 0, &entry)) {
    rpc_fail(e, "invalid_argument", "invalid watch request");
    return NULL;
  }
  /* An older envd's request has no such fields: it ignores them. */
  if (envd_below(ENVD_SINCE_RECURSIVE_WATCH)) recursive = 0;
  if (envd_below(ENVD_SINCE_WATCH_ENTRY)) entry = 0;
  char *path = rpc_resolve_path(c->user, p);
  json_t *req = json_pack("{s:s, s:b, s:b, s:i, s:i}", "path", path, "recursive", recursive, "entry", entry,
                          "uid", c->user->uid, "gid", c->user->gid);
  ipc_msg reply;
  int rc = sandbox_call(c->sb, IPC_WATCH, req, &reply);
  json_decref(req);
  pthread_mutex_lock(&g_mu);
  watcher *w = NULL;
  if (rc) {
    rpc_fail_errno(e, -rc, path);
  } else if (reply.err) {
    /* envd's words, Go's formatting of its nil error included */
    if (reply.err == ENOTDIR)
      rpc_fail(e, "invalid_argument", "path %s not a directory: %%!w(<nil>)", path);
    else if (reply.err == ENOENT)
      rpc_fail(e, "not_found", "path %s not found: stat %s: no such file or directory", path, path);
    else
      rpc_fail_errno(e, reply.err, path);
    ipc_msg_clear(&reply);
  } else if (reply.nfds < 1) {
    rpc_fail(e, "internal", "the sandbox's watch came without its pipe");
    ipc_msg_clear(&reply);
  } else {
    w = xcalloc(1, sizeof *w);
    w->life = ipc_take_fd(&reply, 0);
    snprintf(w->key, sizeof w->key, "%s", c->sb->id);
    w->agent_id = (uint32_t)json_integer_value(json_object_get(reply.body, "id"));
    char uuid[E2B_UUID_SIZE];
    e2b_uuid4(uuid);
    snprintf(w->id, sizeof w->id, "%s", uuid);
    w->queue = json_array();
    w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    w->refs = 1;
    w->next = g_list;
    g_list = w;
    ipc_msg_clear(&reply);
    for (size_t i = 0; i < json_array_size(g_orphans);) {
      json_t *o = json_array_get(g_orphans, i);
      json_t *ev = json_object_get(o, "ev");
      if (strcmp(json_string_value(json_object_get(o, "key")), w->key) == 0 &&
          (uint32_t)json_integer_value(json_object_get(ev, "id")) == w->agent_id) {
        queue_locked(w, ev);
        json_array_remove(g_orphans, i);
      } else {
        i++;
      }
    }
  }
  pthread_mutex_unlock(&g_mu);
  free(path);
  return w;
}

static void stop_watch(watcher *w) {
  pthread_mutex_lock(&g_mu);
  end_agent_watch_locked(w);
  unref_locked(w);
  pthread_mutex_unlock(&g_mu);
}

/* ---- WatchDir ---- */

typedef struct wstream {
  sandbox *sb;
  watcher *w;
  int client_fd, keepalive_ms, started;
  const pb_msg *pb;
  int64_t deadline; /* monotonic ms, 0 = none */
} wstream;

static int wstream_fill(void *ctx, sbuf *out) {
  wstream *s = ctx;
  if (!s->started) {
    s->started = 1;
    rpc_env_msg(out, json_pack("{s:{}}", "start"), s->pb);
    return 0;
  }
  int64_t idle_until = mono_ms() + s->keepalive_ms;
  for (;;) {
    pthread_mutex_lock(&g_mu);
    size_t n = json_array_size(s->w->queue);
    int closed = s->w->closed, overflowed = s->w->overflowed;
    json_t *batch = n ? s->w->queue : NULL;
    if (n) s->w->queue = json_array();
    pthread_mutex_unlock(&g_mu);
    if (batch) {
      for (size_t i = 0; i < json_array_size(batch); i++)
        rpc_env_msg(out, json_pack("{s:O}", "filesystem", json_array_get(batch, i)), s->pb);
      json_decref(batch);
      return 0;
    }
    if (overflowed) {
      rpc_err e = {0};
      rpc_fail(&e, "internal", "%s", WATCH_OVERFLOW);
      rpc_env_end(out, &e);
      return 1;
    }
    if (closed) {
      rpc_err e = {0};
      rpc_fail(&e, "unavailable", "the sandbox stopped: the watch ended");
      rpc_env_end(out, &e);
      return 1;
    }
    int64_t now = mono_ms();
    if (s->deadline && now >= s->deadline) {
      rpc_err e = {0};
      rpc_fail(&e, "deadline_exceeded", "the watch reached its deadline (Connect-Timeout-Ms)");
      rpc_env_end(out, &e);
      return 1;
    }
    if (now >= idle_until) {
      rpc_env_msg(out, json_pack("{s:{}}", "keepalive"), s->pb);
      return 0;
    }
    int64_t wait = idle_until - now;
    if (s->deadline && s->deadline - now < wait) wait = s->deadline - now;
    struct pollfd pf[2] = {{s->w->efd, POLLIN, 0}, {s->client_fd, POLLRDHUP, 0}};
    poll(pf, s->client_fd >= 0 ? 2 : 1, (int)wait);
    if (s->client_fd >= 0 && (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
      return STREAM_CLIENT_LEFT;
    if (pf[0].revents) {
      uint64_t v;
      if (read(s->w->efd, &v, sizeof v) < 0) {
        /* raced with another wake */
      }
    }
  }
}

static void wstream_free(void *ctx) {
  wstream *s = ctx;
  stop_watch(s->w);
  sandbox_unref(s->sb);
  free(s);
}

int watch_dir(rpc_call *c, stream_src *src, rpc_err *e) {
  watcher *w = start_watch(c, e);
  if (!w) return -1;
  wstream *s = xcalloc(1, sizeof *s);
  sandbox_ref(c->sb);
  s->sb = c->sb;
  s->w = w;
  s->client_fd = http_client_fd(c->r->conn);
  s->keepalive_ms = c->keepalive_ms;
  s->pb = c->out_pb;
  s->deadline = c->timeout_ms > 0 ? mono_ms() + c->timeout_ms : 0;
  *src = (stream_src){wstream_fill, wstream_free, s};
  return 0;
}

/* ---- polling watchers ---- */

static watcher *find_ref(const char *key, const char *id) {
  pthread_mutex_lock(&g_mu);
  watcher *w = g_list;
  while (w && (strcmp(w->id, id) != 0 || strcmp(w->key, key) != 0)) w = w->next;
  if (w) w->refs++;
  pthread_mutex_unlock(&g_mu);
  return w;
}

int watcher_create(rpc_call *c, json_t **resp, rpc_err *e) {
  watcher *w = start_watch(c, e);
  if (!w) return -1;
  *resp = json_pack("{s:s}", "watcherId", w->id);
  return 0;
}

/* The watcher the request names, with a reference the caller drops. */
static watcher *named_watcher(rpc_call *c, rpc_err *e) {
  const char *id = NULL;
  if (pj_string(pj_get(c->msg, "watcherId", "watcher_id"), NULL, &id) || !id) {
    rpc_fail(e, "invalid_argument", "watcherId is required");
    return NULL;
  }
  watcher *w = find_ref(c->sb->id, id);
  if (!w) rpc_fail(e, "not_found", "watcher with id %s not found", id);
  return w;
}

int watcher_events(rpc_call *c, json_t **resp, rpc_err *e) {
  watcher *w = named_watcher(c, e);
  if (!w) return -1;
  pthread_mutex_lock(&g_mu);
  int overflowed = w->overflowed;
  json_t *events = overflowed ? NULL : w->queue;
  if (!overflowed) w->queue = json_array();
  unref_locked(w);
  pthread_mutex_unlock(&g_mu);
  if (overflowed) {
    rpc_fail(e, "internal", "%s", WATCH_OVERFLOW);
    return -1;
  }
  *resp = json_array_size(events) ? json_pack("{s:o}", "events", events) : (json_decref(events), json_object());
  return 0;
}

int watcher_remove(rpc_call *c, json_t **resp, rpc_err *e) {
  watcher *w = named_watcher(c, e);
  if (!w) return -1;
  /* drop the lookup's reference and the creation's (the watcher ends) */
  pthread_mutex_lock(&g_mu);
  int live = !w->closed;
  end_agent_watch_locked(w);
  unref_locked(w);
  if (live) unref_locked(w);
  pthread_mutex_unlock(&g_mu);
  *resp = json_object();
  return 0;
}

void watch_shutdown(void) {
  pthread_mutex_lock(&g_mu);
  json_decref(g_orphans);
  g_orphans = NULL;
  while (g_list) {
    watcher *w = g_list;
    g_list = w->next;
    json_decref(w->queue);
    close(w->efd);
    if (w->life >= 0) close(w->life);
    free(w);
  }
  pthread_mutex_unlock(&g_mu);
}

const sandbox_listener watch_sandbox_listener = {watch_deliver, NULL, NULL, watch_close_sandbox};
