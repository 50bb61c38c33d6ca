/* forget.c — removing a kept process's files: at once (e2b_proc_forget:
 * one process removes all three), or lazily (e2b_proc_forget_later): the
 * names wait on the sandbox handle and a later kept command of the same
 * user (or of root) removes them in the background once a few wait, or
 * a few commands later (FORGET_BATCH), or at the next one for large output
 * (FORGET_NOW_BYTES), so cleanup costs no request and, mostly, no process.
 * What is still waiting when the handle goes is
 * removed by one process (e2b_sbx_flush_forgets): one request, as is each
 * removal at once. Names are the hex of the tag, so they are safe on a
 * command line and in a shell word list. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A sandbox's process list is small; past this a name is removed at once. */
#define FORGET_QUEUE_MAX 256
/* Removing costs the wrapper a fork and an exec of rm beside its command
 * (measured: about 0.6 ms of CPU in a sandbox, most of it on every short
 * command run one after another), so a user's names wait until this many
 * can go at once, or this many kept commands started since they began to
 * wait (a run's own files mostly go to the sandbox's sweep, E2B_WRAP_SWEEP,
 * so names come slower than commands). */
#define FORGET_BATCH 8
/* Kept output this large is removed by the next kept command of its user
 * (or root) once its handle lets it go, not after a batch: left for one, a
 * few of them would hold the sandbox's disk and, as page cache charged to
 * the sandbox, its memory, slowing every later command's writes
 * (bench/README.md). */
#define FORGET_NOW_BYTES (1 << 20)
/* ... and at once (one request) past this much waiting for a command. */
#define FORGET_URGENT_MAX ((int64_t)64 << 20)

static char *hex_name(const char *tag) {
  size_t n = strlen(tag) * 2 + 1;
  char *hex = malloc(n);
  if (!hex) return NULL;
  size_t len = 0;
  for (const unsigned char *t = (const unsigned char *)tag; *t; t++)
    len += (size_t)snprintf(hex + len, n - len, "%02x", *t);
  hex[len] = 0;
  return hex;
}

char *e2b_kept_prefix(const char *tag) {
  char *hex = hex_name(tag);
  size_t n = hex ? strlen(hex) + sizeof E2B_KEPT_ROOT + 1 : 0;
  char *prefix = hex ? malloc(n) : NULL;
  if (prefix) snprintf(prefix, n, "%s/%s", E2B_KEPT_ROOT, hex);
  free(hex);
  return prefix;
}

/* One process removes every file of the names it is given: one request
 * however many there are, never one per file (envd's filesystem API
 * removes one path per call). $@: the files' prefixes. */
static const char FORGET_SCRIPT[] = "for p do rm -f -- \"$p.out\" \"$p.err\" \"$p.exit\"; done\n";

typedef struct forget_state {
  e2b_req *run;
} forget_state;

static void forget_release(void *p) { e2b_req_free(((forget_state *)p)->run); }

/* Done when the removing process's stream has ended (rm -f finds nothing
 * missing; it writes nothing unless it cannot remove). */
static void forget_advance(e2b_req *op) {
  forget_state *f = op->state;
  if (e2b_req_done(f->run)) e2b_op_finish(op, e2b_req_error(f->run));
}

static const e2b_op_kind forget_kind = {.size = sizeof(forget_state), .release = forget_release};

/* Removes the files of count names (hex) in one process run as root (who
 * may remove anyone's), awaited to its end. */
static e2b_req *forget_hexes(e2b_sbx *sbx, char *const *hex, size_t count, e2b_error *err) {
  const char **args = calloc(count + 3, sizeof *args);
  char **prefixes = calloc(count + 1, sizeof *prefixes);
  e2b_req *op = NULL;
  if (!args || !prefixes) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "process.forget", "out of memory");
    goto done;
  }
  args[0] = "-c", args[1] = FORGET_SCRIPT, args[2] = "e2b-forget";
  for (size_t i = 0; i < count; i++) {
    size_t n = strlen(hex[i]) + sizeof E2B_KEPT_ROOT + 1;
    if (!(prefixes[i] = malloc(n))) {
      e2b_err_set(err, E2B_ERR_UNAVAILABLE, "process.forget", "out of memory");
      goto done;
    }
    snprintf(prefixes[i], n, "%s/%s", E2B_KEPT_ROOT, hex[i]);
    args[i + 3] = prefixes[i];
  }
  e2b_proc_opts o = {.cmd = "/bin/sh", .args = args, .arg_count = count + 3, .user = "root"};
  op = e2b_op_new(&forget_kind, NULL, sbx, "process.forget", forget_advance, NULL, err);
  forget_state *f = op ? op->state : NULL;
  if (f && !(f->run = e2b_op_child(op, e2b_proc_start(sbx, &o, err)))) {
    e2b_req_free(op);
    op = NULL;
  }
