/* doctor.c — finding out what a backend supports by trying it (doctor),
 * and whether an allow-list really filters egress (verify_egress). Both
 * use a throwaway sandbox with a short lifetime that is killed at the end
 * whatever happens; both report what they saw rather than failing, except
 * when they could not even start. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* A throwaway sandbox: created, used by a sequence of steps, killed. */
typedef struct probe_box {
  e2b_client *client;
  e2b_sandbox_info sb;
  int allocated;
  e2b_sbx *sbx;
} probe_box;

/* The kinds' release: each state starts with its probe_box. */
static void box_release(void *state) {
  probe_box *b = state;
  if (b->allocated) {
    /* Still ours when the operation is abandoned: kill it detached. */
    e2b_error err;
    e2b_req *kill = e2b_sandbox_kill(b->client, b->sb.sandbox_id, &err);
    if (kill) e2b_req_autofree(kill);
  }
  e2b_sandbox_info_clear(&b->sb);
  if (b->sbx) e2b_sbx_release(b->sbx);
}

static void note(char *notes, size_t cap, const char *what, const e2b_error *err) {
  size_t n = strlen(notes);
  if (n + 4 < cap)
    snprintf(notes + n, cap - n, "%s%s: %.160s", n ? "; " : "", what, err ? err->message : "no");
}

static int tri(const e2b_error *err) {
  if (!err) return 1;
  return err->code == E2B_ERR_UNSUPPORTED || err->code == E2B_ERR_NOT_FOUND ? 0 : -1;
}

/* ---- doctor ---- */

enum {
  D_LIST,
  D_LIMITS,
  D_CREATE,
  D_READY,
  D_STDIN,
  D_GROUP_START,
  D_GROUP_SIGNAL,
  D_GROUP_WAIT,
  D_GROUP_CHECK,
  D_VOLUMES,
  D_SNAPSHOTS,
  D_NETWORK,
  D_KILL,
  D_DONE
};

typedef struct doctor_state {
  probe_box box; /* first: the kind releases it (box_release) */
  int stage;
  e2b_req *child;
  e2b_req *stream;
  growbuf out;
  uint32_t pid;
  long child_pid;
  int polls;
} doctor_state;

/* e2b-local's /health names how each sandbox limit is enforced; E2B's
 * answers 204 (its VMs enforce them): the field stays NULL. */
static int parse_limits(e2b_req *req, json_t *body, e2b_error *err) {
  (void)err;
  json_t *lim = json_object_get(body, "limits");
  if (!json_is_object(lim)) return 0;
  char text[160] = "";
  const char *k;
  json_t *v;
  json_object_foreach(lim, k, v) {
    size_t n = strlen(text);
    if (json_is_string(v) && n < sizeof text)
      snprintf(text + n, sizeof text - n, "%s%.20s=%.20s", n ? " " : "", k, json_string_value(v));
  }
  req->result = strdup(text);
  req->result_free = free;
  return 0;
}

static e2b_req *doctor_step(e2b_req *op, doctor_state *s, e2b_error *err) {
  e2b_client *c = s->box.client;
  switch (s->stage) {
  case D_LIST: {
    e2b_list_opts lo = {.limit = 1};
    return e2b_sandbox_list(c, &lo, err);
  }
  case D_LIMITS: return e2b_control(c, "health", "GET", "/health", NULL, parse_limits, 1, err);
  case D_CREATE: {
    e2b_kv meta = {E2B_META_OWNER, c->owner};
    e2b_create_opts o = {.timeout_ms = 120000, .auto_pause = E2B_NO, .metadata = &meta, .metadata_count = 1};
    return e2b_sandbox_create(c, &o, err);
  }
  case D_READY: return e2b_envd_health(s->box.sbx, err);
  case D_STDIN: {
    e2b_proc_opts po = {.cmd = "cat", .timeout_ms = 10000};
    return e2b_run(s->box.sbx, &po, "ok", 2, 64, err);
  }
  case D_GROUP_START: {
    /* The child must not hold stdout, or the stream would wait for it. */
    const char *args[] = {"-c", "sleep 60 >/dev/null 2>&1 & echo $!; wait"};
    e2b_proc_opts po = {.cmd = "/bin/sh", .args = args, .arg_count = 2, .timeout_ms = 30000};
    return e2b_proc_start(s->box.sbx, &po, err);
  }
  case D_GROUP_SIGNAL: return e2b_proc_signal(s->box.sbx, s->pid, NULL, 15, err);
  case D_GROUP_CHECK: {
    /* A signalled child is gone once it is a zombie too: its reaper may be
     * slow on a loaded machine, so look for up to 2 s before saying alive. */
    char script[320];
    snprintf(script, sizeof script,
             "i=0; while kill -0 %ld 2>/dev/null; do "
             "case $(sed 's/.*) //' /proc/%ld/stat 2>/dev/null) in Z*) break;; esac; "
             "i=$((i+1)); [ $i -ge 100 ] && { echo alive; exit 0; }; sleep 0.02; done; echo gone",
             s->child_pid, s->child_pid);
    const char *args[] = {"-c", script};
    e2b_proc_opts po = {.cmd = "/bin/sh", .args = args, .arg_count = 2, .timeout_ms = 10000};
    return e2b_run(s->box.sbx, &po, NULL, 0, 64, err);
  }
  case D_VOLUMES: return e2b_volume_list(c, err);
  case D_SNAPSHOTS: return e2b_snapshot_list(c, "libe2b-doctor-none", err);
  case D_NETWORK: {
    e2b_network n = {0};
    return e2b_sandbox_set_network(c, s->box.sb.sandbox_id, &n, err);
  }
  case D_KILL: return e2b_sandbox_kill(c, s->box.sb.sandbox_id, err);
  default: return NULL;
  }
}

