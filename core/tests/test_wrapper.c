/* test_wrapper.c — how a kept command is started: each of shline.c's plans
 * by its own script, the string shown back as it is; an argv as an argv;
 * the traps only a parkable wrapper sets; the exit file's status line;
 * the files a forgotten name loses; what its own stream says. */
#include "internal.h"
#include "testing.h"

#include <stdlib.h>
#include <string.h>

/* Which script starts the kept string s (a piece only it holds). */
static int script_has(const char *s, const char *piece) {
  e2b_proc_opts opts = {.shell = s};
  e2b_wrapped w;
  CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, NULL, 0, NULL) == 0);
  CHECK(w.opts.arg_count == 6 && strcmp(w.opts.args[3], "e2b-sh") == 0);
  CHECK_STR(w.opts.args[5], s);
  int has = strstr(w.opts.args[2], piece) != NULL;
  e2b_wrapped_free(&w);
  return has;
}

static int own_shell(const char *s) { return script_has(s, "; else { __c=$1"); }
static int execd(const char *s) { return script_has(s, "exec $__c"); }

/* The last part of the list s that its script execs (E2B_TAIL), or NULL. */
static const char *list_tail(const char *s, char *out, size_t n) {
  e2b_proc_opts opts = {.shell = s};
  e2b_wrapped w;
  CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, NULL, 0, NULL) == 0);
  const char *tail = NULL;
  for (size_t i = 0; i < w.opts.env_count; i++)
    if (strcmp(w.opts.env[i].key, "E2B_TAIL") == 0) tail = w.opts.env[i].value;
  CHECK((tail != NULL) == (strstr(w.opts.args[2], "E2B_TAIL") != NULL));
  if (tail) snprintf(out, n, "%s", tail);
  e2b_wrapped_free(&w);
  return tail ? out : NULL;
}

/* Which plan a string gets is test_shline.c's table; here, that each plan
 * starts its own script (and a list's last part travels in E2B_TAIL). */
static void each_plan_starts_its_script(void) {
  CHECK(own_shell("true") && !execd("true"));
  CHECK(execd("ls /") && !own_shell("ls /"));
  CHECK(!own_shell("echo $HOME") && !execd("echo $HOME"));
  char got[64];
  CHECK(!list_tail("echo $HOME", got, sizeof got));
  const char *tail = list_tail("cd /; ls", got, sizeof got);
  CHECK(tail && strcmp(tail, "ls") == 0 && !execd("cd /; ls"));
}

static void argv_commands_are_not_strings(void) {
  const char *args[] = {"hi"};
  e2b_proc_opts opts = {.cmd = "echo", .args = args, .arg_count = 1};
  e2b_wrapped w;
  CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, NULL, 0, NULL) == 0);
  CHECK_STR(w.opts.args[2], "e2b-proc");
  CHECK_STR(w.opts.args[4], "echo");
  e2b_wrapped_free(&w);
  /* an argv that spells bash -l -c is an argv: nothing reads a string back out of it */
  const char *bash[] = {"-l", "-c", "true"};
  e2b_proc_opts spelled = {.cmd = "/bin/bash", .args = bash, .arg_count = 3};
  CHECK(e2b_wrap(&w, &spelled, "/tmp/.e2b-proc/ab", 0, NULL, 0, NULL) == 0);
  CHECK_STR(w.opts.args[2], "e2b-proc");
  CHECK_STR(w.opts.args[4], "/bin/bash");
  e2b_wrapped_free(&w);
  /* not kept, a command string is spelled out for envd */
  e2b_proc_opts str = {.shell = "echo hi"};
  CHECK(e2b_wrap(&w, &str, NULL, 1, NULL, 0, NULL) == 0);
  CHECK(w.opts.shell == NULL && strcmp(w.opts.args[2], "e2b-env") == 0);
  CHECK_STR(w.opts.args[3], "/bin/bash");
  CHECK_STR(w.opts.args[6], "echo hi");
  e2b_wrapped_free(&w);
}

/* The script a kept command's wrapper runs (E2B_PROC), parkable or not. */
static const char *wrapper_script(const e2b_wrapped *w) {
  for (size_t i = 0; i < w->opts.env_count; i++)
    if (strcmp(w->opts.env[i].key, "E2B_PROC") == 0) return w->opts.env[i].value;
  return "";
}

