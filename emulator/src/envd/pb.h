/* pb.h — the binary protobuf codec of envd's Connect services, as a
 * transcoder to and from the proto3 JSON form the handlers already speak.
 *
 * Hand-rolled on purpose (see the commit): only these two services' messages
 * are needed, each described by a small table written from process.proto and
 * filesystem.proto; Debian's protobuf-c would need the .proto sources and a
 * code generator at build time and still leave a struct <-> JSON mapping. */
#ifndef EMU_PB_H
#define EMU_PB_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef enum {
  PB_STRING,
  PB_BYTES,     /* JSON: standard base64 */
  PB_BOOL,
  PB_UINT32,
  PB_SINT32,    /* zigzag */
  PB_INT64,     /* JSON: decimal string */
  PB_ENUM,      /* JSON: the value's name */
  PB_MESSAGE,
  PB_MAP_SS,    /* map<string,string>: JSON object */
  PB_TIMESTAMP, /* google.protobuf.Timestamp: JSON RFC 3339 string */
} pb_type;

typedef struct pb_enum_val {
  const char *name;
  int num;
} pb_enum_val;

struct pb_msg;
typedef struct pb_field {
  uint32_t num;
  const char *json; /* lowerCamelCase name */
  pb_type type;
  int repeated;
  const struct pb_msg *msg;    /* PB_MESSAGE */
  const pb_enum_val *enums;    /* PB_ENUM, ends with {NULL, 0} */
} pb_field;

typedef struct pb_msg {
  const char *name;
  const pb_field *fields; /* ends with num 0 */
} pb_msg;

/* Binary -> proto3 JSON (unknown fields skipped). NULL when malformed. */
json_t *pb_decode(const pb_msg *m, const uint8_t *data, size_t len);
/* proto3 JSON -> binary, appended to out. Fields missing from the schema are
 * ignored. Returns 0, or -1 when a value has the wrong type. */
int pb_encode(const pb_msg *m, json_t *j, sbuf *out);

/* Appends one length-delimited field (bytes, string or nested message). */
void pb_append_bytes(sbuf *out, uint32_t num, const void *data, size_t n);

/* Message descriptors (pb_schema.c). */
extern const pb_msg PB_START_REQUEST, PB_CONNECT_REQUEST, PB_LIST_REQUEST, PB_LIST_RESPONSE, PB_UPDATE_REQUEST,
    PB_SEND_INPUT_REQUEST, PB_SEND_SIGNAL_REQUEST, PB_CLOSE_STDIN_REQUEST, PB_STREAM_INPUT_REQUEST,
    PB_PROCESS_STREAM_RESPONSE, PB_EMPTY, PB_STAT_REQUEST, PB_ENTRY_RESPONSE, PB_MOVE_REQUEST, PB_LISTDIR_REQUEST,
    PB_LISTDIR_RESPONSE, PB_WATCH_REQUEST, PB_WATCH_RESPONSE, PB_CREATE_WATCHER_RESPONSE, PB_WATCHER_ID_REQUEST,
    PB_WATCHER_EVENTS_RESPONSE;

#endif
