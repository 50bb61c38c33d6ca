/* agent_watch.c — inotify watches inside the sandbox (WatchDir and the
 * watcher RPCs): one inotify descriptor per watch, recursive watches follow
 * new subdirectories, events go up as IPC_WATCH_EVENT messages. A watch
 * lives as long as the server holds the write end of its pipe (given in
 * IPC_WATCH's reply): the server closing it ends the watch in the next
 * pass, as envd ends a watcher once its stream's client is gone. A message
 * on the channel would wait behind every request queued before it (a burst
 * of spawns), and the watch would send events nobody reads meanwhile. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "ipc.h"
#include "util.h"

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_CLOSE_WRITE)
/* A watch rests this long after its events were read: a file written in a
 * tight loop then costs one event per rest, not one per write that the
 * agent happened to catch (inotify merges a repeated event with the one
 * still queued before it, as it does when its reader is slow), and requests
 * on the channel (a read of that file) are not kept waiting behind events. */
#define AW_REST_MS 2
/* At most this many inotify reads per turn (each up to 16 KiB of events),
 * so a writer racing the reads cannot hold the loop. */
#define AW_READS_PER_TURN 64

typedef struct wdir {
  int wd;
  char *rel; /* relative to the watch root ("" for the root) */
} wdir;

typedef struct awatch {
  uint32_t id;
  int fd, recursive, entry;
  int life; /* read end of the pipe the server holds open while it wants the watch */
  int64_t rest_until; /* mono_ms: not polled before */
  int uid, gid; /* who asked: later subdirectories and entries are theirs to see */
  int overflowed; /* inotify dropped events: said once, nothing sent after */
  char *root; /* sandbox path */
  wdir *dirs;
  size_t n, cap;
} awatch;

static awatch *g_w[AW_MAX_WATCHES];
static uint32_t g_next = 1;

static void add_dir(awatch *w, const char *rel) {
  char *virt = *rel ? xasprintf("%s/%s", strcmp(w->root, "/") == 0 ? "" : w->root, rel) : xstrdup(w->root);
  char *real = afs_to_real(virt);
  int wd = inotify_add_watch(w->fd, real, WATCH_MASK | IN_ONLYDIR);
  if (wd >= 0) {
    if (w->n == w->cap) w->dirs = xrealloc(w->dirs, (w->cap = w->cap ? w->cap * 2 : 16) * sizeof *w->dirs);
    w->dirs[w->n].wd = wd;
    w->dirs[w->n++].rel = xstrdup(rel);
    if (w->recursive) {
      DIR *d = opendir(real);
      struct dirent *de;
      while (d && (de = readdir(d))) {
        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        char *child = *rel ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
        add_dir(w, child);
        free(child);
      }
      if (d) closedir(d);
    }
  }
  free(real);
  free(virt);
}

static void free_watch(awatch *w) {
  close(w->fd);
  if (w->life >= 0) close(w->life);
  for (size_t i = 0; i < w->n; i++) free(w->dirs[i].rel);
  free(w->dirs);
  free(w->root);
  free(w);
}

int aw_watch(json_t *req, json_t **out, int *life) {
  const char *path = json_string_value(json_object_get(req, "path"));
  if (!path) return EINVAL;
  int derr = afs_dir_errno(path);
  if (derr) return derr;
  int slot = -1;
  for (int i = 0; i < AW_MAX_WATCHES && slot < 0; i++)
    if (!g_w[i]) slot = i;
  if (slot < 0) return EMFILE;
  awatch *w = xcalloc(1, sizeof *w);
  int pp[2] = {-1, -1};
  w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (w->fd < 0 || pipe2(pp, O_CLOEXEC | O_NONBLOCK) != 0) {
    int e = errno;
    if (w->fd >= 0) close(w->fd);
    free(w);
    return e;
  }
  w->life = pp[0];
  w->id = g_next++;
  w->recursive = json_is_true(json_object_get(req, "recursive"));
  w->entry = json_is_true(json_object_get(req, "entry"));
  w->root = xstrdup(path);
  w->uid = (int)json_integer_value(json_object_get(req, "uid"));
  w->gid = (int)json_integer_value(json_object_get(req, "gid"));
  if (!json_is_integer(json_object_get(req, "uid"))) w->uid = w->gid = 1000;
  add_dir(w, ""); /* the caller (agent.c) runs this as that user */
  if (w->n == 0) {
    free_watch(w);
    close(pp[1]);
    return EACCES;
  }
  g_w[slot] = w;
  *life = pp[1];
  *out = json_pack("{s:i}", "id", (int)w->id);
  return 0;
}

/* What the last aw_fds polls: entry i is watch polled_id[i]'s pipe
 * (polled_life[i]) or its inotify descriptor. */
static uint32_t polled_id[AW_POLL_MAX];
static char polled_life[AW_POLL_MAX];

static int add_poll(struct pollfd *p, int n, int max, int fd, uint32_t id, char life) {
  if (n >= max) return n;
  p[n] = (struct pollfd){fd, POLLIN, 0};
  polled_id[n] = id;
  polled_life[n] = life;
  return n + 1;
}

