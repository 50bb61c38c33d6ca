/* test_bridge.c — the readiness bridge: a ready socket wakes the host with
 * one byte, nothing more until a step re-arms it (no spin while the socket
 * stays ready), curl's own sockets reach it, strangers and forked children
 * are kept apart, and closing removes every trace. Loopback and unix
 * sockets this test opens itself only. */
#include "internal.h"
#include "loopback.h"
#include "testing.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* Generous: the machine may be loaded. A quiet window proves nothing was
 * sent in it; a wait for a byte ends as soon as it comes. */
#define ARRIVE_MS 5000
#define QUIET_MS 300

static int connect_unix(const char *path) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Bytes that arrive on fd within ms (0: none; -1: end of stream). */
static int bytes_within(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, ms) <= 0) return 0;
  char buf[16];
  ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  return n > 0 ? (int)n : (n == 0 ? -1 : 0);
}

static int path_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static e2b_loop *loop_with_host(char *path, int *host) {
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  CHECK(loop != NULL);
  if (!loop) return NULL;
  CHECK(e2b_loop_bridge_open(loop, path, E2B_BRIDGE_PATH_SIZE, &err) == 1);
  *host = connect_unix(path);
  CHECK(*host >= 0);
  return loop;
}

static void ready_socket_wakes_once_until_a_step(void) {
  char path[E2B_BRIDGE_PATH_SIZE];
  int host = -1, sp[2];
  e2b_loop *loop = loop_with_host(path, &host);
  if (!loop || host < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0) return;
  e2b_events_watch(loop, sp[0], CURL_POLL_IN);
  CHECK(bytes_within(host, QUIET_MS) == 0); /* nothing ready yet */
  CHECK(write(sp[1], "x", 1) == 1);
  CHECK(bytes_within(host, ARRIVE_MS) == 1);
  CHECK(!path_exists(path)); /* connected: the path is gone */
  /* sp[0] stays readable, but without a step the watcher stays quiet. */
  CHECK(bytes_within(host, QUIET_MS) == 0);
  CHECK(e2b_bridge_wakes(loop) == 1);
  e2b_loop_step(loop, 0); /* re-arms: still readable, so one more byte */
  CHECK(bytes_within(host, ARRIVE_MS) == 1);
  CHECK(bytes_within(host, QUIET_MS) == 0);
  CHECK(e2b_bridge_wakes(loop) == 2);
  char c;
  CHECK(read(sp[0], &c, 1) == 1); /* no longer ready: a step re-arms, nothing comes */
  e2b_loop_step(loop, 0);
  CHECK(bytes_within(host, QUIET_MS) == 0);
  CHECK(write(sp[1], "y", 1) == 1); /* armed: the next readiness wakes */
  CHECK(bytes_within(host, ARRIVE_MS) == 1);
  e2b_events_watch(loop, sp[0], CURL_POLL_REMOVE);
  e2b_loop_step(loop, 0);
  CHECK(bytes_within(host, QUIET_MS) == 0); /* removed from the set */
  CHECK(e2b_bridge_wakes(loop) == 3);
  e2b_loop_release(loop); /* joins the watcher (ASan: nothing leaks) */
  CHECK(bytes_within(host, ARRIVE_MS) == -1);
  close(host);
  close(sp[0]);
  close(sp[1]);
}

/* Steps until the server side got the whole request head; returns the
 * accepted connection. */
static int serve_until_request(e2b_loop *loop, int lfd) {
  int conn = -1;
  char buf[4096];
  size_t got = 0;
  for (int i = 0; i < 500; i++) {
    e2b_loop_step(loop, 10);
    if (conn < 0) conn = accept(lfd, NULL, NULL); /* a queued connection is there at once */
    if (conn < 0) continue;
    ssize_t n = recv(conn, buf + got, sizeof buf - 1 - got, MSG_DONTWAIT);
    if (n > 0) got += (size_t)n;
    buf[got] = '\0';
    if (strstr(buf, "\r\n\r\n")) return conn;
  }
  return conn;
}

/* The sockets curl opens reach the bridge by themselves: it is quiet while
 * the server is silent and wakes when the answer comes, with no step. */
static void curls_sockets_wake_the_host(void) {
  int port = 0, lfd = listen_loopback(&port);
  CHECK(lfd >= 0);
  char path[E2B_BRIDGE_PATH_SIZE], url[64];
  int host = -1;
  e2b_loop *loop = lfd >= 0 ? loop_with_host(path, &host) : NULL;
  if (!loop) return;
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  e2b_config cfg = {.api_key = "test-key", .api_url = url, .max_retries = E2B_NO_RETRY};
  e2b_error err;
  e2b_client *c = e2b_client_new(loop, &cfg, &err);
  e2b_req *req = c ? e2b_sandbox_kill(c, "sbxundertest", &err) : NULL;
  CHECK(req != NULL);
  int conn = req ? serve_until_request(loop, lfd) : -1;
  CHECK(conn >= 0);
  if (conn >= 0) {
    while (bytes_within(host, 0) > 0) {
    } /* the wakes of the request going out */
    e2b_loop_step(loop, 0);
    CHECK(loop->sock_count == 1 && loop->socks[0].what == CURL_POLL_IN);
    CHECK(bytes_within(host, QUIET_MS) == 0); /* curl waits to read: nothing is ready */
    const char *answer = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
    CHECK(send(conn, answer, strlen(answer), 0) == (ssize_t)strlen(answer));
    CHECK(bytes_within(host, ARRIVE_MS) == 1);
    for (int i = 0; i < 200 && !e2b_req_done(req); i++) e2b_loop_step(loop, 10);
    CHECK(e2b_req_done(req));
    CHECK(e2b_req_error(req) == NULL);
    close(conn);
  }
  e2b_req_free(req);
  e2b_client_release(c);
  e2b_loop_release(loop);
  close(host);
  close(lfd);
}

