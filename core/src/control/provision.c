/* provision.c — e2b_sandbox_provision: creating a sandbox with the
 * rules of docs/manual.md. Creates are serialised within one client and an
 * explicit logical id is checked before and after allocation; then the
 * sandbox must answer on envd, run its setup script and take its network
 * policy before the request succeeds. Whatever fails after allocation —
 * including the request being canceled or freed — destroys the allocation.
 *
 * What stays open: two clients (or hosts) creating the same logical id at
 * the same moment can both pass the first check; each then sees the other
 * in the second check and deletes its own allocation, so both may fail, but
 * neither keeps a duplicate — unless one lists before the other's create is
 * visible, which E2B's list does not rule out. Serialise creates of one id
 * across hosts outside lua-e2b when that matters. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define SETUP_TAIL 2000
/* The gateway's start (the SDKs' commands.run default) */
#define MCP_START_MS 60000

enum stage {
  P_QUEUE,
  P_PRECHECK,
  P_CREATE,
  P_POSTCHECK,
  P_READY,
  P_MCP,
  P_SETUP_WRITE,
  P_SETUP_RUN,
  P_NETWORK,
  P_DISCARD
};

typedef struct prov_state {
  e2b_req *self;
  e2b_client *client;
  enum stage stage;
  int holds_slot;
  int queued;
  e2b_req *child;
  /* copies of the caller's options */
  e2b_create_opts create;
  char *template_id;
  e2b_kv *metadata, *env, *volumes; /* owned */
  size_t metadata_n, env_n, volumes_n;
  json_t *net_create; /* members set over the create body (network.c), or NULL */
  json_t *net_update; /* the PUT /network body after setup, or NULL */
  char id[E2B_UUID_SIZE > 256 ? E2B_UUID_SIZE : 257];
  int explicit_id;
  long ready_timeout_ms;
  int64_t ready_deadline;
  long backoff_ms;
  char *setup;
  size_t setup_len;
  char *setup_path;
  long setup_timeout_ms;
  char *user;
  char *mcp;                       /* the gateway's configuration (JSON text), or NULL */
  char mcp_token[E2B_UUID_SIZE];   /* its access token, made when it is started */
  /* the allocation */
  e2b_sandbox_info sandbox;
  int allocated;
  e2b_sbx *sbx;
  e2b_error fail; /* the error to report once the allocation is discarded */
  int succeeded;
} prov_state;

/* ---- the client's create slot ---- */

static void take_slot_or_queue(e2b_req *op, prov_state *s) {
  e2b_client *c = s->client;
  if (!c->create_owner) {
    c->create_owner = op;
    s->holds_slot = 1;
    return;
  }
  s->queued = 1;
  op->queue_next = NULL;
  if (c->create_queue_tail)
    c->create_queue_tail->queue_next = op;
  else
    c->create_queue_head = op;
  c->create_queue_tail = op;
}

static void release_create_slot(e2b_req *op, prov_state *s) {
  e2b_client *c = s->client;
  if (s->queued) {
    e2b_slot_queue_remove(&c->create_queue_head, &c->create_queue_tail, op);
    s->queued = 0;
  }
  if (!s->holds_slot) return;
  s->holds_slot = 0;
  c->create_owner = NULL;
  e2b_req *next = c->create_queue_head;
  if (next) {
    c->create_queue_head = next->queue_next;
    if (!c->create_queue_head) c->create_queue_tail = NULL;
    prov_state *ns = next->state;
    ns->queued = 0;
    ns->holds_slot = 1;
    c->create_owner = next;
    e2b_op_kick(next);
  }
}

/* ---- state ---- */

/* Kills an allocation nobody will own; the request frees itself. */
static void discard_detached(e2b_client *c, const char *sandbox_id) {
  e2b_error err;
  e2b_req *kill = e2b_sandbox_kill(c, sandbox_id, &err);
  if (kill) e2b_req_autofree(kill);
}

/* A create still in flight (or answered and not yet read) when its
 * provision goes (canceled, freed): its answer is awaited unattended and the
 * sandbox it made killed, so a cancel never leaves one behind. */
typedef struct orphan_state {
  e2b_client *client;
  e2b_req *create;
} orphan_state;