/* The first call decides whether the key works at all: without it the
 * rest would only repeat the same failure. */
static void record_list(doctor_state *s, e2b_doctor_report *r, e2b_req *done,
                        const e2b_error *err) {
  r->auth = err ? (err->code == E2B_ERR_AUTH ? 0 : -1) : 1;
  if (err) {
    note(r->notes, sizeof r->notes, "list", err);
    s->stage = D_DONE;
    return;
  }
  /* Pagination is visible only with more than one sandbox; otherwise unknown. */
  r->pagination = e2b_req_sandbox_count(done) > 1 ? 0 : e2b_req_next_token(done) ? 1 : -1;
  s->stage = D_LIMITS;
}

/* The create found the backend's route (create.c); without a sandbox the
 * envd probes are skipped, the control-plane ones still run. */
static void record_create(doctor_state *s, e2b_doctor_report *r, e2b_req *done,
                          const e2b_error *err) {
  if (err) {
    note(r->notes, sizeof r->notes, "create", err);
    s->stage = D_VOLUMES;
    return;
  }
  r->create_route = strdup(s->box.client->create_route == E2B_ROUTE_V1 ? "/sandboxes" : "/v2/sandboxes");
  if (e2b_take_sandbox(done, &s->box.sb) != 0) {
    s->stage = D_VOLUMES;
    return;
  }
  s->box.allocated = 1;
  r->envd_version = e2b_strdup0(s->box.sb.envd_version);
  e2b_error e2;
  s->box.sbx = e2b_sbx_new(s->box.client, s->box.sb.sandbox_id, s->box.sb.envd_access_token,
                           s->box.sb.domain, &e2);
  s->stage = s->box.sbx ? D_READY : D_KILL;
}

/* An optional feature's step: supported, not, or unknown (tri); then the
 * next one, the network update only with a sandbox to update. */
static void record_feature(doctor_state *s, e2b_doctor_report *r, const e2b_error *err) {
  *(s->stage == D_VOLUMES ? &r->volumes : s->stage == D_SNAPSHOTS ? &r->snapshots : &r->network_update) =
      tri(err);
  s->stage = s->stage == D_SNAPSHOTS && !s->box.allocated ? D_DONE : s->stage + 1;
}

