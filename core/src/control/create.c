/* create.c — which of E2B's create routes to use. The live API creates with
 * POST /v2/sandboxes (NewSandboxV2, always secure); E2B built from
 * e2b-dev/infra has only POST /sandboxes (NewSandbox, with `secure`), and its
 * router answers a POST to /v2/sandboxes (a GET-only path) with 404. So a
 * create tries v2, and on 404 or 405 falls back to v1; the route that
 * worked is remembered per client, so later creates go straight there.
 *
 * A create is never repeated once it may have reached a server that
 * allocates; the fallback is not a repeat: a 404 or 405 allocated nothing
 * (the router refused it, or a handler found no such template, which the
 * v1 call will then say again). An insecure create goes to v1 directly:
 * only NewSandbox can carry `secure = false`. */
#include "internal.h"

#include <string.h>

typedef struct create_state {
  e2b_client *client;
  e2b_req *child;
  json_t *v1_body; /* the fallback's body, until it is sent */
  int v1;          /* the child is the v1 call */
} create_state;

static void create_release(void *p) {
  create_state *s = p;
  json_decref(s->v1_body);
}

/* The v2 route's 404 or 405: no such route here (or nothing to create from). */
static int try_v1(e2b_req *op, create_state *s, const e2b_error *err) {
  if (s->v1 || s->client->create_route == E2B_ROUTE_V2 || (err->status != 404 && err->status != 405))
    return 0;
  e2b_error e;
  json_t *body = s->v1_body;
  s->v1_body = NULL;
  e2b_req_free(s->child);
  s->v1 = 1;
  if (!(s->child = e2b_op_child(op, e2b_api_create(s->client, body, 1, &e)))) e2b_op_finish(op, &e);
  return 1;
}

static void create_advance(e2b_req *op) {
  create_state *s = op->state;
  if (!e2b_req_done(s->child)) return;
  const e2b_error *err = e2b_req_error(s->child);
  if (err && try_v1(op, s, err)) return;
  if (err) return e2b_op_finish(op, err);
  s->client->create_route = s->v1 ? E2B_ROUTE_V1 : E2B_ROUTE_V2;
  if (e2b_take_sandboxes(op, s->child) != 0) {
    e2b_error nomem;
    e2b_err_set(&nomem, E2B_ERR_UNAVAILABLE, op->op, "out of memory");
    return e2b_op_finish(op, &nomem);
  }
  e2b_op_finish(op, NULL);
}

#define CREATE_AT(f) offsetof(create_state, f)
static const e2b_op_kind create_kind = {.size = sizeof(create_state), .release = create_release,
                                        .children = E2B_FIELDS(CREATE_AT(child)),
                                        .holds = E2B_OP_HOLDS_CLIENT, .ref = CREATE_AT(client)};

/* The body for one route, with extra's members set over it (NULL: none). */
static json_t *body_with(const e2b_client *c, const e2b_create_opts *o, int v1, json_t *extra,
                         e2b_error *err) {
  json_t *body = e2b_create_body(c, o, v1, err);
  if (body && extra && json_object_update(body, extra) != 0) {
    json_decref(body);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "create", "out of memory");
    return NULL;
  }
  return body;
}

/* v2 first, v1 when it answers that it has no such route. */
static e2b_req *create_either(e2b_client *c, const e2b_create_opts *o, json_t *extra, e2b_error *err) {
  json_t *v2 = body_with(c, o, 0, extra, err);
  if (!v2) return NULL;
  e2b_req *op = e2b_op_new(&create_kind, c, NULL, "create", create_advance, NULL, err);
  create_state *s = op ? op->state : NULL;
  if (!s || !(s->v1_body = body_with(c, o, 1, extra, err))) {
    json_decref(v2);
    e2b_req_free(op);
    return NULL;
  }
  if (!(s->child = e2b_op_child(op, e2b_api_create(c, v2, 0, err)))) {
    e2b_req_free(op);
    return NULL;
  }
  return op;
}

e2b_req *e2b_sandbox_create(e2b_client *c, const e2b_create_opts *o, e2b_error *err) {
  return e2b_create_with(c, o, NULL, err);
}

e2b_req *e2b_create_with(e2b_client *c, const e2b_create_opts *o, json_t *extra, e2b_error *err) {
  static const e2b_create_opts defaults = {0};
  e2b_error_clear(err);
  if (!c) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "create", "client is required");
    return NULL;
  }
  if (!o) o = &defaults;
  int v1 = o->v1_route || o->secure == E2B_NO || c->create_route == E2B_ROUTE_V1;
  if (!v1 && c->create_route == E2B_ROUTE_UNKNOWN)
    return e2b_req_typed(create_either(c, o, extra, err), E2B_RESULT_SANDBOX);
  json_t *body = body_with(c, o, v1, extra, err);
  return body ? e2b_req_typed(e2b_api_create(c, body, v1, err), E2B_RESULT_SANDBOX) : NULL;
}
