/* testing.h — a minimal harness for ctest: each test binary runs its cases,
 * prints one line per failed check and exits non-zero if any failed. */
#ifndef E2B_TESTING_H
#define E2B_TESTING_H
#include <stdio.h>
#include <string.h>

static int testing_failures;
static int testing_checks;

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    testing_checks++;                                                                        \
    if (!(cond)) {                                                                           \
      testing_failures++;                                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
    }                                                                                        \
  } while (0)

#define CHECK_STR(got, want)                                                                 \
  do {                                                                                       \
    const char *g_ = (got), *w_ = (want);                                                    \
    testing_checks++;                                                                        \
    if (!g_ || strcmp(g_, w_) != 0) {                                                        \
      testing_failures++;                                                                    \
      fprintf(stderr, "%s:%d: got \"%s\", want \"%s\"\n", __FILE__, __LINE__,                \
              g_ ? g_ : "(null)", w_);                                                       \
    }                                                                                        \
  } while (0)

#define CHECK_MEM(got, got_len, want, want_len)                                              \
  do {                                                                                       \
    testing_checks++;                                                                        \
    if ((got_len) != (want_len) || memcmp((got), (want), (want_len)) != 0) {                 \
      testing_failures++;                                                                    \
      fprintf(stderr, "%s:%d: bytes differ (%zu vs %zu)\n", __FILE__, __LINE__,              \
              (size_t)(got_len), (size_t)(want_len));                                        \
    }                                                                                        \
  } while (0)

#define RUN(test)                                                                            \
  do {                                                                                       \
    int before_ = testing_failures;                                                          \
    test();                                                                                  \
    printf("%s %s\n", testing_failures == before_ ? "ok  " : "FAIL", #test);                 \
  } while (0)

#define TESTING_DONE()                                                                       \
  (printf("%d checks, %d failed\n", testing_checks, testing_failures), testing_failures != 0)
#endif
