/* dockerfile.c — a Dockerfile read as the SDKs' Template.fromDockerfile
 * reads it: one stage (its FROM image the base), RUN, COPY/ADD, ENV, ARG
 * (an environment variable too), WORKDIR, USER, CMD/ENTRYPOINT (the start
 * command), EXPOSE, VOLUME and the metadata instructions ignored; the steps
 * run as root from "/", and end as "user" in "/home/user" unless the file
 * said otherwise. The text is the caller's, maybe someone else's: bounded
 * in size and steps, never trusted to be well formed; what it cannot say
 * to E2B (a second stage, COPY --from, heredocs, SHELL, ONBUILD, another
 * escape character) is refused naming its line. */
#define _GNU_SOURCE /* strndup */
#include "internal.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct df {
  e2b_dockerfile *d;
  size_t cap;
  int froms, user_set, workdir_set, line;
  e2b_error *err;
} df;

static int refuse(df *p, const char *fmt, ...) {
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (p->line > 0)
    e2b_err_set(p->err, E2B_ERR_INVALID_ARGUMENT, "template", "dockerfile: line %d: %s", p->line, what);
  else
    e2b_err_set(p->err, E2B_ERR_INVALID_ARGUMENT, "template", "dockerfile: %s", what);
  if (p->err) snprintf(p->err->field, sizeof p->err->field, "dockerfile");
  return -1;
}

static int nomem(df *p) { return refuse(p, "out of memory"); }

static void free_args(char **args, size_t n) {
  for (size_t i = 0; args && i < n; i++) free(args[i]);
  free(args);
}

/* A step of type with args (taken, also on failure). */
static int add_step(df *p, const char *type, char **args, size_t n) {
  e2b_dockerfile *d = p->d;
  if (d->step_count >= E2B_DOCKERFILE_STEPS_MAX) {
    free_args(args, n);
    return refuse(p, "more than %d steps", E2B_DOCKERFILE_STEPS_MAX);
  }
  if (d->step_count == p->cap) {
    void *grown = e2b_grow(d->steps, &p->cap, sizeof *d->steps, 16);
    if (!grown) return free_args(args, n), nomem(p);
    d->steps = grown;
  }
  e2b_template_step *s = &d->steps[d->step_count++];
  memset(s, 0, sizeof *s);
  s->type = type;
  s->args = (const char *const *)args;
  s->arg_count = n;
  return 0;
}

/* A step of one or two (b non-NULL) copied strings. */
static int add_simple(df *p, const char *type, const char *a, const char *b) {
  char **args = calloc(2, sizeof *args);
  size_t n = b ? 2 : 1;
  if (!args || !(args[0] = strdup(a)) || (b && !(args[1] = strdup(b)))) return free_args(args, 2), nomem(p);
  return add_step(p, type, args, n);
}

/* ---- words ---- */

typedef struct words {
  char **w;
  size_t n;
} words;

static void words_free(words *w) {
  free_args(w->w, w->n);
  w->w = NULL;
  w->n = 0;
}

/* s split at unquoted blanks, quotes removed, a backslash outside single
 * quotes taking the next byte as it is. */
static int split(const char *s, words *out) {
  size_t len = strlen(s);
  memset(out, 0, sizeof *out);
  if (!(out->w = calloc(len / 2 + 2, sizeof *out->w))) return -1;
  char *buf = malloc(len + 1);
  if (!buf) return -1;
  while (*s) {
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) break;
    size_t b = 0;
    char quote = 0;
    for (; *s && (quote || (*s != ' ' && *s != '\t')); s++) {
      if (quote && *s == quote) quote = 0;
      else if (!quote && (*s == '"' || *s == '\'')) quote = *s;
      else if (*s == '\\' && quote != '\'' && s[1]) buf[b++] = *++s;
      else buf[b++] = *s;
    }
    buf[b] = 0;
    if (!(out->w[out->n] = strdup(buf))) return free(buf), -1;
    out->n++;
  }
  free(buf);
  return 0;
}

