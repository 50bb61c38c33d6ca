/* faults.c — the fault rule table, glob matching and the seeded PRNG. */
#define _GNU_SOURCE
#include "faults.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

typedef struct rule {
  int id;
  char *match; /* as given */
  char *method; /* NULL = any */
  char *glob;   /* NULL = any */
  fault_hit act;
  int64_t remaining; /* -1 = unlimited */
  double probability;
  int64_t hits;
  json_t *spec; /* the rule as added, for listing */
} rule;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static rule *g_rules;
static size_t g_n, g_cap;
static int g_next_id = 1;
static uint64_t g_rng = 0x853c49e6748fea9bULL;
static int64_t g_seed;

/* splitmix64: tiny, fast and fully determined by the seed. */
static uint64_t rng_next(void) {
  uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static double rng_unit(void) { return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0); }

/* '*' matches any run of characters (slashes included). */
static int glob_match(const char *g, const char *s) {
  const char *star = NULL, *mark = NULL;
  while (*s) {
    if (*g == '*') {
      star = g++;
      mark = s;
    } else if (*g == *s) {
      g++;
      s++;
    } else if (star) {
      g = star + 1;
      s = ++mark;
    } else {
      return 0;
    }
  }
  while (*g == '*') g++;
  return *g == '\0';
}

int faults_check(const char *method, const char *match_path, fault_hit *hit) {
  int fired = 0;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_n && !fired; i++) {
    rule *r = &g_rules[i];
    if (r->remaining == 0) continue;
    if (r->method && strcmp(r->method, "*") != 0 && strcasecmp(r->method, method) != 0) continue;
    if (r->glob && !glob_match(r->glob, match_path)) continue;
    if (r->probability < 1.0 && rng_unit() >= r->probability) continue;
    if (r->remaining > 0) r->remaining--;
    r->hits++;
    *hit = r->act;
    hit->rule_id = r->id;
    fired = 1;
  }
  pthread_mutex_unlock(&g_mu);
  return fired;
}

static json_t *bad(int *status, const char *fmt, const char *what) {
  char msg[256];
  snprintf(msg, sizeof msg, fmt, what);
  *status = 400;
  return json_pack("{s:i, s:s}", "code", 400, "message", msg);
}

static int get_int(json_t *o, const char *key, int64_t lo, int64_t hi, int64_t dflt, int64_t *out) {
  json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) {
    *out = dflt;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) return -1;
  *out = json_integer_value(v);
  return 0;
}

/* Parses one rule; returns NULL (and the error body in *err) when invalid. */
static int parse_rule(json_t *j, rule *out, json_t **err, int *status) {
  memset(out, 0, sizeof *out);
  if (!json_is_object(j)) {
    *err = bad(status, "%s", "each rule must be a JSON object");
    return -1;
  }
  const char *match = json_string_value(json_object_get(j, "match"));
  const char *action = json_string_value(json_object_get(j, "action"));
  if (!match || !*match) {
    *err = bad(status, "%s", "rule.match is required (\"<METHOD> <path-glob>\" or \"*\")");
    return -1;
  }
  if (!action) {
    *err = bad(status, "%s", "rule.action is required (status, stall, drop or drop_mid_stream)");
    return -1;
  }
  int64_t count, st, ra, ms, ev, by;
  if (get_int(j, "count", 1, INT64_MAX, -1, &count)) {
    *err = bad(status, "%s", "rule.count must be a positive integer");
    return -1;
  }
  json_t *p = json_object_get(j, "probability");
  double prob = 1.0;
  if (p && !json_is_null(p)) {
    if (!json_is_number(p) || json_number_value(p) < 0 || json_number_value(p) > 1) {
      *err = bad(status, "%s", "rule.probability must be a number between 0 and 1");
      return -1;
    }
    prob = json_number_value(p);
  }
  fault_hit a = {.retry_after_s = -1, .after_events = -1, .after_bytes = -1};
  if (strcmp(action, "status") == 0) {
    if (get_int(j, "status", 100, 599, -1, &st) || st < 0 || get_int(j, "retry_after_s", 0, 86400, -1, &ra)) {
      *err = bad(status, "%s", "a status rule needs \"status\" (100-599) and an optional \"retry_after_s\" >= 0");
      return -1;
    }
    a.action = FA_STATUS;
    a.status = (int)st;
    a.retry_after_s = (int)ra;
  } else if (strcmp(action, "stall") == 0) {
    if (get_int(j, "ms", 0, 600000, -1, &ms) || ms < 0) {
      *err = bad(status, "%s", "a stall rule needs \"ms\" (0-600000)");
      return -1;
    }
    a.action = FA_STALL;
    a.ms = (int)ms;
  } else if (strcmp(action, "drop") == 0) {
    a.action = FA_DROP;
  } else if (strcmp(action, "drop_mid_stream") == 0) {
    if (get_int(j, "after_events", 0, INT64_MAX, -1, &ev) || get_int(j, "after_bytes", 0, INT64_MAX, -1, &by)) {
      *err = bad(status, "%s", "after_events and after_bytes must be integers >= 0");
      return -1;
    }
    a.action = FA_DROP_MID;
    a.after_events = ev < 0 && by < 0 ? 0 : ev;
    a.after_bytes = by;
  } else {
    *err = bad(status, "unknown action '%.40s' (status, stall, drop or drop_mid_stream)", action);
    return -1;
  }
  out->match = xstrdup(match);
  if (strcmp(match, "*") != 0) {
    const char *sp = strchr(match, ' ');
    if (!sp || sp == match || !sp[1]) {
      free(out->match);
      *err = bad(status, "%s", "rule.match must be \"<METHOD> <path-glob>\" or \"*\"");
      return -1;
    }
    out->method = strndup(match, (size_t)(sp - match));
    while (*sp == ' ') sp++;
    out->glob = xstrdup(sp);
  }
  out->act = a;
  out->remaining = count;
  out->probability = prob;
  out->spec = json_deep_copy(j);
  return 0;
}

