/* test_proc.c — the server's reading of its processes' output (proc.c), fed
 * by pipes this test writes and relayed to it as the agent relays them
 * (agent_relay.c, pumped by a thread of this test): bytes exact and in order
 * per stream, the end only after every byte, a subscriber that does not read
 * holds the writer (bounded queue), a flooding process or table never
 * starves another, a deadline kills, and what one running process costs (no
 * thread, no descriptor of its own beyond its relay socket). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "ipc.h"
#include "proc.h"
#include "util.h"
#include "testing.h"

#define WAIT_MS 10000 /* how long an event may take before the test calls it lost */

static pthread_mutex_t g_sig_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_sig_pid, g_sig_num, g_sig_calls;

static int record_signal(const char *key, int pid, int sig) {
  (void)key;
  pthread_mutex_lock(&g_sig_mu);
  g_sig_pid = pid;
  g_sig_num = sig;
  g_sig_calls++;
  pthread_mutex_unlock(&g_sig_mu);
  return 0;
}

static int count_dir(const char *path) {
  int n = 0;
  DIR *d = opendir(path);
  while (d && readdir(d)) n++;
  if (d) closedir(d);
  return n;
}

static int open_fds(void) { return count_dir("/proc/self/fd"); }
static int threads(void) { return count_dir("/proc/self/task"); }

/* A command's pipes as the test writes them (out[1], err[1]), and the
 * server's end of the relay that reads them. */
typedef struct pipes {
  int out[2], err[2];
  int relay;
} pipes;

static void make_pipes(pipes *pp) {
  CHECK(pipe2(pp->out, O_CLOEXEC) == 0);
  CHECK(pipe2(pp->err, O_CLOEXEC) == 0);
  CHECK(relay_start(pp->out[0], pp->err[0], &pp->relay) == 0);
}

/* The agent's side of every relay in this test. */
static volatile int g_pump_stop;

static void *pump_main(void *arg) {
  (void)arg;
  struct pollfd pf = {relay_fd(), POLLIN, 0};
  while (!g_pump_stop)
    if (poll(&pf, 1, 50) > 0) relay_run();
  return NULL;
}

static proc *reg(proc_table *t, int pid, pipes *pp, int64_t deadline, proc_sub **first) {
  proc_spec spec = {.pid = pid, .config = NULL, .tag = NULL, .out_fd = pp->relay,
                    .in_fd = -1, .pty_fd = -1, .deadline_ms = deadline};
  return proc_register(t, &spec, first);
}

typedef struct got {
  sbuf out, err, pty;
  int ended, status, after_end;
} got;

/* Takes events until the end (or until none comes for WAIT_MS). */
static void collect(proc_sub *s, got *g) {
  proc_event *ev;
  while (proc_sub_next(s, WAIT_MS, -1, &ev) == PSUB_EVENT) {
    if (g->ended) g->after_end++;
    if (ev->kind == PEV_END) {
      g->ended = 1;
      g->status = ev->status;
    } else {
      sbuf *b = ev->kind == PEV_STDOUT ? &g->out : ev->kind == PEV_STDERR ? &g->err : &g->pty;
      sbuf_append(b, ev->data, ev->len);
    }
    int end = ev->kind == PEV_END;
    proc_event_free(s, ev);
    if (end) break;
  }
}

static void got_free(got *g) {
  sbuf_free(&g->out);
  sbuf_free(&g->err);
  sbuf_free(&g->pty);
}

/* A table of one process on fresh pipes, registered with its first subscriber. */
static proc *start_case(proc_table **t, const char *key, int pid, pipes *pp, proc_sub **s) {
  *t = proc_table_new(record_signal, key);
  make_pipes(pp);
  *s = NULL;
  return reg(*t, pid, pp, 0, s);
}

/* Every case's end: the subscriber, the process and the table go. */
static void finish(proc_table *t, proc *p, proc_sub *s) {
  proc_unsubscribe(s);
  proc_unref(p);
  proc_table_abort(t);
  proc_table_unref(t);
}

