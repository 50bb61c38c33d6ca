/* log.c — timestamped single-line messages on stderr. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static const char *g_prefix = "e2b-local";

void log_set_prefix(const char *prefix) { g_prefix = prefix; }

void log_msg(const char *fmt, ...) {
  char line[1024];
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  int n = snprintf(line, sizeof line, "%02d:%02d:%02d.%03ld %s: ", tm.tm_hour, tm.tm_min, tm.tm_sec,
                   ts.tv_nsec / 1000000, g_prefix);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  /* One fputs per line keeps lines from different threads whole. */
  fprintf(stderr, "%s\n", line);
}
