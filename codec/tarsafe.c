/* tarsafe.c — the streaming tar filter between a sandbox's tar and the host's
 * `tar -x` (see codec.h). It never forwards an input header: each entry it
 * accepts is written anew (ustar, plus a pax header for a long name), so the
 * host's tar reads only what this file decided, and a header its parser would
 * read differently (sizes, extensions, types) cannot slip through. */
#include "codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarsafe_names.h"

#define BLOCK 512u
#define MAX_PAX (64u * 1024u) /* one pax extended header's records */

enum state { HEADER, DATA, DONE, FAILED };
enum ext { EXT_NONE, EXT_NAME, EXT_LINK, EXT_PAX };

struct e2b_tarsafe {
  enum state state;
  uint8_t block[BLOCK];
  size_t have;          /* bytes of block collected */
  uint64_t remain, pad; /* data bytes, then padding, of the current member */
  uint64_t pad_total;
  int pass;             /* forward the data (a regular file) */
  enum ext ext;         /* the data is an extension being collected */
  char *buf;            /* an extension's bytes */
  size_t buf_len;
  char *long_name, *long_link, *pax_path, *pax_link;
  int has_pax_size;
  uint64_t pax_size;
  uint64_t offset; /* of the input, for errors */
  tarsafe_set links; /* the symlinks passed so far */
  int for_sandbox; /* unpacked in a sandbox: symlink targets and directory modes as written (e2b_tarsafe_for_sandbox) */
  char error[400];
};

typedef struct {
  e2b_tarsafe_emit fn;
  void *ud;
} sink;

static int fail(e2b_tarsafe *t, const char *name, const char *why) {
  char shown[201];
  size_t i = 0;
  for (; name && name[i] && i < sizeof shown - 1; i++)
    shown[i] = (name[i] < 32 || name[i] == 127) ? '?' : name[i];
  shown[i] = 0;
  if (name)
    snprintf(t->error, sizeof t->error, "refused %s%s: %s", shown, name[i] ? "..." : "", why);
  else
    snprintf(t->error, sizeof t->error, "refused the archive at byte %llu: %s",
             (unsigned long long)t->offset, why);
  t->state = FAILED;
  return -1;
}

e2b_tarsafe *e2b_tarsafe_new(void) {
  e2b_tarsafe *t = calloc(1, sizeof *t);
  if (t && tarsafe_set_init(&t->links) != 0) {
    free(t);
    return NULL;
  }
  return t;
}

static void clear_ext(e2b_tarsafe *t) {
  free(t->long_name);
  free(t->long_link);
  free(t->pax_path);
  free(t->pax_link);
  t->long_name = t->long_link = t->pax_path = t->pax_link = NULL;
  t->has_pax_size = 0;
}

void e2b_tarsafe_for_sandbox(e2b_tarsafe *t) { t->for_sandbox = 1; }

void e2b_tarsafe_free(e2b_tarsafe *t) {
  if (!t) return;
  clear_ext(t);
  free(t->buf);
  tarsafe_set_free(&t->links);
  free(t);
}

const char *e2b_tarsafe_error(const e2b_tarsafe *t) { return t->error[0] ? t->error : NULL; }

int e2b_tarsafe_finish(e2b_tarsafe *t) {
  if (t->state == FAILED) return -1;
  if (t->state != DONE) return fail(t, NULL, "the archive ends without its end-of-archive marker");
  return 0;
}

/* ---- numbers: strict, so a field is one number or the archive is refused ---- */

/* Octal with leading spaces and trailing NULs/spaces (as tar writes it), or
 * GNU base-256 (first byte 0x80). */
static int parse_num(const uint8_t *f, size_t len, uint64_t *out) {
  uint64_t v = 0;
  size_t i = 0;
  if (f[0] == 0x80) {
    for (i = 1; i < len; i++) {
      if (v >> 55) return -1;
      v = (v << 8) | f[i];
    }
    *out = v;
    return 0;
  }
  while (i < len && f[i] == ' ') i++;
  size_t digits = 0;
  for (; i < len && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
    if (v >> 60) return -1;
    v = (v << 3) | (uint64_t)(f[i] - '0');
  }
  for (; i < len; i++)
    if (f[i] != ' ' && f[i] != 0) return -1;
  if (!digits) return -1;
  *out = v;
  return 0;
}

