/* Tests for git.c: which values may become an element of git's argv, and a
 * table of `git status --porcelain=v2 --branch -z` outputs (as git writes
 * them, and as a hostile sandbox might) with what the parser must make of
 * each. */
#include "e2b.h"
#include "testing.h"

#define S(lit) lit, sizeof(lit) - 1

static int ok(e2b_git_value kind, const char *v) { return e2b_git_check(kind, v, strlen(v)) == NULL; }

static void test_refs(void) {
  CHECK(ok(E2B_GIT_REF, "main"));
  CHECK(ok(E2B_GIT_REF, "feature/x-1"));
  CHECK(ok(E2B_GIT_REF, "origin"));
  static const char *const bad[] = {"", "-f", "--upload-pack=x", "a..b", "a b", "a~1", "a^", "a:b", "a?",
                                    "a*", "a[", "a\\b", "a@{1}", "/a", "a/", "a.", ".a", "a/.b", "a//b",
                                    "x.lock", "@", "a\nb", "a\x7f"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(!ok(E2B_GIT_REF, bad[i]));
}

static void test_urls(void) {
  CHECK(ok(E2B_GIT_URL, "https://github.com/e2b-dev/E2B.git"));
  CHECK(ok(E2B_GIT_URL, "https://user@github.com/x.git"));
  CHECK(ok(E2B_GIT_URL, "file:///tmp/remote.git"));
  CHECK(ok(E2B_GIT_URL, "git@github.com:o/r.git"));
  CHECK(ok(E2B_GIT_URL, "/tmp/remote.git"));
  CHECK(ok(E2B_GIT_URL, "https://github.com/a:b@c")); /* '@' past the authority */
  CHECK(!ok(E2B_GIT_URL, "https://user:secret@github.com/x.git"));
  CHECK(!ok(E2B_GIT_URL, "-uhttps://x"));
  CHECK(!ok(E2B_GIT_URL, "--upload-pack=touch /tmp/x"));
  CHECK(!ok(E2B_GIT_URL, "https://x/\ny"));
  CHECK(e2b_git_check(E2B_GIT_URL, S("a\0b")) != NULL);
}

static void test_text_and_keys(void) {
  CHECK(ok(E2B_GIT_LINE, "Ada Lovelace"));
  CHECK(!ok(E2B_GIT_LINE, "Ada\nLovelace"));
  CHECK(!ok(E2B_GIT_LINE, "Ada\r"));
  CHECK(ok(E2B_GIT_TEXT, "subject\n\nbody"));
  CHECK(e2b_git_check(E2B_GIT_TEXT, S("a\0b")) != NULL);
  CHECK(e2b_git_check(E2B_GIT_PATH, S("dir/a\0b")) != NULL);
  CHECK(ok(E2B_GIT_PATH, "-odd name"));
  CHECK(!ok(E2B_GIT_TEXT, ""));
  CHECK(ok(E2B_GIT_KEY, "user.name"));
  CHECK(ok(E2B_GIT_KEY, "remote.origin.url"));
  CHECK(ok(E2B_GIT_KEY, "branch.my/feature.remote"));
  static const char *const bad[] = {"user", ".name", "user.", "user.na me", "a=b.c", "user.name=x", "a.b\n"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(!ok(E2B_GIT_KEY, bad[i]));
}

typedef struct {
  e2b_git_entry e[8];
  int n;
} entries;

static int collect(void *ud, const e2b_git_entry *e) {
  entries *es = ud;
  if (es->n == 8) return 7;
  es->e[es->n++] = *e;
  return 0;
}

static int parse(const char *buf, size_t len, e2b_git_head *h, entries *es) {
  const char *why;
  es->n = 0;
  int r = e2b_git_status_parse(buf, len, h, collect, es, &why);
  CHECK((r == -1) == (why != NULL));
  return r;
}

static void test_status_full(void) {
  static const char out[] = "# branch.oid 1234abcd\0# branch.head main\0# branch.upstream origin/main\0"
                            "# branch.ab +2 -1\0# stash 3\0"
                            "1 M. N... 100644 100644 100644 aaaa bbbb staged.txt\0"
                            "1 .M N... 100644 100644 100644 aaaa bbbb dir/with space.txt\0"
                            "2 R. N... 100644 100644 100644 aaaa bbbb R100 new name\0old name\0"
                            "u UU N... 100644 100644 100644 100644 aaaa bbbb cccc both.txt\0"
                            "? untracked\nnewline\0! ignored.o\0";
  e2b_git_head h;
  entries es;
  CHECK(parse(out, sizeof out - 1, &h, &es) == 0);
  CHECK_MEM(h.oid, h.oid_len, "1234abcd", 8);
  CHECK_MEM(h.branch, h.branch_len, "main", 4);
  CHECK_MEM(h.upstream, h.upstream_len, "origin/main", 11);
  CHECK(h.ahead == 2 && h.behind == 1 && !h.detached);
  CHECK(es.n == 6);
  CHECK(es.e[0].kind == '1' && es.e[0].xy[0] == 'M' && es.e[0].xy[1] == '.');
  CHECK_MEM(es.e[0].path, es.e[0].path_len, "staged.txt", 10);
  CHECK_MEM(es.e[1].path, es.e[1].path_len, "dir/with space.txt", 18);
  CHECK(es.e[2].kind == '2' && es.e[2].xy[0] == 'R');
  CHECK_MEM(es.e[2].path, es.e[2].path_len, "new name", 8);
  CHECK_MEM(es.e[2].orig, es.e[2].orig_len, "old name", 8);
  CHECK(es.e[3].kind == 'u' && es.e[3].xy[0] == 'U' && es.e[3].xy[1] == 'U');
  CHECK_MEM(es.e[3].path, es.e[3].path_len, "both.txt", 8);
  CHECK(es.e[4].kind == '?' && es.e[4].xy[0] == '?');
  CHECK_MEM(es.e[4].path, es.e[4].path_len, "untracked\nnewline", 17);
  CHECK(es.e[5].kind == '!');
}

static void test_status_heads(void) {
  e2b_git_head h;
  entries es;
  CHECK(parse(S("# branch.oid (initial)\0# branch.head main\0"), &h, &es) == 0);
  CHECK(h.oid == NULL && h.branch_len == 4 && h.upstream == NULL && h.ahead == 0);
  CHECK(parse(S("# branch.oid abc\0# branch.head (detached)\0"), &h, &es) == 0);
  CHECK(h.detached && h.branch == NULL);
  CHECK(parse(S(""), &h, &es) == 0 && es.n == 0);
  CHECK(parse(S("# branch.head main"), &h, &es) == 0 && h.branch_len == 4); /* no final NUL */
}

static void test_status_refused(void) {
  static const struct {
    const char *buf;
    size_t len;
  } bad[] = {
      {S("# branch.ab +x -1\0")},        {S("# branch.ab +1\0")},
      {S("# branch.ab +99999999999 -1\0")}, {S("#x\0")},
      {S("1 M. N... 100644\0")},          {S("1 ZZ N... 1 1 1 a b p\0")},
      {S("2 R. N... 1 1 1 a b R100 new\0")}, {S("2 R. N... 1 1 1 a b R100 new\0\0")},
      {S("? \0")},                        {S("x what\0")},
      {S("\0")},                          {S("1 M")},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    e2b_git_head h;
    entries es;
    int r = parse(bad[i].buf, bad[i].len, &h, &es);
    if (r != -1) fprintf(stderr, "case %zu accepted\n", i);
    CHECK(r == -1);
  }
}

static void test_status_callback_stops(void) {
  static const char out[] = "? a\0? b\0? c\0? d\0? e\0? f\0? g\0? h\0? i\0? j\0";
  e2b_git_head h;
  entries es;
  CHECK(parse(out, sizeof out - 1, &h, &es) == 7 && es.n == 8);
}

static void test_failure_auth_only_when_the_remote_refused_credentials(void) {
  static const char *const auth[] = {
      "fatal: could not read Username for 'https://h': terminal prompts disabled\n",
      "remote: Invalid username or password.\nfatal: Authentication failed for 'https://h/r.git/'\n",
      "fatal: unable to access 'https://h/r.git/': The requested URL returned error: 403\n",
      "git@h: Permission denied (publickey).\nfatal: Could not read from remote repository.\n",
      "ERROR: ACCESS DENIED\n",
  };
  for (size_t i = 0; i < sizeof auth / sizeof *auth; i++)
    CHECK(e2b_git_failure_code(auth[i], strlen(auth[i])) == E2B_ERR_AUTH);
  static const char *const other[] = {
      "fatal: repository '/tmp/none.git' does not exist\n",
      "fatal: could not create work tree dir 'x': Permission denied\n",
      "fatal: unable to access 'https://h/r.git/': The requested URL returned error: 404\n",
      "! [rejected]        main -> main (non-fast-forward)\n",
      "",
  };
  for (size_t i = 0; i < sizeof other / sizeof *other; i++)
    CHECK(e2b_git_failure_code(other[i], strlen(other[i])) == E2B_ERR_SANDBOX);
  /* read within len only: the sign past it does not count */
  const char *cut = "fatal: Authentication failed";
  CHECK(e2b_git_failure_code(cut, 10) == E2B_ERR_SANDBOX);
  CHECK(e2b_git_failure_code(NULL, 0) == E2B_ERR_SANDBOX);
}

int main(void) {
  RUN(test_refs);
  RUN(test_urls);
  RUN(test_text_and_keys);
  RUN(test_status_full);
  RUN(test_status_heads);
  RUN(test_status_refused);
  RUN(test_status_callback_stops);
  RUN(test_failure_auth_only_when_the_remote_refused_credentials);
  return TESTING_DONE();
}
