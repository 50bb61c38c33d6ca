/* tls_ca.c — a local certificate authority with mbedTLS (pk + x509write):
 * load-or-create the CA in a private directory, issue leaf certificates.
 * Keys are P-256 ECDSA: quick to make at every start, accepted by GnuTLS
 * (libmicrohttpd), OpenSSL (curl, Node) alike. */
#define _GNU_SOURCE
#include "tls_ca.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/asn1write.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/md.h>
#include <mbedtls/pem.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/x509_crt.h>

#include "log.h"
#include "util.h"

#define PEM_CAP 16384
#define SAN_CAP 9000
#define CA_DAYS 3650
#define MAX_NAMES 32
#define DER_CAP 8192

struct tls_ca {
  pthread_mutex_t mu; /* the DRBG is not thread-safe */
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  mbedtls_pk_context key;
  mbedtls_x509_crt crt;
  char issuer[256]; /* the CA's subject, as x509write wants it */
  char *cert_file, *key_file;
};

/* extKeyUsage = SEQUENCE { id-kp-serverAuth } */
static const unsigned char EKU_SERVER_AUTH[] = {0x30, 0x0a, 0x06, 0x08, 0x2b, 0x06,
                                                0x01, 0x05, 0x05, 0x07, 0x03, 0x01};

static void set_err(char *err, size_t errlen, const char *what, int rc) {
  snprintf(err, errlen, "%s (mbedTLS error -0x%04x)", what, (unsigned)-rc);
}

/* "YYYYMMDDhhmmss" for now + days (negative: the past). */
static void x509_time(char out[16], long days) {
  time_t t = time(NULL) + (time_t)days * 86400;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 16, "%Y%m%d%H%M%S", &tm);
}

static int new_key(tls_ca *ca, mbedtls_pk_context *pk) {
  int rc = mbedtls_pk_setup(pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
  if (rc == 0)
    rc = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(*pk), mbedtls_ctr_drbg_random,
                             &ca->drbg);
  return rc;
}

/* A random positive 128-bit serial: never repeats across re-issues. */
static int random_serial(tls_ca *ca, mbedtls_mpi *serial) {
  unsigned char b[16];
  int rc = mbedtls_ctr_drbg_random(&ca->drbg, b, sizeof b);
  b[0] = (unsigned char)((b[0] & 0x7f) | 0x40);
  if (rc == 0) rc = mbedtls_mpi_read_binary(serial, b, sizeof b);
  return rc;
}

typedef struct cert_spec {
  mbedtls_pk_context *subject_key;
  const char *subject;
  int is_ca;
  long days;
  const unsigned char *san; /* DER of the subjectAltName value, or NULL */
  size_t san_len;
} cert_spec;

/* ---- ecdsa-with-SHA256 without parameters ----
 * mbedTLS 2.28 writes the signature algorithm as { ecdsa-with-SHA256, NULL };
 * RFC 5758 (3.2) says its parameters are absent, and strict verifiers
 * (rustls/webpki, which the Python SDK's HTTP client uses) refuse the NULL.
 * So a certificate is rebuilt: its signed part with the bare identifier,
 * signed again, the same bare identifier beside the signature. */

static const unsigned char ALG_WITH_NULL[] = {0x30, 0x0c, 0x06, 0x08, 0x2a, 0x86, 0x48,
                                              0xce, 0x3d, 0x04, 0x03, 0x02, 0x05, 0x00};
static const unsigned char ALG_BARE[] = {0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86,
                                         0x48, 0xce, 0x3d, 0x04, 0x03, 0x02};
#define SEQ (MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE)

/* Where the TBSCertificate's signature AlgorithmIdentifier lies in der:
 * *tbs..*tbs_end the TBS contents, *alg its identifier. 0, or -1. */
static int find_tbs_alg(const unsigned char *der, size_t len, const unsigned char **tbs,
                        const unsigned char **tbs_end, const unsigned char **alg) {
  unsigned char *p = (unsigned char *)der;
  const unsigned char *end = der + len;
  size_t n;
  if (mbedtls_asn1_get_tag(&p, end, &n, SEQ) || mbedtls_asn1_get_tag(&p, end, &n, SEQ)) return -1;
  *tbs = p;
  *tbs_end = p + n;
  if (mbedtls_asn1_get_tag(&p, *tbs_end, &n, MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED))
    return -1;
  p += n;
  if (mbedtls_asn1_get_tag(&p, *tbs_end, &n, MBEDTLS_ASN1_INTEGER)) return -1;
  p += n;
  *alg = p;
  return 0;
}

