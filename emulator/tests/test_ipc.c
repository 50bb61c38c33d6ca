/* test_ipc.c — the server's side of the agent protocol refuses forged,
 * oversized and malformed messages with a clean error, allocates nothing
 * for a body it refuses, leaks no descriptor, and a channel that receives
 * one reports the violation and fails its pending calls. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "ipc.h"
#include "testing.h"

struct hdr {
  uint32_t type, id;
  int32_t err;
  uint32_t flags;
};

static int open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  while (d && readdir(d)) n++;
  if (d) closedir(d);
  return n;
}

/* Sends a raw frame: header, payload, and the given descriptors. */
static void send_raw(int sock, const struct hdr *h, size_t hlen, const char *payload, const int *fds,
                     int nfds) {
  char buf[256];
  memcpy(buf, h, hlen);
  size_t plen = payload ? strlen(payload) : 0;
  if (plen) memcpy(buf + hlen, payload, plen);
  struct iovec iov = {buf, hlen + plen};
  CHECK(ipc_sendmsg(sock, &iov, 1, fds, nfds, 0) == (ssize_t)(hlen + plen));
}

/* One frame in, ipc_recv's answer out; no descriptor may survive a refusal. */
static int recv_one(const struct hdr *h, size_t hlen, const char *payload, const int *fds, int nfds) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  send_raw(sv[1], h, hlen, payload, fds, nfds);
  for (int i = 0; i < nfds; i++) close(fds[i]);
  int before = open_fds();
  ipc_msg m;
  int rc = ipc_recv(sv[0], &m);
  if (rc == 1) ipc_msg_clear(&m);
  CHECK(open_fds() == before);
  close(sv[0]);
  close(sv[1]);
  return rc;
}

static int memfd_of_size(off_t size) {
  int fd = memfd_create("t", MFD_CLOEXEC);
  CHECK(fd >= 0 && ftruncate(fd, size) == 0);
  return fd;
}

static void test_decoder_refusals(void) {
  struct hdr h = {IPC_REPLY, 1, 0, 1};
  int fd = memfd_of_size((off_t)1 << 40); /* claims 1 TiB: refused before any allocation */
  CHECK(recv_one(&h, sizeof h, NULL, &fd, 1) == -EMSGSIZE);
  fd = memfd_of_size(IPC_BODY_MAX + 1);
  CHECK(recv_one(&h, sizeof h, NULL, &fd, 1) == -EMSGSIZE);
  CHECK(recv_one(&h, sizeof h, NULL, NULL, 0) == -EPROTO); /* body in fd, but no fd */
  int p[2];
  CHECK(pipe(p) == 0);
  close(p[1]);
  CHECK(recv_one(&h, sizeof h, NULL, &p[0], 1) == -EPROTO); /* a pipe is not a body */
  fd = memfd_of_size(0);
  CHECK(recv_one(&h, sizeof h, "{}", &fd, 1) == -EPROTO); /* inline bytes next to a body fd */
  struct hdr plain = {IPC_REPLY, 1, 0, 0};
  CHECK(recv_one(&plain, 6, NULL, NULL, 0) == -EPROTO); /* short header */
  struct hdr flags = {IPC_REPLY, 1, 0, 0x80};
  CHECK(recv_one(&flags, sizeof flags, "{}", NULL, 0) == -EPROTO);
  struct hdr neg = {IPC_REPLY, 1, -5, 0};
  CHECK(recv_one(&neg, sizeof neg, "{}", NULL, 0) == -EPROTO);
  struct hdr big = {IPC_REPLY, 1, 1 << 20, 0};
  CHECK(recv_one(&big, sizeof big, "{}", NULL, 0) == -EPROTO);
  CHECK(recv_one(&plain, sizeof plain, "[1,2]", NULL, 0) == -EPROTO);
  CHECK(recv_one(&plain, sizeof plain, "{\"a\":", NULL, 0) == -EPROTO);
  int many[5];
  for (int i = 0; i < 5; i++) many[i] = memfd_of_size(0);
  CHECK(recv_one(&plain, sizeof plain, "{}", many, 5) == -EPROTO); /* over IPC_MAX_FDS */
  int two[2] = {memfd_of_size(0), memfd_of_size(0)};
  CHECK(recv_one(&plain, sizeof plain, "{\"ok\":1}", two, 2) == 1);
}

