/* Known-vector tests for codec.c: envelopes (whole, split, partial, oversized),
 * base64 (RFC 4648 vectors, URL-safe, unpadded, garbage), v1 signatures
 * (vectors of envd's v1 scheme), RFC 3339 times, Connect codes and random ids. */
#include "codec.h"
#include "testing.h"

#include <ctype.h>
#include <stdlib.h>

static void envelope_header_is_big_endian(void) {
  uint8_t h[5];
  e2b_envelope_header(0, 22, h);
  CHECK_MEM(h, 5, "\x00\x00\x00\x00\x16", 5);
  e2b_envelope_header(E2B_ENV_FLAG_END_STREAM, 0x01020304u, h);
  CHECK_MEM(h, 5, "\x02\x01\x02\x03\x04", 5);
}

/* Two frames concatenated, fed one byte at a time, must come out whole. */
static void envelope_decoder_handles_any_split(void) {
  const char *a = "{\"process\":{\"pid\":42}}", *b = "{}";
  uint8_t wire[64];
  size_t n = 0;
  e2b_envelope_header(0, (uint32_t)strlen(a), wire);
  memcpy(wire + 5, a, strlen(a));
  n = 5 + strlen(a);
  e2b_envelope_header(E2B_ENV_FLAG_END_STREAM, 2, wire + n);
  memcpy(wire + n + 5, b, 2);
  n += 7;

  for (size_t step = 1; step <= n; step++) {
    e2b_envelope_decoder d;
    e2b_envelope_decoder_init(&d, 1024);
    int frames = 0;
    size_t pos = 0;
    while (pos < n) {
      size_t chunk = n - pos < step ? n - pos : step, off = 0;
      while (off < chunk) {
        size_t used = 0;
        e2b_envelope_status st = e2b_envelope_feed(&d, wire + pos + off, chunk - off, &used);
        off += used;
        if (st == E2B_ENV_FRAME) {
          if (frames == 0) {
            CHECK(d.flags == 0);
            CHECK_MEM(d.payload, d.payload_len, a, strlen(a));
          } else {
            CHECK(d.flags == E2B_ENV_FLAG_END_STREAM);
            CHECK_MEM(d.payload, d.payload_len, b, 2);
          }
          frames++;
          e2b_envelope_decoder_reset(&d);
        } else {
          CHECK(st == E2B_ENV_NEED_MORE);
          CHECK(used == chunk - (off - used));
        }
      }
      pos += chunk;
    }
    CHECK(frames == 2);
    CHECK(e2b_envelope_idle(&d));
    e2b_envelope_decoder_free(&d);
  }
}

static void envelope_decoder_reports_partial_and_empty(void) {
  e2b_envelope_decoder d;
  e2b_envelope_decoder_init(&d, 1024);
  size_t used;
  CHECK(e2b_envelope_feed(&d, (const uint8_t *)"\x00\x00\x00", 3, &used) == E2B_ENV_NEED_MORE);
  CHECK(used == 3);
  CHECK(!e2b_envelope_idle(&d)); /* a stream ending here is truncated */
  CHECK(e2b_envelope_feed(&d, (const uint8_t *)"\x00\x00", 2, &used) == E2B_ENV_FRAME);
  CHECK(d.payload_len == 0);
  e2b_envelope_decoder_free(&d);
}

static void envelope_decoder_refuses_oversized_frames(void) {
  e2b_envelope_decoder d;
  e2b_envelope_decoder_init(&d, 16);
  size_t used;
  CHECK(e2b_envelope_feed(&d, (const uint8_t *)"\x00\x00\x00\x00\x11", 5, &used) ==
        E2B_ENV_TOO_LARGE);
  e2b_envelope_decoder_free(&d);
}

static void base64_rfc4648_vectors(void) {
  static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
  static const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
  for (int i = 0; i < 7; i++) {
    char out[16];
    uint8_t back[16];
    size_t back_len = 99;
    CHECK(e2b_b64_encode(plain[i], strlen(plain[i]), out) == strlen(coded[i]));
    CHECK_STR(out, coded[i]);
    CHECK(e2b_b64_decode(coded[i], strlen(coded[i]), back, &back_len) == 0);
    CHECK_MEM(back, back_len, plain[i], strlen(plain[i]));
  }
}