static void orphan_advance(e2b_req *op) {
  orphan_state *s = op->state;
  if (!e2b_req_done(s->create)) return;
  if (!e2b_req_error(s->create) && e2b_req_sandbox_count(s->create))
    discard_detached(s->client, e2b_req_sandbox(s->create)->sandbox_id);
  e2b_op_finish(op, NULL);
}

#define ORPHAN_AT(f) offsetof(orphan_state, f)
static const e2b_op_kind orphan_kind = {.size = sizeof(orphan_state), .children = E2B_FIELDS(ORPHAN_AT(create)),
                                        .holds = E2B_OP_HOLDS_CLIENT, .ref = ORPHAN_AT(client)};

static void adopt_create(e2b_client *c, e2b_req *create) {
  e2b_error err;
  e2b_req *op = e2b_op_new(&orphan_kind, c, NULL, "create", orphan_advance, NULL, &err);
  if (!op) { /* no memory: the create is canceled, as before */
    e2b_req_free(create);
    return;
  }
  ((orphan_state *)op->state)->create = e2b_op_child(op, create);
  e2b_req_autofree(op);
  e2b_op_kick(op); /* it may be answered already */
}

static void prov_release(void *p) {
  prov_state *s = p;
  if (s->stage == P_CREATE && s->child && !s->allocated) {
    adopt_create(s->client, s->child);
    s->child = NULL;
  }
  release_create_slot(s->self, s);
  if (s->allocated && !s->succeeded) discard_detached(s->client, s->sandbox.sandbox_id);
  e2b_sandbox_info_clear(&s->sandbox);
  if (s->sbx) e2b_sbx_release(s->sbx);
  json_decref(s->net_create);
  json_decref(s->net_update);
  e2b_free_secret(s->mcp); /* configurations hold the MCP servers' keys */
  memset(s->mcp_token, 0, sizeof s->mcp_token);
}

/* ---- steps ---- */

static void fail_after_allocation(e2b_req *op, prov_state *s, const e2b_error *err) {
  s->fail = *err;
  if (!s->fail.op[0]) snprintf(s->fail.op, sizeof s->fail.op, "create");
  e2b_req_free(s->child);
  s->child = NULL;
  if (!s->allocated) return e2b_op_finish(op, &s->fail);
  s->stage = P_DISCARD;
  e2b_error kerr;
  s->child = e2b_op_child(op, e2b_sandbox_kill(s->client, s->sandbox.sandbox_id, &kerr));
  if (!s->child) {
    s->allocated = 0; /* nothing more can be done from here */
    e2b_op_finish(op, &s->fail);
  }
}

static e2b_req *find_id(e2b_req *op, prov_state *s, e2b_error *err) {
  e2b_kv kv = {E2B_META_ID, s->id};
  e2b_list_opts lo = {.metadata = &kv, .metadata_count = 1};
  return e2b_op_child(op, e2b_sandbox_find(s->client, &lo, err));
}

static e2b_req *start_create(e2b_req *op, prov_state *s, e2b_error *err) {
  e2b_create_opts o = s->create;
  o.template_id = s->template_id;
  o.metadata = s->metadata;
  o.metadata_count = s->metadata_n;
  o.env = s->env;
  o.env_count = s->env_n;
  o.volume_mounts = s->volumes;
  o.volume_mount_count = s->volumes_n;
  o.mcp = s->mcp;
  /* the policy goes as extra members (network.c built them) */
  o.allow_internet_access = E2B_DEFAULT;
  o.allow_out_count = o.deny_out_count = 0;
  o.network = 0;
  o.net = NULL;
  return e2b_op_child(op, e2b_create_with(s->client, &o, s->net_create, err));
}

static void add_metadata(prov_state *s) {
  /* The create answer does not echo metadata: record what was sent. */
  e2b_map *m = &s->sandbox.metadata;
  m->keys = calloc(s->metadata_n + 1, sizeof *m->keys);
  m->values = calloc(s->metadata_n + 1, sizeof *m->values);
  for (size_t i = 0; m->keys && m->values && i < s->metadata_n; i++) {
    m->keys[m->count] = strdup(s->metadata[i].key);
    m->values[m->count] = strdup(s->metadata[i].value);
    if (m->keys[m->count] && m->values[m->count]) m->count++;
  }
}

static const char SETUP_RUNNER[] = "chmod 755 \"$1\" && exec \"$1\"";

/* One function per stage, as libcurl's multi does: each starts its child
 * call when it has none, and reads the answer once the child is done. */
