/* test_fds.c — fds_available (util.c), which e2b-local asks before a spawn:
 * it answers from one probe while the descriptors in use stay low, and
 * counts them once a burst went high, so holes left below count as free. */
#define _GNU_SOURCE
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include "testing.h"
#include "util.h"

static int open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  while (d && readdir(d)) n++;
  if (d) closedir(d);
  return n - 1; /* the directory's own */
}

int main(void) {
  enum { RESERVE = 32, ROOM = 200 };
  struct rlimit old, low;
  CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
  low = old;
  low.rlim_cur = (rlim_t)(open_fds() + ROOM);
  CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
  CHECK(fds_available(RESERVE));
  static int fds[ROOM];
  int n = 0;
  while (n < ROOM && (fds[n] = dup(0)) >= 0) n++;
  CHECK(n > ROOM - 8);
  CHECK(!fds_available(RESERVE)); /* all taken */
  for (int i = 0; i < RESERVE + 8; i++) close(fds[n - 1 - i]);
  usleep(300 * 1000); /* past the count's cache */
  CHECK(fds_available(RESERVE)); /* the top is free again */
  for (int i = 0; i < RESERVE + 8; i++) fds[n - 1 - i] = dup(0);
  int mark = (int)low.rlim_cur - RESERVE, kept = 0;
  for (int i = 0; i < n; i++) {
    if (fds[i] == mark)
      kept = 1;
    else
      close(fds[i]); /* holes below and above the probed slot */
  }
  CHECK(kept);
  usleep(300 * 1000);
  CHECK(fds_available(RESERVE)); /* counted, not probed */
  close(mark);
  low.rlim_cur = 64; /* a small limit keeps no reserve */
  CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
  CHECK(fds_available(RESERVE));
  setrlimit(RLIMIT_NOFILE, &old);
  return TESTING_DONE();
}
