/* envdver.h — the envd version e2b-local's sandboxes report, and what an
 * envd of that version lacks: --envd-version makes the server behave as an
 * older envd does, so clients' version gates can be tested. */
#ifndef EMU_ENVDVER_H
#define EMU_ENVDVER_H

#define ENVD_VERSION_CURRENT "0.6.4"
#define ENVD_SINCE_CLOSE_STDIN "0.5.2" /* process.Process/CloseStdin */
#define ENVD_SINCE_WATCH_ENTRY "0.6.3" /* WatchDir's includeEntry */
#define ENVD_SINCE_RECURSIVE_WATCH "0.1.4"
#define ENVD_SINCE_STDIN_FLAG "0.3.0" /* Start's stdin (before: always open) */
#define ENVD_SINCE_METRICS "0.1.2" /* GET /metrics */
#define ENVD_SINCE_CONTENT_DISPOSITION "0.5.1" /* downloads say inline; filename=... */
#define ENVD_SINCE_NICE_WRAPPER "0.5.4" /* every command runs as sh -c '... exec nice "$@"' */

/* 0, or -1 when v is no "MAJOR.MINOR.PATCH" (or newer than the current). */
int envd_version_set(const char *v);
const char *envd_version(void);
/* 1 when the reported version is older than since. */
int envd_below(const char *since);

#endif