done:
  for (size_t i = 0; prefixes && i < count; i++) free(prefixes[i]);
  free(prefixes);
  free(args);
  return op;
}

static e2b_req *forget_hex(e2b_sbx *sbx, char *hex, e2b_error *err) {
  return forget_hexes(sbx, &hex, 1, err);
}

e2b_req *e2b_proc_forget(e2b_sbx *sbx, const char *tag, e2b_error *err) {
  e2b_error_clear(err);
  if (!sbx || !tag || !*tag) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "process.forget", "tag is required");
    return NULL;
  }
  char *hex = hex_name(tag);
  e2b_req *op = hex ? forget_hex(sbx, hex, err) : NULL;
  if (!hex) e2b_err_set(err, E2B_ERR_UNAVAILABLE, "process.forget", "out of memory");
  free(hex);
  return op;
}

/* e2b_proc_end_async's command: $1 the wrapper's pid, $2 its files' prefix. */
static const char END_SCRIPT[] =
    "kill -TERM \"$1\" 2>/dev/null; i=0\n"
    "while kill -0 \"$1\" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done\n"
    "rm -f -- \"$2.out\" \"$2.err\" \"$2.exit\"\n";

void e2b_proc_end_async(e2b_sbx *sbx, uint32_t pid, const char *tag) {
  char *prefix = sbx && pid && tag && *tag ? e2b_kept_prefix(tag) : NULL;
  if (!prefix) return;
  char pidstr[16];
  snprintf(pidstr, sizeof pidstr, "%u", pid);
  const char *args[] = {"-c", END_SCRIPT, "e2b-end", pidstr, prefix};
  e2b_proc_opts o = {.cmd = "/bin/sh", .args = args, .arg_count = 5, .user = "root"};
  e2b_error err;
  e2b_req *req = e2b_proc_start(sbx, &o, &err);
  if (req) e2b_req_autofree(req);
  free(prefix);
}

static void forget_now(e2b_sbx *sbx, char *hex) {
  e2b_error err;
  e2b_req *req = forget_hex(sbx, hex, &err);
  if (req) e2b_req_autofree(req);
}

static int queue_hex(e2b_sbx *sbx, char *hex, const char *user, int64_t bytes) {
  if (sbx->forget_count == FORGET_QUEUE_MAX) return -1;
  if (sbx->forget_count == sbx->forget_cap) {
    e2b_forget *f = e2b_grow(sbx->forgets, &sbx->forget_cap, sizeof *f, 16);
    if (!f) return -1;
    sbx->forgets = f;
  }
  char *u = strdup(user && *user ? user : "user");
  if (!u) return -1;
  sbx->forgets[sbx->forget_count++] = (e2b_forget){hex, u, bytes};
  return 0;
}

/* Removes entry i of the large list, keeping the rest in order. */
static void drop_large(e2b_sbx *sbx, size_t i) {
  size_t after = sbx->large_count - i - 1;
  free(sbx->large[i]);
  memmove(sbx->large + i, sbx->large + i + 1, after * sizeof *sbx->large);
  memmove(sbx->large_bytes + i, sbx->large_bytes + i + 1, after * sizeof *sbx->large_bytes);
  sbx->large_count--;
}

static long large_at(const e2b_sbx *sbx, const char *tag) {
  for (size_t i = 0; i < sbx->large_count; i++)
    if (strcmp(sbx->large[i], tag) == 0) return (long)i;
  return -1;
}

int e2b_kept_large(e2b_sbx *sbx, const char *tag, int64_t bytes) {
  if (bytes < FORGET_NOW_BYTES || !tag) return 0;
  long at = large_at(sbx, tag);
  if (at >= 0) { /* its readers saw more */
    if (bytes > sbx->large_bytes[at]) sbx->large_bytes[at] = bytes;
    return 1;
  }
  char *copy = strdup(tag);
  if (!copy) return 0;
  if (sbx->large_count == E2B_LARGE_MAX) drop_large(sbx, 0); /* the oldest waits for a batch */
  sbx->large_bytes[sbx->large_count] = bytes;
  sbx->large[sbx->large_count++] = copy;
  return 1;
}

/* Takes tag off the large list; returns the bytes its readers saw, or 0
 * when it was not on it. */
static int64_t take_large(e2b_sbx *sbx, const char *tag) {
  long at = large_at(sbx, tag);
  if (at < 0) return 0;
  int64_t bytes = sbx->large_bytes[at];
  drop_large(sbx, (size_t)at);
  return bytes;
}

/* The bytes of large output whose names wait on the queue. */
static int64_t urgent_bytes(const e2b_sbx *sbx) {
  int64_t sum = 0;
  for (size_t i = 0; i < sbx->forget_count; i++) sum += sbx->forgets[i].bytes;
  return sum;
}

