/* test_wrapper.c — how a kept command string is started: in the wrapper's
 * own shell only when it is one call of a harmless builtin with nothing
 * that expands, redirects or chains, else in the subshell that keeps
 * `exit`, `exec` and traps faithful, which execs a lone program, or a
 * list's last, as bash -c would; either way shown back as the string. */
#include "internal.h"
#include "testing.h"

#include <stdlib.h>
#include <string.h>

/* Which script starts the kept string s (a piece only it holds). */
static int script_has(const char *s, const char *piece) {
  e2b_proc_opts opts = {.shell = s};
  e2b_wrapped w;
  CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, NULL, 0) == 0);
  CHECK(w.opts.arg_count == 6 && strcmp(w.opts.args[3], "e2b-sh") == 0);
  CHECK_STR(w.opts.args[5], s);
  int has = strstr(w.opts.args[2], piece) != NULL;
  e2b_wrapped_free(&w);
  return has;
}

static int own_shell(const char *s) { return script_has(s, "; else { __c=$1"); }
static int execd(const char *s) { return script_has(s, "exec $__c"); }

static void harmless_builtins_run_in_the_wrappers_shell(void) {
  const char *yes[] = {"true", "false", ":", "echo", "echo hi there", "echo -n 'a b' \"c\"", "pwd",
                       "test -d /tmp", "[ -e /x ]", "echo *.txt {a,b} ~ # note"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) CHECK(own_shell(yes[i]));
}

static void everything_else_runs_in_the_subshell(void) {
  const char *no[] = {"", " true", "true;exit 3", "echo $HOME", "echo `id`", "echo hi > f",
                      "true && exec sh", "echo a | cat", "echo (x)", "echo a\\", "echo a\nexit 1",
                      "echo\ta", "exit", "exec sh", "trap 'x' EXIT", "kill $$", "printf -v __p x",
                      "read x", "cd /", "set -e", "ls", "echo$IFS", "truex", "tru"};
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) CHECK(!own_shell(no[i]));
}

static void a_lone_program_is_execd_by_the_subshell(void) {
  const char *yes[] = {"ls", "ls /", "sh -c 'kill -SEGV $$'", "python3 x.py --n=3", "grep -r \"a b\" ."};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) CHECK(execd(yes[i]) && !own_shell(yes[i]));
  const char *no[] = {"", " ls", "ls; ls", "ls | cat", "ls > f", "ls && ls", "ls &", "(ls)", "ls $(pwd)",
                      "ls `pwd`", "A=1 ls", "./run.sh", "/bin/ls", "\"ls\" /", "$X y", "l*s", "~/bin/x",
                      "cd /", "exec ls", "exit 3", "kill 1", "if true", "time ls", "echo hi", "true",
                      "ls\nexit 3", "ls\t/", "[[ -e x ]]", "{ ls; }"};
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) CHECK(!execd(no[i]));
}

/* The last part of the list s that its script execs (E2B_TAIL), or NULL. */
static const char *list_tail(const char *s, char *out, size_t n) {
  e2b_proc_opts opts = {.shell = s};
  e2b_wrapped w;
  CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, NULL, 0) == 0);
  const char *tail = NULL;
  for (size_t i = 0; i < w.opts.env_count; i++)
    if (strcmp(w.opts.env[i].key, "E2B_TAIL") == 0) tail = w.opts.env[i].value;
  CHECK((tail != NULL) == (strstr(w.opts.args[2], "E2B_TAIL") != NULL));
  if (tail) snprintf(out, n, "%s", tail);
  e2b_wrapped_free(&w);
  return tail ? out : NULL;
}

static void a_lists_last_program_is_execd_after_the_rest(void) {
  const char *yes[][2] = {
      {"cd /; ls", "ls"},
      {"cd /tmp && make -j2; ls -l", "ls -l"},
      {"a=1; ls", "ls"},
      {"true; true;ls /", "ls /"},
      {"if true; then echo x; fi; ls", "ls"},
      {"cd / ; python3 x.py", "python3 x.py"},
      {"cd \"/my dir\"; python3 -c 'import os; print(1)'", "python3 -c 'import os; print(1)'"},
      {"echo 'a;b'; ls", "ls"},
      {"echo \"a;b\" x; grep -r \"a b\" .", "grep -r \"a b\" ."},
      {"X=$HOME; ls $X", "ls $X"},
  };
  char got[256];
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
    const char *tail = list_tail(yes[i][0], got, sizeof got);
    CHECK(tail && strcmp(tail, yes[i][1]) == 0 && !execd(yes[i][0]));
  }
  const char *no[] = {"ls", "ls; ", "ls;; ls", "; ls", "a &&; ls", "a && ls", "a; b && c", "a & ls",
                      "a; ls &", "trap x EXIT; ls", "a; echo hi", "a; fi", "while true; do x; done",
                      "a;  ls", "a; ls | cat", "a; ls > f", "a # c; ls", "a; ./x", "a\\; ls",
                      "(a); ls", "a; ls\nexit 3", "a &&& b; ls", "echo \"$(id)\"; ls",
                      "echo \"${a}\"; ls", "echo \"a\\\"b\"; ls", "echo 'a; ls", "a; ls 'x;y' && b",
                      "a; ls `id`", "a; ls \"x", "a; 'ls' x", "a; ls ${X}", "a; ls $(pwd)"};
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) CHECK(!list_tail(no[i], got, sizeof got));
}

static void argv_commands_are_not_strings(void) {
  const char *args[] = {"hi"};
  e2b_proc_opts opts = {.cmd = "echo", .args = args, .arg_count = 1};
  e2b_wrapped w;
  CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, NULL, 0) == 0);
  CHECK_STR(w.opts.args[2], "e2b-proc");
  CHECK_STR(w.opts.args[4], "echo");
  e2b_wrapped_free(&w);
  /* an argv that spells bash -l -c is an argv: nothing reads a string back out of it */
  const char *bash[] = {"-l", "-c", "true"};
  e2b_proc_opts spelled = {.cmd = "/bin/bash", .args = bash, .arg_count = 3};
  CHECK(e2b_wrap(&w, &spelled, "/tmp/.e2b-proc/ab", 0, NULL, 0) == 0);
  CHECK_STR(w.opts.args[2], "e2b-proc");
  CHECK_STR(w.opts.args[4], "/bin/bash");
  e2b_wrapped_free(&w);
  /* not kept, a command string is spelled out for envd */
  e2b_proc_opts str = {.shell = "echo hi"};
  CHECK(e2b_wrap(&w, &str, NULL, 1, NULL, 0) == 0);
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
    CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, NULL, parkable) == 0);
    const char *script = wrapper_script(&w);
    CHECK(strstr(script, "trap '__s=9 __i=1; kill -s KILL -- -$__j") != NULL); /* TERM: a kill, always */
    CHECK((strstr(script, "trap '__s=10 __i=1' 10;") != NULL) == parkable);
    CHECK((strstr(script, "trap '__s=64 __i=1' 64;") != NULL) == parkable);
    CHECK(strstr(script, "' 9;") == NULL); /* SIGKILL cannot be */
    e2b_wrapped_free(&w);
  }
}

int main(void) {
  RUN(harmless_builtins_run_in_the_wrappers_shell);
  RUN(everything_else_runs_in_the_subshell);
  RUN(a_lone_program_is_execd_by_the_subshell);
  RUN(a_lists_last_program_is_execd_after_the_rest);
  RUN(argv_commands_are_not_strings);
  RUN(only_a_parkable_wrapper_traps_every_signal);
  return TESTING_DONE();
}
