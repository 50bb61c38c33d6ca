/* Known-vector tests for parse.c: E2B control-plane JSON and proto3 JSON
 * (camelCase and proto names, int64 as strings, enums by name or number,
 * bytes as std/url-safe base64) into libe2b's result structs. */
#include "internal.h"
#include "testing.h"

#include <stdlib.h>

static json_t *parse(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  if (!j) fprintf(stderr, "bad test JSON: %s\n", e.text);
  return j;
}

static void sandbox_detail_maps_every_field(void) {
  json_t *j = parse("{\"sandboxID\":\"iabc\",\"templateID\":\"base\",\"alias\":\"base\","
                    "\"clientID\":\"c1\",\"envdVersion\":\"0.6.4\",\"envdAccessToken\":\"tok\","
                    "\"domain\":\"localhost:1\",\"state\":\"paused\","
                    "\"startedAt\":\"2023-11-14T22:13:20Z\",\"endAt\":\"2023-11-14T22:18:20.5Z\","
                    "\"cpuCount\":2,\"memoryMB\":512,\"diskSizeMB\":1024,"
                    "\"lifecycle\":{\"onTimeout\":\"pause\",\"autoResume\":true},"
                    "\"metadata\":{\"k\":\"v\",\"lua_e2b_id\":\"x\"}}");
  e2b_sandbox_info s;
  CHECK(e2b_parse_sandbox(j, &s) == 0);
  CHECK_STR(s.sandbox_id, "iabc");
  CHECK_STR(s.template_id, "base");
  CHECK_STR(s.envd_access_token, "tok");
  CHECK_STR(s.domain, "localhost:1");
  CHECK(s.traffic_access_token == NULL);
  CHECK(s.state == E2B_STATE_PAUSED);
  CHECK(s.started_at_ms == 1700000000000LL);
  CHECK(s.end_at_ms == 1700000300500LL);
  CHECK(s.cpu_count == 2 && s.memory_mb == 512 && s.disk_size_mb == 1024);
  CHECK_STR(s.on_timeout, "pause");
  CHECK(s.auto_resume == 1);
  CHECK(s.metadata.count == 2);
  e2b_sandbox_info_clear(&s);
  json_decref(j);
}

static void sandbox_without_id_is_refused(void) {
  json_t *j = parse("{\"templateID\":\"base\"}");
  e2b_sandbox_info s;
  CHECK(e2b_parse_sandbox(j, &s) == -1);
  json_decref(j);
  CHECK(e2b_parse_sandbox(NULL, &s) == -1);
}

static void entry_accepts_names_numbers_and_string_int64(void) {
  json_t *j = parse("{\"name\":\"a.txt\",\"type\":\"FILE_TYPE_FILE\",\"path\":\"/home/user/a.txt\","
                    "\"size\":\"9007199254740993\",\"mode\":420,\"permissions\":\"-rw-r--r--\","
                    "\"owner\":\"user\",\"group\":\"user\",\"modifiedTime\":\"2024-05-01T12:00:00.123456789Z\"}");
  e2b_entry e;
  CHECK(e2b_parse_entry(j, &e) == 0);
  CHECK_STR(e.type, "file");
  CHECK(e.size == 9007199254740993LL);
  CHECK(e.mode == 420);
  CHECK(e.modified_at_ms == 1714564800123LL);
  CHECK(e.symlink_target == NULL);
  e2b_entry_clear(&e);
  json_decref(j);

  j = parse("{\"name\":\"l\",\"type\":3,\"size\":5,\"symlink_target\":\"/tmp\"}");
  CHECK(e2b_parse_entry(j, &e) == 0);
  CHECK_STR(e.type, "symlink");
  CHECK(e.size == 5);
  CHECK_STR(e.symlink_target, "/tmp");
  e2b_entry_clear(&e);
  json_decref(j);
}

