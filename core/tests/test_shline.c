/* test_shline.c — how the wrapper runs a kept command string, one row per
 * string: in the wrapper's own shell only when it is one call of a harmless
 * builtin with nothing that expands, redirects or chains; exec'd by the
 * subshell when it is one simple command of a plainly named program, or
 * when a `;` list ends in one (the rest runs first); else the plain eval in
 * the subshell, which is always right. */
#include "internal.h"
#include "testing.h"

#include <string.h>

enum { SUB = E2B_SH_SUBSHELL, OWN = E2B_SH_OWN_SHELL, EXEC = E2B_SH_EXEC, LIST = E2B_SH_LIST_EXEC };

static const struct row {
  const char *s;
  int plan;
  const char *tail; /* LIST: the part exec'd */
} rows[] = {
    /* harmless builtins, nothing expanded */
    {"true", OWN, NULL}, {"false", OWN, NULL}, {":", OWN, NULL}, {"echo", OWN, NULL},
    {"echo hi there", OWN, NULL}, {"echo -n 'a b' \"c\"", OWN, NULL}, {"pwd", OWN, NULL},
    {"test -d /tmp", OWN, NULL}, {"[ -e /x ]", OWN, NULL}, {"echo *.txt {a,b} ~ # note", OWN, NULL},
    /* a lone program */
    {"ls", EXEC, NULL}, {"ls /", EXEC, NULL}, {"sh -c 'kill -SEGV $$'", EXEC, NULL},
    {"python3 x.py --n=3", EXEC, NULL}, {"grep -r \"a b\" .", EXEC, NULL},
    /* a list ending in a lone program */
    {"cd /; ls", LIST, "ls"}, {"cd /tmp && make -j2; ls -l", LIST, "ls -l"}, {"a=1; ls", LIST, "ls"},
    {"true; true;ls /", LIST, "ls /"}, {"if true; then echo x; fi; ls", LIST, "ls"},
    {"cd / ; python3 x.py", LIST, "python3 x.py"},
    {"cd \"/my dir\"; python3 -c 'import os; print(1)'", LIST, "python3 -c 'import os; print(1)'"},
    {"echo 'a;b'; ls", LIST, "ls"}, {"echo \"a;b\" x; grep -r \"a b\" .", LIST, "grep -r \"a b\" ."},
    {"X=$HOME; ls $X", LIST, "ls $X"},
    /* everything else: the subshell */
    {"", SUB, NULL}, {" true", SUB, NULL}, {"true;exit 3", SUB, NULL}, {"echo $HOME", SUB, NULL},
    {"echo `id`", SUB, NULL}, {"echo hi > f", SUB, NULL}, {"true && exec sh", SUB, NULL},
    {"echo a | cat", SUB, NULL}, {"echo (x)", SUB, NULL}, {"echo a\\", SUB, NULL},
    {"echo a\nexit 1", SUB, NULL}, {"echo\ta", SUB, NULL}, {"exit", SUB, NULL}, {"exec sh", SUB, NULL},
    {"trap 'x' EXIT", SUB, NULL}, {"kill $$", SUB, NULL}, {"printf -v __p x", SUB, NULL},
    {"read x", SUB, NULL}, {"cd /", SUB, NULL}, {"set -e", SUB, NULL}, {"echo$IFS", SUB, NULL},
    {"truex", EXEC, NULL}, {"tru", EXEC, NULL}, {" ls", SUB, NULL}, {"ls; ls", LIST, "ls"},
    {"ls | cat", SUB, NULL}, {"ls > f", SUB, NULL}, {"ls && ls", SUB, NULL}, {"ls &", SUB, NULL},
    {"(ls)", SUB, NULL}, {"ls $(pwd)", SUB, NULL}, {"ls `pwd`", SUB, NULL}, {"A=1 ls", SUB, NULL},
    {"./run.sh", SUB, NULL}, {"/bin/ls", SUB, NULL}, {"\"ls\" /", SUB, NULL}, {"$X y", SUB, NULL},
    {"l*s", SUB, NULL}, {"~/bin/x", SUB, NULL}, {"exec ls", SUB, NULL}, {"exit 3", SUB, NULL},
    {"kill 1", SUB, NULL}, {"if true", SUB, NULL}, {"time ls", SUB, NULL}, {"ls\nexit 3", SUB, NULL},
    {"ls\t/", SUB, NULL}, {"[[ -e x ]]", SUB, NULL}, {"{ ls; }", SUB, NULL}, {"ls; ", SUB, NULL},
    {"ls;; ls", SUB, NULL}, {"; ls", SUB, NULL}, {"a &&; ls", SUB, NULL}, {"a; b && c", SUB, NULL},
    {"a & ls", SUB, NULL}, {"a; ls &", SUB, NULL}, {"trap x EXIT; ls", SUB, NULL},
    {"a; echo hi", SUB, NULL}, {"a; fi", SUB, NULL}, {"while true; do x; done", SUB, NULL},
    {"a;  ls", SUB, NULL}, {"a; ls | cat", SUB, NULL}, {"a; ls > f", SUB, NULL},
    {"a # c; ls", SUB, NULL}, {"a; ./x", SUB, NULL}, {"a\\; ls", SUB, NULL}, {"(a); ls", SUB, NULL},
    {"a; ls\nexit 3", SUB, NULL}, {"a &&& b; ls", SUB, NULL}, {"echo \"$(id)\"; ls", SUB, NULL},
    {"echo \"${a}\"; ls", SUB, NULL}, {"echo \"a\\\"b\"; ls", SUB, NULL}, {"echo 'a; ls", SUB, NULL},
    {"a; ls 'x;y' && b", SUB, NULL}, {"a; ls `id`", SUB, NULL}, {"a; ls \"x", SUB, NULL},
    {"a; 'ls' x", SUB, NULL}, {"a; ls ${X}", SUB, NULL}, {"a; ls $(pwd)", SUB, NULL},
    /* bench/shell_plans.lua's twins: the same work under the plain plan */
    {"{ true; }", SUB, NULL}, {"ls /;", SUB, NULL}, {"cd /; ls;", SUB, NULL},
};

static void each_string_gets_its_plan(void) {
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    const char *tail = "unset";
    int plan = (int)e2b_sh_plan_of(rows[i].s, &tail);
    if (plan != rows[i].plan) fprintf(stderr, "row %zu \"%s\": plan %d, want %d\n", i, rows[i].s, plan, rows[i].plan);
    CHECK(plan == rows[i].plan);
    if (rows[i].tail) CHECK_STR(tail, rows[i].tail);
    else CHECK(tail == NULL);
  }
}

int main(void) {
  RUN(each_string_gets_its_plan);
  return TESTING_DONE();
}
