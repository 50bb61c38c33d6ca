/* git.c — the rules of sbx.git that are rules: which values may become an
 * element of git's argv (e2b_git_check), and reading what `git status
 * --porcelain=v2 --branch -z` wrote (e2b_git_status_parse). Both are pure;
 * the status bytes come from the sandbox, so the parser bounds every read
 * by len and refuses what git would not write instead of guessing. Which
 * failures of a clone, pull or push are a matter of credentials is decided
 * here too (e2b_git_failure_code), from git's own output. */
#include "e2b.h"

#include <ctype.h>
#include <string.h>

#define REF_MAX 255
#define VALUE_MAX 65536

static int has_byte(const char *v, size_t len, int (*bad)(unsigned char)) {
  for (size_t i = 0; i < len; i++)
    if (bad((unsigned char)v[i])) return 1;
  return 0;
}

static int is_nul(unsigned char c) { return c == 0; }
static int is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }
static int breaks_line(unsigned char c) { return c == 0 || c == '\n' || c == '\r'; }
static int bad_in_ref(unsigned char c) { return is_control(c) || (c && strchr(" ~^:?*[\\", c)); }

static int contains(const char *v, size_t len, const char *what) {
  size_t n = strlen(what);
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(v + i, what, n) == 0) return 1;
  return 0;
}

static int ends_with(const char *v, size_t len, const char *what) {
  size_t n = strlen(what);
  return len >= n && memcmp(v + len - n, what, n) == 0;
}

/* git check-ref-format's rules for one name, plus: no leading '-' (it
 * would read as an option). */
static const char *check_ref(const char *v, size_t len) {
  if (len > REF_MAX) return "is longer than 255 bytes";
  if (v[0] == '-') return "must not start with '-'";
  if (has_byte(v, len, bad_in_ref)) return "must not hold spaces, control bytes or any of ~^:?*[\\";
  if (contains(v, len, "..") || contains(v, len, "@{") || contains(v, len, "//") ||
      contains(v, len, "/."))
    return "must not hold '..', '@{', '//' or a component starting with '.'";
  if (v[0] == '/' || v[0] == '.' || v[len - 1] == '/' || v[len - 1] == '.' ||
      ends_with(v, len, ".lock") || (len == 1 && v[0] == '@'))
    return "is not a valid git ref name";
  return NULL;
}

/* A password in the URL's authority ("scheme://user:secret@host") would sit
 * in argv and in .git/config: refused. */
static int url_has_password(const char *v, size_t len) {
  const char *sep = NULL;
  for (size_t i = 0; i + 2 < len; i++)
    if (memcmp(v + i, "://", 3) == 0) {
      sep = v + i + 3;
      break;
    }
  if (!sep) return 0;
  const char *end = v + len, *at = NULL;
  for (const char *p = sep; p < end && *p != '/'; p++)
    if (*p == '@') at = p;
  if (!at) return 0;
  return memchr(sep, ':', (size_t)(at - sep)) != NULL;
}