typedef void (*stage_fn)(e2b_req *op, prov_state *s, const e2b_error *cerr);

static void prov_advance(e2b_req *op);

/* Frees the finished child and runs the next stage now, not on the next
 * loop turn, so a create takes no more turns than its calls need. */
static void next_stage(e2b_req *op, prov_state *s, enum stage next) {
  e2b_req_free(s->child);
  s->child = NULL;
  s->stage = next;
  prov_advance(op);
}

/* A call that could not even start fails the create like one that failed. */
static void started(e2b_req *op, prov_state *s, e2b_req *child, const e2b_error *err) {
  if (!(s->child = child)) fail_after_allocation(op, s, err);
}

static void stage_queue(e2b_req *op, prov_state *s, const e2b_error *cerr) {
  (void)cerr;
  /* Only an explicit id can collide; generated ones skip the queue. */
  if (!s->explicit_id) return next_stage(op, s, P_CREATE);
  if (!s->holds_slot) {
    if (!s->queued) take_slot_or_queue(op, s);
    if (!s->holds_slot) return;
  }
  next_stage(op, s, P_PRECHECK);
}

static void stage_precheck(e2b_req *op, prov_state *s, const e2b_error *cerr) {
  e2b_error err;
  if (!s->child) return started(op, s, find_id(op, s, &err), &err);
  if (cerr) return fail_after_allocation(op, s, cerr);
  if (e2b_req_sandbox_count(s->child) > 0) {
    e2b_err_set(&err, E2B_ERR_CONFLICT, "create", "a sandbox with id \"%s\" already exists (%s)",
                s->id, e2b_req_sandbox(s->child)->sandbox_id);
    err.retryable = 0;
    return fail_after_allocation(op, s, &err);
  }
  next_stage(op, s, P_CREATE);
}

static void stage_create(e2b_req *op, prov_state *s, const e2b_error *cerr) {
  e2b_error err;
  if (!s->child) return started(op, s, start_create(op, s, &err), &err);
  if (cerr) return fail_after_allocation(op, s, cerr);
  if (e2b_take_sandbox(s->child, &s->sandbox) != 0) {
    e2b_err_set(&err, E2B_ERR_PROTOCOL, "create", "the create answer names no sandbox");
    return fail_after_allocation(op, s, &err);
  }
  s->allocated = 1;
  add_metadata(s);
  next_stage(op, s, s->explicit_id ? P_POSTCHECK : P_READY);
}

static void stage_postcheck(e2b_req *op, prov_state *s, const e2b_error *cerr) {
  e2b_error err;
  if (!s->child) return started(op, s, find_id(op, s, &err), &err);
  release_create_slot(op, s);
  if (cerr) return fail_after_allocation(op, s, cerr);
  if (e2b_req_sandbox_count(s->child) > 1) {
    e2b_err_set(&err, E2B_ERR_CONFLICT, "create",
                "another sandbox with id \"%s\" was created concurrently; this one was removed",
                s->id);
    err.retryable = 0;
    return fail_after_allocation(op, s, &err);
  }
  next_stage(op, s, P_READY);
}

static void stage_ready(e2b_req *op, prov_state *s, const e2b_error *cerr) {
  e2b_error err;
  enum stage next = s->mcp ? P_MCP : s->setup ? P_SETUP_WRITE : P_NETWORK;
  /* E2B's orchestrator answers a create once envd answered it: the wait is
   * only for a caller who asks for it (ready_timeout_ms > 0). */
  if (s->ready_timeout_ms <= 0) return next_stage(op, s, next);
  if (!s->sbx) {
    s->sbx = e2b_sbx_new(s->client, s->sandbox.sandbox_id, s->sandbox.envd_access_token,
                         s->sandbox.domain, &err);
    if (s->sbx) e2b_sbx_set_envd_version(s->sbx, s->sandbox.envd_version); /* unknown if no memory */
    if (!s->sbx) return fail_after_allocation(op, s, &err);
    s->ready_deadline = e2b_now_ms() + s->ready_timeout_ms;
    s->backoff_ms = 25;
  }
  if (op->timer_at_ms) return; /* waiting out the backoff */
  if (!s->child) return started(op, s, e2b_op_child(op, e2b_envd_health(s->sbx, &err)), &err);
  if (!cerr) return next_stage(op, s, next);
  /* E2B refusing this client (429, past the probe's own retries) is said as
   * it is, not waited out as a sandbox that is slow to start. */
  if (cerr->code == E2B_ERR_RATE_LIMITED) return fail_after_allocation(op, s, cerr);
  if (cerr->code == E2B_ERR_AUTH || e2b_now_ms() + s->backoff_ms > s->ready_deadline) {
    e2b_err_set(&err, E2B_ERR_TIMEOUT, "create",
                "sandbox did not become ready within %ld ms (last: %s)", s->ready_timeout_ms,
                cerr->message);
    return fail_after_allocation(op, s, &err);
  }
  e2b_req_free(s->child);
  s->child = NULL;
  e2b_req_arm_timer(op, s->backoff_ms);
  if (s->backoff_ms < 1000) s->backoff_ms *= 2;
}

