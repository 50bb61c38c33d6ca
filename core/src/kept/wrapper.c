/* wrapper.c — the on-sandbox wrapper of kept commands, in one place: the
 * script, the argv and environment that start it, the exit file's status
 * line, and how a process list shows a wrapped command as the command it
 * runs, and the reading of what it says on its own stream. track.c reads
 * what the wrapper writes; process.c unwraps lists. */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prunes the environment to E2B_ENV_KEEP's names (and PATH): the one piece
 * the kept wrapper and the plain one share; only a caller that replaces
 * the environment sets it. */
#define PRUNE_ENV                                                                              \
  "__k=\" $E2B_ENV_KEEP PATH \"\n"                                                              \
  "for __v in $(compgen -e); do case \"$__k\" in *\" $__v \"*) ;; *) unset \"$__v\" 2>/dev/null;; esac; done\n" \
  "unset E2B_ENV_KEEP __k __v\n"

/* The kept wrapper. $1: the files' path prefix; the rest: the command, or
 * with $0 e2b-sh a shell string the wrapper itself runs (it is then
 * started as `bash -l`, as E2B runs a command string, so the string costs
 * a fork, not a second bash). The script is put together per command from
 * the pieces below that it needs, in `(( ))` and `[[ ]]` where bash parses
 * those for less: bash parses all of it for every command, and parsing the
 * one script for every case was about half of the 4.6 million instructions
 * the wrapper added to a run (bench/README.md, wrapper). The files are
 * made private (umask 077, the caller's umask read from /proc and restored
 * for the command). Three files, not four: on this disk creating a file is
 * the wrapper's largest cost (bench/README.md), so the exit file first
 * holds the boot id alone, with no newline, and once the command ended
 * "STATUS BOOTID\n": an exit file that ends in a newline means the output
 * files are complete. The command runs in a process group of its own
 * (JOB_WAIT), as envd signals one pid: the wrapper's. The wrapper traps
 * HUP, INT and QUIT (a trap is reset in the command), so it keeps the
 * command's exit status, and TERM, on which it kills the command's group
 * (a kill, kill.c); the wrapper of a command that may park traps every
 * signal that would end it and can be caught, so one gone without a
 * status was SIGKILLed (track.c tells a parked command's end by that). A
 * wrapper that got such a signal (`kill $$` in a command string, a kill of
 * its pid; TERM counts as SIGKILL), or whose command a signal ended,
 * records minus the signal's number as the status once the command ended
 * and then ends by that signal itself, as the unwrapped shell would have
 * (no core file). A command that cannot be started is reported on the
 * wrapper's stderr as "!ENOENT"/"!EACCES", as envd would refuse it; one
 * that can is announced by E2B_WRAPPER_READY, the first byte of the
 * wrapper's stdout, before it starts (track.c reports the start only
 * then, so a spawn fails at spawn on every path). At the end the wrapper
 * copies a small file (up to E2B_WRAPPER_INLINE_MAX bytes and 256 NULs; it
 * reads no more than that of a larger one) to its own stdout or stderr,
 * so a short command's output needs no read, and ends its stdout with one
 * letter, 'a' + flags: 1 out non-empty, 2 err non-empty, 4 out inline, 8
 * err inline, written with the inlined stdout (one write the sandbox's
 * agent relays, not two). It ends without the exit builtin, which would
 * run a login shell's ~/.bash_logout. The script travels in E2B_PROC, so a
 * process list shows `bash -c eval "$E2B_PROC" e2b-proc PREFIX cmd args`,
 * not the script. */
#define W_HEAD                                                                                    \
  "unset E2B_PROC; __p=$1; shift\n"                                                              \
  "[[ -d ${__p%/*} ]] || mkdir -m 1777 \"${__p%/*}\" 2>/dev/null\n"                            \
  "{ read -r __k; read -r __k __m; } </proc/self/status; [[ $__k == Umask: ]] || __m=022\n"     \
  "umask 077\n"                                                                                  \
  "{ read -r __b </proc/sys/kernel/random/boot_id; printf %s \"$__b\" >\"$__p.exit\" && : >\"$__p.out\" && : >\"$__p.err\"; } 2>/dev/null || exit 125\n" \
  "umask $__m; unset __k __m\n"

/* Given names in E2B_FORGET (forget.c), it removes those earlier commands'
 * files, in the background and in a process group of its own (a kill of
 * this command's group must not stop it). */