static void proc_info_reads_config_and_tag(void) {
  json_t *j = parse("{\"config\":{\"cmd\":\"sleep\",\"args\":[\"30\"],\"cwd\":\"/tmp\"},\"pid\":42,\"tag\":\"t\"}");
  e2b_proc_info p;
  CHECK(e2b_parse_proc_info(j, &p) == 0);
  CHECK(p.pid == 42);
  CHECK_STR(p.cmd, "sleep");
  CHECK(p.arg_count == 1);
  CHECK_STR(p.args[0], "30");
  CHECK_STR(p.tag, "t");
  CHECK_STR(p.cwd, "/tmp");
  e2b_proc_info_clear(&p);
  json_decref(j);
}

static queued *event(const char *json, e2b_error *err) {
  queued *q = NULL;
  e2b_error_clear(err);
  if (e2b_parse_proc_event(json, strlen(json), &q, err) != 0) return NULL;
  return q;
}

static void process_events_decode_exact_bytes(void) {
  e2b_error err;
  queued *q = event("{\"event\":{\"start\":{\"pid\":7}}}", &err);
  CHECK(q && q->ev.type == E2B_EVENT_START && q->ev.pid == 7);
  free(q);
  /* "\0\377\376" in standard and in URL-safe unpadded base64 */
  q = event("{\"event\":{\"data\":{\"stdout\":\"AP/+\"}}}", &err);
  CHECK(q && q->ev.type == E2B_EVENT_STDOUT);
  if (q) CHECK_MEM(q->ev.data, q->ev.len, "\0\377\376", 3);
  free(q);
  q = event("{\"event\":{\"data\":{\"stderr\":\"AP_-\"}}}", &err);
  CHECK(q && q->ev.type == E2B_EVENT_STDERR);
  if (q) CHECK_MEM(q->ev.data, q->ev.len, "\0\377\376", 3);
  free(q);
  q = event("{\"event\":{\"data\":{\"pty\":\"\"}}}", &err);
  CHECK(q && q->ev.type == E2B_EVENT_PTY && q->ev.len == 0);
  free(q);
}

static void end_event_defaults_absent_fields(void) {
  e2b_error err;
  queued *q = event("{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status 0\"}}}", &err);
  CHECK(q && q->ev.type == E2B_EVENT_END && q->ev.exit_code == 0 && q->ev.exited == 1);
  if (q) CHECK_STR(q->ev.status, "exit status 0");
  CHECK(q && q->ev.error == NULL);
  free(q);
  q = event("{\"event\":{\"end\":{\"exit_code\":-1,\"status\":\"signal: killed\",\"error\":\"signal: killed\"}}}", &err);
  CHECK(q && q->ev.exit_code == -1 && q->ev.exited == 0);
  if (q) CHECK_STR(q->ev.error, "signal: killed");
  free(q);
}

static void keepalives_are_skipped_and_garbage_refused(void) {
  e2b_error err;
  queued *q = (queued *)1;
  CHECK(e2b_parse_proc_event("{\"event\":{\"keepalive\":{}}}", 26, &q, &err) == 0);
  CHECK(q == NULL);
  CHECK(event("{\"event\":{\"data\":{\"stdout\":\"!!\"}}}", &err) == NULL && err.code == E2B_ERR_PROTOCOL);
  CHECK(event("{\"event\":{\"teleport\":{}}}", &err) == NULL && err.code == E2B_ERR_PROTOCOL);
  CHECK(event("not json", &err) == NULL && err.code == E2B_ERR_PROTOCOL);
}

/* A data event large enough for the bulk path: `prefix` + base64 of n bytes + `suffix`. */
static queued *bulk_event(const char *prefix, size_t n, const char *suffix, uint8_t *raw, e2b_error *err) {
  for (size_t i = 0; i < n; i++) raw[i] = (uint8_t)(i * 7 + 3);
  char *b64 = e2b_b64_encode_alloc(raw, n);
  size_t len = strlen(prefix) + strlen(b64) + strlen(suffix);
  char *json = malloc(len + 1);
  snprintf(json, len + 1, "%s%s%s", prefix, b64, suffix);
  queued *q = NULL;
  e2b_error_clear(err);
  if (e2b_parse_proc_event(json, len, &q, err) != 0) q = NULL;
  free(b64);
  free(json);
  return q;
}

