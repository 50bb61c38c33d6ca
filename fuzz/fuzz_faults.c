/* fuzz_faults.c — libFuzzer target for emulator/src/http/faults.c: the admin
 * endpoint's fault rules (POST /_e2b_local/faults bodies), then matching of
 * requests against them (glob, method, probability, counts). Input: a JSON
 * body, optionally followed by a NUL and "<METHOD> <path>" lines to match. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"

static void match_lines(char *text) {
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *sp = strchr(line, ' ');
    if (!sp) continue;
    *sp = '\0';
    fault_hit hit;
    memset(&hit, 0, sizeof hit);
    if (faults_check(line, sp + 1, &hit) && hit.action == FA_NONE) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t jlen = nul ? (size_t)(nul - data) : size;
  json_t *body = json_loadb((const char *)data, jlen, 0, NULL);
  int status = 0;
  json_t *res = faults_add(body, &status);
  if (!res || (status != 200 && status != 400)) abort();
  json_decref(res);
  json_decref(body);
  if (nul) {
    size_t n = size - jlen - 1;
    char *text = malloc(n + 1);
    if (text) {
      memcpy(text, nul + 1, n);
      text[n] = '\0';
      match_lines(text);
      free(text);
    }
  } else {
    fault_hit hit;
    (void)faults_check("GET", "/sandboxes", &hit);
  }
  json_decref(faults_list());
  faults_clear();
  return 0;
}