static void only_a_parkable_wrapper_traps_every_signal(void) {
  e2b_proc_opts opts = {.shell = "sleep 9"};
  for (int parkable = 0; parkable < 2; parkable++) {
    e2b_wrapped w;
    CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, NULL, parkable ? E2B_WRAP_PARKABLE : 0, NULL) == 0);
    const char *script = wrapper_script(&w);
    CHECK(strstr(script, "trap '__s=9 __i=1; kill -s KILL -- -$__j") != NULL); /* TERM: a kill, always */
    CHECK((strstr(script, "trap '__s=10 __i=1' 10;") != NULL) == parkable);
    CHECK((strstr(script, "trap '__s=64 __i=1' 64;") != NULL) == parkable);
    CHECK(strstr(script, "' 9;") == NULL); /* SIGKILL cannot be */
    e2b_wrapped_free(&w);
  }
}

/* An exit file ends a command only as "STATUS BOOTID\n": the status and a
 * space; a status alone, the boot id alone (the command runs) or bash's job
 * report behind it are no status. */
static void exit_status_is_followed_by_the_boot_id(void) {
  static const struct {
    const char *file;
    long sep, status; /* sep -1: no status */
  } cases[] = {{"0 12345678-1234-1234-1234-123456789abc\n", 1, 0},
               {"127 12345678-1234-1234-1234-123456789abc\n", 3, 127},
               {"-9 12345678-1234-1234-1234-123456789abc\n", 2, -9},
               {"0 \n", 1, 0},
               {"5\n", -1, 0},
               {"5", -1, 0},
               {"12345678-1234-1234-1234-123456789abc", -1, 0},
               {"12345678-1234-1234-1234-123456789abc1 bash: line 1: 12 Killed\n", -1, 0},
               {"- 1\n", -1, 0},
               {"", -1, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    long status = 7777;
    long sep = e2b_kept_status(cases[i].file, strlen(cases[i].file), &status);
    CHECK(sep == cases[i].sep);
    CHECK(status == (sep < 0 ? 7777 : cases[i].status));
  }
}

/* The names handed to a wrapper (E2B_FORGET) lose the three files a kept
 * command has: out, err and exit. */
static void forgotten_names_lose_three_files(void) {
  e2b_proc_opts opts = {.shell = "true"};
  e2b_wrapped w;
  CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, "cd ef", 0, NULL) == 0);
  CHECK(strstr(wrapper_script(&w), "__l=\"$__l $__n.out $__n.err $__n.exit\";;") != NULL);
  e2b_wrapped_free(&w);
}

static void said(e2b_wrapper_report *r, growbuf *into, const char *text) {
  e2b_wrapper_heard(r, into, (const uint8_t *)text, strlen(text));
}

/* What a wrapper says on its own stream is read as __e2b_end and the
 * start check write it: the announcement byte, "!" and why not, and the
 * flags letter 'a' + (1 out, 2 err non-empty; 4 out, 8 err inline). */
static void wrapper_stream_is_read_as_written(void) {
  e2b_wrapper_report r = {.announces = 1, .nonempty = -1};
  char chunk[] = E2B_WRAPPER_READY "hi";
  queued n = {.ev = {.type = E2B_EVENT_STDOUT, .data = (const uint8_t *)chunk, .len = 3}, .len = 3};
  CHECK(e2b_wrapper_announced(&r, &n) && n.ev.len == 2 && memcmp(n.ev.data, "hi", 2) == 0);
  CHECK(!e2b_wrapper_announced(&r, &n)); /* "hi" is the command's */
  said(&r, &r.out, "out\n");
  said(&r, &r.out, "f"); /* 'a' + 1 + 4: out non-empty and inline, err empty */
  e2b_wrapper_ended(&r);
  CHECK(r.nonempty == 1 && r.inlined == 1 && r.out.len == 4 && !r.start_err[0]);
  e2b_growbuf_free(&r.out);
  r = (e2b_wrapper_report){.announces = 1, .nonempty = -1};
  said(&r, &r.err, "!ENOENT");
  e2b_wrapper_ended(&r); /* no letter: it never ran the command */
  CHECK(r.nonempty == -1 && strcmp(r.start_err, "ENOENT") == 0);
  e2b_growbuf_free(&r.err);
  r = (e2b_wrapper_report){.nonempty = -1};
  static char big[E2B_WRAPPER_INLINE_MAX + 1];
  memset(big, 'x', sizeof big);
  e2b_wrapper_heard(&r, &r.out, (const uint8_t *)big, sizeof big);
  CHECK(!r.over); /* a whole inlined file and its letter */
  said(&r, &r.out, "p");
  CHECK(r.over); /* more than a wrapper writes: nothing of it is trusted */
  e2b_wrapper_ended(&r);
  CHECK(r.nonempty == -1 && r.inlined == 0);
  e2b_growbuf_free(&r.out);
}