/* Whether the forked child pid exited with status 0. */
static int child_succeeded(pid_t pid) {
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

/* The end of the fork tests: the parent's bridge still works (a byte on the
 * watched sp[0] wakes host once), then everything is released and closed. */
static void host_wakes_then_release(e2b_loop *loop, int host, int sp[2], char byte) {
  CHECK(write(sp[1], &byte, 1) == 1);
  e2b_events_watch(loop, sp[0], CURL_POLL_IN);
  CHECK(bytes_within(host, ARRIVE_MS) == 1);
  e2b_events_watch(loop, sp[0], CURL_POLL_REMOVE);
  e2b_loop_release(loop);
  close(host);
  close(sp[0]);
  close(sp[1]);
}

/* Only this process may be the host: a child's connection is closed at
 * once, and the real host still connects after it. */
static void a_stranger_is_refused(void) {
  char path[E2B_BRIDGE_PATH_SIZE];
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  CHECK(e2b_loop_bridge_open(loop, path, sizeof path, &err) == 1);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = connect_unix(path);
    _exit(fd >= 0 && bytes_within(fd, ARRIVE_MS) == -1 ? 0 : 1);
  }
  CHECK(child_succeeded(pid));
  CHECK(path_exists(path)); /* still waiting for its host */
  int host = connect_unix(path), sp[2];
  CHECK(host >= 0);
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
  host_wakes_then_release(loop, host, sp, 'x');
}

/* A child inherits the loop but not the thread: it opens its own bridge,
 * which works, and the parent's keeps working. */
static void a_forked_child_opens_its_own(void) {
  char path[E2B_BRIDGE_PATH_SIZE];
  int host = -1, sp[2];
  e2b_loop *loop = loop_with_host(path, &host);
  if (!loop || host < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0) return;
  pid_t pid = fork();
  if (pid == 0) {
    char child_path[E2B_BRIDGE_PATH_SIZE];
    e2b_error err;
    int ok = e2b_loop_bridge_open(loop, child_path, sizeof child_path, &err) == 1;
    int fd = ok ? connect_unix(child_path) : -1;
    int cp[2];
    ok = fd >= 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, cp) == 0 && write(cp[1], "c", 1) == 1;
    if (ok) e2b_events_watch(loop, cp[0], CURL_POLL_IN);
    ok = ok && bytes_within(fd, ARRIVE_MS) == 1;
    if (ok) e2b_events_watch(loop, cp[0], CURL_POLL_REMOVE);
    e2b_loop_release(loop);
    _exit(ok ? 0 : 1);
  }
  CHECK(child_succeeded(pid));
  CHECK(bytes_within(host, QUIET_MS) == 0); /* the child's work never reached the parent */
  host_wakes_then_release(loop, host, sp, 'p');
}

/* Each open hands out a new path; the one nobody connected to is removed
 * then, and closing removes the rest. */
static void paths_are_removed(void) {
  char first[E2B_BRIDGE_PATH_SIZE], second[E2B_BRIDGE_PATH_SIZE];
  e2b_error err;
  e2b_loop *loop = e2b_loop_new(&err);
  CHECK(e2b_loop_bridge_open(loop, first, sizeof first, &err) == 1);
  CHECK(path_exists(first));
  struct stat st;
  char dir[E2B_BRIDGE_PATH_SIZE];
  snprintf(dir, sizeof dir, "%s", first);
  *strrchr(dir, '/') = '\0';
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  CHECK(e2b_loop_bridge_open(loop, second, sizeof second, &err) == 1);
  CHECK(strcmp(first, second) != 0);
  int host = connect_unix(second);
  CHECK(host >= 0);
  CHECK(bytes_within(host, QUIET_MS) == 0);
  CHECK(!path_exists(first));
  CHECK(!path_exists(dir));
  CHECK(e2b_loop_bridge_open(loop, first, sizeof first, &err) == 1);
  CHECK(path_exists(first));
  e2b_loop_bridge_close(loop);
  CHECK(!path_exists(first));
  CHECK(bytes_within(host, ARRIVE_MS) == -1);
  CHECK(e2b_loop_bridge_open(loop, first, 8, &err) == 0); /* too small for a path */
  CHECK(err.code == E2B_ERR_INVALID_ARGUMENT);
  e2b_loop_release(loop);
  close(host);
}

int main(void) {
  RUN(ready_socket_wakes_once_until_a_step);
  RUN(curls_sockets_wake_the_host);
  RUN(a_stranger_is_refused);
  RUN(a_forked_child_opens_its_own);
  RUN(paths_are_removed);
  return TESTING_DONE();
}