/* The process ends: its writers close, then its exit status arrives. */
static void exit_with(proc_table *t, int pid, pipes *pp, int status) {
  close(pp->out[1]);
  close(pp->err[1]);
  proc_table_exited(t, pid, status);
}

/* Writes 64 KiB blocks to fd (non-blocking) until 20 tries in a row find
 * it full, or cap bytes went in: how many did. */
static size_t fill_until_stalled(int fd, size_t cap) {
  static char block[65536];
  size_t written = 0;
  fcntl(fd, F_SETFL, O_NONBLOCK);
  for (int stalled = 0; stalled < 20 && written < cap;) {
    ssize_t n = write(fd, block, sizeof block);
    if (n > 0) {
      written += (size_t)n;
      stalled = 0;
    } else {
      stalled++;
      usleep(10000);
    }
  }
  return written;
}

/* Writes o and e alternately in pieces of 100 bytes, then closes both. */
typedef struct wargs {
  pipes *pp;
  sbuf *o, *e;
} wargs;

static void *writer(void *arg) {
  wargs *wa = arg;
  size_t oi = 0, ei = 0;
  while (oi < wa->o->len || ei < wa->e->len) {
    size_t n = wa->o->len - oi < 100 ? wa->o->len - oi : 100;
    if (n && write_all(wa->pp->out[1], wa->o->data + oi, n) == 0) oi += n;
    size_t m = wa->e->len - ei < 100 ? wa->e->len - ei : 100;
    if (m && write_all(wa->pp->err[1], wa->e->data + ei, m) == 0) ei += m;
  }
  close(wa->pp->out[1]);
  close(wa->pp->err[1]);
  return NULL;
}

/* NUL, invalid UTF-8, no final newline, more than one read's worth, and the
 * exit notice before the output: the end still comes after every byte. */
static void test_bytes_exact_and_end_last(void) {
  proc_table *t;
  pipes pp;
  proc_sub *s;
  proc *p = start_case(&t, "bytes", 101, &pp, &s);
  CHECK(s != NULL && !proc_unserved(p));
  proc_table_exited(t, 101, 3 << 8);
  sbuf want_out = {0}, want_err = {0};
  static const char odd[] = {'a', 0, (char)0xff, (char)0xfe, 'b', (char)0xc3};
  for (int i = 0; i < 40; i++) {
    char line[64];
    int n = snprintf(line, sizeof line, "chunk %d\n", i);
    sbuf_append(&want_out, line, (size_t)n);
    sbuf_append(&want_out, odd, sizeof odd);
    sbuf_append(&want_err, odd, sizeof odd);
    sbuf_append(&want_err, line, (size_t)n);
  }
  static char big[200000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7 + 3);
  sbuf_append(&want_out, big, sizeof big);
  got g = {0};
  pthread_t th;
  /* a writer thread: the pipes hold less than the big part */
  wargs wa = {&pp, &want_out, &want_err};
  CHECK(pthread_create(&th, NULL, writer, &wa) == 0);
  collect(s, &g);
  pthread_join(th, NULL);
  CHECK(g.ended && g.after_end == 0);
  CHECK(g.status == (3 << 8));
  CHECK_MEM(g.out.data, g.out.len, want_out.data, want_out.len);
  CHECK_MEM(g.err.data, g.err.len, want_err.data, want_err.len);
  got_free(&g);
  sbuf_free(&want_out);
  sbuf_free(&want_err);
  finish(t, p, s);
}

/* A subscriber that does not read stops the reading once it holds 1 MiB:
 * the writer blocks (the pipe stays full) instead of the server or the
 * relay buffering. */
static void test_backpressure(void) {
  proc_table *t;
  pipes pp;
  proc_sub *s;
  proc *p = start_case(&t, "bp", 102, &pp, &s);
  size_t written = fill_until_stalled(pp.out[1], 64u << 20);
  /* 1 MiB queued + one read in flight + the relay's socket and held
   * packet + what the pipe itself holds */
  CHECK(written <= (1u << 20) + 2 * 65536 + 1048576);
  CHECK(written >= (1u << 20));
  /* draining resumes the reading: every byte arrives */
  fcntl(pp.out[1], F_SETFL, 0);
  exit_with(t, 102, &pp, 0);
  got g = {0};
  collect(s, &g);
  CHECK(g.ended && g.out.len == written);
  got_free(&g);
  finish(t, p, s);
}

