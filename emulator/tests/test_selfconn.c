/* test_selfconn.c — the HTTPS listener's sandbox detector: a connection made
 * by this process is ours, one made by another process is not. Prints what
 * one check costs (never asserted). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "selfconn.h"
#include "testing.h"

static int lfd;
static struct sockaddr_in where = {.sin_family = AF_INET};

static int dial(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  return connect(fd, (struct sockaddr *)&where, sizeof where) == 0 ? fd : -1;
}

static void test_own_connection(void) {
  int c = dial();
  int a = accept(lfd, NULL, NULL);
  CHECK(c >= 0 && a >= 0);
  CHECK(selfconn_peer_is_ours(a) == 1);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < 1000; i++) selfconn_peer_is_ours(a);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("one check: %.1f us\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / 1000);
  close(c);
  close(a);
}

static void test_other_process(void) {
  int ready[2], done[2];
  CHECK(pipe(ready) == 0 && pipe(done) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    int c = dial();
    char b = c >= 0 ? 'y' : 'n';
    if (write(ready[1], &b, 1) != 1 || read(done[0], &b, 1) < 0) _exit(1);
    _exit(0);
  }
  char b = 0;
  CHECK(read(ready[0], &b, 1) == 1 && b == 'y');
  int a = accept(lfd, NULL, NULL);
  CHECK(a >= 0);
  CHECK(selfconn_peer_is_ours(a) == 0);
  CHECK(write(done[1], "x", 1) == 1);
  waitpid(pid, NULL, 0);
  close(a);
}

static void test_not_a_tcp_socket(void) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  CHECK(selfconn_peer_is_ours(sv[0]) == -1);
  close(sv[0]);
  close(sv[1]);
}

int main(void) {
  lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof where;
  if (bind(lfd, (struct sockaddr *)&where, sizeof where) != 0 || listen(lfd, 8) != 0 ||
      getsockname(lfd, (struct sockaddr *)&where, &len) != 0)
    return 1;
  RUN(test_own_connection);
  RUN(test_other_process);
  RUN(test_not_a_tcp_socket);
  return TESTING_DONE();
}