/* A JSON array of strings (the exec form) joined with spaces; NULL when s is none. */
static char *exec_form(const char *s) {
  if (*s != '[') return NULL;
  json_t *a = json_loads(s, 0, NULL);
  size_t total = 1, i;
  json_t *v;
  json_array_foreach(a, i, v) {
    if (!json_is_string(v)) total = 0;
    if (!total) break;
    total += json_string_length(v) + 1;
  }
  char *out = json_is_array(a) && total ? calloc(1, total) : NULL, *o = out;
  json_array_foreach(a, i, v) {
    if (!out) break;
    if (i) *o++ = ' ';
    memcpy(o, json_string_value(v), json_string_length(v));
    o += json_string_length(v);
  }
  json_decref(a);
  return out;
}

/* ---- instructions ---- */

/* A heredoc (<<WORD, <<-WORD, <<"WORD"): BuildKit's, which E2B's steps cannot say. */
static int has_heredoc(const char *s) {
  for (const char *h = strstr(s, "<<"); h; h = strstr(h + 2, "<<")) {
    const char *w = h + 2;
    if (*w == '-') w++;
    if (*w == '"' || *w == '\'') w++;
    if (isalpha((unsigned char)*w) || *w == '_') return 1;
  }
  return 0;
}

/* RUN, CMD, ENTRYPOINT: the shell form as written, the exec form joined. */
static int command(df *p, const char *kw, const char *rest) {
  if (!*rest) return refuse(p, "%s needs a command", kw);
  if (has_heredoc(rest)) return refuse(p, "heredocs are not supported");
  char *cmd = exec_form(rest);
  if (!cmd && !(cmd = strdup(rest))) return nomem(p);
  if (!strcmp(kw, "RUN")) {
    char **args = calloc(1, sizeof *args);
    if (!args) return free(cmd), nomem(p);
    args[0] = cmd;
    return add_step(p, "RUN", args, 1);
  }
  free(p->d->start_cmd);
  p->d->start_cmd = cmd;
  return 0;
}

/* COPY/ADD [--chown=U] [other flags] src... dest: one COPY per source. */
static int copy(df *p, const char *kw, const char *rest) {
  const char *user = NULL;
  char *chown = NULL;
  while (rest[0] == '-' && rest[1] == '-') {
    size_t n = strcspn(rest, " \t");
    if (!strncmp(rest, "--from=", 7))
      return free(chown), refuse(p, "%s --from (another stage or image) is not supported", kw);
    if (!strncmp(rest, "--chown=", 8) && !chown && !(chown = strndup(rest + 8, n - 8))) return nomem(p);
    rest += n;
    rest += strspn(rest, " \t");
  }
  user = chown;
  words w = {0};
  char *json = exec_form(rest);
  int rc = json ? split(json, &w) : split(rest, &w);
  free(json);
  if (rc == 0 && w.n < 2) rc = refuse(p, "%s needs a source and a destination", kw);
  else if (rc != 0) rc = nomem(p);
  for (size_t i = 0; rc == 0 && i + 1 < w.n; i++) {
    char **args = calloc(3, sizeof *args);
    if (!args || !(args[0] = strdup(w.w[i])) || !(args[1] = strdup(w.w[w.n - 1])) ||
        (user && !(args[2] = strdup(user))))
      rc = (free_args(args, 3), nomem(p));
    else rc = add_step(p, "COPY", args, user ? 3 : 2);
  }
  free(chown);
  words_free(&w);
  return rc;
}

