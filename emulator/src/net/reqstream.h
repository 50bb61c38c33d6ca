/* reqstream.h — the HTTP/1.x requests a sandbox sends through its egress
 * proxy, one after another on one connection (keep-alive, pipelining): each
 * request head is rewritten for the upstream (origin-form, proxy headers
 * dropped, network.rules headers added or replacing the sandbox's), each
 * body is framed (Content-Length or chunked) and passed on byte for byte,
 * so the next head is found and rewritten too. Pure: no sockets, bounded by
 * the buffers it is given. A request head is untrusted sandbox input: a
 * malformed or ambiguous one (smuggling: Content-Length with
 * Transfer-Encoding, a bare CR or LF, a folded line) ends the stream. */
#ifndef EMU_REQSTREAM_H
#define EMU_REQSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "netrules.h"

/* Room a head needs in the output beyond its own size (Host, rules). */
#define REQSTREAM_SLACK (NETRULES_BYTES_MAX + 512)

/* The headers for this stream's requests, as the sandbox's rules are now. */
typedef void (*reqstream_rules_fn)(void *ctx, const char *host, netrules_set *out);

typedef struct reqstream {
  int state;
  uint64_t left;        /* body or chunk bytes still to pass */
  int tunnel;           /* inside a CONNECT tunnel: origin-form, destination fixed */
  char host[256];       /* the destination (lower case) */
  int port;
  reqstream_rules_fn rules;
  void *ctx;
  unsigned requests;    /* heads rewritten so far */
} reqstream;

enum { REQSTREAM_MORE = 0, REQSTREAM_END = 1, REQSTREAM_BAD = -1 };

void reqstream_init(reqstream *rs, const char *host, int port, int tunnel, reqstream_rules_fn rules, void *ctx);
/* Moves what it can of in[0..*inlen) (incap: its capacity) into
 * out[*outlen..cap), removing what it used from in. REQSTREAM_MORE: wants
 * more input or room; REQSTREAM_END: a request for another destination
 * came (it is not passed on: the client retries on a new connection);
 * REQSTREAM_BAD: malformed input. In a tunnel, bytes that do not start
 * like an HTTP request (TLS) are passed on untouched from then on. */
int reqstream_feed(reqstream *rs, char *in, size_t *inlen, size_t incap, char *out, size_t *outlen, size_t cap);

/* "host:port", "[v6]:port" or a bare host (dflt port; -1: a port is
 * required) into host (as written) and *port. 0, or -1. */
int reqstream_authority(const char *s, size_t n, char *host, size_t cap, int *port, int dflt);

#endif