static int checksum_ok(const uint8_t *b) {
  uint64_t want;
  if (parse_num(b + 148, 8, &want) != 0) return 0;
  unsigned long u = 0;
  long s = 0;
  for (size_t i = 0; i < BLOCK; i++) {
    uint8_t c = (i >= 148 && i < 156) ? ' ' : b[i];
    u += c;
    s += (signed char)c;
  }
  return want == u || (long)want == s;
}

/* ---- what is written: fresh headers ---- */

static void put_octal(uint8_t *f, size_t len, uint64_t v) {
  if (len == 12 && v >= (1ull << 33)) { /* too big for 11 octal digits: base-256 */
    memset(f, 0, len);
    f[0] = 0x80;
    for (size_t i = len - 1; i > 0 && v; i--, v >>= 8) f[i] = (uint8_t)(v & 0xff);
    return;
  }
  for (size_t i = len - 1; i-- > 0; v >>= 3) f[i] = (uint8_t)('0' + (v & 7));
  f[len - 1] = 0;
}

static void seal(uint8_t *h) {
  memset(h + 148, ' ', 8);
  unsigned long sum = 0;
  for (size_t i = 0; i < BLOCK; i++) sum += h[i];
  put_octal(h + 148, 7, sum);
  h[155] = ' ';
}

static void header(uint8_t *h, const char *name, char type, unsigned mode, uint64_t size,
                   uint64_t mtime, const char *link) {
  memset(h, 0, BLOCK);
  memcpy(h, name, strnlen(name, 100));
  put_octal(h + 100, 8, mode);
  put_octal(h + 108, 8, 0);
  put_octal(h + 116, 8, 0);
  put_octal(h + 124, 12, size);
  put_octal(h + 136, 12, mtime);
  h[156] = (uint8_t)type;
  if (link) memcpy(h + 157, link, strnlen(link, 100));
  memcpy(h + 257, "ustar\0" "00", 8);
  seal(h);
}

/* Appends "LEN key=value\n", LEN counting itself. */
static size_t pax_record(char *out, const char *key, const char *value) {
  size_t base = strlen(key) + strlen(value) + 3, len = base + 1;
  while (snprintf(NULL, 0, "%zu", len) + base != len) len++;
  return (size_t)sprintf(out, "%zu %s=%s\n", len, key, value);
}

static int emit(sink *s, const void *p, size_t n) { return n ? s->fn(s->ud, p, n) : 0; }

static const uint8_t zeros[BLOCK * 2];

/* A pax header carrying the names that do not fit a ustar field. */
static int emit_pax(sink *s, const char *name, const char *link) {
  size_t cap = 2 * TARSAFE_MAX_NAME + 64;
  char *rec = malloc(cap);
  if (!rec) return -1;
  size_t n = 0;
  if (strlen(name) >= 100) n += pax_record(rec + n, "path", name);
  if (link && strlen(link) >= 100) n += pax_record(rec + n, "linkpath", link);
  uint8_t h[BLOCK];
  header(h, "././@PaxHeader", 'x', 0644, n, 0, NULL);
  int r = emit(s, h, BLOCK) || emit(s, rec, n) || emit(s, zeros, (BLOCK - n % BLOCK) % BLOCK);
  free(rec);
  return r ? -1 : 0;
}

static int emit_entry(sink *s, const char *name, char type, unsigned mode, uint64_t size,
                      uint64_t mtime, const char *link) {
  if ((strlen(name) >= 100 || (link && strlen(link) >= 100)) && emit_pax(s, name, link) != 0)
    return -1;
  uint8_t h[BLOCK];
  header(h, name, type, mode, size, mtime, link);
  return emit(s, h, BLOCK);
}

