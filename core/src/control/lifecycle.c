/* lifecycle.c — lua-e2b's rules (docs/manual.md) over the raw control-plane calls:
 * find through every page, describe without resuming, attach without
 * shortening a deadline, resume by logical id, idempotent destroy, a pause
 * that never pretends, extend-only keep-alive and reaping by owner. Each is
 * a composite request (op.c): a small state machine over child calls. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- shared helpers ---- */

int64_t e2b_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Moves src's sandbox results to the end of dst's. */
int e2b_take_sandboxes(e2b_req *dst, e2b_req *src) {
  e2b_sandbox_set *from = e2b_sandboxes_in(src)->count ? e2b_sandboxes(src) : NULL, *to;
  if (!from) return 0;
  if (!(to = e2b_sandboxes(dst))) return -1;
  e2b_sandbox_info *p = realloc(to->items, (to->count + from->count) * sizeof *p);
  if (!p) return -1;
  to->items = p;
  memcpy(p + to->count, from->items, from->count * sizeof *p);
  to->count += from->count;
  free(from->items);
  from->items = NULL;
  from->count = 0;
  return 0;
}

int e2b_take_sandbox(e2b_req *req, e2b_sandbox_info *out) {
  e2b_sandbox_set *l = e2b_sandboxes_in(req)->count ? e2b_sandboxes(req) : NULL;
  if (!l) return -1;
  *out = l->items[0];
  memset(&l->items[0], 0, sizeof *out);
  l->count = 0; /* the rest (a list's) is cleared with the request */
  return 0;
}

static void nomem(e2b_req *op) {
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
  e2b_op_finish(op, &err);
}

/* Takes a finished child: on failure finishes op with its error and
 * returns -1 (the child is freed either way unless kept). */
static int child_failed(e2b_req *op, e2b_req **child) {
  const e2b_error *err = e2b_req_error(*child);
  if (!err) return 0;
  e2b_op_finish(op, err);
  e2b_req_free(*child);
  *child = NULL;
  return -1;
}

/* A finished kill's failure, if any: a sandbox already gone counts as
 * killed (the one place that says so; destroy, end and reap ask it). */
static const e2b_error *kill_failure(const e2b_req *kill) {
  const e2b_error *kerr = e2b_req_error(kill);
  return kerr && kerr->code != E2B_ERR_NOT_FOUND ? kerr : NULL;
}

/* ---- find: every page ---- */

typedef struct find_state {
  e2b_client *client;
  e2b_kv *metadata; /* owned */
  size_t metadata_n;
  unsigned states;
  char *template_id; /* owned; the filters each page carries */
  int64_t started_after_ms;
  int order;
  e2b_req *child;
  char *token;
  int pages;
} find_state;

static void find_advance(e2b_req *op) {
  find_state *s = op->state;
  if (s->child) {
    if (!e2b_req_done(s->child)) return;
    if (child_failed(op, &s->child)) return;
    if (e2b_take_sandboxes(op, s->child) != 0) return nomem(op);
    e2b_sandbox_set *page = e2b_sandboxes(s->child);
    free(s->token);
    s->token = page ? page->next_token : NULL;
    if (page) page->next_token = NULL;
    e2b_req_free(s->child);
    s->child = NULL;
    if (!s->token) return e2b_op_finish(op, NULL);
    if (++s->pages > 100000) {
      e2b_error err;
      e2b_err_set(&err, E2B_ERR_PROTOCOL, op->op, "pagination does not end");
      return e2b_op_finish(op, &err);
    }
  }
  e2b_list_opts lo = {.metadata = s->metadata,
                      .metadata_count = s->metadata_n,
                      .states = s->states,
                      .limit = s->client->page_size,
                      .next_token = s->token,
                      .template_id = s->template_id,
                      .started_after_ms = s->started_after_ms,
                      .order = s->order};
  e2b_error err;
  s->child = e2b_op_child(op, e2b_sandbox_list(s->client, &lo, &err));
  if (!s->child) e2b_op_finish(op, &err);
}

#define FIND_AT(f) offsetof(find_state, f)
static const e2b_op_kind find_kind = {.size = sizeof(find_state), .children = E2B_FIELDS(FIND_AT(child)),
                                      .kvs = E2B_FIELDS(FIND_AT(metadata), FIND_AT(metadata_n)),
                                      .allocs = E2B_FIELDS(FIND_AT(token), FIND_AT(template_id)),
                                      .holds = E2B_OP_HOLDS_CLIENT, .ref = FIND_AT(client)};

