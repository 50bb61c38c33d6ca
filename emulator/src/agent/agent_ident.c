/* agent_ident.c — the filesystem identity each file operation runs with.
 *
 * envd performs every file operation as the requested user. The agent is
 * pid 1 and root, and single-threaded, so it switches its filesystem
 * identity (fsuid/fsgid and supplementary groups) around each operation:
 * the kernel then checks every path component, symlink target and open as
 * that user, and drops root's filesystem capabilities while fsuid is not 0.
 * A switch costs three system calls, no fork. */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "agent.h"

#define MAX_SAVED_GROUPS 64

static gid_t g_saved[MAX_SAVED_GROUPS];
static int g_nsaved = -1; /* -1: not saved yet */
static int g_switched;

/* Our own identity, restored after each operation. */
static void save_groups(void) {
  if (g_nsaved >= 0) return;
  int n = getgroups(MAX_SAVED_GROUPS, g_saved);
  g_nsaved = n < 0 ? 0 : n;
}

int ident_enter(int uid, int gid) {
  g_switched = 0;
  /* Without privileges (an unprivileged server, no isolation) there is no
   * other identity to take: the operation runs as ourselves. */
  if (geteuid() != 0 || uid == 0) return 0;
  if (uid < 0 || gid < 0) return EINVAL;
  save_groups();
  gid_t g = (gid_t)gid;
  if (setgroups(1, &g) != 0) return errno;
  g_switched = 1;
  setfsgid(g);
  setfsuid((uid_t)uid);
  /* setfs*id report failure only by not changing: read them back */
  if ((int)setfsuid((uid_t)-1) != uid || (int)setfsgid((gid_t)-1) != gid) {
    ident_leave();
    return EPERM;
  }
  return 0;
}

int ident_enter_req(json_t *req) {
  json_t *u = json_object_get(req, "uid"), *g = json_object_get(req, "gid");
  /* a request that names no user gets the unprivileged one */
  int uid = json_is_integer(u) ? (int)json_integer_value(u) : 1000;
  int gid = json_is_integer(g) ? (int)json_integer_value(g) : 1000;
  return ident_enter(uid, gid);
}

void ident_leave(void) {
  if (!g_switched) return;
  setfsuid(0);
  setfsgid(0);
  setgroups((size_t)g_nsaved, g_saved);
  g_switched = 0;
}