/* Records what a finished step showed and picks the next stage. */
static void doctor_record(e2b_req *op, doctor_state *s, e2b_req *done) {
  e2b_doctor_report *r = op->result;
  const e2b_error *err = e2b_req_error(done);
  char *notes = r->notes;
  switch (s->stage) {
  case D_LIST: return record_list(s, r, done, err);
  case D_LIMITS:
    if (!err && done->result) {
      r->limits = done->result;
      done->result = NULL;
    }
    s->stage = D_CREATE;
    return;
  case D_CREATE: return record_create(s, r, done, err);
  case D_READY:
    if (err && ++s->polls < 40) return; /* same stage again after a pause */
    r->envd = err ? 0 : 1;
    if (err) note(notes, sizeof r->notes, "envd", err);
    s->stage = err ? D_VOLUMES : D_STDIN;
    return;
  case D_STDIN: {
    const e2b_run_result *rr = e2b_req_run_result(done);
    r->stdin_close = !err && rr && rr->out_len == 2 ? 1 : err && err->code == E2B_ERR_TIMEOUT ? 0 : -1;
    if (err) note(notes, sizeof r->notes, "stdin close", err);
    s->stage = D_GROUP_START;
    return;
  }
  case D_GROUP_SIGNAL:
    if (err) {
      r->group_signals = -1;
      note(notes, sizeof r->notes, "signal", err);
      s->stage = D_VOLUMES;
      return;
    }
    s->stage = D_GROUP_WAIT;
    return;
  case D_GROUP_CHECK: {
    const e2b_run_result *rr = e2b_req_run_result(done);
    if (err || !rr) {
      r->group_signals = -1;
      note(notes, sizeof r->notes, "group signal check", err);
    } else {
      r->group_signals = strncmp((const char *)rr->out, "gone", 4) == 0;
    }
    s->stage = D_VOLUMES;
    return;
  }
  case D_VOLUMES:
  case D_SNAPSHOTS:
  case D_NETWORK: return record_feature(s, r, err);
  case D_KILL:
    if (!err || err->code == E2B_ERR_NOT_FOUND) s->box.allocated = 0;
    else note(notes, sizeof r->notes, "kill", err);
    s->stage = D_DONE;
    return;
  default: return;
  }
}

/* The group-signal probe reads the child's pid from a live stream. */
static int doctor_stream(e2b_req *op, doctor_state *s) {
  e2b_proc_event ev;
  int rc;
  while ((rc = e2b_req_peek_event(s->stream, &ev)) == 1) {
    if (ev.type == E2B_EVENT_START) s->pid = ev.pid;
    if (ev.type == E2B_EVENT_STDOUT) e2b_growbuf_append(&s->out, ev.data, ev.len);
    e2b_req_consume(s->stream, ev.len);
  }
  if (s->stage == D_GROUP_START && s->pid && s->out.len && memchr(s->out.data, '\n', s->out.len)) {
    s->child_pid = strtol(s->out.data, NULL, 10);
    s->stage = D_GROUP_SIGNAL;
    return 1;
  }
  if (rc < 0) {
    e2b_doctor_report *r = op->result;
    if (s->stage == D_GROUP_START) {
      r->group_signals = -1;
      note(r->notes, sizeof r->notes, "group probe", e2b_req_error(s->stream));
      s->stage = D_VOLUMES;
    } else {
      s->stage = D_GROUP_CHECK; /* the signaled shell ended */
    }
    e2b_req_free(s->stream);
    s->stream = NULL;
    return 1;
  }
  return 0;
}

static void doctor_advance(e2b_req *op) {
  doctor_state *s = op->state;
  e2b_error err;
  for (;;) {
    if (op->timer_at_ms) return;
    if (s->stream && (s->stage == D_GROUP_START || s->stage == D_GROUP_WAIT)) {
      if (!doctor_stream(op, s)) return;
      continue;
    }
    if (s->child) {
      if (!e2b_req_done(s->child)) return;
      int stage = s->stage;
      doctor_record(op, s, s->child);
      e2b_req_free(s->child);
      s->child = NULL;
      if (stage == D_READY && s->stage == D_READY) return e2b_req_arm_timer(op, 250);
      continue;
    }
    if (s->stage == D_DONE) return e2b_op_finish(op, NULL);
    e2b_req *next = doctor_step(op, s, &err);
    if (!next) {
      /* Could not even start this probe: note it and move on. */
      note(((e2b_doctor_report *)op->result)->notes, sizeof ((e2b_doctor_report *)op->result)->notes,
           "probe", &err);
      s->stage = s->box.allocated && s->stage < D_KILL ? D_KILL : D_DONE;
      continue;
    }
    e2b_op_child(op, next);
    if (s->stage == D_GROUP_START)
      s->stream = next;
    else
      s->child = next;
    return;
  }
}

#define REPORT_AT(f) offsetof(e2b_doctor_report, f)
static void report_free(void *r) {
  e2b_free_owned(r, E2B_FIELDS(REPORT_AT(create_route), REPORT_AT(envd_version), REPORT_AT(limits)));
}

static const e2b_op_kind doctor_kind = {
    .size = sizeof(doctor_state), .release = box_release,
    .children = E2B_FIELDS(offsetof(doctor_state, child), offsetof(doctor_state, stream)),
    .bufs = E2B_FIELDS(offsetof(doctor_state, out)),
    .holds = E2B_OP_HOLDS_CLIENT, .ref = offsetof(doctor_state, box.client)};

