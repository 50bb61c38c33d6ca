/* pjson.c reads what clients send in proto3 JSON: a number out of its field's
 * range is refused, never cast (1e300 into an integer is undefined
 * behaviour; 2^32+9 must not become signal 9). */
#include "pjson.h"
#include "testing.h"

static json_t *num(const char *text) { return json_loads(text, JSON_DECODE_ANY, NULL); }

static void uint32_refuses_what_does_not_fit(void) {
  const char *bad[] = {"1e300", "-1e300", "-1", "4294967296", "1.5", "\"12x\"", "\"\"", "true"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *v = num(bad[i]);
    uint32_t out = 7;
    CHECK(pj_uint32(v, 0, &out) == -1);
    json_decref(v);
  }
  const char *good[] = {"0", "4294967295", "42.0", "\"42\""};
  const uint32_t want[] = {0, 4294967295u, 42, 42};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    json_t *v = num(good[i]);
    uint32_t out = 7;
    CHECK(pj_uint32(v, 0, &out) == 0 && out == want[i]);
    json_decref(v);
  }
}

static void enums_refuse_numbers_out_of_int_range(void) {
  static const char *const names[] = {"SIGNAL_SIGKILL"};
  static const int nums[] = {9};
  int out = 0;
  json_t *v = num("4294967305"); /* 2^32 + 9 */
  CHECK(pj_enum(v, names, nums, 1, &out) == -1);
  json_decref(v);
  v = num("9");
  CHECK(pj_enum(v, names, nums, 1, &out) == 0 && out == 9);
  json_decref(v);
  v = num("\"SIGNAL_SIGKILL\"");
  CHECK(pj_enum(v, names, nums, 1, &out) == 0 && out == 9);
  json_decref(v);
}

int main(void) {
  RUN(uint32_refuses_what_does_not_fit);
  RUN(enums_refuse_numbers_out_of_int_range);
  return TESTING_DONE();
}
