/* proc.c — process table, output fan-out with backpressure, end events. */
#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#define SUB_QUEUE_LIMIT (1u << 20) /* bytes queued per subscriber before backpressure */
#define READ_CHUNK 65536

typedef struct qnode {
  struct qnode *next;
  proc_event *ev;
} qnode;

struct proc_sub {
  proc_sub *next;
  proc *p;
  qnode *head, *tail;
  size_t bytes;
  int efd; /* wakes the consumer */
};

struct proc {
  proc *next; /* in the table */
  proc_table *t;
  int refs; /* guarded by t->mu */
  int pid;
  char *tag;
  json_t *config;
  int out_fd, err_fd, pty_fd;
  int in_fd;
  pthread_mutex_t in_mu; /* serialises stdin writes and close */
  proc_sub *subs;
  int exited, status, ended;
  int64_t deadline_ms;
  int deadline_hit;
  int wake_fd; /* wakes the reader when the deadline moves */
  int unserved; /* no reader thread: ended at once, to be killed by the caller */
};

typedef struct early_exit {
  struct early_exit *next;
  int pid, status;
} early_exit;

struct proc_table {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* exit status arrival, queue space */
  int refs;
  proc *procs;
  early_exit *early;
  proc_signal_fn sig;
  char key[32];
};

static pthread_mutex_t g_readers_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_readers_cv = PTHREAD_COND_INITIALIZER;
static int g_readers;

proc_table *proc_table_new(proc_signal_fn sig, const char *key) {
  proc_table *t = xcalloc(1, sizeof *t);
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cv, NULL);
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
  pthread_cond_destroy(&t->cv);
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

