/* Tests for template.c and template/files.c: names and steps E2B takes or
 * refuses (each refusal naming its field), the build body, the files hash
 * against values the official JS SDK computed for the same tree, and the
 * gzip tar (deflated by zlib) read back by gzip(1) and tar(1). */
#define _GNU_SOURCE
#include "e2b.h"
#include "testing.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define S(lit) lit, sizeof(lit) - 1

static int name_ok(const char *n) { return e2b_template_name_check(n, "name", NULL) == 0; }

static void test_names(void) {
  CHECK(name_ok("my-template"));
  CHECK(name_ok("team/my_template:v1.0"));
  CHECK(name_ok("MyTemplate")); /* E2B lowercases */
  static const char *const bad[] = {"", "a b", "a:", "/a", "a/", "a/b/c", "a:b:c", "a:b c", "é", "a;rm"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(!name_ok(bad[i]));
  e2b_error err;
  CHECK(e2b_template_name_check("a b", "name", &err) != 0 && err.code == E2B_ERR_INVALID_ARGUMENT);
  CHECK_STR(err.field, "name");
  CHECK(e2b_template_tag_check("v1.2", "tags[1]", NULL) == 0);
  CHECK(e2b_template_tag_check("123e4567-e89b-12d3-a456-426614174000", "tags[1]", &err) != 0);
  CHECK_STR(err.field, "tags[1]");
  CHECK(e2b_template_tag_check("a/b", "tags[2]", NULL) != 0);
}

static int step_field(const char *type, const char *const *args, size_t n, const char *want_field) {
  e2b_template_step s = {.type = type, .args = args, .arg_count = n};
  e2b_error err;
  memset(&err, 0, sizeof err);
  int rc = e2b_template_step_check(&s, 2, &err);
  if (!want_field) return rc == 0;
  return rc != 0 && err.code == E2B_ERR_INVALID_ARGUMENT && strcmp(err.field, want_field) == 0;
}

static void test_steps(void) {
  const char *run[] = {"apt-get update", "root"}, *copy[] = {"src/app", "/app", "", "0755"};
  CHECK(step_field("RUN", run, 1, NULL));
  CHECK(step_field("RUN", run, 2, NULL));
  CHECK(step_field("COPY", copy, 4, NULL));
  CHECK(step_field("COPY", copy, 2, NULL));
  const char *up[] = {"../secret", "/x"}, *abs[] = {"/etc", "/x"}, *sneak[] = {"a/../../b", "/x"},
             *inside[] = {"a/../b", "/x"}, *mode[] = {"a", "/x", "", "755"}, *nodest[] = {"a", ""};
  CHECK(step_field("COPY", up, 2, "steps[3].src"));
  CHECK(step_field("COPY", abs, 2, "steps[3].src"));
  CHECK(step_field("COPY", sneak, 2, "steps[3].src"));
  CHECK(step_field("COPY", inside, 2, NULL));
  CHECK(step_field("COPY", mode, 4, "steps[3].mode"));
  CHECK(step_field("COPY", nodest, 2, "steps[3].dest"));
  const char *env[] = {"A", "1", "B"}, *badkey[] = {"A=B", "1"};
  CHECK(step_field("ENV", env, 2, NULL));
  CHECK(step_field("ENV", env, 3, "steps[3].args"));
  CHECK(step_field("ENV", badkey, 2, "steps[3].args[1]"));
  const char *dir[] = {"/app"}, *empty[] = {""};
  CHECK(step_field("WORKDIR", dir, 1, NULL));
  CHECK(step_field("WORKDIR", empty, 1, "steps[3].args[1]"));
  CHECK(step_field("USER", dir, 0, "steps[3].args"));
  CHECK(step_field("FROM", dir, 1, "steps[3].type"));
}

/* A registry's fields are checked by name, never quoted; its secrets go in
 * the body sent and are "***" in a body to show. */
static void test_registry(void) {
  e2b_template t = {.from_image = "private/img", .registry = {.type = "registry", .username = "u"}};
  e2b_error err;
  CHECK(e2b_template_check(&t, &err) != 0);
  CHECK_STR(err.field, "registry.password");
  t.registry.password = "S3cret";
  char *sent = e2b_template_json(&t, NULL, 0, &err), *shown = e2b_template_json(&t, NULL, E2B_TEMPLATE_REDACT, &err);
  CHECK(sent && strstr(sent, "\"fromImageRegistry\":{\"type\":\"registry\",\"username\":\"u\",\"password\":\"S3cret\"}"));
  CHECK(shown && strstr(shown, "\"password\":\"***\"") && !strstr(shown, "S3cret"));
  free(sent);
  free(shown);
  e2b_template aws = {.from_image = "x", .registry = {.type = "aws", .aws_access_key_id = "A", .aws_region = "r",
                                                      .aws_secret_access_key = "K"}};
  CHECK(e2b_template_check(&aws, NULL) == 0);
  aws.registry.type = "azure";
  CHECK(e2b_template_check(&aws, &err) != 0);
  CHECK_STR(err.field, "registry.type");
  e2b_template base = {.from_template = "base", .registry = {.type = "gcp", .gcp_service_account_json = "{}"}};
  CHECK(e2b_template_check(&base, &err) != 0);
  CHECK_STR(err.field, "registry");
}

static void check_quote(const char *s, size_t len, const char *want) {
  char *q = e2b_template_quote(s, len);
  if (want) CHECK_STR(q, want);
  else CHECK(q == NULL);
  free(q);
}

static void test_quote(void) {
  check_quote(S("numpy"), "numpy");
  check_quote(S("https://x.org/a_b-c.git"), "https://x.org/a_b-c.git");
  check_quote(S(""), "''");
  check_quote(S("a b"), "'a b'");
  check_quote(S("it's"), "'it'\"'\"'s'");
  check_quote(S("$(rm -rf /)"), "'$(rm -rf /)'");
  check_quote(S("a\nb;c`d`"), "'a\nb;c`d`'");
  check_quote(S("a\0b"), NULL);
}

static void test_template_and_body(void) {
  const char *run[] = {"echo hi"}, *env[] = {"A", "1"};
  e2b_template_step steps[] = {{.type = "RUN", .args = run, .arg_count = 1},
                               {.type = "ENV", .args = env, .arg_count = 2, .force = 1}};
  e2b_template t = {.from_template = "base", .steps = steps, .step_count = 2};
  e2b_error err;
  CHECK(e2b_template_check(&t, NULL) == 0);
  t.from_image = "ubuntu:24.04";
  CHECK(e2b_template_check(&t, &err) != 0);
  CHECK_STR(err.field, "from");
  t.from_image = NULL;
  t.start_cmd = "./serve";
  CHECK(e2b_template_check(&t, &err) != 0);
  CHECK_STR(err.field, "ready_cmd");
  t.ready_cmd = "[ -f /tmp/ready ]";
  char *json = e2b_template_json(&t, NULL, 0, &err);
  CHECK_STR(json, "{\"fromTemplate\":\"base\",\"startCmd\":\"./serve\",\"readyCmd\":\"[ -f /tmp/ready ]\","
                  "\"steps\":[{\"type\":\"RUN\",\"args\":[\"echo hi\"],\"force\":false},"
                  "{\"type\":\"ENV\",\"args\":[\"A\",\"1\"],\"force\":true}],\"force\":false}");
  free(json);
  json = e2b_template_json(&t, NULL, 1, &err);
  CHECK(json && strcmp(json + strlen(json) - 14, ",\"force\":true}") == 0);
  free(json);
}

/* a.txt ("hello\n", 0644), .hidden ("x", 0644), link -> a.txt: the hashes
 * the official JS SDK (Template.toJSON) computed for this tree. */
static char *fixture(void) {
  static char dir[] = "/tmp/e2b-test-template-XXXXXX";
  if (!mkdtemp(dir)) return NULL;
  char p[256];
  snprintf(p, sizeof p, "%s/a.txt", dir);
  FILE *f = fopen(p, "w");
  fputs("hello\n", f);
  fclose(f);
  chmod(p, 0644);
  snprintf(p, sizeof p, "%s/.hidden", dir);
  f = fopen(p, "w");
  fputs("x", f);
  fclose(f);
  chmod(p, 0644);
  snprintf(p, sizeof p, "%s/link", dir);
  if (symlink("a.txt", p) != 0) return NULL;
  return dir;
}

static int hash_of(const char *ctx, const char *src, const char *dest, int resolve, char *out) {
  const char *args[] = {src, dest, "", ""};
  e2b_template_step s = {.type = "COPY", .args = args, .arg_count = 4, .resolve_symlinks = resolve};
  e2b_template t = {.from_template = "base", .steps = &s, .step_count = 1, .context = ctx};
  return e2b_template_files_hash(&t, 0, out, NULL);
}

static void test_hash(const char *ctx) {
  char h[E2B_TEMPLATE_HASH_LEN + 1];
  CHECK(hash_of(ctx, "*", "/app/", 0, h) == 0);
  CHECK_STR(h, "b966fa3978b03fcb3fb0286452f35477c5b689ccdb1a12cf6d2c36c8e061e752");
  CHECK(hash_of(ctx, "a.txt", "/app/a.txt", 0, h) == 0);
  CHECK_STR(h, "dcad0f8a42d2a6616fc6eb28547760d9c39e1401972aba136a910357918607a7");
  CHECK(hash_of(ctx, "link", "/x", 1, h) == 0);
  CHECK_STR(h, "c5339fbd2c9ec57e813c3a13403c449d1d75f7c1dcdbd55bea2a18e155e26fe2");
  e2b_error err;
  const char *args[] = {"missing*", "/x"};
  e2b_template_step s = {.type = "COPY", .args = args, .arg_count = 2};
  e2b_template t = {.from_template = "base", .steps = &s, .step_count = 1, .context = ctx};
  CHECK(e2b_template_files_hash(&t, 0, h, &err) != 0 && err.code == E2B_ERR_NOT_FOUND);
}

/* secret.txt is in .dockerignore (with a blank line and a comment): left
 * out of the hash as the JS SDK leaves it out, and out of the tar. */
static void test_dockerignore(void) {
  char dir[] = "/tmp/e2b-test-template-di-XXXXXX", p[256], cmd[512];
  if (!mkdtemp(dir)) return;
  static const char *const files[][2] = {
      {"a.txt", "hello\n"}, {"secret.txt", "pw"}, {".dockerignore", "secret.txt\n\n# a comment\n  \n"}};
  for (size_t i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i][0]);
    FILE *f = fopen(p, "w");
    fputs(files[i][1], f);
    fclose(f);
    chmod(p, 0644);
  }
  char h[E2B_TEMPLATE_HASH_LEN + 1];
  CHECK(hash_of(dir, "*", "/app/", 0, h) == 0);
  CHECK_STR(h, "afe312b74cec28560442cda9233f6a34fc5bc86b9a9acb1749f6b425f47dabb9");
  snprintf(p, sizeof p, "%s/../e2b-test-template-di.tar", dir);
  const char *args[] = {"*", "/app/"};
  e2b_template_step s = {.type = "COPY", .args = args, .arg_count = 2};
  e2b_template t = {.from_template = "base", .steps = &s, .step_count = 1, .context = dir};
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(e2b_template_tar(&t, 0, fd, NULL) == 0);
  close(fd);
  snprintf(cmd, sizeof cmd, "tar -tzf %s | tr '\\n' ' '", p);
  char got[256] = "";
  FILE *pp = popen(cmd, "r");
  if (pp && !fgets(got, sizeof got, pp)) got[0] = 0;
  CHECK(pp && pclose(pp) == 0);
  CHECK_STR(got, ".dockerignore a.txt ");
  unlink(p);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