e2b_req *e2b_sandbox_find(e2b_client *c, const e2b_list_opts *o, e2b_error *err) {
  static const e2b_list_opts defaults = {0};
  e2b_error_clear(err);
  if (!o) o = &defaults;
  /* Validate as the page call will, before anything starts. */
  if (o->states & ~(E2B_LIST_RUNNING | E2B_LIST_PAUSED)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "list", "state: unknown state bit");
    return NULL;
  }
  if (e2b_list_filters_check(o, "list", err) != 0) return NULL;
  e2b_req *op = e2b_op_new(&find_kind, c, NULL, "list", find_advance, NULL, err);
  if (!op) return NULL;
  find_state *s = op->state;
  if (e2b_kv_dup(&s->metadata, o->metadata, o->metadata_count) != 0) return e2b_op_nomem(op, err);
  s->metadata_n = o->metadata_count;
  s->states = o->states;
  if (o->template_id && !(s->template_id = strdup(o->template_id))) return e2b_op_nomem(op, err);
  s->started_after_ms = o->started_after_ms;
  s->order = o->order;
  return e2b_req_typed(op, E2B_RESULT_SANDBOXES);
}

static e2b_req *find_by_meta(e2b_req *op, e2b_client *c, const char *key, const char *value,
                             e2b_error *err) {
  e2b_kv kv = {key, value};
  e2b_list_opts lo = {.metadata = &kv, .metadata_count = 1};
  return e2b_op_child(op, e2b_sandbox_find(c, &lo, err));
}

/* ---- describe ---- */

typedef struct id_state {
  e2b_client *client;
  char *id;          /* logical or provider id as given */
  char *sandbox_id;  /* resolved provider id */
  long timeout_ms;
  int stage;
  e2b_req *child;
  int64_t end_at_ms; /* attach: the deadline seen before connecting */
  e2b_sandbox_info info;  /* attach: metadata kept across the connect */
  int have_info;
  int fallback;      /* attach: the connect route answered 404, read first */
  long lifetime_ms;  /* attach: a resumed sandbox's created lifetime, to restore */
  long known_ms;     /* attach: the created lifetime of a sandbox the caller knows paused */
  int memory;        /* pause */
  int polls;
  int detailed;      /* describe: op's sandbox came from a get (network included) */
} id_state;

static void id_release(void *p) {
  id_state *s = p;
  if (s->have_info) e2b_sandbox_info_clear(&s->info);
}

#define ID_AT(f) offsetof(id_state, f)
static const e2b_op_kind id_kind = {.size = sizeof(id_state), .release = id_release,
                                    .children = E2B_FIELDS(ID_AT(child)),
                                    .allocs = E2B_FIELDS(ID_AT(id), ID_AT(sandbox_id)),
                                    .holds = E2B_OP_HOLDS_CLIENT, .ref = ID_AT(client), .key = ID_AT(id)};

static e2b_req *id_op(e2b_client *c, const char *opname, const char *id, long timeout_ms,
                      req_advance_fn advance, e2b_error *err) {
  e2b_error_clear(err);
  if (!c || !id || !*id) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, opname, "id is required");
    return NULL;
  }
  if (timeout_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, opname, "timeout_ms must not be negative");
    return NULL;
  }
  if (!e2b_utf8_valid(id, strlen(id))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, opname, "id is not valid UTF-8");
    return NULL;
  }
  e2b_req *op = e2b_op_new(&id_kind, c, NULL, opname, advance, id, err);
  if (op) ((id_state *)op->state)->timeout_ms = timeout_ms;
  return op;
}

static void conflict(e2b_req *op, size_t n, const char *id) {
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_CONFLICT, op->op, "%zu sandboxes carry id \"%s\"; refusing to choose one",
              n, id);
  e2b_op_finish(op, &err);
}

/* No sandbox carries id as its logical id. An id E2B would refuse as a
 * sandbox id (400) names no sandbox either: known not to exist, without
 * asking. Returns 1 when op finished so. */
