/* ipc.c — framing of the server<->agent control messages. */
#define _GNU_SOURCE
#include "ipc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define IPC_INLINE_MAX (48 * 1024)
#define IPC_FLAG_BODY_IN_FD 1u

struct ipc_hdr {
  uint32_t type, id;
  int32_t err;
  uint32_t flags;
};

static int body_to_memfd(const char *text, size_t len) {
  int fd = memfd_create("e2b-ipc", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (write_all(fd, text, len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

ssize_t ipc_sendmsg(int sock, struct iovec *iov, int iovcnt, const int *fds, int nfds, int flags) {
  union {
    char buf[CMSG_SPACE(sizeof(int) * (IPC_MAX_FDS + 1))];
    struct cmsghdr align;
  } cbuf;
  if (nfds < 0 || nfds > IPC_MAX_FDS + 1) return -EINVAL;
  struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
  if (nfds > 0) {
    memset(&cbuf, 0, sizeof cbuf);
    msg.msg_control = cbuf.buf;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &msg, flags);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? -errno : n;
}

int ipc_send(int sock, uint32_t type, uint32_t id, int32_t err, json_t *body, const int *fds,
             int nfds) {
  char *text = body ? json_dumps(body, JSON_COMPACT) : strdup("{}");
  if (!text) return -ENOMEM;
  size_t len = strlen(text);
  if (len > IPC_BODY_MAX) { /* the receiver would refuse it: say so here */
    free(text);
    return -EMSGSIZE;
  }
  struct ipc_hdr h = {type, id, err, 0};
  int all_fds[IPC_MAX_FDS + 1];
  int nall = 0;
  for (int i = 0; i < nfds && i < IPC_MAX_FDS; i++) all_fds[nall++] = fds[i];
  int memfd = -1;
  if (len > IPC_INLINE_MAX) {
    memfd = body_to_memfd(text, len);
    if (memfd < 0) {
      free(text);
      return -errno;
    }
    all_fds[nall++] = memfd;
    h.flags |= IPC_FLAG_BODY_IN_FD;
    len = 0;
  }
  struct iovec iov[2] = {{&h, sizeof h}, {text, len}};
  ssize_t n = ipc_sendmsg(sock, iov, 2, all_fds, nall, MSG_NOSIGNAL);
  int rc = n < 0 ? (int)n : 0;
  free(text);
  if (memfd >= 0) close(memfd);
  return rc;
}

/* A body in a descriptor: a regular file (memfd) of at most IPC_BODY_MAX
 * bytes. Whatever the agent claims, nothing is allocated before the check. */
static int body_from_memfd(int fd, json_t **out) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) return -EPROTO;
  if ((uint64_t)st.st_size > IPC_BODY_MAX) return -EMSGSIZE;
  size_t len = (size_t)st.st_size;
  char *text = xmalloc(len + 1);
  size_t got = 0;
  while (got < len) {
    ssize_t r = pread(fd, text + got, len - got, (off_t)got);
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      break;
    }
    got += (size_t)r;
  }
  *out = got == len ? json_loadb(text, len, 0, NULL) : NULL;
  free(text);
  return 0;
}

static void close_all(const int *fds, int n) {
  for (int i = 0; i < n; i++) close(fds[i]);
}

/* Collects the SCM_RIGHTS descriptors; more than a message may carry (or a
 * truncated control block) is a protocol error, all of them closed. */
static int take_rights(struct msghdr *msg, int *fds, int *nfds) {
  int bad = (msg->msg_flags & MSG_CTRUNC) != 0;
  *nfds = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
      bad = 1;
      continue;
    }
    int cnt = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < cnt; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + sizeof(int) * (size_t)i, sizeof fd);
      if (*nfds < IPC_MAX_FDS + 1)
        fds[(*nfds)++] = fd;
      else {
        close(fd);
        bad = 1;
      }
    }
  }
  if (bad) {
    close_all(fds, *nfds);
    *nfds = 0;
  }
  return bad ? -EPROTO : 0;
}

/* Header and body checks: known flags, a body that is a JSON object, and
 * no more descriptors than a message may carry. */
static int decode(const char *buf, size_t n, int *fds, int *nfds, ipc_msg *m) {
  struct ipc_hdr h;
  memcpy(&h, buf, sizeof h);
  if (h.flags & ~IPC_FLAG_BODY_IN_FD) return -EPROTO;
  if (h.err < 0 || h.err > 4095) return -EPROTO; /* an errno, or 0 */
  json_t *body = NULL;
  if (h.flags & IPC_FLAG_BODY_IN_FD) {
    if (*nfds == 0 || n != sizeof h) return -EPROTO;
    int rc = body_from_memfd(fds[*nfds - 1], &body);
    close(fds[--*nfds]);
    if (rc) return rc;
  } else {
    body = json_loadb(buf + sizeof h, n - sizeof h, 0, NULL);
  }
  if (!json_is_object(body) || *nfds > IPC_MAX_FDS) {
    json_decref(body);
    return -EPROTO;
  }
  m->type = h.type;
  m->id = h.id;
  m->err = h.err;
  m->body = body;
  m->nfds = *nfds;
  for (int i = 0; i < m->nfds; i++) m->fds[i] = fds[i];
  *nfds = 0;
  return 1;
}

int ipc_recv(int sock, ipc_msg *m) {
  static const size_t cap = sizeof(struct ipc_hdr) + IPC_INLINE_MAX + 1;
  char *buf = xmalloc(cap);
  union {
    char buf[CMSG_SPACE(sizeof(int) * (IPC_MAX_FDS + 1))];
    struct cmsghdr align;
  } cbuf;
  struct iovec iov = {buf, cap};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
                       .msg_controllen = sizeof cbuf.buf};
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  memset(m, 0, sizeof *m);
  if (n <= 0) {
    free(buf);
    return n == 0 ? 0 : -errno;
  }
  int fds[IPC_MAX_FDS + 1], nfds;
  int rc = take_rights(&msg, fds, &nfds);
  if (rc == 0 && ((size_t)n < sizeof(struct ipc_hdr) || (msg.msg_flags & MSG_TRUNC))) rc = -EPROTO;
  if (rc == 0) rc = decode(buf, (size_t)n, fds, &nfds, m);
  close_all(fds, nfds);
  free(buf);
  return rc;
}

int ipc_take_fd(ipc_msg *m, int i) {
  if (i < 0 || i >= m->nfds) return -1;
  int fd = m->fds[i];
  m->fds[i] = -1;
  return fd;
}

void ipc_msg_clear(ipc_msg *m) {
  if (m->body) json_decref(m->body);
  m->body = NULL;
  for (int i = 0; i < m->nfds; i++)
    if (m->fds[i] >= 0) close(m->fds[i]);
  m->nfds = 0;
}

int ipc_out_stream_of(const unsigned char *pkt, size_t n) {
  if (n < 1 || n > 1 + IPC_OUT_CHUNK) return -1;
  return pkt[0] == IPC_OUT_STDOUT || pkt[0] == IPC_OUT_STDERR ? pkt[0] : -1;
}
