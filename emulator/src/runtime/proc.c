/* proc.c — process table, output fan-out with backpressure, end events.
 *
 * One reader thread per table (a sandbox's processes) reads every process's
 * output (the agent's relay socket, ipc.h, or its pty) through one epoll
 * set, level-triggered, one read of at most READ_CHUNK per ready descriptor
 * per wake-up: a process that floods gets its turn like the others, never
 * all of them. A process then costs the server one descriptor: no thread,
 * no eventfd of its own. The reader starts
 * with the table's first process and leaves LINGER_MS after its last, or at
 * once when the table is aborted (the sandbox is gone). */
#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ipc.h"
#include "log.h"
#include "util.h"

#define SUB_QUEUE_LIMIT (1u << 20) /* bytes queued per subscriber before backpressure */
#define READ_CHUNK IPC_OUT_CHUNK
#define MAX_READY 64     /* descriptors served per wake-up, one read each */
#define LINGER_MS 5000   /* an idle reader waits this long for the next process */
#define MAX_KILLS 64     /* deadline kills sent per pass (the rest on the next) */
#define HANGUP_CHECK_MS 1000 /* how often a waiting stream looks at its client's socket */

typedef struct qnode {
  struct qnode *next;
  proc_event *ev;
} qnode;

struct proc_sub {
  proc_sub *next;
  proc *p;
  qnode *head, *tail;
  size_t bytes;
  pthread_cond_t cv; /* signalled, under the table's mutex, when an event is queued */
};

/* The descriptor the reader reads; epoll's data points here. */
typedef struct src {
  proc *p;
  int fd; /* -1 once at EOF (only the reader changes it) */
} src;

struct proc {
  proc *next; /* in the table */
  proc_table *t;
  int refs; /* guarded by t->mu */
  int pid;
  char *tag;
  json_t *config;
  src out; /* the relay socket, or the pty */
  int pty_fd;
  int in_fd;
  pthread_mutex_t in_mu; /* serialises stdin writes and close */
  proc_sub *subs;
  int exited, status, ended;
  int armed; /* its open sources are in the epoll set (else held: a full queue) */
  int64_t deadline_ms;
  int deadline_hit;
  int cut; /* sent SIGKILL or SIGTERM: ends once exited, output open or not */
  int unserved; /* no reader: ended at once, to be killed by the caller */
};

typedef struct early_exit {
  struct early_exit *next;
  int pid, status;
} early_exit;

/* The table's reader thread and what it waits on; NULL while none runs. */
typedef struct reader {
  proc_table *t;
  int epfd, wake_fd;
} reader;

struct proc_table {
  pthread_mutex_t mu;
  int refs;
  proc *procs;
  early_exit *early;
  proc_signal_fn sig;
  char key[32];
  reader *rd;
  int aborted; /* the agent is gone: no exit notice will come */
  int dirty;   /* the reader must look at the table again (exit, space, deadline) */
};

static pthread_mutex_t g_readers_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_readers_cv = PTHREAD_COND_INITIALIZER;
static int g_readers;

proc_table *proc_table_new(proc_signal_fn sig, const char *key) {
  proc_table *t = xcalloc(1, sizeof *t);
  pthread_mutex_init(&t->mu, NULL);
  t->refs = 1;
  t->sig = sig;
  snprintf(t->key, sizeof t->key, "%s", key);
  return t;
}

const char *proc_table_key(const proc_table *t) { return t->key; }

void proc_table_ref(proc_table *t) {
  pthread_mutex_lock(&t->mu);
  t->refs++;
  pthread_mutex_unlock(&t->mu);
}

static void table_free(proc_table *t) {
  for (early_exit *e = t->early, *n; e; e = n) {
    n = e->next;
    free(e);
  }
  pthread_mutex_destroy(&t->mu);
  free(t);
}

void proc_table_unref(proc_table *t) {
  pthread_mutex_lock(&t->mu);
  int last = --t->refs == 0;
  pthread_mutex_unlock(&t->mu);
  if (last) table_free(t);
}

static void wake(int fd) {
  uint64_t one = 1;
  if (write(fd, &one, sizeof one) < 0) {
    /* the counter is saturated: the waiter is woken anyway */
  }
}

static void drain_wake(int fd) {
  uint64_t v;
  if (read(fd, &v, sizeof v) < 0) {
    /* nothing pending */
  }
}