static void large_data_events_decode_exactly_whatever_the_spacing(void) {
  static uint8_t raw[100000];
  e2b_error err;
  const char *shapes[][2] = {
      {"{\"event\":{\"data\":{\"stdout\":\"", "\"}}}"},
      {"{ \"event\" : { \"data\" : { \"stderr\" :  \"", "\" } } }"}, /* protojson's random spaces */
      {"{\"event\":{\"data\":{\"pty\":\"", "\"}},\"extra\":\"x\\\"stdout\\\":\\\"y\"}"},
  };
  e2b_event_type types[] = {E2B_EVENT_STDOUT, E2B_EVENT_STDERR, E2B_EVENT_PTY};
  for (int i = 0; i < 3; i++) {
    queued *q = bulk_event(shapes[i][0], sizeof raw, shapes[i][1], raw, &err);
    CHECK(q && q->ev.type == types[i]);
    if (q) CHECK_MEM(q->ev.data, q->ev.len, raw, sizeof raw);
    free(q);
  }
}

static void large_data_events_refuse_what_is_not_base64(void) {
  static uint8_t raw[3000];
  e2b_error err;
  /* a JSON escape inside the text: the plain path decodes it, base64 refuses it */
  CHECK(bulk_event("{\"event\":{\"data\":{\"stdout\":\"\\u0041", sizeof raw, "\"}}}", raw, &err) == NULL &&
        err.code == E2B_ERR_PROTOCOL);
  /* broken JSON after the text is still broken */
  CHECK(bulk_event("{\"event\":{\"data\":{\"stdout\":\"", sizeof raw, "\"}}", raw, &err) == NULL &&
        err.code == E2B_ERR_PROTOCOL);
  /* the key inside another string is not the field */
  CHECK(bulk_event("{\"event\":{\"data\":{\"note\":\"\\\"stdout\\\":\\\"", sizeof raw, "\"}}}", raw, &err) ==
            NULL &&
        err.code == E2B_ERR_PROTOCOL);
}

/* A number out of its field's range is refused, never cast (1e300 into an
 * integer is undefined behaviour). */
static void out_of_range_numbers_are_refused(void) {
  const char *sandboxes[] = {
      "{\"sandboxID\":\"i\",\"cpuCount\":1e300}", "{\"sandboxID\":\"i\",\"memoryMB\":-1e300}",
      "{\"sandboxID\":\"i\",\"diskSizeMB\":4294967296}", "{\"sandboxID\":\"i\",\"cpuCount\":1.5}",
  };
  for (size_t i = 0; i < sizeof sandboxes / sizeof sandboxes[0]; i++) {
    json_t *j = parse(sandboxes[i]);
    e2b_sandbox_info s;
    CHECK(e2b_parse_sandbox(j, &s) != 0);
    json_decref(j);
  }
  json_t *j = parse("{\"name\":\"a\",\"size\":1e300}");
  e2b_entry e;
  CHECK(e2b_parse_entry(j, &e) != 0);
  json_decref(j);
  j = parse("{\"name\":\"a\",\"mode\":4294967296}");
  CHECK(e2b_parse_entry(j, &e) != 0);
  json_decref(j);
  j = parse("{\"pid\":-1}");
  e2b_proc_info p;
  CHECK(e2b_parse_proc_info(j, &p) != 0);
  json_decref(j);
  e2b_error err;
  CHECK(event("{\"event\":{\"start\":{\"pid\":1e300}}}", &err) == NULL);
  CHECK(err.code == E2B_ERR_PROTOCOL);
  CHECK(event("{\"event\":{\"end\":{\"exitCode\":99999999999}}}", &err) == NULL);
  CHECK(err.code == E2B_ERR_PROTOCOL);
  /* in range, as a real with no fraction, or as a string: accepted */
  j = parse("{\"sandboxID\":\"i\",\"cpuCount\":2.0,\"memoryMB\":\"512\"}");
  e2b_sandbox_info s;
  CHECK(e2b_parse_sandbox(j, &s) == 0 && s.cpu_count == 2 && s.memory_mb == 512);
  e2b_sandbox_info_clear(&s);
  json_decref(j);
}

