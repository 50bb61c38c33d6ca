/*
 * codec.h — pure, I/O-free codecs shared by libe2b and e2b-local.
 *
 * Everything here is deterministic (except the random helpers), allocation is
 * explicit, and each function is covered by known-vector tests in core/tests.
 * The wire formats are E2B's (its OpenAPI spec, envd's protos): Connect envelopes,
 * proto3 JSON base64 for bytes fields, v1 file-URL signatures, RFC 3339 times.
 */
#ifndef E2B_CODEC_H
#define E2B_CODEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Connect envelopes --------------------------------------------------
 * A Connect stream body is a sequence of envelopes: 1 flag byte, a 4-byte
 * big-endian length, then that many payload bytes. */

#define E2B_ENV_FLAG_COMPRESSED 0x01u
#define E2B_ENV_FLAG_END_STREAM 0x02u
#define E2B_ENV_HEADER_SIZE 5u

/* Writes the 5-byte header for a payload of `len` bytes into `out`. */
void e2b_envelope_header(uint8_t flags, uint32_t len, uint8_t out[E2B_ENV_HEADER_SIZE]);

/* Incremental decoder: feed it bytes as they arrive (any split), take whole
 * envelopes out. Payloads larger than max_payload are a protocol error, so a
 * hostile peer cannot make us buffer without bound. */
typedef struct e2b_envelope_decoder {
  uint8_t header[E2B_ENV_HEADER_SIZE];
  size_t header_have;
  uint8_t flags;
  uint32_t payload_len;
  uint8_t *payload; /* owned; payload_len bytes once complete */
  size_t payload_have;
  size_t max_payload;
} e2b_envelope_decoder;

void e2b_envelope_decoder_init(e2b_envelope_decoder *d, size_t max_payload);
void e2b_envelope_decoder_reset(e2b_envelope_decoder *d);
void e2b_envelope_decoder_free(e2b_envelope_decoder *d);

typedef enum {
  E2B_ENV_NEED_MORE = 0, /* consumed everything given; no complete envelope */
  E2B_ENV_FRAME = 1,     /* one envelope complete: read d->flags, d->payload, d->payload_len */
  E2B_ENV_TOO_LARGE = -1,
  E2B_ENV_NOMEM = -2
} e2b_envelope_status;

/* Consumes bytes from data[0..len) into the decoder and sets *used to how many
 * were consumed. Returns E2B_ENV_FRAME as soon as one envelope is complete
 * (the caller handles it, then calls e2b_envelope_decoder_reset and feeds the
 * rest). */
e2b_envelope_status e2b_envelope_feed(e2b_envelope_decoder *d, const uint8_t *data, size_t len,
                                      size_t *used);

/* True when the decoder sits exactly between envelopes (a stream may end here). */
int e2b_envelope_idle(const e2b_envelope_decoder *d);

/* ---- base64 (RFC 4648) ---------------------------------------------------
 * Encoding is standard alphabet with padding (what proto3 JSON emits);
 * decoding also accepts the URL-safe alphabet and missing padding (what
 * proto3 JSON parsers accept). Backed by mbedTLS. */

size_t e2b_b64_encoded_len(size_t n); /* including the terminating NUL */
/* Writes NUL-terminated text into out (capacity e2b_b64_encoded_len(n)). Returns length. */
size_t e2b_b64_encode(const void *data, size_t n, char *out);
/* Returns a malloc'd NUL-terminated string, or NULL on out-of-memory. */
char *e2b_b64_encode_alloc(const void *data, size_t n);
/* Decodes text[0..len) into out (capacity >= len*3/4 + 3). Returns 0 and sets
 * *out_len, or -1 when the text is not base64. */
int e2b_b64_decode(const char *text, size_t len, uint8_t *out, size_t *out_len);
/* Returns a malloc'd buffer (never NULL on success, even for 0 bytes). */
int e2b_b64_decode_alloc(const char *text, size_t len, uint8_t **out, size_t *out_len);

/* ---- signed file URLs (envd v1 signatures) ------------------------------
 * signature = "v1_" + unpadded standard base64(SHA-256(
 *   path ":" operation ":" username ":" token [":" expiration])).
 * expiration <= 0 means "no expiry". out needs E2B_SIGNATURE_SIZE bytes. */

#define E2B_SIGNATURE_SIZE 48 /* "v1_" + 43 chars + NUL, rounded up */
int e2b_sign_file_url(const char *path, const char *operation, const char *username,
                      const char *token, int64_t expiration, char out[E2B_SIGNATURE_SIZE]);

/* Constant-time comparison of two NUL-terminated strings (for signatures and tokens). */
int e2b_secure_streq(const char *a, const char *b);

/* ---- random identifiers (mbedTLS CTR_DRBG seeded from the OS entropy) ----
 * Thread-safe. Return 0 on success, -1 when the generator could not be seeded. */