/* Asks the reader to look at the table again. */
static void poke_locked(proc_table *t) {
  t->dirty = 1;
  if (t->rd) wake(t->rd->wake_fd);
}

static void set_exited_locked(proc *p, int status) {
  if (p->exited) return;
  p->exited = 1;
  p->status = status;
  poke_locked(p->t);
}

void proc_table_exited(proc_table *t, int pid, int status) {
  pthread_mutex_lock(&t->mu);
  proc *p = t->procs;
  while (p && p->pid != pid) p = p->next;
  if (p) {
    set_exited_locked(p, status);
  } else {
    early_exit *e = xmalloc(sizeof *e);
    e->pid = pid;
    e->status = status;
    e->next = t->early;
    t->early = e;
  }
  pthread_mutex_unlock(&t->mu);
}

void proc_table_abort(proc_table *t) {
  pthread_mutex_lock(&t->mu);
  t->aborted = 1;
  for (proc *p = t->procs; p; p = p->next) set_exited_locked(p, SIGKILL);
  for (early_exit *e = t->early, *n; e; e = n) {
    n = e->next;
    free(e);
  }
  t->early = NULL;
  poke_locked(t);
  pthread_mutex_unlock(&t->mu);
}

json_t *proc_table_list(proc_table *t) {
  json_t *arr = json_array();
  pthread_mutex_lock(&t->mu);
  for (proc *p = t->procs; p; p = p->next) {
    json_t *info = json_pack("{s:O, s:i}", "config", p->config, "pid", p->pid);
    if (p->tag) json_object_set_new(info, "tag", json_string(p->tag));
    json_array_append_new(arr, info);
  }
  pthread_mutex_unlock(&t->mu);
  return arr;
}

static void event_unref_locked(proc_event *ev) {
  if (--ev->refs == 0) free(ev);
}

/* Queues ev (heap-allocated, refs 0) on every subscriber; frees it when none. */
static void push_locked(proc *p, proc_event *ev) {
  for (proc_sub *s = p->subs; s; s = s->next) {
    qnode *q = xmalloc(sizeof *q);
    q->next = NULL;
    q->ev = ev;
    ev->refs++;
    if (s->tail)
      s->tail->next = q;
    else
      s->head = q;
    s->tail = q;
    s->bytes += ev->len;
    pthread_cond_signal(&s->cv);
  }
  if (ev->refs == 0) free(ev);
}

static int any_sub_full_locked(const proc *p) {
  for (const proc_sub *s = p->subs; s; s = s->next)
    if (s->bytes >= SUB_QUEUE_LIMIT) return 1;
  return 0;
}

static void unlink_locked(proc *p) {
  for (proc **pp = &p->t->procs; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      return;
    }
}

static void proc_free(proc *p) {
  proc_table *t = p->t;
  if (p->in_fd >= 0) close(p->in_fd);
  if (p->pty_fd >= 0) close(p->pty_fd);
  pthread_mutex_destroy(&p->in_mu);
  json_decref(p->config);
  free(p->tag);
  free(p);
  proc_table_unref(t);
}

void proc_unref(proc *p) {
  if (!p) return;
  pthread_mutex_lock(&p->t->mu);
  int last = --p->refs == 0;
  pthread_mutex_unlock(&p->t->mu);
  if (last) proc_free(p);
}

int proc_pid(const proc *p) { return p->pid; }

int proc_unserved(const proc *p) { return p->unserved; }

/* ---- the reader's descriptors ---- */

static int arm_locked(proc *p) {
  p->armed = 1; /* before the first event can come */
  if (p->out.fd < 0) return 0;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &p->out};
  if (epoll_ctl(p->t->rd->epfd, EPOLL_CTL_ADD, p->out.fd, &ev) == 0) return 0;
  p->armed = 0;
  return errno;
}

/* Holds the process's output in the agent (a subscriber's queue is full). */
static void disarm_locked(proc *p) {
  if (p->out.fd >= 0) epoll_ctl(p->t->rd->epfd, EPOLL_CTL_DEL, p->out.fd, NULL);
  p->armed = 0;
}

/* The output ended (or EIO once a pty's last slave closed). The pty master
 * itself stays open for input; the relay socket is closed. */
static void close_src_locked(src *s) {
  if (s->p->armed) epoll_ctl(s->p->t->rd->epfd, EPOLL_CTL_DEL, s->fd, NULL);
  if (s->fd != s->p->pty_fd) close(s->fd);
  s->fd = -1;
  s->p->t->dirty = 1; /* the process may be ready to end */
}