/* The command ends while the relay holds a packet the full socket had no
 * room for (its pipes then report a hangup even while not read): every byte
 * still arrives, once and in order. */
static void test_end_while_held(void) {
  proc_table *t;
  pipes pp;
  proc_sub *s;
  proc *p = start_case(&t, "held", 104, &pp, &s);
  sbuf sent = {0};
  unsigned char block[4096];
  fcntl(pp.out[1], F_SETFL, O_NONBLOCK);
  for (int stalled = 0, k = 0; stalled < 20;) {
    for (size_t i = 0; i < sizeof block; i++) block[i] = (unsigned char)(k * 131 + i * 7);
    ssize_t n = write(pp.out[1], block, sizeof block);
    if (n > 0) {
      sbuf_append(&sent, block, (size_t)n);
      stalled = 0;
      k++;
    } else {
      stalled++;
      usleep(10000);
    }
  }
  exit_with(t, 104, &pp, 0);
  usleep(300000); /* the relay sees the hangup while the socket is still full */
  got g = {0};
  collect(s, &g);
  CHECK(g.ended);
  CHECK_MEM(g.out.data, g.out.len, sent.data, sent.len);
  got_free(&g);
  sbuf_free(&sent);
  finish(t, p, s);
}

/* A held reader resumes when its full subscriber leaves (output is then
 * read and dropped), and a later subscriber still sees the end. */
static void test_unsubscribe_resumes(void) {
  proc_table *t;
  pipes pp;
  proc_sub *s;
  proc *p = start_case(&t, "unsub", 103, &pp, &s);
  static char block[65536];
  fill_until_stalled(pp.out[1], (size_t)-1); /* the subscriber holds 1 MiB: the reader stops */
  proc_sub *s2 = proc_subscribe(p);
  proc_unsubscribe(s); /* s2 is empty: the reader goes on */
  fcntl(pp.out[1], F_SETFL, 0);
  CHECK(write_all(pp.out[1], block, sizeof block) == 0); /* would block forever if still held */
  exit_with(t, 103, &pp, 0);
  got g = {0};
  collect(s2, &g);
  CHECK(g.ended && g.out.len >= sizeof block);
  got_free(&g);
  finish(t, p, s2);
}

typedef struct flood {
  int fd;
  volatile int stop;
  size_t sent;
} flood;

static void *flood_main(void *arg) {
  flood *f = arg;
  static char block[65536];
  while (!f->stop) {
    if (write_all(f->fd, block, sizeof block) != 0) break;
    f->sent += sizeof block;
  }
  return NULL;
}

/* Reads everything a subscriber gets until told to stop. */
typedef struct drain {
  proc_sub *s;
  volatile int stop;
} drain;

static void *drain_main(void *arg) {
  drain *d = arg;
  while (!d->stop) {
    proc_event *ev;
    if (proc_sub_next(d->s, 50, -1, &ev) != PSUB_EVENT) continue;
    int end = ev->kind == PEV_END;
    proc_event_free(d->s, ev);
    if (end) break;
  }
  return NULL;
}

/* While `noisy` floods (with an eager reader of its own), `quiet` still gets
 * each of its lines: one line, then wait for it, 50 times. */
