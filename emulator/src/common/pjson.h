/* pjson.h — proto3 JSON reading rules (as envd's Connect JSON codec): either field name form,
 * 32-bit ints as numbers or strings, bytes as any base64 flavour, enums by
 * name or number. */
#ifndef EMU_PJSON_H
#define EMU_PJSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The field under its lowerCamelCase or proto name; NULL when absent or null. */
json_t *pj_get(json_t *obj, const char *camel, const char *snake);
/* Each returns 0, or -1 when the value has the wrong type. Absent -> default. */
int pj_uint32(json_t *v, uint32_t dflt, uint32_t *out);
int pj_string(json_t *v, const char *dflt, const char **out);
int pj_bool(json_t *v, int dflt, int *out);
/* malloc'd buffer (never NULL on success). */
int pj_bytes(json_t *v, uint8_t **out, size_t *len);
/* Enum by name (names[i] has number nums[i]) or by number. */
int pj_enum(json_t *v, const char *const *names, const int *nums, size_t n, int *out);
/* map<string,string>: an object of strings (absent -> empty object). */
int pj_string_map(json_t *v, json_t **out);

/* A JSON string from arbitrary bytes: invalid UTF-8 becomes U+FFFD, so file
 * names and messages can never make a response unserialisable. */
json_t *pj_text(const char *s);

#endif
