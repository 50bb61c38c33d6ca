/* test_wrapper.c — how a kept command string is started: in the wrapper's
 * own shell only when it is one call of a harmless builtin with nothing
 * that expands, redirects or chains, else in the subshell that keeps
 * `exit`, `exec` and traps faithful; either way shown back as the string. */
#include "internal.h"
#include "testing.h"

#include <stdlib.h>
#include <string.h>

/* Whether the kept string s is started without the subshell. */
static int own_shell(const char *s) {
  const char *args[] = {"-l", "-c", s};
  e2b_proc_opts opts = {.cmd = "/bin/bash", .args = args, .arg_count = 3};
  e2b_wrapped w;
  CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, NULL) == 0);
  CHECK(w.opts.arg_count == 6 && strcmp(w.opts.args[3], "e2b-sh") == 0);
  CHECK_STR(w.opts.args[5], s);
  int own = strstr(w.opts.args[2], "declare -F") != NULL;
  e2b_wrapped_free(&w);
  return own;
}

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

static void argv_commands_are_not_strings(void) {
  const char *args[] = {"hi"};
  e2b_proc_opts opts = {.cmd = "echo", .args = args, .arg_count = 1};
  e2b_wrapped w;
  CHECK(e2b_wrap(&w, &opts, "/tmp/.e2b-proc/ab", 0, NULL) == 0);
  CHECK_STR(w.opts.args[2], "e2b-proc");
  CHECK_STR(w.opts.args[4], "echo");
  e2b_wrapped_free(&w);
}

int main(void) {
  RUN(harmless_builtins_run_in_the_wrappers_shell);
  RUN(everything_else_runs_in_the_subshell);
  RUN(argv_commands_are_not_strings);
  return TESTING_DONE();
}