#define W_FORGET                                                                                  \
  "__l=; for __n in $E2B_FORGET; do case $__n in *[!0-9a-f]*) ;; *) __l=\"$__l $__n.out $__n.err $__n.exit\";; esac; done\n" \
  "if [ -n \"$__l\" ]; then set -m; (cd \"${__p%/*}\" && exec rm -f -- $__l) </dev/null >/dev/null 2>&1 & set +m; fi\n" \
  "unset E2B_FORGET __n __l\n"

/* $1 a file: its bytes, up to the inline bound, as NUL-ended pieces in
 * __v and the last piece in __t; fails past the bound. */
#define W_SLURP                                                                                   \
  "__e2b_slurp() {\n"                                                                            \
  "  local c t=0 i=0; __v=() __t=\n"                                                             \
  "  while IFS= read -r -d '' -n $((32769-t)) c; do ((t+=${#c}+1)); ((t>32768 || i>=256)) && return 1; __v[i++]=$c; done <\"$1\"\n" \
  "  ((t+${#c}>32768)) && return 1\n"                                                            \
  "  __t=$c\n"                                                                                   \
  "}\n"

/* Given a nonce in E2B_FOLLOW, it follows: two `tail`s copy the files onto
 * its stdout and stderr from their first byte while the command runs (by
 * descriptor: following by name, tail lost the whole output of about 1 in
 * 100 commands that ended at once, and said it had finished). At the end it
 * ends the tail of a file that stayed empty at once (SIGPIPE, which bash
 * does not report) and wakes the others with a write-free change of their
 * file (fallocate's keep-size: tail looks for its pid's end only when
 * woken, or a second later), waits for them and says its flags in the
 * trailer (internal.h) on stderr, where 4 and 8 mean the file came whole on
 * the stream, and an uppercase letter that following did not work (no tail
 * in PATH, or one that failed: busybox's has no --pid). */
#define W_FOLLOW                                                                                  \
  "__f=$E2B_FOLLOW __fo= __fe= __fx=; unset E2B_FOLLOW\n"                                        \
  "__e2b_follow() {\n"                                                                           \
  "  hash tail 2>/dev/null || { __fx=1; return 0; }\n"                                           \
  "  tail -c +1 -f --pid=$__j -- \"$__p.out\" 2>/dev/null & __fo=$!\n"                           \
  "  tail -c +1 -f --pid=$__j -- \"$__p.err\" 1>&2 2>/dev/null & __fe=$!\n"                      \
  "}\n"                                                                                          \
  "__e2b_tailed() {\n"                                                                           \
  "  if [ $((f&$2)) = 0 ]; then kill -s PIPE $1 2>/dev/null; wait $1; f=$((f|$2*4)); return; fi\n" \
  "  fallocate -n -o 0 -l 1 -- \"$3\" 2>/dev/null\n"                                             \
  "  wait $1 && f=$((f|$2*4)) || __fx=1\n"                                                        \
  "}\n"
#define W_UNFOLLOWED "__e2b_follow() { :; }\n"

/* Given E2B_SWEEP (the sweep below), one not followed whose output all went
 * inline lists its files for the sandbox's sweep, and sweeps the list when
 * its first line is E2B_KEPT_SWEEP_S old (E2B_WRAP_SWEEP): the sweep's text
 * waits in a variable, parsed only the once in minutes it runs. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define W_TOMB                                                                                    \
  "__w=$E2B_SWEEP; unset E2B_SWEEP\n"                                                            \
  "__e2b_tomb() {\n"                                                                             \
  "  local d=${__p%/*} t=$EPOCHSECONDS n x; umask 077; [[ $t ]] || printf -v t '%(%s)T' -1\n"                             \
  "  { printf '%s %s\\n' \"$t\" \"${__p##*/}\" >>\"$d/swept-$EUID\" && read -r n x <\"$d/swept-$EUID\"; } 2>/dev/null || return 0\n" \
  "  [[ $n == [1-9]* && $n != *[!0-9]* && $t == [1-9]* && $t != *[!0-9]* ]] || return 0\n"       \
  "  ((t-n < " STR(E2B_KEPT_SWEEP_S) ")) && return 0\n"                                          \
  "  set -m; (cd \"$d\" && eval \"$__w\") </dev/null >/dev/null 2>&1 & set +m\n"                 \
  "}\n"