void e2b_proc_forget_later(e2b_sbx *sbx, const char *tag, const char *user) {
  if (!sbx || !tag || !*tag) return;
  char *hex = hex_name(tag);
  if (!hex) return;
  int64_t bytes = take_large(sbx, tag);
  if (urgent_bytes(sbx) + bytes > FORGET_URGENT_MAX || queue_hex(sbx, hex, user, bytes) != 0) {
    forget_now(sbx, hex);
    free(hex);
  }
}

/* The names a command of user may remove ("a b c"), taken off the queue
 * once FORGET_BATCH of them wait or FORGET_BATCH kept commands started
 * since they began to; NULL when none are taken. Root may remove
 * anyone's files, a user only its own; a root command takes them as soon as
 * one is root's (nobody else may remove it, and root runs fewer commands). */
char *e2b_take_forgets(e2b_sbx *sbx, const char *user) {
  if (!user || !*user) user = "user";
  if (sbx->forget_count) sbx->forget_waited++;
  int root = strcmp(user, "root") == 0, roots = 0, urgent = 0;
  size_t len = 0, kept = 0, count = 0;
  for (size_t i = 0; i < sbx->forget_count; i++) {
    if (!root && strcmp(sbx->forgets[i].user, user) != 0) continue;
    len += strlen(sbx->forgets[i].hex) + 1;
    count++;
    roots |= strcmp(sbx->forgets[i].user, "root") == 0;
    urgent |= sbx->forgets[i].bytes > 0;
  }
  if (!count || (count < FORGET_BATCH && sbx->forget_waited < FORGET_BATCH && !urgent && !(root && roots)))
    return NULL;
  char *names = len ? malloc(len) : NULL;
  if (!names) return NULL;
  size_t n = 0;
  for (size_t i = 0; i < sbx->forget_count; i++) {
    e2b_forget *f = &sbx->forgets[i];
    if (!root && strcmp(f->user, user) != 0) {
      sbx->forgets[kept++] = *f;
      continue;
    }
    size_t hl = strlen(f->hex);
    if (n) names[n++] = ' ';
    memcpy(names + n, f->hex, hl);
    n += hl;
    free(f->hex);
    free(f->user);
  }
  names[n] = 0;
  sbx->forget_count = kept;
  if (!kept) sbx->forget_waited = 0;
  return names;
}

void e2b_forget_unqueue(e2b_sbx *sbx, const char *tag) {
  if (!sbx || (!sbx->forget_count && !sbx->large_count)) return; /* mostly: nothing waits */
  char *hex = tag ? hex_name(tag) : NULL;
  if (!hex) return;
  size_t kept = 0;
  for (size_t i = 0; i < sbx->forget_count; i++) {
    e2b_forget *f = &sbx->forgets[i];
    if (strcmp(f->hex, hex) != 0) {
      sbx->forgets[kept++] = *f;
      continue;
    }
    free(f->hex);
    free(f->user);
  }
  sbx->forget_count = kept;
  take_large(sbx, tag);
  free(hex);
}

/* A command that never started removes nothing: its names go back. */
void e2b_return_forgets(e2b_sbx *sbx, const char *names, const char *user) {
  const char *p = names;
  while (p && *p) {
    size_t l = strcspn(p, " ");
    char *hex = strndup(p, l);
    if (hex && queue_hex(sbx, hex, user, 0) != 0) {
      forget_now(sbx, hex);
      free(hex);
    }
    p += l + (p[l] == ' ');
  }
}

/* What is still queued goes in one request, all users' names at once
 * (root removes them). */
static void clear_forgets(e2b_sbx *sbx, int send) {
  if (!sbx) return;
  char **hex = send && sbx->forget_count ? malloc(sbx->forget_count * sizeof *hex) : NULL;
  for (size_t i = 0; hex && i < sbx->forget_count; i++) hex[i] = sbx->forgets[i].hex;
  e2b_error err;
  e2b_req *req = hex ? forget_hexes(sbx, hex, sbx->forget_count, &err) : NULL;
  if (req) e2b_req_autofree(req);
  free(hex);
  for (size_t i = 0; i < sbx->forget_count; i++) {
    free(sbx->forgets[i].hex);
    free(sbx->forgets[i].user);
  }
  sbx->forget_count = 0;
  sbx->forget_waited = 0;
}

/* A sandbox known gone (gone.c) has no files left to remove. */
void e2b_sbx_flush_forgets(e2b_sbx *sbx) { clear_forgets(sbx, sbx && !sbx->gone.code); }
void e2b_sbx_drop_forgets(e2b_sbx *sbx) { clear_forgets(sbx, 0); }