static int output_open(const proc *p) { return p->out.fd >= 0; }

/* One read of a source into buf + 1 (a relay packet lands with its stream
 * byte in buf[0]): its length and *kind, 0 at the end, -1 when there is
 * nothing to pass on. The agent is untrusted: a packet that breaks the
 * format ends the process's output. */
static ssize_t read_src(const src *s, unsigned char *buf, int *kind) {
  if (s->fd == s->p->pty_fd) {
    *kind = PEV_PTY;
    ssize_t n = read(s->fd, buf + 1, READ_CHUNK);
    return n < 0 && (errno == EINTR || errno == EAGAIN) ? -1 : n < 0 ? 0 : n;
  }
  ssize_t n = recv(s->fd, buf, READ_CHUNK + 1, MSG_DONTWAIT | MSG_TRUNC);
  if (n < 0) return errno == EINTR || errno == EAGAIN ? -1 : 0;
  if (n == 0) return 0;
  int stream = ipc_out_stream_of(buf, (size_t)n);
  if (stream < 0) {
    log_msg("sandbox %s: process %d: malformed output packet (%zd bytes): its output ends", s->p->t->key,
            s->p->pid, n);
    return 0;
  }
  *kind = stream == IPC_OUT_STDERR ? PEV_STDERR : PEV_STDOUT;
  return n > 1 ? n - 1 : -1;
}

/* Reads one chunk from a ready source into the subscribers. */
static void serve(proc_table *t, src *s, unsigned char *buf) {
  if (s->fd < 0 || !s->p->armed) return; /* closed or held earlier in this batch */
  int kind = 0;
  ssize_t n = read_src(s, buf, &kind);
  if (n < 0) return;
  pthread_mutex_lock(&t->mu);
  if (n == 0) {
    close_src_locked(s);
  } else if (s->p->subs) { /* with no subscriber the output is dropped */
    proc_event *ev = xmalloc(sizeof *ev + (size_t)n);
    ev->refs = 0;
    ev->kind = kind;
    ev->status = 0;
    ev->len = (size_t)n;
    memcpy(ev->data, buf + 1, (size_t)n);
    push_locked(s->p, ev);
    if (any_sub_full_locked(s->p)) disarm_locked(s->p);
  }
  pthread_mutex_unlock(&t->mu);
}

/* ---- the reader's pass over its table ---- */

typedef struct pass {
  int kills[MAX_KILLS], nkills;
  proc *freed;   /* ended processes whose last reference was the table's */
  int64_t due;   /* the next deadline (0: none); kept between passes */
  int64_t idle_since;
  int timeout_ms;
  int quit;
} pass;

static void end_locked(proc *p, pass *ps) {
  proc_event *end = xcalloc(1, sizeof *end);
  end->kind = PEV_END;
  end->status = p->status;
  push_locked(p, end);
  p->ended = 1;
  unlink_locked(p);
  if (--p->refs == 0) { /* the table's reference */
    p->next = ps->freed;
    ps->freed = p;
  }
}

static void due_at(pass *ps, int64_t at) {
  if (!ps->due || at < ps->due) ps->due = at;
}

/* One process: resume it, end it, or kill it at its deadline. */
static void look_at_locked(proc *p, int64_t now, pass *ps) {
  if (!p->armed && output_open(p) && !any_sub_full_locked(p) && arm_locked(p) != 0) {
    /* cannot watch it again (out of memory): it cannot be served */
    close_src_locked(&p->out);
    if (!p->exited && ps->nkills < MAX_KILLS) ps->kills[ps->nkills++] = p->pid;
  }
  if (p->exited && output_open(p) && (p->cut || p->deadline_hit))
    close_src_locked(&p->out); /* envd closes its read ends once the pid exited */
  if (!output_open(p) && p->exited) {
    end_locked(p, ps); /* every byte was read: the end follows it */
    return;
  }
  if (p->deadline_ms <= 0 || p->deadline_hit || p->exited) return;
  if (now < p->deadline_ms) {
    due_at(ps, p->deadline_ms);
  } else if (ps->nkills < MAX_KILLS) {
    p->deadline_hit = 1;
    ps->kills[ps->nkills++] = p->pid;
  } else {
    due_at(ps, now); /* the rest on the next pass */
  }
}

