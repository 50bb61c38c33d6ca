/* egress_tls.h — TLS interception for the egress proxy, so network.rules
 * reach HTTPS requests too (E2B's semantics). For a CONNECT tunnel to a host
 * with rules that starts with a TLS ClientHello, the proxy answers the
 * sandbox with a certificate for that host issued by e2b-local's CA (which
 * sandboxes trust), and opens its own TLS connection to the real upstream,
 * verifying it (the system trust store, plus one optional extra CA file).
 * The decrypted requests then go through the same framing and rewriting as
 * plain HTTP (reqstream.h). Non-blocking: every call returns ETLS_AGAIN
 * rather than wait, and the caller watches the descriptors etls_events names.
 * Loop thread only (one caller thread), except etls_init / etls_shutdown. */
#ifndef EMU_EGRESS_TLS_H
#define EMU_EGRESS_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "tls_ca.h"

#define ETLS_AGAIN (-2)
#define ETLS_LEAF_CACHE 64 /* hosts whose certificate is kept */

enum { ETLS_CLIENT = 0, ETLS_UPSTREAM = 1 };

typedef struct etls etls;

/* Interception on, with ca issuing the sandbox-facing certificates; the
 * upstream is verified against the system trust store and extra_ca_file
 * (NULL: none). 0, or -1 with the reason in err (interception stays off). */
int etls_init(tls_ca *ca, const char *extra_ca_file, char *err, size_t errlen);
int etls_enabled(void);
/* Frees the trust store and the certificate cache (no etls may be live). */
void etls_shutdown(void);

/* A connection to intercept: the sandbox on cl_fd (pre[0..prelen): its
 * bytes already read, the start of its ClientHello), the upstream on up_fd
 * (connected), host the tunnel's destination. The descriptors stay the
 * caller's. NULL with the reason in err. */
etls *etls_new(const char *host, int cl_fd, int up_fd, const char *pre, size_t prelen, char *err, size_t errlen);
/* Advances both handshakes: 1 both done, 0 in progress, -1 failed (err
 * says why; an upstream that cannot be verified is a failure). */
int etls_handshake(etls *t, char *err, size_t errlen);
/* Plaintext from a side: bytes read, 0 at its end, ETLS_AGAIN, or -1. */
int etls_read(etls *t, int side, char *buf, size_t cap);
/* Plaintext to a side: bytes taken, ETLS_AGAIN, or -1. After ETLS_AGAIN the
 * next call must offer at least as many bytes (the same ones first). */
int etls_write(etls *t, int side, const char *buf, size_t len);
/* Decrypted bytes a side holds that no read has taken yet. */
size_t etls_pending(const etls *t, int side);
/* Tells a side no more comes (close_notify, best effort). */
void etls_close_notify(etls *t, int side);
/* EPOLLIN / EPOLLOUT a side's descriptor waits for during the handshake. */
uint32_t etls_events(const etls *t, int side);
void etls_free(etls *t);

#endif