static int unknown_id(e2b_req *op, const char *id) {
  if (e2b_sandbox_id_len(id)) return 0;
  e2b_error err;
  e2b_err_set(&err, E2B_ERR_NOT_FOUND, op->op, "no sandbox has id \"%.200s\"", id);
  e2b_op_finish(op, &err);
  return 1;
}

/* Stage machine shared by describe and destroy: resolve id to one sandbox. */
enum { RESOLVE_FIND = 0, RESOLVE_INFO, RESOLVED };

/* Returns 1 once op holds exactly one sandbox (its result's first), 0 while
 * working, -1 when op finished (with an error or, for tolerate_missing,
 * with s->stage = RESOLVED and no sandbox). */
static int resolve(e2b_req *op, id_state *s) {
  e2b_error err;
  if (s->stage == RESOLVE_FIND) {
    if (!s->child) {
      s->child = find_by_meta(op, s->client, E2B_META_ID, s->id, &err);
      if (!s->child) return e2b_op_finish(op, &err), -1;
      return 0;
    }
    if (!e2b_req_done(s->child)) return 0;
    if (child_failed(op, &s->child)) return -1;
    size_t n = e2b_req_sandbox_count(s->child);
    if (n > 1) return conflict(op, n, s->id), -1;
    if (n == 1) {
      if (e2b_take_sandboxes(op, s->child) != 0) return nomem(op), -1;
      e2b_req_free(s->child);
      s->child = NULL;
      s->stage = RESOLVED;
      return 1;
    }
    e2b_req_free(s->child);
    s->child = NULL;
    if (unknown_id(op, s->id)) return -1;
    s->stage = RESOLVE_INFO;
  }
  if (s->stage == RESOLVE_INFO) {
    if (!s->child) {
      s->child = e2b_op_child(op, e2b_sandbox_get(s->client, s->id, &err));
      if (!s->child) return e2b_op_finish(op, &err), -1;
      return 0;
    }
    if (!e2b_req_done(s->child)) return 0;
    if (child_failed(op, &s->child)) return -1;
    if (e2b_take_sandboxes(op, s->child) != 0) return nomem(op), -1;
    e2b_req_free(s->child);
    s->child = NULL;
    s->stage = RESOLVED;
    s->detailed = 1;
    return 1;
  }
  return e2b_req_sandbox_count(op) ? 1 : 0;
}

enum { DESCRIBE_DETAIL = 20 };

/* A sandbox found by its logical id was described by a list, which leaves
 * its network out: a get's description replaces it. When the get fails
 * (the sandbox went in between), the list's description stands. */
static void describe_advance(e2b_req *op) {
  id_state *s = op->state;
  e2b_error err;
  if (s->stage != DESCRIBE_DETAIL) {
    if (resolve(op, s) != 1) return;
    if (s->detailed) return e2b_op_finish(op, NULL);
    s->stage = DESCRIBE_DETAIL;
    s->child = e2b_op_child(op, e2b_sandbox_get(s->client, e2b_req_sandbox(op)->sandbox_id, &err));
    if (!s->child) return e2b_op_finish(op, NULL);
    return;
  }
  if (!e2b_req_done(s->child)) return;
  if (!e2b_req_error(s->child) && e2b_req_sandbox_count(s->child) == 1) {
    /* the get's description, network included, replaces the list's */
    e2b_sandbox_info *mine = e2b_sandboxes(op)->items, *got = e2b_sandboxes(s->child)->items;
    e2b_sandbox_info listed = mine[0];
    mine[0] = got[0];
    got[0] = listed;
  }
  e2b_req_free(s->child);
  s->child = NULL;
  e2b_op_finish(op, NULL);
}

e2b_req *e2b_sandbox_describe(e2b_client *c, const char *id, e2b_error *err) {
  return e2b_req_typed(id_op(c, "describe", id, 0, describe_advance, err), E2B_RESULT_SANDBOX);
}

/* ---- destroy ---- */

enum { DESTROY_KILL = 10 };

static void destroy_advance(e2b_req *op) {
  id_state *s = op->state;
  e2b_error err;
  if (s->stage < RESOLVED) {
    int r = resolve(op, s);
    if (r == 0) return;
    if (r < 0) {
      /* Nothing to destroy is destroyed. */
      if (op->err.code == E2B_ERR_NOT_FOUND) {
        e2b_error_clear(&op->err);
      }
      return;
    }
    s->stage = DESTROY_KILL;
  }
  if (!s->child) {
    s->child = e2b_op_child(op, e2b_sandbox_kill(s->client, e2b_req_sandbox(op)->sandbox_id, &err));
    if (!s->child) return e2b_op_finish(op, &err);
    return;
  }
  if (!e2b_req_done(s->child)) return;
  e2b_op_finish(op, kill_failure(s->child));
}