/* The envd handle; with ready_timeout_ms <= 0 the readiness stage made none. */
static int need_sbx(e2b_req *op, prov_state *s) {
  e2b_error err;
  if (s->sbx || (s->sbx = e2b_sbx_new(s->client, s->sandbox.sandbox_id, s->sandbox.envd_access_token,
                                       s->sandbox.domain, &err)))
    return 0;
  fail_after_allocation(op, s, &err);
  return -1;
}

/* The gateway's own command line names the configuration by variable only:
 * envd's Start (and its process list) never carries it. */
static const char MCP_RUNNER[] = "exec mcp-gateway --config \"$E2B_MCP_CONFIG\"";

static e2b_req *start_mcp(e2b_req *op, prov_state *s, e2b_error *err) {
  if (e2b_uuid4(s->mcp_token) != 0) {
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, "create", "random generator unavailable");
    return NULL;
  }
  const char *args[] = {"-l", "-c", MCP_RUNNER};
  e2b_kv env[] = {{"GATEWAY_ACCESS_TOKEN", s->mcp_token}, {"E2B_MCP_CONFIG", s->mcp}};
  e2b_proc_opts po = {.cmd = "/bin/bash", .args = args, .arg_count = 3, .env = env, .env_count = 2,
                      .user = "root", .timeout_ms = MCP_START_MS};
  return e2b_op_child(op, e2b_run(s->sbx, &po, NULL, 0, SETUP_TAIL, err));
}

/* The gateway started, or the create fails with its stderr's tail (as the
 * SDKs', which then kill the sandbox too). */
static void stage_mcp(e2b_req *op, prov_state *s, const e2b_error *cerr) {
  e2b_error err;
  if (!s->child && need_sbx(op, s) == 0) return started(op, s, start_mcp(op, s, &err), &err);
  if (!s->child) return;
  const e2b_run_result *r = e2b_req_run_result(s->child);
  const char *tail = r && r->err_len ? (const char *)r->err : "";
  if (cerr) {
    e2b_err_set(&err, cerr->code, "create", "could not start the MCP gateway: %s%s%s", cerr->message,
                *tail ? "; stderr: " : "", tail);
    return fail_after_allocation(op, s, &err);
  }
  if (!r || r->exit_code != 0) {
    e2b_err_set(&err, E2B_ERR_SANDBOX, "create", "could not start the MCP gateway: it exited with %d%s%s",
                r ? r->exit_code : -1, *tail ? ": " : "", tail);
    err.retryable = 0;
    return fail_after_allocation(op, s, &err);
  }
  if (!(s->sandbox.mcp_token = strdup(s->mcp_token))) {
    e2b_err_set(&err, E2B_ERR_UNAVAILABLE, "create", "out of memory");
    return fail_after_allocation(op, s, &err);
  }
  next_stage(op, s, s->setup ? P_SETUP_WRITE : P_NETWORK);
}

static void stage_setup_write(e2b_req *op, prov_state *s, const e2b_error *cerr) {
  e2b_error err;
  if (need_sbx(op, s) != 0) return;
  if (!s->child) {
    s->child = e2b_op_child(op, e2b_file_write(s->sbx, s->setup_path, s->user, &err));
    if (!s->child) return fail_after_allocation(op, s, &err);
    if (e2b_req_send(s->child, s->setup, s->setup_len) != 0 || e2b_req_send_end(s->child) != 0) {
      e2b_err_set(&err, E2B_ERR_UNAVAILABLE, "create", "could not upload the setup script");
      return fail_after_allocation(op, s, &err);
    }
    return;
  }
  if (cerr) return fail_after_allocation(op, s, cerr);
  next_stage(op, s, P_SETUP_RUN);
}