static void test_tar(const char *ctx) {
  char path[] = "/tmp/e2b-test-template-tar-XXXXXX", cmd[512], line[512], got[2048] = "";
  int fd = mkstemp(path);
  const char *args[] = {".", "/app", "", ""}, *ignore[] = {".hidden"};
  e2b_template_step s = {.type = "COPY", .args = args, .arg_count = 4};
  e2b_template t = {.from_template = "base", .steps = &s, .step_count = 1, .context = ctx,
                    .ignore = ignore, .ignore_count = 1};
  CHECK(e2b_template_tar(&t, 0, fd, NULL) == 0);
  close(fd);
  snprintf(cmd, sizeof cmd, "gzip -t %s && tar -xOzf %s a.txt && tar -tzf %s", path, path, path);
  FILE *p = popen(cmd, "r");
  while (p && fgets(line, sizeof line, p)) strncat(got, line, sizeof got - strlen(got) - 1);
  CHECK(p && pclose(p) == 0);
  CHECK_STR(got, "hello\na.txt\nlink\n"); /* the content, then the members: .hidden ignored */
  unlink(path);
}

/* A context of 4 MiB that compresses well and 256 KiB that does not: the
 * archive is deflated for real (well under the files' size), and gzip -t and
 * tar read it back to the files' exact bytes. */