/* A following wrapper's stderr ends with NUL "E2B=" nonce letter "\n": the
 * bytes that may still become it wait, others go on; only the whole
 * trailer with this command's nonce counts. */
static void follow_trailer_is_held_and_read(void) {
  const char *nonce = "0a1b2c3d";
  static const struct {
    const char *data;
    size_t len;
    size_t held;
  } cases[] = {
      {"plain text\n", 11, 0},
      {"x\0", 2, 1},
      {"x\0E2B=0a1b", 10, 9},
      {"x\0E2B=0a1b2c3dp", 15, 14},
      {"\0E2B=0a1b2c3dp\n", 15, 15},
      {"\0E2B=0a1b2c3dq\n", 15, 0},   /* no such letter */
      {"\0E2B=0a1b2c3dQ\n", 15, 0},
      {"\0E2B=0a1b2c3dP\n", 15, 15},  /* following did not work */
      {"\0E2B=ffffffffp\n", 15, 0},   /* another command's nonce */
      {"\0E2B=0a1b2c3dp\nx", 16, 0},  /* bytes after it: it was output */
      {"\0\0", 2, 1},
      {"E2B=", 4, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    CHECK(e2b_wrapper_trailer_hold(nonce, (const uint8_t *)cases[i].data, cases[i].len) == cases[i].held);
  e2b_wrapper_report r = {.nonempty = -1};
  CHECK(e2b_wrapper_trailer(&r, nonce, (const uint8_t *)"\0E2B=0a1b2c3dn\n", 15)); /* 'a' + 13 */
  CHECK(r.nonempty == 1 && r.inlined == 3 && !r.unfollowed);
  r = (e2b_wrapper_report){.nonempty = -1};
  CHECK(e2b_wrapper_trailer(&r, nonce, (const uint8_t *)"\0E2B=0a1b2c3dB\n", 15)); /* no tail here */
  CHECK(r.nonempty == 1 && r.inlined == 0 && r.unfollowed);
  r = (e2b_wrapper_report){.nonempty = -1};
  CHECK(!e2b_wrapper_trailer(&r, nonce, (const uint8_t *)"\0E2B=0a1b2c3dn", 14) && r.nonempty == -1);
}

/* bash parses all of a wrapper for every command: each has only the
 * pieces it needs. The sweep's text waits in E2B_SWEEP, parsed only when
 * a sweep is due; a followed command is never listed for it. */
static void a_wrapper_holds_only_what_its_command_needs(void) {
  e2b_proc_opts str = {.shell = "echo hi"}, argv = {.cmd = "ls"};
  for (int i = 0; i < 8; i++) {
    int is_argv = i & 1, follow = (i >> 1) & 1, sweep = (i >> 2) & 1;
    e2b_wrapped w;
    CHECK(e2b_wrap(&w, is_argv ? &argv : &str, "/tmp/.e2b-proc/ab", 0, NULL, sweep ? E2B_WRAP_SWEEP : 0,
                   follow ? "0a1b2c3d" : NULL) == 0);
    const char *script = wrapper_script(&w), *sweep_env = NULL;
    for (size_t k = 0; k < w.opts.env_count; k++)
      if (strcmp(w.opts.env[k].key, "E2B_SWEEP") == 0) sweep_env = w.opts.env[k].value;
    CHECK((strstr(script, "command -v -- \"$1\"") != NULL) == is_argv);
    CHECK((strstr(script, "__e2b_tomb") != NULL) == (sweep && !follow));
    CHECK((sweep_env != NULL) == (sweep && !follow));
    CHECK(!sweep_env || strstr(sweep_env, "mv -f -- swept-$EUID") != NULL);
    CHECK(strstr(script, "mv -f") == NULL);
    CHECK(strstr(script, "E2B_FORGET") == NULL && strstr(script, "E2B_ENV_KEEP") == NULL);
    e2b_wrapped_free(&w);
  }
}

/* A replaced environment is pruned once the wrapper read what it was
 * handed (the follow nonce, the sweep's text): a pruned one is gone. */
static void the_environment_is_pruned_after_the_wrapper_read_its_own(void) {
  e2b_proc_opts opts = {.cmd = "ls"};
  for (int follow = 0; follow < 2; follow++) {
    e2b_wrapped w;
    CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 1, "cd", E2B_WRAP_SWEEP, follow ? "0a1b2c3d" : NULL) == 0);
    const char *script = wrapper_script(&w), *prune = strstr(script, "compgen -e");
    const char *read = strstr(script, follow ? "__f=$E2B_FOLLOW" : "__w=$E2B_SWEEP");
    CHECK(prune && read && read < prune);
    CHECK(strstr(script, "for __n in $E2B_FORGET") < prune);
    e2b_wrapped_free(&w);
  }
}