/* Run in the list's directory with $t the time now: takes the list (mv, so
 * one sweep at a time) and removes what it names that ended long enough
 * ago, keeping younger lines; a line a sandbox process scribbled is skipped
 * (a number with a leading 0 would be octal to bash, and its error end the
 * sweep). */
static const char SWEEP[] =
    "__f=swept-$EUID.$BASHPID __k= __l=()\n"
    "mv -f -- swept-$EUID \"$__f\" && {\n"
    "  while read -r __t __n; do\n"
    "    case $__t in ''|0*|*[!0-9]*) continue;; esac; case $__n in ''|*[!0-9a-f]*) continue;; esac\n"
    "    if [ $((t-__t)) -lt " STR(E2B_KEPT_SWEEP_S) " ]; then __k+=\"$__t $__n\"$'\\n'; continue; fi\n"
    "    __l+=(\"$__n.out\" \"$__n.err\" \"$__n.exit\"); [ ${#__l[@]} -lt 3000 ] || { rm -f -- \"${__l[@]}\"; __l=(); }\n"
    "  done <\"$__f\"\n"
    "  [ -z \"$__k\" ] || printf %s \"$__k\" >>swept-$EUID\n"
    "  rm -f -- \"$__f\" \"${__l[@]}\"\n"
    "}\n";

/* __e2b_end STATUS: the exit file's status line, the inlined files, the
 * flags (the letter, or a follower's trailer), the wrapper's own end. The
 * status is written over the boot id in place, not through a truncating
 * open: ext4 (auto_da_alloc, on by default) writes a file truncated from
 * non-empty out to disk as it is closed, which made every kept command a
 * disk write (bench/README.md, wrapper); only a file longer than the boot
 * id (bash's job report behind it) is emptied first. The inline bound
 * counts bytes: a locale other than C's would count characters (setting
 * it costs bash two setlocale calls, so only then). */
#define W_END_HEAD                                                                                \
  "__e2b_end() {\n"                                                                              \
  "  local f=0 st=$1 j= o= l=abcdefghijklmnopABCDEFGHIJKLMNOP\n"                                 \
  "  if [[ -e $__p.exit ]]; then\n"                                                              \
  "    { read -r -n 64 j <\"$__p.exit\"; } 2>/dev/null\n"                                          \
  "    ((${#j}>${#__b} && !__s && $1>128 && $1<160)) && __s=$(($1-128))\n"                      \
  "    [[ $__s ]] && st=-$__s; ((${#j}>${#__b})) && : >\"$__p.exit\"; printf '%s %s\\n' \"$st\" \"$__b\" 1<>\"$__p.exit\"\n" \
  "  fi\n"                                                                                       \
  "  [[ -s $__p.out ]] && f=1; [[ -s $__p.err ]] && ((f+=2))\n"
#define W_END_INLINE                                                                              \
  "  case ${LC_ALL-}${LC_CTYPE-}${LANG-} in ''|C|POSIX) ;; *) local LC_ALL=C;; esac\n"          \
  "  ((f&2)) && __e2b_slurp \"$__p.err\" && { ((f+=8)); ((${#__v[@]})) && printf '%s\\0' \"${__v[@]}\" >&2; printf %s \"$__t\" >&2; }\n" \
  "  ((f&1)) && __e2b_slurp \"$__p.out\" && { ((f+=4)); ((${#__v[@]})) && printf '%s\\0' \"${__v[@]}\"; o=$__t; }\n"
#define W_END_FOLLOWED                                                                            \
  "  if [ -n \"$__fo\" ]; then\n"                                                                \
  "    __e2b_tailed $__fo 1 \"$__p.out\"; __e2b_tailed $__fe 2 \"$__p.err\"\n"                  \
  "  else\n" W_END_INLINE "  fi\n"                                                               \
  "  printf %s \"$o\"; printf '\\0" E2B_FOLLOW_TRAILER "%s%s\\n' \"$__f\" \"${l:f+16*${__fx:-0}:1}\" >&2\n"
#define W_END_SWEPT "  ((f>>2 == (f&3))) && __e2b_tomb\n"
#define W_END_LETTER "  printf %s%s \"$o\" \"${l:f:1}\"\n"
#define W_END_TAIL                                                                                \
  "  [[ $__s ]] && { ulimit -c 0; trap - \"$__s\"; kill -s \"$__s\" $$; }\n"                    \
  "  return \"$1\"\n"                                                                             \
  "}\n"                                                                                          \
  "__s=\n"