static void test_tar_compressed(void) {
  char dir[] = "/tmp/e2b-test-template-gz-XXXXXX", p[512], cmd[1536];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(p, sizeof p, "%s/ctx", dir);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/ctx/text.txt", dir);
  FILE *f = fopen(p, "w");
  for (int i = 0; f && i < 4 * 1024 * 1024 / 32; i++) fprintf(f, "line %026d\n", i % 1000);
  if (f) fclose(f);
  snprintf(p, sizeof p, "%s/ctx/noise.bin", dir);
  f = fopen(p, "w");
  uint32_t x = 12345;
  for (int i = 0; f && i < 256 * 1024; i++) fputc((int)((x = x * 1103515245u + 12345u) >> 24), f);
  if (f) fclose(f);
  snprintf(p, sizeof p, "%s/ctx", dir);
  const char *args[] = {".", "/app"};
  e2b_template_step s = {.type = "COPY", .args = args, .arg_count = 2};
  e2b_template t = {.from_template = "base", .steps = &s, .step_count = 1, .context = p};
  snprintf(p, sizeof p, "%s/a.tar.gz", dir);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  snprintf(p, sizeof p, "%s/ctx", dir);
  CHECK(e2b_template_tar(&t, 0, fd, NULL) == 0);
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && st.st_size > 256 * 1024 && st.st_size < 1024 * 1024);
  close(fd);
  snprintf(cmd, sizeof cmd,
           "cd %s && gzip -t a.tar.gz && mkdir out && tar -xzf a.tar.gz -C out && "
           "cmp out/text.txt ctx/text.txt && cmp out/noise.bin ctx/noise.bin",
           dir);
  CHECK(system(cmd) == 0);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