static void test_round_trip_and_send_bound(void) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  json_t *body = json_object();
  size_t n = 200 * 1024; /* over the inline limit: travels in a memfd */
  char *s = malloc(n + 1);
  memset(s, 'x', n);
  s[n] = '\0';
  json_object_set_new(body, "s", json_string(s));
  CHECK(ipc_send(sv[1], IPC_REPLY, 7, 2, body, NULL, 0) == 0);
  ipc_msg m;
  CHECK(ipc_recv(sv[0], &m) == 1);
  CHECK(m.id == 7 && m.err == 2 && json_string_length(json_object_get(m.body, "s")) == n);
  ipc_msg_clear(&m);
  free(s);
  json_decref(body);
  /* a sender never produces what a receiver must refuse */
  n = IPC_BODY_MAX + 16;
  s = malloc(n + 1);
  memset(s, 'y', n);
  s[n] = '\0';
  body = json_pack("{s:s}", "s", s);
  CHECK(ipc_send(sv[1], IPC_REPLY, 8, 0, body, NULL, 0) == -EMSGSIZE);
  json_decref(body);
  free(s);
  close(sv[0]);
  close(sv[1]);
}

/* ---- channel: a violation cuts the agent off and fails pending calls ---- */

typedef struct seen {
  pthread_mutex_t mu;
  int exits, violations, broken;
  char why[64];
} seen;

static void on_exit_cb(void *ctx, int pid, int status) {
  (void)pid;
  (void)status;
  seen *s = ctx;
  pthread_mutex_lock(&s->mu);
  s->exits++;
  pthread_mutex_unlock(&s->mu);
}

static void on_broken_cb(void *ctx) {
  seen *s = ctx;
  pthread_mutex_lock(&s->mu);
  s->broken++;
  pthread_mutex_unlock(&s->mu);
}

static void on_violation_cb(void *ctx, const char *why) {
  seen *s = ctx;
  pthread_mutex_lock(&s->mu);
  s->violations++;
  snprintf(s->why, sizeof s->why, "%s", why);
  pthread_mutex_unlock(&s->mu);
}

/* A channel on one end of a fresh socket pair (sv[1]: the agent's end),
 * its callbacks counting into s. */
static channel *open_channel(int sv[2], seen *s) {
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  channel_ops ops = {on_exit_cb, on_broken_cb, NULL, NULL, on_violation_cb};
  return channel_open(sv[0], &ops, s);
}

/* The forged frame is sent from the agent's end; channel_call must come back
 * with -EPIPE (not hang) and the peer must see EOF. */
static void expect_violation(const struct hdr *h, const char *payload, const int *fds, int nfds,
                             const char *why) {
  int sv[2];
  seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
  channel *c = open_channel(sv, &s);
  send_raw(sv[1], h, sizeof *h, payload, fds, nfds);
  for (int i = 0; i < nfds; i++) close(fds[i]);
  ipc_msg reply;
  int rc = channel_call(c, IPC_STAT, NULL, &reply);
  CHECK(rc == -EPIPE);
  char buf[64];
  ssize_t r;
  do { /* the request may be queued before the cut: drain to EOF */
    r = recv(sv[1], buf, sizeof buf, 0);
  } while (r > 0);
  CHECK(r == 0);
  channel_close(c);
  CHECK(s.violations == 1 && s.exits == 0 && s.broken == 1);
  CHECK_STR(s.why, why);
  close(sv[1]);
}

static void test_channel_violations(void) {
  struct hdr h = {IPC_EXIT, 0, 0, 1};
  int fd = memfd_of_size((off_t)1 << 40);
  expect_violation(&h, NULL, &fd, 1, "message body too large");
  struct hdr ex = {IPC_EXIT, 0, 0, 0};
  expect_violation(&ex, "{\"pid\":-4,\"status\":0}", NULL, 0, "bad exit notice");
  expect_violation(&ex, "{\"pid\":12,\"status\":\"x\"}", NULL, 0, "bad exit notice");
  struct hdr w = {IPC_WATCH_EVENT, 0, 0, 0};
  expect_violation(&w, "{\"id\":1,\"name\":5,\"type\":\"create\"}", NULL, 0, "bad watch event");
  struct hdr eg = {IPC_EGRESS, 0, 0, 0};
  expect_violation(&eg, "{}", NULL, 0, "bad egress notice");
  struct hdr unk = {999, 0, 0, 0};
  expect_violation(&unk, "{}", NULL, 0, "unknown message type");
  struct hdr bad = {IPC_REPLY, 1, 0, 0};
  expect_violation(&bad, "not json", NULL, 0, "malformed message");
}

typedef struct caller {
  channel *c;
  int rc;
  int64_t ms;
} caller;

static int64_t mono_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *call_main(void *arg) {
  caller *k = arg;
  ipc_msg reply;
  int64_t t0 = mono_now_ms();
  k->rc = channel_call(k->c, IPC_STAT, NULL, &reply);
  k->ms = mono_now_ms() - t0;
  if (k->rc == 0) ipc_msg_clear(&reply);
  return NULL;
}