/* The signals a group kill or a terminal sends; and all of Linux's signals
 * whose default ends a process, but SIGKILL: one literal trap each (a loop
 * costs bash about 0.07 ms more per command). All of them cost a spawn
 * about 0.2 ms here (bench/README.md), so only a command that may park pays
 * for them. */
#define TRAP(n) "trap '__s=" #n " __i=1' " #n ";"
/* TERM is a kill's message (kill.c): envd signals only the wrapper's pid,
 * so the wrapper kills the command's group itself, and records SIGKILL. */
#define TRAP_TERM "trap '__s=9 __i=1; kill -s KILL -- -$__j 2>/dev/null' 15;"
#define TRAP_GROUP_SIGNALS TRAP(1) TRAP(2) TRAP(3) TRAP_TERM "\n"
#define TRAP_ENDING_SIGNALS                                                                     \
  TRAP(1) TRAP(2) TRAP(3) TRAP(4) TRAP(5) TRAP(6) TRAP(7) TRAP(8) TRAP(10) TRAP(11) TRAP(12)  \
  TRAP(13) TRAP(14) TRAP_TERM TRAP(16) TRAP(24) TRAP(25) TRAP(26) TRAP(27) TRAP(29) TRAP(30)   \
  TRAP(31) TRAP(34) TRAP(35) TRAP(36) TRAP(37) TRAP(38) TRAP(39) TRAP(40) TRAP(41) TRAP(42)   \
  TRAP(43) TRAP(44) TRAP(45) TRAP(46) TRAP(47) TRAP(48) TRAP(49) TRAP(50) TRAP(51) TRAP(52)   \
  TRAP(53) TRAP(54) TRAP(55) TRAP(56) TRAP(57) TRAP(58) TRAP(59) TRAP(60) TRAP(61) TRAP(62)   \
  TRAP(63) TRAP(64) "\n"

/* The command runs as a job of its own (set -m: its own process group,
 * stdin kept), so TERM's trap can kill all of it; the wrapper waits in a
 * loop, as a trapped signal ends a wait. A TERM before the job had a pid
 * kills it once it has one. The job is a shell that runs the command in
 * its foreground: that shell's traps are reset, so it reports the signal
 * that ended the command into the exit file, which the wrapper itself,
 * trapping that signal, would not. Waiting again on an ended job gives
 * its status again. The exit file is opened once around the whole loop: a
 * reopen after a trapped TERM would create it again once a reader that
 * forgot the command had removed it. */
#define JOB_WAIT                                                                                  \
  "__j=$!; [[ $__s != 9 ]] || kill -s KILL -- -$__j 2>/dev/null; __i=1; __e2b_follow; "                \
  "{ while [[ $__i ]]; do __i=; wait $__j; __r=$?; done; } 2>>\"$__p.exit\"; __e2b_end $__r"

/* An argv command is looked up first, as envd would: what cannot be
 * started is refused (its status too goes over the boot id in place),
 * what can is announced, then runs as a job. */
#define W_ARGV_RUN                                                                                \
  "if ! command -v -- \"$1\" >/dev/null; then\n"                                                 \
  "  case $1 in */*) [ -e \"$1\" ] && { printf '!EACCES' >&2; printf '126 %s\\n' \"$__b\" 1<>\"$__p.exit\"; exit 126; };; esac\n" \
  "  printf '!ENOENT' >&2; printf '127 %s\\n' \"$__b\" 1<>\"$__p.exit\"; exit 127\n"         \
  "fi\n"                                                                                         \
  "printf " E2B_WRAPPER_READY "\n"                                                              \
  "set -m; { \"$@\" >>\"$__p.out\" 2>>\"$__p.err\"; } 2>>\"$__p.exit\" & set +m; " JOB_WAIT "\n"

/* What a kept command's wrapper needs, as e2b_wrap was asked for it. */
typedef struct wrapper_needs {
  int argv;   /* an argv command, not a command string */
  int follow; /* given a nonce */
  int swept;  /* lists its files for the sweep (E2B_WRAP_SWEEP, never when followed) */
  int forget; /* given names to forget */
  int prune;  /* the environment replaced */
  int parkable;
} wrapper_needs;

