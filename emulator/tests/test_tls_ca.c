/* test_tls_ca.c — the local CA: made once in a private directory (0700,
 * files 0600), loaded again unchanged, a key others could read tightened,
 * and the leaves it issues verify against it for their names only. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/x509_crt.h>

#include "testing.h"
#include "tls_ca.h"
#include "util.h"

static int mode_of(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *buf = xcalloc(1, 65536);
  size_t n = fread(buf, 1, 65535, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

/* Verifies leaf against ca.pem for name: 0 when trusted. */
static int verify(const char *ca_file, const char *leaf_pem, const char *name) {
  mbedtls_x509_crt ca, leaf;
  mbedtls_x509_crt_init(&ca);
  mbedtls_x509_crt_init(&leaf);
  uint32_t flags = 0;
  int rc = mbedtls_x509_crt_parse_file(&ca, ca_file);
  if (!rc) rc = mbedtls_x509_crt_parse(&leaf, (const unsigned char *)leaf_pem, strlen(leaf_pem) + 1);
  if (!rc) rc = mbedtls_x509_crt_verify(&leaf, &ca, NULL, name, &flags, NULL, NULL);
  mbedtls_x509_crt_free(&ca);
  mbedtls_x509_crt_free(&leaf);
  return rc;
}

/* Occurrences of needle in a certificate's DER (from its PEM). */
static int der_count(const char *pem, const unsigned char *needle, size_t nlen) {
  mbedtls_x509_crt crt;
  mbedtls_x509_crt_init(&crt);
  int count = -1;
  if (mbedtls_x509_crt_parse(&crt, (const unsigned char *)pem, strlen(pem) + 1) == 0) {
    count = 0;
    for (size_t i = 0; i + nlen <= crt.raw.len; i++)
      if (memcmp(crt.raw.p + i, needle, nlen) == 0) count++;
  }
  mbedtls_x509_crt_free(&crt);
  return count;
}

static char root[] = "/tmp/test_tls_ca.XXXXXX";
static char dir[sizeof root + 4]; /* root/tls: the CA's directory */

/* Opens the CA of dir (made on the first call). */
static tls_ca *open_ca(void) {
  char err[256] = "";
  tls_ca *ca = tls_ca_open(dir, err, sizeof err);
  CHECK(ca != NULL);
  return ca;
}

static void test_create_load_issue(void) {
  char err[256] = "";
  tls_ca *ca = open_ca();
  if (!ca) return;
  char *key = xasprintf("%s/ca.key", dir);
  CHECK(mode_of(dir) == 0700);
  CHECK(mode_of(key) == 0600);
  CHECK(mode_of(tls_ca_cert_file(ca)) == 0600);
  char *first = slurp(tls_ca_cert_file(ca));
  const char *names[] = {"e2b.localhost", "*.e2b.localhost", "localhost", "127.0.0.1"};
  tls_leaf leaf;
  CHECK(tls_ca_issue(ca, names, 4, 30, &leaf, err, sizeof err) == 0);
  CHECK(strstr(leaf.cert_pem, "BEGIN CERTIFICATE") && strstr(leaf.key_pem, "PRIVATE KEY"));
  CHECK(verify(tls_ca_cert_file(ca), leaf.cert_pem, "49983-abc.e2b.localhost") == 0);
  CHECK(verify(tls_ca_cert_file(ca), leaf.cert_pem, "api.e2b.localhost") == 0);
  CHECK(verify(tls_ca_cert_file(ca), leaf.cert_pem, "e2b.localhost") == 0);
  CHECK(verify(tls_ca_cert_file(ca), leaf.cert_pem, "a.b.e2b.localhost") != 0); /* one label only */
  CHECK(verify(tls_ca_cert_file(ca), leaf.cert_pem, "example.com") != 0);
  tls_leaf_free(&leaf);
  tls_ca_close(ca);

  /* a second start loads the same CA, and tightens a key someone loosened */
  chmod(key, 0644);
  ca = open_ca();
  char *second = ca ? slurp(tls_ca_cert_file(ca)) : NULL;
  CHECK(first && second && strcmp(first, second) == 0);
  CHECK(mode_of(key) == 0600);
  tls_ca_close(ca);
  free(first);
  free(second);
  free(key);
}

/* RFC 5758 3.2: an ecdsa-with-SHA256 AlgorithmIdentifier has no parameters
 * (not even NULL), in the signed part and around the signature alike. Strict
 * verifiers (rustls/webpki: the Python SDK's HTTP client) refuse the NULL. */
static const unsigned char ALG_BARE[] = {0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02};
static const unsigned char ALG_NULL[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02, 0x05, 0x00};

static void test_ecdsa_signature_algorithm_has_no_parameters(void) {
  char err[256] = "";
  tls_ca *ca = open_ca();
  if (!ca) return;
  char *ca_pem = slurp(tls_ca_cert_file(ca));
  const char *names[] = {"e2b.localhost", "*.e2b.localhost"};
  tls_leaf leaf;
  CHECK(tls_ca_issue(ca, names, 2, 30, &leaf, err, sizeof err) == 0);
  CHECK(ca_pem && der_count(ca_pem, ALG_BARE, sizeof ALG_BARE) == 2);
  CHECK(ca_pem && der_count(ca_pem, ALG_NULL, sizeof ALG_NULL) == 0);
  CHECK(leaf.cert_pem && der_count(leaf.cert_pem, ALG_BARE, sizeof ALG_BARE) == 2);
  CHECK(leaf.cert_pem && der_count(leaf.cert_pem, ALG_NULL, sizeof ALG_NULL) == 0);
  CHECK(leaf.cert_pem && verify(tls_ca_cert_file(ca), leaf.cert_pem, "api.e2b.localhost") == 0);
  tls_leaf_free(&leaf);
  tls_ca_close(ca);
  free(ca_pem);
}

static void test_refusals(void) {
  char err[256] = "";
  tls_ca *ca = open_ca();
  if (!ca) return;
  tls_leaf leaf;
  const char *bad[] = {"evil name"};
  CHECK(tls_ca_issue(ca, bad, 1, 30, &leaf, err, sizeof err) == -1 && strstr(err, "not a DNS name"));
  const char *star[] = {"a.*.localhost"};
  CHECK(tls_ca_issue(ca, star, 1, 30, &leaf, err, sizeof err) == -1);
  const char *ok[] = {"localhost"};
  CHECK(tls_ca_issue(ca, ok, 0, 30, &leaf, err, sizeof err) == -1);
  CHECK(tls_ca_issue(ca, ok, 1, 0, &leaf, err, sizeof err) == -1);
  CHECK(leaf.cert_pem == NULL && leaf.key_pem == NULL);
  tls_ca_close(ca);
  /* a CA directory that is a link elsewhere is refused */
  char *link = xasprintf("%s/linked", root);
  CHECK(symlink(dir, link) == 0);
  CHECK(tls_ca_open(link, err, sizeof err) == NULL && strstr(err, "not a directory"));
  free(link);
}

int main(void) {
  if (!mkdtemp(root)) return 1;
  snprintf(dir, sizeof dir, "%s/tls", root);
  RUN(test_create_load_issue);
  RUN(test_refusals);
  RUN(test_ecdsa_signature_algorithm_has_no_parameters);
  char *cmd = xasprintf("rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", root);
  free(cmd);
  return TESTING_DONE();
}