static int ms_until(int64_t at, int64_t now) {
  return at <= now ? 0 : at - now > 60000 ? 60000 : (int)(at - now);
}

/* Looks at every process when something changed or a deadline is due, and
 * decides how long the reader may wait, or that it leaves. */
static void scan(proc_table *t, pass *ps) {
  int64_t now = mono_ms();
  pthread_mutex_lock(&t->mu);
  if (t->dirty || (ps->due && now >= ps->due)) {
    t->dirty = 0;
    ps->due = 0;
    for (proc *p = t->procs, *n; p; p = n) {
      n = p->next;
      look_at_locked(p, now, ps);
    }
  }
  ps->timeout_ms = ps->nkills ? 0 : ps->due ? ms_until(ps->due, now) : -1;
  if (t->procs) {
    ps->idle_since = 0;
  } else if (!ps->idle_since) {
    ps->idle_since = now;
  }
  if (!t->procs && (t->aborted || now - ps->idle_since >= LINGER_MS)) {
    t->rd = NULL; /* a later register starts a new reader */
    ps->quit = 1;
  } else if (!t->procs) {
    int linger = ms_until(ps->idle_since + LINGER_MS, now);
    if (ps->timeout_ms < 0 || linger < ps->timeout_ms) ps->timeout_ms = linger;
  }
  pthread_mutex_unlock(&t->mu);
}

static void *reader_main(void *arg) {
  reader *rd = arg;
  proc_table *t = rd->t;
  unsigned char *buf = xmalloc(READ_CHUNK + 1);
  struct epoll_event evs[MAX_READY];
  pass ps = {0};
  for (;;) {
    ps.nkills = 0;
    ps.freed = NULL;
    scan(t, &ps);
    for (proc *p = ps.freed, *n; p; p = n) {
      n = p->next;
      proc_free(p);
    }
    for (int i = 0; i < ps.nkills; i++) t->sig(t->key, ps.kills[i], SIGKILL);
    if (ps.quit) break;
    int n = epoll_wait(rd->epfd, evs, MAX_READY, ps.timeout_ms);
    if (n < 0 && errno != EINTR) {
      log_msg("sandbox %s: epoll_wait: %s", t->key, strerror(errno));
      usleep(10000);
    }
    for (int i = 0; i < n; i++) {
      if (evs[i].data.ptr)
        serve(t, evs[i].data.ptr, buf);
      else
        drain_wake(rd->wake_fd);
    }
  }
  free(buf);
  close(rd->epfd);
  close(rd->wake_fd);
  free(rd);
  proc_table_unref(t);
  pthread_mutex_lock(&g_readers_mu);
  g_readers--;
  pthread_cond_broadcast(&g_readers_cv);
  pthread_mutex_unlock(&g_readers_mu);
  return NULL;
}

/* Starts the table's reader when none runs; 0 or an errno (no descriptor,
 * no thread: the process being registered then cannot be served). */
static int reader_ensure_locked(proc_table *t) {
  if (t->rd) return 0;
  reader *rd = xcalloc(1, sizeof *rd);
  rd->t = t;
  rd->epfd = epoll_create1(EPOLL_CLOEXEC);
  rd->wake_fd = rd->epfd < 0 ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  int err = rd->wake_fd < 0 ? errno : epoll_ctl(rd->epfd, EPOLL_CTL_ADD, rd->wake_fd, &ev) != 0 ? errno : 0;
  if (!err) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    pthread_mutex_lock(&g_readers_mu);
    err = pthread_create(&th, &attr, reader_main, rd);
    if (!err) g_readers++;
    pthread_mutex_unlock(&g_readers_mu);
    pthread_attr_destroy(&attr);
  }
  if (err) {
    if (rd->wake_fd >= 0) close(rd->wake_fd);
    if (rd->epfd >= 0) close(rd->epfd);
    free(rd);
    return err;
  }
  t->refs++; /* the reader's */
  t->rd = rd;
  return 0;
}

/* A subscriber waits on a condition variable, not a descriptor: a stream
 * being served costs its connection's socket and nothing more. */
static proc_sub *sub_new_locked(proc *p) {
  proc_sub *s = xcalloc(1, sizeof *s);
  s->p = p;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cv, &ca);
  pthread_condattr_destroy(&ca);
  s->next = p->subs;
  p->subs = s;
  p->refs++;
  return s;
}