/* Writes (back to front, ending at *p) an element: tag, length, then the
 * parts' bytes in order. Returns its length, or an mbedTLS error. */
static int write_element(unsigned char **p, unsigned char *start, unsigned char tag,
                         const unsigned char *const *parts, const size_t *lens, int nparts) {
  size_t total = 0;
  for (int i = nparts; i-- > 0;) {
    int rc = mbedtls_asn1_write_raw_buffer(p, start, parts[i], lens[i]);
    if (rc < 0) return rc;
    total += (size_t)rc;
  }
  int a = mbedtls_asn1_write_len(p, start, total);
  int b = a < 0 ? a : mbedtls_asn1_write_tag(p, start, tag);
  return b < 0 ? b : (int)(total + (size_t)a + (size_t)b);
}

/* The certificate der (as mbedTLS wrote it) as PEM, with bare identifiers.
 * buf holds three regions, each filled back to front: the new signed part,
 * the signature's BIT STRING, the certificate. */
static int bare_ecdsa_pem(tls_ca *ca, mbedtls_pk_context *issuer_key, const unsigned char *der,
                          size_t len, unsigned char *pem, size_t cap) {
  const unsigned char *tbs, *tbs_end, *alg;
  if (find_tbs_alg(der, len, &tbs, &tbs_end, &alg) != 0 || tbs_end - alg < (long)sizeof ALG_WITH_NULL ||
      memcmp(alg, ALG_WITH_NULL, sizeof ALG_WITH_NULL) != 0)
    return MBEDTLS_ERR_X509_INVALID_ALG;
  unsigned char *buf = xmalloc(3 * DER_CAP), *t = buf + DER_CAP, *bits = buf + 2 * DER_CAP,
                *crt = buf + 3 * DER_CAP;
  const unsigned char *after = alg + sizeof ALG_WITH_NULL;
  const unsigned char *tparts[] = {tbs, ALG_BARE, after};
  size_t tlens[] = {(size_t)(alg - tbs), sizeof ALG_BARE, (size_t)(tbs_end - after)};
  int tlen = write_element(&t, buf, SEQ, tparts, tlens, 3);
  unsigned char hash[32], sig[1 + MBEDTLS_PK_SIGNATURE_MAX_SIZE];
  size_t slen = 0, olen = 0;
  int rc = tlen < 0 ? tlen : mbedtls_md(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), t, (size_t)tlen, hash);
  sig[0] = 0; /* the BIT STRING's count of unused bits */
  if (!rc)
    rc = mbedtls_pk_sign(issuer_key, MBEDTLS_MD_SHA256, hash, sizeof hash, sig + 1, &slen,
                         mbedtls_ctr_drbg_random, &ca->drbg);
  const unsigned char *sparts[] = {sig};
  size_t slens[] = {slen + 1};
  int blen = rc ? rc : write_element(&bits, buf + DER_CAP, MBEDTLS_ASN1_BIT_STRING, sparts, slens, 1);
  const unsigned char *cparts[] = {t, ALG_BARE, bits};
  size_t clens[] = {(size_t)tlen, sizeof ALG_BARE, (size_t)blen};
  int clen = blen < 0 ? blen : write_element(&crt, buf + 2 * DER_CAP, SEQ, cparts, clens, 3);
  rc = clen < 0 ? clen
                : mbedtls_pem_write_buffer("-----BEGIN CERTIFICATE-----\n", "-----END CERTIFICATE-----\n",
                                           crt, (size_t)clen, pem, cap, &olen);
  free(buf);
  return rc;
}

