/* fuzz_tplbuild.c — libFuzzer target for the template-build API's readers of
 * names and tags (emulator/src/control/tplreg.c), which see whatever an SDK
 * sends: byte 0 even, a name ("[namespace/]alias[:tag]") through
 * tplreg_parse_name; odd, a JSON array of tags through tplreg_clean_tags. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tplbuild.h"

/* [a-z0-9_-]+ (dots: also '.'), at most 128 bytes. */
static int clean(const char *s, int dots) {
  size_t n = strlen(s);
  if (n == 0 || n > 128) return 0;
  for (size_t i = 0; i < n; i++)
    if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' &&
        !(dots && s[i] == '.'))
      return 0;
  return 1;
}

static void names(const char *text) {
  tplreg_name p;
  char err[400] = "";
  int rc = tplreg_parse_name(text, &p, err, sizeof err);
  if (rc != 0) {
    if ((rc != -1 && rc != -2) || !err[0]) abort(); /* a refusal always says why */
    return;
  }
  if (!clean(p.alias, 0) || (p.ns[0] && strcmp(p.ns, "local") != 0)) abort();
  if (p.tag[0] && (!clean(p.tag, 1) || strcmp(p.tag, "default") == 0 || !p.has_tag)) abort();
}

static void tags(const char *text, size_t n) {
  json_t *in = json_loadb(text, n, 0, NULL);
  if (!tplreg_string_array(in, 256)) {
    json_decref(in);
    return;
  }
  char err[400] = "";
  json_t *out = tplreg_clean_tags(in, err, sizeof err);
  if (!out && !err[0]) abort();
  for (size_t i = 0; out && i < json_array_size(out); i++) {
    const char *t = json_string_value(json_array_get(out, i));
    if (!t || !clean(t, 1) || tplreg_uuid_shaped(t)) abort();
    for (size_t j = 0; j < i; j++)
      if (strcmp(t, json_string_value(json_array_get(out, j))) == 0) abort(); /* deduplicated */
  }
  json_decref(out);
  json_decref(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  char *text = malloc(size);
  if (!text) return 0;
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';
  if (data[0] & 1)
    tags(text, size - 1);
  else
    names(text);
  free(text);
  return 0;
}
