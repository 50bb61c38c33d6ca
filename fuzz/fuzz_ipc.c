/* fuzz_ipc.c — libFuzzer target for emulator/src/runtime/ipc.c: one datagram from
 * the in-sandbox agent (untrusted: root in a sandbox can write anything to
 * its end of the socket), received with ipc_recv. Input: the raw datagram;
 * when its header asks for a body in a memfd, the datagram's own bytes after
 * the header are passed as that memfd (and a bit of the first byte decides
 * whether to attach an extra descriptor). The same bytes are also read as
 * one packet of a command's output relay (ipc_out_stream_of). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc.h"

#define HDR 16 /* struct ipc_hdr: type, id, err, flags */

static int send_raw(int sock, const uint8_t *d, size_t n, const int *fds, int nfds) {
  struct iovec iov = {(void *)d, n};
  return ipc_sendmsg(sock, &iov, 1, fds, nfds, 0) < 0 ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0 || size > 64 * 1024) return 0;
  int probe = dup(2); /* the lowest free descriptor: a leak moves it */
  close(probe);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  int fds[2], nfds = 0;
  uint32_t flags = 0;
  if (size >= HDR) memcpy(&flags, data + 12, 4);
  if (flags & 1u) { /* body in a memfd: the rest of the input */
    int fd = memfd_create("fuzz-ipc", MFD_CLOEXEC);
    if (fd >= 0 && write(fd, data + HDR, size - HDR) == (ssize_t)(size - HDR)) fds[nfds++] = fd;
    else if (fd >= 0) close(fd);
  }
  if (data[0] & 0x80) fds[nfds++] = dup(sv[0]);
  if (send_raw(sv[0], data, size, fds, nfds) == 0) {
    ipc_msg m;
    int r = ipc_recv(sv[1], &m);
    if (r == 1) {
      if (!m.body || m.nfds < 0 || m.nfds > IPC_MAX_FDS) abort();
      ipc_msg_clear(&m);
    }
  }
  int stream = ipc_out_stream_of(data, size);
  if (stream != -1 && stream != IPC_OUT_STDOUT && stream != IPC_OUT_STDERR) abort();
  if (stream != -1 && (size < 1 || size > 1 + IPC_OUT_CHUNK)) abort();
  for (int i = 0; i < nfds; i++) close(fds[i]);
  close(sv[0]);
  close(sv[1]);
  int after = dup(2);
  close(after);
  if (after != probe) abort(); /* a descriptor the agent sent was leaked */
  return 0;
}