/* ---- reading headers ---- */

static char *field_dup(const uint8_t *f, size_t len) {
  size_t n = strnlen((const char *)f, len);
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, f, n);
    s[n] = 0;
  }
  return s;
}

/* The member's name: an extension's, else the ustar prefix/name. */
static char *member_name(e2b_tarsafe *t) {
  if (t->pax_path) return strdup(t->pax_path);
  if (t->long_name) return strdup(t->long_name);
  const uint8_t *b = t->block;
  if (memcmp(b + 257, "ustar\0", 6) != 0 || !b[345]) return field_dup(b, 100);
  char *prefix = field_dup(b + 345, 155), *name = field_dup(b, 100);
  char *joined = (prefix && name) ? malloc(strlen(prefix) + strlen(name) + 2) : NULL;
  if (joined) sprintf(joined, "%s/%s", prefix, name);
  free(prefix);
  free(name);
  return joined;
}

static char *member_link(e2b_tarsafe *t) {
  if (t->pax_link) return strdup(t->pax_link);
  if (t->long_link) return strdup(t->long_link);
  return field_dup(t->block + 157, 100);
}

/* Starts the data of a member of `size` bytes: forwarded, kept as an
 * extension, or skipped. */
static void start_data(e2b_tarsafe *t, uint64_t size, int pass, enum ext ext) {
  t->remain = size;
  t->pad = t->pad_total = (BLOCK - size % BLOCK) % BLOCK;
  t->pass = pass;
  t->ext = ext;
  t->buf_len = 0;
  t->state = DATA;
}

static int start_ext(e2b_tarsafe *t, uint64_t size, enum ext ext) {
  uint64_t max = ext == EXT_PAX ? MAX_PAX : TARSAFE_MAX_NAME + 1;
  if (size > max) return fail(t, NULL, "an extended header is too long");
  free(t->buf);
  t->buf = malloc((size_t)size + 1);
  if (!t->buf) return fail(t, NULL, "out of memory");
  start_data(t, size, 0, ext);
  return 0;
}

/* ---- extensions ---- */

/* Sets *dst to value[0..len) (NULL when empty: pax's "unset"). */
static int set_name(e2b_tarsafe *t, char **dst, const char *value, size_t len) {
  if (len > TARSAFE_MAX_NAME) return fail(t, NULL, "a name longer than the host allows");
  if (memchr(value, 0, len)) return fail(t, NULL, "a name with a NUL byte");
  free(*dst);
  *dst = NULL;
  if (!len) return 0;
  if (!(*dst = malloc(len + 1))) return fail(t, NULL, "out of memory");
  memcpy(*dst, value, len);
  (*dst)[len] = 0;
  return 0;
}

static int pax_size(e2b_tarsafe *t, const char *v, size_t len) {
  uint64_t n = 0;
  if (!len) return fail(t, NULL, "a pax size that is not a number");
  for (size_t i = 0; i < len; i++) {
    if (v[i] < '0' || v[i] > '9' || n > (UINT64_MAX >> 4)) return fail(t, NULL, "a pax size that is not a number");
    n = n * 10 + (uint64_t)(v[i] - '0');
  }
  t->pax_size = n;
  t->has_pax_size = 1;
  return 0;
}

/* One "LEN key=value\n" record at p (at most `left` bytes); its length, or 0. */
static size_t pax_one(e2b_tarsafe *t, const char *p, size_t left) {
  size_t len = 0, i = 0;
  for (; i < left && p[i] >= '0' && p[i] <= '9' && len <= MAX_PAX; i++) len = len * 10 + (size_t)(p[i] - '0');
  if (!i || i >= left || p[i] != ' ' || len > left || len < i + 3 || p[len - 1] != '\n') return 0;
  const char *key = p + i + 1, *end = p + len - 1;
  const char *eq = memchr(key, '=', (size_t)(end - key));
  if (!eq || eq == key) return 0;
  size_t klen = (size_t)(eq - key), vlen = (size_t)(end - eq - 1);
  int r = 0;
  if (klen == 4 && !memcmp(key, "path", 4)) r = set_name(t, &t->pax_path, eq + 1, vlen);
  else if (klen == 8 && !memcmp(key, "linkpath", 8)) r = set_name(t, &t->pax_link, eq + 1, vlen);
  else if (klen == 4 && !memcmp(key, "size", 4)) r = pax_size(t, eq + 1, vlen);
  return r ? 0 : len; /* every other record (owners, xattrs...) is dropped */
}

