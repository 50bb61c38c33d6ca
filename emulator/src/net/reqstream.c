/* reqstream.c — framing and rewriting the requests on a proxy connection. */
#define _GNU_SOURCE
#include "reqstream.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

enum { RS_SNIFF, RS_HEAD, RS_BODY, RS_CSIZE, RS_CDATA, RS_CCRLF, RS_TRAILER, RS_RAW, RS_DONE };

#define CHUNK_LINE_MAX 1024
#define WAIT 2 /* step(): more input or room needed */

void reqstream_init(reqstream *rs, const char *host, int port, int tunnel, reqstream_rules_fn rules, void *ctx) {
  memset(rs, 0, sizeof *rs);
  snprintf(rs->host, sizeof rs->host, "%s", host);
  rs->port = port;
  rs->tunnel = tunnel;
  rs->state = tunnel ? RS_SNIFF : RS_HEAD;
  rs->rules = rules;
  rs->ctx = ctx;
}

int reqstream_authority(const char *s, size_t n, char *host, size_t cap, int *port, int dflt) {
  const char *hs = s, *he, *ps = NULL;
  if (n == 0 || memchr(s, '@', n)) return -1;
  if (s[0] == '[') {
    const char *rb = memchr(s, ']', n);
    if (!rb) return -1;
    hs = s + 1;
    he = rb;
    if (rb + 1 < s + n) {
      if (rb[1] != ':') return -1;
      ps = rb + 2;
    }
  } else {
    const char *colon = memchr(s, ':', n);
    he = colon ? colon : s + n;
    if (colon) {
      if (memchr(colon + 1, ':', (size_t)(s + n - colon - 1))) return -1;
      ps = colon + 1;
    }
  }
  size_t hl = (size_t)(he - hs);
  if (hl == 0 || hl >= cap) return -1;
  memcpy(host, hs, hl);
  host[hl] = '\0';
  for (size_t i = 0; i < hl; i++)
    if (!isalnum((unsigned char)host[i]) && !strchr("-._:*", host[i])) return -1;
  if (!ps) {
    *port = dflt;
    return dflt > 0 ? 0 : -1;
  }
  size_t pl = (size_t)(s + n - ps);
  if (pl == 0 || pl > 5) return -1;
  int p = 0;
  for (size_t i = 0; i < pl; i++) {
    if (!isdigit((unsigned char)ps[i])) return -1;
    p = p * 10 + (ps[i] - '0');
  }
  if (p < 1 || p > 65535) return -1;
  *port = p;
  return 0;
}

static int is_tchar(unsigned char ch) { return isalnum(ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch)); }

static int named(const char *line, size_t nlen, const char *name) {
  return strlen(name) == nlen && strncasecmp(line, name, nlen) == 0;
}

/* The value of a header line, without surrounding spaces. */
static void header_value(const char *colon, const char *le, const char **v, size_t *vn) {
  const char *s = colon + 1, *e = le;
  while (s < e && (*s == ' ' || *s == '\t')) s++;
  while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
  *v = s;
  *vn = (size_t)(e - s);
}

/* Does a comma-separated list end with the token "chunked"? */
static int ends_chunked(const char *v, size_t n) {
  const char *comma = NULL;
  for (size_t i = 0; i < n; i++)
    if (v[i] == ',') comma = v + i;
  const char *t = comma ? comma + 1 : v;
  while (t < v + n && (*t == ' ' || *t == '\t')) t++;
  return (size_t)(v + n - t) == 7 && strncasecmp(t, "chunked", 7) == 0;
}

/* The request line: origin-form for the upstream. 0, REQSTREAM_END (another
 * destination) or REQSTREAM_BAD; *auth: the authority, for a Host header. */
