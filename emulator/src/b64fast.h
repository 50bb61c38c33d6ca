/* b64fast.h — base64 encoding for the output hot path.
 *
 * The shared codec (core/src/codec.c, e2b_b64_encode) is backed by mbedTLS,
 * whose constant-time base64 runs at ~50 MiB/s: that capped a command's
 * stdout at that rate. Output bytes are not secrets, so a table-driven
 * encoder (same alphabet and padding, proto3 JSON's form) is used here; the
 * shared codec still decodes everything e2b-local receives. */
#ifndef EMU_B64FAST_H
#define EMU_B64FAST_H

#include <stddef.h>

/* Encodes n bytes into out (room for 4 * ((n + 2) / 3) bytes, no NUL);
 * returns the length written. */
size_t b64fast_encode(const unsigned char *in, size_t n, char *out);

#endif
