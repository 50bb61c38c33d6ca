/* agentlog.c — one detached thread per agent drains its stdout/stderr pipe
 * and logs whole lines under the sandbox's id. The agent is ours, but its
 * output is still bounded: lines are cut, unprintable bytes replaced, and
 * after AGENTLOG_MAX bytes per boot the rest is read and dropped. */
#define _GNU_SOURCE
#include "agentlog.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#define AGENTLOG_MAX (16 * 1024)
#define AGENTLOG_LINE 240

typedef struct reader {
  int fd;
  char id[32];
  char line[AGENTLOG_LINE + 1];
  size_t len, logged;
  int dropped;
} reader;

static void flush_line(reader *r) {
  if (r->len == 0) return;
  r->line[r->len] = '\0';
  if (r->logged < AGENTLOG_MAX) {
    log_msg("sandbox %s: agent: %s", r->id, r->line);
    r->logged += r->len;
  } else if (!r->dropped) {
    log_msg("sandbox %s: agent: further output dropped (over %d bytes)", r->id, AGENTLOG_MAX);
    r->dropped = 1;
  }
  r->len = 0;
}

static void take(reader *r, const char *buf, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)buf[i];
    if (ch == '\n') {
      flush_line(r);
      continue;
    }
    if (r->len == AGENTLOG_LINE) flush_line(r);
    r->line[r->len++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
  }
}

static void *reader_main(void *arg) {
  reader *r = arg;
  char buf[4096];
  for (;;) {
    ssize_t n = read(r->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    take(r, buf, (size_t)n);
  }
  flush_line(r);
  close(r->fd);
  free(r);
  return NULL;
}

int agentlog_start(const char *sandbox_id) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -errno;
  reader *r = xcalloc(1, sizeof *r);
  r->fd = p[0];
  snprintf(r->id, sizeof r->id, "%s", sandbox_id);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  int rc = pthread_create(&t, &attr, reader_main, r);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    close(p[0]);
    close(p[1]);
    free(r);
    return -rc;
  }
  return p[1];
}