static int parse_pax(e2b_tarsafe *t) {
  size_t off = 0;
  while (off < t->buf_len) {
    size_t len = pax_one(t, t->buf + off, t->buf_len - off);
    if (!len) return t->state == FAILED ? -1 : fail(t, NULL, "a malformed pax header");
    off += len;
  }
  return 0;
}

static int end_ext(e2b_tarsafe *t) {
  if (t->ext == EXT_PAX) return parse_pax(t);
  t->buf[t->buf_len] = 0;
  char **dst = t->ext == EXT_NAME ? &t->long_name : &t->long_link;
  size_t len = strlen(t->buf);
  if (!len) return fail(t, NULL, "an empty GNU long name");
  return set_name(t, dst, t->buf, len);
}

/* ---- members ---- */

static int refuse_link(e2b_tarsafe *t, const char *name, const char *what, const char *why) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s (%s)", what, why);
  return fail(t, name, msg);
}

/* The type written for a member, or 0 with t failed. */
static char kind_of(e2b_tarsafe *t, const char *name, char type) {
  size_t n = strlen(name);
  if ((type == '0' || type == 0 || type == '7') && n && name[n - 1] == '/') return '5';
  switch (type) {
  case '0': case 0: case '7': return '0';
  case '5': case '2': case '1': return type;
  case '3': fail(t, name, "a character device"); return 0;
  case '4': fail(t, name, "a block device"); return 0;
  case '6': fail(t, name, "a FIFO"); return 0;
  case 'S': fail(t, name, "a sparse file (unsupported)"); return 0;
  default: fail(t, name, "an entry of a type other than file, directory or link"); return 0;
  }
}

/* Checks a link's target and writes its clean form into out. */
static int check_link(e2b_tarsafe *t, const char *name, char kind, const char *link, size_t depth, char *out) {
  const char *why;
  if (kind == '2') {
    why = t->for_sandbox ? tarsafe_symlink_as_is(link, out) : tarsafe_symlink_target(link, depth, out);
    if (why) return refuse_link(t, name, "a symlink", why);
    if (tarsafe_set_add(&t->links, name) != 0) return fail(t, name, "too many symlinks in one archive");
    return 0;
  }
  size_t d;
  why = tarsafe_clean_name(link, out, &d);
  if (!why && !out[0]) why = "an empty target";
  if (!why) why = tarsafe_under_link(&t->links, out);
  if (why) return refuse_link(t, name, "a hard link", why);
  return 0;
}

static int admit(e2b_tarsafe *t, sink *s, const char *raw, const char *link, uint64_t mode,
                 uint64_t mtime, uint64_t size) {
  char name[TARSAFE_MAX_NAME + 1], target[TARSAFE_MAX_NAME + 1];
  char kind = kind_of(t, raw, (char)t->block[156]);
  if (!kind) return -1;
  size_t depth;
  const char *why = tarsafe_clean_name(raw, name, &depth);
  if (!why && !name[0] && kind != '5') why = "an empty name";
  if (!why && name[0]) why = tarsafe_under_link(&t->links, name);
  if (why) return fail(t, raw, why);
  if (!name[0]) { /* the top directory itself ("./"): left as the host has it */
    start_data(t, size, 0, EXT_NONE);
    return 0;
  }
  if ((kind == '2' || kind == '1') && check_link(t, name, kind, link, depth - 1, target) != 0) return -1;
  unsigned m = kind == '2' ? 0777 : (unsigned)(mode & 0777);
  if (kind == '5' && !t->for_sandbox) m |= 0700; /* the host unpacking it must get back in */
  int is_file = kind == '0';
  if (emit_entry(s, name, kind, m, is_file ? size : 0, mtime, (kind == '2' || kind == '1') ? target : NULL) != 0)
    return fail(t, NULL, "the output failed");
  start_data(t, size, is_file, EXT_NONE);
  return 0;
}

