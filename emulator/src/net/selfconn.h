/* selfconn.h — is the client of an accepted TCP connection this very
 * process? The egress proxy relays a sandbox's connections from inside
 * e2b-local, so a connection whose other end is one of our own sockets came
 * from a sandbox: the HTTPS listener refuses those (egress.c refuses the
 * plain listener's port before connecting). */
#ifndef EMU_SELFCONN_H
#define EMU_SELFCONN_H

/* 1: the peer socket of accepted fd belongs to this process; 0: it does not
 * (or it is on another host); -1: cannot tell (no sock_diag). */
int selfconn_peer_is_ours(int fd);

#endif
