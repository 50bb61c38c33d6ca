/* test_events.c — what the loop waits on (events.c): a wakeup from another
 * thread ends a wait at once, a step with nothing ready acts on no socket,
 * and a forked child drives the loop it inherited with a set of its own
 * while the parent keeps driving its own, or without one when it has no
 * descriptor for it. Only loopback sockets this test
 * opens itself. */
#include "internal.h"
#include "loopback.h"
#include "testing.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define LONG_WAIT_MS 20000 /* a step that is not woken waits this long */

static void *wake_later(void *arg) {
  usleep(100 * 1000);
  e2b_loop_wakeup(arg);
  return NULL;
}

/* A step told to wait 20 s on a silent peer returns once another thread
 * wakes it (within the 10 s checked here, so a lost wakeup fails). */
static void a_wakeup_from_another_thread_ends_a_wait(void) {
  int port = 0, fd = listen_loopback(&port);
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  e2b_client *c = fd >= 0 && loop ? loopback_client(loop, port, E2B_NO_RETRY) : NULL;
  e2b_req *req = c ? e2b_sandbox_kill(c, "sbxundertest", &err) : NULL;
  CHECK(req != NULL);
  if (!req) return;
  for (int i = 0; i < 5; i++) e2b_loop_step(loop, 10); /* connected, sent, waiting */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, wake_later, loop) == 0);
  int64_t t0 = e2b_now_ms();
  e2b_loop_step(loop, LONG_WAIT_MS);
  CHECK(e2b_now_ms() - t0 < LONG_WAIT_MS / 2);
  pthread_join(t, NULL);
  CHECK(!e2b_req_done(req));
  e2b_req_free(req);
  e2b_client_release(c);
  e2b_loop_release(loop);
  close(fd);
}

/* Sixteen transfers (the default cap of control-plane requests) wait on a
 * silent peer: a step finds no socket ready and acts on none of them (the
 * loop's work follows readiness, not how many transfers it holds). */
static void a_step_with_nothing_ready_acts_on_no_socket(void) {
  int port = 0, fd = listen_loopback(&port);
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  e2b_client *c = fd >= 0 && loop ? loopback_client(loop, port, E2B_NO_RETRY) : NULL;
  e2b_req *reqs[E2B_DEFAULT_MAX_INFLIGHT] = {0};
  for (int i = 0; c && i < E2B_DEFAULT_MAX_INFLIGHT; i++) reqs[i] = e2b_sandbox_kill(c, "sbxundertest", &err);
  for (int i = 0; i < 20; i++) e2b_loop_step(loop, 10);
  CHECK(e2b_loop_active(loop) == E2B_DEFAULT_MAX_INFLIGHT);
  CHECK(loop->sock_count == E2B_DEFAULT_MAX_INFLIGHT);
  CHECK(e2b_events_perform(loop) == 0);
  for (int i = 0; i < E2B_DEFAULT_MAX_INFLIGHT; i++) e2b_req_free(reqs[i]);
  CHECK(e2b_loop_active(loop) == 0);
  e2b_client_release(c);
  e2b_loop_release(loop);
  close(fd);
}

/* A server process: answers each connection's request 204 and closes it
 * (a connection left in curl's cache at a fork would be both processes'),
 * until killed. */
static pid_t serve_204(int lfd) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  for (;;) {
    int conn = accept(lfd, NULL, NULL);
    if (conn < 0) continue;
    char buf[4096];
    size_t got = 0;
    ssize_t n;
    while ((n = recv(conn, buf + got, sizeof buf - 1 - got, 0)) > 0) {
      got += (size_t)n;
      buf[got] = '\0';
      if (!strstr(buf, "\r\n\r\n")) continue;
      const char *answer = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)send(conn, answer, strlen(answer), MSG_NOSIGNAL);
      break;
    }
    close(conn);
  }
}

