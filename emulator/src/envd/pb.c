/* pb.c — protobuf wire format <-> proto3 JSON for the tables in pb_schema.c. */
#define _GNU_SOURCE
#include "pb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "pjson.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* ---- reading ---- */

typedef struct rd {
  const uint8_t *p, *end;
} rd;

static int rd_varint(rd *r, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end) return -1;
    uint8_t b = *r->p++;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

static int rd_len(rd *r, const uint8_t **data, size_t *n) {
  uint64_t l;
  if (rd_varint(r, &l) || l > (uint64_t)(r->end - r->p)) return -1;
  *data = r->p;
  *n = (size_t)l;
  r->p += l;
  return 0;
}

static int skip(rd *r, int wt) {
  uint64_t v;
  const uint8_t *d;
  size_t n;
  switch (wt) {
  case WT_VARINT: return rd_varint(r, &v);
  case WT_I64: if (r->end - r->p < 8) return -1; r->p += 8; return 0;
  case WT_LEN: return rd_len(r, &d, &n);
  case WT_I32: if (r->end - r->p < 4) return -1; r->p += 4; return 0;
  default: return -1;
  }
}

static const pb_field *field_by_num(const pb_msg *m, uint32_t num) {
  for (const pb_field *f = m->fields; f->num; f++)
    if (f->num == num) return f;
  return NULL;
}

static json_t *json_text_n(const uint8_t *d, size_t n) {
  char *s = strndup((const char *)d, n);
  json_t *j = s && strlen(s) == n ? pj_text(s) : NULL; /* NUL inside a string: malformed */
  free(s);
  return j;
}

static const char *enum_name(const pb_enum_val *e, int v) {
  for (; e && e->name; e++)
    if (e->num == v) return e->name;
  return NULL;
}

static json_t *decode_timestamp(const uint8_t *d, size_t n) {
  rd r = {d, d + n};
  int64_t secs = 0, nanos = 0;
  while (r.p < r.end) {
    uint64_t key, v;
    if (rd_varint(&r, &key)) return NULL;
    if ((key & 7) != WT_VARINT) {
      if (skip(&r, (int)(key & 7))) return NULL;
      continue;
    }
    if (rd_varint(&r, &v)) return NULL;
    if ((key >> 3) == 1) secs = (int64_t)v;
    if ((key >> 3) == 2) nanos = (int64_t)(int32_t)v;
  }
  /* beyond RFC 3339's years the field is malformed (and secs * 1000 overflows) */
  if (secs < -62167219200LL || secs > 253402300799LL) return NULL;
  char buf[E2B_TIME_SIZE];
  if (e2b_time_format(secs * 1000 + nanos / 1000000, buf)) return NULL;
  return json_string(buf);
}

/* One value of field f from the wire (wt already matched), or NULL. */
static json_t *decode_value(const pb_field *f, int wt, rd *r, json_t **map_key) {
  uint64_t v;
  const uint8_t *d;
  size_t n;
  switch (f->type) {
  case PB_STRING:
    if (wt != WT_LEN || rd_len(r, &d, &n)) return NULL;
    return json_text_n(d, n);
  case PB_BYTES: {
    if (wt != WT_LEN || rd_len(r, &d, &n)) return NULL;
    char *b = e2b_b64_encode_alloc(d, n);
    json_t *j = b ? json_string(b) : NULL;
    free(b);
    return j;
  }
  case PB_BOOL:
    if (wt != WT_VARINT || rd_varint(r, &v)) return NULL;
    return json_boolean(v != 0);
  case PB_UINT32:
    if (wt != WT_VARINT || rd_varint(r, &v)) return NULL;
    return json_integer((json_int_t)(uint32_t)v);
  case PB_SINT32:
    if (wt != WT_VARINT || rd_varint(r, &v)) return NULL;
    return json_integer((json_int_t)(int32_t)((uint32_t)(v >> 1) ^ -(uint32_t)(v & 1)));
  case PB_INT64: {
    if (wt != WT_VARINT || rd_varint(r, &v)) return NULL;
    char s[32];
    snprintf(s, sizeof s, "%lld", (long long)(int64_t)v);
    return json_string(s);
  }
  case PB_ENUM: {
    if (wt != WT_VARINT || rd_varint(r, &v)) return NULL;
    const char *name = enum_name(f->enums, (int)(int32_t)v);
    return name ? json_string(name) : json_integer((json_int_t)(int32_t)v);
  }
  case PB_MESSAGE:
    if (wt != WT_LEN || rd_len(r, &d, &n)) return NULL;
    return pb_decode(f->msg, d, n);
  case PB_TIMESTAMP:
    if (wt != WT_LEN || rd_len(r, &d, &n)) return NULL;
    return decode_timestamp(d, n);
  case PB_MAP_SS: {
    if (wt != WT_LEN || rd_len(r, &d, &n)) return NULL;
    rd e = {d, d + n};
    json_t *k = NULL, *val = NULL;
    while (e.p < e.end) {
      uint64_t key;
      const uint8_t *s;
      size_t sn;
      if (rd_varint(&e, &key) || (key & 7) != WT_LEN || rd_len(&e, &s, &sn)) break;
      json_t **slot = (key >> 3) == 1 ? &k : &val;
      json_decref(*slot);
      *slot = json_text_n(s, sn);
    }
    if (e.p != e.end || !k) {
      json_decref(k);
      json_decref(val);
      return NULL;
    }
    *map_key = k;
    return val ? val : json_string("");
  }
  }
  return NULL;
}

