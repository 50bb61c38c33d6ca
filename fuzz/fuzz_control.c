/* fuzz_control.c — libFuzzer target for the control plane's request parsers
 * (emulator/src/control/control.c): a POST /sandboxes body (timeout, flags,
 * metadata, envVars, network, autoResume...) and the ?metadata= query of
 * GET /sandboxes, which peels up to several layers of %-escaping. Byte 0
 * picks the parser; the rest is its input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const char *text = (const char *)data + 1;
  size_t n = size - 1;
  if (data[0] & 1) {
    char *q = malloc(n + 1);
    if (!q) return 0;
    memcpy(q, text, n);
    q[n] = '\0';
    json_t *f = control_parse_metadata_filter(q);
    if (f && !json_is_object(f)) abort();
    json_decref(f);
    free(q);
    return 0;
  }
  json_t *body = json_loadb(text, n, 0, NULL);
  char err[400];
  int rc = control_parse_create(body, err, sizeof err);
  if (rc != 0 && (rc != -1 || !err[0])) abort(); /* a refusal always says why */
  json_decref(body);
  return 0;
}
