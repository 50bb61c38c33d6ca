/* fuzz_egress.c — libFuzzer target for what code inside a sandbox sends its
 * egress proxy (emulator/src/net/egress.c, reqstream.c): the first request head
 * ("CONNECT host:port" or an absolute http:// request), then the stream of
 * requests reqstream frames and rewrites with network.rules headers.
 * egress.c is included whole so its static parse_head can be called as
 * read_head calls it, without exposing anything from that file. The head
 * is allocated to exactly the bytes received, so reading past them fails. */
#include "../emulator/src/net/egress.c"

/* The host parse_head kept is the request's whole host, not a prefix of
 * it: right where the authority starts, and an authority delimiter after. */
static int host_is_whole(const uint8_t *data, size_t size, const econn *c) {
  const uint8_t *at = memchr(data, ' ', size), *lim = data + size;
  size_t hl = strlen(c->host);
  if (!at) return 0;
  at += c->is_connect ? 1 : 1 + strlen("http://");
  if (at < lim && *at == '[') at++;
  return at + hl < lim && memcmp(at, c->host, hl) == 0 && at[hl] && strchr(":] /?#", at[hl]);
}

static void fixed_rules(void *ctx, const char *host, netrules_set *out) {
  static json_t *rules;
  (void)ctx;
  if (!rules) rules = json_loads("{\"x.com\": [{\"transform\": {\"headers\": {\"Authorization\": \"Bearer R\"}}}],"
                                 " \"a.com\": [{\"transform\": {\"headers\": {\"X-A\": \"1\", \"Host\": \"h\"}}}]}", 0, NULL);
  netrules_lookup(rules, host, out);
}

#define OUT_CAP (1 << 20)

/* The whole stream fed in two pieces (split at `split`): rc, out[0..*ol). */
static int stream(const uint8_t *d, size_t n, size_t split, int tunnel, char *out, size_t *ol) {
  static char in[HEAD_MAX];
  reqstream rs;
  reqstream_init(&rs, "a.com", 80, tunnel, fixed_rules, NULL);
  size_t inl = split;
  memcpy(in, d, split);
  *ol = 0;
  int rc = reqstream_feed(&rs, in, &inl, HEAD_MAX, out, ol, OUT_CAP);
  if (rc != REQSTREAM_MORE) return rc;
  memcpy(in + inl, d + split, n - split);
  inl += n - split;
  rc = reqstream_feed(&rs, in, &inl, HEAD_MAX, out, ol, OUT_CAP);
  if (*ol > OUT_CAP) abort();
  return rc;
}

/* Fed whole or in two pieces, the requests come out the same. */
static void check_stream(const uint8_t *data, size_t size) {
  static char a[OUT_CAP], b[OUT_CAP];
  size_t al, bl;
  int tunnel = data[0] & 1;
  int ra = stream(data, size, size, tunnel, a, &al);
  int rb = stream(data, size, data[size - 1] % size, tunnel, b, &bl);
  if (ra != rb || al != bl || memcmp(a, b, al) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0 || size > HEAD_MAX) return 0;
  check_stream(data, size);
  char *e = memmem(data, size, "\r\n\r\n", 4);
  if (!e) return 0; /* read_head waits for more */
  econn c;
  memset(&c, 0, sizeof c);
  c.head = xmalloc(size);
  memcpy(c.head, data, size);
  c.hlen = size;
  size_t end = (size_t)(e - (const char *)data) + 2;
  if (parse_head(&c, end) == 0) {
    if (c.port < 1 || c.port > 65535 || !c.host[0]) abort();
    if (!host_is_whole(data, size, &c)) abort();
    /* a CONNECT head is used up, a plain request kept whole for reqstream */
    if (c.hlen != (c.is_connect ? size - end - 2 : size)) abort();
  }
  free(c.head);
  free(c.c2u.data);
  free(c.u2c.data);
  return 0;
}
