/* template.c — the rules of a template built in code (the SDKs' Template):
 * which names and tags E2B takes, what each step's arguments must be, and
 * the JSON body that starts a build. Pure: nothing here reads a file or
 * sends a request (template/files.c reads COPY sources, template/build.c calls). */
#include "internal.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_PART_MAX 255 /* bytes of a namespace, alias or tag */
#define TEXT_MAX 65536    /* bytes of a command, path or value */

static int refuse(e2b_error *err, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(e2b_error *err, const char *what, const char *fmt, ...) {
  char field[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(field, sizeof field, fmt, ap);
  va_end(ap);
  e2b_err_set(err, E2B_ERR_INVALID_ARGUMENT, "template", "%s: %s", field, what);
  if (err) snprintf(err->field, sizeof err->field, "%s", field);
  return -1;
}

/* 1 when s[0..n) is not empty, at most NAME_PART_MAX bytes, and every byte
 * a letter, a digit, '-', '_' or (dot) '.'. */
static int part_ok(const char *s, size_t n, int dot) {
  if (n == 0 || n > NAME_PART_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
          ch == '_' || (dot && ch == '.')))
      return 0;
  }
  return 1;
}

/* 1 when s[0..n) is a UUID's 8-4-4-4-12 hex (what a tag may not be). */
static int is_uuid(const char *s, size_t n) {
  if (n != 36) return 0;
  for (size_t i = 0; i < n; i++) {
    int dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !strchr("0123456789abcdefABCDEF", s[i])) return 0;
  }
  return 1;
}

int e2b_template_tag_check(const char *tag, const char *field, e2b_error *err) {
  size_t n = tag ? strlen(tag) : 0;
  if (!part_ok(tag ? tag : "", n, 1))
    return refuse(err, "a tag is letters, digits, '-', '_' and '.'", "%s", field);
  if (is_uuid(tag, n)) return refuse(err, "a tag cannot be a UUID", "%s", field);
  return 0;
}

int e2b_template_name_check(const char *name, const char *field, e2b_error *err) {
  if (!name || !*name) return refuse(err, "a template name is required", "%s", field);
  const char *colon = strchr(name, ':');
  size_t id_len = colon ? (size_t)(colon - name) : strlen(name);
  if (colon && !part_ok(colon + 1, strlen(colon + 1), 1))
    return refuse(err, "the tag after ':' is letters, digits, '-', '_' and '.'", "%s", field);
  const char *slash = memchr(name, '/', id_len);
  if (slash && !part_ok(name, (size_t)(slash - name), 0))
    return refuse(err, "the namespace before '/' is letters, digits, '-' and '_'", "%s", field);
  const char *alias = slash ? slash + 1 : name;
  if (!part_ok(alias, id_len - (size_t)(alias - name), 0))
    return refuse(err, "a template name is letters, digits, '-' and '_' (then ':tag')", "%s", field);
  return 0;
}

static int text_ok(const char *s) { return s && strlen(s) <= TEXT_MAX; }

/* A COPY source: relative, and never above the context once normalized. */
static int source_ok(const char *src) {
  if (!*src || src[0] == '/') return 0;
  long depth = 0;
  for (const char *p = src; *p;) {
    size_t n = strcspn(p, "/");
    if (n == 2 && p[0] == '.' && p[1] == '.') {
      if (--depth < 0) return 0;
    } else if (n && !(n == 1 && p[0] == '.')) {
      depth++;
    }
    p += n;
    while (*p == '/') p++;
  }
  return 1;
}

static int mode_ok(const char *m) {
  if (!*m) return 1; /* "": the file's own mode */
  if (strlen(m) != 4) return 0;
  for (const char *p = m; *p; p++)
    if (*p < '0' || *p > '7') return 0;
  return 1;
}

/* A variable's name: not empty, no '=' (it would end the name). */
static int env_key_ok(const char *k) { return *k && !strchr(k, '='); }