static const char *check_key(const char *v, size_t len) {
  if (has_byte(v, len, is_control) || memchr(v, '=', len)) return "must not hold '=' or control bytes";
  const char *dot = memchr(v, '.', len), *last = v + len - 1;
  while (last > v && *last != '.') last--;
  if (!dot || dot == v || last == v + len - 1) return "must be section.name";
  for (const char *p = last + 1; p < v + len; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
      return "its name must be letters, digits and '-'";
  return NULL;
}

const char *e2b_git_check(e2b_git_value kind, const char *v, size_t len) {
  if (!v || len == 0) return "must not be empty";
  if (len > VALUE_MAX) return "is longer than 65536 bytes";
  switch (kind) {
  case E2B_GIT_REF: return check_ref(v, len);
  case E2B_GIT_URL:
    if (v[0] == '-') return "must not start with '-'";
    if (has_byte(v, len, is_control)) return "must not hold control bytes";
    if (url_has_password(v, len)) return "must not hold a password (pass username and password or token)";
    return NULL;
  case E2B_GIT_PATH:
  case E2B_GIT_TEXT: return has_byte(v, len, is_nul) ? "must not hold NUL bytes" : NULL;
  case E2B_GIT_LINE: return has_byte(v, len, breaks_line) ? "must be one line (no NUL, CR or LF)" : NULL;
  case E2B_GIT_KEY: return check_key(v, len);
  }
  return "is of an unknown kind";
}

/* ---- status ---- */

typedef struct {
  const char *p, *end;
} cursor;

/* The next NUL-terminated record; 0 when none is left. A last record
 * without its NUL is taken as it is. */
static int next_record(cursor *c, const char **rec, size_t *len) {
  if (c->p >= c->end) return 0;
  const char *nul = memchr(c->p, 0, (size_t)(c->end - c->p));
  *rec = c->p;
  *len = nul ? (size_t)(nul - c->p) : (size_t)(c->end - c->p);
  c->p = nul ? nul + 1 : c->end;
  return 1;
}

/* Skips n space-separated fields; what follows them (the path) or NULL. */
static const char *skip_fields(const char *rec, size_t len, int n) {
  const char *p = rec, *end = rec + len;
  for (int i = 0; i < n; i++) {
    const char *sp = memchr(p, ' ', (size_t)(end - p));
    if (!sp) return NULL;
    p = sp + 1;
  }
  return p < end ? p : NULL;
}

/* "+N" or "-N" (N at most 9 digits), the whole of [p, end). */
static int signed_count(const char *p, const char *end, char sign, long *out) {
  if (end - p < 2 || end - p > 10 || *p != sign) return -1;
  long v = 0;
  for (p++; p < end; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
  }
  *out = v;
  return 0;
}

static int parse_ab(const char *v, size_t len, e2b_git_head *h) {
  const char *sp = memchr(v, ' ', len);
  if (!sp) return -1;
  return signed_count(v, sp, '+', &h->ahead) || signed_count(sp + 1, v + len, '-', &h->behind) ? -1 : 0;
}

/* One "# branch.NAME value" header; other "# " headers (stash) are skipped. */
static int parse_header(const char *rec, size_t len, e2b_git_head *h) {
  static const char *const names[] = {"# branch.oid ", "# branch.head ", "# branch.upstream ", "# branch.ab "};
  int which = -1;
  size_t n = 0;
  for (int i = 0; i < 4 && which < 0; i++)
    if (len > (n = strlen(names[i])) && memcmp(rec, names[i], n) == 0) which = i;
  if (which < 0) return len >= 2 && rec[1] == ' ' ? 0 : -1;
  const char *v = rec + n;
  size_t vlen = len - n;
  if (which == 0) {
    int initial = vlen == 9 && memcmp(v, "(initial)", 9) == 0;
    h->oid = initial ? NULL : v, h->oid_len = initial ? 0 : vlen;
  } else if (which == 1) {
    h->detached = vlen == 10 && memcmp(v, "(detached)", 10) == 0;
    h->branch = h->detached ? NULL : v, h->branch_len = h->detached ? 0 : vlen;
  } else if (which == 2) {
    h->upstream = v, h->upstream_len = vlen;
  } else {
    return parse_ab(v, vlen, h);
  }
  return 0;
}

static int valid_xy(const char *xy) {
  static const char letters[] = ".MTADRCU";
  return xy[0] && xy[1] && strchr(letters, xy[0]) && strchr(letters, xy[1]);
}

/* A changed-path record: '1', '2' (its origin is the next record) or 'u'. */
static int parse_change(cursor *c, const char *rec, size_t len, e2b_git_entry *e) {
  int fields = rec[0] == '1' ? 8 : rec[0] == '2' ? 9 : 10;
  if (len < 5 || rec[1] != ' ' || rec[4] != ' ') return -1;
  e->xy[0] = rec[2], e->xy[1] = rec[3];
  if (!valid_xy(e->xy)) return -1;
  const char *path = skip_fields(rec, len, fields);
  if (!path) return -1;
  e->path = path, e->path_len = (size_t)(rec + len - path);
  if (rec[0] == '2' && (!next_record(c, &e->orig, &e->orig_len) || e->orig_len == 0)) return -1;
  return 0;
}

static int parse_entry(cursor *c, const char *rec, size_t len, e2b_git_entry *e) {
  memset(e, 0, sizeof *e);
  e->kind = rec[0];
  if (rec[0] == '?' || rec[0] == '!') {
    if (len < 3 || rec[1] != ' ') return -1;
    e->xy[0] = e->xy[1] = rec[0];
    e->path = rec + 2, e->path_len = len - 2;
    return 0;
  }
  if (rec[0] == '1' || rec[0] == '2' || rec[0] == 'u') return parse_change(c, rec, len, e);
  return -1;
}

int e2b_git_status_parse(const char *buf, size_t len, e2b_git_head *head, e2b_git_entry_fn fn, void *ud,
                         const char **why) {
  cursor c = {buf, buf + len};
  const char *rec;
  size_t rlen;
  memset(head, 0, sizeof *head);
  *why = NULL;
  while (next_record(&c, &rec, &rlen)) {
    if (rlen == 0) {
      *why = "an empty record";
      return -1;
    }
    if (rec[0] == '#') {
      if (parse_header(rec, rlen, head) != 0) {
        *why = "a malformed # header";
        return -1;
      }
      continue;
    }
    e2b_git_entry e;
    if (parse_entry(&c, rec, rlen, &e) != 0) {
      *why = "a malformed entry";
      return -1;
    }
    int r = fn ? fn(ud, &e) : 0;
    if (r) return r;
  }
  return 0;
}

/* What git, its remote helpers and the hosts behind them write when a remote
 * wanted credentials it did not get or refused the ones it got (lower case):
 * a prompt git could not show, a refused login, HTTP 401/403, an ssh key
 * the server turned down. */
static const char *const AUTH_SIGNS[] = {
    "authentication failed",   "terminal prompts disabled", "could not read username",
    "could not read password", "invalid username or password", "invalid credentials",
    "access denied",           "not authorized",             "permission denied (publickey",
    "returned error: 401",     "returned error: 403",        NULL};

/* Whether what (lower case) occurs in v[0..len), ignoring ASCII case. */
static int contains_fold(const char *v, size_t len, const char *what) {
  size_t n = strlen(what);
  for (size_t i = 0; i + n <= len; i++) {
    size_t k = 0;
    while (k < n && (char)tolower((unsigned char)v[i + k]) == what[k]) k++;
    if (k == n) return 1;
  }
  return 0;
}

e2b_code e2b_git_failure_code(const char *out, size_t len) {
  if (!out) return E2B_ERR_SANDBOX;
  for (int i = 0; AUTH_SIGNS[i]; i++)
    if (contains_fold(out, len, AUTH_SIGNS[i])) return E2B_ERR_AUTH;
  return E2B_ERR_SANDBOX;
}
