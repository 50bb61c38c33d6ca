/* fuzz_egress.c — libFuzzer target for the egress proxy's request-head
 * parser (emulator/src/egress.c), which reads what code inside a sandbox
 * sends to its proxy: "CONNECT host:port" or an absolute http:// request.
 * egress.c is included whole so its static parse_head can be called as
 * read_head calls it, without exposing anything from that file. The head
 * is allocated to exactly the bytes received, so reading past them fails. */
#include "../emulator/src/egress.c"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0 || size > HEAD_MAX) return 0;
  char *e = memmem(data, size, "\r\n\r\n", 4);
  if (!e) return 0; /* read_head waits for more */
  econn c;
  memset(&c, 0, sizeof c);
  c.head = xmalloc(size);
  memcpy(c.head, data, size);
  c.hlen = size;
  size_t end = (size_t)(e - (const char *)data) + 2;
  if (parse_head(&c, end) == 0) {
    if (c.port < 1 || c.port > 65535 || !c.host[0] || c.c2u.len > BUF_SIZE) abort();
    if (!host_is_whole(data, size, &c)) abort();
    if (!c.is_connect && (c.c2u.len < 4 || memmem(c.c2u.data, c.c2u.len, "\r\n\r\n", 4) == NULL)) abort();
  }
  free(c.head);
  free(c.c2u.data);
  free(c.u2c.data);
  return 0;
}
