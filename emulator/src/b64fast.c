/* b64fast.c — table-driven standard base64 with padding (RFC 4648). */
#include "b64fast.h"

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t b64fast_encode(const unsigned char *in, size_t n, char *out) {
  char *o = out;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
    o[0] = ALPHABET[v >> 18];
    o[1] = ALPHABET[(v >> 12) & 63];
    o[2] = ALPHABET[(v >> 6) & 63];
    o[3] = ALPHABET[v & 63];
    o += 4;
  }
  if (i < n) {
    unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0);
    o[0] = ALPHABET[v >> 18];
    o[1] = ALPHABET[(v >> 12) & 63];
    o[2] = i + 1 < n ? ALPHABET[(v >> 6) & 63] : '=';
    o[3] = '=';
    o += 4;
  }
  return (size_t)(o - out);
}
