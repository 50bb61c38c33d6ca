/* tplbuild.c — E2B's template-build routes: request a build (POST
 * /v3/templates), start it (POST /v2/templates/{id}/builds/{build}), its
 * status and logs, the files upload link, tags; validated as E2B's API
 * validates them (packages/api: template_request_build_v3.go,
 * template_start_build_v2.go, template_build_status.go, template_tags.go).
 * The registry is tplreg.c's, the builds tplbuild_run.c's. */
#define _GNU_SOURCE
#include "tplbuild.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define STATUS_PAGE 100

int tplbuild_init(const char *state_dir) {
  if (tplreg_init(state_dir) != 0) return -1;
  return tplfiles_init(state_dir);
}

void tplbuild_stop(void) { tplreg_stop(); }
void tplbuild_shutdown(void) { tplreg_shutdown(); }

/* ---- POST /v3/templates ---- */

static json_t *body_of(http_req *r, enum MHD_Result *res) {
  json_t *b = http_body_json(r, res);
  if (b && !json_is_object(b)) {
    json_decref(b);
    *res = http_error(r->conn, 400, "Invalid request body: expected a JSON object");
    return NULL;
  }
  return b;
}

/* The body's fields have the types E2B's TemplateBuildRequestV3 gives them. */
static const char *request_types(json_t *b) {
  static const char *strs[] = {"name", "alias", "teamID", NULL};
  for (int i = 0; strs[i]; i++) {
    json_t *v = json_object_get(b, strs[i]);
    if (v && !json_is_null(v) && !json_is_string(v)) return strs[i];
  }
  static const char *ints[] = {"cpuCount", "memoryMB", "minFreeDiskMb", NULL};
  for (int i = 0; ints[i]; i++) {
    json_t *v = json_object_get(b, ints[i]);
    if (v && !json_is_null(v) && (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX))
      return ints[i];
  }
  json_t *tags = json_object_get(b, "tags");
  if (tags && !json_is_null(tags) && !tplreg_string_array(tags, 256)) return "tags";
  return NULL;
}

/* E2B's LimitResources with its default team's limits (8 vCPUs, 8 GiB):
 * NULL, or the message of its 400. */
static const char *resource_error(json_t *b, char *msg, size_t cap) {
  json_t *cpu = json_object_get(b, "cpuCount"), *mem = json_object_get(b, "memoryMB");
  long long c = json_integer_value(cpu), m = json_integer_value(mem);
  if (json_is_integer(cpu) && c < 1) return "CPU count must be at least 1";
  if (json_is_integer(cpu) && c > 32) return "CPU count must be at most 32";
  if (json_is_integer(cpu) && c != 1 && c % 2) return "CPU count must be 1 or an even number";
  if (json_is_integer(cpu) && c > 8)
    return "CPU count can't be higher than 8 (if you need to increase this limit, please contact support)";
  if (json_is_integer(mem) && m < 128) return "Memory must be at least 128 MiB";
  if (json_is_integer(mem) && m % 2) return "Memory must be divisible by 2";
  if (json_is_integer(mem) && m > 8192) {
    snprintf(msg, cap, "Memory can't be higher than %d MiB (if you need to increase this limit, please contact support)", 8192);
    return msg;
  }
  return NULL;
}

static enum MHD_Result request_answer(http_req *r, const tplreg_name *p, json_t *tags) {
  int status = 500;
  char err[300] = "";
  json_t *out = tplreg_request(p, tags, &status, err, sizeof err);
  if (!out) return http_error(r->conn, (unsigned)status, "%s", err);
  return http_json(r->conn, 202, out);
}

