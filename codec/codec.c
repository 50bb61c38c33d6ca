/* codec.c — the pure codecs declared in codec.h. */
#include "codec.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/sha256.h>

/* ---- Connect envelopes ---------------------------------------------------- */

void e2b_envelope_header(uint8_t flags, uint32_t len, uint8_t out[E2B_ENV_HEADER_SIZE]) {
  out[0] = flags;
  out[1] = (uint8_t)(len >> 24);
  out[2] = (uint8_t)(len >> 16);
  out[3] = (uint8_t)(len >> 8);
  out[4] = (uint8_t)len;
}

void e2b_envelope_decoder_init(e2b_envelope_decoder *d, size_t max_payload) {
  memset(d, 0, sizeof *d);
  d->max_payload = max_payload;
}

void e2b_envelope_decoder_reset(e2b_envelope_decoder *d) {
  free(d->payload);
  size_t max = d->max_payload;
  e2b_envelope_decoder_init(d, max);
}

void e2b_envelope_decoder_free(e2b_envelope_decoder *d) {
  free(d->payload);
  d->payload = NULL;
}

int e2b_envelope_idle(const e2b_envelope_decoder *d) { return d->header_have == 0; }

e2b_envelope_status e2b_envelope_feed(e2b_envelope_decoder *d, const uint8_t *data, size_t len,
                                      size_t *used) {
  size_t pos = 0;
  *used = 0;
  if (d->header_have < E2B_ENV_HEADER_SIZE) {
    size_t take = E2B_ENV_HEADER_SIZE - d->header_have;
    if (take > len) take = len;
    if (take) memcpy(d->header + d->header_have, data, take);
    d->header_have += take;
    pos += take;
    if (d->header_have < E2B_ENV_HEADER_SIZE) {
      *used = pos;
      return E2B_ENV_NEED_MORE;
    }
    d->flags = d->header[0];
    d->payload_len = ((uint32_t)d->header[1] << 24) | ((uint32_t)d->header[2] << 16) |
                     ((uint32_t)d->header[3] << 8) | (uint32_t)d->header[4];
    if (d->payload_len > d->max_payload) {
      *used = pos;
      return E2B_ENV_TOO_LARGE;
    }
    /* +1 keeps a NUL after the payload so JSON parsers may treat it as a string. */
    d->payload = malloc((size_t)d->payload_len + 1);
    if (!d->payload) {
      *used = pos;
      return E2B_ENV_NOMEM;
    }
    d->payload[d->payload_len] = 0;
    d->payload_have = 0;
  }
  size_t want = d->payload_len - d->payload_have;
  size_t take = len - pos < want ? len - pos : want;
  if (take) memcpy(d->payload + d->payload_have, data + pos, take);
  d->payload_have += take;
  pos += take;
  *used = pos;
  return d->payload_have == d->payload_len ? E2B_ENV_FRAME : E2B_ENV_NEED_MORE;
}

/* ---- base64 ----------------------------------------------------------------- */

/* Table-driven rather than mbedTLS's base64: mbedTLS decodes in constant
 * time (it is meant for keys), which made base64 ~45% of the client's CPU
 * when streaming a command's stdout (measured with perf: 23 MB/s). These
 * bytes are command output, not secrets. Same alphabet, padding and
 * strictness; decoding also takes proto3 JSON's URL-safe and unpadded forms. */

static const char B64_ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* value of each character in either alphabet, -1 for anything else */
static const int8_t B64_VALUE[256] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 62, -1, 62, -1, 63,
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, -1, -1, -1, -1, -1, -1,
    -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, -1, -1, -1, -1, 63,
    -1, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};

/* The same values already shifted to their place in a quantum's 24 bits,
 * one table per position, with B64_BAD set for anything not base64: a
 * quantum is four loads, three ORs and one test. */