/* An agent that never answers: a call ends at its deadline, a late reply is
 * dropped with its descriptors, and a close fails a call in flight at once
 * while the caller's reference keeps the channel. */
static void test_channel_deadlines(void) {
  int sv[2];
  seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
  channel *c = open_channel(sv, &s);
  int before = open_fds();
  ipc_msg reply;
  int64_t t0 = mono_now_ms();
  CHECK(channel_call_within(c, IPC_STAT, NULL, &reply, 200) == -ETIMEDOUT);
  CHECK(mono_now_ms() - t0 >= 200 && mono_now_ms() - t0 < 2000);
  int late = memfd_of_size(1);
  struct hdr h = {IPC_REPLY, 1, 0, 0};
  send_raw(sv[1], &h, sizeof h, "{}", &late, 1); /* the first call's id, answered late */
  close(late);
  caller k = {c, 0, 0};
  channel_ref(c); /* the caller's, as sandbox_call takes it */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, call_main, &k) == 0);
  usleep(100000);
  t0 = mono_now_ms();
  channel_close(c); /* a kill: the call in flight fails now, not at its deadline */
  pthread_join(t, NULL);
  CHECK(k.rc == -EPIPE);
  CHECK(mono_now_ms() - t0 < 1000);
  channel_unref(c);
  CHECK(s.violations == 0);
  close(sv[1]);
  CHECK(open_fds() <= before - 1); /* the late reply's descriptor and the channel's socket are closed */
}

/* ---- channel: a reply wakes the caller it is for, and no other ---- */

#define CROWD 160

typedef struct crowd_caller {
  channel *c;
  json_t *req;
  int rc;
} crowd_caller;

static void *crowd_call(void *arg) {
  crowd_caller *k = arg;
  ipc_msg reply;
  k->rc = channel_call(k->c, IPC_STAT, k->req, &reply);
  if (k->rc == 0) ipc_msg_clear(&reply);
  return NULL;
}

/* The agent's side: once the crowd has queued up, each request answered as
 * it is taken, one at a time, as the single-threaded agent does. */
static void *crowd_agent(void *arg) {
  int sock = *(int *)arg;
  usleep(300000);
  for (int i = 0; i < CROWD; i++) {
    ipc_msg m;
    if (ipc_recv(sock, &m) != 1) break;
    ipc_send(sock, IPC_REPLY, m.id, 0, NULL, NULL, 0);
    ipc_msg_clear(&m);
  }
  return NULL;
}

/* A burst of starts (a kept command's request carries its wrapper, a few
 * KiB) fills the socket's buffer. Callers that each slept in the send, or on
 * one condition every reply broadcast, were all woken by every request the
 * agent took and every reply it sent: hundreds of wake-ups per call, most of
 * e2b-local's CPU in a burst. Counted in this process's voluntary context
 * switches (every thread's), never timed. */
static void test_channel_wakes_only_the_caller(void) {
  int sv[2];
  seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
  channel *c = open_channel(sv, &s);
  char pad[8192];
  memset(pad, 'x', sizeof pad - 1);
  pad[sizeof pad - 1] = 0;
  json_t *req = json_pack("{ss}", "pad", pad);
  static crowd_caller k[CROWD];
  pthread_t t[CROWD], agent;
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  CHECK(pthread_create(&agent, NULL, crowd_agent, &sv[1]) == 0);
  for (int i = 0; i < CROWD; i++) {
    k[i] = (crowd_caller){c, req, -1};
    CHECK(pthread_create(&t[i], NULL, crowd_call, &k[i]) == 0);
  }
  int answered = 0;
  for (int i = 0; i < CROWD; i++) {
    pthread_join(t[i], NULL);
    answered += k[i].rc == 0;
  }
  pthread_join(agent, NULL);
  getrusage(RUSAGE_SELF, &r1);
  long switches = r1.ru_nvcsw - r0.ru_nvcsw;
  CHECK(answered == CROWD);
  if (switches >= 16 * CROWD) fprintf(stderr, "%ld voluntary switches for %d calls\n", switches, CROWD);
  CHECK(switches < 16 * CROWD);
  json_decref(req);
  channel_close(c);
  close(sv[1]);
}

int main(void) {
  test_decoder_refusals();
  test_round_trip_and_send_bound();
  test_channel_violations();
  test_channel_deadlines();
  test_channel_wakes_only_the_caller();
  printf("%d checks, %d failures\n", testing_checks, testing_failures);
  return testing_failures ? 1 : 0;
}