static void set_exited_locked(proc *p, int status) {
  if (p->exited) return;
  p->exited = 1;
  p->status = status;
  wake(p->wake_fd);
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
  for (proc *p = t->procs; p; p = p->next) set_exited_locked(p, SIGKILL);
  for (early_exit *e = t->early, *n; e; e = n) {
    n = e->next;
    free(e);
  }
  t->early = NULL;
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
    wake(s->efd);
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
  if (p->wake_fd >= 0) close(p->wake_fd);
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

static void maybe_kill_for_deadline(proc *p) {
  pthread_mutex_lock(&p->t->mu);
  int fire = p->deadline_ms > 0 && !p->deadline_hit && !p->exited && mono_ms() >= p->deadline_ms;
  if (fire) p->deadline_hit = 1;
  pthread_mutex_unlock(&p->t->mu);
  if (fire) p->t->sig(p->t->key, p->pid, SIGKILL);
}

static int poll_timeout(proc *p) {
  pthread_mutex_lock(&p->t->mu);
  int64_t d = p->deadline_hit || p->exited ? 0 : p->deadline_ms;
  pthread_mutex_unlock(&p->t->mu);
  if (d <= 0) return -1;
  int64_t left = d - mono_ms();
  return left <= 0 ? 0 : (left > 60000 ? 60000 : (int)left);
}

/* Reads one chunk from fd into the subscribers; returns 0 at EOF. */
static int pump(proc *p, int fd, int kind, unsigned char *buf) {
  ssize_t n = read(fd, buf, READ_CHUNK);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
  if (n <= 0) return 0; /* EOF, or EIO once a pty's last slave closes */
  proc_event *ev = xmalloc(sizeof *ev + (size_t)n);
  ev->refs = 0;
  ev->kind = kind;
  ev->status = 0;
  ev->len = (size_t)n;
  memcpy(ev->data, buf, (size_t)n);
  pthread_mutex_lock(&p->t->mu);
  push_locked(p, ev);
  pthread_mutex_unlock(&p->t->mu);
  return 1;
}

static void drain_wake(int fd) {
  uint64_t v;
  if (read(fd, &v, sizeof v) < 0) {
    /* nothing pending */
  }
}

/* Waits while a subscriber's queue is full, still enforcing the deadline. */
static void wait_for_space(proc *p) {
  proc_table *t = p->t;
  pthread_mutex_lock(&t->mu);
  while (any_sub_full_locked(p)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    pthread_mutex_unlock(&t->mu);
    maybe_kill_for_deadline(p);
    pthread_mutex_lock(&t->mu);
  }
  pthread_mutex_unlock(&t->mu);
}

static void *reader_main(void *arg) {
  proc *p = arg;
  proc_table *t = p->t;
  unsigned char *buf = xmalloc(READ_CHUNK);
  int is_pty = p->pty_fd >= 0;
  /* Only this thread reads these; the pty master itself stays open for input. */
  int rfd[2] = {is_pty ? p->pty_fd : p->out_fd, is_pty ? -1 : p->err_fd};
  while (rfd[0] >= 0 || rfd[1] >= 0) {
    wait_for_space(p);
    struct pollfd pf[3] = {{rfd[0], POLLIN, 0}, {rfd[1], POLLIN, 0}, {p->wake_fd, POLLIN, 0}};
    int rc = poll(pf, 3, poll_timeout(p));
    if (rc < 0 && errno != EINTR) break;
    maybe_kill_for_deadline(p);
    if (pf[2].revents) drain_wake(p->wake_fd);
    for (int i = 0; i < 2; i++) {
      if (rfd[i] < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int kind = is_pty ? PEV_PTY : (i == 0 ? PEV_STDOUT : PEV_STDERR);
      if (pump(p, rfd[i], kind, buf)) continue;
      if (!is_pty) close(rfd[i]);
      rfd[i] = -1;
    }
  }
  free(buf);
  /* Pipes are drained: the end event waits only for the exit status. */
  pthread_mutex_lock(&t->mu);
  while (!p->exited) {
    pthread_mutex_unlock(&t->mu);
    struct pollfd pf = {p->wake_fd, POLLIN, 0};
    poll(&pf, 1, poll_timeout(p));
    maybe_kill_for_deadline(p);
    if (pf.revents) drain_wake(p->wake_fd);
    pthread_mutex_lock(&t->mu);
  }
  proc_event *end = xcalloc(1, sizeof *end);
  end->kind = PEV_END;
  end->status = p->status;
  push_locked(p, end);
  p->ended = 1;
  unlink_locked(p);
  int last = --p->refs == 0; /* the table's reference */
  pthread_mutex_unlock(&t->mu);
  if (last) proc_free(p);
  pthread_mutex_lock(&g_readers_mu);
  g_readers--;
  pthread_cond_broadcast(&g_readers_cv);
  pthread_mutex_unlock(&g_readers_mu);
  return NULL;
}

static proc_sub *sub_new_locked(proc *p) {
  proc_sub *s = xcalloc(1, sizeof *s);
  s->p = p;
  s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->efd < 0) {
    free(s);
    return NULL;
  }
  s->next = p->subs;
  p->subs = s;
  p->refs++;
  return s;
}

/* No thread could be made to read the output (the host is out of tasks, or
 * of memory): the process cannot be served, so it ends at once, as a kill
 * would end it, and its caller kills it (proc_unserved) once it holds no
 * lock; the server itself goes on. */
static void end_without_reader(proc *p, int why) {
  proc_table *t = p->t;
  log_msg("process %d: no thread to read its output (%s): killing it", p->pid, strerror(why));
  p->unserved = 1;
  if (p->pty_fd < 0) {
    close(p->out_fd);
    close(p->err_fd);
  }
  proc_event *end = xcalloc(1, sizeof *end);
  end->kind = PEV_END;
  end->status = SIGKILL;
  pthread_mutex_lock(&t->mu);
  push_locked(p, end);
  p->exited = p->ended = 1;
  unlink_locked(p);
  int last = --p->refs == 0; /* the table's reference */
  pthread_mutex_unlock(&t->mu);
  if (last) proc_free(p);
}

proc *proc_register(proc_table *t, const proc_spec *spec, proc_sub **first) {
  proc *p = xcalloc(1, sizeof *p);
  p->t = t;
  p->pid = spec->pid;
  p->tag = spec->tag ? xstrdup(spec->tag) : NULL;
  p->config = json_incref(spec->config);
  p->out_fd = spec->out_fd;
  p->err_fd = spec->err_fd;
  p->in_fd = spec->in_fd;
  p->pty_fd = spec->pty_fd;
  p->deadline_ms = spec->deadline_ms;
  p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
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
  if (first) *first = sub_new_locked(p);
  pthread_mutex_unlock(&t->mu);
  pthread_mutex_lock(&g_readers_mu);
  g_readers++;
  pthread_mutex_unlock(&g_readers_mu);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  int rc = pthread_create(&th, &attr, reader_main, p);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    end_without_reader(p, rc);
    pthread_mutex_lock(&g_readers_mu);
    g_readers--;
    pthread_cond_broadcast(&g_readers_cv);
    pthread_mutex_unlock(&g_readers_mu);
  }
  return p;
}