/* ENV K=V..., ENV K V (the rest the value), ARG K[=V]... (no default: ""). */
static int env(df *p, const char *kw, const char *rest) {
  words w;
  if (split(rest, &w) != 0) return words_free(&w), nomem(p);
  int rc = w.n ? 0 : refuse(p, "%s needs a name", kw);
  int legacy = rc == 0 && !strcmp(kw, "ENV") && !strchr(w.w[0], '=');
  char **args = rc == 0 ? calloc(legacy ? 2 : 2 * w.n, sizeof *args) : NULL;
  size_t n = 0;
  if (rc == 0 && !args) rc = nomem(p);
  if (legacy && rc == 0) {
    if (w.n < 2) rc = refuse(p, "ENV %s has no value", w.w[0]);
    size_t len = 1;
    for (size_t i = 1; i < w.n; i++) len += strlen(w.w[i]) + 1;
    char *v = rc == 0 ? calloc(1, len) : NULL, *o = v;
    for (size_t i = 1; v && i < w.n; i++) {
      if (i > 1) *o++ = ' ';
      size_t l = strlen(w.w[i]);
      memcpy(o, w.w[i], l);
      o += l;
    }
    args[1] = v;
    n = 2;
    if (rc == 0 && (!v || !(args[0] = strdup(w.w[0])))) rc = nomem(p);
  }
  for (size_t i = 0; !legacy && rc == 0 && i < w.n; i++) {
    char *eq = strchr(w.w[i], '=');
    if ((!eq && strcmp(kw, "ARG")) || eq == w.w[i]) rc = refuse(p, "%s: %.60s is no NAME=value", kw, w.w[i]);
    else if (!(args[n++] = eq ? strndup(w.w[i], (size_t)(eq - w.w[i])) : strdup(w.w[i])) ||
             !(args[n++] = strdup(eq ? eq + 1 : "")))
      rc = nomem(p);
  }
  words_free(&w);
  if (rc) return free_args(args, n), rc;
  return add_step(p, "ENV", args, n);
}

/* WORKDIR path, USER name[:group], FROM [--platform=...] image [AS name]. */
static int one_word(df *p, const char *kw, const char *rest) {
  words w;
  if (split(rest, &w) != 0) return words_free(&w), nomem(p);
  size_t first = 0;
  if (!strcmp(kw, "FROM"))
    while (first < w.n && !strncmp(w.w[first], "--", 2)) first++;
  int rc = 0;
  if (!strcmp(kw, "FROM")) {
    if (++p->froms > 1) rc = refuse(p, "multi-stage Dockerfiles are not supported");
    else if (!(p->d->from_image = strdup(first < w.n ? w.w[first] : "e2bdev/base"))) rc = nomem(p);
  } else if (first >= w.n) {
    rc = refuse(p, "%s needs a value", kw);
  } else {
    rc = add_simple(p, !strcmp(kw, "USER") ? "USER" : "WORKDIR", w.w[first], NULL);
    *(!strcmp(kw, "USER") ? &p->user_set : &p->workdir_set) = 1;
  }
  words_free(&w);
  return rc;
}

static int instruction(df *p, char *line) {
  char kw[16];
  size_t n = strcspn(line, " \t");
  const char *rest = line + n + strspn(line + n, " \t");
  snprintf(kw, sizeof kw, "%.*s", (int)(n < sizeof kw ? n : sizeof kw - 1), line);
  for (char *k = kw; *k; k++) *k = (char)toupper((unsigned char)*k);
  static const char *const ignored[] = {"EXPOSE", "VOLUME", "LABEL", "MAINTAINER", "HEALTHCHECK", "STOPSIGNAL"};
  for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++)
    if (!strcmp(kw, ignored[i])) return 0;
  if (!strcmp(kw, "RUN") || !strcmp(kw, "CMD") || !strcmp(kw, "ENTRYPOINT")) return command(p, kw, rest);
  if (!strcmp(kw, "COPY") || !strcmp(kw, "ADD")) return copy(p, kw, rest);
  if (!strcmp(kw, "ENV") || !strcmp(kw, "ARG")) return env(p, kw, rest);
  if (!strcmp(kw, "FROM") || !strcmp(kw, "WORKDIR") || !strcmp(kw, "USER")) return one_word(p, kw, rest);
  return refuse(p, "%.16s is not supported", kw);
}