e2b_req *e2b_sandbox_destroy(e2b_client *c, const char *id, e2b_error *err) {
  return id_op(c, "destroy", id, 0, destroy_advance, err);
}

/* ---- end: the kill of a known sandbox id ---- */

static void end_advance(e2b_req *op) {
  id_state *s = op->state;
  e2b_error err;
  if (!s->child) {
    s->child = e2b_op_child(op, e2b_sandbox_kill(s->client, s->id, &err));
    if (!s->child) e2b_op_finish(op, &err);
    return;
  }
  if (e2b_req_done(s->child)) e2b_op_finish(op, kill_failure(s->child));
}

e2b_req *e2b_sandbox_end(e2b_client *c, const char *sandbox_id, e2b_error *err) {
  return id_op(c, "kill", sandbox_id, 0, end_advance, err);
}

/* ---- attach: connect without shortening ---- */

enum { ATTACH_START = 20, ATTACH_INFO, ATTACH_CONNECT, ATTACH_REINFO, ATTACH_RESUME, ATTACH_EXTEND,
       ATTACH_DETAIL, ATTACH_LIFETIME };

/* The lifetime the sandbox was created with (E2B_META_TIMEOUT), or 0. */
static long created_lifetime(const e2b_map *m) {
  for (size_t i = 0; i < m->count; i++) {
    if (strcmp(m->keys[i], E2B_META_TIMEOUT) != 0) continue;
    char *end;
    long v = strtol(m->values[i], &end, 10);
    return *end == '\0' && v > 0 ? v : 0;
  }
  return 0;
}

/* Never shortens: a running sandbox keeps what it has left, a paused one
 * gets at least the lifetime it was created with. */
static long attach_timeout(const id_state *s) {
  long want = s->timeout_ms ? s->timeout_ms : E2B_DEFAULT_SANDBOX_TIMEOUT_MS;
  if (!s->have_info && s->known_ms > want) want = s->known_ms;
  if (s->info.state == E2B_STATE_RUNNING && s->info.end_at_ms) {
    int64_t left = s->info.end_at_ms - e2b_wall_ms();
    if (left > want) want = (long)left;
  } else if (s->info.state != E2B_STATE_RUNNING) {
    long created = created_lifetime(&s->info.metadata);
    if (created > want) want = created;
  }
  return want;
}

/* Where E2B has no connect route (built from e2b-dev/infra before it had
 * one: 404), a paused sandbox is resumed by /resume and a running one kept
 * as it is, its deadline only extended, then read again (which gives its
 * access token too). Returns the stage that does so for this failure, or 0. */
static int connect_fallback(id_state *s, const e2b_error *err) {
  if (s->stage == ATTACH_CONNECT && (err->status == 404 || err->status == 405) &&
      s->client->connect_route != E2B_CONNECT_ROUTE) {
    if (!s->have_info) { /* connected first: read it, then choose */
      s->fallback = 1;
      return ATTACH_INFO;
    }
    return s->info.state == E2B_STATE_PAUSED ? ATTACH_RESUME : ATTACH_EXTEND;
  }
  if (s->stage == ATTACH_RESUME && err->status == 409) return ATTACH_EXTEND; /* running after all */
  return 0;
}

static e2b_req *attach_call(id_state *s, e2b_error *err) {
  const char *id = s->sandbox_id ? s->sandbox_id : s->id;
  if (s->stage == ATTACH_CONNECT && s->client->connect_route == E2B_CONNECT_RESUME)
    s->stage = s->info.state == E2B_STATE_PAUSED ? ATTACH_RESUME : ATTACH_EXTEND;
  switch (s->stage) {
  case ATTACH_CONNECT: return e2b_sandbox_connect(s->client, id, attach_timeout(s), err);
  case ATTACH_RESUME: return e2b_api_resume(s->client, id, attach_timeout(s), err);
  case ATTACH_EXTEND: return e2b_sandbox_set_timeout(s->client, id, attach_timeout(s), err);
  case ATTACH_LIFETIME: return e2b_sandbox_set_timeout(s->client, id, s->lifetime_ms, err);
  default: return e2b_sandbox_get(s->client, id, err);
  }
}