/* ext4 writes a file truncated from non-empty out to disk as it is
 * closed (auto_da_alloc): the status goes over the boot id in place, and
 * only an exit file longer than the boot id (bash's job report behind it)
 * is emptied first. */
static void the_status_is_written_in_place(void) {
  e2b_proc_opts str = {.shell = "sleep 9"}, argv = {.cmd = "sleep"};
  for (int is_argv = 0; is_argv < 2; is_argv++) {
    e2b_wrapped w;
    CHECK(e2b_wrap(&w, is_argv ? &argv : &str, "/tmp/.e2b-proc/ab", 0, NULL, E2B_WRAP_SWEEP, NULL) == 0);
    const char *script = wrapper_script(&w);
    CHECK(strstr(script, "printf '%s %s\\n' \"$st\" \"$__b\" 1<>\"$__p.exit\"") != NULL);
    CHECK(strstr(script, "((${#j}>${#__b})) && : >\"$__p.exit\"") != NULL);
    const char *at = script;
    int truncating = 0;
    while ((at = strstr(at, ">\"$__p.exit\"")) != NULL) {
      truncating += at[-1] != '>' && at[-1] != '<';
      at++;
    }
    CHECK(truncating == 2); /* the creation with the boot id, and the emptying of a longer one */
    e2b_wrapped_free(&w);
  }
}

/* Given a nonce, the wrapper follows its files with tail and ends its
 * stderr with the trailer; without one it says the flags letter. */
static void only_a_following_wrapper_starts_tail(void) {
  e2b_proc_opts opts = {.shell = "sleep 9"};
  for (int follow = 0; follow < 2; follow++) {
    e2b_wrapped w;
    CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, NULL, 0, follow ? "0a1b2c3d" : NULL) == 0);
    int has = 0;
    for (size_t i = 0; i < w.opts.env_count; i++)
      if (strcmp(w.opts.env[i].key, "E2B_FOLLOW") == 0) has = strcmp(w.opts.env[i].value, "0a1b2c3d") == 0;
    CHECK(has == follow);
    CHECK((strstr(wrapper_script(&w), "tail -c +1 -f --pid=$__j") != NULL) == follow);
    e2b_wrapped_free(&w);
  }
}

int main(void) {
  RUN(follow_trailer_is_held_and_read);
  RUN(only_a_following_wrapper_starts_tail);
  RUN(a_wrapper_holds_only_what_its_command_needs);
  RUN(the_status_is_written_in_place);
  RUN(the_environment_is_pruned_after_the_wrapper_read_its_own);
  RUN(wrapper_stream_is_read_as_written);
  RUN(exit_status_is_followed_by_the_boot_id);
  RUN(forgotten_names_lose_three_files);
  RUN(each_plan_starts_its_script);
  RUN(argv_commands_are_not_strings);
  RUN(only_a_parkable_wrapper_traps_every_signal);
  return TESTING_DONE();
}