static int request_line(reqstream *rs, const char *h, const char *eol, sbuf *out, const char **auth,
                        size_t *alen) {
  const char *sp1 = memchr(h, ' ', (size_t)(eol - h));
  if (!sp1 || sp1 == h) return REQSTREAM_BAD;
  for (const char *m = h; m < sp1; m++)
    if (!is_tchar((unsigned char)*m)) return REQSTREAM_BAD;
  const char *sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
  if (!sp2 || sp2 - sp1 < 2 || eol - sp2 != 9 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) return REQSTREAM_BAD;
  *auth = NULL;
  *alen = 0;
  if (rs->tunnel) {
    sbuf_append(out, h, (size_t)(eol - h) + 2); /* the destination is the tunnel's */
    return 0;
  }
  const char *target = sp1 + 1;
  size_t tlen = (size_t)(sp2 - target);
  if (tlen < 8 || strncasecmp(target, "http://", 7) != 0) return REQSTREAM_END;
  const char *a = target + 7;
  size_t an = strcspn(a, "/?# ");
  if (a + an > sp2) an = (size_t)(sp2 - a);
  char host[256];
  int port;
  if (reqstream_authority(a, an, host, sizeof host, &port, 80) != 0) return REQSTREAM_BAD;
  for (char *s = host; *s; s++) *s = (char)tolower((unsigned char)*s);
  size_t hn = strlen(host);
  if (hn > 1 && host[hn - 1] == '.') host[hn - 1] = '\0';
  if (strcmp(host, rs->host) != 0 || port != rs->port) return REQSTREAM_END;
  const char *path = a + an;
  sbuf_append(out, h, (size_t)(sp1 - h) + 1);
  if (path == sp2 || *path != '/') sbuf_append(out, "/", 1);
  sbuf_append(out, path, (size_t)(sp2 - path));
  sbuf_append(out, sp2, (size_t)(eol - sp2) + 2);
  *auth = a;
  *alen = an;
  return 0;
}

typedef struct framing {
  int te, chunked, has_host;
  long long cl; /* -1: none */
} framing;

/* One header line [line, le): kept, dropped or refused; framing noted. */
static int header_line(const char *line, const char *le, const netrules_set *set, framing *f, sbuf *out) {
  const char *colon = memchr(line, ':', (size_t)(le - line));
  if (!colon || colon == line) return REQSTREAM_BAD; /* also an obsolete folded line */
  for (const char *p = line; p < colon; p++)
    if (!is_tchar((unsigned char)*p)) return REQSTREAM_BAD;
  size_t nl = (size_t)(colon - line);
  const char *v;
  size_t vn;
  header_value(colon, le, &v, &vn);
  if (named(line, nl, "Content-Length")) {
    if (vn == 0 || vn > 15) return REQSTREAM_BAD;
    long long n = 0;
    for (size_t i = 0; i < vn; i++) {
      if (!isdigit((unsigned char)v[i])) return REQSTREAM_BAD;
      n = n * 10 + (v[i] - '0');
    }
    if (f->cl >= 0 && f->cl != n) return REQSTREAM_BAD;
    f->cl = n;
  } else if (named(line, nl, "Transfer-Encoding")) {
    if (f->te++) return REQSTREAM_BAD;
    f->chunked = ends_chunked(v, vn);
  } else if (named(line, nl, "Host")) {
    f->has_host = 1;
  }
  /* the proxy's own hop, and what a rule replaces, are not passed on */
  if (named(line, nl, "Proxy-Connection") || named(line, nl, "Proxy-Authorization") ||
      named(line, nl, "Keep-Alive") || named(line, nl, "Upgrade") || netrules_set_has(set, line, nl))
    return 0;
  sbuf_append(out, line, (size_t)(le - line) + 2);
  return 0;
}

/* A complete head h[0..n) (ending in CRLF CRLF) rewritten into out. */
static int rewrite_head(reqstream *rs, const char *h, size_t n, sbuf *out) {
  /* no NUL, no CR or LF but as a line's end: every reader splits it alike */
  for (size_t i = 0; i < n; i++)
    if (h[i] == '\0' || (h[i] == '\r' && h[i + 1] != '\n') || (h[i] == '\n' && (i == 0 || h[i - 1] != '\r')))
      return REQSTREAM_BAD;
  const char *eol = memmem(h, n, "\r\n", 2), *auth;
  size_t alen;
  int rc = request_line(rs, h, eol, out, &auth, &alen);
  if (rc) return rc;
  netrules_set set = {0};
  if (rs->rules) rs->rules(rs->ctx, rs->host, &set);
  framing f = {.cl = -1};
  for (const char *line = eol + 2; line < h + n - 2 && rc == 0;) {
    const char *le = memmem(line, (size_t)(h + n - line), "\r\n", 2);
    rc = header_line(line, le, &set, &f, out);
    line = le + 2;
  }
  if (rc == 0 && f.te && (f.cl >= 0 || !f.chunked)) rc = REQSTREAM_BAD; /* ambiguous framing */
  if (rc == 0) {
    if (!f.has_host && auth && !netrules_set_has(&set, "Host", 4)) sbuf_appendf(out, "Host: %.*s\r\n", (int)alen, auth);
    for (size_t i = 0; i < set.n; i++) sbuf_appendf(out, "%s: %s\r\n", set.h[i].name, set.h[i].value);
    sbuf_append(out, "\r\n", 2);
    rs->state = f.te ? RS_CSIZE : f.cl > 0 ? RS_BODY : RS_HEAD;
    rs->left = f.cl > 0 ? (uint64_t)f.cl : 0;
    rs->requests++;
  }
  netrules_set_clear(&set);
  return rc;
}

