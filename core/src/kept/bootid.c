/* bootid.c — e2b_proc_boot_id: the boot id a kept process started
 * under, read from its kept files (the layout stays track.c's and
 * forget.c's business, never the caller's): the exit file holds it, alone
 * while the command runs and after the status once it ended. The wrapper
 * writes the file as its first step, which may still be running when the
 * process is reported started: a short wait covers that, nothing more. */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOOT_WAIT_MS 5000
#define BOOT_RETRY_MS 20
#define BOOT_MAX 128 /* a status, a boot id and a newline; more is not one */

typedef struct boot_state {
  e2b_sbx *sbx;
  char *path;        /* PREFIX.exit */
  e2b_req *read;
  growbuf got;
  int64_t until_ms;
  int waiting; /* the retry timer is armed */
} boot_state;

static void start_read(e2b_req *op, boot_state *s) {
  e2b_error err;
  s->got.len = 0;
  /* the exit file: a line */
  s->read = e2b_op_child(op, e2b_file_read_sized(s->sbx, s->path, "root", 0, E2B_SMALL_READ_BUFFER, &err));
  if (!s->read) e2b_op_finish(op, &err);
}

/* The id, or NULL when the file holds none (yet). It is a UUID (its 36
 * characters) that leads the file while the command runs (for a moment,
 * after a signal, bash's job report behind it) and follows the status and
 * a space once it ended ("0 ID\n"); anything else is no id. */
static char *boot_id_of(const growbuf *b) {
  long sep = e2b_kept_status(b->data, b->len, NULL);
  size_t from = sep >= 0 ? (size_t)sep + 1 : 0;
  if (b->len - from < E2B_BOOT_ID_LEN) return NULL;
  for (size_t i = from; i < from + E2B_BOOT_ID_LEN; i++)
    if (!isxdigit((unsigned char)b->data[i]) && b->data[i] != '-') return NULL;
  return strndup(b->data + from, E2B_BOOT_ID_LEN);
}

static void read_done(e2b_req *op, boot_state *s) {
  e2b_error err;
  const e2b_error *rerr = e2b_req_error(s->read);
  if (rerr) err = *rerr;
  e2b_req_free(s->read);
  s->read = NULL;
  if (rerr && err.code != E2B_ERR_NOT_FOUND) return e2b_op_finish(op, &err);
  char *id = rerr ? NULL : boot_id_of(&s->got);
  if (id) {
    op->result = id;
    op->result_free = free;
    return e2b_op_finish(op, NULL);
  }
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
    return start_read(op, s);
  }
  if (!s->read) return start_read(op, s);
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
                                      .allocs = E2B_FIELDS(BOOT_AT(path)),
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
  size_t n = prefix ? strlen(prefix) + sizeof ".exit" : 0;
  if (prefix && (s->path = malloc(n))) snprintf(s->path, n, "%s.exit", prefix);
  free(prefix);
  if (!s->path) return e2b_op_nomem(req, err);
  s->until_ms = e2b_now_ms() + BOOT_WAIT_MS;
  return e2b_req_typed(req, E2B_RESULT_BOOT_ID);
}

const char *e2b_req_boot_id(const e2b_req *req) {
  return req->result_kind == E2B_RESULT_BOOT_ID ? req->result : NULL;
}