static e2b_req *start_setup(e2b_req *op, prov_state *s, e2b_error *err) {
  const char *args[] = {"-c", SETUP_RUNNER, "setup", s->setup_path};
  e2b_proc_opts po = {.cmd = "/bin/sh",
                      .args = args,
                      .arg_count = 4,
                      .env = s->env,
                      .env_count = s->env_n,
                      .user = s->user,
                      .timeout_ms = s->setup_timeout_ms};
  return e2b_op_child(op, e2b_run(s->sbx, &po, NULL, 0, SETUP_TAIL, err));
}

static void stage_setup_run(e2b_req *op, prov_state *s, const e2b_error *cerr) {
  e2b_error err;
  if (!s->child) return started(op, s, start_setup(op, s, &err), &err);
  /* The failure names the script's own stderr tail: that is what the caller can act on. */
  const e2b_run_result *r = e2b_req_run_result(s->child);
  const char *tail = r && r->err_len ? (const char *)r->err : "";
  if (cerr) {
    e2b_err_set(&err, cerr->code, "create", "setup %s: %s%s%s",
                cerr->code == E2B_ERR_TIMEOUT ? "timed out" : "was interrupted", cerr->message,
                *tail ? "; stderr: " : "", tail);
    return fail_after_allocation(op, s, &err);
  }
  if (!r || r->exit_code != 0) {
    e2b_err_set(&err, E2B_ERR_SANDBOX, "create", "setup script exited with %d%s%s",
                r ? r->exit_code : -1, *tail ? ": " : "", tail);
    err.retryable = 0;
    return fail_after_allocation(op, s, &err);
  }
  next_stage(op, s, P_NETWORK);
}

/* Hands the sandbox to the caller; from here on nothing discards it. */
static void succeed(e2b_req *op, prov_state *s) {
  e2b_error err;
  e2b_req_free(s->child);
  s->child = NULL;
  s->sandbox.state = E2B_STATE_RUNNING;
  e2b_sandbox_set *l = e2b_sandboxes(op);
  if (!l || !(l->items = calloc(1, sizeof *l->items))) {
    e2b_err_set(&err, E2B_ERR_UNAVAILABLE, "create", "out of memory");
    return fail_after_allocation(op, s, &err);
  }
  l->items[0] = s->sandbox;
  l->count = 1;
  memset(&s->sandbox, 0, sizeof s->sandbox);
  s->succeeded = 1;
  e2b_op_finish(op, NULL);
}

static void stage_network(e2b_req *op, prov_state *s, const e2b_error *cerr) {
  e2b_error err;
  /* Without a setup script the policy went with the create call; open
   * egress is how the sandbox was created: nothing to change either way. */
  if (!s->net_update) return succeed(op, s);
  if (!s->child) {
    e2b_req *r = e2b_on_sandbox(s->client, "set_network", "PUT", s->sandbox.sandbox_id, "/network",
                                json_incref(s->net_update), e2b_parse_nothing, 1, &err);
    return started(op, s, e2b_op_child(op, r), &err);
  }
  if (cerr) return fail_after_allocation(op, s, cerr);
  succeed(op, s);
}

static void stage_discard(e2b_req *op, prov_state *s, const e2b_error *cerr) {
  /* The kill's own failure is secondary; the original failure is reported. */
  if (cerr && cerr->code != E2B_ERR_NOT_FOUND) {
    size_t n = strlen(s->fail.message);
    snprintf(s->fail.message + n, sizeof s->fail.message - n,
             " (and removing sandbox %s failed: %s)", s->sandbox.sandbox_id, cerr->message);
  }
  s->allocated = 0;
  e2b_req_free(s->child);
  s->child = NULL;
  e2b_op_finish(op, &s->fail);
}

static const stage_fn STAGES[] = {
    [P_QUEUE] = stage_queue,
    [P_PRECHECK] = stage_precheck,
    [P_CREATE] = stage_create,
    [P_POSTCHECK] = stage_postcheck,
    [P_READY] = stage_ready,
    [P_MCP] = stage_mcp,
    [P_SETUP_WRITE] = stage_setup_write,
    [P_SETUP_RUN] = stage_setup_run,
    [P_NETWORK] = stage_network,
    [P_DISCARD] = stage_discard,
};