#define B64_BAD 0x80000000u
#define B64_V(c)                                                                   \
  ((c) >= 'A' && (c) <= 'Z'   ? (c) - 'A'                                          \
   : (c) >= 'a' && (c) <= 'z' ? (c) - 'a' + 26                                     \
   : (c) >= '0' && (c) <= '9' ? (c) - '0' + 52                                     \
   : (c) == '+' || (c) == '-' ? 62                                                 \
   : (c) == '/' || (c) == '_' ? 63                                                 \
                              : -1)
#define B64_AT(c, shift) (B64_V(c) < 0 ? B64_BAD : (uint32_t)B64_V(c) << (shift))
#define B64_R4(s, c) B64_AT(c, s), B64_AT(c + 1, s), B64_AT(c + 2, s), B64_AT(c + 3, s)
#define B64_R16(s, c) B64_R4(s, c), B64_R4(s, c + 4), B64_R4(s, c + 8), B64_R4(s, c + 12)
#define B64_R64(s, c) B64_R16(s, c), B64_R16(s, c + 16), B64_R16(s, c + 32), B64_R16(s, c + 48)
#define B64_TABLE(s) {B64_R64(s, 0), B64_R64(s, 64), B64_R64(s, 128), B64_R64(s, 192)}
static const uint32_t B64_D0[256] = B64_TABLE(18), B64_D1[256] = B64_TABLE(12),
                      B64_D2[256] = B64_TABLE(6), B64_D3[256] = B64_TABLE(0);

size_t e2b_b64_encoded_len(size_t n) { return 4 * ((n + 2) / 3) + 1; }

