/* ipc.h — the server<->agent control protocol.
 *
 * One SOCK_SEQPACKET message per request, reply or notification: a fixed
 * header, a JSON body, and up to IPC_MAX_FDS descriptors (SCM_RIGHTS).
 * Bodies too large for one datagram travel in a sealed memfd instead. */
#ifndef EMU_IPC_H
#define EMU_IPC_H

#include <jansson.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <stdint.h>

#define IPC_MAX_FDS 4
/* The largest body a message may carry (in a memfd): bigger is refused
 * before any allocation. Directory listings are the largest replies. */
#define IPC_BODY_MAX (32u * 1024 * 1024)

enum ipc_type {
  /* server -> agent requests */
  IPC_SPAWN = 1,     /* {argv,env,cwd,uid,gid,stdin,pty?} -> {pid} + output, stdin? */
  IPC_SIGNAL = 2,    /* {pid,sig} -> {} (to the process group) */
  IPC_STAT = 3,      /* {path} -> {entry} */
  IPC_LISTDIR = 4,   /* {path,depth} -> {entries} */
  IPC_MKDIR = 5,     /* {path,uid,gid} -> {entry} */
  IPC_MOVE = 6,      /* {source,destination} -> {entry} */
  IPC_REMOVE = 7,    /* {path} -> {} */
  IPC_OPEN_READ = 8, /* {path} -> {size} + fd */
  IPC_OPEN_WRITE = 9, /* {path,uid,gid} -> {path} + fd */
  IPC_SHUTDOWN = 10, /* kill every process of the sandbox, then exit */
  IPC_WATCH = 11,    /* {path,recursive,entry} -> {id} + fd: inotify in the sandbox, for as
                      * long as the server keeps that pipe's write end open */
  IPC_CONNECT = 13,  /* {port,host?} -> {} + fd: a TCP socket connected to loopback inside the sandbox */
  /* agent -> server */
  IPC_REPLY = 100, /* id = the request's id, err = errno (0 on success) */
  IPC_EXIT = 101,  /* {pid,status}: a spawned process was reaped */
  IPC_WATCH_EVENT = 102, /* {id,name,type,entry?}: a change under a watched directory;
                          * {id,overflow:true}: inotify dropped events (the watch ends) */
  IPC_EGRESS = 103       /* {} + fd: a connection accepted by the in-sandbox forwarder */
};

/* A command's output: the spawn reply's first descriptor, when the command
 * has no pty, is a SOCK_SEQPACKET socket of its own on which the agent sends
 * each read of the command's stdout or stderr as one packet, a stream byte
 * then up to IPC_OUT_CHUNK bytes, and which it closes once both ended. It
 * costs the server one descriptor per running command where the pipes
 * themselves cost two. */
enum ipc_out_stream { IPC_OUT_STDOUT = 1, IPC_OUT_STDERR = 2 };
#define IPC_OUT_CHUNK 65536

typedef struct ipc_msg {
  uint32_t type;
  uint32_t id;
  int32_t err;
  json_t *body; /* owned; never NULL after a successful receive */
  int fds[IPC_MAX_FDS];
  int nfds;
} ipc_msg;

/* Sends one message; body may be NULL (sent as {}). Returns 0 or -errno. */
int ipc_send(int sock, uint32_t type, uint32_t id, int32_t err, json_t *body, const int *fds,
             int nfds);
/* One sendmsg of iov with nfds (at most IPC_MAX_FDS + 1) descriptors as
 * SCM_RIGHTS, retried on EINTR. Returns the bytes sent or -errno. Tests and
 * fuzzers use it to forge frames. */
ssize_t ipc_sendmsg(int sock, struct iovec *iov, int iovcnt, const int *fds, int nfds, int flags);
/* Receives one message. Returns 1, 0 on EOF, or -errno: -EPROTO for a
 * malformed message (bad header, flags, errno, body or descriptors),
 * -EMSGSIZE for a body over IPC_BODY_MAX. The sender is untrusted. */
int ipc_recv(int sock, ipc_msg *m);
/* Releases the body and closes any descriptors still owned by the message. */
void ipc_msg_clear(ipc_msg *m);
/* Takes descriptor i out of the message (the caller owns it now). */
int ipc_take_fd(ipc_msg *m, int i);
/* One output packet as received, n its whole length (larger than
 * 1 + IPC_OUT_CHUNK when it was cut): its stream (ipc_out_stream), or -1
 * when it breaks the format. Its bytes follow the stream byte. */
int ipc_out_stream_of(const unsigned char *pkt, size_t n);

#endif