static void prov_advance(e2b_req *op) {
  prov_state *s = op->state;
  if (s->child && !e2b_req_done(s->child)) return;
  STAGES[s->stage](op, s, s->child ? e2b_req_error(s->child) : NULL);
}

/* ---- entry point: everything is validated and copied before anything starts ---- */

/* The policy: o->network, else the create options' own. */
static e2b_network policy_of(const e2b_provision_opts *o) {
  const e2b_create_opts *co = &o->create;
  if (o->network) return *o->network;
  if (co->net) return *co->net;
  return (e2b_network){.allow_internet_access = co->allow_internet_access,
                       .allow_out = co->allow_out, .allow_out_count = co->allow_out_count,
                       .deny_out = co->deny_out, .deny_out_count = co->deny_out_count};
}

/* Egress that changes nothing: open, no rules, no proxy. */
static int egress_open(const e2b_network *n) {
  return n->allow_internet_access != E2B_NO && !n->allow_out_count && !n->deny_out_count &&
         !n->rule_count && !n->egress_proxy;
}

/* Without setup the whole policy goes with the create call; with setup
 * only the ingress fields do, and the egress follows the setup (which
 * needs the network to install things). Already checked: cannot fail but
 * for memory. */
static int network_parts(prov_state *s, const e2b_provision_opts *o, e2b_error *err) {
  e2b_network n = policy_of(o);
  if (!o->setup_script || egress_open(&n)) {
    s->net_create = e2b_network_fields(&n, 0, "create", err);
    return s->net_create ? 0 : -1;
  }
  e2b_network ingress = {.allow_public_traffic = n.allow_public_traffic,
                         .mask_request_host = n.mask_request_host};
  n.allow_public_traffic = E2B_DEFAULT;
  n.mask_request_host = NULL;
  s->net_create = e2b_network_fields(&ingress, 0, "create", err);
  s->net_update = s->net_create ? e2b_network_fields(&n, 1, "create", err) : NULL;
  return s->net_update ? 0 : -1;
}

static int copy_opts(prov_state *s, const e2b_provision_opts *o, e2b_error *err) {
  const e2b_create_opts *co = &o->create;
  s->create = *co;
  s->template_id = e2b_strdup0(co->template_id);
  /* Our keys beside the caller's metadata. */
  size_t n = co->metadata_count;
  e2b_kv *md = calloc(n + 3, sizeof *md);
  if (!md) return -1;
  for (size_t i = 0; i < n; i++) md[i] = co->metadata[i];
  char lifetime[24];
  snprintf(lifetime, sizeof lifetime, "%ld", co->timeout_ms ? co->timeout_ms : E2B_DEFAULT_SANDBOX_TIMEOUT_MS);
  md[n].key = E2B_META_ID;
  md[n].value = s->id;
  md[n + 1].key = E2B_META_OWNER;
  md[n + 1].value = s->client->owner;
  md[n + 2].key = E2B_META_TIMEOUT;
  md[n + 2].value = lifetime;
  int rc = e2b_kv_dup(&s->metadata, md, n + 3);
  free(md);
  if (rc) return -1;
  s->metadata_n = n + 3;
  if (e2b_kv_dup(&s->env, co->env, co->env_count) != 0) return -1;
  s->env_n = co->env_count;
  if (e2b_kv_dup(&s->volumes, co->volume_mounts, co->volume_mount_count) != 0) return -1;
  s->volumes_n = co->volume_mount_count;
  if (network_parts(s, o, err) != 0) return -1;
  s->ready_timeout_ms = o->ready_timeout_ms ? o->ready_timeout_ms : E2B_DEFAULT_READY_TIMEOUT_MS;
  s->setup_timeout_ms = o->setup_timeout_ms ? o->setup_timeout_ms : E2B_DEFAULT_SETUP_TIMEOUT_MS;
  if (o->user && !(s->user = strdup(o->user))) return -1;
  if (co->mcp && !(s->mcp = strdup(co->mcp))) return -1;
  if (o->setup_script) {
    const char *name = o->setup_name ? o->setup_name : "e2b-setup.sh";
    size_t pn = strlen(name) + 6;
    if (!(s->setup = malloc(o->setup_len + 1)) || !(s->setup_path = malloc(pn))) return -1;
    memcpy(s->setup, o->setup_script, o->setup_len);
    s->setup_len = o->setup_len;
    snprintf(s->setup_path, pn, "/tmp/%s", name);
  }
  return 0;
}