/* The script of E2B_PROC for one command: the pieces it needs, joined. */
static char *wrapper_script(const wrapper_needs *n) {
  const char *part[16];
  size_t k = 0, len = 1;
  part[k++] = W_HEAD;
  if (n->forget) part[k++] = W_FORGET;
  part[k++] = W_SLURP;
  part[k++] = n->follow ? W_FOLLOW : W_UNFOLLOWED;
  if (n->swept) part[k++] = W_TOMB;
  part[k++] = W_END_HEAD;
  part[k++] = n->follow ? W_END_FOLLOWED : W_END_INLINE;
  if (n->swept) part[k++] = W_END_SWEPT;
  if (!n->follow) part[k++] = W_END_LETTER;
  part[k++] = W_END_TAIL;
  if (n->prune) part[k++] = PRUNE_ENV; /* once every E2B_ variable above was read */
  part[k++] = n->parkable ? TRAP_ENDING_SIGNALS : TRAP_GROUP_SIGNALS;
  if (n->argv) part[k++] = W_ARGV_RUN;
  for (size_t i = 0; i < k; i++) len += strlen(part[i]);
  char *s = malloc(len), *at = s;
  if (!s) return NULL;
  for (size_t i = 0; i < k; i++) at = stpcpy(at, part[i]);
  return s;
}

/* A command string runs on the first line of bash's -c script, as it
 * would unwrapped, so bash numbers its lines (in errors, in LINENO) alike.
 * The wrapper's own stderr goes to the exit file around it (and around the
 * command in WRAPPER): when the command dies of a signal, bash reports the
 * job ("... Killed ( __c=$1; ...") there, which would otherwise lead the
 * inlined stderr, and that report is how the wrapper tells a signal's end
 * (status 128 + N and a report) from `exit 128+N` (no report). */
#define SH_SUBSHELL_RUNNING(run)                                                                 \
  "set -m; { ( __c=$1; set --; unset __p __b __s; BASH_ARGV0=/bin/bash; " run                \
  " ) >>\"$__p.out\" 2>>\"$__p.err\"; } 2>>\"$__p.exit\" & set +m; " JOB_WAIT
#define SH_SUBSHELL SH_SUBSHELL_RUNNING("eval \"$__c\"")
/* True when the first word of the string in variable var may not mean what
 * it means to bash alone: a function of that name, or aliases turned on. */
#define SH_REDEFINED(var) "shopt -q expand_aliases || declare -F -- \"${" var "%% *}\" >/dev/null"
static const char SH_LINE[] = "eval \"$E2B_PROC\"; " SH_SUBSHELL;

/* bash -c execs a lone simple command instead of forking it, so a signal
 * that ends the command ends the shell, and envd reports the signal. A
 * string that is one simple command of an external program
 * (shline.c decides) is exec'd by the subshell too: a signal's end
 * then reaches the wrapper as the subshell's, reported in the exit file, not
 * as status 128+N with bash's job message in the command's stderr, and the
 * command costs one fork, not two. A function of that name, aliases turned
 * on, or a name not found in PATH take the plain eval, as any string. */
#define SH_EXEC(var)                                                                              \
  "if " SH_REDEFINED(var) " || ! hash -- \"${" var "%% *}\" 2>/dev/null; then eval \"$" var "\"; "     \
  "else eval \"exec $" var "\"; fi"
static const char SH_LINE_EXEC[] = "eval \"$E2B_PROC\"; " SH_SUBSHELL_RUNNING(SH_EXEC("__c"));

/* bash -c also execs the last command of a `;` list (`cd /src; make`),
 * after the rest ran, when no trap is set: when a string's last part is such
 * a program (shline.c finds it, and it comes in E2B_TAIL, read and
 * removed first), the subshell runs the rest and then execs that part,
 * looked up once the rest ran (which may change PATH). */
static const char SH_LINE_LIST_EXEC[] =
    "__x=$E2B_TAIL; unset E2B_TAIL; eval \"$E2B_PROC\"; "
    SH_SUBSHELL_RUNNING("eval \"${__c%\"$__x\"}\"; " SH_EXEC("__x"));