size_t e2b_b64_encode(const void *data, size_t n, char *out) {
  const uint8_t *in = data;
  char *o = out;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
    *o++ = B64_ALPHABET[v >> 18];
    *o++ = B64_ALPHABET[(v >> 12) & 63];
    *o++ = B64_ALPHABET[(v >> 6) & 63];
    *o++ = B64_ALPHABET[v & 63];
  }
  if (i < n) {
    uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
    *o++ = B64_ALPHABET[v >> 18];
    *o++ = B64_ALPHABET[(v >> 12) & 63];
    *o++ = i + 1 < n ? B64_ALPHABET[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
  *o = 0;
  return (size_t)(o - out);
}

char *e2b_b64_encode_alloc(const void *data, size_t n) {
  char *out = malloc(e2b_b64_encoded_len(n));
  if (out) e2b_b64_encode(data, n, out);
  return out;
}

int e2b_b64_decode(const char *text, size_t len, uint8_t *out, size_t *out_len) {
  const unsigned char *t = (const unsigned char *)text;
  size_t pad = 0;
  while (pad < 2 && len > pad && t[len - 1 - pad] == '=') pad++;
  /* padding only completes the last quantum of a whole number of them */
  if (pad && len % 4 != 0) return -1;
  size_t n = len - pad, rem = n % 4;
  if (rem == 1 || (pad && rem + pad != 4)) return -1;
  uint8_t *o = out;
  size_t i = 0;
  /* Two quanta a step while a whole further quantum follows: six bytes
   * leave in one 8-byte store whose last two bytes the next step (or the
   * quantum after the loop) overwrites, so nothing is written past the
   * output's end. */
  for (; i + 12 <= n; i += 8) {
    uint32_t v = B64_D0[t[i]] | B64_D1[t[i + 1]] | B64_D2[t[i + 2]] | B64_D3[t[i + 3]];
    uint32_t w = B64_D0[t[i + 4]] | B64_D1[t[i + 5]] | B64_D2[t[i + 6]] | B64_D3[t[i + 7]];
    if ((v | w) & B64_BAD) return -1;
    uint64_t both = (uint64_t)v << 40 | (uint64_t)w << 16;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    both = __builtin_bswap64(both);
#endif
    memcpy(o, &both, 8);
    o += 6;
  }
  for (; i + 4 <= n; i += 4) {
    uint32_t v = B64_D0[t[i]] | B64_D1[t[i + 1]] | B64_D2[t[i + 2]] | B64_D3[t[i + 3]];
    if (v & B64_BAD) return -1;
    *o++ = (uint8_t)(v >> 16);
    *o++ = (uint8_t)(v >> 8);
    *o++ = (uint8_t)v;
  }
  if (rem) {
    int a = B64_VALUE[t[i]], b = B64_VALUE[t[i + 1]], c = rem == 3 ? B64_VALUE[t[i + 2]] : 0;
    if ((a | b | c) < 0) return -1;
    uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6;
    *o++ = (uint8_t)(v >> 16);
    if (rem == 3) *o++ = (uint8_t)(v >> 8);
  }
  *out_len = (size_t)(o - out);
  return 0;
}

int e2b_b64_decode_alloc(const char *text, size_t len, uint8_t **out, size_t *out_len) {
  uint8_t *buf = malloc(len / 4 * 3 + 4);
  if (!buf) return -1;
  if (e2b_b64_decode(text, len, buf, out_len) != 0) {
    free(buf);
    return -1;
  }
  *out = buf;
  return 0;
}

/* ---- signed file URLs ---------------------------------------------------------- */

int e2b_sign_file_url(const char *path, const char *operation, const char *username,
                      const char *token, int64_t expiration, char out[E2B_SIGNATURE_SIZE]) {
  mbedtls_sha256_context sha;
  unsigned char digest[32];
  char exp_text[24];
  const char *parts[5] = {path ? path : "", operation ? operation : "", username ? username : "",
                          token ? token : "", NULL};
  int nparts = 4;
  if (expiration > 0) {
    snprintf(exp_text, sizeof exp_text, "%lld", (long long)expiration);
    parts[nparts++] = exp_text;
  }
  mbedtls_sha256_init(&sha);
  if (mbedtls_sha256_starts_ret(&sha, 0) != 0) goto fail;
  for (int i = 0; i < nparts; i++) {
    if (i > 0 && mbedtls_sha256_update_ret(&sha, (const unsigned char *)":", 1) != 0) goto fail;
    if (mbedtls_sha256_update_ret(&sha, (const unsigned char *)parts[i], strlen(parts[i])) != 0)
      goto fail;
  }
  if (mbedtls_sha256_finish_ret(&sha, digest) != 0) goto fail;
  mbedtls_sha256_free(&sha);

  memcpy(out, "v1_", 3);
  size_t n = e2b_b64_encode(digest, sizeof digest, out + 3);
  while (n > 0 && out[3 + n - 1] == '=') out[3 + --n] = 0; /* Go RawStdEncoding */
  return 0;
fail:
  mbedtls_sha256_free(&sha);
  out[0] = 0;
  return -1;
}

int e2b_secure_streq(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  unsigned char diff = (unsigned char)(la != lb);
  for (size_t i = 0; i < la; i++) diff |= (unsigned char)(a[i] ^ b[lb ? i % lb : 0]);
  return diff == 0;
}

/* ---- random identifiers ------------------------------------------------------------ */

/* One generator per process, seeded once from the OS entropy; the mutex makes
 * it safe for e2b-local's many connection threads. */
static struct {
  pthread_once_t once;
  pthread_mutex_t lock;
  int ready;
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
} rng = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void rng_free(void) {
  mbedtls_ctr_drbg_free(&rng.drbg);
  mbedtls_entropy_free(&rng.entropy);
}

static void rng_seed(void) {
  static const char personalisation[] = "lua-e2b";
  mbedtls_entropy_init(&rng.entropy);
  mbedtls_ctr_drbg_init(&rng.drbg);
  if (mbedtls_ctr_drbg_seed(&rng.drbg, mbedtls_entropy_func, &rng.entropy,
                            (const unsigned char *)personalisation, sizeof personalisation - 1) == 0) {
    rng.ready = 1;
  }
  atexit(rng_free);
}

int e2b_random_bytes(void *out, size_t n) {
  pthread_once(&rng.once, rng_seed);
  if (!rng.ready) return -1;
  pthread_mutex_lock(&rng.lock);
  int rc = 0;
  unsigned char *p = out;
  while (n > 0 && rc == 0) {
    size_t chunk = n > MBEDTLS_CTR_DRBG_MAX_REQUEST ? MBEDTLS_CTR_DRBG_MAX_REQUEST : n;
    rc = mbedtls_ctr_drbg_random(&rng.drbg, p, chunk);
    p += chunk;
    n -= chunk;
  }
  pthread_mutex_unlock(&rng.lock);
  return rc == 0 ? 0 : -1;
}

int e2b_uuid4(char out[E2B_UUID_SIZE]) {
  unsigned char b[16];
  if (e2b_random_bytes(b, sizeof b) != 0) return -1;
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  snprintf(out, E2B_UUID_SIZE,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
           b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return 0;
}

static int random_from_alphabet(char *out, size_t n, const char *alphabet, unsigned size) {
  /* Rejection sampling keeps every character equally likely. */
  unsigned limit = 256 - (256 % size);
  size_t have = 0;
  unsigned char buf[64];
  while (have < n) {
    if (e2b_random_bytes(buf, sizeof buf) != 0) return -1;
    for (size_t i = 0; i < sizeof buf && have < n; i++)
      if (buf[i] < limit) out[have++] = alphabet[buf[i] % size];
  }
  out[n] = 0;
  return 0;
}

int e2b_random_alnum(char *out, size_t n) {
  return random_from_alphabet(out, n, "0123456789abcdefghijklmnopqrstuvwxyz", 36);
}

int e2b_random_hex(char *out, size_t n) { return random_from_alphabet(out, n, "0123456789abcdef", 16); }

/* ---- times ---------------------------------------------------------------------------- */

/* RFC 3339 holds years 0000-9999, which is all e2b_time_parse reads back. */
#define TIME_MIN_MS (-62167219200000LL) /* 0000-01-01T00:00:00.000Z */
#define TIME_MAX_MS 253402300799999LL   /* 9999-12-31T23:59:59.999Z */

int e2b_time_format(int64_t unix_ms, char out[E2B_TIME_SIZE]) {
  out[0] = '\0'; /* a caller that ignores -1 still holds a string */
  if (unix_ms < TIME_MIN_MS || unix_ms > TIME_MAX_MS) return -1;
  time_t secs = (time_t)(unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000);
  int ms = (int)(unix_ms - (int64_t)secs * 1000);
  struct tm tm;
  if (!gmtime_r(&secs, &tm)) return -1;
  int n = snprintf(out, E2B_TIME_SIZE, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return n > 0 && n < E2B_TIME_SIZE ? 0 : -1;
}

static int parse_digits(const char **p, int count, int *value) {
  int v = 0;
  for (int i = 0; i < count; i++) {
    char c = (*p)[i];
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  *p += count;
  *value = v;
  return 0;
}

static int expect(const char **p, char c) {
  if (**p != c) return -1;
  (*p)++;
  return 0;
}

int e2b_time_parse(const char *text, int64_t *unix_ms) {
  const char *p = text;
  int year, mon, day, hour, min, sec, ms = 0;
  if (!text) return -1;
  if (parse_digits(&p, 4, &year) || expect(&p, '-') || parse_digits(&p, 2, &mon) ||
      expect(&p, '-') || parse_digits(&p, 2, &day))
    return -1;
  if (*p != 'T' && *p != 't' && *p != ' ') return -1;
  p++;
  if (parse_digits(&p, 2, &hour) || expect(&p, ':') || parse_digits(&p, 2, &min) ||
      expect(&p, ':') || parse_digits(&p, 2, &sec))
    return -1;
  if (*p == '.') {
    p++;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
      if (digits < 3) ms = ms * 10 + (*p - '0');
      digits++;
      p++;
    }
    if (digits == 0) return -1;
    for (; digits < 3; digits++) ms *= 10;
  }
  int offset_min = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int sign = *p == '-' ? -1 : 1, oh, om;
    p++;
    if (parse_digits(&p, 2, &oh) || expect(&p, ':') || parse_digits(&p, 2, &om)) return -1;
    offset_min = sign * (oh * 60 + om);
  } else {
    return -1;
  }
  if (*p != 0 || mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
    return -1;
  struct tm tm = {0};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  time_t secs = timegm(&tm);
  *unix_ms = ((int64_t)secs - (int64_t)offset_min * 60) * 1000 + ms;
  return 0;
}

/* ---- UTF-8 -------------------------------------------------------------------------------- */

int e2b_utf8_valid(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s, *end = p + len;
  while (p < end) {
    unsigned c = *p++;
    if (c < 0x80) continue;
    int more;
    unsigned min;
    if ((c & 0xe0) == 0xc0) {
      more = 1, min = 0x80, c &= 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      more = 2, min = 0x800, c &= 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      more = 3, min = 0x10000, c &= 0x07;
    } else {
      return 0;
    }
    if (end - p < more) return 0;
    for (int i = 0; i < more; i++) {
      if ((p[i] & 0xc0) != 0x80) return 0;
      c = (c << 6) | (p[i] & 0x3f);
    }
    p += more;
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
  }
  return 1;
}

/* ---- Connect error codes ------------------------------------------------------------------- */

static const struct {
  const char *code;
  int status;
} connect_codes[] = {
    {"canceled", 499},          {"unknown", 500},           {"invalid_argument", 400},
    {"deadline_exceeded", 504}, {"not_found", 404},         {"already_exists", 409},
    {"permission_denied", 403}, {"resource_exhausted", 429}, {"failed_precondition", 400},
    {"aborted", 409},           {"out_of_range", 400},      {"unimplemented", 501},
    {"internal", 500},          {"unavailable", 503},       {"data_loss", 500},
    {"unauthenticated", 401},
};

int e2b_connect_code_http_status(const char *code) {
  for (size_t i = 0; code && i < sizeof connect_codes / sizeof connect_codes[0]; i++)
    if (strcmp(code, connect_codes[i].code) == 0) return connect_codes[i].status;
  return 500;
}

const char *e2b_connect_code_from_http_status(int status) {
  switch (status) {
  case 400: return "invalid_argument";
  case 401: return "unauthenticated";
  case 403: return "permission_denied";
  case 404: return "unimplemented";
  case 408: return "deadline_exceeded";
  case 409: return "aborted";
  case 429:
  case 502:
  case 503:
  case 504: return "unavailable";
  default: return "unknown";
  }
}

/* Go's names (syscall, Linux), which envd's status strings use as they are. */
static const char *const GO_SIGNAL_NAMES[32] = {
    NULL, "hangup", "interrupt", "quit", "illegal instruction", "trace/breakpoint trap",
    "aborted", "bus error", "floating point exception", "killed", "user defined signal 1",
    "segmentation fault", "user defined signal 2", "broken pipe", "alarm clock", "terminated",
    "stack fault", "child exited", "continued", "stopped (signal)", "stopped",
    "stopped (tty input)", "stopped (tty output)", "urgent I/O condition",
    "CPU time limit exceeded", "file size limit exceeded", "virtual timer expired",
    "profiling timer expired", "window changed", "I/O possible", "power failure",
    "bad system call"};

void e2b_signal_status(int sig, char *out, size_t n) {
  if (sig > 0 && sig < 32) snprintf(out, n, "signal: %s", GO_SIGNAL_NAMES[sig]);
  else snprintf(out, n, "signal: signal %d", sig);
}

/* ---- sandbox ids ---- */

size_t e2b_sandbox_id_len(const char *id) {
  if (!id) return 0;
  size_t n = strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789");
  if (id[n] == '\0') return n;
  /* "<sandbox id>-<client id>": one dash; the client id is not checked */
  if (id[n] != '-' || strchr(id + n + 1, '-')) return 0;
  return n;
}