static int copy_check(const e2b_template_step *s, size_t i, e2b_error *err) {
  if (s->arg_count < 2 || s->arg_count > 4) return refuse(err, "COPY takes src, dest, user, mode", "steps[%zu].args", i + 1);
  if (!source_ok(s->args[0]))
    return refuse(err, "a relative path that stays inside the context directory", "steps[%zu].src", i + 1);
  if (!*s->args[1]) return refuse(err, "a destination is required", "steps[%zu].dest", i + 1);
  if (s->arg_count == 4 && !mode_ok(s->args[3]))
    return refuse(err, "a mode is four octal digits, as \"0644\"", "steps[%zu].mode", i + 1);
  return 0;
}

static int args_check(const e2b_template_step *s, size_t i, size_t lo, size_t hi, e2b_error *err) {
  if (s->arg_count < lo || s->arg_count > hi)
    return refuse(err, lo == hi ? "takes one argument" : "wrong number of arguments", "steps[%zu].args", i + 1);
  for (size_t k = 0; k < s->arg_count; k++)
    if (!*s->args[k] && !(k == 1 && !strcmp(s->type, "RUN")))
      return refuse(err, "must not be empty", "steps[%zu].args[%zu]", i + 1, k + 1);
  return 0;
}

int e2b_template_step_check(const e2b_template_step *s, size_t i, e2b_error *err) {
  if (!s || !s->type) return refuse(err, "a step needs a type", "steps[%zu].type", i + 1);
  for (size_t k = 0; k < s->arg_count; k++)
    if (!text_ok(s->args[k])) return refuse(err, "missing or longer than 64 KiB", "steps[%zu].args[%zu]", i + 1, k + 1);
  if (!strcmp(s->type, "RUN")) return args_check(s, i, 1, 2, err);
  if (!strcmp(s->type, "WORKDIR") || !strcmp(s->type, "USER")) return args_check(s, i, 1, 1, err);
  if (!strcmp(s->type, "COPY")) return copy_check(s, i, err);
  if (!strcmp(s->type, "ENV")) {
    if (s->arg_count == 0 || s->arg_count % 2) return refuse(err, "ENV takes key, value pairs", "steps[%zu].args", i + 1);
    for (size_t k = 0; k < s->arg_count; k += 2)
      if (!env_key_ok(s->args[k]))
        return refuse(err, "a variable name is not empty and has no '='", "steps[%zu].args[%zu]", i + 1, k + 1);
    return 0;
  }
  return refuse(err, "one of RUN, COPY, ENV, WORKDIR, USER", "steps[%zu].type", i + 1);
}

/* A registry's fields: those of its type, each present and within bounds.
 * The refusal names the field, never its value (a secret). */
static int registry_check(const e2b_template_registry *r, int image, e2b_error *err) {
  if (!r->type) return 0;
  if (!image) return refuse(err, "a registry goes with from_image", "registry");
  static const struct {
    const char *type;
    size_t n;
    const char *names[3];
    size_t offs[3];
  } kinds[] = {
      {"registry", 2, {"username", "password"},
       {offsetof(e2b_template_registry, username), offsetof(e2b_template_registry, password)}},
      {"aws", 3, {"access_key_id", "secret_access_key", "region"},
       {offsetof(e2b_template_registry, aws_access_key_id), offsetof(e2b_template_registry, aws_secret_access_key),
        offsetof(e2b_template_registry, aws_region)}},
      {"gcp", 1, {"service_account_json"}, {offsetof(e2b_template_registry, gcp_service_account_json)}}};
  for (size_t k = 0; k < 3; k++) {
    if (strcmp(r->type, kinds[k].type)) continue;
    for (size_t i = 0; i < kinds[k].n; i++) {
      const char *v = *(const char *const *)((const char *)r + kinds[k].offs[i]);
      if (!v || !*v || !text_ok(v)) return refuse(err, "is required (1 byte to 64 KiB)", "registry.%s", kinds[k].names[i]);
    }
    return 0;
  }
  return refuse(err, "one of \"registry\", \"aws\", \"gcp\"", "registry.type");
}

