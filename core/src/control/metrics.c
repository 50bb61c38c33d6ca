/* metrics.c — GET /sandboxes/{id}/metrics: a sandbox's resource use over
 * time (the SDKs' getMetrics). */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct metric_list {
  e2b_metric *items;
  size_t n;
} metric_list;

static void metrics_free(void *p) {
  metric_list *l = p;
  if (l) free(l->items);
  free(l);
}

/* One entry: its numbers in range (an absent one reads 0, as proto3's
 * JSON omits zeros), cpuUsedPct a number. */
static int parse_metric(json_t *o, e2b_metric *m) {
  int64_t ts, cpus;
  json_t *pct = json_object_get(o, "cpuUsedPct");
  memset(m, 0, sizeof *m);
  if (!json_is_object(o) || e2b_json_int(o, "timestampUnix", NULL, 0, INT64_MAX / 1000, &ts) ||
      e2b_json_int(o, "cpuCount", NULL, 0, INT32_MAX, &cpus) || !json_is_number(pct) ||
      e2b_json_int(o, "memUsed", NULL, 0, INT64_MAX, &m->mem_used) ||
      e2b_json_int(o, "memTotal", NULL, 0, INT64_MAX, &m->mem_total) ||
      e2b_json_int(o, "diskUsed", NULL, 0, INT64_MAX, &m->disk_used) ||
      e2b_json_int(o, "diskTotal", NULL, 0, INT64_MAX, &m->disk_total))
    return -1;
  m->timestamp_ms = ts * 1000;
  m->cpu_count = (int)cpus;
  m->cpu_used_pct = json_number_value(pct);
  if (e2b_json_int(o, "memCache", NULL, 0, INT64_MAX, &m->mem_cache)) return -1;
  return 0;
}

static int parse_metrics(e2b_req *req, json_t *body, e2b_error *err) {
  size_t n = json_array_size(body);
  metric_list *l = calloc(1, sizeof *l);
  if (!json_is_array(body) || !l || (n && !(l->items = calloc(n, sizeof *l->items)))) {
    metrics_free(l);
    e2b_err_set(err, l ? E2B_ERR_PROTOCOL : E2B_ERR_UNAVAILABLE, req->op,
                l ? "metrics are not an array" : "out of memory");
    return -1;
  }
  req->result = l;
  req->result_free = metrics_free;
  for (; l->n < n; l->n++) {
    if (parse_metric(json_array_get(body, l->n), &l->items[l->n]) != 0) {
      e2b_err_set(err, E2B_ERR_PROTOCOL, req->op, "metric %zu is malformed", l->n);
      return -1;
    }
  }
  return 0;
}

e2b_req *e2b_sandbox_metrics(e2b_client *c, const char *sandbox_id, int64_t start_ms, int64_t end_ms,
                             e2b_error *err) {
  const char *bad = start_ms < 0 ? "start" : end_ms < 0 || (end_ms && end_ms < start_ms) ? "end" : NULL;
  if (bad) {
    e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "metrics", "%s must be epoch ms, end not before start", bad);
    return NULL;
  }
  /* E2B takes seconds: the interval is widened to whole ones, never cut. */
  char suffix[96] = "/metrics";
  size_t at = strlen(suffix);
  if (start_ms) at += (size_t)snprintf(suffix + at, sizeof suffix - at, "?start=%" PRId64, start_ms / 1000);
  if (end_ms)
    snprintf(suffix + at, sizeof suffix - at, "%cend=%" PRId64, start_ms ? '&' : '?', (end_ms + 999) / 1000);
  return e2b_req_typed(e2b_on_sandbox(c, "metrics", "GET", sandbox_id, suffix, NULL, parse_metrics, 1, err),
                       E2B_RESULT_METRICS);
}

size_t e2b_req_metric_count(const e2b_req *req) {
  const metric_list *l = req->result_kind == E2B_RESULT_METRICS ? req->result : NULL;
  return l ? l->n : 0;
}

const e2b_metric *e2b_req_metric_at(const e2b_req *req, size_t i) {
  return i < e2b_req_metric_count(req) ? &((metric_list *)req->result)->items[i] : NULL;
}