static void ping_pong(proc_table *quiet_t, int quiet_pid, proc_table *noisy_t, int noisy_pid) {
  pipes q, n;
  make_pipes(&q);
  make_pipes(&n);
  proc_sub *qs = NULL, *ns = NULL;
  proc *qp = reg(quiet_t, quiet_pid, &q, 0, &qs);
  proc *np = reg(noisy_t, noisy_pid, &n, 0, &ns);
  flood f = {n.out[1], 0, 0};
  drain d = {ns, 0};
  pthread_t ft, dt;
  CHECK(pthread_create(&ft, NULL, flood_main, &f) == 0);
  CHECK(pthread_create(&dt, NULL, drain_main, &d) == 0);
  while (f.sent < (4u << 20)) usleep(1000); /* the flood is on */
  int lines = 0;
  for (int i = 0; i < 50; i++) {
    char line[32];
    int len = snprintf(line, sizeof line, "line %d\n", i);
    CHECK(write_all(q.out[1], line, (size_t)len) == 0);
    proc_event *ev;
    if (proc_sub_next(qs, WAIT_MS, -1, &ev) != PSUB_EVENT) break;
    lines += ev->kind == PEV_STDOUT && ev->len == (size_t)len && memcmp(ev->data, line, (size_t)len) == 0;
    proc_event_free(qs, ev);
  }
  CHECK(lines == 50);
  CHECK(!f.stop); /* the flood never paused for it */
  f.stop = 1;
  d.stop = 1;
  pthread_join(dt, NULL);
  proc_unsubscribe(ns); /* nobody holds the flood now: it drains */
  pthread_join(ft, NULL);
  close(n.out[1]);
  close(n.err[1]);
  close(q.out[1]);
  close(q.err[1]);
  proc_table_exited(quiet_t, quiet_pid, 0);
  proc_table_exited(noisy_t, noisy_pid, 0);
  got g = {0};
  collect(qs, &g);
  CHECK(g.ended);
  got_free(&g);
  proc_unsubscribe(qs);
  proc_unref(qp);
  proc_unref(np);
}

static void test_fairness(void) {
  proc_table *a = proc_table_new(record_signal, "fair-a");
  proc_table *b = proc_table_new(record_signal, "fair-b");
  ping_pong(a, 201, a, 202); /* two processes of one sandbox */
  ping_pong(a, 203, b, 204); /* two sandboxes */
  proc_table_abort(a);
  proc_table_abort(b);
  proc_table_unref(a);
  proc_table_unref(b);
}

/* What running processes cost the server: their relay sockets, nothing more. */
static void test_cost_per_process(void) {
  enum { N = 200 };
  proc_table *t = proc_table_new(record_signal, "cost");
  static pipes pp[N];
  static proc *ps[N];
  for (int i = 0; i < N; i++) make_pipes(&pp[i]);
  int fds0 = open_fds(), th0 = threads();
  for (int i = 0; i < N; i++) ps[i] = reg(t, 1000 + i, &pp[i], 0, NULL);
  int fds1 = open_fds(), th1 = threads();
  fprintf(stderr, "%d processes: %d more threads, %d more descriptors\n", N, th1 - th0, fds1 - fds0);
  CHECK(th1 - th0 <= 2);  /* one reader for the table */
  CHECK(fds1 - fds0 <= 4); /* its epoll set and wake-up: none per process */
  static proc_sub *subs[N];
  for (int i = 0; i < N; i++) subs[i] = proc_subscribe(ps[i]);
  int fds2 = open_fds();
  fprintf(stderr, "%d subscribers: %d more descriptors\n", N, fds2 - fds1);
  CHECK(fds2 == fds1); /* a stream's subscriber waits on no descriptor of its own */
  for (int i = 0; i < N; i++) {
    close(pp[i].out[1]);
    close(pp[i].err[1]);
    proc_table_exited(t, 1000 + i, 0);
  }
  for (int i = 0; i < N; i++) {
    got g = {0};
    collect(subs[i], &g);
    CHECK(g.ended);
    got_free(&g);
    proc_unsubscribe(subs[i]);
    proc_unref(ps[i]);
  }
  proc_table_abort(t);
  proc_table_unref(t);
}

