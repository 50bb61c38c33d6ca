/* egress_tls.c — terminate a sandbox's TLS with a certificate from
 * e2b-local's CA, originate verified TLS to the real upstream (mbedTLS,
 * non-blocking BIOs on the proxy's own descriptors). */
#define _GNU_SOURCE
#include "egress_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "util.h"

#define LEAF_DAYS 30
#define LEAF_REISSUE_MS (7LL * 86400 * 1000) /* a cached leaf is replaced well before it expires */
#define WRITE_MAX 16384 /* one record */

/* The certificate the sandbox sees for one host (shared by its connections). */
typedef struct leaf {
  struct leaf *next;
  char host[256];
  mbedtls_x509_crt crt; /* the leaf, then the CA: the chain a client checks */
  mbedtls_pk_context key;
  int refs;       /* the cache's own, plus one per connection */
  int64_t born;   /* issued (mono ms) */
  uint64_t used;  /* for evicting the least recently used */
} leaf;

typedef struct side {
  mbedtls_ssl_context ssl;
  int fd;
  const char *pre; /* client side: ClientHello bytes the proxy read already */
  size_t prelen, preoff;
  size_t wpend;    /* bytes of a write that returned WANT_WRITE */
  int hs_done, hs_want;
} side;

struct etls {
  side s[2];
  mbedtls_ssl_config srv; /* per connection: its own certificate */
  leaf *lf;
  char *pre;
  int ip; /* the host is an address literal: checked against iPAddress names */
  unsigned char addr[16];
  size_t addrlen;
};

static tls_ca *g_ca;
static int g_enabled;
static mbedtls_x509_crt g_trust;
static mbedtls_entropy_context g_entropy;
static mbedtls_ctr_drbg_context g_drbg;
static mbedtls_ssl_config g_cli; /* towards upstreams: verification required */
static leaf *g_leaves;
static int g_nleaves;
static uint64_t g_tick;
static const char *g_alpn[] = {"http/1.1", NULL}; /* the rewriting speaks HTTP/1.x */
/* X25519 first: the key exchange costs the loop thread less than with P-256 */
static const mbedtls_ecp_group_id g_curves[] = {MBEDTLS_ECP_DP_CURVE25519, MBEDTLS_ECP_DP_SECP256R1,
                                                MBEDTLS_ECP_DP_SECP384R1, MBEDTLS_ECP_DP_NONE};

/* The usual places of the system's bundle (Debian, Fedora, Alpine/macOS). */
static const char *const SYSTEM_BUNDLES[] = {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
                                             "/etc/ssl/cert.pem", NULL};

static int load_trust(const char *extra, char *err, size_t errlen) {
  int any = 0;
  for (int i = 0; SYSTEM_BUNDLES[i] && !any; i++)
    if (access(SYSTEM_BUNDLES[i], R_OK) == 0 && mbedtls_x509_crt_parse_file(&g_trust, SYSTEM_BUNDLES[i]) >= 0)
      any = g_trust.version != 0; /* some certificates may not parse: the rest count */
  if (extra) {
    int rc = mbedtls_x509_crt_parse_file(&g_trust, extra);
    if (rc != 0) {
      snprintf(err, errlen, "cannot read the egress CA file %s (mbedTLS -0x%04x)", extra, (unsigned)(rc < 0 ? -rc : rc));
      return -1;
    }
    any = 1;
  }
  if (!any) {
    snprintf(err, errlen, "no system CA bundle found (nor --egress-ca-file)");
    return -1;
  }
  return 0;
}

