/* fuzz_codec.c — libFuzzer target for codec/codec.c: the Connect envelope
 * decoder (fed in arbitrary splits), base64, RFC 3339 times (both ways) and
 * UTF-8 validation. The first byte picks the codec; the rest is its input.
 * Each branch also checks a property, so a wrong answer is a crash too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

#define MAX_PAYLOAD 4096 /* small, so the too-large path is reached */

/* Feeds data in pieces whose sizes come from the data itself. */
static void envelopes(const uint8_t *d, size_t n) {
  e2b_envelope_decoder dec;
  e2b_envelope_decoder_init(&dec, MAX_PAYLOAD);
  size_t off = 0, step = n ? (size_t)d[0] % 7 + 1 : 1;
  while (off < n) {
    size_t piece = n - off < step ? n - off : step, used = 0;
    e2b_envelope_status st = e2b_envelope_feed(&dec, d + off, piece, &used);
    if (used > piece) abort();
    off += used;
    if (st == E2B_ENV_TOO_LARGE || st == E2B_ENV_NOMEM) break;
    if (st == E2B_ENV_FRAME) {
      if (dec.payload_len > MAX_PAYLOAD || (dec.payload_len && !dec.payload)) abort();
      e2b_envelope_decoder_reset(&dec);
      if (!e2b_envelope_idle(&dec)) abort();
    } else if (used != piece) {
      abort(); /* NEED_MORE consumes everything given */
    }
    step = step % 13 + 1;
  }
  e2b_envelope_decoder_free(&dec);
}

static void base64(const uint8_t *d, size_t n) {
  uint8_t *out = NULL;
  size_t len = 0;
  if (e2b_b64_decode_alloc((const char *)d, n, &out, &len) == 0) {
    if (!out || len > n * 3 / 4 + 3) abort();
    char *text = e2b_b64_encode_alloc(out, len);
    uint8_t *again = NULL;
    size_t alen = 0;
    if (!text || e2b_b64_decode_alloc(text, strlen(text), &again, &alen) != 0) abort();
    if (alen != len || memcmp(again, out, len) != 0) abort();
    free(again);
    free(text);
    free(out);
  }
  /* any bytes survive an encode/decode round trip */
  char *text = e2b_b64_encode_alloc(d, n);
  if (!text) return;
  if (strlen(text) + 1 != e2b_b64_encoded_len(n)) abort();
  if (e2b_b64_decode_alloc(text, strlen(text), &out, &len) != 0 || len != n || memcmp(out, d, n) != 0) abort();
  free(out);
  free(text);
}

static void times(const uint8_t *d, size_t n) {
  char *s = malloc(n + 1);
  if (!s) return;
  memcpy(s, d, n);
  s[n] = '\0';
  int64_t ms = 0, back = 0;
  char text[E2B_TIME_SIZE];
  if (e2b_time_parse(s, &ms) == 0 && e2b_time_format(ms, text) == 0) {
    if (e2b_time_parse(text, &back) != 0 || back != ms) abort();
  }
  free(s);
}

/* Any int64 of milliseconds: formatted, or refused with an empty string. */
static void format_ms(const uint8_t *d, size_t n) {
  int64_t ms = 0, back = 0;
  char text[E2B_TIME_SIZE];
  memcpy(&ms, d, n < sizeof ms ? n : sizeof ms);
  if (e2b_time_format(ms, text) != 0) {
    if (text[0]) abort();
    return;
  }
  if (e2b_time_parse(text, &back) != 0 || back != ms) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const uint8_t *d = data + 1;
  size_t n = size - 1;
  switch (data[0] % 5) {
  case 0: envelopes(d, n); break;
  case 1: base64(d, n); break;
  case 2: times(d, n); break;
  case 3: (void)e2b_utf8_valid((const char *)d, n); break;
  default: format_ms(d, n); break;
  }
  return 0;
}
