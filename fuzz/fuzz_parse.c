/* fuzz_parse.c — libFuzzer target for core/src/control/parse.c: control-plane and
 * proto3 JSON into libe2b's result structs, and process stream messages
 * (including the data-event fast path that cuts the base64 out before
 * jansson sees the message), WatchDir messages, and the unwrapping of a
 * kept command's argv. The first byte picks the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The fast path must agree with a plain jansson parse of the same message:
 * same stream, same bytes. */
static void check_fast_path(const char *json, size_t len, const queued *q) {
  json_t *full = json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL);
  json_t *data = json_object_get(json_object_get(full, "event"), "data");
  const char *name = q->ev.type == E2B_EVENT_STDOUT   ? "stdout"
                     : q->ev.type == E2B_EVENT_STDERR ? "stderr"
                                                      : "pty";
  json_t *v = json_object_get(data, name);
  if (json_is_string(v)) {
    uint8_t *want = NULL;
    size_t wn = 0;
    if (e2b_b64_decode_alloc(json_string_value(v), json_string_length(v), &want, &wn) != 0) abort();
    if (wn != q->ev.len || (wn && memcmp(want, q->ev.data, wn) != 0)) abort();
    free(want);
  }
  json_decref(full);
}

static void proc_event(const char *json, size_t len) {
  queued *q = NULL;
  e2b_error err;
  memset(&err, 0, sizeof err);
  if (e2b_parse_proc_event(json, len, &q, &err) == 0 && q) {
    if (q->ev.type == E2B_EVENT_STDOUT || q->ev.type == E2B_EVENT_STDERR || q->ev.type == E2B_EVENT_PTY)
      check_fast_path(json, len, q);
  }
  free(q);
  e2b_error_clear(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const char *json = (const char *)data + 1;
  size_t len = size - 1;
  int which = data[0] % 5;
  if (which == 3) {
    proc_event(json, len);
    return 0;
  }
  if (which == 4) {
    queued *q = NULL;
    e2b_error err;
    memset(&err, 0, sizeof err);
    if (e2b_parse_watch_event(json, len, (int)(len & 1), &q, &err) == 0 && q && q->ev.len > len) abort();
    free(q);
    return 0;
  }
  json_t *j = json_loadb(json, len, 0, NULL);
  if (which == 0) {
    e2b_sandbox_info sb;
    if (e2b_parse_sandbox(j, &sb) == 0) e2b_sandbox_info_clear(&sb);
  } else if (which == 1) {
    e2b_entry e;
    if (e2b_parse_entry(j, &e) == 0) e2b_entry_clear(&e);
  } else {
    e2b_proc_info p;
    if (e2b_parse_proc_info(j, &p) == 0) {
      e2b_wrapper_unwrap(&p);
      e2b_proc_info_clear(&p);
    }
  }
  json_decref(j);
  return 0;
}
