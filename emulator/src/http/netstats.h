/* netstats.h — what clients cost e2b-local, counted per listener:
 * connections accepted, TLS handshakes completed and requests (GET
 * /_e2b_local/stats); and --latency, a fixed delay on connection set-up and
 * on every answer, as a server across a network would show. */
#ifndef EMU_NETSTATS_H
#define EMU_NETSTATS_H

#include <jansson.h>
#include <microhttpd.h>

enum { LISTENER_HTTP = 0, LISTENER_HTTPS = 1 };

/* --latency MS (0: none, the default). */
void netstats_set_latency(int ms);
int netstats_latency(void);

/* --h2 (h2front.h): the "https" counters are the front's clients, told
 * apart by the Forwarded for= token nghttpx sends with their requests
 * (connections and TLS handshakes: one each per token; "open" is not
 * known); their requests are not counted on "http", whose connections
 * still count the front's own. */
void netstats_set_front(int on);

/* MHD's connection notification on listener `which` (started, closed). */
void netstats_connection(int which, struct MHD_Connection *c, void **socket_context,
                         enum MHD_ConnectionNotificationCode code);
/* A request's first callback: counts it and waits what --latency says
 * (the connection's set-up on its first request, then the answer's delay). */
void netstats_request(int which, struct MHD_Connection *c);

/* {"http": {...}, "https": {...}}: connections, open, tls_handshakes,
 * requests, latency_ms. */
json_t *netstats_json(void);

#endif