/* A command string that is one call of a builtin that can neither end,
 * replace nor trap the shell, and that reads no variable (shline.c
 * decides), runs in the wrapper's own shell: the subshell above, which keeps
 * `exit`, `exec`, traps and the wrapper's variables away from the command, is
 * a fork of a login shell, a third of the wrapper's cost (bench/README.md).
 * A function of that name (a login profile's) or aliases turned on could
 * do anything: then the subshell runs it, as any other string, from
 * E2B_SH, so that the rare path's text is not parsed every time. */
static const char SH_LINE_OWN[] =
    "__x=$E2B_SH; unset E2B_SH; eval \"$E2B_PROC\"; if " SH_REDEFINED("1") "; then eval \"$__x\"; else "
    "{ __c=$1; set --; BASH_ARGV0=/bin/bash; eval \"$__c\"; } >>\"$__p.out\" 2>>\"$__p.err\"; __e2b_end $?; fi";
static const char SH_OWN_REDEFINED[] = "unset __x; " SH_SUBSHELL;

/* The same environment pruning for commands not kept: a PTY's exec'd at
 * once; any other's program is looked up first, as the kept wrapper does
 * (exec would only look up builtins' names too), and the same first byte
 * or "!ENOENT"/"!EACCES" tells the start or why it could not be. */
static const char ENV_ONLY[] = PRUNE_ENV "exec \"$@\"\n";
static const char ENV_CHECKED[] =
    PRUNE_ENV
    "if ! type -P -- \"$1\" >/dev/null; then\n"
    "  case $1 in */*) [ -e \"$1\" ] && { printf '!EACCES' >&2; exit 126; };; esac\n"
    "  printf '!ENOENT' >&2; exit 127\n"
    "fi\n"
    "printf " E2B_WRAPPER_READY "; exec \"$@\"\n";

/* The names (never the values) of env, space separated, for E2B_ENV_KEEP. */
static char *env_names(const e2b_kv *env, size_t n) {
  size_t len = 1;
  for (size_t i = 0; i < n; i++) len += strlen(env[i].key) + 1;
  char *names = malloc(len);
  if (!names) return NULL;
  names[0] = 0;
  for (size_t i = 0; i < n; i++) {
    if (i) strcat(names, " ");
    strcat(names, env[i].key);
  }
  return names;
}

/* Kept: bash -c 'eval "$E2B_PROC"' e2b-proc PREFIX cmd args..., or for a
 * command string (bash -l -c S) bash -l -c SH_LINE e2b-sh PREFIX S, run by
 * the wrapper itself; not kept: the command, under ENV_ONLY to prune its
 * environment. Returns the argument count. */
static size_t wrap_args(const char **args, const e2b_proc_opts *opts, const char *prefix,
                        int env_replace, const char *sh_script) {
  size_t a = 0;
  int keep = prefix != NULL;
  if (sh_script) {
    const char *line[] = {"-l", "-c", sh_script, "e2b-sh", prefix, opts->shell};
    for (size_t i = 0; i < 6; i++) args[a++] = line[i];
    return a;
  }
  if (keep || env_replace) {
    args[a++] = "-c";
    args[a++] = keep ? "eval \"$E2B_PROC\"" : opts->pty_cols ? ENV_ONLY : ENV_CHECKED;
    args[a++] = keep ? "e2b-proc" : "e2b-env";
    if (keep) args[a++] = prefix;
    args[a++] = opts->cmd;
  }
  for (size_t i = 0; i < opts->arg_count; i++) args[a++] = opts->args[i];
  return a;
}

/* A command string is run as /bin/bash -l -c S, as E2B's SDKs run one:
 * the one place that spells it out (a kept one is run by the wrapper, as
 * bash -l -c SH_LINE e2b-sh PREFIX S, never parsed back out of an argv). */
const e2b_proc_opts *e2b_proc_opts_spelled(const e2b_proc_opts *o, e2b_proc_opts *tmp, const char *argv[3]) {
  if (!o || !o->shell) return o;
  *tmp = *o;
  argv[0] = "-l";
  argv[1] = "-c";
  argv[2] = o->shell;
  tmp->cmd = "/bin/bash";
  tmp->args = argv;
  tmp->arg_count = 3;
  tmp->shell = NULL;
  return tmp;
}

/* The script that starts the kept command string s (shline.c decides
 * which); *tail: the last part of a list that it execs, or NULL;
 * *redefined: what the own shell's plan runs instead, or NULL. */