int etls_init(tls_ca *ca, const char *extra_ca_file, char *err, size_t errlen) {
  mbedtls_x509_crt_init(&g_trust);
  mbedtls_entropy_init(&g_entropy);
  mbedtls_ctr_drbg_init(&g_drbg);
  mbedtls_ssl_config_init(&g_cli);
  static const unsigned char pers[] = "e2b-local egress_tls";
  int rc = mbedtls_ctr_drbg_seed(&g_drbg, mbedtls_entropy_func, &g_entropy, pers, sizeof pers - 1);
  if (rc == 0 && load_trust(extra_ca_file, err, errlen) != 0) rc = -1;
  else if (rc != 0) snprintf(err, errlen, "cannot seed the random generator (mbedTLS -0x%04x)", (unsigned)-rc);
  if (rc == 0) rc = mbedtls_ssl_config_defaults(&g_cli, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                                MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc == 0) {
    mbedtls_ssl_conf_authmode(&g_cli, MBEDTLS_SSL_VERIFY_REQUIRED); /* never unverified */
    mbedtls_ssl_conf_ca_chain(&g_cli, &g_trust, NULL);
    mbedtls_ssl_conf_rng(&g_cli, mbedtls_ctr_drbg_random, &g_drbg);
    mbedtls_ssl_conf_min_version(&g_cli, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
    mbedtls_ssl_conf_curves(&g_cli, g_curves);
    rc = mbedtls_ssl_conf_alpn_protocols(&g_cli, g_alpn);
  }
  if (rc != 0) {
    if (!err[0]) snprintf(err, errlen, "cannot set up TLS (mbedTLS -0x%04x)", (unsigned)-rc);
    etls_shutdown();
    return -1;
  }
  g_ca = ca;
  g_enabled = 1;
  return 0;
}

int etls_enabled(void) { return g_enabled; }

static void leaf_unref(leaf *l) {
  if (!l || --l->refs > 0) return;
  mbedtls_x509_crt_free(&l->crt);
  mbedtls_pk_free(&l->key);
  free(l);
}

void etls_shutdown(void) {
  while (g_leaves) {
    leaf *l = g_leaves;
    g_leaves = l->next;
    leaf_unref(l);
  }
  g_nleaves = 0;
  mbedtls_ssl_config_free(&g_cli);
  mbedtls_ctr_drbg_free(&g_drbg);
  mbedtls_entropy_free(&g_entropy);
  mbedtls_x509_crt_free(&g_trust);
  g_enabled = 0;
  g_ca = NULL;
}

/* ---- the certificate cache: one leaf per host, at most ETLS_LEAF_CACHE ---- */

static leaf *issue(const char *host, char *err, size_t errlen) {
  tls_leaf pem;
  const char *names[1] = {host};
  if (tls_ca_issue(g_ca, names, 1, LEAF_DAYS, &pem, err, errlen) != 0) return NULL;
  leaf *l = xcalloc(1, sizeof *l);
  snprintf(l->host, sizeof l->host, "%s", host);
  mbedtls_x509_crt_init(&l->crt);
  mbedtls_pk_init(&l->key);
  int rc = mbedtls_x509_crt_parse(&l->crt, (const unsigned char *)pem.cert_pem, strlen(pem.cert_pem) + 1);
  if (rc == 0) rc = mbedtls_x509_crt_parse_file(&l->crt, tls_ca_cert_file(g_ca));
  if (rc == 0)
    rc = mbedtls_pk_parse_key(&l->key, (const unsigned char *)pem.key_pem, strlen(pem.key_pem) + 1, NULL, 0);
  tls_leaf_free(&pem);
  if (rc != 0) {
    snprintf(err, errlen, "cannot load the certificate issued for the host (mbedTLS -0x%04x)", (unsigned)-rc);
    l->refs = 1;
    leaf_unref(l);
    return NULL;
  }
  l->refs = 1;
  l->born = mono_ms();
  return l;
}

/* Drops *pp from the cache (connections using it keep it until they end). */
static void cache_drop(leaf **pp) {
  leaf *gone = *pp;
  *pp = gone->next;
  leaf_unref(gone);
  g_nleaves--;
}

/* The cached leaf for host, or a new one (the least recently used goes). */
static leaf *leaf_for(const char *host, char *err, size_t errlen) {
  for (leaf **pp = &g_leaves; *pp; pp = &(*pp)->next) {
    leaf *l = *pp;
    if (strcmp(l->host, host) != 0) continue;
    if (mono_ms() - l->born >= LEAF_REISSUE_MS) {
      cache_drop(pp);
      break;
    }
    l->used = ++g_tick;
    l->refs++;
    return l;
  }
  leaf *l = issue(host, err, errlen);
  if (!l) return NULL;
  if (g_nleaves >= ETLS_LEAF_CACHE) {
    leaf **old = &g_leaves;
    for (leaf **pp = &g_leaves; *pp; pp = &(*pp)->next)
      if ((*pp)->used < (*old)->used) old = pp;
    cache_drop(old);
  }
  l->used = ++g_tick;
  l->next = g_leaves;
  g_leaves = l;
  g_nleaves++;
  l->refs++;
  return l;
}

/* ---- non-blocking BIOs on the proxy's descriptors ---- */

static int bio_send(void *ctx, const unsigned char *buf, size_t len) {
  side *s = ctx;
  ssize_t n = send(s->fd, buf, len, MSG_NOSIGNAL);
  if (n >= 0) return (int)n;
  if (errno == EAGAIN || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_WRITE;
  return MBEDTLS_ERR_NET_SEND_FAILED;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len) {
  side *s = ctx;
  if (s->preoff < s->prelen) {
    size_t n = s->prelen - s->preoff < len ? s->prelen - s->preoff : len;
    memcpy(buf, s->pre + s->preoff, n);
    s->preoff += n;
    return (int)n;
  }
  ssize_t n = read(s->fd, buf, len);
  if (n >= 0) return (int)n;
  if (errno == EAGAIN || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_READ;
  return MBEDTLS_ERR_NET_RECV_FAILED;
}

/* mbedTLS 2.28 matches a host name against dNSName entries only: an
 * address literal is checked here against the leaf's iPAddress entries. */
static int verify_ip(void *ctx, mbedtls_x509_crt *crt, int depth, uint32_t *flags) {
  etls *t = ctx;
  if (depth != 0) return 0;
  for (const mbedtls_x509_sequence *s = &crt->subject_alt_names; s && s->buf.p; s = s->next)
    if (s->buf.tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_X509_SAN_IP_ADDRESS) && s->buf.len == t->addrlen &&
        memcmp(s->buf.p, t->addr, t->addrlen) == 0)
      return 0;
  *flags |= MBEDTLS_X509_BADCERT_CN_MISMATCH;
  return 0;
}

static int setup_server(etls *t, char *err, size_t errlen) {
  mbedtls_ssl_config_init(&t->srv);
  int rc = mbedtls_ssl_config_defaults(&t->srv, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
                                       MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc == 0) {
    mbedtls_ssl_conf_rng(&t->srv, mbedtls_ctr_drbg_random, &g_drbg);
    mbedtls_ssl_conf_min_version(&t->srv, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
    mbedtls_ssl_conf_curves(&t->srv, g_curves);
    rc = mbedtls_ssl_conf_own_cert(&t->srv, &t->lf->crt, &t->lf->key);
  }
  if (rc == 0) rc = mbedtls_ssl_conf_alpn_protocols(&t->srv, g_alpn);
  if (rc == 0) rc = mbedtls_ssl_setup(&t->s[ETLS_CLIENT].ssl, &t->srv);
  if (rc != 0) snprintf(err, errlen, "cannot set up TLS towards the sandbox (mbedTLS -0x%04x)", (unsigned)-rc);
  return rc;
}

static int setup_upstream(etls *t, const char *host, char *err, size_t errlen) {
  mbedtls_ssl_context *ssl = &t->s[ETLS_UPSTREAM].ssl;
  int rc = mbedtls_ssl_setup(ssl, &g_cli);
  if (rc == 0 && !t->ip) rc = mbedtls_ssl_set_hostname(ssl, host); /* SNI, and the name checked */
  if (rc == 0 && t->ip) mbedtls_ssl_set_verify(ssl, verify_ip, t);
  if (rc != 0) snprintf(err, errlen, "cannot set up TLS towards the upstream (mbedTLS -0x%04x)", (unsigned)-rc);
  return rc;
}

etls *etls_new(const char *host, int cl_fd, int up_fd, const char *pre, size_t prelen, char *err, size_t errlen) {
  if (!g_enabled) {
    snprintf(err, errlen, "TLS interception is off");
    return NULL;
  }
  etls *t = xcalloc(1, sizeof *t);
  for (int i = 0; i < 2; i++) mbedtls_ssl_init(&t->s[i].ssl);
  t->s[ETLS_CLIENT].fd = cl_fd;
  t->s[ETLS_UPSTREAM].fd = up_fd;
  t->pre = xmalloc(prelen ? prelen : 1);
  memcpy(t->pre, pre, prelen);
  t->s[ETLS_CLIENT].pre = t->pre;
  t->s[ETLS_CLIENT].prelen = prelen;
  if (inet_pton(AF_INET, host, t->addr) == 1) t->ip = 1, t->addrlen = 4;
  else if (inet_pton(AF_INET6, host, t->addr) == 1) t->ip = 1, t->addrlen = 16;
  t->lf = leaf_for(host, err, errlen);
  if (!t->lf) {
    mbedtls_ssl_config_init(&t->srv);
    etls_free(t);
    return NULL;
  }
  if (setup_server(t, err, errlen) != 0 || setup_upstream(t, host, err, errlen) != 0) {
    etls_free(t);
    return NULL;
  }
  for (int i = 0; i < 2; i++) mbedtls_ssl_set_bio(&t->s[i].ssl, &t->s[i], bio_send, bio_recv, NULL);
  return t;
}

/* ---- running ---- */

static int hs_step(side *s) {
  if (s->hs_done) return 0;
  int rc = mbedtls_ssl_handshake(&s->ssl);
  s->hs_want = 0;
  if (rc == 0) {
    s->hs_done = 1;
    return 0;
  }
  if (rc == MBEDTLS_ERR_SSL_WANT_READ) s->hs_want = EPOLLIN;
  else if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) s->hs_want = EPOLLOUT;
  else return rc;
  return 0;
}

int etls_handshake(etls *t, char *err, size_t errlen) {
  err[0] = '\0';
  int rc = hs_step(&t->s[ETLS_CLIENT]);
  if (rc != 0) return -1; /* the sandbox's own TLS failed: nothing to report */
  rc = hs_step(&t->s[ETLS_UPSTREAM]);
  if (rc != 0) {
    uint32_t flags = mbedtls_ssl_get_verify_result(&t->s[ETLS_UPSTREAM].ssl);
    if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED && flags) {
      char why[256];
      int n = mbedtls_x509_crt_verify_info(why, sizeof why, "", flags);
      if (n > 0 && why[n - 1] == '\n') why[n - 1] = '\0';
      snprintf(err, errlen, "the upstream's certificate is not trusted: %s", n > 0 ? why : "unknown reason");
    } else {
      snprintf(err, errlen, "TLS with the upstream failed (mbedTLS -0x%04x)", (unsigned)-rc);
    }
    return -1;
  }
  return t->s[0].hs_done && t->s[1].hs_done;
}

int etls_read(etls *t, int side_, char *buf, size_t cap) {
  side *s = &t->s[side_];
  if (cap == 0) return ETLS_AGAIN;
  int rc = mbedtls_ssl_read(&s->ssl, (unsigned char *)buf, cap > WRITE_MAX ? WRITE_MAX : cap);
  if (rc > 0) return rc;
  if (rc == 0 || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || rc == MBEDTLS_ERR_SSL_CONN_EOF) return 0;
  if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) return ETLS_AGAIN;
  return -1;
}