/* ---- lines ---- */

/* The next logical line from *s (physical lines joined where one ends in a
 * backslash; comment and blank lines skipped, also inside one), malloc()ed,
 * or NULL at the end (*line: the number of its first physical line). */
static char *logical_line(const char **s, int *lineno, int *at) {
  growbuf b = {0};
  int more = 1;
  while (**s && more) {
    const char *nl = strchr(*s, '\n'), *end = nl ? nl : *s + strlen(*s);
    const char *b0 = *s + strspn(*s, " \t");
    (*at)++;
    size_t len = (size_t)(end - *s);
    const char *line = *s;
    *s = nl ? nl + 1 : end;
    while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
    if (b0 >= line + len || *b0 == '#') continue;
    if (!b.len) *lineno = *at;
    more = line[len - 1] == '\\';
    if (e2b_growbuf_append(&b, line, more ? len - 1 : len) != 0) break;
  }
  if (!b.len || e2b_growbuf_append(&b, "", 1) != 0) {
    e2b_growbuf_free(&b);
    return NULL;
  }
  return b.data;
}

/* "# escape=X" before the first instruction: only the backslash is read here. */
static int escape_directive(df *p, const char *text) {
  for (const char *s = text; *s == '#';) {
    const char *v = s + 1 + strspn(s + 1, " \t");
    if (!strncasecmp(v, "escape", 6)) {
      v += 6 + strspn(v + 6, " \t");
      if (*v == '=' && v[1 + strspn(v + 1, " \t")] != '\\') return refuse(p, "an escape character other than \\ is not supported");
    }
    const char *nl = strchr(s, '\n');
    if (!nl) break;
    s = nl + 1;
  }
  return 0;
}

static int parse_lines(df *p, const char *text) {
  int at = 0, rc = escape_directive(p, text);
  const char *s = text;
  char *line;
  while (rc == 0 && (line = logical_line(&s, &p->line, &at))) {
    rc = instruction(p, line + strspn(line, " \t"));
    free(line);
  }
  p->line = 0; /* what follows is about the whole file */
  if (rc == 0 && !p->froms) rc = refuse(p, "a Dockerfile needs a FROM instruction");
  if (rc == 0 && !p->user_set) rc = add_simple(p, "USER", "user", NULL);
  if (rc == 0 && !p->workdir_set) rc = add_simple(p, "WORKDIR", "/home/user", NULL);
  return rc;
}

int e2b_dockerfile_parse(const char *text, size_t len, e2b_dockerfile *out, e2b_error *err) {
  df p = {.d = out, .err = err};
  memset(out, 0, sizeof *out);
  e2b_error_clear(err);
  if (!text) return refuse(&p, "no text");
  if (len > E2B_DOCKERFILE_MAX) return refuse(&p, "a Dockerfile is at most %d bytes", E2B_DOCKERFILE_MAX);
  if (memchr(text, 0, len) || !e2b_utf8_valid(text, len)) return refuse(&p, "a Dockerfile is UTF-8 text without NUL bytes");
  char *copy = strndup(text, len);
  int rc = copy ? 0 : nomem(&p);
  if (rc == 0) rc = add_simple(&p, "USER", "root", NULL);
  if (rc == 0) rc = add_simple(&p, "WORKDIR", "/", NULL);
  if (rc == 0) rc = parse_lines(&p, copy);
  free(copy);
  if (rc) e2b_dockerfile_free(out);
  return rc;
}

void e2b_dockerfile_free(e2b_dockerfile *d) {
  if (!d) return;
  for (size_t i = 0; i < d->step_count; i++) free_args((char **)d->steps[i].args, d->steps[i].arg_count);
  free(d->steps);
  free(d->from_image);
  free(d->start_cmd);
  memset(d, 0, sizeof *d);
}
