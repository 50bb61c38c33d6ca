/* bootid.c — e2b_proc_boot_id: the boot id a kept process started
 * under, read from its kept files (the layout stays track.c's and
 * forget.c's business, never the caller's): the exit file holds it (alone
 * while the command runs, after the status once it ended); an older
 * wrapper's exit file holds only the status and its .boot file the id. The
 * wrapper writes the file as its first step, which may still be running
 * when the process is reported started: a short wait covers that, nothing
 * more. */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOOT_WAIT_MS 5000
#define BOOT_RETRY_MS 20
#define BOOT_MAX 128 /* a status, a boot id and a newline; more is not one */

enum { F_EXIT, F_BOOT };

typedef struct boot_state {
  e2b_sbx *sbx;
  char *path[2];     /* PREFIX.exit, PREFIX.boot */
  int which;         /* F_* being read */
  e2b_req *read;
  growbuf got;
  int64_t until_ms;
  int waiting; /* the retry timer is armed */
} boot_state;

static void start_read(e2b_req *op, boot_state *s, int which) {
  e2b_error err;
  s->got.len = 0;
  s->which = which;
  /* an exit or boot file: a line */
  s->read = e2b_op_child(op, e2b_file_read_sized(s->sbx, s->path[which], "root", 0, E2B_SMALL_READ_BUFFER, &err));
  if (!s->read) e2b_op_finish(op, &err);
}

/* The trimmed id, or NULL when the file held none (yet). In an exit file
 * it follows the status once the command ended ("0 ID\n"; a status alone
 * is an older wrapper's); before that the file holds the id alone, and
 * after a signal, for a moment, bash's job report behind it (the id is a
 * UUID: its 36 characters). */
static char *trimmed(growbuf *b, int which) {
  size_t from = 0, to = b->len;
  long sep = which == F_EXIT ? e2b_kept_status(b->data, b->len, NULL) : -1;
  if (sep >= 0) {
    if (b->data[sep] == '\n') return NULL; /* an older wrapper's status alone */
    from = (size_t)sep + 1;
  } else if (which == F_EXIT && to > E2B_BOOT_ID_LEN) {
    to = E2B_BOOT_ID_LEN;
  }
  while (from < to && isspace((unsigned char)b->data[from])) from++;
  while (to > from && isspace((unsigned char)b->data[to - 1])) to--;
  if (from == to) return NULL;
  char *id = malloc(to - from + 1);
  if (id) {
    memcpy(id, b->data + from, to - from);
    id[to - from] = 0;
  }
  return id;
}

static void read_done(e2b_req *op, boot_state *s) {
  e2b_error err;
  const e2b_error *rerr = e2b_req_error(s->read);
  if (rerr) err = *rerr;
  e2b_req_free(s->read);
  s->read = NULL;
  if (rerr && err.code != E2B_ERR_NOT_FOUND) return e2b_op_finish(op, &err);
  char *id = rerr ? NULL : trimmed(&s->got, s->which);
  if (id) {
    op->result = id;
    op->result_free = free;
    return e2b_op_finish(op, NULL);
  }
  if (s->which == F_EXIT) return start_read(op, s, F_BOOT); /* an older wrapper's file */
  if (e2b_now_ms() >= s->until_ms) {
    if (!rerr)
      e2b_err_set(&err, E2B_ERR_NOT_FOUND, op->op, "the process's boot id was not recorded");
    return e2b_op_finish(op, &err);
  }
  s->waiting = 1;
  e2b_req_arm_timer(op, BOOT_RETRY_MS);
}

static void boot_advance(e2b_req *op) {
  boot_state *s = op->state;
  if (s->waiting) {
    if (op->timer_at_ms) return;
    s->waiting = 0;
    return start_read(op, s, F_EXIT);
  }
  if (!s->read) return start_read(op, s, F_EXIT);
  const uint8_t *data;
  size_t len;
  int rc;
  while ((rc = e2b_req_next_chunk(s->read, &data, &len)) == 1) {
    if (s->got.len + len > BOOT_MAX) len = BOOT_MAX - s->got.len;
    if (len && e2b_growbuf_append(&s->got, data, len) != 0) {
      e2b_error err;
      e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
      return e2b_op_finish(op, &err);
    }
  }
  if (rc < 0) read_done(op, s);
}

#define BOOT_AT(f) offsetof(boot_state, f)
static const e2b_op_kind boot_kind = {.size = sizeof(boot_state), .children = E2B_FIELDS(BOOT_AT(read)),
                                      .bufs = E2B_FIELDS(BOOT_AT(got)),
                                      .allocs = E2B_FIELDS(BOOT_AT(path[F_EXIT]), BOOT_AT(path[F_BOOT])),
                                      .holds = E2B_OP_HOLDS_SBX, .ref = BOOT_AT(sbx)};

e2b_req *e2b_proc_boot_id(e2b_sbx *sbx, const char *tag, e2b_error *err) {
  const char *op = "process.boot_id";
  e2b_error_clear(err);
  if (!sbx || !tag || !*tag) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "sandbox and tag are required");
    return NULL;
  }
  e2b_req *req = e2b_op_new(&boot_kind, NULL, sbx, op, boot_advance, NULL, err);
  if (!req) return NULL;
  boot_state *s = req->state;
  char *prefix = e2b_kept_prefix(tag);
  size_t n = prefix ? strlen(prefix) + sizeof ".boot" : 0;
  if (prefix && (s->path[F_EXIT] = malloc(n))) snprintf(s->path[F_EXIT], n, "%s.exit", prefix);
  if (prefix && (s->path[F_BOOT] = malloc(n))) snprintf(s->path[F_BOOT], n, "%s.boot", prefix);
  free(prefix);
  if (!s->path[F_EXIT] || !s->path[F_BOOT]) return e2b_op_nomem(req, err);
  s->until_ms = e2b_now_ms() + BOOT_WAIT_MS;
  return e2b_req_typed(req, E2B_RESULT_BOOT_ID);
}

const char *e2b_req_boot_id(const e2b_req *req) {
  return req->result_kind == E2B_RESULT_BOOT_ID ? req->result : NULL;
}
