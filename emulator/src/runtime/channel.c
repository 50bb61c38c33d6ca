/* channel.c — request/reply correlation over the agent socket. */
#define _GNU_SOURCE
#include "channel.h"

#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* A call in flight waits on its own condition: a reply wakes the one
 * thread it is for, not every caller (a burst of starts has hundreds). */
typedef struct call {
  struct call *next;
  uint32_t id;
  int done, rc;
  pthread_cond_t cv;
  ipc_msg reply;
} call;

struct channel {
  int sock;
  pthread_t reader;
  pthread_mutex_t mu;
  pthread_condattr_t ca; /* the calls' conditions: CLOCK_MONOTONIC */
  /* One sender at a time: the others queue here, each woken alone, and not
   * in a send blocked on the socket's buffer, where every reply the agent
   * sends and every request it takes wakes all of them. */
  pthread_mutex_t send_mu;
  call *pending;
  uint32_t next_id;
  int broken, closing;
  int refs; /* the owner's and each call's (under mu) */
  channel_ops ops;
  void *ctx;
};

static void fail_pending_locked(channel *c) {
  for (call *k = c->pending; k; k = k->next) {
    if (k->done) continue;
    k->done = 1;
    k->rc = -EPIPE;
    pthread_cond_signal(&k->cv);
  }
}

static void deliver(channel *c, ipc_msg *m) {
  pthread_mutex_lock(&c->mu);
  for (call *k = c->pending; k; k = k->next) {
    if (k->id != m->id || k->done) continue;
    k->reply = *m;
    memset(m, 0, sizeof *m);
    k->done = 1;
    pthread_cond_signal(&k->cv);
    break;
  }
  pthread_mutex_unlock(&c->mu);
  ipc_msg_clear(m); /* nobody waited (cannot happen) or already moved */
}

static int is_int_in(json_t *v, json_int_t lo, json_int_t hi) {
  return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

static int is_short_string(json_t *v) { return json_is_string(v) && json_string_length(v) <= 16384; }

/* One notification from the agent; returns NULL or what was wrong with it.
 * Every field is checked before a consumer sees it: the agent is untrusted. */
static const char *dispatch(channel *c, ipc_msg *m) {
  switch (m->type) {
  case IPC_REPLY:
    deliver(c, m); /* an unknown id is dropped */
    return NULL;
  case IPC_EXIT: {
    json_t *pid = json_object_get(m->body, "pid"), *st = json_object_get(m->body, "status");
    if (!is_int_in(pid, 1, INT32_MAX) || !is_int_in(st, 0, 0xffff) || m->nfds) return "bad exit notice";
    if (c->ops.on_exit) c->ops.on_exit(c->ctx, (int)json_integer_value(pid), (int)json_integer_value(st));
    return NULL;
  }
  case IPC_EGRESS: {
    if (m->nfds != 1) return "bad egress notice";
    int fd = ipc_take_fd(m, 0);
    if (c->ops.on_egress)
      c->ops.on_egress(c->ctx, fd);
    else
      close(fd);
    return NULL;
  }
  case IPC_WATCH_EVENT: {
    /* a change, or (overflow: true, nothing else) events inotify dropped */
    int lost = json_is_true(json_object_get(m->body, "overflow")) && json_object_size(m->body) == 2;
    int change = !json_object_get(m->body, "overflow") && is_short_string(json_object_get(m->body, "name")) &&
                 is_short_string(json_object_get(m->body, "type"));
    if (!is_int_in(json_object_get(m->body, "id"), 1, UINT32_MAX) || m->nfds || !(lost || change))
      return "bad watch event";
    if (c->ops.on_watch) c->ops.on_watch(c->ctx, m->body);
    return NULL;
  }
  default:
    return "unknown message type";
  }
}

static void *reader_main(void *arg) {
  channel *c = arg;
  const char *why = NULL;
  for (;;) {
    ipc_msg m;
    int rc = ipc_recv(c->sock, &m);
    if (rc < 0 && rc != -EPIPE && rc != -ECONNRESET && rc != -EBADF)
      why = rc == -EMSGSIZE ? "message body too large" : "malformed message";
    if (rc <= 0) break;
    why = dispatch(c, &m);
    ipc_msg_clear(&m);
    if (why) break;
  }
  pthread_mutex_lock(&c->mu);
  int closing = c->closing;
  c->broken = 1;
  fail_pending_locked(c);
  pthread_mutex_unlock(&c->mu);
  if (why && !closing) {
    /* Cut the agent off: it sees EOF and exits, which ends its sandbox. */
    shutdown(c->sock, SHUT_RDWR);
    if (c->ops.on_violation) c->ops.on_violation(c->ctx, why);
  }
  if (!closing && c->ops.on_broken) c->ops.on_broken(c->ctx);
  return NULL;
}

channel *channel_open(int sock, const channel_ops *ops, void *ctx) {
  channel *c = xcalloc(1, sizeof *c);
  c->sock = sock;
  c->ops = *ops;
  c->ctx = ctx;
  c->next_id = 1;
  c->refs = 1;
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_init(&c->send_mu, NULL);
  pthread_condattr_init(&c->ca);
  pthread_condattr_setclock(&c->ca, CLOCK_MONOTONIC); /* call deadlines ignore clock steps */
  /* A request the agent does not take within the call's deadline is not
   * waited for either: a send never blocks its caller past it. */
  struct timeval tv = {CHANNEL_CALL_TIMEOUT_MS / 1000, 0};
  setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 128 * 1024);
  int rc = pthread_create(&c->reader, &attr, reader_main, c);
  pthread_attr_destroy(&attr);
  if (rc != 0) { /* the host is out of tasks: this sandbox cannot start, the server goes on */
    close(sock);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->send_mu);
    pthread_condattr_destroy(&c->ca);
    free(c);
    errno = rc;
    return NULL;
  }
  return c;
}

