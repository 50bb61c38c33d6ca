/* loopback.h — a listening loopback socket for tests that need a peer. A
 * test that never accepts gets a peer that never answers (a request to it is
 * connected by the kernel's backlog); one that accepts plays the server. */
#ifndef E2B_TEST_LOOPBACK_H
#define E2B_TEST_LOOPBACK_H
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* The socket, or -1; *port gets its port. */
static int listen_loopback(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 8) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}
#endif