/* The connect's answer (or resume's, or the detail read after an extend). */
static void attach_connected(e2b_req *op, id_state *s) {
  if (s->stage != ATTACH_CONNECT) s->client->connect_route = E2B_CONNECT_RESUME;
  else s->client->connect_route = E2B_CONNECT_ROUTE;
  if (e2b_take_sandboxes(op, s->child) != 0) return nomem(op);
  e2b_sandboxes(op)->resumed = e2b_req_resumed(s->child);
}

/* Refresh state, deadline and metadata (the read before the connect's when
 * there was one); keep the connect answer's token and domain. A sandbox the
 * connect resumed with less than the lifetime it was created with (known
 * only now, from its metadata) gets that lifetime back: ATTACH_LIFETIME. */
static int attach_reinfo(e2b_req *op, id_state *s, e2b_sandbox_info *got) {
  e2b_sandbox_info *res = &e2b_sandboxes(op)->items[0];
  res->state = got->state;
  res->started_at_ms = got->started_at_ms;
  res->end_at_ms = got->end_at_ms;
  e2b_map *keep = s->have_info ? &s->info.metadata : &got->metadata;
  e2b_map m = res->metadata;
  res->metadata = *keep;
  *keep = m;
  if (!res->template_id && got->template_id) res->template_id = strdup(got->template_id);
  long created = created_lifetime(&res->metadata);
  if (s->have_info || !e2b_sandboxes(op)->resumed || created <= attach_timeout(s)) return 0;
  s->lifetime_ms = created;
  return ATTACH_LIFETIME;
}

/* Whether the connect's answer (id, envd version, token, domain) is the
 * whole result. A running sandbox (200) keeps its deadline and needs
 * nothing more: its state is running, its metadata unknown (describe reads
 * it). A resumed one (201) needs its created lifetime, unless it was known
 * and asked for in the connect. A resume's search brought the metadata. */
static int attach_settled(e2b_req *op, id_state *s) {
  e2b_sandbox_info *res = &e2b_sandboxes(op)->items[0];
  if (s->have_info) {
    res->end_at_ms = e2b_wall_ms() + attach_timeout(s); /* what the connect asked for */
    e2b_map m = res->metadata;
    res->metadata = s->info.metadata;
    s->info.metadata = m;
    if (!res->template_id && s->info.template_id) res->template_id = strdup(s->info.template_id);
    res->state = E2B_STATE_RUNNING;
    return 1;
  }
  return !e2b_sandboxes(op)->resumed || s->known_ms > 0;
}

static void attach_advance(e2b_req *op) {
  id_state *s = op->state;
  e2b_error err;
  /* E2B's connect never shortens a running sandbox's deadline: connect
   * first, read after. Only where connect is known missing, read first. */
  if (s->stage < ATTACH_INFO)
    s->stage = s->client->connect_route == E2B_CONNECT_RESUME ? ATTACH_INFO : ATTACH_CONNECT;
  if (!s->child) {
    s->child = e2b_op_child(op, attach_call(s, &err));
    if (!s->child) e2b_op_finish(op, &err);
    return;
  }
  if (!e2b_req_done(s->child)) return;
  const e2b_error *cerr = e2b_req_error(s->child);
  int next = cerr ? connect_fallback(s, cerr) : 0;
  if (next) {
    s->stage = next;
  } else if (!child_failed(op, &s->child)) {
    e2b_sandbox_info *got = e2b_req_sandbox_count(s->child) ? &e2b_sandboxes(s->child)->items[0] : NULL;
    if (!got && s->stage != ATTACH_EXTEND && s->stage != ATTACH_LIFETIME) return nomem(op);
    switch (s->stage) {
    case ATTACH_INFO:
      /* a resume's search may have filled it already: this read is fresher */
      if (s->have_info) e2b_sandbox_info_clear(&s->info);
      e2b_take_sandbox(s->child, &s->info); /* keep the metadata and the deadline */
      s->have_info = 1;
      s->stage = !s->fallback ? ATTACH_CONNECT
                 : s->info.state == E2B_STATE_PAUSED ? ATTACH_RESUME : ATTACH_EXTEND;
      break;
    case ATTACH_EXTEND: s->stage = ATTACH_DETAIL; break;
    case ATTACH_LIFETIME:
      e2b_sandboxes(op)->items[0].end_at_ms = e2b_wall_ms() + s->lifetime_ms;
      e2b_req_free(s->child);
      s->child = NULL;
      return e2b_op_finish(op, NULL);
    case ATTACH_REINFO:
      s->stage = attach_reinfo(op, s, got);
      if (s->stage) break;
      e2b_req_free(s->child);
      s->child = NULL;
      return e2b_op_finish(op, NULL);
    default: /* connect, resume, detail: the answer carries the access token */
      attach_connected(op, s);
      if (op->done) return;
      if (s->stage == ATTACH_DETAIL) { /* itself the fresh read */
        e2b_req_free(s->child);
        s->child = NULL;
        return e2b_op_finish(op, NULL);
      }
      if (s->stage == ATTACH_CONNECT && attach_settled(op, s)) {
        e2b_req_free(s->child);
        s->child = NULL;
        return e2b_op_finish(op, NULL);
      }
      s->stage = ATTACH_REINFO;
    }
  } else {
    return;
  }
  e2b_req_free(s->child);
  s->child = NULL;
  attach_advance(op);
}