e2b_req *e2b_doctor(e2b_client *c, e2b_error *err) {
  e2b_error_clear(err);
  if (!c) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "doctor", "client is required");
    return NULL;
  }
  e2b_req *op = e2b_op_new(&doctor_kind, c, NULL, "doctor", doctor_advance, NULL, err);
  e2b_doctor_report *r = op ? calloc(1, sizeof *r) : NULL;
  if (!r) return op ? e2b_op_nomem(op, err) : NULL;
  r->auth = r->envd = r->stdin_close = r->group_signals = -1;
  r->volumes = r->snapshots = r->network_update = r->pagination = -1;
  op->result = r;
  op->result_free = report_free;
  return e2b_req_typed(op, E2B_RESULT_DOCTOR);
}

const e2b_doctor_report *e2b_req_doctor_report(const e2b_req *req) {
  return req->result_kind == E2B_RESULT_DOCTOR ? req->result : NULL;
}

/* ---- verify_egress ---- */

enum { V_CREATE, V_PROBE, V_KILL, V_DONE };

typedef struct egress_state {
  probe_box box; /* first: the kind releases it (box_release) */
  int stage;
  e2b_req *child;
  char *allow_host, *allowed_url, *denied_url, *ip_url, *template_id;
  long timeout_ms;
} egress_state;

/* One curl per target; a line "<code>" each (000 when nothing answered). */
static const char EGRESS_SCRIPT[] =
    "command -v curl >/dev/null || exit 127\n"
    "for u in \"$@\"; do curl -s -o /dev/null -w '%{http_code}\\n' --max-time \"$T\" \"$u\" "
    "|| true; done\n";

static void egress_classify(e2b_egress_report *r, const e2b_run_result *rr) {
  int codes[3] = {0, 0, 0};
  const char *p = (const char *)rr->out;
  for (int i = 0; i < 3 && p && *p; i++) {
    codes[i] = atoi(p);
    p = strchr(p, '\n');
    if (p) p++;
  }
  r->allowed_code = codes[0];
  r->denied_code = codes[1];
  r->ip_code = codes[2];
  if (rr->exit_code == 127) {
    r->verdict = E2B_EGRESS_INCONCLUSIVE;
    snprintf(r->detail, sizeof r->detail, "no curl in the sandbox to observe with");
  } else if (!r->allowed_code) {
    r->verdict = E2B_EGRESS_INCONCLUSIVE;
    snprintf(r->detail, sizeof r->detail, "the allowed host did not answer, so nothing was observed");
  } else if (r->denied_code || r->ip_code) {
    r->verdict = E2B_EGRESS_OPEN;
    snprintf(r->detail, sizeof r->detail, "%s answered from inside",
             r->denied_code ? "a host off the allow-list" : "a raw IP off the allow-list");
  } else {
    r->verdict = E2B_EGRESS_FILTERED;
    snprintf(r->detail, sizeof r->detail, "allowed host answered %d; the others did not answer",
             r->allowed_code);
  }
}