/* Drives one kill through the loop: 1 when it got its answer. */
static int one_kill(e2b_loop *loop, e2b_client *c) {
  e2b_error err;
  e2b_req *req = e2b_sandbox_kill(c, "sbxundertest", &err);
  if (!req) return 0;
  for (int i = 0; i < 500 && !e2b_req_done(req); i++) e2b_loop_step(loop, 10);
  int ok = e2b_req_done(req) && e2b_req_error(req) == NULL;
  e2b_req_free(req);
  return ok;
}

/* A loop and a client whose requests a server process answers, one of
 * them answered already (the loop stepped before a fork). */
typedef struct served {
  int lfd;
  pid_t server;
  e2b_loop *loop;
  e2b_client *c;
} served;

static void served_close(served *s);

/* 1 once the server answered a first request; else the test fails and
 * what was made is freed. */
static int served_open(served *s) {
  int port = 0;
  *s = (served){.lfd = listen_loopback(&port), .server = -1};
  if (s->lfd >= 0) {
    s->server = serve_204(s->lfd);
    e2b_error err;
    s->loop = e2b_loop_new(&err);
    s->c = s->loop ? loopback_client(s->loop, port, E2B_NO_RETRY) : NULL;
  }
  int ok = s->c && one_kill(s->loop, s->c);
  CHECK(ok);
  if (!ok) served_close(s);
  return ok;
}

static void served_close(served *s) {
  if (s->server > 0) {
    kill(s->server, SIGKILL);
    waitpid(s->server, NULL, 0);
  }
  e2b_client_release(s->c);
  e2b_loop_release(s->loop);
  if (s->lfd >= 0) close(s->lfd);
}

static int child_succeeded(pid_t pid) {
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The child drives requests on the loop it inherited from a set of its
 * own, and the parent goes on with its own. */
static void a_forked_child_drives_its_own_set(void) {
  served s;
  if (!served_open(&s)) return;
  int parent_ep = s.loop->ep;
  pid_t child = fork();
  if (child == 0) {
    int ok = one_kill(s.loop, s.c) && one_kill(s.loop, s.c);
    _exit(ok && s.loop->pid == (int)getpid() && s.loop->ep >= 0 ? 0 : 1);
  }
  CHECK(one_kill(s.loop, s.c) && one_kill(s.loop, s.c));
  CHECK(s.loop->ep == parent_ep);
  CHECK(child_succeeded(child));
  served_close(&s);
}

/* A forked child with one descriptor left: its set cannot be made, so the
 * loop falls back to curl's own look at every socket (and to waiting in
 * curl_multi_poll), and the request is still answered. */
static void a_child_without_descriptors_for_a_set_falls_back(void) {
  served s;
  if (!served_open(&s)) return;
  pid_t child = fork();
  if (child == 0) {
    /* No new descriptor may be numbered past the inherited set's, and all
     * below are taken but one: the new epoll set takes it, its eventfd
     * fails, and curl's socket gets it once the set is given up. */
    int limit = s.loop->ep < s.loop->wake ? s.loop->ep : s.loop->wake, last = -1, d;
    struct rlimit lim = {.rlim_cur = (rlim_t)limit, .rlim_max = (rlim_t)limit};
    close(s.lfd); /* the server's, below the set's numbers */
    int ok = setrlimit(RLIMIT_NOFILE, &lim) == 0;
    while (ok && (d = dup(0)) >= 0) last = d;
    if (last >= 0) close(last);
    ok = ok && last >= 0 && one_kill(s.loop, s.c);
    _exit(ok && s.loop->ep < 0 ? 0 : 1);
  }
  CHECK(child_succeeded(child));
  CHECK(one_kill(s.loop, s.c));
  served_close(&s);
}

int main(void) {
  RUN(a_wakeup_from_another_thread_ends_a_wait);
  RUN(a_step_with_nothing_ready_acts_on_no_socket);
  RUN(a_forked_child_drives_its_own_set);
  RUN(a_child_without_descriptors_for_a_set_falls_back);
  return TESTING_DONE();
}