/* No reader could take the process (the host is out of tasks, descriptors
 * or memory): it cannot be served, so it ends at once, as a kill would end
 * it, and its caller kills it (proc_unserved) once it holds no lock; the
 * server itself goes on. */
static void end_without_reader_locked(proc *p, int why) {
  log_msg("process %d: no reader for its output (%s): killing it", p->pid, strerror(why));
  p->unserved = 1;
  if (p->out.fd >= 0 && p->out.fd != p->pty_fd) close(p->out.fd);
  p->out.fd = -1;
  proc_event *end = xcalloc(1, sizeof *end);
  end->kind = PEV_END;
  end->status = SIGKILL;
  push_locked(p, end);
  p->exited = p->ended = 1;
  unlink_locked(p);
  p->refs--; /* the table's; the caller still holds one */
}

proc *proc_register(proc_table *t, const proc_spec *spec, proc_sub **first) {
  proc *p = xcalloc(1, sizeof *p);
  p->t = t;
  p->pid = spec->pid;
  p->tag = spec->tag ? xstrdup(spec->tag) : NULL;
  p->config = json_incref(spec->config);
  int is_pty = spec->pty_fd >= 0;
  /* The reader serves a whole sandbox: a read must never block it (relay
   * reads ask not to; the pty master stays blocking for stdin writes and
   * is read only once ready). */
  p->out = (src){p, is_pty ? spec->pty_fd : spec->out_fd};
  p->in_fd = spec->in_fd;
  p->pty_fd = spec->pty_fd;
  p->deadline_ms = spec->deadline_ms;
  pthread_mutex_init(&p->in_mu, NULL);
  pthread_mutex_lock(&t->mu);
  t->refs++;
  p->refs = 2; /* the table's (dropped by the reader at the end) and the caller's */
  p->next = t->procs;
  t->procs = p;
  for (early_exit **pe = &t->early; *pe; pe = &(*pe)->next) {
    if ((*pe)->pid != p->pid) continue;
    early_exit *e = *pe;
    *pe = e->next;
    set_exited_locked(p, e->status);
    free(e);
    break;
  }
  /* spawned before the agent went away: no exit notice will come */
  if (t->aborted) set_exited_locked(p, SIGKILL);
  if (first) *first = sub_new_locked(p);
  int err = reader_ensure_locked(t);
  if (!err) err = arm_locked(p);
  if (err)
    end_without_reader_locked(p, err);
  else
    poke_locked(t); /* it may have ended already, or have a deadline */
  pthread_mutex_unlock(&t->mu);
  return p;
}

/* By tag, as envd's getProcess walks its map: untagged processes are
 * skipped, a match is kept and the walk goes on, and the first tagged
 * process with another tag stops it. So with two or more tagged processes
 * a tag lookup can miss (here, newest first: one started after another
 * tagged process hides it), as it can on E2B. */
static proc *find_tag_locked(proc_table *t, const char *tag) {
  proc *found = NULL;
  for (proc *p = t->procs; p; p = p->next) {
    if (!p->tag) continue;
    if (strcmp(p->tag, tag) != 0) break;
    found = p;
  }
  return found;
}

proc *proc_find(proc_table *t, int pid, const char *tag) {
  pthread_mutex_lock(&t->mu);
  proc *p = NULL;
  if (pid > 0)
    for (p = t->procs; p && p->pid != pid; p = p->next) {}
  else if (tag)
    p = find_tag_locked(t, tag);
  if (p) p->refs++;
  pthread_mutex_unlock(&t->mu);
  return p;
}

proc_sub *proc_subscribe(proc *p) {
  pthread_mutex_lock(&p->t->mu);
  proc_sub *s = p->ended ? NULL : sub_new_locked(p);
  pthread_mutex_unlock(&p->t->mu);
  return s;
}