e2b_req *e2b_sandbox_attach(e2b_client *c, const char *sandbox_id, long timeout_ms,
                            e2b_error *err) {
  return e2b_sandbox_attach_paused(c, sandbox_id, timeout_ms, 0, err);
}

e2b_req *e2b_sandbox_attach_paused(e2b_client *c, const char *sandbox_id, long timeout_ms,
                                   long lifetime_ms, e2b_error *err) {
  if (lifetime_ms < 0) {
    e2b_error_clear(err);
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "connect", "lifetime_ms must not be negative");
    return NULL;
  }
  e2b_req *op = id_op(c, "connect", sandbox_id, timeout_ms, attach_advance, err);
  if (op) ((id_state *)op->state)->known_ms = lifetime_ms;
  return e2b_req_typed(op, E2B_RESULT_SANDBOX);
}

/* ---- resume: attach by logical id ---- */

static void resume_advance(e2b_req *op) {
  id_state *s = op->state;
  e2b_error err;
  if (s->stage == 0) {
    if (!s->child) {
      s->child = find_by_meta(op, s->client, E2B_META_ID, s->id, &err);
      if (!s->child) e2b_op_finish(op, &err);
      return;
    }
    if (!e2b_req_done(s->child)) return;
    if (child_failed(op, &s->child)) return;
    size_t n = e2b_req_sandbox_count(s->child);
    if (n > 1) return conflict(op, n, s->id);
    if (!n && unknown_id(op, s->id)) return;
    /* No logical id matched: the id may be E2B's own sandbox id, as for
     * describe and destroy; the info call then says whether it exists. */
    s->sandbox_id = strdup(n ? e2b_req_sandbox(s->child)->sandbox_id : s->id);
    /* The search brought state, deadline and metadata: the connect asks
     * for the created lifetime itself, no /timeout after it. */
    if (n && s->sandbox_id && e2b_take_sandbox(s->child, &s->info) == 0) s->have_info = 1;
    e2b_req_free(s->child);
    s->child = NULL;
    if (!s->sandbox_id) return nomem(op);
    s->stage = ATTACH_START;
  }
  attach_advance(op);
}

e2b_req *e2b_sandbox_resume(e2b_client *c, const char *logical_id, long timeout_ms,
                            e2b_error *err) {
  return e2b_req_typed(id_op(c, "resume", logical_id, timeout_ms, resume_advance, err), E2B_RESULT_SANDBOX);
}

/* ---- pause: true only once paused ---- */

enum { PAUSE_CALL = 30, PAUSE_CHECK };

