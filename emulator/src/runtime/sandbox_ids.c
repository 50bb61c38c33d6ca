/* sandbox_ids.c — each sandbox's own block of host uids (sandbox_ids.h). */
#define _GNU_SOURCE
#include "sandbox_ids.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

/* Lock files of the slots: one directory for every e2b-local of the host,
 * whatever its state directory, so two servers never share a block. */
#define LOCK_DIR "/run/e2b-local/uids"
#define TOP_ID 0x80000000u /* ids at and above 2^31 confuse tools that read them signed */

struct ids_mount_attr { /* the kernel's struct mount_attr */
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

static uint32_t g_base = IDS_DEFAULT_BASE, g_slots = (TOP_ID - IDS_DEFAULT_BASE) / IDS_BLOCK;
static uint32_t g_next; /* the slot tried first: round robin, so a block rests between sandboxes */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

int ids_configure(uint32_t base) {
  if (base < IDS_BLOCK || base >= TOP_ID || TOP_ID - base < IDS_BLOCK) return -EINVAL;
  g_base = base;
  g_slots = (TOP_ID - base) / IDS_BLOCK;
  return 0;
}

uint32_t ids_base(void) { return g_base; }
uint32_t ids_slots(void) { return g_slots; }

static int lock_slot(uint32_t slot) {
  char path[64];
  snprintf(path, sizeof path, LOCK_DIR "/%u", g_base + slot * IDS_BLOCK);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return -errno;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    close(fd);
    return e == EWOULDBLOCK ? -EBUSY : -e;
  }
  return fd;
}

/* A free slot's lock: -EAGAIN when every slot is taken. */
static int take_slot(uint32_t *slot) {
  if (mkdir_p(LOCK_DIR, 0700) != 0) return -errno;
  pthread_mutex_lock(&g_mu);
  uint32_t start = g_next;
  int fd = -EAGAIN;
  for (uint32_t i = 0; i < g_slots; i++) {
    uint32_t s = (start + i) % g_slots;
    int r = lock_slot(s);
    if (r >= 0) {
      fd = r;
      *slot = s;
      g_next = (s + 1) % g_slots;
      break;
    }
    if (r != -EBUSY) {
      fd = r;
      break;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return fd;
}

static int write_map(pid_t pid, const char *name, uint32_t base) {
  char path[64], map[64];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
  int n = snprintf(map, sizeof map, "0 %u %u\n", base, IDS_BLOCK);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  int rc = write(fd, map, (size_t)n) == n ? 0 : -errno;
  close(fd);
  return rc;
}

/* uid and gid id, no supplementary groups. Raw system calls: in a child
 * forked from threads, libc's wrappers would signal threads that are gone. */
static int become(uint32_t id) {
  if (syscall(SYS_setgroups, 0, NULL) != 0 || syscall(SYS_setresgid, id, id, id) != 0) return -1;
  return (int)syscall(SYS_setresuid, id, id, id);
}

/* The helper: as the block's first uid (so it owns the namespace, and the
 * kernel charges the namespace's users to that uid), a new user namespace;
 * it says so on `up` and waits to be killed. Not for a pipe's end: another
 * thread's helper, forked meanwhile, may hold a copy of any of its pipes.
 * Async-signal-safe. */
static void userns_helper(uint32_t base, int up, pid_t server) {
  char c = 1;
  if (become(base) != 0 || unshare(CLONE_NEWUSER) != 0) _exit(1);
  /* after the new uid, which clears it: gone with the server */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != server || write(up, &c, 1) != 1) _exit(1);
  for (;;) pause();
}

/* The helper's namespace, mapped, as a descriptor: 0 or -errno. */
static int make_userns(uint32_t base, int *out) {
  int up[2];
  if (pipe2(up, O_CLOEXEC) != 0) return -errno;
  pid_t server = getpid();
  pid_t pid = fork();
  if (pid == 0) userns_helper(base, up[1], server);
  int rc = pid < 0 ? -errno : 0;
  close(up[1]);
  char c;
  ssize_t r = -1;
  while (!rc && (r = read(up[0], &c, 1)) < 0 && errno == EINTR) {
  }
  close(up[0]);
  if (!rc && r != 1) rc = -EPERM; /* the helper could not make it */
  if (!rc) rc = write_map(pid, "uid_map", base);
  if (!rc) rc = write_map(pid, "gid_map", base);
  if (!rc) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
    *out = open(path, O_RDONLY | O_CLOEXEC);
    if (*out < 0) rc = -errno;
  }
  if (pid > 0) kill(pid, SIGKILL); /* our child, not yet reaped: the pid is still its */
  while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
  return rc;
}

int ids_acquire(sandbox_ids *ids) {
  ids->userns = ids->lock = -1;
  ids->base = 0;
  uint32_t slot = 0;
  int fd = take_slot(&slot);
  if (fd < 0) return fd;
  uint32_t base = g_base + slot * IDS_BLOCK;
  int rc = make_userns(base, &ids->userns);
  if (rc) {
    close(fd);
    ids->userns = -1;
    return rc;
  }
  ids->lock = fd;
  ids->base = base;
  return 0;
}

void ids_release(sandbox_ids *ids) {
  if (ids->userns >= 0) close(ids->userns);
  if (ids->lock >= 0) close(ids->lock); /* the flock goes with its last descriptor */
  ids->userns = ids->lock = -1;
}

/* path, replaced in this mount namespace by an idmapped copy of itself (and
 * of the mounts below it). Async-signal-safe. */
static int idmap_in_place(const char *path, int userns) {
  int fd = (int)syscall(SYS_open_tree, AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
  if (fd < 0) return -errno;
  struct ids_mount_attr a = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns};
  int rc = 0;
  if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) != 0 ||
      syscall(SYS_move_mount, fd, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) != 0)
    rc = -errno;
  close(fd);
  return rc;
}

int ids_enter(const sandbox_ids *ids, const ids_path *paths, int npaths) {
  if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return -errno;
  for (int i = 0; i < npaths; i++) {
    int rc = idmap_in_place(paths[i].path, ids->userns);
    if (rc && paths[i].required) return rc;
  }
  if (become(ids->base) != 0) return -errno;
  /* its owner may join it, with every capability there (none on the host) */
  if (setns(ids->userns, CLONE_NEWUSER) != 0) return -errno;
  return 0;
}