enum MHD_Result tplbuild_h_request(http_req *r) {
  enum MHD_Result res;
  json_t *b = body_of(r, &res);
  if (!b) return res;
  const char *bad = request_types(b);
  const char *input = json_string_value(json_object_get(b, "name"));
  if (!input) input = json_string_value(json_object_get(b, "alias"));
  tplreg_name p;
  char err[400];
  json_t *all = json_array(), *tags = NULL;
  int pr = 0;
  if (bad) {
    res = http_error(r->conn, 400, "Invalid request body: field '%s' has the wrong type", bad);
  } else if (!input) {
    res = http_error(r->conn, 400, "Name is required");
  } else if ((pr = tplreg_parse_name(input, &p, err, sizeof err)) != 0) {
    res = pr == -2 ? http_error(r->conn, 400, "%s", err) : http_error(r->conn, 400, "Invalid name: %s", err);
  } else {
    if (p.has_tag && p.tag[0]) json_array_append_new(all, json_string(p.tag));
    if (json_is_array(json_object_get(b, "tags"))) json_array_extend(all, json_object_get(b, "tags"));
    tags = tplreg_clean_tags(all, err, sizeof err);
    const char *limit = tags ? resource_error(b, err, sizeof err) : NULL;
    if (!tags) res = http_error(r->conn, 400, "Invalid tag: %s", err);
    else if (limit) res = http_error(r->conn, 400, "%s", limit);
    else if (!json_array_size(tags)) json_array_append_new(tags, json_string("default"));
    if (tags && !limit) res = request_answer(r, &p, tags);
  }
  json_decref(all);
  json_decref(tags);
  json_decref(b);
  return res;
}

/* ---- POST /v2/templates/{templateID}/builds/{buildID} ---- */

static const char *trigger_types(json_t *b) {
  static const char *strs[] = {"fromImage", "fromTemplate", "startCmd", "readyCmd", NULL};
  for (int i = 0; strs[i]; i++) {
    json_t *v = json_object_get(b, strs[i]);
    if (v && !json_is_null(v) && !json_is_string(v)) return strs[i];
  }
  json_t *f = json_object_get(b, "force"), *reg = json_object_get(b, "fromImageRegistry");
  if (f && !json_is_null(f) && !json_is_boolean(f)) return "force";
  if (reg && !json_is_null(reg) && !json_is_object(reg)) return "fromImageRegistry";
  json_t *steps = json_object_get(b, "steps");
  if (steps && !json_is_null(steps) && !json_is_array(steps)) return "steps";
  for (size_t i = 0; i < json_array_size(steps); i++) {
    json_t *s = json_array_get(steps, i), *fh = json_object_get(s, "filesHash"), *sf = json_object_get(s, "force");
    json_t *args = json_object_get(s, "args");
    if (!json_is_object(s) || !json_is_string(json_object_get(s, "type"))) return "steps";
    if ((args && !json_is_null(args) && !tplreg_string_array(args, 1024)) || (fh && !json_is_null(fh) && !json_is_string(fh)) ||
        (sf && !json_is_null(sf) && !json_is_boolean(sf)))
      return "steps";
  }
  return NULL;
}

/* "/<prefix><templateID>/builds/<buildID><suffix>": the two ids. */
static int two_ids(const char *url, const char *prefix, const char *suffix, char *tid, char *bid) {
  size_t pl = strlen(prefix), sl = strlen(suffix), n = strlen(url);
  if (strncmp(url, prefix, pl) != 0 || n < pl + sl || strcmp(url + n - sl, suffix) != 0) return 0;
  const char *mid = strstr(url + pl, "/builds/");
  const char *after = mid ? strchr(mid + 8, '/') : NULL;
  if (!mid || (after && after < url + n - sl)) return 0;
  size_t tl = (size_t)(mid - url - pl), bl = (size_t)(url + n - sl - mid - 8);
  if (!tl || !bl || tl > 128 || bl > 128 || memchr(url + pl, '/', tl)) return 0;
  memcpy(tid, url + pl, tl);
  tid[tl] = '\0';
  memcpy(bid, mid + 8, bl);
  bid[bl] = '\0';
  return 1;
}