void proc_unsubscribe(proc_sub *s) {
  if (!s) return;
  proc *p = s->p;
  pthread_mutex_lock(&p->t->mu);
  for (proc_sub **pp = &p->subs; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  if (!p->armed && !p->ended) poke_locked(p->t); /* a full queue may have held the reader */
  for (qnode *q = s->head, *n; q; q = n) {
    n = q->next;
    event_unref_locked(q->ev);
    free(q);
  }
  pthread_mutex_unlock(&p->t->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
  proc_unref(p);
}

/* Whether the client behind watch_fd closed its side. */
static int client_gone(int watch_fd) {
  struct pollfd pf = {watch_fd, POLLRDHUP, 0};
  return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static void wait_until_locked(proc_sub *s, int64_t at) {
  if (at < 0) {
    pthread_cond_wait(&s->cv, &s->p->t->mu);
    return;
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t ns = (int64_t)ts.tv_nsec + (at - mono_ms()) * 1000000;
  if (ns < 0) ns = 0;
  ts.tv_sec += (time_t)(ns / 1000000000);
  ts.tv_nsec = (long)(ns % 1000000000);
  pthread_cond_timedwait(&s->cv, &s->p->t->mu, &ts);
}

int proc_sub_next(proc_sub *s, int timeout_ms, int watch_fd, proc_event **ev) {
  proc_table *t = s->p->t;
  int64_t until = timeout_ms >= 0 ? mono_ms() + timeout_ms : -1;
  pthread_mutex_lock(&t->mu);
  for (;;) {
    qnode *q = s->head;
    if (q) {
      s->head = q->next;
      if (!s->head) s->tail = NULL;
      int was_full = s->bytes >= SUB_QUEUE_LIMIT;
      s->bytes -= q->ev->len;
      if (was_full && s->bytes < SUB_QUEUE_LIMIT && !s->p->armed && !s->p->ended) poke_locked(t);
      pthread_mutex_unlock(&t->mu);
      *ev = q->ev; /* the queue's reference passes to the caller */
      free(q);
      return PSUB_EVENT;
    }
    int64_t now = mono_ms();
    if (until >= 0 && now >= until) break;
    if (watch_fd >= 0) {
      pthread_mutex_unlock(&t->mu);
      if (client_gone(watch_fd)) return PSUB_HANGUP;
      pthread_mutex_lock(&t->mu);
      if (s->head) continue;
    }
    int64_t at = watch_fd >= 0 ? now + HANGUP_CHECK_MS : -1;
    if (until >= 0 && (at < 0 || until < at)) at = until;
    wait_until_locked(s, at);
  }
  pthread_mutex_unlock(&t->mu);
  return PSUB_TIMEOUT;
}

void proc_event_free(proc_sub *s, proc_event *ev) {
  pthread_mutex_lock(&s->p->t->mu);
  event_unref_locked(ev);
  pthread_mutex_unlock(&s->p->t->mu);
}

int proc_write_stdin(proc *p, const void *data, size_t n, int to_pty) {
  pthread_mutex_lock(&p->in_mu);
  /* stdin bytes to a pty process go to its terminal, like typed input */
  int fd = to_pty ? p->pty_fd : (p->in_fd >= 0 ? p->in_fd : p->pty_fd);
  int rc = fd < 0 ? -EBADF : (write_all(fd, data, n) == 0 ? 0 : -errno);
  pthread_mutex_unlock(&p->in_mu);
  return rc;
}

int proc_close_stdin(proc *p) {
  pthread_mutex_lock(&p->in_mu);
  int rc = p->in_fd >= 0 ? 0 : -EBADF;
  if (p->in_fd >= 0) close(p->in_fd);
  p->in_fd = -1;
  pthread_mutex_unlock(&p->in_mu);
  return rc;
}

int proc_resize(proc *p, unsigned cols, unsigned rows) {
  pthread_mutex_lock(&p->in_mu);
  int fd = p->pty_fd;
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  int rc = fd < 0 ? -ENOTTY : (ioctl(fd, TIOCSWINSZ, &ws) == 0 ? 0 : -errno);
  pthread_mutex_unlock(&p->in_mu);
  return rc;
}

void proc_set_deadline(proc *p, int64_t deadline_ms) {
  pthread_mutex_lock(&p->t->mu);
  p->deadline_ms = deadline_ms;
  poke_locked(p->t);
  pthread_mutex_unlock(&p->t->mu);
}

int proc_deadline_hit(proc *p) {
  pthread_mutex_lock(&p->t->mu);
  int hit = p->deadline_hit;
  pthread_mutex_unlock(&p->t->mu);
  return hit;
}

void proc_cut(proc *p) {
  pthread_mutex_lock(&p->t->mu);
  p->cut = 1;
  poke_locked(p->t);
  pthread_mutex_unlock(&p->t->mu);
}

void proc_wait_all_readers(void) {
  pthread_mutex_lock(&g_readers_mu);
  while (g_readers > 0) pthread_cond_wait(&g_readers_cv, &g_readers_mu);
  pthread_mutex_unlock(&g_readers_mu);
}
