/* test_nameset.c — the set of names a watch saw change: found after being
 * added (across the doublings that move them), absent otherwise, lossy
 * ("maybe" for every name) once full, and empty again after a clear. */
#include "internal.h"
#include "testing.h"

#include <stdio.h>
#include <string.h>

static void name_of(char *buf, size_t n, int i) { snprintf(buf, n, "%032x", (unsigned)i * 2654435761u); }

static void test_empty(void) {
  e2b_nameset set = {0};
  CHECK(e2b_nameset_maybe(&set, "abc", 3) == 0);
  e2b_nameset_clear(&set);
  CHECK(set.slots == NULL && set.count == 0);
}

static void test_prefix_lengths(void) {
  e2b_nameset set = {0};
  e2b_nameset_add(&set, "abcdef", 3); /* the name is the first len bytes */
  CHECK(e2b_nameset_maybe(&set, "abc", 3) == 1);
  CHECK(e2b_nameset_maybe(&set, "abcdef", 6) == 0);
  CHECK(e2b_nameset_maybe(&set, "ab", 2) == 0);
  e2b_nameset_add(&set, "abc", 3); /* twice: counted once */
  CHECK(set.count == 1);
  e2b_nameset_clear(&set);
}

/* Starts small, grows as names come, and keeps every name through each move. */
static void test_growth(void) {
  e2b_nameset set = {0};
  char name[40];
  e2b_nameset_add(&set, "first", 5);
  size_t first_cap = set.cap;
  CHECK(first_cap > 0 && first_cap < E2B_NAMESET_MAX);
  for (int i = 0; i < 1000; i++) {
    name_of(name, sizeof name, i);
    e2b_nameset_add(&set, name, strlen(name));
  }
  CHECK(set.cap > first_cap && set.cap <= E2B_NAMESET_MAX);
  CHECK(set.count == 1001 && !set.lossy);
  int missing = 0, extra = 0;
  for (int i = 0; i < 1000; i++) {
    name_of(name, sizeof name, i);
    missing += !e2b_nameset_maybe(&set, name, strlen(name));
    name_of(name, sizeof name, i + 5000);
    extra += e2b_nameset_maybe(&set, name, strlen(name));
  }
  CHECK(missing == 0);
  CHECK(extra == 0);
  CHECK(e2b_nameset_maybe(&set, "first", 5) == 1);
  e2b_nameset_clear(&set);
  CHECK(set.slots == NULL && set.count == 0 && set.cap == 0);
}

/* Past 3/4 of the largest table it answers "maybe" for every name, and a
 * clear (a restarted watch) makes it exact again. */
static void test_lossy(void) {
  e2b_nameset set = {0};
  char name[40];
  int i = 0;
  for (; i < E2B_NAMESET_MAX && !set.lossy; i++) {
    name_of(name, sizeof name, i);
    e2b_nameset_add(&set, name, strlen(name));
  }
  CHECK(set.lossy);
  CHECK(set.count == E2B_NAMESET_MAX * 3 / 4);
  CHECK(e2b_nameset_maybe(&set, "never-added", 11) == 1);
  e2b_nameset_clear(&set);
  CHECK(!set.lossy && e2b_nameset_maybe(&set, "never-added", 11) == 0);
}

int main(void) {
  RUN(test_empty);
  RUN(test_prefix_lengths);
  RUN(test_growth);
  RUN(test_lossy);
  return TESTING_DONE();
}