static const char *sh_script(const char *s, const char **tail, const char **redefined) {
  switch (e2b_sh_plan_of(s, tail)) {
  case E2B_SH_OWN_SHELL: *redefined = SH_OWN_REDEFINED; return SH_LINE_OWN;
  case E2B_SH_EXEC: return SH_LINE_EXEC;
  case E2B_SH_LIST_EXEC: return SH_LINE_LIST_EXEC;
  default: return SH_LINE;
  }
}

/* The caller's env, then what the wrapper reads (names, never values;
 * a list's last part is the caller's own command text). */
static size_t wrap_env(e2b_kv *env, const e2b_proc_opts *opts, const char *script, const wrapper_needs *n,
                       const char *follow, const char *names, const char *forgets, const char *tail,
                       const char *redefined) {
  size_t ne = 0;
  for (size_t i = 0; i < opts->env_count; i++) env[ne++] = opts->env[i];
  if (names) env[ne++] = (e2b_kv){"E2B_ENV_KEEP", names};
  if (script) env[ne++] = (e2b_kv){"E2B_PROC", script};
  if (script && n->follow) env[ne++] = (e2b_kv){"E2B_FOLLOW", follow};
  if (script && n->swept) env[ne++] = (e2b_kv){"E2B_SWEEP", SWEEP};
  if (script && n->forget) env[ne++] = (e2b_kv){"E2B_FORGET", forgets};
  if (tail) env[ne++] = (e2b_kv){"E2B_TAIL", tail};
  if (redefined) env[ne++] = (e2b_kv){"E2B_SH", redefined};
  return ne;
}

int e2b_wrap(e2b_wrapped *w, const e2b_proc_opts *opts, const char *prefix, int env_replace,
             const char *forgets, unsigned how, const char *follow) {
  memset(w, 0, sizeof *w);
  /* A kept command string (opts->shell) is run by the wrapper itself;
   * any other is spelled out as the argv /bin/bash -l -c S first. */
  const char *str = prefix ? opts->shell : NULL, *tail = NULL, *redefined = NULL, *argv[3];
  e2b_proc_opts spelled;
  if (!str) opts = e2b_proc_opts_spelled(opts, &spelled, argv);
  w->names = env_replace ? env_names(opts->env, opts->env_count) : NULL;
  w->args = calloc(opts->arg_count + 6, sizeof *w->args);
  w->env = calloc(opts->env_count + 7, sizeof *w->env);
  if ((env_replace && !w->names) || !w->args || !w->env) {
    e2b_wrapped_free(w);
    return -1;
  }
  w->opts = *opts;
  w->opts.cmd = prefix || env_replace ? "/bin/bash" : opts->cmd;
  w->opts.args = w->args;
  w->opts.shell = NULL;
  const char *line = str ? sh_script(str, &tail, &redefined) : NULL;
  wrapper_needs n = {.argv = !str, .follow = follow != NULL, .forget = forgets && *forgets,
                     .prune = w->names != NULL, .parkable = (how & E2B_WRAP_PARKABLE) != 0};
  n.swept = !n.follow && (how & E2B_WRAP_SWEEP);
  if (prefix && !(w->script = wrapper_script(&n))) {
    e2b_wrapped_free(w);
    return -1;
  }
  w->opts.arg_count = wrap_args(w->args, opts, prefix, env_replace, line);
  w->opts.env = w->env;
  w->opts.env_count = wrap_env(w->env, opts, w->script, &n, follow, w->names, forgets, tail, redefined);
  w->announces = prefix ? !str : env_replace && !opts->pty_cols;
  return 0;
}

void e2b_wrapped_free(e2b_wrapped *w) {
  free(w->script);
  free(w->names);
  free(w->args);
  free(w->env);
  memset(w, 0, sizeof *w);
}

long e2b_kept_status(const char *data, size_t len, long *status) {
  size_t i = len && data[0] == '-' ? 1 : 0, first = i;
  long v = 0;
  for (; i < len && isdigit((unsigned char)data[i]); i++)
    if (v < 1000000) v = v * 10 + (data[i] - '0');
  if (i == first || i >= len || data[i] != ' ') return -1;
  if (status) *status = first ? -v : v;
  return (long)i;
}

int e2b_wrapper_announced(const e2b_wrapper_report *r, queued *n) {
  if (!r->announces || n->ev.type != E2B_EVENT_STDOUT || !n->ev.len || n->ev.data[0] != E2B_WRAPPER_READY[0])
    return 0;
  memmove((uint8_t *)n->ev.data, n->ev.data + 1, --n->ev.len);
  n->len = n->ev.len;
  return 1;
}