static void egress_advance(e2b_req *op) {
  egress_state *s = op->state;
  e2b_egress_report *r = op->result;
  e2b_error err;
  for (;;) {
    if (s->child) {
      if (!e2b_req_done(s->child)) return;
      const e2b_error *cerr = e2b_req_error(s->child);
      if (s->stage == V_CREATE) {
        if (cerr || e2b_take_sandbox(s->child, &s->box.sb) != 0) {
          snprintf(r->detail, sizeof r->detail, "could not create the probe sandbox: %.200s",
                   cerr ? cerr->message : "the answer names no sandbox");
          s->stage = V_DONE;
        } else {
          s->box.allocated = 1;
          s->box.sbx = e2b_sbx_new(s->box.client, s->box.sb.sandbox_id, s->box.sb.envd_access_token,
                                   s->box.sb.domain, &err);
          s->stage = s->box.sbx ? V_PROBE : V_KILL;
        }
      } else if (s->stage == V_PROBE) {
        const e2b_run_result *rr = e2b_req_run_result(s->child);
        if (cerr || !rr)
          snprintf(r->detail, sizeof r->detail, "could not run the probes: %.200s",
                   cerr ? cerr->message : "no result");
        else
          egress_classify(r, rr);
        s->stage = V_KILL;
      } else {
        if (!cerr || cerr->code == E2B_ERR_NOT_FOUND) s->box.allocated = 0;
        s->stage = V_DONE;
      }
      e2b_req_free(s->child);
      s->child = NULL;
      continue;
    }
    e2b_req *next = NULL;
    if (s->stage == V_CREATE) {
      const char *allow[] = {s->allow_host};
      const char *deny[] = {"0.0.0.0/0"};
      e2b_network net = {.allow_out = allow, .allow_out_count = 1, .deny_out = deny, .deny_out_count = 1};
      /* provision tags it with the owner, as every sandbox the client creates */
      e2b_provision_opts po = {
          .create = {.template_id = s->template_id, .timeout_ms = 120000, .auto_pause = E2B_NO},
          .network = &net};
      next = e2b_sandbox_provision(s->box.client, &po, &err);
    } else if (s->stage == V_PROBE) {
      char t[24];
      snprintf(t, sizeof t, "%ld", (s->timeout_ms + 999) / 1000);
      e2b_kv env = {"T", t};
      const char *args[] = {"-c", EGRESS_SCRIPT, "egress", s->allowed_url, s->denied_url, s->ip_url};
      e2b_proc_opts po = {.cmd = "/bin/sh", .args = args, .arg_count = 6, .env = &env,
                          .env_count = 1, .timeout_ms = s->timeout_ms * 4 + 10000};
      next = e2b_run(s->box.sbx, &po, NULL, 0, 256, &err);
    } else if (s->stage == V_KILL) {
      next = e2b_sandbox_kill(s->box.client, s->box.sb.sandbox_id, &err);
    } else {
      return e2b_op_finish(op, NULL);
    }
    if (!next) {
      snprintf(r->detail, sizeof r->detail, "could not look: %.200s", err.message);
      s->stage = s->box.allocated && s->stage < V_KILL ? V_KILL : V_DONE;
      continue;
    }
    s->child = e2b_op_child(op, next);
    return;
  }
}

static char *dup_or_format(const char *given, const char *fmt, const char *arg) {
  if (given) return strdup(given);
  size_t n = strlen(fmt) + (arg ? strlen(arg) : 0) + 1;
  char *out = malloc(n);
  if (out) snprintf(out, n, fmt, arg ? arg : "");
  return out;
}

#define EGRESS_AT(f) offsetof(egress_state, f)
static const e2b_op_kind egress_kind = {
    .size = sizeof(egress_state), .release = box_release, .children = E2B_FIELDS(EGRESS_AT(child)),
    .allocs = E2B_FIELDS(EGRESS_AT(allow_host), EGRESS_AT(allowed_url), EGRESS_AT(denied_url),
                         EGRESS_AT(ip_url), EGRESS_AT(template_id)),
    .holds = E2B_OP_HOLDS_CLIENT, .ref = EGRESS_AT(box.client)};

e2b_req *e2b_verify_egress(e2b_client *c, const e2b_egress_opts *o, e2b_error *err) {
  static const e2b_egress_opts defaults = {0};
  e2b_error_clear(err);
  if (!c) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "verify_egress", "client is required");
    return NULL;
  }
  if (!o) o = &defaults;
  if (o->timeout_ms < 0) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "verify_egress", "timeout_ms must not be negative");
    return NULL;
  }
  e2b_req *op = e2b_op_new(&egress_kind, c, NULL, "verify_egress", egress_advance, NULL, err);
  if (!op) return NULL;
  egress_state *s = op->state;
  e2b_egress_report *r = calloc(1, sizeof *r);
  if (!r) return e2b_op_nomem(op, err);
  op->result = r;
  op->result_free = free;
  s->allow_host = dup_or_format(o->allow_host, "example.com", NULL);
  s->allowed_url = dup_or_format(o->allowed_url, "https://%s", s->allow_host);
  s->denied_url = dup_or_format(o->denied_url, "https://example.org", NULL);
  s->ip_url = dup_or_format(o->ip_url, "http://1.1.1.1", NULL);
  s->template_id = e2b_strdup0(o->template_id);
  s->timeout_ms = o->timeout_ms ? o->timeout_ms : 5000;
  if (!s->allow_host || !s->allowed_url || !s->denied_url || !s->ip_url ||
      (o->template_id && !s->template_id))
    return e2b_op_nomem(op, err);
  snprintf(r->detail, sizeof r->detail, "not observed");
  return e2b_req_typed(op, E2B_RESULT_EGRESS);
}

const e2b_egress_report *e2b_req_egress_report(const e2b_req *req) {
  return req->result_kind == E2B_RESULT_EGRESS ? req->result : NULL;
}