/* Every argument error is found here, before anything is allocated or sent. */
static int check_opts(const e2b_provision_opts *o, const char *op, e2b_error *err) {
  if (o->id && (!*o->id || strlen(o->id) > 256 || !e2b_utf8_valid(o->id, strlen(o->id)))) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "id must be 1-256 bytes of UTF-8");
    return -1;
  }
  for (size_t i = 0; i < o->create.metadata_count; i++) {
    const char *k = o->create.metadata ? o->create.metadata[i].key : NULL;
    if (k && strncmp(k, E2B_META_PREFIX, strlen(E2B_META_PREFIX)) == 0) {
      e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "metadata.%s is reserved by libe2b (%s*)", k,
                  E2B_META_PREFIX);
      if (err) snprintf(err->field, sizeof err->field, "metadata.%.*s", (int)sizeof err->field - 10, k);
      return -1;
    }
  }
  if (o->setup_script && o->setup_name &&
      (!*o->setup_name || strchr(o->setup_name, '/') || strlen(o->setup_name) > 200)) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "setup.name must be a plain file name");
    return -1;
  }
  if (o->setup_timeout_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "setup.timeout_ms must not be negative");
    return -1;
  }
  for (size_t i = 0; i < o->create.volume_mount_count; i++) {
    const char *path = o->create.volume_mounts[i].key;
    if (!path || path[0] != '/') {
      e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "volumes: every mount needs an absolute path");
      return -1;
    }
  }
  /* The raw create validates the rest; run it on a dry copy now, before any I/O. */
  e2b_create_opts dry = o->create;
  if (e2b_create_tristates_check(&dry, op, err) || e2b_create_mcp_check(&dry, op, err)) return -1;
  e2b_network n = policy_of(o);
  if (e2b_network_check(&n, 0, op, err)) return -1;
  if (n.allow_public_traffic == E2B_NO && dry.secure == E2B_NO) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op,
                "network.allow_public_traffic: false requires a secure sandbox (E2B refuses it otherwise)");
    if (err) snprintf(err->field, sizeof err->field, "network.allow_public_traffic");
    return -1;
  }
  if (e2b_lifecycle_check(dry.auto_pause, dry.auto_pause_memory, dry.auto_resume, op, err)) return -1;
  if (dry.timeout_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "timeout_ms must not be negative");
    return -1;
  }
  return 0;
}

#define PROV_AT(f) offsetof(prov_state, f)
static const e2b_op_kind prov_kind = {
    .size = sizeof(prov_state), .release = prov_release, .children = E2B_FIELDS(PROV_AT(child)),
    .kvs = E2B_FIELDS(PROV_AT(metadata), PROV_AT(metadata_n), PROV_AT(env), PROV_AT(env_n),
                         PROV_AT(volumes), PROV_AT(volumes_n)),
    .allocs = E2B_FIELDS(PROV_AT(template_id), PROV_AT(setup), PROV_AT(setup_path), PROV_AT(user)),
    .holds = E2B_OP_HOLDS_CLIENT, .ref = PROV_AT(client)};

e2b_req *e2b_sandbox_provision(e2b_client *c, const e2b_provision_opts *o, e2b_error *err) {
  const char *op = "create";
  e2b_error_clear(err);
  if (!c || !o) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, op, "client and options are required");
    return NULL;
  }
  if (check_opts(o, op, err) != 0) return NULL;
  e2b_req *req = e2b_op_new(&prov_kind, c, NULL, op, prov_advance, NULL, err);
  if (!req) return NULL;
  prov_state *s = req->state;
  s->self = req;
  if (o->id) {
    snprintf(s->id, sizeof s->id, "%s", o->id);
    s->explicit_id = 1;
  } else if (e2b_uuid4(s->id) != 0) {
    e2b_req_free(req);
    e2b_err_set(err, E2B_ERR_UNAVAILABLE, op, "random generator unavailable");
    return NULL;
  }
  if (copy_opts(s, o, err) != 0) return e2b_op_nomem(req, err);
  return e2b_req_typed(req, E2B_RESULT_SANDBOX);
}
