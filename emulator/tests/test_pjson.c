/* Tests for pjson.c, the server's proto3 JSON readers: numbers out of range
 * (1e300, 2^32, 2^32+1 as an enum) are refused, never cast. */
#include "pjson.h"
#include "testing.h"

static void uint32_refuses_out_of_range_numbers(void) {
  const char *bad[] = {"1e300", "-1e300", "4294967296", "-1", "4294967296.0", "1.5", "\"4294967296\"",
                       "\"99999999999999999999\"", "\"\"", "true"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *v = json_loads(bad[i], JSON_DECODE_ANY, NULL);
    uint32_t out = 7;
    CHECK(v && pj_uint32(v, 0, &out) == -1 && out == 7);
    json_decref(v);
  }
  const char *good[] = {"4294967295", "4294967295.0", "\"4294967295\"", "0"};
  const uint32_t want[] = {4294967295u, 4294967295u, 4294967295u, 0};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    json_t *v = json_loads(good[i], JSON_DECODE_ANY, NULL);
    uint32_t out = 7;
    CHECK(v && pj_uint32(v, 0, &out) == 0 && out == want[i]);
    json_decref(v);
  }
}

static void enum_refuses_numbers_outside_int(void) {
  static const char *const names[] = {"SIGNAL_SIGHUP"};
  static const int nums[] = {1};
  const char *bad[] = {"4294967297", "-4294967295", "1e300", "\"SIGNAL_NOPE\""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *v = json_loads(bad[i], JSON_DECODE_ANY, NULL);
    int out = 7;
    CHECK(v && pj_enum(v, names, nums, 1, &out) == -1);
    json_decref(v);
  }
  json_t *v = json_loads("9", JSON_DECODE_ANY, NULL);
  int out = 0;
  CHECK(pj_enum(v, names, nums, 1, &out) == 0 && out == 9);
  json_decref(v);
}

int main(void) {
  RUN(uint32_refuses_out_of_range_numbers);
  RUN(enum_refuses_numbers_outside_int);
  return TESTING_DONE();
}