/* A deadline kills through the table's signal function, once. */
static void test_deadline(void) {
  proc_table *t = proc_table_new(record_signal, "deadline");
  pipes pp;
  make_pipes(&pp);
  proc_sub *s = NULL;
  pthread_mutex_lock(&g_sig_mu);
  g_sig_calls = 0;
  pthread_mutex_unlock(&g_sig_mu);
  proc *p = reg(t, 301, &pp, mono_ms() + 100, &s);
  int64_t until = mono_ms() + WAIT_MS;
  while (!proc_deadline_hit(p) && mono_ms() < until) usleep(5000);
  usleep(50000);
  pthread_mutex_lock(&g_sig_mu);
  CHECK(g_sig_calls == 1 && g_sig_pid == 301 && g_sig_num == SIGKILL);
  pthread_mutex_unlock(&g_sig_mu);
  CHECK(proc_deadline_hit(p));
  exit_with(t, 301, &pp, SIGKILL);
  got g = {0};
  collect(s, &g);
  CHECK(g.ended && g.status == SIGKILL);
  got_free(&g);
  finish(t, p, s);
}

/* A process registered after its agent went away (the spawn's reply came
 * first) gets no exit notice: it ends as killed once its pipes close. */
static void test_register_after_abort(void) {
  proc_table *t = proc_table_new(record_signal, "late");
  proc_table_abort(t);
  pipes pp;
  make_pipes(&pp);
  proc_sub *s = NULL;
  proc *p = reg(t, 401, &pp, 0, &s);
  CHECK(write_all(pp.out[1], "tail", 4) == 0);
  close(pp.out[1]);
  close(pp.err[1]);
  got g = {0};
  collect(s, &g);
  CHECK(g.ended && g.status == SIGKILL);
  CHECK_MEM(g.out.data, g.out.len, "tail", 4);
  got_free(&g);
  proc_unsubscribe(s);
  proc_unref(p);
  proc_table_unref(t);
}

/* A pty: one stream, read until the last slave closes. */
static void test_pty(void) {
  proc_table *t = proc_table_new(record_signal, "pty");
  int master, slave;
  CHECK(openpty(&master, &slave, NULL, NULL, NULL) == 0);
  proc_spec spec = {.pid = 501, .out_fd = -1, .in_fd = -1, .pty_fd = master};
  proc_sub *s = NULL;
  proc *p = proc_register(t, &spec, &s);
  CHECK(write_all(slave, "x\001y", 3) == 0);
  proc_table_exited(t, 501, 0);
  got g = {0};
  proc_event *ev;
  CHECK(proc_sub_next(s, WAIT_MS, -1, &ev) == PSUB_EVENT && ev->kind == PEV_PTY);
  sbuf_append(&g.pty, ev->data, ev->len);
  proc_event_free(s, ev);
  close(slave);
  collect(s, &g);
  CHECK(g.ended);
  CHECK(g.pty.len >= 3 && memcmp(g.pty.data, "x\001y", 3) == 0);
  got_free(&g);
  finish(t, p, s);
}

/* A waiting stream notices its client left, and times out when asked to. */
static void test_hangup_and_timeout(void) {
  proc_table *t;
  pipes pp;
  proc_sub *s;
  proc *p = start_case(&t, "hangup", 701, &pp, &s);
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  proc_event *ev;
  CHECK(proc_sub_next(s, 50, sv[0], &ev) == PSUB_TIMEOUT);
  close(sv[1]);
  CHECK(proc_sub_next(s, WAIT_MS, sv[0], &ev) == PSUB_HANGUP);
  close(sv[0]);
  exit_with(t, 701, &pp, 0);
  got g = {0};
  collect(s, &g);
  CHECK(g.ended);
  got_free(&g);
  finish(t, p, s);
}

/* Out of descriptors: the process fails cleanly (unserved, or served
 * without a subscriber), nothing aborts, and the next one works. */
