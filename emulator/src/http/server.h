/* server.h — the HTTP listeners (plain, and HTTPS with e2b-local's own CA):
 * routing between control plane, envd and the port proxy, the same on both. */
#ifndef EMU_SERVER_H
#define EMU_SERVER_H

#include <stdint.h>

#include "http.h"
#include "tls_ca.h"

typedef struct server server;

/* host "127.0.0.1", port 0 = any; tls NULL for plain HTTP, else HTTPS with
 * that certificate (kept by the caller until server_stop). Returns NULL
 * with a logged reason. */
server *server_start(const char *host, uint16_t port, const tls_leaf *tls);
uint16_t server_port(const server *s);
/* Whether this libmicrohttpd can serve HTTPS (Debian's: GnuTLS). */
int server_tls_supported(void);
void server_stop(server *s);

/* Route setup, called on a request's first callback (server.c dispatches). */
void control_route(http_req *r);
void envd_route(http_req *r, const char *sandbox_id);
void admin_route(http_req *r); /* /_e2b_local/... (admin.c) */
/* The Connect code whose HTTP status is `status` (503 -> unavailable). */
const char *connect_code_for_status(int status);

#endif