static void base64_accepts_url_safe_and_unpadded(void) {
  const uint8_t raw[] = {0xfb, 0xff, 0xfe, 0x00, 0x3e};
  uint8_t out[16];
  size_t n;
  CHECK(e2b_b64_decode("+//+AD4=", 8, out, &n) == 0);
  CHECK_MEM(out, n, raw, sizeof raw);
  CHECK(e2b_b64_decode("-__-AD4", 7, out, &n) == 0);
  CHECK_MEM(out, n, raw, sizeof raw);
  CHECK(e2b_b64_decode("Zg", 2, out, &n) == 0);
  CHECK_MEM(out, n, "f", 1);
}

static void base64_rejects_garbage(void) {
  uint8_t out[16];
  size_t n;
  CHECK(e2b_b64_decode("Zm9v!", 5, out, &n) == -1);
  CHECK(e2b_b64_decode("Z", 1, out, &n) == -1);
  CHECK(e2b_b64_decode("Zg=", 3, out, &n) == -1);
  CHECK(e2b_b64_decode("Zg==Zg==", 8, out, &n) == -1); /* padding inside */
  CHECK(e2b_b64_decode("Z===", 4, out, &n) == -1);     /* three pad characters */
  CHECK(e2b_b64_decode("Zm9=", 4, out, &n) == 0);      /* one pad after three */
  CHECK_MEM(out, n, "fo", 2);
  CHECK(e2b_b64_decode("Zm 9", 4, out, &n) == -1);
  CHECK(e2b_b64_decode("Zm\x80" "9", 4, out, &n) == -1);
  CHECK(e2b_b64_decode("", 0, out, &n) == 0 && n == 0);
}

static void base64_encodes_every_tail_length(void) {
  /* RFC 4648 section 10 vectors */
  const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
  const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
  char out[16];
  for (int i = 0; i < 7; i++) {
    CHECK(e2b_b64_encode(plain[i], strlen(plain[i]), out) == strlen(coded[i]));
    CHECK(strcmp(out, coded[i]) == 0);
  }
}

static void base64_round_trips_every_byte_value(void) {
  uint8_t all[256], *back = NULL;
  size_t back_len = 0;
  for (int i = 0; i < 256; i++) all[i] = (uint8_t)i;
  char *text = e2b_b64_encode_alloc(all, sizeof all);
  CHECK(text != NULL);
  CHECK(e2b_b64_decode_alloc(text, strlen(text), &back, &back_len) == 0);
  CHECK_MEM(back, back_len, all, sizeof all);
  free(text);
  free(back);
}

/* Every length through the decoder's two-quanta steps and its tail, each
 * into a buffer of exactly the decoded size (ASan sees any byte past it),
 * and a bad character at any position refused. */
static void base64_decodes_every_length_in_place(void) {
  uint8_t raw[96];
  for (size_t i = 0; i < sizeof raw; i++) raw[i] = (uint8_t)(i * 37 + 11);
  for (size_t len = 0; len <= sizeof raw; len++) {
    char *text = e2b_b64_encode_alloc(raw, len);
    size_t tlen = strlen(text), n = 0;
    uint8_t *back = malloc(len ? len : 1);
    CHECK(e2b_b64_decode(text, tlen, back, &n) == 0);
    CHECK_MEM(back, n, raw, len);
    for (size_t at = 0; at < tlen && text[at] != '='; at++) {
      char keep = text[at];
      text[at] = '*';
      CHECK(e2b_b64_decode(text, tlen, back, &n) == -1);
      text[at] = keep;
    }
    free(back);
    free(text);
  }
}