#define E2B_UUID_SIZE 37 /* 36 chars + NUL */
int e2b_uuid4(char out[E2B_UUID_SIZE]);
int e2b_random_bytes(void *out, size_t n);
/* n random characters from [0-9a-z] followed by a NUL (out needs n+1 bytes). */
int e2b_random_alnum(char *out, size_t n);
/* n random lowercase hex characters followed by a NUL (out needs n+1 bytes). */
int e2b_random_hex(char *out, size_t n);

/* ---- sandbox ids --------------------------------------------------------------
 * E2B's API takes a sandbox id ("i1x2..."), or a composite id "<sandbox id>-<client
 * id>", and answers 400 "Invalid sandbox ID" for anything else; a sandbox id is one
 * or more of [a-z0-9]. Its edge (hosts and the E2b-Sandbox-Id header) takes only
 * the plain form. */

/* The length of the sandbox id that id names ("abc" and "abc-x" -> 3), or 0 when
 * E2B's API would refuse id as a sandbox id. */
size_t e2b_sandbox_id_len(const char *id);

/* ---- times -----------------------------------------------------------------
 * Milliseconds since the Unix epoch <-> RFC 3339 ("2024-05-01T12:00:00.123Z").
 * Parsing accepts fractional seconds of any length and numeric offsets.
 * Formatting refuses (-1, out = "") a time outside the years 0000-9999. */

#define E2B_TIME_SIZE 32
int e2b_time_format(int64_t unix_ms, char out[E2B_TIME_SIZE]);
int e2b_time_parse(const char *text, int64_t *unix_ms);

/* ---- UTF-8 ------------------------------------------------------------------
 * proto3 and JSON strings must be valid UTF-8 (no overlongs, no surrogates);
 * bytes that are not travel base64-encoded in bytes fields instead. */

int e2b_utf8_valid(const char *s, size_t len);

/* ---- Connect error codes ---------------------------------------------------
 * The snake_case code strings of the Connect protocol and the HTTP status each
 * one travels with on unary calls. */

int e2b_connect_code_http_status(const char *code); /* unknown code -> 500 */
/* Code a client derives from a plain HTTP status on a Connect route
 * (connect-es: 400 invalid_argument, 401 unauthenticated, 403 permission_denied,
 * 404 unimplemented, 408 deadline_exceeded, 409 aborted, 429/502/503/504
 * unavailable, else unknown). */
const char *e2b_connect_code_from_http_status(int status);

/* ---- a process's end ---------------------------------------------------------
 * How envd words the end of a process a signal ended (Go's os.ProcessState):
 * "signal: terminated", "signal: CPU time limit exceeded", and "signal:
 * signal 40" for a signal Go has no name for. */
void e2b_signal_status(int sig, char *out, size_t n);

/* ---- tar from a sandbox, made safe for the host's `tar -x` (tarsafe.c) ----
 * A streaming filter: the sandbox's archive in (chunks of any size), an
 * archive out that holds only regular files, directories and links that stay
 * inside the target, each header written anew: modes & 0777 (no setuid,
 * setgid or sticky), owners 0 and no owner names, no pax records but long
 * names. Device nodes, FIFOs, sparse and unknown types, absolute names, ".."
 * components, symlinks leading out, hard links out or to a symlink, and any
 * path through a symlink of the same archive fail the whole stream: nothing
 * more is written, and e2b_tarsafe_error names the entry. Memory is bounded
 * (a 64 KiB pax header, 4095-byte names, 65536 symlinks). */
typedef struct e2b_tarsafe e2b_tarsafe;
/* Receives the filtered archive; non-zero stops the filter (an error). */
typedef int (*e2b_tarsafe_emit)(void *ud, const void *data, size_t len);

e2b_tarsafe *e2b_tarsafe_new(void); /* NULL when out of memory */
void e2b_tarsafe_free(e2b_tarsafe *t);
/* 0, or -1 once the archive is refused (then every later call fails too). */
int e2b_tarsafe_feed(e2b_tarsafe *t, const void *data, size_t len, e2b_tarsafe_emit fn, void *ud);
/* 0 when the archive ended with its end-of-archive marker, else -1. */
int e2b_tarsafe_finish(e2b_tarsafe *t);
/* Why the archive was refused ("refused NAME: why"), or NULL. */
const char *e2b_tarsafe_error(const e2b_tarsafe *t);
/* For an archive unpacked inside a sandbox rather than on the host (a
 * template's COPY): what a tar in the sandbox would make is kept, since
 * there it is only what the sandbox could make itself. A symlink's target
 * stays as written, absolute or leading out, and a directory keeps its mode
 * (the host needs no way in: 0700 is added only for the host's own
 * unpacking). A path through a symlink of the archive, and a hard link to
 * one, are still refused. Call before feeding. */
void e2b_tarsafe_for_sandbox(e2b_tarsafe *t);

#ifdef __cplusplus
}
#endif
#endif
