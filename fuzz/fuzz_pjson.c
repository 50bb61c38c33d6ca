/* fuzz_pjson.c — libFuzzer target for emulator/src/common/pjson.c, the lenient
 * proto3 JSON readers every envd request handler uses: each field of the
 * request object goes through every reader, as a handler would read it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pjson.h"

static const char *const NAMES[] = {"FILE_TYPE_UNSPECIFIED", "FILE_TYPE_FILE", "FILE_TYPE_DIRECTORY"};
static const int NUMS[] = {0, 1, 2};

static void read_all(json_t *v) {
  uint32_t u;
  const char *s;
  int b, e;
  uint8_t *bytes = NULL;
  size_t n;
  json_t *map = NULL;
  (void)pj_uint32(v, 7, &u);
  (void)pj_string(v, "x", &s);
  (void)pj_bool(v, 0, &b);
  if (pj_bytes(v, &bytes, &n) == 0) {
    if (!bytes) abort(); /* never NULL on success */
    free(bytes);
  }
  (void)pj_enum(v, NAMES, NUMS, 3, &e);
  if (pj_string_map(v, &map) == 0 && !json_is_object(map)) abort();
  json_decref(map);
  if (json_is_string(v)) json_decref(pj_text(json_string_value(v)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* pj_text must turn any bytes into a JSON string */
  char *raw = malloc(size + 1);
  if (!raw) return 0;
  memcpy(raw, data, size);
  raw[size] = '\0';
  json_t *t = pj_text(raw);
  if (!json_is_string(t)) abort();
  json_decref(t);
  free(raw);

  json_t *root = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
  const char *k;
  json_t *v;
  if (json_is_object(root)) {
    json_object_foreach(root, k, v) read_all(pj_get(root, k, "snake_name"));
  } else {
    read_all(root);
  }
  json_decref(root);
  return 0;
}
