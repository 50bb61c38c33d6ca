/* selfconn.c — the other end of an accepted loopback connection: its socket
 * inode from the kernel (sock_diag, one exact 4-tuple lookup), then whether
 * one of our descriptors is that socket. */
#define _GNU_SOURCE
#include "selfconn.h"

#include <dirent.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* The inode of the TCP socket whose own address is `from` and whose peer is
 * `to` (IPv4). 0 found; 1 no such socket; -1 sock_diag unavailable. */
static int tcp_inode(const struct sockaddr_in *from, const struct sockaddr_in *to, unsigned *ino) {
  int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return -1;
  struct timeval tv = {.tv_sec = 1};
  setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct {
    struct nlmsghdr nlh;
    struct inet_diag_req_v2 r;
  } req = {
      .nlh = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST},
      .r = {.sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u},
  };
  req.r.id.idiag_sport = from->sin_port;
  req.r.id.idiag_dport = to->sin_port;
  req.r.id.idiag_src[0] = from->sin_addr.s_addr;
  req.r.id.idiag_dst[0] = to->sin_addr.s_addr;
  req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  long buf[1024];
  ssize_t n = -1;
  if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) == (ssize_t)sizeof req)
    n = recv(nl, buf, sizeof buf, 0);
  close(nl);
  if (n < 0) return -1;
  struct nlmsghdr *h = (struct nlmsghdr *)buf;
  if (!NLMSG_OK(h, (unsigned)n)) return -1;
  if (h->nlmsg_type == NLMSG_ERROR) return 1; /* ENOENT: nobody here has that socket */
  if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
    return -1;
  *ino = ((struct inet_diag_msg *)NLMSG_DATA(h))->idiag_inode;
  return 0;
}

/* Whether one of this process's descriptors is socket inode `ino`. */
static int own_socket(unsigned ino) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  char want[40], got[64];
  int wlen = snprintf(want, sizeof want, "socket:[%u]", ino);
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    ssize_t len = readlinkat(dirfd(d), e->d_name, got, sizeof got);
    found = len == wlen && memcmp(got, want, (size_t)wlen) == 0;
  }
  closedir(d);
  return found;
}

int selfconn_peer_is_ours(int fd) {
  struct sockaddr_in local, peer;
  socklen_t ll = sizeof local, pl = sizeof peer;
  if (getsockname(fd, (struct sockaddr *)&local, &ll) != 0 || getpeername(fd, (struct sockaddr *)&peer, &pl) != 0)
    return -1;
  if (local.sin_family != AF_INET || peer.sin_family != AF_INET) return -1;
  unsigned ino = 0;
  int rc = tcp_inode(&peer, &local, &ino);
  if (rc != 0) return rc > 0 ? 0 : -1;
  return ino ? own_socket(ino) : -1;
}