static enum MHD_Result start_build(http_req *r, const char *tid, const char *bid, json_t *body) {
  int has_img = json_is_string(json_object_get(body, "fromImage")), has_tpl = json_is_string(json_object_get(body, "fromTemplate"));
  tb_build *b;
  int state = tplreg_begin(tid, bid, has_img == has_tpl, &b);
  if (state < 0) return http_error(r->conn, 404, "Error when getting template: no rows in result set");
  if (state > 0) return http_error(r->conn, 400, "build is not in waiting state");
  if (has_img == has_tpl)
    return http_error(r->conn, 500, "Error when starting template build: failed to set template source: %s",
                      has_img ? "cannot specify both fromImage and fromTemplate" : "must specify either fromImage or fromTemplate");
  tplbuild_run_start(b, body, tid);
  return http_empty(r->conn, 202);
}

enum MHD_Result tplbuild_h_v2(http_req *r) {
  char tid[130], bid[130];
  if (!two_ids(r->url, "/v2/templates/", "", tid, bid)) return http_error(r->conn, 404, "no route for %s %s", r->method, r->url);
  enum MHD_Result res;
  json_t *b = body_of(r, &res);
  if (!b) return res;
  const char *bad = trigger_types(b);
  if (bad) res = http_error(r->conn, 400, "Invalid request body: field '%s' has the wrong type", bad);
  else if (!tplreg_uuid_shaped(bid)) res = http_error(r->conn, 400, "Invalid build ID: %s", bid);
  else res = start_build(r, tid, bid, b);
  json_decref(b);
  return res;
}

/* ---- GET /templates/{id}/builds/{build}/status ---- */

static int query_num(http_req *r, const char *name, long long dflt, long long *out) {
  const char *s = http_query(r->conn, name);
  *out = dflt;
  if (!s || !*s) return 0;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < INT32_MIN || v > INT32_MAX) return -1;
  *out = v;
  return 0;
}

static enum MHD_Result build_status(http_req *r, const char *tid, const char *bid) {
  long long offset, limit;
  const char *lvl = http_query(r->conn, "level");
  if (query_num(r, "logsOffset", 0, &offset) || query_num(r, "limit", STATUS_PAGE, &limit))
    return http_error(r->conn, 400, "Invalid format for parameter %s", http_query(r->conn, "limit") ? "limit" : "logsOffset");
  if (lvl && tplreg_level_rank(lvl) < 0) return http_error(r->conn, 400, "Invalid format for parameter level");
  if (!tplreg_uuid_shaped(bid)) return http_error(r->conn, 400, "Invalid build id");
  if (limit > STATUS_PAGE || limit < 0) limit = STATUS_PAGE;
  json_t *out = tplreg_status(tid, bid, offset, limit, lvl ? tplreg_level_rank(lvl) : 0);
  if (!out) return http_error(r->conn, 400, "Build '%s' not found", bid);
  return http_json(r->conn, 200, out);
}

/* ---- GET /templates/{id}/files/{hash}, GET /templates/{id}/tags ---- */

static enum MHD_Result files_link(http_req *r, const char *tid, const char *hash) {
  if (!tplfiles_hash_ok(hash)) return http_error(r->conn, 400, "Invalid files hash");
  if (!tplreg_known_id(tid)) return http_error(r->conn, 404, "Error when getting template: no rows in result set");
  char *url = tplfiles_upload_url(hash);
  json_t *out = json_pack("{s:b, s:s}", "present", tplfiles_present(hash), "url", url);
  free(url);
  return http_json(r->conn, 201, out);
}

static enum MHD_Result tags_list(http_req *r, const char *ref) {
  tplreg_name p;
  char err[300];
  if (tplreg_parse_name(ref, &p, err, sizeof err) == -1) return http_error(r->conn, 400, "Invalid template reference: %s", err);
  json_t *out = tplreg_tags(p.alias);
  if (!out) return http_error(r->conn, 404, "template '%s' not found", p.alias);
  return http_json(r->conn, 200, out);
}

