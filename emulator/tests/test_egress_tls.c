/* test_egress_tls.c — the egress proxy's TLS interception on its own, over
 * non-blocking socketpairs: a client that trusts e2b-local's CA talks through
 * it to an upstream with a certificate from another CA (the "extra" one);
 * bytes pass both ways exactly; an upstream from an untrusted CA, or for
 * another address, and a client sending junk all end in a failed handshake;
 * the certificate cache stays bounded across many hosts. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/ssl.h>

#include "egress_tls.h"
#include "testing.h"
#include "tls_ca.h"
#include "util.h"

static char root[] = "/tmp/test_egress_tls.XXXXXX";
static mbedtls_entropy_context g_entropy;
static mbedtls_ctr_drbg_context g_drbg;

/* One end of a test connection: an mbedTLS client or server on fd. */
typedef struct peer {
  mbedtls_ssl_config conf;
  mbedtls_ssl_context ssl;
  mbedtls_x509_crt crt; /* the server's leaf, or the client's trusted CA */
  mbedtls_pk_context key;
  int fd, done;
} peer;

static int nb_send(void *ctx, const unsigned char *b, size_t n) {
  ssize_t r = send(*(int *)ctx, b, n, MSG_NOSIGNAL);
  return r >= 0 ? (int)r : MBEDTLS_ERR_SSL_WANT_WRITE;
}

static int nb_recv(void *ctx, unsigned char *b, size_t n) {
  ssize_t r = read(*(int *)ctx, b, n);
  return r >= 0 ? (int)r : MBEDTLS_ERR_SSL_WANT_READ;
}