proc *proc_find(proc_table *t, int pid, const char *tag) {
  pthread_mutex_lock(&t->mu);
  proc *p = t->procs;
  for (; p; p = p->next) {
    if (pid > 0 && p->pid == pid) break;
    if (pid <= 0 && tag && p->tag && strcmp(p->tag, tag) == 0) break;
  }
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
  pthread_cond_broadcast(&p->t->cv); /* a full queue may have held the reader */
  pthread_mutex_unlock(&p->t->mu);
  pthread_mutex_lock(&p->t->mu);
  for (qnode *q = s->head, *n; q; q = n) {
    n = q->next;
    event_unref_locked(q->ev);
    free(q);
  }
  pthread_mutex_unlock(&p->t->mu);
  close(s->efd);
  free(s);
  proc_unref(p);
}

int proc_sub_next(proc_sub *s, int timeout_ms, int watch_fd, proc_event **ev) {
  proc_table *t = s->p->t;
  int64_t until = timeout_ms >= 0 ? mono_ms() + timeout_ms : -1;
  for (;;) {
    pthread_mutex_lock(&t->mu);
    qnode *q = s->head;
    if (q) {
      s->head = q->next;
      if (!s->head) s->tail = NULL;
      int was_full = s->bytes >= SUB_QUEUE_LIMIT;
      s->bytes -= q->ev->len;
      if (was_full && s->bytes < SUB_QUEUE_LIMIT) pthread_cond_broadcast(&t->cv);
      pthread_mutex_unlock(&t->mu);
      *ev = q->ev; /* the queue's reference passes to the caller */
      free(q);
      return PSUB_EVENT;
    }
    pthread_mutex_unlock(&t->mu);
    int wait = -1;
    if (until >= 0) {
      int64_t left = until - mono_ms();
      if (left <= 0) return PSUB_TIMEOUT;
      wait = (int)left;
    }
    struct pollfd pf[2] = {{s->efd, POLLIN, 0}, {watch_fd, POLLRDHUP, 0}};
    int rc = poll(pf, watch_fd >= 0 ? 2 : 1, wait);
    if (rc < 0 && errno != EINTR) return PSUB_HANGUP;
    if (watch_fd >= 0 && (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
      return PSUB_HANGUP;
    if (pf[0].revents) {
      uint64_t v;
      if (read(s->efd, &v, sizeof v) < 0) {
        /* raced with another wake: fine */
      }
    }
  }
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
  pthread_mutex_unlock(&p->t->mu);
  wake(p->wake_fd);
}

int proc_deadline_hit(proc *p) {
  pthread_mutex_lock(&p->t->mu);
  int hit = p->deadline_hit;
  pthread_mutex_unlock(&p->t->mu);
  return hit;
}

void proc_wait_all_readers(void) {
  pthread_mutex_lock(&g_readers_mu);
  while (g_readers > 0) pthread_cond_wait(&g_readers_cv, &g_readers_mu);
  pthread_mutex_unlock(&g_readers_mu);
}