static void rule_free(rule *r) {
  free(r->match);
  free(r->method);
  free(r->glob);
  json_decref(r->spec);
}

static json_t *rule_json(const rule *r) {
  json_t *o = json_deep_copy(r->spec);
  json_object_set_new(o, "id", json_integer(r->id));
  json_object_set_new(o, "remaining", r->remaining < 0 ? json_null() : json_integer(r->remaining));
  json_object_set_new(o, "hits", json_integer(r->hits));
  return o;
}

json_t *faults_add(json_t *body, int *status) {
  json_t *rules = json_object_get(body, "rules");
  json_t *seed = json_object_get(body, "seed");
  if (!json_is_object(body) || !json_is_array(rules))
    return bad(status, "%s", "body must be {\"seed\": <int>, \"rules\": [...]}");
  if (seed && !json_is_null(seed) && !json_is_integer(seed)) return bad(status, "%s", "seed must be an integer");
  size_t n = json_array_size(rules);
  rule *parsed = xcalloc(n + 1, sizeof *parsed);
  json_t *err = NULL;
  for (size_t i = 0; i < n; i++) {
    if (parse_rule(json_array_get(rules, i), &parsed[i], &err, status) == 0) continue;
    for (size_t k = 0; k < i; k++) rule_free(&parsed[k]);
    free(parsed);
    return err;
  }
  json_t *out = json_array();
  pthread_mutex_lock(&g_mu);
  if (json_is_integer(seed)) {
    g_seed = json_integer_value(seed);
    g_rng = (uint64_t)g_seed;
  }
  for (size_t i = 0; i < n; i++) {
    if (g_n == g_cap) {
      g_cap = g_cap ? g_cap * 2 : 16;
      g_rules = xrealloc(g_rules, g_cap * sizeof *g_rules);
    }
    parsed[i].id = g_next_id++;
    g_rules[g_n] = parsed[i];
    json_array_append_new(out, rule_json(&g_rules[g_n]));
    g_n++;
  }
  pthread_mutex_unlock(&g_mu);
  free(parsed);
  *status = 200;
  return json_pack("{s:o}", "rules", out);
}

json_t *faults_list(void) {
  json_t *arr = json_array();
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_n; i++) json_array_append_new(arr, rule_json(&g_rules[i]));
  json_t *o = json_pack("{s:I, s:o}", "seed", (json_int_t)g_seed, "rules", arr);
  pthread_mutex_unlock(&g_mu);
  return o;
}

void faults_clear(void) {
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_n; i++) rule_free(&g_rules[i]);
  free(g_rules);
  g_rules = NULL;
  g_n = g_cap = 0;
  pthread_mutex_unlock(&g_mu);
}