int aw_fds(struct pollfd *p, int max, int *timeout_ms) {
  int n = 0;
  int64_t now = mono_ms(), soonest = -1;
  if (max > AW_POLL_MAX) max = AW_POLL_MAX;
  for (int i = 0; i < AW_MAX_WATCHES; i++) {
    if (!g_w[i]) continue;
    n = add_poll(p, n, max, g_w[i]->life, g_w[i]->id, 1);
    if (g_w[i]->rest_until > now) {
      int64_t left = g_w[i]->rest_until - now;
      if (soonest < 0 || left < soonest) soonest = left;
      continue;
    }
    n = add_poll(p, n, max, g_w[i]->fd, g_w[i]->id, 0);
  }
  if (soonest >= 0 && (*timeout_ms < 0 || soonest < *timeout_ms)) *timeout_ms = (int)soonest;
  return n;
}

static int slot_of(uint32_t id) {
  for (int i = 0; i < AW_MAX_WATCHES; i++)
    if (g_w[i] && g_w[i]->id == id) return i;
  return -1;
}

static const char *event_type(uint32_t mask) {
  if (mask & (IN_CREATE | IN_MOVED_TO)) return "EVENT_TYPE_CREATE";
  if (mask & IN_DELETE) return "EVENT_TYPE_REMOVE";
  if (mask & IN_MOVED_FROM) return "EVENT_TYPE_RENAME";
  if (mask & IN_ATTRIB) return "EVENT_TYPE_CHMOD";
  if (mask & (IN_MODIFY | IN_CLOSE_WRITE)) return "EVENT_TYPE_WRITE";
  return NULL;
}

/* Sends one event of w up; what it looks at (new subdirectories, entries)
 * it looks at as the watch's user. Once inotify's queue overflowed, events
 * were lost: that is said instead, once, and the server ends the watch
 * with an error, as envd ends one on fsnotify's overflow error. */
static void send_event(awatch *w, const struct inotify_event *ev, int sock) {
  if (w->overflowed) return;
  if (ev->mask & IN_Q_OVERFLOW) {
    w->overflowed = 1;
    json_t *body = json_pack("{s:i, s:b}", "id", (int)w->id, "overflow", 1);
    ipc_send(sock, IPC_WATCH_EVENT, 0, 0, body, NULL, 0);
    json_decref(body);
    return;
  }
  const char *type = event_type(ev->mask);
  if (!type || !ev->len) return;
  const char *rel = NULL;
  for (size_t i = 0; i < w->n && !rel; i++)
    if (w->dirs[i].wd == ev->wd) rel = w->dirs[i].rel;
  if (!rel) return;
  char *name = *rel ? xasprintf("%s/%s", rel, ev->name) : xstrdup(ev->name);
  if (w->recursive && (ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)) &&
      ident_enter(w->uid, w->gid) == 0) {
    add_dir(w, name);
    ident_leave();
  }
  json_t *body = json_pack("{s:i, s:s, s:s}", "id", (int)w->id, "name", name, "type", type);
  if (w->entry && !(ev->mask & (IN_DELETE | IN_MOVED_FROM))) {
    char *virt = xasprintf("%s/%s", strcmp(w->root, "/") == 0 ? "" : w->root, name);
    json_t *req = json_pack("{s:s}", "path", virt), *st = NULL;
    if (ident_enter(w->uid, w->gid) == 0) {
      if (afs_stat(req, &st) == 0) json_object_set(body, "entry", json_object_get(st, "entry"));
      ident_leave();
    }
    json_decref(st);
    json_decref(req);
    free(virt);
  }
  ipc_send(sock, IPC_WATCH_EVENT, 0, 0, body, NULL, 0);
  json_decref(body);
  free(name);
}

/* Sends the events queued now (not those a writer adds meanwhile: they wait
 * for the next turn, after AW_REST_MS), then lets the watch rest. */
static void read_events(awatch *w, int sock) {
  char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
  w->rest_until = mono_ms() + AW_REST_MS;
  for (int turn = 0; turn < AW_READS_PER_TURN; turn++) {
    ssize_t n = read(w->fd, buf, sizeof buf);
    if (n <= 0) return;
    for (char *p = buf; p < buf + n;) {
      const struct inotify_event *ev = (const struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      send_event(w, ev, sock);
    }
    /* room left for another event: the queue was empty when read */
    if ((size_t)n + sizeof(struct inotify_event) + NAME_MAX + 1 <= sizeof buf) return;
  }
}

/* Ends the watches whose server end closed, then reads the others' events. */
void aw_run(const struct pollfd *p, int n, int sock) {
  for (int i = 0; i < n; i++) {
    int slot = polled_life[i] && p[i].revents ? slot_of(polled_id[i]) : -1;
    if (slot < 0) continue;
    free_watch(g_w[slot]);
    g_w[slot] = NULL;
  }
  for (int i = 0; i < n; i++) {
    int slot = !polled_life[i] && p[i].revents ? slot_of(polled_id[i]) : -1;
    if (slot >= 0) read_events(g_w[slot], sock);
  }
}