/* A parsed Dockerfile as one line: "FROM img;TYPE a,b;...;START cmd". */
static void dockerfile_text(const e2b_dockerfile *d, char *out, size_t cap) {
  size_t n = (size_t)snprintf(out, cap, "FROM %s", d->from_image);
  for (size_t i = 0; i < d->step_count && n < cap; i++) {
    n += (size_t)snprintf(out + n, cap - n, ";%s ", d->steps[i].type);
    for (size_t k = 0; k < d->steps[i].arg_count && n < cap; k++)
      n += (size_t)snprintf(out + n, cap - n, "%s%s", k ? "," : "", d->steps[i].args[k]);
  }
  if (d->start_cmd && n < cap) snprintf(out + n, cap - n, ";START %s", d->start_cmd);
}

#define PRE "FROM %s;USER root;WORKDIR /"
#define POST ";USER user;WORKDIR /home/user"

static void test_dockerfile(void) {
  static const struct {
    const char *in, *want; /* want: the steps, or "!" and a piece of the refusal */
  } cases[] = {
      {"FROM ubuntu:22.04\nRUN apt-get update && \\\n    apt-get install -y  curl\n",
       "FROM ubuntu:22.04;USER root;WORKDIR /;RUN apt-get update &&     apt-get install -y  curl" POST},
      {"# syntax=docker/dockerfile:1\nfrom e2bdev/base AS b\n\n# a comment\nrun echo hi\n",
       "FROM e2bdev/base;USER root;WORKDIR /;RUN echo hi" POST},
      {"FROM x\nCOPY --chown=user:user a.txt \"b c.txt\" /app/\nADD [\"d\", \"/e\"]\n",
       "FROM x;USER root;WORKDIR /;COPY a.txt,/app/,user:user;COPY b c.txt,/app/,user:user;COPY d,/e" POST},
      {"FROM x\nENV A=1 B=\"two words\"\nENV C the rest here\nARG D\nARG E=5\n",
       "FROM x;USER root;WORKDIR /;ENV A,1,B,two words;ENV C,the rest here;ENV D,;ENV E,5" POST},
      {"FROM x\nWORKDIR /srv\nUSER app\nCMD [\"node\", \"server.js\"]\nEXPOSE 80\nLABEL a=b\n",
       "FROM x;USER root;WORKDIR /;WORKDIR /srv;USER app;START node server.js"},
      {"FROM x\nENTRYPOINT python -m http.server\nRUN [\"sh\", \"-c\", \"echo a\"]\nCMD ignored-no\nCMD last\n",
       "FROM x;USER root;WORKDIR /;RUN sh -c echo a" POST ";START last"},
      {"FROM x\nRUN a \\\n# inside\n  b\r\n", "FROM x;USER root;WORKDIR /;RUN a   b" POST},
      {"FROM\nRUN true\n", "FROM e2bdev/base;USER root;WORKDIR /;RUN true" POST},
      {"FROM --platform=linux/amd64 img\n", "FROM img;USER root;WORKDIR /" POST},
      {"RUN true\n", "!dockerfile: a Dockerfile needs a FROM"},
      {"FROM a\nFROM b\n", "!line 2: multi-stage"},
      {"FROM a\nCOPY --from=b /x /y\n", "!line 2: COPY --from"},
      {"FROM a\nRUN <<EOF\necho\nEOF\n", "!line 2: heredocs"},
      {"FROM a\nSHELL [\"/bin/bash\"]\n", "!line 2: SHELL is not supported"},
      {"FROM a\nONBUILD RUN x\n", "!ONBUILD is not supported"},
      {"# escape=`\nFROM a\n", "!escape character"},
      {"FROM a\nCOPY onlyone\n", "!COPY needs a source and a destination"},
      {"FROM a\nENV =x\n", "!is no NAME=value"},
      {"FROM a\nENV K\n", "!ENV K has no value"},
      {"FROM a\nRUN\n", "!RUN needs a command"},
      {"FROM a\nWORKDIR\n", "!WORKDIR needs a value"},
      {"FROM a\nRUN \xff\n", "!UTF-8"},
  };
  char got[1024], want[1024];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    e2b_dockerfile d;
    e2b_error err;
    int rc = e2b_dockerfile_parse(cases[i].in, strlen(cases[i].in), &d, &err);
    if (cases[i].want[0] == '!') {
      CHECK(rc == -1 && err.code == E2B_ERR_INVALID_ARGUMENT && !strcmp(err.field, "dockerfile"));
      CHECK(strstr(err.message, cases[i].want + 1) != NULL);
      if (!strstr(err.message, cases[i].want + 1)) fprintf(stderr, "case %zu: %s\n", i, err.message);
      continue;
    }
    CHECK(rc == 0);
    if (rc) {
      fprintf(stderr, "case %zu: %s\n", i, err.message);
      continue;
    }
    dockerfile_text(&d, got, sizeof got);
    snprintf(want, sizeof want, "%s", cases[i].want);
    CHECK_STR(got, want);
    e2b_dockerfile_free(&d);
  }
  e2b_dockerfile d;
  char nul[] = "FROM a\nRUN a\0b\n";
  CHECK(e2b_dockerfile_parse(nul, sizeof nul - 1, &d, NULL) == -1);
  CHECK(e2b_dockerfile_parse("FROM a", E2B_DOCKERFILE_MAX + 1, &d, NULL) == -1); /* refused on size, unread */
}

int main(void) {
  test_names();
  test_steps();
  test_template_and_body();
  test_quote();
  test_registry();
  test_dockerignore();
  test_tar_compressed();
  test_dockerfile();
  char *ctx = fixture();
  CHECK(ctx != NULL);
  if (ctx) {
    test_hash(ctx);
    test_tar(ctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", ctx);
    CHECK(system(cmd) == 0);
  }
  return TESTING_DONE();
}
