/* bench_codec.c — how fast the client decodes a command's output stream:
 * Connect envelopes as curl hands them over (16 KiB at a time), each data
 * event's JSON and its base64, into the queued events a reader takes.
 * Prints MB/s of decoded output (and of wire bytes) per CPU second of this
 * one thread, for each stage and for the whole path. A benchmark, not a
 * test: nothing here fails on a slow machine (bench/codec.sh runs it).
 *   bench_codec [MB=1024] [chunk_bytes=65536] */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "internal.h"

#define CURL_PIECE 16384 /* CURL_MAX_WRITE_SIZE: what one write callback gets */

typedef struct stream {
  uint8_t *wire;
  size_t len;
  size_t frames;
} stream;

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One data event per chunk of command output, framed as e2b-local sends it. */
static stream make_stream(size_t chunk, size_t frames) {
  uint8_t *raw = malloc(chunk);
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < chunk; i++) { /* xorshift: output that is not all one byte */
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    raw[i] = (uint8_t)x;
  }
  char *b64 = e2b_b64_encode_alloc(raw, chunk);
  char *json = NULL;
  int jlen = asprintf(&json, "{\"event\":{\"data\":{\"stdout\":\"%s\"}}}", b64);
  stream s = {malloc(frames * ((size_t)jlen + E2B_ENV_HEADER_SIZE)), 0, frames};
  for (size_t f = 0; f < frames; f++) {
    e2b_envelope_header(0, (uint32_t)jlen, s.wire + s.len);
    memcpy(s.wire + s.len + E2B_ENV_HEADER_SIZE, json, (size_t)jlen);
    s.len += E2B_ENV_HEADER_SIZE + (size_t)jlen;
  }
  free(raw);
  free(b64);
  free(json);
  return s;
}

/* Feeds the stream to the envelope decoder in curl-sized pieces, handing
 * each frame to on_frame (NULL: framing alone). Returns the frame count. */
static size_t feed_frames(const stream *s, void (*on_frame)(const e2b_envelope_decoder *d, size_t n, size_t *bytes),
                          size_t *bytes) {
  e2b_envelope_decoder d;
  e2b_envelope_decoder_init(&d, 16u << 20);
  size_t frames = 0;
  for (size_t pos = 0; pos < s->len;) {
    size_t piece = s->len - pos < CURL_PIECE ? s->len - pos : CURL_PIECE, off = 0;
    while (off < piece) {
      size_t used;
      if (e2b_envelope_feed(&d, s->wire + pos + off, piece - off, &used) == E2B_ENV_FRAME) {
        if (on_frame) on_frame(&d, frames, bytes);
        frames++;
        e2b_envelope_decoder_reset(&d);
      }
      off += used;
    }
    pos += piece;
  }
  e2b_envelope_decoder_free(&d);
  return frames;
}

/* Framing alone: bytes through the envelope decoder. */
static size_t run_envelopes(const stream *s) { return feed_frames(s, NULL, NULL); }

/* Each message parsed into a queued event, as the client does. */
static void parse_frame(const e2b_envelope_decoder *d, size_t n, size_t *bytes) {
  queued *q = NULL;
  e2b_error err;
  if (e2b_parse_proc_event((const char *)d->payload, d->payload_len, &q, &err) != 0 || !q) {
    fprintf(stderr, "bench_codec: frame %zu did not parse: %s\n", n, err.message);
    exit(1);
  }
  *bytes += q->ev.len;
  free(q);
}

/* The whole path: framing, then each message parsed into a queued event. */
static size_t run_full(const stream *s, size_t *out_bytes) { return feed_frames(s, parse_frame, out_bytes); }

/* base64 alone, over each frame's text. */
static size_t run_base64(const stream *s, size_t chunk) {
  size_t blen = 4 * ((chunk + 2) / 3), total = 0, n;
  uint8_t *out = malloc(blen / 4 * 3 + 3);
  const char *text = (const char *)s->wire + E2B_ENV_HEADER_SIZE + strlen("{\"event\":{\"data\":{\"stdout\":\"");
  for (size_t f = 0; f < s->frames; f++) {
    if (e2b_b64_decode(text, blen, out, &n) != 0) exit(1);
    total += n;
  }
  free(out);
  return total;
}

static void report(const char *what, double secs, double payload, double wire) {
  printf("%-34s %10.1f %10.1f\n", what, payload / 1e6 / secs, wire / 1e6 / secs);
}

int main(int argc, char **argv) {
  size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
  size_t chunk = argc > 2 ? strtoul(argv[2], NULL, 10) : 65536;
  if (mb == 0 || chunk == 0) return 2;
  /* A stream of ~64 MiB of output, replayed until mb MB have been decoded. */
  size_t frames = (64u << 20) / chunk + 1;
  stream s = make_stream(chunk, frames);
  size_t rounds = (mb * 1000000 + frames * chunk - 1) / (frames * chunk);
  double payload = (double)rounds * (double)frames * (double)chunk, wire = (double)rounds * (double)s.len;
  printf("%zu MB of output in %zu-byte chunks (%zu frames a round, %zu rounds); MB/s per core\n",
         mb, chunk, frames, rounds);
  printf("%-34s %10s %10s\n", "stage", "output", "wire");

  double t0 = cpu_s();
  for (size_t r = 0; r < rounds; r++) run_envelopes(&s);
  report("envelope framing", cpu_s() - t0, payload, wire);

  t0 = cpu_s();
  size_t decoded = 0;
  for (size_t r = 0; r < rounds; r++) decoded += run_base64(&s, chunk);
  report("base64 decode", cpu_s() - t0, payload, wire);

  t0 = cpu_s();
  size_t got = 0;
  for (size_t r = 0; r < rounds; r++) run_full(&s, &got);
  report("whole path (frame+JSON+base64)", cpu_s() - t0, payload, wire);
  free(s.wire);
  return got == (size_t)payload && decoded == (size_t)payload ? 0 : 1;
}
