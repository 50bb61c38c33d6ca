/* startq.c — how many process starts wait for their answer at once.
 *
 * A kept command's Start request carries the wrapper script (with its
 * headers about 3.3 KB) and a curl transfer, and a burst of spawns (10,000
 * tasks each calling spawn before the loop steps once) would hold all of
 * them together while the server answers a few hundred a second: freed once
 * answered, they leave holes, not a lower peak. So at most
 * E2B_STARTS_IN_FLIGHT starts wait for their start event; later ones wait
 * here holding a copy of their options, and each answered start hands its
 * slot to the first of them. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static char *dup_or_null(const char *s, int *failed) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *failed = 1;
  return d;
}

e2b_proc_opts *e2b_proc_opts_dup(const e2b_proc_opts *o) {
  e2b_proc_opts *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  *d = *o;
  d->args = NULL;
  d->env = NULL;
  int failed = 0;
  d->cmd = dup_or_null(o->cmd, &failed);
  d->shell = dup_or_null(o->shell, &failed);
  d->cwd = dup_or_null(o->cwd, &failed);
  d->user = dup_or_null(o->user, &failed);
  d->tag = dup_or_null(o->tag, &failed);
  char **args = o->arg_count ? calloc(o->arg_count, sizeof *args) : NULL;
  if (o->arg_count && !args) failed = 1;
  for (size_t i = 0; args && i < o->arg_count; i++) args[i] = dup_or_null(o->args[i], &failed);
  d->args = (const char *const *)args;
  e2b_kv *env = NULL;
  if (e2b_kv_dup(&env, o->env, o->env_count) != 0) failed = 1;
  d->env = env;
  if (failed) {
    e2b_proc_opts_free(d);
    return NULL;
  }
  return d;
}

void e2b_proc_opts_free(e2b_proc_opts *o) {
  if (!o) return;
  free((char *)o->cmd);
  free((char *)o->shell);
  free((char *)o->cwd);
  free((char *)o->user);
  free((char *)o->tag);
  for (size_t i = 0; o->args && i < o->arg_count; i++) free((char *)o->args[i]);
  free((void *)o->args);
  e2b_kv_free((e2b_kv *)o->env, o->env ? o->env_count : 0);
  free(o);
}

int e2b_startq_take(e2b_loop *loop, e2b_start_wait *w) {
  if (w->slot) return 1;
  if (!w->queued && loop->starts < E2B_STARTS_IN_FLIGHT) {
    loop->starts++;
    w->slot = 1;
    return 1;
  }
  if (!w->queued) {
    w->queued = 1;
    w->next = NULL;
    w->prev = loop->start_tail;
    if (loop->start_tail)
      loop->start_tail->next = w;
    else
      loop->start_head = w;
    loop->start_tail = w;
  }
  return 0;
}

static void unlink_waiter(e2b_loop *loop, e2b_start_wait *w) {
  if (w->prev)
    w->prev->next = w->next;
  else
    loop->start_head = w->next;
  if (w->next)
    w->next->prev = w->prev;
  else
    loop->start_tail = w->prev;
  w->prev = w->next = NULL;
  w->queued = 0;
}

void e2b_startq_release(e2b_loop *loop, e2b_start_wait *w) {
  if (w->queued) unlink_waiter(loop, w);
  if (!w->slot) return;
  w->slot = 0;
  e2b_start_wait *next = loop->start_head;
  if (!next) {
    loop->starts--;
    return;
  }
  unlink_waiter(loop, next); /* the slot passes on: starts stays the same */
  next->slot = 1;
  e2b_op_kick(next->op);
}
