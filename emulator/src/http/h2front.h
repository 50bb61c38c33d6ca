/* h2front.h — --h2: the HTTPS listener served by nghttpx (Debian's
 * nghttp2-proxy), which speaks HTTP/2 and HTTP/1.1 (ALPN) with e2b-local's
 * certificate and forwards every request to the plain listener, Host kept.
 * Off by default: it exists so that a client's HTTP/2 multiplexing is
 * exercised and counted here (netstats.h counts the front's clients). */
#ifndef EMU_H2FRONT_H
#define EMU_H2FRONT_H

#include <stdint.h>

#include "tls_ca.h"

typedef struct h2front h2front;

/* Listens on host:port (0: a free port) before nghttpx starts, so the port
 * is known and taken at once; nghttpx inherits the socket. The leaf's
 * certificate and key are written under dir (0700, files 0600) for
 * nghttpx to read, and removed at stop. NULL (logged) on failure. */
h2front *h2front_start(const char *host, uint16_t port, uint16_t backend_port, const tls_leaf *leaf,
                       const char *dir);
unsigned h2front_port(const h2front *f);
void h2front_stop(h2front *f);

#endif
