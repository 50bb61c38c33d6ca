/* test_cgroup2.c — finding our own cgroup v2 from /proc's texts (a systemd
 * host, a hybrid one with v2 at /sys/fs/cgroup/unified, a v1-only one, a
 * cgroup namespace's mount of a subtree) and reading controller lists. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "cgroup2.h"
#include "testing.h"

static const char *PURE_V2 =
    "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
    "25 22 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
static const char *HYBRID =
    "30 22 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
    "32 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
static const char *V1_ONLY = "32 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";

static void check_dir(const char *info, const char *self, const char *want_dir, const char *want_mount) {
  char *mount = NULL, *dir = cg2_own_dir(info, self, &mount);
  if (want_dir) {
    CHECK_STR(dir, want_dir);
    CHECK_STR(mount, want_mount);
  } else {
    CHECK(dir == NULL);
  }
  free(dir);
  free(mount);
}

static void test_own_dir(void) {
  check_dir(PURE_V2, "0::/user.slice/user-0.slice/session-3.scope\n",
            "/sys/fs/cgroup/user.slice/user-0.slice/session-3.scope", "/sys/fs/cgroup");
  check_dir(PURE_V2, "0::/\n", "/sys/fs/cgroup", "/sys/fs/cgroup");
  check_dir(HYBRID, "9:name=systemd:/\n4:memory:/\n0::/\n", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified");
  check_dir(HYBRID, "4:memory:/x\n0::/a/b\n", "/sys/fs/cgroup/unified/a/b", "/sys/fs/cgroup/unified");
  /* no cgroup2 mount, or no v2 line */
  check_dir(V1_ONLY, "4:memory:/\n0::/\n", NULL, NULL);
  check_dir(PURE_V2, "4:memory:/\n", NULL, NULL);
  check_dir("", "0::/\n", NULL, NULL);
  /* a mount of a subtree: our path below its root */
  check_dir("40 1 0:30 /lxc/c1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "0::/lxc/c1/init\n",
            "/sys/fs/cgroup/init", "/sys/fs/cgroup");
  check_dir("40 1 0:30 /lxc/c1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "0::/lxc/c10\n", NULL, NULL);
  /* a malformed line is skipped, not read past */
  check_dir("garbage\n25 22 0:22 / /sys/fs/cgroup rw - cgroup2 c rw\n", "0::/s\n", "/sys/fs/cgroup/s",
            "/sys/fs/cgroup");
}

static void test_controllers(void) {
  CHECK(cg2_has_controllers("cpuset cpu io memory hugetlb pids rdma misc\n", "memory pids"));
  CHECK(cg2_has_controllers("memory pids", "pids"));
  CHECK(!cg2_has_controllers("hugetlb\n", "memory pids"));
  CHECK(!cg2_has_controllers("memory\n", "memory pids"));
  CHECK(!cg2_has_controllers("memoryx pidsy\n", "memory pids"));
  CHECK(!cg2_has_controllers("", "memory"));
  CHECK(cg2_has_controllers("", ""));
}

int main(void) {
  RUN(test_own_dir);
  RUN(test_controllers);
  return TESTING_DONE();
}
