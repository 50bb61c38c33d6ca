/* syscall_filter.c — the sandbox's system-call filter, in the spirit of Docker's
 * default profile: everything is allowed but the calls that reach state the
 * host or other sandboxes share, or that widen the kernel's attack surface
 * for no workload's sake. A refused call answers EPERM (clone3 ENOSYS, so
 * libc falls back to clone, whose flags the filter can see); nothing is
 * killed. bwrap installs it after its own mounts, so they still work. */
#define _GNU_SOURCE
#include "syscall_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"

/* Refused whatever their arguments (names a kernel or arch lacks are skipped). */
static const char *const g_refused[] = {
    /* namespaces and mounts: a new user namespace gives back every
     * capability, and with them a cgroup mount that lifts the sandbox's
     * limits or a freezer that hides a process from its kill */
    "setns", "mount", "umount", "umount2", "pivot_root", "mount_setattr", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick",
    /* kernel keyrings are per uid, not per sandbox: host root's keys are
     * sandbox root's, and `user` of one sandbox is `user` of every other */
    "keyctl", "add_key", "request_key",
    /* the kernel itself: modules, kexec, reboot, swap, accounting, quotas */
    "init_module", "finit_module", "delete_module", "create_module", "get_kernel_syms",
    "query_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct",
    "quotactl", "quotactl_fd", "nfsservctl", "syslog", "vhangup", "iopl", "ioperm", "vm86",
    "vm86old", "settimeofday", "stime", "clock_settime", "clock_adjtime",
    /* large, bug-prone interfaces no workload here needs */
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "fanotify_init", "lookup_dcookie",
    /* reaching past the sandbox's own files and processes: file handles
     * skip path checks (the "shocker" escape); the rest act on another
     * process's memory or descriptors */
    "open_by_handle_at", "kcmp", "pidfd_getfd", "move_pages", "migrate_pages",
    /* obsolete */
    "uselib", "ustat", "sysfs", "_sysctl", NULL};

/* clone's low byte is the exit signal, so CLONE_NEWTIME (0x80) is unshare's only. */
#define NS_FLAGS_CLONE \
  (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)
#define NS_FLAGS_UNSHARE (NS_FLAGS_CLONE | 0x80)

static int refuse(scmp_filter_ctx ctx, const char *name) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return 0;
  return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
}

/* One rule per namespace bit: the call is refused when any is set. */
static int refuse_ns_flags(scmp_filter_ctx ctx, int nr, unsigned long flags) {
  for (unsigned long bit = 1; bit; bit <<= 1) {
    if (!(flags & bit)) continue;
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit));
    if (rc) return rc;
  }
  return 0;
}

static int add_rules(scmp_filter_ctx ctx) {
  for (int i = 0; g_refused[i]; i++) {
    int rc = refuse(ctx, g_refused[i]);
    if (rc) return rc;
  }
  int rc = refuse_ns_flags(ctx, SCMP_SYS(unshare), NS_FLAGS_UNSHARE);
  if (!rc) rc = refuse_ns_flags(ctx, SCMP_SYS(clone), NS_FLAGS_CLONE);
  if (!rc) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  /* vsock talks to the hypervisor, not to anything in the sandbox */
  if (!rc) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, 40, 0));
  return rc;
}

/* The same rules for 32-bit and x32 calls from an x86_64 process, which
 * would otherwise be a way around them. */
static int add_arches(scmp_filter_ctx ctx) {
  if (seccomp_arch_native() != SCMP_ARCH_X86_64) return 0;
  static const uint32_t more[] = {SCMP_ARCH_X86, SCMP_ARCH_X32};
  for (size_t i = 0; i < sizeof more / sizeof *more; i++) {
    int rc = seccomp_arch_add(ctx, more[i]);
    if (rc && rc != -EEXIST) return rc;
  }
  return 0;
}

/* libseccomp writes the program to a descriptor: read it back from a memfd. */
static void *export_program(scmp_filter_ctx ctx, size_t *len) {
  int fd = memfd_create("e2b-seccomp", MFD_CLOEXEC);
  if (fd < 0) return NULL;
  void *prog = NULL;
  off_t n = seccomp_export_bpf(ctx, fd) == 0 ? lseek(fd, 0, SEEK_CUR) : -1;
  if (n > 0) {
    prog = malloc((size_t)n);
    if (prog && pread(fd, prog, (size_t)n, 0) != n) {
      free(prog);
      prog = NULL;
    }
  }
  close(fd);
  *len = prog ? (size_t)n : 0;
  return prog;
}

void *sandbox_filter_build(size_t *len) {
  *len = 0;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    log_msg("seccomp: cannot make a filter");
    return NULL;
  }
  int rc = add_arches(ctx);
  if (!rc) rc = add_rules(ctx);
  void *prog = rc ? NULL : export_program(ctx, len);
  if (!prog) log_msg("seccomp: cannot build the sandbox filter: %s", strerror(rc ? -rc : errno));
  seccomp_release(ctx);
  return prog;
}

int sandbox_filter_fd(const void *prog, size_t len) {
  int fd = memfd_create("e2b-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -errno;
  if (write(fd, prog, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    int err = errno ? errno : EIO;
    close(fd);
    return -err;
  }
  return fd;
}
