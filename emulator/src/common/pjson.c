/* pjson.c — lenient proto3 JSON field readers. */
#include "pjson.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

json_t *pj_get(json_t *obj, const char *camel, const char *snake) {
  if (!json_is_object(obj)) return NULL;
  json_t *v = json_object_get(obj, camel);
  if (!v && snake) v = json_object_get(obj, snake);
  return json_is_null(v) ? NULL : v;
}

int pj_uint32(json_t *v, uint32_t dflt, uint32_t *out) {
  if (!v) {
    *out = dflt;
    return 0;
  }
  long long x;
  if (json_is_integer(v)) {
    x = json_integer_value(v);
  } else if (json_is_real(v)) {
    double d = json_real_value(v);
    /* range first: casting 1e300 to an integer is undefined behaviour */
    if (!(d >= 0 && d <= 4294967295.0) || d != (double)(long long)d) return -1;
    x = (long long)d;
  } else if (json_is_string(v)) {
    char *end;
    const char *s = json_string_value(v);
    x = strtoll(s, &end, 10);
    if (!*s || *end) return -1;
  } else {
    return -1;
  }
  if (x < 0 || x > 0xffffffffLL) return -1;
  *out = (uint32_t)x;
  return 0;
}

int pj_string(json_t *v, const char *dflt, const char **out) {
  if (!v) {
    *out = dflt;
    return 0;
  }
  if (!json_is_string(v)) return -1;
  *out = json_string_value(v);
  return 0;
}

int pj_bool(json_t *v, int dflt, int *out) {
  if (!v) {
    *out = dflt;
    return 0;
  }
  if (!json_is_boolean(v)) return -1;
  *out = json_is_true(v);
  return 0;
}

int pj_bytes(json_t *v, uint8_t **out, size_t *len) {
  if (!v) {
    *out = malloc(1);
    *len = 0;
    return *out ? 0 : -1;
  }
  if (!json_is_string(v)) return -1;
  return e2b_b64_decode_alloc(json_string_value(v), json_string_length(v), out, len);
}

int pj_enum(json_t *v, const char *const *names, const int *nums, size_t n, int *out) {
  if (!v) {
    *out = 0;
    return 0;
  }
  if (json_is_integer(v)) {
    json_int_t x = json_integer_value(v);
    if (x < INT_MIN || x > INT_MAX) return -1; /* 2^32+9 is not signal 9 */
    *out = (int)x;
    return 0;
  }
  if (!json_is_string(v)) return -1;
  for (size_t i = 0; i < n; i++)
    if (strcmp(json_string_value(v), names[i]) == 0) {
      *out = nums[i];
      return 0;
    }
  return -1;
}

int pj_string_map(json_t *v, json_t **out) {
  *out = NULL;
  if (!v) {
    *out = json_object();
    return 0;
  }
  if (!json_is_object(v)) return -1;
  const char *k;
  json_t *val;
  json_object_foreach(v, k, val) {
    if (!json_is_string(val)) return -1;
  }
  *out = json_incref(v);
  return 0;
}

/* Length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s) {
  if (s[0] < 0x80) return 1;
  size_t n = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 0 || (n == 2 && s[0] < 0xc2) || (n == 4 && s[0] > 0xf4)) return 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) return 0;
  if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))) return 0;
  return n;
}

json_t *pj_text(const char *s) {
  if (!s) s = "";
  json_t *j = json_string(s);
  if (j) return j;
  size_t n = strlen(s);
  char *out = malloc(n * 3 + 1);
  if (!out) return json_string("");
  size_t o = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t l = utf8_len(p);
    if (l) {
      memcpy(out + o, p, l);
      o += l;
      p += l;
    } else {
      memcpy(out + o, "\xef\xbf\xbd", 3);
      o += 3;
      p++;
    }
  }
  out[o] = '\0';
  j = json_string(out);
  free(out);
  return j ? j : json_string("");
}