/* An inlined file and the flags letter are the most it writes
 * (__e2b_slurp's 32768). */
void e2b_wrapper_heard(e2b_wrapper_report *r, growbuf *into, const uint8_t *data, size_t len) {
  if (into->len + len > E2B_WRAPPER_INLINE_MAX + 1 || e2b_growbuf_append(into, data, len) != 0) r->over = 1;
}

void e2b_wrapper_refusal(e2b_wrapper_report *r) {
  if (r->err.len > 1 && r->err.data[0] == '!')
    snprintf(r->start_err, sizeof r->start_err, "%.*s", (int)r->err.len - 1, r->err.data + 1);
}

/* The letter is 'a' + flags: 1 out non-empty, 2 err non-empty, 4 out
 * inline, 8 err inline (__e2b_end). */
void e2b_wrapper_ended(e2b_wrapper_report *r) {
  if (r->over) return;
  char last = r->out.len ? r->out.data[r->out.len - 1] : 0;
  if (last >= 'a' && last <= 'p') {
    int flags = last - 'a';
    r->nonempty = flags & 3;
    r->inlined = flags >> 2;
    r->out.len--;
  } else {
    e2b_wrapper_refusal(r);
  }
}

/* Byte i of the trailer with this nonce; its letter is any of 'a'..'p', or
 * 'A'..'P' where following did not work (no tail, or one that failed). */
static int trailer_byte(const char *nonce, size_t i, uint8_t c) {
  static const char head[] = "\0" E2B_FOLLOW_TRAILER;
  size_t h = sizeof head - 1;
  if (i < h) return c == (uint8_t)head[i];
  if (i < h + E2B_FOLLOW_NONCE_LEN) return c == (uint8_t)nonce[i - h];
  if (i == h + E2B_FOLLOW_NONCE_LEN) return (c >= 'a' && c <= 'p') || (c >= 'A' && c <= 'P');
  return c == '\n';
}

size_t e2b_wrapper_trailer_hold(const char *nonce, const uint8_t *data, size_t len) {
  for (size_t k = len < E2B_FOLLOW_TRAILER_LEN ? len : E2B_FOLLOW_TRAILER_LEN; k > 0; k--) {
    size_t i = 0;
    while (i < k && trailer_byte(nonce, i, data[len - k + i])) i++;
    if (i == k) return k;
  }
  return 0;
}

int e2b_wrapper_trailer(e2b_wrapper_report *r, const char *nonce, const uint8_t *held, size_t len) {
  if (len != E2B_FOLLOW_TRAILER_LEN || e2b_wrapper_trailer_hold(nonce, held, len) != len) return 0;
  uint8_t letter = held[len - 2];
  int flags = letter - (letter >= 'a' ? 'a' : 'A');
  r->nonempty = flags & 3;
  r->inlined = flags >> 2;
  r->unfollowed = letter < 'a';
  return 1;
}

/* bash -c SCRIPT e2b-proc PREFIX cmd args... (kept), bash -l -c SCRIPT
 * e2b-sh PREFIX string (a kept command string) or bash -c SCRIPT e2b-env
 * cmd args... (environment pruned only): the $0 names the shape. */
void e2b_wrapper_unwrap(e2b_proc_info *p) {
  if (p->arg_count == 6 && strcmp(p->args[0], "-l") == 0 && strcmp(p->args[3], "e2b-sh") == 0) {
    free(p->args[2]);
    free(p->args[3]);
    free(p->args[4]);
    p->args[2] = p->args[5];
    p->arg_count = 3;
    p->kept = 1;
    return;
  }
  if (p->arg_count < 4 || strcmp(p->args[0], "-c") != 0) return;
  int kept = strcmp(p->args[2], "e2b-proc") == 0;
  if (!kept && strcmp(p->args[2], "e2b-env") != 0) return;
  size_t first = kept ? 4 : 3;
  if (p->arg_count <= first) return;
  free(p->cmd);
  p->cmd = p->args[first];
  for (size_t i = 0; i < first; i++) free(p->args[i]);
  memmove(p->args, p->args + first + 1, (p->arg_count - first - 1) * sizeof *p->args);
  p->arg_count -= first + 1;
  p->kept = kept;
}