int etls_write(etls *t, int side_, const char *buf, size_t len) {
  side *s = &t->s[side_];
  if (len > WRITE_MAX) len = WRITE_MAX;
  /* mbedTLS finishes a record it already made and reports the length it was asked for */
  if (s->wpend) len = s->wpend;
  int rc = mbedtls_ssl_write(&s->ssl, (const unsigned char *)buf, len);
  if (rc > 0) {
    s->wpend = 0;
    return rc;
  }
  if (rc == MBEDTLS_ERR_SSL_WANT_WRITE || rc == MBEDTLS_ERR_SSL_WANT_READ) {
    s->wpend = len;
    return ETLS_AGAIN;
  }
  return -1;
}

size_t etls_pending(const etls *t, int side_) { return mbedtls_ssl_get_bytes_avail(&t->s[side_].ssl); }

void etls_close_notify(etls *t, int side_) {
  if (mbedtls_ssl_close_notify(&t->s[side_].ssl) != 0) {
    /* the alert did not fit in the socket now: the shutdown that follows says it too */
  }
}

uint32_t etls_events(const etls *t, int side_) {
  const side *s = &t->s[side_];
  return s->hs_done ? 0 : (uint32_t)s->hs_want;
}

void etls_free(etls *t) {
  if (!t) return;
  for (int i = 0; i < 2; i++) mbedtls_ssl_free(&t->s[i].ssl);
  mbedtls_ssl_config_free(&t->srv);
  leaf_unref(t->lf);
  free(t->pre);
  free(t);
}
