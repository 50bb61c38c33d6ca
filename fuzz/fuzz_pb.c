/* fuzz_pb.c — libFuzzer target for emulator/src/envd/pb.c + pb_schema.c, the
 * binary protobuf side of envd's Connect services. The first byte picks one
 * of the request/response schemas; the rest is the wire message. Whatever
 * decodes must encode again, and decode to the same JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pb.h"

static const pb_msg *const MSGS[] = {
    &PB_START_REQUEST,         &PB_CONNECT_REQUEST,       &PB_LIST_REQUEST,
    &PB_LIST_RESPONSE,         &PB_UPDATE_REQUEST,        &PB_SEND_INPUT_REQUEST,
    &PB_SEND_SIGNAL_REQUEST,   &PB_CLOSE_STDIN_REQUEST,   &PB_STREAM_INPUT_REQUEST,
    &PB_PROCESS_STREAM_RESPONSE, &PB_EMPTY,               &PB_STAT_REQUEST,
    &PB_ENTRY_RESPONSE,        &PB_MOVE_REQUEST,          &PB_LISTDIR_REQUEST,
    &PB_LISTDIR_RESPONSE,      &PB_WATCH_REQUEST,         &PB_WATCH_RESPONSE,
    &PB_CREATE_WATCHER_RESPONSE, &PB_WATCHER_ID_REQUEST,  &PB_WATCHER_EVENTS_RESPONSE,
};
#define NMSGS (sizeof MSGS / sizeof MSGS[0])

/* pb_encode refuses negative enum numbers (no response has one) while
 * pb_decode keeps any number it reads: the one expected asymmetry. */
static int has_negative_int(json_t *j) {
  const char *k;
  json_t *v;
  size_t i;
  if (json_is_integer(j)) return json_integer_value(j) < 0;
  json_object_foreach(j, k, v) if (has_negative_int(v)) return 1;
  json_array_foreach(j, i, v) if (has_negative_int(v)) return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const pb_msg *m = MSGS[data[0] % NMSGS];
  json_t *j = pb_decode(m, data + 1, size - 1);
  if (!j) return 0;
  sbuf out = {0};
  if (pb_encode(m, j, &out) != 0) {
    if (!has_negative_int(j)) abort();
    sbuf_free(&out);
    json_decref(j);
    return 0;
  }
  json_t *again = pb_decode(m, out.data ? (const uint8_t *)out.data : data, out.len); /* never NULL, as connect_rpc.c */
  if (!again || !json_equal(j, again)) abort();
  json_decref(again);
  sbuf_free(&out);
  json_decref(j);
  return 0;
}