static void signature_matches_wire_vectors(void) {
  char sig[E2B_SIGNATURE_SIZE];
  CHECK(e2b_sign_file_url("/tmp/a.txt", "read", "", "access-token", 0, sig) == 0);
  CHECK_STR(sig, "v1_4UabZ/mPmSh2WEPomyAzV9y4hyJsbCofwnQfBG9X+y4");
  CHECK(e2b_sign_file_url("/tmp/a.txt", "write", "user", "access-token", 1700000000, sig) == 0);
  CHECK_STR(sig, "v1_Q4Ntpy5Rj+gFrhVXOBXIF5QUvfiXsVYSiDWsE2LP9dU");
}

static void secure_streq_compares_whole_strings(void) {
  CHECK(e2b_secure_streq("abc", "abc"));
  CHECK(!e2b_secure_streq("abc", "abd"));
  CHECK(!e2b_secure_streq("abc", "abcd"));
  CHECK(!e2b_secure_streq("", "a"));
  CHECK(e2b_secure_streq("", ""));
}

static void times_format_and_parse(void) {
  char out[E2B_TIME_SIZE];
  int64_t ms = 0;
  CHECK(e2b_time_format(1700000000123LL, out) == 0);
  CHECK_STR(out, "2023-11-14T22:13:20.123Z");
  CHECK(e2b_time_parse("2023-11-14T22:13:20.123Z", &ms) == 0 && ms == 1700000000123LL);
  CHECK(e2b_time_parse("2024-05-01T12:00:00.123456789Z", &ms) == 0 && ms == 1714564800123LL);
  CHECK(e2b_time_parse("2024-05-01T14:00:00+02:00", &ms) == 0 && ms == 1714564800000LL);
  CHECK(e2b_time_parse("2024-05-01T12:00:00", &ms) == -1);
  CHECK(e2b_time_parse("yesterday", &ms) == -1);
}

/* Found by fuzz/fuzz_pb.c: a Timestamp of any int64 seconds reached the
 * formatter, which overflowed (UB) near INT64_MIN, printed years RFC 3339
 * cannot hold (parse refused its own output), and left `out` unwritten on
 * failure for callers that ignore the result. */
static void time_format_refuses_years_rfc3339_cannot_hold(void) {
  char out[E2B_TIME_SIZE];
  int64_t ms = 0;
  memset(out, 'x', sizeof out);
  CHECK(e2b_time_format(INT64_MIN, out) == -1);
  CHECK_STR(out, "");
  CHECK(e2b_time_format(INT64_MAX, out) == -1);
  CHECK(e2b_time_format(1099511627776000000LL, out) == -1); /* year 36814 */
  CHECK(e2b_time_format(-62167219200001LL, out) == -1);     /* just before year 0 */
  CHECK(e2b_time_format(253402300800000LL, out) == -1);     /* year 10000 */
  CHECK(e2b_time_format(-62167219200000LL, out) == 0);
  CHECK_STR(out, "0000-01-01T00:00:00.000Z");
  CHECK(e2b_time_parse(out, &ms) == 0 && ms == -62167219200000LL);
  CHECK(e2b_time_format(253402300799999LL, out) == 0);
  CHECK_STR(out, "9999-12-31T23:59:59.999Z");
  CHECK(e2b_time_parse(out, &ms) == 0 && ms == 253402300799999LL);
}

static void connect_codes_map_both_ways(void) {
  CHECK(e2b_connect_code_http_status("not_found") == 404);
  CHECK(e2b_connect_code_http_status("unauthenticated") == 401);
  CHECK(e2b_connect_code_http_status("deadline_exceeded") == 504);
  CHECK(e2b_connect_code_http_status("no_such_code") == 500);
  CHECK_STR(e2b_connect_code_from_http_status(404), "unimplemented");
  CHECK_STR(e2b_connect_code_from_http_status(502), "unavailable");
  CHECK_STR(e2b_connect_code_from_http_status(418), "unknown");
}

static void uuid4_has_version_and_variant(void) {
  char a[E2B_UUID_SIZE], b[E2B_UUID_SIZE];
  CHECK(e2b_uuid4(a) == 0 && e2b_uuid4(b) == 0);
  CHECK(strlen(a) == 36 && a[8] == '-' && a[13] == '-' && a[14] == '4' && a[18] == '-');
  CHECK(strchr("89ab", a[19]) != NULL);
  CHECK(strcmp(a, b) != 0);
}