/* Signs spec with the CA's key (or its own, for the CA itself); PEM into pem. */
static int write_cert(tls_ca *ca, const cert_spec *spec, mbedtls_pk_context *issuer_key,
                      const char *issuer, unsigned char *pem, size_t cap) {
  mbedtls_x509write_cert w;
  mbedtls_mpi serial;
  mbedtls_x509write_crt_init(&w);
  mbedtls_mpi_init(&serial);
  char from[16], to[16];
  x509_time(from, -1);
  x509_time(to, spec->days);
  mbedtls_x509write_crt_set_version(&w, MBEDTLS_X509_CRT_VERSION_3);
  mbedtls_x509write_crt_set_md_alg(&w, MBEDTLS_MD_SHA256);
  mbedtls_x509write_crt_set_subject_key(&w, spec->subject_key);
  mbedtls_x509write_crt_set_issuer_key(&w, issuer_key);
  int rc = random_serial(ca, &serial);
  if (!rc) rc = mbedtls_x509write_crt_set_serial(&w, &serial);
  if (!rc) rc = mbedtls_x509write_crt_set_subject_name(&w, spec->subject);
  if (!rc) rc = mbedtls_x509write_crt_set_issuer_name(&w, issuer);
  if (!rc) rc = mbedtls_x509write_crt_set_validity(&w, from, to);
  if (!rc) rc = mbedtls_x509write_crt_set_basic_constraints(&w, spec->is_ca, spec->is_ca ? 0 : -1);
  if (!rc) rc = mbedtls_x509write_crt_set_subject_key_identifier(&w);
  if (!rc) rc = mbedtls_x509write_crt_set_authority_key_identifier(&w);
  if (!rc)
    rc = mbedtls_x509write_crt_set_key_usage(
        &w, spec->is_ca ? MBEDTLS_X509_KU_KEY_CERT_SIGN | MBEDTLS_X509_KU_CRL_SIGN
                        : MBEDTLS_X509_KU_DIGITAL_SIGNATURE);
  if (!rc && !spec->is_ca)
    rc = mbedtls_x509write_crt_set_extension(&w, MBEDTLS_OID_EXTENDED_KEY_USAGE,
                                             MBEDTLS_OID_SIZE(MBEDTLS_OID_EXTENDED_KEY_USAGE), 0,
                                             EKU_SERVER_AUTH, sizeof EKU_SERVER_AUTH);
  if (!rc && spec->san)
    rc = mbedtls_x509write_crt_set_extension(&w, MBEDTLS_OID_SUBJECT_ALT_NAME,
                                             MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME), 0,
                                             spec->san, spec->san_len);
  unsigned char *der = xmalloc(DER_CAP);
  int len = rc ? rc : mbedtls_x509write_crt_der(&w, der, DER_CAP, mbedtls_ctr_drbg_random, &ca->drbg);
  rc = len < 0 ? len : bare_ecdsa_pem(ca, issuer_key, der + DER_CAP - len, (size_t)len, pem, cap);
  free(der);
  mbedtls_mpi_free(&serial);
  mbedtls_x509write_crt_free(&w);
  return rc;
}

/* ---- files: a private directory, private files ---- */

/* dir exists (made 0700), is a real directory of ours, and no one else's to read. */
static int private_dir(const char *dir, char *err, size_t errlen) {
  struct stat st;
  if (mkdir_p(dir, 0700) != 0 || lstat(dir, &st) != 0) {
    snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
    snprintf(err, errlen, "%s is not a directory of this user", dir);
    return -1;
  }
  if ((st.st_mode & 077) && chmod(dir, 0700) != 0) {
    snprintf(err, errlen, "cannot make %s private: %s", dir, strerror(errno));
    return -1;
  }
  return 0;
}

/* Writes data to path, mode 0600, never through a link, never half-written. */
static int write_private(const char *path, const char *data) {
  char *tmp = xasprintf("%s.tmp", path);
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  int rc = fd < 0 ? -1 : write_all(fd, data, strlen(data));
  if (fd >= 0 && rc == 0) rc = fsync(fd);
  if (fd >= 0) close(fd);
  if (rc == 0) rc = rename(tmp, path);
  if (rc != 0) unlink(tmp);
  free(tmp);
  return rc;
}

