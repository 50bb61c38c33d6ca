/* fuzz_files.c — libFuzzer target for the header parsers of envd's
 * GET /files (emulator/src/envd/files.c): Range and Accept-Encoding. Input: 8
 * bytes of file size, then the header text. A satisfiable range must lie
 * inside the file. (Multipart upload bodies are parsed by libmicrohttpd's
 * post processor, which needs a live connection: not fuzzed here.) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "files_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  uint64_t fsize;
  memcpy(&fsize, data, 8);
  if (data[0] & 1) fsize %= 4096; /* small files too, where the edges are */
  char *h = malloc(size - 8 + 1);
  if (!h) return 0;
  memcpy(h, data + 8, size - 8);
  h[size - 8] = '\0';
  uint64_t from = UINT64_MAX, to = UINT64_MAX;
  int r = files_parse_range(h, fsize, &from, &to);
  if (r < -1 || r > 1) abort();
  if (r == 1 && (from > to || to >= fsize)) abort();
  int enc = files_pick_encoding(h);
  if (enc < -1 || enc > 1) abort();
  free(h);
  return 0;
}