int e2b_template_check(const e2b_template *t, e2b_error *err) {
  if (!t) return refuse(err, "a template is required", "template");
  int image = t->from_image && *t->from_image, base = t->from_template && *t->from_template;
  if (image == base) return refuse(err, "exactly one of from_image and from_template", "from");
  if (registry_check(&t->registry, image, err)) return -1;
  if (base && e2b_template_name_check(t->from_template, "from_template", err)) return -1;
  if (image && !text_ok(t->from_image)) return refuse(err, "longer than 64 KiB", "from_image");
  if (t->start_cmd && (!*t->start_cmd || !text_ok(t->start_cmd)))
    return refuse(err, "must be 1 byte to 64 KiB", "start_cmd");
  if (t->ready_cmd && (!*t->ready_cmd || !text_ok(t->ready_cmd)))
    return refuse(err, "must be 1 byte to 64 KiB", "ready_cmd");
  if (t->start_cmd && !t->ready_cmd) return refuse(err, "a start command needs a ready command", "ready_cmd");
  for (size_t i = 0; i < t->step_count; i++)
    if (e2b_template_step_check(&t->steps[i], i, err)) return -1;
  return 0;
}

static json_t *step_json(const e2b_template_step *s, const char *hash, int force) {
  json_t *o = json_object(), *args = json_array();
  for (size_t k = 0; k < s->arg_count; k++) json_array_append_new(args, json_string(s->args[k]));
  json_object_set_new(o, "type", json_string(s->type));
  json_object_set_new(o, "args", args);
  json_object_set_new(o, "force", json_boolean(force));
  if (hash) json_object_set_new(o, "filesHash", json_string(hash));
  return o;
}

static json_t *registry_json(const e2b_template_registry *r, int redact) {
  json_t *o = json_object();
  json_object_set_new(o, "type", json_string(r->type));
#define SECRET(v) json_string(redact ? "***" : (v))
  if (!strcmp(r->type, "registry")) {
    json_object_set_new(o, "username", json_string(r->username));
    json_object_set_new(o, "password", SECRET(r->password));
  } else if (!strcmp(r->type, "aws")) {
    json_object_set_new(o, "awsAccessKeyId", json_string(r->aws_access_key_id));
    json_object_set_new(o, "awsSecretAccessKey", SECRET(r->aws_secret_access_key));
    json_object_set_new(o, "awsRegion", json_string(r->aws_region));
  } else {
    json_object_set_new(o, "serviceAccountJson", SECRET(r->gcp_service_account_json));
  }
#undef SECRET
  return o;
}

char *e2b_template_json(const e2b_template *t, const char *const *hashes, unsigned flags, e2b_error *err) {
  if (e2b_template_check(t, err)) return NULL;
  json_t *body = json_object(), *steps = json_array();
  for (size_t i = 0; i < t->step_count; i++) {
    const e2b_template_step *s = &t->steps[i];
    json_array_append_new(steps, step_json(s, hashes ? hashes[i] : NULL, s->force || s->force_upload));
  }
  if (t->from_image && *t->from_image) json_object_set_new(body, "fromImage", json_string(t->from_image));
  else json_object_set_new(body, "fromTemplate", json_string(t->from_template));
  if (t->registry.type)
    json_object_set_new(body, "fromImageRegistry", registry_json(&t->registry, (flags & E2B_TEMPLATE_REDACT) != 0));
  if (t->start_cmd) json_object_set_new(body, "startCmd", json_string(t->start_cmd));
  if (t->ready_cmd) json_object_set_new(body, "readyCmd", json_string(t->ready_cmd));
  json_object_set_new(body, "steps", steps);
  json_object_set_new(body, "force", json_boolean(t->force || (flags & E2B_TEMPLATE_SKIP_CACHE)));
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (!text) e2b_err_set(err, E2B_ERR_UNAVAILABLE, "template", "out of memory");
  return text;
}

char *e2b_template_quote(const char *s, size_t len) {
  static const char safe[] = "@%+=:,./_-";
  int plain = len > 0;
  size_t quotes = 0;
  if (memchr(s, 0, len)) return NULL;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    int word = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               (ch && strchr(safe, ch));
    plain = plain && word;
    quotes += ch == '\'';
  }
  size_t n = plain ? len : len + quotes * 4 + 2;
  char *out = malloc(n + 1), *o = out;
  if (!out) return NULL;
  if (plain) {
    memcpy(out, s, len);
    out[len] = 0;
    return out;
  }
  *o++ = '\'';
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '\'') {
      memcpy(o, "'\"'\"'", 5);
      o += 5;
    } else {
      *o++ = s[i];
    }
  }
  *o++ = '\'';
  *o = 0;
  return out;
}
