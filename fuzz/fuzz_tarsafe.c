/* fuzz_tarsafe.c — libFuzzer target for codec/tarsafe.c, the filter a
 * sandbox's tar passes before the host's tar -x. The input is fed in pieces
 * whose sizes come from its first byte. What comes out must be whole blocks,
 * hold only files, directories and links with modes within 0777, and pass
 * the filter again unchanged (it is already what the filter writes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

typedef struct {
  uint8_t *data;
  size_t len, cap;
} bytes;

static int collect(void *ud, const void *p, size_t n) {
  bytes *b = ud;
  if (b->len + n > b->cap) {
    size_t cap = (b->len + n) * 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

static int run(const uint8_t *d, size_t n, size_t step, bytes *out) {
  e2b_tarsafe *t = e2b_tarsafe_new();
  if (!t) return -1;
  int r = 0;
  for (size_t off = 0; off < n && !r; off += step)
    r = e2b_tarsafe_feed(t, d + off, n - off < step ? n - off : step, collect, out);
  if (!r) r = e2b_tarsafe_finish(t);
  if (r && !e2b_tarsafe_error(t)) abort(); /* a refusal always says why */
  e2b_tarsafe_free(t);
  return r;
}

/* Every ustar header written holds an allowed type and mode. */
static void check_headers(const bytes *b) {
  if (b->len % 512) abort();
  for (size_t off = 0; off + 512 <= b->len;) {
    const uint8_t *h = b->data + off;
    if (!h[0]) return; /* the end-of-archive marker */
    if (!strchr("0521x", h[156]) || !h[156]) abort();
    if (strtoul((const char *)h + 100, NULL, 8) & ~0777ul) abort();
    if (h[124] & 0x80) return; /* a base-256 size: too big to be here whole */
    unsigned long long size = strtoull((const char *)h + 124, NULL, 8);
    off += 512 + (size + 511) / 512 * 512;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  bytes out = {0}, again = {0};
  size_t step = (size_t)data[0] * 7 + 1;
  if (run(data + 1, size - 1, step, &out) == 0) {
    check_headers(&out);
    if (run(out.data, out.len, 4096, &again) != 0) abort();
    if (again.len != out.len || memcmp(again.data, out.data, out.len) != 0) abort();
  }
  free(out.data);
  free(again.data);
  return 0;
}
