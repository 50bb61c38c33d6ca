/* fork.c — a fork with an identity of its own (docs/manual.md, "Forks").
 *
 * E2B's fork route boots every fork from the parent's snapshot, and the
 * snapshot keeps the parent's metadata; the route takes no metadata. Each
 * fork would so carry the parent's logical id and owner, and the logical id
 * would name several sandboxes (describe, resume and destroy: conflict).
 * E2B's create from a snapshot takes the request's metadata alone, so a fork
 * here is: read the parent, snapshot it in place (it goes on running), and
 * create count sandboxes from that snapshot with the parent's settings and
 * caller metadata, this client's owner and the fork's lifetime, and no
 * logical id (a fork's logical id is its sandbox id). All or nothing: when a
 * fork does not start, those that did are killed and the snapshot deleted. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FORK_READ, FORK_SNAPSHOT, FORK_CREATE, FORK_UNDO, FORK_DROP };

typedef struct fork_state {
  e2b_client *client;
  char *sandbox_id;
  long timeout_ms;
  int count;
  int stage;
  e2b_req *child;
  e2b_sandbox_info parent; /* as read; its metadata backs meta[] */
  int have_parent;
  json_t *extra;           /* the parent's network and volume mounts, sent as read */
  int allow_internet;      /* E2B_DEFAULT when not reported, else E2B_YES or E2B_NO */
  e2b_kv *meta;            /* the forks' metadata: borrowed strings, owned array */
  size_t meta_n;
  char timeout_text[24];
  char *snapshot_id;
  size_t killed;           /* undo: started forks killed so far */
  e2b_error failure;       /* undo: why, reported once they are all killed */
} fork_state;

static void fork_release(void *p) {
  fork_state *s = p;
  if (s->have_parent) e2b_sandbox_info_clear(&s->parent);
  json_decref(s->extra);
  free(s->meta);
}

static void fail(e2b_req *op, e2b_code code, const char *msg) {
  e2b_error err;
  e2b_err_set(&err, code, op->op, "%s", msg);
  e2b_op_finish(op, &err);
}

/* The parent's settings a create can say again; -1 (op finished) for one
 * it cannot: an egress proxy, whose password E2B never gives back. */
static int take_settings(e2b_req *op, fork_state *s, json_t *detail) {
  json_t *net = json_object_get(detail, "network");
  json_t *mounts = json_object_get(detail, "volumeMounts");
  json_t *inet = json_object_get(detail, "allowInternetAccess");
  json_t *proxy = json_object_get(net, "egressProxy");
  if (proxy && !json_is_null(proxy))
    return fail(op, E2B_ERR_UNSUPPORTED, "the sandbox sends through an egress proxy, whose password "
                                         "E2B does not give back: a fork cannot have it"), -1;
  s->allow_internet = !json_is_boolean(inet) ? E2B_DEFAULT : json_is_true(inet) ? E2B_YES : E2B_NO;
  if (!(s->extra = json_object())) return fail(op, E2B_ERR_UNAVAILABLE, "out of memory"), -1;
  if (json_is_object(net)) json_object_set(s->extra, "network", net);
  if (json_array_size(mounts)) json_object_set(s->extra, "volumeMounts", mounts);
  return 0;
}

/* The forks' metadata: the parent's own keys, never lua-e2b's (its logical
 * id names the parent), then this client's owner and the fork's lifetime. */
static int build_meta(fork_state *s) {
  const e2b_map *m = &s->parent.metadata;
  if (!(s->meta = calloc(m->count + 2, sizeof *s->meta))) return -1;
  size_t prefix = strlen(E2B_META_PREFIX);
  for (size_t i = 0; i < m->count; i++)
    if (strncmp(m->keys[i], E2B_META_PREFIX, prefix) != 0)
      s->meta[s->meta_n++] = (e2b_kv){m->keys[i], m->values[i]};
  if (s->client->owner) s->meta[s->meta_n++] = (e2b_kv){E2B_META_OWNER, s->client->owner};
  snprintf(s->timeout_text, sizeof s->timeout_text, "%ld", s->timeout_ms);
  s->meta[s->meta_n++] = (e2b_kv){E2B_META_TIMEOUT, s->timeout_text};
  return 0;
}

/* The parent as read: a running sandbox whose settings a fork can have. */
static void read_done(e2b_req *op, fork_state *s) {
  e2b_req *r = s->child;
  if (e2b_take_sandbox(r, &s->parent) != 0)
    return fail(op, E2B_ERR_PROTOCOL, "the sandbox's description names no sandbox");
  s->have_parent = 1;
  if (s->parent.state == E2B_STATE_PAUSED)
    return fail(op, E2B_ERR_CONFLICT, "the sandbox is paused and cannot be forked; resume it first");
  if (take_settings(op, s, e2b_sandboxes_in(r)->detail) != 0) return;
  if (build_meta(s) != 0) return fail(op, E2B_ERR_UNAVAILABLE, "out of memory");
  char name[128];
  snprintf(name, sizeof name, "lua-e2b-fork-%.64s-%lld", s->sandbox_id, (long long)e2b_wall_ms());
  e2b_req_free(s->child);
  e2b_error err;
  s->stage = FORK_SNAPSHOT;
  s->child = e2b_op_child(op, e2b_snapshot_create(s->client, s->sandbox_id, name, &err));
  if (!s->child) e2b_op_finish(op, &err);
}