static void deadline_in(struct timespec *ts, int ms) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (long)(ms % 1000) * 1000000;
  if (ts->tv_nsec >= 1000000000) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000;
  }
}

/* Waits for k's reply until the deadline (under c->mu). 0, or -ETIMEDOUT. */
static int wait_reply_locked(channel *c, call *k, const struct timespec *deadline) {
  while (!k->done)
    if (pthread_cond_timedwait(&k->cv, &c->mu, deadline) == ETIMEDOUT && !k->done) return -ETIMEDOUT;
  return 0;
}

/* Sends k's request once the senders before it did, by the deadline. */
static int send_request(channel *c, uint32_t type, uint32_t id, json_t *req, const struct timespec *deadline) {
  if (pthread_mutex_clocklock(&c->send_mu, CLOCK_MONOTONIC, deadline) != 0) return -ETIMEDOUT;
  int rc = ipc_send(c->sock, type, id, 0, req, NULL, 0);
  pthread_mutex_unlock(&c->send_mu);
  return rc == -EAGAIN || rc == -EWOULDBLOCK ? -ETIMEDOUT : rc; /* SO_SNDTIMEO: the agent reads nothing */
}

int channel_call(channel *c, uint32_t type, json_t *req, ipc_msg *reply) {
  return channel_call_within(c, type, req, reply, CHANNEL_CALL_TIMEOUT_MS);
}

int channel_call_within(channel *c, uint32_t type, json_t *req, ipc_msg *reply, int timeout_ms) {
  call k = {0};
  struct timespec deadline;
  memset(reply, 0, sizeof *reply);
  deadline_in(&deadline, timeout_ms);
  pthread_mutex_lock(&c->mu);
  if (c->broken) {
    pthread_mutex_unlock(&c->mu);
    return -EPIPE;
  }
  pthread_cond_init(&k.cv, &c->ca);
  k.id = c->next_id++;
  if (c->next_id == 0) c->next_id = 1;
  k.next = c->pending;
  c->pending = &k;
  pthread_mutex_unlock(&c->mu);
  int rc = send_request(c, type, k.id, req, &deadline);
  pthread_mutex_lock(&c->mu);
  if (rc == 0) rc = wait_reply_locked(c, &k, &deadline);
  if (rc != 0 && k.done) ipc_msg_clear(&k.reply);
  for (call **pp = &c->pending; *pp; pp = &(*pp)->next)
    if (*pp == &k) {
      *pp = k.next; /* a late reply finds no call: dropped, its descriptors closed */
      break;
    }
  pthread_mutex_unlock(&c->mu);
  pthread_cond_destroy(&k.cv);
  if (rc != 0) return rc;
  if (k.rc != 0) return k.rc;
  *reply = k.reply;
  return 0;
}

void channel_ref(channel *c) {
  pthread_mutex_lock(&c->mu);
  c->refs++;
  pthread_mutex_unlock(&c->mu);
}

void channel_unref(channel *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  int last = --c->refs == 0;
  pthread_mutex_unlock(&c->mu);
  if (!last) return;
  close(c->sock); /* only now: a caller still sending must never reach a reused descriptor */
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->send_mu);
  pthread_condattr_destroy(&c->ca);
  free(c);
}

void channel_expect_close(channel *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  c->closing = 1;
  pthread_mutex_unlock(&c->mu);
}

void channel_close(channel *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  c->closing = 1;
  pthread_mutex_unlock(&c->mu);
  shutdown(c->sock, SHUT_RDWR); /* fails every call in flight: the reader sees EOF */
  pthread_join(c->reader, NULL);
  channel_unref(c);
}
