/* tls_tunnel.h — an upgraded port connection (WebSocket) on the HTTPS
 * listener, carried on the connection's own GnuTLS session by the thread
 * that answered it, rather than by libmicrohttpd's upgrade forwarding.
 *
 * Why: libmicrohttpd 0.9.75 forwards an upgraded TLS connection through
 * buffers carved from what is left of the connection's memory pool, and by
 * then nothing is left, so it falls back to its 8-byte emergency buffer:
 * 4 bytes each way per poll cycle, every TLS record carrying 4 bytes (26 on
 * the wire). Measured: a WebSocket echo stalled after ~1.2 MB of 8 MB, the
 * daemon sending 4-byte records while the client spent its time on them;
 * a larger MHD_OPTION_CONNECTION_MEMORY_LIMIT changed nothing. */
#ifndef EMU_TLS_TUNNEL_H
#define EMU_TLS_TUNNEL_H

#include <stddef.h>

#include <microhttpd.h>

/* The connection's GnuTLS session, or NULL on the plain listener. */
void *tls_tunnel_session(struct MHD_Connection *conn);

/* Sends head (the 101 response) on conn's TLS session, then relays bytes
 * both ways between the session and upstream (pending: upstream bytes read
 * along with its 101, sent first) until the upstream ends, or the client
 * ends and the upstream has answered. Blocks the calling thread (the
 * connection's own, in thread-per-connection mode, so libmicrohttpd never
 * touches the session meanwhile). Closes upstream. The caller then drops
 * the connection (the access handler returns MHD_NO). */
void tls_tunnel_run(struct MHD_Connection *conn, const char *head, size_t headlen, int upstream, const char *pending,
                    size_t npending);

#endif
