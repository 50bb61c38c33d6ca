/* tls_ca.h — e2b-local's own certificate authority: created once in a
 * directory the server owns (ca.pem + ca.key, mode 0600, directory 0700),
 * then used to issue leaf certificates (held in memory only) for the names a
 * listener answers to. Reusable by anything that needs a certificate the
 * user's clients trust through the one CA file (the HTTPS listener today). */
#ifndef EMU_TLS_CA_H
#define EMU_TLS_CA_H

#include <stddef.h>

typedef struct tls_ca tls_ca;

/* A leaf certificate and its private key, both PEM, NUL-terminated. */
typedef struct tls_leaf {
  char *cert_pem;
  char *key_pem;
} tls_leaf;

/* Loads dir/ca.pem and dir/ca.key, or creates them (and dir, mode 0700) when
 * absent or expired. A key file others could read is tightened to 0600.
 * Returns NULL with the reason in err. */
tls_ca *tls_ca_open(const char *dir, char *err, size_t errlen);

/* The CA certificate's path: what clients are told to trust. */
const char *tls_ca_cert_file(const tls_ca *ca);

/* Issues a leaf for names: DNS names ("e2b.localhost", "*.e2b.localhost") or
 * IPv4/IPv6 literals, at most 32, valid for `days` days (from a day ago).
 * Thread-safe. Returns 0, or -1 with the reason in err. */
int tls_ca_issue(tls_ca *ca, const char *const *names, size_t n, unsigned days, tls_leaf *out,
                 char *err, size_t errlen);

/* Frees a leaf (the key is wiped first). */
void tls_leaf_free(tls_leaf *leaf);
void tls_ca_close(tls_ca *ca);

#endif
