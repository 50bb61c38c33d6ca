/* What a run keeps of a command's output (output.c): all up to max_output
 * and then a failure naming the stream, the exact tail with the dropped
 * bytes counted (however the chunks fall against the ring), or nothing;
 * by default a stream the caller takes as chunks is not kept. */
#include "internal.h"
#include "testing.h"

#include <stdlib.h>

static const uint8_t *data_of(e2b_output *o, e2b_event_type t, size_t *len) {
  return e2b_output_data(o, t, len);
}

static void all_keeps_every_byte_then_fails_naming_the_stream(void) {
  e2b_output *o = e2b_output_new(10, E2B_KEEP_ALL, 0);
  e2b_error err;
  CHECK(e2b_output_add(o, E2B_EVENT_STDOUT, "hello", 5, &err) == 0);
  CHECK(e2b_output_add(o, E2B_EVENT_STDERR, "0123456789", 10, &err) == 0);
  CHECK(e2b_output_add(o, E2B_EVENT_STDOUT, "world", 5, &err) == 0);
  CHECK(e2b_output_add(o, E2B_EVENT_STDOUT, "!", 1, &err) == 1);
  CHECK(err.code == E2B_ERR_SANDBOX);
  CHECK(strstr(err.message, "stdout exceeded max_output (10 bytes)") != NULL);
  size_t n;
  const uint8_t *p;
  p = data_of(o, E2B_EVENT_STDOUT, &n);
  CHECK_MEM(p, n, "helloworld", 10);
  p = data_of(o, E2B_EVENT_STDERR, &n);
  CHECK_MEM(p, n, "0123456789", 10);
  CHECK(e2b_output_add(o, E2B_EVENT_STDERR, "x", 1, &err) == 1);
  CHECK(strstr(err.message, "stderr exceeded") != NULL);
  CHECK(e2b_output_dropped(o) == 0);
  e2b_output_free(o);
}

/* Every split of the same bytes into chunks leaves the same tail. */
static void tail_keeps_the_last_bytes_whatever_the_chunks(void) {
  char text[1000];
  for (size_t i = 0; i < sizeof text; i++) text[i] = (char)('a' + (i * 7) % 26);
  size_t sizes[] = {1, 3, 7, 16, 17, 40, 99, 1000};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    e2b_output *o = e2b_output_new(64, E2B_KEEP_TAIL, 0);
    e2b_error err;
    for (size_t off = 0; off < sizeof text; off += sizes[si]) {
      size_t n = sizeof text - off < sizes[si] ? sizeof text - off : sizes[si];
      CHECK(e2b_output_add(o, E2B_EVENT_STDOUT, text + off, n, &err) == 0);
    }
    size_t n;
    const uint8_t *p = data_of(o, E2B_EVENT_STDOUT, &n);
    CHECK_MEM(p, n, text + sizeof text - 64, 64);
    CHECK(e2b_output_dropped(o) == sizeof text - 64);
    /* Reading it made it one run; keeping on after that still keeps the tail. */
    CHECK(e2b_output_add(o, E2B_EVENT_STDOUT, "XYZ", 3, &err) == 0);
    p = data_of(o, E2B_EVENT_STDOUT, &n);
    CHECK(n == 64 && memcmp(p + 61, "XYZ", 3) == 0 && memcmp(p, text + sizeof text - 61, 61) == 0);
    e2b_output_free(o);
  }
}

static void tail_under_max_drops_nothing(void) {
  e2b_output *o = e2b_output_new(20, E2B_KEEP_TAIL, 0);
  e2b_error err;
  CHECK(e2b_output_add(o, E2B_EVENT_STDOUT, "\0a\377", 3, &err) == 0);
  size_t n;
  const uint8_t *p;
  p = data_of(o, E2B_EVENT_STDOUT, &n);
  CHECK_MEM(p, n, "\0a\377", 3);
  CHECK(e2b_output_dropped(o) == 0);
  CHECK(e2b_output_keep(o) == E2B_KEEP_TAIL);
  e2b_output_free(o);
}

static void none_and_chunked_streams_keep_nothing(void) {
  e2b_error err;
  e2b_output *o = e2b_output_new(4, E2B_KEEP_NONE, 0);
  CHECK(e2b_output_add(o, E2B_EVENT_STDOUT, "far more than four", 18, &err) == 0);
  size_t n;
  const uint8_t *p;
  data_of(o, E2B_EVENT_STDOUT, &n);
  CHECK(n == 0);
  e2b_output_free(o);
  /* Default: the chunked stream (stdout, and a pty's) is the caller's; stderr is kept. */
  o = e2b_output_new(4, E2B_KEEP_DEFAULT, E2B_STREAM_STDOUT);
  CHECK(e2b_output_add(o, E2B_EVENT_STDOUT, "far more than four", 18, &err) == 0);
  CHECK(e2b_output_add(o, E2B_EVENT_PTY, "far more than four", 18, &err) == 0);
  CHECK(e2b_output_add(o, E2B_EVENT_STDERR, "err", 3, &err) == 0);
  CHECK(data_of(o, E2B_EVENT_STDOUT, &n) && n == 0);
  CHECK(data_of(o, E2B_EVENT_PTY, &n) && n == 0);
  p = data_of(o, E2B_EVENT_STDERR, &n);
  CHECK_MEM(p, n, "err", 3);
  e2b_output_free(o);
  /* Asked to keep: chunks or not, it is kept. */
  o = e2b_output_new(4, E2B_KEEP_ALL, E2B_STREAM_STDOUT);
  CHECK(e2b_output_add(o, E2B_EVENT_STDOUT, "kept", 4, &err) == 0);
  p = data_of(o, E2B_EVENT_STDOUT, &n);
  CHECK_MEM(p, n, "kept", 4);
  e2b_output_free(o);
}

/* max_output 0 is the default (test_defaults.c), not a bad argument. */
static void bad_arguments_make_no_collector(void) {
  CHECK(e2b_output_new(1, (e2b_keep)42, 0) == NULL);
}

int main(void) {
  RUN(all_keeps_every_byte_then_fails_naming_the_stream);
  RUN(tail_keeps_the_last_bytes_whatever_the_chunks);
  RUN(tail_under_max_drops_nothing);
  RUN(none_and_chunked_streams_keep_nothing);
  RUN(bad_arguments_make_no_collector);
  return TESTING_DONE();
}