static void test_no_descriptors(void) {
  proc_table *t = proc_table_new(record_signal, "nofd");
  pipes pp, pp2;
  make_pipes(&pp);
  make_pipes(&pp2);
  struct rlimit old, low;
  getrlimit(RLIMIT_NOFILE, &old);
  int spare[64], ns = 0;
  low = old;
  low.rlim_cur = (rlim_t)open_fds() + 8;
  setrlimit(RLIMIT_NOFILE, &low);
  while (ns < 64 && (spare[ns] = dup(0)) >= 0) ns++; /* every slot taken */
  proc_sub *s = NULL;
  proc *p = reg(t, 601, &pp, 0, &s);
  for (int i = 0; i < ns; i++) close(spare[i]);
  setrlimit(RLIMIT_NOFILE, &old);
  CHECK(p != NULL && (proc_unserved(p) || s == NULL));
  if (s) proc_unsubscribe(s);
  proc_unref(p);
  exit_with(t, 601, &pp, SIGKILL);
  proc_sub *s2 = NULL;
  proc *p2 = reg(t, 602, &pp2, 0, &s2);
  CHECK(s2 != NULL && !proc_unserved(p2));
  CHECK(write_all(pp2.out[1], "ok", 2) == 0);
  close(pp2.out[1]);
  close(pp2.err[1]);
  proc_table_exited(t, 602, 0);
  got g = {0};
  collect(s2, &g);
  CHECK(g.ended && g.status == 0);
  CHECK_MEM(g.out.data, g.out.len, "ok", 2);
  got_free(&g);
  proc_unsubscribe(s2);
  proc_unref(p2);
  proc_table_abort(t);
  proc_table_unref(t);
}

/* The agent is untrusted: a relay packet with an unknown stream byte, or
 * one larger than a packet may be, ends that process's output (what came
 * before it is kept), and nothing else; an empty packet is no output. */
static void malformed_case(const unsigned char *bad, size_t bad_len, int pid) {
  proc_table *t = proc_table_new(record_signal, "malformed");
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  int sndbuf = 1 << 20;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  proc_spec spec = {.pid = pid, .out_fd = sv[1], .in_fd = -1, .pty_fd = -1};
  proc_sub *s = NULL;
  proc *p = proc_register(t, &spec, &s);
  static const unsigned char ok[] = {IPC_OUT_STDOUT, 'o', 'k'}, empty[] = {IPC_OUT_STDERR};
  CHECK(send(sv[0], ok, sizeof ok, 0) == (ssize_t)sizeof ok);
  CHECK(send(sv[0], empty, sizeof empty, 0) == (ssize_t)sizeof empty);
  CHECK(send(sv[0], bad, bad_len, 0) == (ssize_t)bad_len);
  CHECK(send(sv[0], ok, sizeof ok, 0) == (ssize_t)sizeof ok); /* after the end: never read */
  proc_table_exited(t, pid, 0);
  got g = {0};
  collect(s, &g);
  CHECK(g.ended && g.status == 0 && g.err.len == 0);
  CHECK_MEM(g.out.data, g.out.len, "ok", 2);
  got_free(&g);
  close(sv[0]);
  finish(t, p, s);
}

static void test_malformed_packets(void) {
  static const unsigned char unknown[] = {9, 'x'};
  malformed_case(unknown, sizeof unknown, 801);
  static unsigned char oversize[1 + IPC_OUT_CHUNK + 1];
  oversize[0] = IPC_OUT_STDOUT;
  malformed_case(oversize, sizeof oversize, 802);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  signal(SIGPIPE, SIG_IGN);
  alarm(120); /* a lost wake-up fails the test instead of hanging ctest */
  CHECK(relay_fd() >= 0);
  pthread_t pump;
  CHECK(pthread_create(&pump, NULL, pump_main, NULL) == 0);
  RUN(test_bytes_exact_and_end_last);
  RUN(test_backpressure);
  RUN(test_end_while_held);
  RUN(test_unsubscribe_resumes);
  RUN(test_fairness);
  RUN(test_cost_per_process);
  RUN(test_deadline);
  RUN(test_register_after_abort);
  RUN(test_pty);
  RUN(test_hangup_and_timeout);
  RUN(test_no_descriptors);
  RUN(test_malformed_packets);
  proc_wait_all_readers();
  g_pump_stop = 1;
  pthread_join(pump, NULL);
  return TESTING_DONE();
}