static int on_entry(e2b_tarsafe *t, sink *s, uint64_t size) {
  uint64_t mode, mtime;
  if (parse_num(t->block + 100, 8, &mode) != 0) mode = 0644;
  if (parse_num(t->block + 136, 12, &mtime) != 0) mtime = 0;
  char *name = member_name(t), *link = member_link(t);
  clear_ext(t);
  int r = (name && link) ? admit(t, s, name, link, mode, mtime, size) : fail(t, NULL, "out of memory");
  free(name);
  free(link);
  return r;
}

static int on_header(e2b_tarsafe *t, sink *s) {
  if (!memcmp(t->block, zeros, BLOCK)) { /* end of archive: what follows is not read, as by tar */
    t->state = DONE;
    return emit(s, zeros, sizeof zeros) ? fail(t, NULL, "the output failed") : 0;
  }
  if (!checksum_ok(t->block)) return fail(t, NULL, "not a tar header (bad checksum)");
  uint64_t size;
  if (parse_num(t->block + 124, 12, &size) != 0) return fail(t, NULL, "a header's size is not a number");
  switch (t->block[156]) {
  case 'L': return start_ext(t, size, EXT_NAME);
  case 'K': return start_ext(t, size, EXT_LINK);
  case 'x': return start_ext(t, size, EXT_PAX);
  case 'g': start_data(t, size, 0, EXT_NONE); return 0; /* global records: none is kept */
  }
  return on_entry(t, s, t->has_pax_size ? t->pax_size : size);
}

/* ---- the stream ---- */

static int end_data(e2b_tarsafe *t, sink *s) {
  t->state = HEADER;
  if (t->pass && t->pad_total && emit(s, zeros, (size_t)t->pad_total)) return fail(t, NULL, "the output failed");
  if (t->ext != EXT_NONE) return end_ext(t);
  return 0;
}

static size_t take_header(e2b_tarsafe *t, sink *s, const uint8_t *p, size_t n) {
  size_t k = BLOCK - t->have < n ? BLOCK - t->have : n;
  memcpy(t->block + t->have, p, k);
  t->have += k;
  if (t->have == BLOCK) {
    t->have = 0;
    on_header(t, s);
  }
  return k;
}

static size_t take_data(e2b_tarsafe *t, sink *s, const uint8_t *p, size_t n) {
  if (t->remain) {
    size_t k = t->remain < n ? (size_t)t->remain : n;
    if (t->pass && emit(s, p, k)) return fail(t, NULL, "the output failed"), k;
    if (t->ext != EXT_NONE) memcpy(t->buf + t->buf_len, p, k);
    t->buf_len += t->ext != EXT_NONE ? k : 0;
    t->remain -= k;
    return k;
  }
  size_t k = t->pad < n ? (size_t)t->pad : n; /* padding is written as zeros by end_data */
  t->pad -= k;
  return k;
}

int e2b_tarsafe_feed(e2b_tarsafe *t, const void *data, size_t len, e2b_tarsafe_emit fn, void *ud) {
  sink s = {fn, ud};
  const uint8_t *p = data;
  while (t->state != FAILED) {
    if (t->state == DATA && !t->remain && !t->pad) {
      end_data(t, &s);
      continue;
    }
    if (!len || t->state == DONE) break;
    size_t k = t->state == HEADER ? take_header(t, &s, p, len) : take_data(t, &s, p, len);
    p += k;
    len -= k;
    t->offset += k;
  }
  return t->state == FAILED ? -1 : 0;
}