static e2b_req *create_one(fork_state *s, e2b_error *err) {
  int pause = s->parent.on_timeout && strcmp(s->parent.on_timeout, "pause") == 0;
  e2b_create_opts o = {
      .template_id = s->snapshot_id, .timeout_ms = s->timeout_ms,
      .secure = s->parent.envd_access_token ? E2B_YES : E2B_NO, .allow_internet_access = s->allow_internet,
      .metadata = s->meta, .metadata_count = s->meta_n, .auto_pause = pause ? E2B_YES : E2B_DEFAULT,
      .auto_resume = pause && s->parent.auto_resume == 1 ? E2B_YES : E2B_DEFAULT,
  };
  return e2b_create_with(s->client, &o, s->extra, err);
}

/* The undo: kill the forks that started, one by one, then drop the
 * snapshot (whatever that answers: the failure is what is reported). */
static void undo(e2b_req *op, fork_state *s) {
  e2b_error err;
  if (s->child) {
    if (!e2b_req_done(s->child)) return;
    e2b_req_free(s->child);
    s->child = NULL;
    if (s->stage == FORK_DROP) return e2b_op_finish(op, &s->failure);
    s->killed++;
  }
  if (s->killed < e2b_req_sandbox_count(op)) {
    s->child = e2b_op_child(op, e2b_sandbox_kill(s->client, e2b_req_sandbox_at(op, s->killed)->sandbox_id, &err));
    if (!s->child) s->killed++, e2b_op_kick(op); /* could not even ask: go on with the rest */
    return;
  }
  s->stage = FORK_DROP;
  if (s->snapshot_id) s->child = e2b_op_child(op, e2b_snapshot_delete(s->client, s->snapshot_id, &err));
  if (!s->child) e2b_op_finish(op, &s->failure);
}

static void start_undo(e2b_req *op, fork_state *s, const e2b_error *why) {
  s->failure = *why;
  snprintf(s->failure.op, sizeof s->failure.op, "%s", op->op);
  size_t started = e2b_req_sandbox_count(op);
  if (started) {
    char detail[E2B_ERROR_SIZE];
    snprintf(detail, sizeof detail, "%s", why->message);
    snprintf(s->failure.message, sizeof s->failure.message,
             "fork %zu of %d did not start (%.300s); the %zu that did were killed", started + 1,
             s->count, detail, started);
  }
  e2b_req_free(s->child);
  s->child = NULL;
  s->stage = FORK_UNDO;
  undo(op, s);
}

/* One more fork started (or the snapshot made): the next, or done. */
static void create_next(e2b_req *op, fork_state *s) {
  e2b_error err;
  if (s->stage == FORK_SNAPSHOT) {
    const e2b_snapshot *snap = e2b_req_snapshot_at(s->child, 0);
    if (!snap || !(s->snapshot_id = strdup(snap->snapshot_id)))
      return fail(op, E2B_ERR_PROTOCOL, "the snapshot answer names no snapshot");
    s->stage = FORK_CREATE;
  } else if (e2b_take_sandboxes(op, s->child) != 0) {
    e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
    return start_undo(op, s, &err);
  }
  e2b_req_free(s->child);
  s->child = NULL;
  if (e2b_req_sandbox_count(op) == (size_t)s->count) return e2b_op_finish(op, NULL);
  if (!(s->child = e2b_op_child(op, create_one(s, &err)))) start_undo(op, s, &err);
}

static void fork_advance(e2b_req *op) {
  fork_state *s = op->state;
  e2b_error err;
  if (s->stage >= FORK_UNDO) return undo(op, s);
  if (!s->child) {
    s->child = e2b_op_child(op, e2b_api_detail(s->client, s->sandbox_id, &err));
    if (!s->child) e2b_op_finish(op, &err);
    return;
  }
  if (!e2b_req_done(s->child)) return;
  const e2b_error *cerr = e2b_req_error(s->child);
  if (cerr && s->stage == FORK_CREATE) return start_undo(op, s, cerr);
  if (cerr) {
    e2b_error why = *cerr; /* the fork failed, whichever of its calls said so */
    snprintf(why.op, sizeof why.op, "%s", op->op);
    return e2b_op_finish(op, &why);
  }
  if (s->stage == FORK_READ) return read_done(op, s);
  create_next(op, s);
}

#define FORK_AT(f) offsetof(fork_state, f)
static const e2b_op_kind fork_kind = {.size = sizeof(fork_state), .release = fork_release,
                                      .children = E2B_FIELDS(FORK_AT(child)),
                                      .allocs = E2B_FIELDS(FORK_AT(sandbox_id), FORK_AT(snapshot_id)),
                                      .holds = E2B_OP_HOLDS_CLIENT, .ref = FORK_AT(client),
                                      .key = FORK_AT(sandbox_id)};

e2b_req *e2b_sandbox_fork(e2b_client *c, const char *sandbox_id, long timeout_ms, int count,
                          e2b_error *err) {
  e2b_error_clear(err);
  if (!c || !sandbox_id || !*sandbox_id) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "fork", "sandbox_id is required");
    return NULL;
  }
  if (count < 1 || count > 100 || timeout_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "fork", count < 1 || count > 100
                    ? "count must be between 1 and 100" : "timeout_ms must not be negative");
    return NULL;
  }
  e2b_req *op = e2b_op_new(&fork_kind, c, NULL, "fork", fork_advance, sandbox_id, err);
  if (!op) return NULL;
  fork_state *s = op->state;
  /* the SDKs' default, not E2B's 15 s: a fork is a sandbox to work in */
  s->timeout_ms = timeout_ms ? timeout_ms : E2B_DEFAULT_SANDBOX_TIMEOUT_MS;
  s->count = count;
  e2b_error_clear(&s->failure);
  return e2b_req_typed(op, E2B_RESULT_SANDBOXES);
}