static int64_t watch_size(const char *json) {
  queued *q = NULL;
  e2b_error err;
  if (e2b_parse_watch_event(json, strlen(json), 0, &q, &err) != 0 || !q) return -2;
  int64_t size = q->size;
  free(q);
  return size;
}

/* proto3 JSON omits zero values: an entry without "size" is an empty file,
 * not one whose size is unknown (that is an event without an entry). */
static void watch_event_sizes_follow_proto3_defaults(void) {
  CHECK(watch_size("{\"filesystem\":{\"name\":\"a.out\",\"type\":\"EVENT_TYPE_WRITE\","
                   "\"entry\":{\"name\":\"a.out\",\"size\":\"4096\"}}}") == 4096);
  CHECK(watch_size("{\"filesystem\":{\"name\":\"a.err\",\"type\":\"EVENT_TYPE_WRITE\","
                   "\"entry\":{\"name\":\"a.err\",\"type\":\"FILE_TYPE_FILE\"}}}") == 0);
  CHECK(watch_size("{\"filesystem\":{\"name\":\"a.err\",\"type\":\"EVENT_TYPE_WRITE\"}}") == -1);
  CHECK(watch_size("{\"filesystem\":{\"name\":\"a.err\",\"type\":\"EVENT_TYPE_WRITE\","
                   "\"entry\":{\"size\":-1}}}") == -1);
}

/* e2b_fs_watch's events: every known type, named as the SDKs name it, each
 * counted against the stream's queue (an empty name too), so a slow reader
 * pauses the stream; an unknown type is skipped, a removal kept. */
static void public_watch_events_are_typed_and_counted(void) {
  static const char *const wire[] = {"CREATE", "WRITE", "REMOVE", "RENAME", "CHMOD"};
  static const char *const name[] = {"create", "write", "remove", "rename", "chmod"};
  char json[160];
  for (int i = 0; i < 5; i++) {
    snprintf(json, sizeof json, "{\"filesystem\":{\"name\":\"d/x\",\"type\":\"EVENT_TYPE_%s\"}}", wire[i]);
    queued *q = NULL;
    e2b_error err;
    CHECK(e2b_parse_watch_event(json, strlen(json), 1, &q, &err) == 0 && q);
    CHECK(q->ev.type == E2B_EVENT_FS && strcmp(q->ev.status, name[i]) == 0);
    CHECK(q->ev.len == 3 && memcmp(q->ev.data, "d/x", 3) == 0 && q->len > sizeof *q);
    free(q);
  }
  const char *odd = "{\"filesystem\":{\"name\":\"\",\"type\":\"EVENT_TYPE_OTHER\"}}";
  queued *q = NULL;
  e2b_error err;
  CHECK(e2b_parse_watch_event(odd, strlen(odd), 1, &q, &err) == 0 && q == NULL);
  const char *removed = "{\"filesystem\":{\"name\":\"a\",\"type\":\"EVENT_TYPE_REMOVE\"}}";
  CHECK(e2b_parse_watch_event(removed, strlen(removed), 0, &q, &err) == 0 && q == NULL);
}

int main(void) {
  RUN(public_watch_events_are_typed_and_counted);
  RUN(out_of_range_numbers_are_refused);
  RUN(sandbox_detail_maps_every_field);
  RUN(sandbox_without_id_is_refused);
  RUN(entry_accepts_names_numbers_and_string_int64);
  RUN(proc_info_reads_config_and_tag);
  RUN(process_events_decode_exact_bytes);
  RUN(end_event_defaults_absent_fields);
  RUN(keepalives_are_skipped_and_garbage_refused);
  RUN(large_data_events_decode_exactly_whatever_the_spacing);
  RUN(large_data_events_refuse_what_is_not_base64);
  RUN(watch_event_sizes_follow_proto3_defaults);
  return TESTING_DONE();
}