/* 1: loaded; 0: absent or expiring (make a new one); -1: unusable (err says why). */
static int load_ca(tls_ca *ca, char *err, size_t errlen) {
  struct stat st;
  if (lstat(ca->key_file, &st) != 0) {
    if (errno == ENOENT) return 0;
    snprintf(err, errlen, "cannot read %s: %s", ca->key_file, strerror(errno));
    return -1;
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    snprintf(err, errlen, "%s is not a regular file of this user", ca->key_file);
    return -1;
  }
  if ((st.st_mode & 077) && chmod(ca->key_file, 0600) == 0)
    log_msg("%s was readable by others: made it 0600", ca->key_file);
  int rc = mbedtls_pk_parse_keyfile(&ca->key, ca->key_file, NULL);
  if (rc) return set_err(err, errlen, "cannot parse the CA key", rc), -1;
  rc = mbedtls_x509_crt_parse_file(&ca->crt, ca->cert_file);
  if (rc) return set_err(err, errlen, "cannot parse the CA certificate (ca.pem)", rc), -1;
  if ((rc = mbedtls_pk_check_pair(&ca->crt.pk, &ca->key)) != 0)
    return set_err(err, errlen, "ca.pem and ca.key do not belong together", rc), -1;
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  if (ca->crt.valid_to.year < tm.tm_year + 1900 + 2) { /* outlive the leaves it signs */
    log_msg("the CA in %s expires soon: making a new one (trust the new ca.pem)", ca->cert_file);
    mbedtls_pk_free(&ca->key);
    mbedtls_pk_init(&ca->key);
    mbedtls_x509_crt_free(&ca->crt);
    mbedtls_x509_crt_init(&ca->crt);
    return 0;
  }
  if (mbedtls_x509_dn_gets(ca->issuer, sizeof ca->issuer, &ca->crt.subject) < 0) {
    snprintf(err, errlen, "the CA certificate's subject is too long");
    return -1;
  }
  return 1;
}

static int create_ca(tls_ca *ca, char *err, size_t errlen) {
  unsigned char id[4], *pem = xmalloc(PEM_CAP);
  int rc = mbedtls_ctr_drbg_random(&ca->drbg, id, sizeof id);
  snprintf(ca->issuer, sizeof ca->issuer, "CN=e2b-local CA %02x%02x%02x%02x", id[0], id[1], id[2], id[3]);
  if (!rc) rc = new_key(ca, &ca->key);
  cert_spec spec = {.subject_key = &ca->key, .subject = ca->issuer, .is_ca = 1, .days = CA_DAYS};
  if (!rc) rc = write_cert(ca, &spec, &ca->key, ca->issuer, pem, PEM_CAP);
  if (!rc) rc = mbedtls_x509_crt_parse(&ca->crt, pem, strlen((char *)pem) + 1);
  if (rc) {
    free(pem);
    return set_err(err, errlen, "cannot make a CA", rc), -1;
  }
  if (write_private(ca->cert_file, (char *)pem) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", ca->cert_file, strerror(errno));
    free(pem);
    return -1;
  }
  rc = mbedtls_pk_write_key_pem(&ca->key, pem, PEM_CAP);
  int wrc = rc ? -1 : write_private(ca->key_file, (char *)pem);
  mbedtls_platform_zeroize(pem, PEM_CAP);
  free(pem);
  if (wrc != 0) {
    snprintf(err, errlen, "cannot write %s", ca->key_file);
    return -1;
  }
  log_msg("made a new CA: %s (its key: %s, mode 0600)", ca->cert_file, ca->key_file);
  return 0;
}

tls_ca *tls_ca_open(const char *dir, char *err, size_t errlen) {
  if (private_dir(dir, err, errlen) != 0) return NULL;
  tls_ca *ca = xcalloc(1, sizeof *ca);
  pthread_mutex_init(&ca->mu, NULL);
  mbedtls_entropy_init(&ca->entropy);
  mbedtls_ctr_drbg_init(&ca->drbg);
  mbedtls_pk_init(&ca->key);
  mbedtls_x509_crt_init(&ca->crt);
  ca->cert_file = xasprintf("%s/ca.pem", dir);
  ca->key_file = xasprintf("%s/ca.key", dir);
  static const unsigned char pers[] = "e2b-local tls_ca";
  int rc = mbedtls_ctr_drbg_seed(&ca->drbg, mbedtls_entropy_func, &ca->entropy, pers, sizeof pers - 1);
  if (rc) {
    set_err(err, errlen, "cannot seed the random generator", rc);
    tls_ca_close(ca);
    return NULL;
  }
  int loaded = load_ca(ca, err, errlen);
  if (loaded < 0 || (loaded == 0 && create_ca(ca, err, errlen) != 0)) {
    tls_ca_close(ca);
    return NULL;
  }
  return ca;
}

const char *tls_ca_cert_file(const tls_ca *ca) { return ca->cert_file; }

/* A DNS name a certificate may carry: letters, digits, '-' and '.', with
 * '*' only as a whole first label. */
static int valid_dns_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 253) return 0;
  if (s[0] == '*') {
    if (s[1] != '.' || !s[2]) return 0;
    s += 2;
  }
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '-' && *s != '.') return 0;
  return 1;
}