static void random_alnum_uses_its_alphabet(void) {
  char s[65];
  CHECK(e2b_random_alnum(s, 64) == 0);
  CHECK(strlen(s) == 64);
  for (int i = 0; i < 64; i++) CHECK(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]));
  CHECK(e2b_random_hex(s, 40) == 0 && strlen(s) == 40 && strspn(s, "0123456789abcdef") == 40);
}

static void utf8_validation_follows_rfc3629(void) {
  CHECK(e2b_utf8_valid("", 0));
  CHECK(e2b_utf8_valid("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15));
  CHECK(e2b_utf8_valid("a\0b", 3)); /* NUL is a valid code point */
  CHECK(!e2b_utf8_valid("\xff", 1));
  CHECK(!e2b_utf8_valid("\xc0\xaf", 2));         /* overlong '/' */
  CHECK(!e2b_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
  CHECK(!e2b_utf8_valid("\xe2\x82", 2));         /* truncated */
  CHECK(!e2b_utf8_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
}

/* E2B's ShortID: [a-z0-9]+, optionally "-<client id>" (one dash only). */
static void sandbox_ids_take_e2bs_shapes(void) {
  CHECK(e2b_sandbox_id_len("i1x2y3") == 6);
  CHECK(e2b_sandbox_id_len("i1x2y3-client") == 6);
  CHECK(e2b_sandbox_id_len("abc-") == 3);
  CHECK(e2b_sandbox_id_len("") == 0);
  CHECK(e2b_sandbox_id_len(NULL) == 0);
  CHECK(e2b_sandbox_id_len("-abc") == 0);
  CHECK(e2b_sandbox_id_len("a-b-c") == 0);
  CHECK(e2b_sandbox_id_len("Abc") == 0);
  CHECK(e2b_sandbox_id_len("a_b") == 0);
  CHECK(e2b_sandbox_id_len("3f2504e0-4f89-11d3-9a0c-0305e82c3301") == 0);
}

static void signal_status_uses_envds_words(void) {
  char s[64];
  e2b_signal_status(15, s, sizeof s);
  CHECK(strcmp(s, "signal: terminated") == 0);
  e2b_signal_status(9, s, sizeof s);
  CHECK(strcmp(s, "signal: killed") == 0);
  e2b_signal_status(24, s, sizeof s); /* a name that starts upper case stays so */
  CHECK(strcmp(s, "signal: CPU time limit exceeded") == 0);
  e2b_signal_status(29, s, sizeof s);
  CHECK(strcmp(s, "signal: I/O possible") == 0);
  e2b_signal_status(40, s, sizeof s); /* real-time signals have no name in Go */
  CHECK(strcmp(s, "signal: signal 40") == 0);
  e2b_signal_status(0, s, sizeof s);
  CHECK(strcmp(s, "signal: signal 0") == 0);
}

int main(void) {
  RUN(envelope_header_is_big_endian);
  RUN(envelope_decoder_handles_any_split);
  RUN(envelope_decoder_reports_partial_and_empty);
  RUN(envelope_decoder_refuses_oversized_frames);
  RUN(base64_rfc4648_vectors);
  RUN(base64_accepts_url_safe_and_unpadded);
  RUN(base64_rejects_garbage);
  RUN(base64_encodes_every_tail_length);
  RUN(base64_round_trips_every_byte_value);
  RUN(base64_decodes_every_length_in_place);
  RUN(signature_matches_wire_vectors);
  RUN(secure_streq_compares_whole_strings);
  RUN(times_format_and_parse);
  RUN(time_format_refuses_years_rfc3339_cannot_hold);
  RUN(connect_codes_map_both_ways);
  RUN(uuid4_has_version_and_variant);
  RUN(random_alnum_uses_its_alphabet);
  RUN(utf8_validation_follows_rfc3629);
  RUN(sandbox_ids_take_e2bs_shapes);
  RUN(signal_status_uses_envds_words);
  return TESTING_DONE();
}