static void pause_advance(e2b_req *op) {
  id_state *s = op->state;
  e2b_error err;
  if (s->stage < PAUSE_CALL) s->stage = PAUSE_CALL;
  if (s->stage == PAUSE_CALL) {
    if (!s->child) {
      s->child = e2b_op_child(op, e2b_api_pause(s->client, s->id, s->memory, &err));
      if (!s->child) e2b_op_finish(op, &err);
      return;
    }
    if (!e2b_req_done(s->child)) return;
    const e2b_error *perr = e2b_req_error(s->child);
    /* E2B answers 2xx once the snapshot is taken (its API waits for the
     * orchestrator's pause, or for a pause already under way): that proves
     * it, no read needed. 409 means "already paused" only if the sandbox
     * says so: look. */
    if (!perr || perr->code != E2B_ERR_CONFLICT) {
      e2b_op_finish(op, perr);
      return;
    }
    e2b_req_free(s->child);
    s->child = NULL;
    s->stage = PAUSE_CHECK;
  }
  if (op->timer_at_ms) return; /* waiting before the next look */
  if (!s->child) {
    s->child = e2b_op_child(op, e2b_sandbox_get(s->client, s->id, &err));
    if (!s->child) e2b_op_finish(op, &err);
    return;
  }
  if (!e2b_req_done(s->child)) return;
  if (child_failed(op, &s->child)) return;
  e2b_state state = e2b_req_sandbox(s->child)->state;
  e2b_req_free(s->child);
  s->child = NULL;
  if (state == E2B_STATE_PAUSED) return e2b_op_finish(op, NULL);
  /* A backend may finish pausing just after answering; give it a moment. */
  if (++s->polls <= 20) return e2b_req_arm_timer(op, 100);
  e2b_err_set(&err, E2B_ERR_SANDBOX, op->op,
              "the backend answered the pause but the sandbox is still %s",
              state == E2B_STATE_RUNNING ? "running" : "not paused");
  e2b_op_finish(op, &err);
}

e2b_req *e2b_sandbox_pause(e2b_client *c, const char *sandbox_id, int memory, e2b_error *err) {
  e2b_req *op = id_op(c, "pause", sandbox_id, 0, pause_advance, err);
  if (op) ((id_state *)op->state)->memory = memory;
  return op;
}

/* ---- keep_alive: extend only ---- */

enum { KEEP_INFO = 40, KEEP_REFRESH, KEEP_VERIFY, KEEP_SET };

static void keep_alive_advance(e2b_req *op) {
  id_state *s = op->state;
  e2b_error err;
  if (s->stage < KEEP_INFO)
    /* The refresh call extends without ever shortening; it takes up to an hour. */
    s->stage = s->timeout_ms <= 3600000 ? KEEP_REFRESH : KEEP_INFO;
  if (!s->child) {
    switch (s->stage) {
    case KEEP_REFRESH:
      s->child = e2b_api_refresh(s->client, s->id, (s->timeout_ms + 999) / 1000, &err);
      break;
    case KEEP_SET:
      s->child = e2b_sandbox_set_timeout(s->client, s->id, s->timeout_ms, &err);
      break;
    default:
      s->child = e2b_sandbox_get(s->client, s->id, &err);
    }
    if (!e2b_op_child(op, s->child)) e2b_op_finish(op, &err);
    return;
  }
  if (!e2b_req_done(s->child)) return;
  const e2b_error *cerr = e2b_req_error(s->child);
  int stage = s->stage;
  if (cerr && !(stage == KEEP_REFRESH && cerr->code == E2B_ERR_UNSUPPORTED)) {
    e2b_op_finish(op, cerr);
    return;
  }
  int64_t want = e2b_wall_ms() + s->timeout_ms;
  int64_t end = e2b_req_sandbox_count(s->child) ? e2b_req_sandbox(s->child)->end_at_ms : 0;
  e2b_req_free(s->child);
  s->child = NULL;
  switch (stage) {
  case KEEP_REFRESH: /* check it took effect: servers without refreshes ignore it */
    s->stage = KEEP_VERIFY;
    return keep_alive_advance(op);
  case KEEP_SET: return e2b_op_finish(op, NULL);
  default:
    /* 2 s of slack: the deadline is kept in whole seconds. */
    if (end && end + 2000 >= want) return e2b_op_finish(op, NULL);
    s->stage = KEEP_SET;
    return keep_alive_advance(op);
  }
}

e2b_req *e2b_sandbox_keep_alive(e2b_client *c, const char *sandbox_id, long ms, e2b_error *err) {
  if (ms <= 0) {
    e2b_error_clear(err);
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "keep_alive", "ms must be positive");
    return NULL;
  }
  return id_op(c, "keep_alive", sandbox_id, ms, keep_alive_advance, err);
}

/* ---- reap: kill an owner's old sandboxes ---- */