json_t *pb_decode(const pb_msg *m, const uint8_t *data, size_t len) {
  json_t *o = json_object();
  rd r = {data, data + len};
  while (r.p < r.end) {
    uint64_t key;
    if (rd_varint(&r, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff) goto bad;
    int wt = (int)(key & 7);
    const pb_field *f = field_by_num(m, (uint32_t)(key >> 3));
    if (!f) {
      if (skip(&r, wt)) goto bad;
      continue;
    }
    /* packed repeated scalars are not used by these messages' repeated fields
     * (strings and messages only) */
    json_t *mk = NULL;
    json_t *v = decode_value(f, wt, &r, &mk);
    if (!v) goto bad;
    if (f->type == PB_MAP_SS) {
      json_t *map = json_object_get(o, f->json);
      if (!map) json_object_set_new(o, f->json, map = json_object());
      json_object_set_new(map, json_string_value(mk), v);
      json_decref(mk);
    } else if (f->repeated) {
      json_t *arr = json_object_get(o, f->json);
      if (!arr) json_object_set_new(o, f->json, arr = json_array());
      json_array_append_new(arr, v);
    } else {
      json_object_set_new(o, f->json, v); /* last one wins, as in protobuf */
    }
  }
  return o;
bad:
  json_decref(o);
  return NULL;
}

/* ---- writing ---- */

static void wr_varint(sbuf *b, uint64_t v) {
  uint8_t buf[10];
  int n = 0;
  do {
    buf[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  sbuf_append(b, buf, (size_t)n);
}

static void wr_key(sbuf *b, uint32_t num, int wt) { wr_varint(b, (uint64_t)num << 3 | (uint64_t)wt); }

static void wr_bytes(sbuf *b, uint32_t num, const void *d, size_t n) {
  wr_key(b, num, WT_LEN);
  wr_varint(b, n);
  sbuf_append(b, d, n);
}

void pb_append_bytes(sbuf *out, uint32_t num, const void *data, size_t n) { wr_bytes(out, num, data ? data : "", n); }

static int json_int(json_t *v, long long *out) {
  if (json_is_integer(v)) {
    *out = json_integer_value(v);
    return 0;
  }
  if (json_is_string(v)) {
    char *end;
    *out = strtoll(json_string_value(v), &end, 10);
    return *end ? -1 : 0;
  }
  return -1;
}

/* The nanoseconds of an RFC 3339 time's fraction (up to 9 digits kept). */
static int64_t fraction_nanos(const char *text) {
  const char *dot = strchr(text, '.');
  int64_t ns = 0;
  int digits = 0;
  for (const char *p = dot ? dot + 1 : ""; *p >= '0' && *p <= '9'; p++)
    if (digits < 9) ns = ns * 10 + (*p - '0'), digits++;
  for (; digits && digits < 9; digits++) ns *= 10;
  return ns;
}

/* google.protobuf.Timestamp from RFC 3339 text. */
static int encode_timestamp(const pb_field *f, json_t *v, sbuf *out) {
  int64_t ms;
  if (!json_is_string(v) || e2b_time_parse(json_string_value(v), &ms)) return -1;
  int64_t secs = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  int64_t nanos = (ms - secs * 1000) * 1000000;
  if (ms >= 0) nanos = fraction_nanos(json_string_value(v)); /* all of it, not only the ms */
  sbuf sub = {0};
  if (secs) {
    wr_key(&sub, 1, WT_VARINT);
    wr_varint(&sub, (uint64_t)secs);
  }
  if (nanos) {
    wr_key(&sub, 2, WT_VARINT);
    wr_varint(&sub, (uint64_t)nanos);
  }
  wr_bytes(out, f->num, sub.data ? sub.data : "", sub.len);
  sbuf_free(&sub);
  return 0;
}

/* map<string, string>: one entry message per pair. */
static int encode_map(const pb_field *f, json_t *v, sbuf *out) {
  if (!json_is_object(v)) return -1;
  const char *k;
  json_t *val;
  json_object_foreach(v, k, val) {
    if (!json_is_string(val)) return -1;
    sbuf e = {0};
    wr_bytes(&e, 1, k, strlen(k));
    wr_bytes(&e, 2, json_string_value(val), json_string_length(val));
    wr_bytes(out, f->num, e.data, e.len);
    sbuf_free(&e);
  }
  return 0;
}

static int encode_value(const pb_field *f, json_t *v, sbuf *out) {
  long long x;
  switch (f->type) {
  case PB_STRING:
    if (!json_is_string(v)) return -1;
    wr_bytes(out, f->num, json_string_value(v), json_string_length(v));
    return 0;
  case PB_BYTES: {
    uint8_t *d;
    size_t n;
    if (pj_bytes(v, &d, &n)) return -1;
    wr_bytes(out, f->num, d, n);
    free(d);
    return 0;
  }
  case PB_BOOL:
    if (!json_is_boolean(v)) return -1;
    wr_key(out, f->num, WT_VARINT);
    wr_varint(out, json_is_true(v));
    return 0;
  case PB_UINT32:
  case PB_INT64:
    if (json_int(v, &x)) return -1;
    wr_key(out, f->num, WT_VARINT);
    wr_varint(out, f->type == PB_UINT32 ? (uint64_t)(uint32_t)x : (uint64_t)x);
    return 0;
  case PB_SINT32:
    if (json_int(v, &x)) return -1;
    wr_key(out, f->num, WT_VARINT);
    wr_varint(out, (uint32_t)(((uint32_t)(int32_t)x << 1) ^ (uint32_t)((int32_t)x >> 31)));
    return 0;
  case PB_ENUM: {
    int num = -1;
    if (json_is_integer(v)) num = (int)json_integer_value(v);
    for (const pb_enum_val *e = f->enums; num < 0 && json_is_string(v) && e->name; e++)
      if (strcmp(e->name, json_string_value(v)) == 0) num = e->num;
    if (num < 0) return -1;
    wr_key(out, f->num, WT_VARINT);
    wr_varint(out, (uint64_t)(int64_t)num);
    return 0;
  }
  case PB_MESSAGE: {
    sbuf sub = {0};
    int rc = pb_encode(f->msg, v, &sub);
    if (rc == 0) wr_bytes(out, f->num, sub.data ? sub.data : "", sub.len);
    sbuf_free(&sub);
    return rc;
  }
  case PB_TIMESTAMP:
    return encode_timestamp(f, v, out);
  case PB_MAP_SS:
    return encode_map(f, v, out);
  }
  return -1;
}

int pb_encode(const pb_msg *m, json_t *j, sbuf *out) {
  if (!json_is_object(j)) return -1;
  for (const pb_field *f = m->fields; f->num; f++) {
    json_t *v = json_object_get(j, f->json);
    if (!v || json_is_null(v)) continue;
    if (f->repeated) {
      if (!json_is_array(v)) return -1;
      for (size_t i = 0; i < json_array_size(v); i++)
        if (encode_value(f, json_array_get(v, i), out)) return -1;
    } else if (encode_value(f, v, out)) {
      return -1;
    }
  }
  return 0;
}