static void take(char *in, size_t *inlen, size_t n) {
  memmove(in, in + n, *inlen - n);
  *inlen -= n;
}

/* A chunk-size line or a trailer line: found (0), too long (BAD), or WAIT. */
static int chunk_line(reqstream *rs, const char *in, size_t inlen, size_t max, size_t *len) {
  const char *e = memmem(in, inlen < max ? inlen : max, "\r\n", 2);
  if (!e) return inlen >= max ? REQSTREAM_BAD : WAIT;
  *len = (size_t)(e - in) + 2;
  for (size_t i = 0; i + 2 < *len; i++)
    if (in[i] == '\0' || in[i] == '\r' || in[i] == '\n') return REQSTREAM_BAD;
  if (rs->state == RS_TRAILER) {
    if (*len == 2) rs->state = RS_HEAD;
    return 0;
  }
  uint64_t size = 0;
  size_t i = 0;
  for (; i < 15 && isxdigit((unsigned char)in[i]); i++)
    size = size * 16 + (uint64_t)(isdigit((unsigned char)in[i]) ? in[i] - '0' : (tolower((unsigned char)in[i]) - 'a' + 10));
  if (i == 0 || !(in[i] == '\r' || in[i] == ';' || in[i] == ' ' || in[i] == '\t')) return REQSTREAM_BAD;
  rs->left = size;
  rs->state = size ? RS_CDATA : RS_TRAILER;
  return 0;
}

/* One step: 0 progress, WAIT, or END/BAD. */
static int step(reqstream *rs, char *in, size_t *inlen, size_t incap, char *out, size_t *outlen, size_t cap) {
  size_t room = cap - *outlen, n;
  switch (rs->state) {
  case RS_SNIFF:
    /* an HTTP request starts with a method; TLS (0x16) or anything else is relayed as it is */
    rs->state = (*in >= 'A' && *in <= 'Z') ? RS_HEAD : RS_RAW;
    return 0;
  case RS_RAW:
  case RS_BODY:
  case RS_CDATA:
    n = *inlen < room ? *inlen : room;
    if (rs->state != RS_RAW && n > rs->left) n = (size_t)rs->left;
    if (n == 0) return WAIT;
    memcpy(out + *outlen, in, n);
    *outlen += n;
    take(in, inlen, n);
    if (rs->state != RS_RAW && (rs->left -= n) == 0) rs->state = rs->state == RS_BODY ? RS_HEAD : RS_CCRLF;
    return 0;
  case RS_CCRLF:
    if (*inlen < 2 || room < 2) return WAIT;
    if (in[0] != '\r' || in[1] != '\n') return REQSTREAM_BAD;
    memcpy(out + *outlen, in, 2);
    *outlen += 2;
    take(in, inlen, 2);
    rs->state = RS_CSIZE;
    return 0;
  case RS_CSIZE:
  case RS_TRAILER: {
    int rc = chunk_line(rs, in, *inlen, rs->state == RS_CSIZE ? CHUNK_LINE_MAX : incap, &n);
    if (rc) return rc;
    if (room < n) return WAIT;
    memcpy(out + *outlen, in, n);
    *outlen += n;
    take(in, inlen, n);
    return 0;
  }
  default: break;
  }
  /* RS_HEAD: empty lines before a request line are skipped, as RFC 9112 allows */
  if (*inlen >= 2 && in[0] == '\r' && in[1] == '\n') {
    take(in, inlen, 2);
    return 0;
  }
  char *e = memmem(in, *inlen, "\r\n\r\n", 4);
  if (!e) return *inlen >= incap ? REQSTREAM_BAD : WAIT;
  size_t hn = (size_t)(e - in) + 4;
  if (room < hn + REQSTREAM_SLACK) return WAIT;
  sbuf o = {0};
  int rc = rewrite_head(rs, in, hn, &o);
  if (rc == 0) {
    memcpy(out + *outlen, o.data, o.len);
    *outlen += o.len;
    take(in, inlen, hn);
  }
  sbuf_free(&o);
  return rc;
}

int reqstream_feed(reqstream *rs, char *in, size_t *inlen, size_t incap, char *out, size_t *outlen, size_t cap) {
  if (rs->state == RS_DONE) return REQSTREAM_END;
  while (*inlen > 0) {
    int rc = step(rs, in, inlen, incap, out, outlen, cap);
    if (rc == WAIT) break;
    if (rc == REQSTREAM_END || rc == REQSTREAM_BAD) {
      rs->state = RS_DONE;
      return rc;
    }
  }
  return REQSTREAM_MORE;
}