typedef struct reap_state {
  e2b_client *client;
  char *owner;
  long older_than_ms;
  e2b_req *find;
  e2b_req **kills;
  size_t kill_count;
  int64_t cutoff;
  int dry_run;     /* e2b_sandbox_reap_preview: find them, kill none */
} reap_state;

static void reap_advance(e2b_req *op) {
  reap_state *s = op->state;
  e2b_error err;
  if (!s->find) {
    s->cutoff = e2b_wall_ms() - s->older_than_ms;
    s->find = find_by_meta(op, s->client, E2B_META_OWNER, s->owner, &err);
    if (!s->find) e2b_op_finish(op, &err);
    return;
  }
  if (!e2b_req_done(s->find)) return;
  if (!s->kills) {
    const e2b_error *ferr = e2b_req_error(s->find);
    if (ferr) return e2b_op_finish(op, ferr);
    /* Keep only the old enough; kill them all at once (the client's cap
     * bounds how many requests are really in flight). */
    e2b_sandbox_set *found = e2b_sandboxes(s->find);
    if (!found) return nomem(op);
    size_t n = found->count, keep = 0;
    e2b_sandbox_info *sb = found->items;
    for (size_t i = 0; i < n; i++) {
      if (sb[i].started_at_ms && sb[i].started_at_ms <= s->cutoff)
        sb[keep++] = sb[i];
      else
        e2b_sandbox_info_clear(&sb[i]);
    }
    found->count = keep;
    if (e2b_take_sandboxes(op, s->find) != 0) return nomem(op);
    if (s->dry_run) return e2b_op_finish(op, NULL);
    if (!(s->kills = calloc(keep + 1, sizeof *s->kills))) return nomem(op);
    for (size_t i = 0; i < keep; i++) {
      s->kills[i] = e2b_op_child(op, e2b_sandbox_kill(s->client, e2b_req_sandbox_at(op, i)->sandbox_id, &err));
      if (!s->kills[i]) return e2b_op_finish(op, &err);
      s->kill_count++;
    }
  }
  for (size_t i = 0; i < s->kill_count; i++)
    if (!e2b_req_done(s->kills[i])) return;
  /* Report only what this call killed (or found already gone). */
  e2b_sandbox_set *mine = s->kill_count ? e2b_sandboxes(op) : NULL;
  size_t kept = 0;
  for (size_t i = 0; i < s->kill_count; i++) {
    const e2b_error *kerr = kill_failure(s->kills[i]);
    if (kerr) {
      e2b_error first = *kerr;
      return e2b_op_finish(op, &first);
    }
    mine->items[kept++] = mine->items[i];
  }
  if (mine) mine->count = kept;
  e2b_op_finish(op, NULL);
}

#define REAP_AT(f) offsetof(reap_state, f)
static const e2b_op_kind reap_kind = {.size = sizeof(reap_state), .children = E2B_FIELDS(REAP_AT(find)),
                                      .fanouts = E2B_FIELDS(REAP_AT(kills), REAP_AT(kill_count)),
                                      .allocs = E2B_FIELDS(REAP_AT(owner)), .holds = E2B_OP_HOLDS_CLIENT,
                                      .ref = REAP_AT(client), .key = REAP_AT(owner)};

static e2b_req *reap_op(e2b_client *c, const char *owner, long older_than_ms, int dry_run, e2b_error *err) {
  e2b_error_clear(err);
  if (!c || !owner || !*owner || !e2b_utf8_valid(owner, strlen(owner))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "reap", "owner is required");
    return NULL;
  }
  if (older_than_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "reap", "older_than_ms must not be negative");
    return NULL;
  }
  e2b_req *op = e2b_op_new(&reap_kind, c, NULL, "reap", reap_advance, owner, err);
  if (op) {
    ((reap_state *)op->state)->older_than_ms = older_than_ms;
    ((reap_state *)op->state)->dry_run = dry_run;
  }
  return e2b_req_typed(op, E2B_RESULT_SANDBOXES);
}

e2b_req *e2b_sandbox_reap(e2b_client *c, const char *owner, long older_than_ms, e2b_error *err) {
  return reap_op(c, owner, older_than_ms, 0, err);
}

e2b_req *e2b_sandbox_reap_preview(e2b_client *c, const char *owner, long older_than_ms, e2b_error *err) {
  return reap_op(c, owner, older_than_ms, 1, err);
}