/* subjectAltName: SEQUENCE OF [2] dNSName / [7] iPAddress, written back to front. */
static int san_der(const char *const *names, size_t n, unsigned char *buf, size_t cap,
                   unsigned char **start, size_t *len, char *err, size_t errlen) {
  unsigned char *p = buf + cap;
  size_t total = 0;
  for (size_t i = n; i-- > 0;) {
    unsigned char ip[16];
    size_t iplen = inet_pton(AF_INET, names[i], ip) == 1 ? 4 : inet_pton(AF_INET6, names[i], ip) == 1 ? 16 : 0;
    if (!iplen && !valid_dns_name(names[i])) {
      snprintf(err, errlen, "'%.80s' is not a DNS name or an IP address", names[i]);
      return -1;
    }
    const unsigned char *data = iplen ? ip : (const unsigned char *)names[i];
    size_t dlen = iplen ? iplen : strlen(names[i]);
    int a = mbedtls_asn1_write_raw_buffer(&p, buf, data, dlen);
    int b = a < 0 ? a : mbedtls_asn1_write_len(&p, buf, dlen);
    int c = b < 0 ? b : mbedtls_asn1_write_tag(&p, buf, MBEDTLS_ASN1_CONTEXT_SPECIFIC | (iplen ? 7 : 2));
    if (c < 0) return set_err(err, errlen, "too many names for one certificate", c), -1;
    total += (size_t)a + (size_t)b + (size_t)c;
  }
  int b = mbedtls_asn1_write_len(&p, buf, total);
  int c = b < 0 ? b : mbedtls_asn1_write_tag(&p, buf, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE);
  if (c < 0) return set_err(err, errlen, "too many names for one certificate", c), -1;
  *start = p;
  *len = total + (size_t)b + (size_t)c;
  return 0;
}

static int issue_locked(tls_ca *ca, const unsigned char *san, size_t san_len, unsigned days,
                        tls_leaf *out, char *err, size_t errlen) {
  mbedtls_pk_context key;
  mbedtls_pk_init(&key);
  unsigned char *pem = xmalloc(PEM_CAP);
  int rc = new_key(ca, &key);
  cert_spec spec = {.subject_key = &key, .subject = "CN=e2b-local", .days = days, .san = san, .san_len = san_len};
  if (!rc) rc = write_cert(ca, &spec, &ca->key, ca->issuer, pem, PEM_CAP);
  if (!rc) {
    out->cert_pem = xstrdup((char *)pem);
    rc = mbedtls_pk_write_key_pem(&key, pem, PEM_CAP);
    if (!rc) out->key_pem = xstrdup((char *)pem);
  }
  mbedtls_platform_zeroize(pem, PEM_CAP);
  free(pem);
  mbedtls_pk_free(&key);
  if (rc) {
    tls_leaf_free(out);
    return set_err(err, errlen, "cannot issue a certificate", rc), -1;
  }
  return 0;
}

int tls_ca_issue(tls_ca *ca, const char *const *names, size_t n, unsigned days, tls_leaf *out,
                 char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (n == 0 || n > MAX_NAMES || days == 0 || days > CA_DAYS) {
    snprintf(err, errlen, "a certificate needs 1 to %d names and 1 to %d days", MAX_NAMES, CA_DAYS);
    return -1;
  }
  unsigned char *buf = xmalloc(SAN_CAP), *san;
  size_t san_len;
  int rc = san_der(names, n, buf, SAN_CAP, &san, &san_len, err, errlen);
  if (rc == 0) {
    pthread_mutex_lock(&ca->mu);
    rc = issue_locked(ca, san, san_len, days, out, err, errlen);
    pthread_mutex_unlock(&ca->mu);
  }
  free(buf);
  return rc;
}

void tls_leaf_free(tls_leaf *leaf) {
  if (!leaf) return;
  if (leaf->key_pem) mbedtls_platform_zeroize(leaf->key_pem, strlen(leaf->key_pem));
  free(leaf->key_pem);
  free(leaf->cert_pem);
  leaf->key_pem = leaf->cert_pem = NULL;
}

void tls_ca_close(tls_ca *ca) {
  if (!ca) return;
  mbedtls_pk_free(&ca->key);
  mbedtls_x509_crt_free(&ca->crt);
  mbedtls_ctr_drbg_free(&ca->drbg);
  mbedtls_entropy_free(&ca->entropy);
  pthread_mutex_destroy(&ca->mu);
  free(ca->cert_file);
  free(ca->key_file);
  free(ca);
}