enum MHD_Result tplbuild_h_get(http_req *r) {
  char tid[130], bid[130];
  if (two_ids(r->url, "/templates/", "/status", tid, bid)) return build_status(r, tid, bid);
  const char *rest = r->url + strlen("/templates/");
  const char *slash = strchr(rest, '/');
  size_t tl = slash ? (size_t)(slash - rest) : 0;
  if (slash && tl && tl < sizeof tid) {
    memcpy(tid, rest, tl);
    tid[tl] = '\0';
    if (strncmp(slash, "/files/", 7) == 0 && !strchr(slash + 7, '/')) return files_link(r, tid, slash + 7);
    if (strcmp(slash, "/tags") == 0) return tags_list(r, tid);
  }
  return http_error(r->conn, 404, "no route for %s %s", r->method, r->url);
}

/* ---- POST and DELETE /templates/tags ---- */

static enum MHD_Result tags_assign(http_req *r, const tplreg_name *p, json_t *tags) {
  int status;
  char msg[400];
  json_t *out = tplreg_tag_assign(p, tags, &status, msg, sizeof msg);
  if (!out) return http_error(r->conn, (unsigned)status, "%s", msg);
  return http_json(r->conn, 201, out);
}

enum MHD_Result tplbuild_h_tags_add(http_req *r) {
  enum MHD_Result res;
  json_t *b = body_of(r, &res);
  if (!b) return res;
  json_t *in = json_object_get(b, "tags"), *tags = NULL;
  const char *target = json_string_value(json_object_get(b, "target"));
  tplreg_name p;
  char err[400];
  int pr;
  if (!target || !tplreg_string_array(in, 256)) {
    res = http_error(r->conn, 400, "Invalid request body: fields 'target' (string) and 'tags' (array of strings) are required");
  } else if (!json_array_size(in)) {
    res = http_error(r->conn, 400, "At least one tag is required");
  } else if ((pr = tplreg_parse_name(target, &p, err, sizeof err)) != 0) {
    res = pr == -2 ? http_error(r->conn, 400, "%s", err) : http_error(r->conn, 400, "Invalid target template format: %s", err);
  } else if (!(tags = tplreg_clean_tags(in, err, sizeof err))) {
    res = http_error(r->conn, 400, "Invalid tag: %s", err);
  } else {
    res = tags_assign(r, &p, tags);
  }
  json_decref(tags);
  json_decref(b);
  return res;
}

static int has_default(json_t *tags) {
  for (size_t i = 0; i < json_array_size(tags); i++)
    if (strcmp(json_string_value(json_array_get(tags, i)), "default") == 0) return 1;
  return 0;
}

static enum MHD_Result tags_remove(http_req *r, const tplreg_name *p, json_t *tags) {
  if (tplreg_tag_remove(p, tags) != 0) return http_error(r->conn, 404, "template '%s' not found", p->alias);
  return http_empty(r->conn, 204);
}

enum MHD_Result tplbuild_h_tags_del(http_req *r) {
  enum MHD_Result res;
  json_t *b = body_of(r, &res);
  if (!b) return res;
  json_t *in = json_object_get(b, "tags"), *tags = NULL;
  const char *name = json_string_value(json_object_get(b, "name"));
  tplreg_name p;
  char err[400];
  int pr;
  if (!name || !tplreg_string_array(in, 256)) {
    res = http_error(r->conn, 400, "Invalid request body: fields 'name' (string) and 'tags' (array of strings) are required");
  } else if (!(tags = tplreg_clean_tags(in, err, sizeof err))) {
    res = http_error(r->conn, 400, "Invalid tag: %s", err);
  } else if (!json_array_size(tags)) {
    res = http_error(r->conn, 400, "At least one tag is required");
  } else if (has_default(tags)) {
    res = http_error(r->conn, 400, "Cannot delete the 'default' tag");
  } else if ((pr = tplreg_parse_name(name, &p, err, sizeof err)) != 0) {
    res = pr == -2 ? http_error(r->conn, 400, "%s", err) : http_error(r->conn, 400, "Invalid template name format: %s", err);
  } else if (p.tag[0]) {
    res = http_error(r->conn, 400, "Template name should not contain a tag, use the 'tags' field instead");
  } else {
    res = tags_remove(r, &p, tags);
  }
  json_decref(tags);
  json_decref(b);
  return res;
}