/* A server with a leaf for names from ca, or a client trusting ca_file for host. */
static void peer_init(peer *p, int fd, tls_ca *ca, const char *name, const char *ca_file, const char *host) {
  memset(p, 0, sizeof *p);
  p->fd = fd;
  mbedtls_ssl_config_init(&p->conf);
  mbedtls_ssl_init(&p->ssl);
  mbedtls_x509_crt_init(&p->crt);
  mbedtls_pk_init(&p->key);
  int server = ca != NULL;
  CHECK(mbedtls_ssl_config_defaults(&p->conf, server ? MBEDTLS_SSL_IS_SERVER : MBEDTLS_SSL_IS_CLIENT,
                                    MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT) == 0);
  mbedtls_ssl_conf_rng(&p->conf, mbedtls_ctr_drbg_random, &g_drbg);
  if (server) {
    tls_leaf leaf;
    char err[256];
    const char *names[] = {name};
    CHECK(tls_ca_issue(ca, names, 1, 2, &leaf, err, sizeof err) == 0);
    CHECK(mbedtls_x509_crt_parse(&p->crt, (const unsigned char *)leaf.cert_pem, strlen(leaf.cert_pem) + 1) == 0);
    CHECK(mbedtls_pk_parse_key(&p->key, (const unsigned char *)leaf.key_pem, strlen(leaf.key_pem) + 1, NULL, 0) == 0);
    tls_leaf_free(&leaf);
    CHECK(mbedtls_ssl_conf_own_cert(&p->conf, &p->crt, &p->key) == 0);
  } else {
    CHECK(mbedtls_x509_crt_parse_file(&p->crt, ca_file) == 0);
    mbedtls_ssl_conf_ca_chain(&p->conf, &p->crt, NULL);
    mbedtls_ssl_conf_authmode(&p->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
  }
  CHECK(mbedtls_ssl_setup(&p->ssl, &p->conf) == 0);
  if (host) CHECK(mbedtls_ssl_set_hostname(&p->ssl, host) == 0);
  mbedtls_ssl_set_bio(&p->ssl, &p->fd, nb_send, nb_recv, NULL);
}

static void peer_free(peer *p) {
  mbedtls_ssl_free(&p->ssl);
  mbedtls_ssl_config_free(&p->conf);
  mbedtls_x509_crt_free(&p->crt);
  mbedtls_pk_free(&p->key);
}

/* Advances a peer's handshake: 0 going on or done, -1 failed. */
static int peer_step(peer *p) {
  if (p->done) return 0;
  int rc = mbedtls_ssl_handshake(&p->ssl);
  if (rc == 0) p->done = 1;
  return rc == 0 || rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE ? 0 : -1;
}

static void pair(int fds[2]) {
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  for (int i = 0; i < 2; i++) fcntl(fds[i], F_SETFL, O_NONBLOCK);
}

typedef struct rig {
  int cl[2], up[2]; /* [0]: the test's peer, [1]: the proxy's end */
  peer client, upstream;
  etls *t;
} rig;

/* A client for host through the proxy to an upstream with a leaf for
 * up_name from up_ca. Returns the proxy's last handshake result (1, or -1
 * with err). */
static int rig_run(rig *r, tls_ca *e2b, tls_ca *up_ca, const char *up_name, const char *host, char *err,
                   size_t errlen) {
  pair(r->cl);
  pair(r->up);
  /* mbedTLS 2.28 cannot check an address itself: the test's client checks the chain only then */
  unsigned char ip[16];
  int literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
  peer_init(&r->client, r->cl[0], NULL, NULL, tls_ca_cert_file(e2b), literal ? NULL : host);
  peer_init(&r->upstream, r->up[0], up_ca, up_name, NULL, NULL);
  CHECK(peer_step(&r->client) == 0); /* the ClientHello goes out */
  char pre[4096];
  ssize_t n = read(r->cl[1], pre, sizeof pre);
  CHECK(n > 5 && pre[0] == 0x16);
  r->t = etls_new(host, r->cl[1], r->up[1], pre, n > 0 ? (size_t)n : 0, err, errlen);
  CHECK(r->t != NULL);
  int hs = 0;
  for (int i = 0; r->t && i < 200 && hs == 0; i++) {
    hs = etls_handshake(r->t, err, errlen);
    if (peer_step(&r->client) != 0 || peer_step(&r->upstream) != 0) break;
  }
  return hs;
}

static void rig_free(rig *r) {
  etls_free(r->t);
  peer_free(&r->client);
  peer_free(&r->upstream);
  for (int i = 0; i < 2; i++) close(r->cl[i]), close(r->up[i]);
}

/* Moves len bytes from one peer through the proxy to the other. */
static void relay(rig *r, peer *from, int from_side, peer *to, const char *msg) {
  size_t len = strlen(msg);
  CHECK(mbedtls_ssl_write(&from->ssl, (const unsigned char *)msg, len) == (int)len);
  char mid[256], got[256];
  int n = ETLS_AGAIN;
  for (int i = 0; i < 20 && n == ETLS_AGAIN; i++) n = etls_read(r->t, from_side, mid, sizeof mid);
  CHECK(n == (int)len);
  if (n <= 0) return;
  CHECK(etls_write(r->t, !from_side, mid, (size_t)n) == n);
  int m = mbedtls_ssl_read(&to->ssl, (unsigned char *)got, sizeof got);
  CHECK_MEM(got, m > 0 ? (size_t)m : 0, msg, len);
}

static tls_ca *g_e2b, *g_up, *g_rogue;

static void test_intercepts(void) {
  tls_ca *e2b = g_e2b, *up_ca = g_up;
  rig r;
  char err[256] = "";
  CHECK(rig_run(&r, e2b, up_ca, "up.test", "up.test", err, sizeof err) == 1);
  CHECK(r.client.done && r.upstream.done);
  /* the client verified a certificate for up.test from e2b-local's CA */
  CHECK(mbedtls_ssl_get_verify_result(&r.client.ssl) == 0);
  relay(&r, &r.client, ETLS_CLIENT, &r.upstream, "GET / HTTP/1.1\r\nHost: up.test\r\n\r\n");
  relay(&r, &r.upstream, ETLS_UPSTREAM, &r.client, "HTTP/1.1 204 No Content\r\n\r\n");
  /* the end of one side reads as 0 through the proxy */
  CHECK(mbedtls_ssl_close_notify(&r.upstream.ssl) == 0);
  int n = ETLS_AGAIN;
  for (int i = 0; i < 20 && n == ETLS_AGAIN; i++) n = etls_read(r.t, ETLS_UPSTREAM, err, sizeof err);
  CHECK(n == 0);
  rig_free(&r);
}

static void test_untrusted_upstream(void) {
  tls_ca *e2b = g_e2b, *rogue = g_rogue;
  rig r;
  char err[256] = "";
  CHECK(rig_run(&r, e2b, rogue, "up.test", "up.test", err, sizeof err) == -1);
  CHECK(strstr(err, "not trusted") != NULL);
  rig_free(&r);
}

static void test_addresses(void) {
  tls_ca *e2b = g_e2b, *up_ca = g_up;
  rig r;
  char err[256] = "";
  CHECK(rig_run(&r, e2b, up_ca, "127.0.0.1", "127.0.0.1", err, sizeof err) == 1);
  rig_free(&r);
  /* a certificate for another address (or a name) is not one for this address */
  CHECK(rig_run(&r, e2b, up_ca, "127.0.0.2", "127.0.0.1", err, sizeof err) == -1);
  CHECK(strstr(err, "not trusted") != NULL);
  rig_free(&r);
  CHECK(rig_run(&r, e2b, up_ca, "up.test", "::1", err, sizeof err) == -1);
  rig_free(&r);
}

static void test_junk_client(void) {
  int cl[2], up[2];
  pair(cl);
  pair(up);
  char err[256];
  static const char junk[] = "\x16\x03\x01\x00\x08garbage!";
  etls *t = etls_new("up.test", cl[1], up[1], junk, sizeof junk - 1, err, sizeof err);
  CHECK(t != NULL);
  int hs = 0;
  for (int i = 0; t && i < 10 && hs == 0; i++) hs = etls_handshake(t, err, sizeof err);
  CHECK(hs == -1);
  etls_free(t);
  for (int i = 0; i < 2; i++) close(cl[i]), close(up[i]);
}

/* More hosts than the cache holds: each gets its certificate, nothing leaks
 * (ASan), and a connection outlives its host's eviction. */
static void test_cache_bounded(void) {
  int cl[2], up[2];
  pair(cl);
  pair(up);
  char err[256];
  etls *first = etls_new("h0.test", cl[1], up[1], "", 0, err, sizeof err);
  CHECK(first != NULL);
  for (int i = 1; i <= ETLS_LEAF_CACHE + 8; i++) {
    char host[32];
    snprintf(host, sizeof host, "h%d.test", i);
    etls *t = etls_new(host, cl[1], up[1], "", 0, err, sizeof err);
    CHECK(t != NULL);
    etls_free(t);
  }
  /* a name no certificate can carry is refused, not a crash */
  CHECK(etls_new("bad_name.test", cl[1], up[1], "", 0, err, sizeof err) == NULL);
  etls_free(first);
  for (int i = 0; i < 2; i++) close(cl[i]), close(up[i]);
}

int main(void) {
  if (!mkdtemp(root)) return 1;
  mbedtls_entropy_init(&g_entropy);
  mbedtls_ctr_drbg_init(&g_drbg);
  mbedtls_ctr_drbg_seed(&g_drbg, mbedtls_entropy_func, &g_entropy, NULL, 0);
  char err[256] = "";
  char *d1 = xasprintf("%s/e2b", root), *d2 = xasprintf("%s/up", root), *d3 = xasprintf("%s/rogue", root);
  tls_ca *e2b = tls_ca_open(d1, err, sizeof err), *up = tls_ca_open(d2, err, sizeof err),
         *rogue = tls_ca_open(d3, err, sizeof err);
  CHECK(e2b && up && rogue);
  CHECK(!etls_enabled());
  CHECK(etls_init(e2b, "/nonexistent/ca.pem", err, sizeof err) == -1 && strstr(err, "/nonexistent/ca.pem"));
  CHECK(!etls_enabled());
  CHECK(e2b && up && etls_init(e2b, tls_ca_cert_file(up), err, sizeof err) == 0);
  if (etls_enabled() && rogue) {
    g_e2b = e2b, g_up = up, g_rogue = rogue;
    RUN(test_intercepts);
    RUN(test_untrusted_upstream);
    RUN(test_addresses);
    RUN(test_junk_client);
    RUN(test_cache_bounded);
  }
  etls_shutdown();
  tls_ca_close(e2b);
  tls_ca_close(up);
  tls_ca_close(rogue);
  free(d1), free(d2), free(d3);
  mbedtls_ctr_drbg_free(&g_drbg);
  mbedtls_entropy_free(&g_entropy);
  char *cmd = xasprintf("rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", root);
  free(cmd);
  return TESTING_DONE();
}
