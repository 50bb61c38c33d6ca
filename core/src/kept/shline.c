/* shline.c — the one place that reads a kept command string as bash
 * would, to choose how the wrapper (wrapper.c) runs it. Each shortcut it
 * allows is measured or proven: running a harmless lone builtin in the
 * wrapper's own shell saves the subshell's fork (about 1.8 ms of 8 per
 * run("true") end to end, bench/README.md); exec'ing a lone program, or a
 * `;` list's last, is how `bash -c` itself runs them, so a signal that ends
 * it is reported as the unwrapped shell's would be (spec/client/streams_spec.lua).
 * Anything it cannot tell for certain is E2B_SH_SUBSHELL: the plain eval in a
 * subshell, always correct. Pure and bounded (one pass over the string);
 * core/tests/test_shline.c holds its table. */
#include "internal.h"

#include <string.h>

/* Whether the n bytes at w are one of the count words. */
static int word_in(const char *w, size_t n, const char *const *words, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (strlen(words[i]) == n && strncmp(w, words[i], n) == 0) return 1;
  return 0;
}

/* bash 5's builtins and reserved words: a first word that is one of these
 * is never exec'd (a loadable builtin a profile enabled is not known here,
 * and would run as the program of its name). */
static int bash_word(const char *w, size_t n) {
  static const char *const words[] = {
      ".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command", "compgen",
      "complete", "compopt", "continue", "declare", "dirs", "disown", "echo", "enable", "eval", "exec",
      "exit", "export", "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs", "kill", "let",
      "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray", "readonly",
      "return", "set", "shift", "shopt", "source", "suspend", "test", "times", "trap", "true", "type",
      "typeset", "ulimit", "umask", "unalias", "unset", "wait", "if", "then", "else", "elif", "fi",
      "case", "esac", "for", "select", "while", "until", "do", "done", "in", "function", "time", "{",
      "}", "!", "[[", "]]", "coproc"};
  return word_in(w, n, words, sizeof words / sizeof *words);
}

/* Whether the first word of s, w bytes, plainly names a program: no
 * assignment, path, quote or expansion in it, not a bash word. */
static int sh_plain_program(const char *s, size_t w) {
  return w > 0 && strcspn(s, "=/'\"\\$*?[~#") >= w && !bash_word(s, w);
}

/* Whether s is one simple command of a program named by a plain first word,
 * with no list, pipe, redirection, subshell, substitution or continued line. */
static int sh_external_only(const char *s) {
  return s[strcspn(s, ";&|()<>`\n\r\t")] == '\0' && sh_plain_program(s, strcspn(s, " "));
}

/* Whether all of s up to end is blank. */
static int blank_until(const char *s, const char *end) {
  while (s < end && *s == ' ') s++;
  return s == end;
}

/* Whether p starts what bash could read as more than a word's characters:
 * an escape, a substitution, an expansion in braces. */
static int sh_hidden(const char *p) {
  return *p == '\\' || *p == '`' || (*p == '$' && (p[1] == '(' || p[1] == '{'));
}

/* The end of the quoted piece at p ('...' or "..." with nothing hidden in
 * it), or NULL. */
static const char *sh_quote_end(const char *p) {
  const char *q = strchr(p + 1, *p);
  if (!q) return NULL;
  for (const char *r = p + 1; *p == '"' && r < q; r++)
    if (sh_hidden(r)) return NULL;
  return q;
}

/* Where the last part of s starts when s is a list of parts split by `;`
 * (a part may hold `&&`) whose last part, after at most one space, is one
 * simple command of a plainly named program; else NULL. Quotes are
 * followed, so a `;` in them is no separator; nothing else that could hide
 * a `;` or make one not the list's may appear (escape, substitution, braced
 * expansion, subshell, comment, redirection, pipe, background, line break),
 * nor an empty part or operand of `&&`, nor a trap (bash -c forks then). A
 * part that opens a compound command leaves a closing word (`fi`, `done`,
 * `}`) as the last part, which is never a program. */
static const char *sh_list_tail(const char *s) {
  if (strstr(s, "trap")) return NULL;
  const char *operand = s, *last = NULL; /* what follows the last `;` or `&&` */
  int and_in_last = 0;
  for (const char *p = s; *p; p++) {
    if (*p == '\'' || *p == '"') {
      if (!(p = sh_quote_end(p))) return NULL;
      continue;
    }
    int and = *p == '&' && p[1] == '&' && p[2] != '&';
    if (sh_hidden(p) || strchr("()<>|#\n\r\t", *p) || (*p == '&' && !and)) return NULL;
    if (*p != ';' && !and) continue;
    if (blank_until(operand, p)) return NULL;
    p += and;
    operand = p + 1;
    if (and) and_in_last = last != NULL;
    else last = operand, and_in_last = 0;
  }
  if (!last || and_in_last) return NULL;
  if (*last == ' ') last++;
  return sh_plain_program(last, strcspn(last, " ")) ? last : NULL;
}

/* Whether s is one call of a builtin that cannot end, replace or trap the
 * shell or set a variable, with no expansion of a variable, no command
 * substitution, redirection, pipe, list or continued line. */
static int sh_builtin_only(const char *s) {
  static const char *const names[] = {"true", "false", ":", "echo", "pwd", "test", "["};
  return word_in(s, strcspn(s, " "), names, sizeof names / sizeof *names) &&
         s[strcspn(s, "$`;&|<>()\\\n\r\t")] == '\0';
}

e2b_sh_plan e2b_sh_plan_of(const char *s, const char **tail) {
  *tail = NULL;
  if (sh_builtin_only(s)) return E2B_SH_OWN_SHELL;
  if (sh_external_only(s)) return E2B_SH_EXEC;
  return (*tail = sh_list_tail(s)) ? E2B_SH_LIST_EXEC : E2B_SH_SUBSHELL;
}
