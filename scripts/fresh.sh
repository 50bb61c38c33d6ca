#!/bin/bash
# Checks that README.md's two opening commands pass on a fresh Debian 12:
# bootstraps a bookworm root (debootstrap --variant=minbase), copies this
# checkout into /root/lua-e2b inside it and runs each command there as root
# of that tree (its own mount namespace, pivoted into it, as a machine that
# booted it: a chroot would forbid the user namespaces e2b-local needs),
# as root, with a clean environment. Each command gets its own untouched copy
# of the root (command 2 is a claim about a fresh machine too, so it does not
# inherit command 1's set-up). Takes 15-20 min (2 cores): not part of
# scripts/test.sh.
#
#   bash scripts/fresh.sh [--only 1|2] [--keep] [--src DIR] [--work DIR]
#
#   --only N    run command N only
#   --keep      leave each root (unmounted) in the work dir for inspection
#   --src DIR   the git checkout to test (default: this one); its HEAD is
#               cloned, so uncommitted changes are not part of the test
#   --work DIR  work dir (default $FRESH_WORK or /var/tmp/lua-e2b-fresh); the
#               pristine bootstrap is cached there as bookworm-minbase-ARCH.tar
#               (delete it to bootstrap again); logs go there as fresh-N.log,
#               the suite's build/test-logs/ as test-logs-N/
#
# What it needs from the host:
#   - Linux, run as root with CAP_SYS_ADMIN: it mounts (bind, proc, rbind)
#     and pivots into the root; the kernel must let root there create user,
#     mount, pid, net and ipc namespaces (bubblewrap and e2b-local's own uid
#     blocks, which sandboxes run in), so not an unprivileged container
#   - a Debian-like host (dpkg; apt-get to install what is missing), git,
#     util-linux (mount, findmnt, flock), tar, and debootstrap with gpgv and
#     debian-archive-keyring, which it installs if missing
#   - network to a Debian mirror -- the host's apt sources for bookworm, else
#     http://deb.debian.org (override: FRESH_MIRROR=URL) -- and to the npm
#     registry (scripts/setup.sh installs Node.js 22 from it); DNS by the
#     host's /etc/resolv.conf, which is copied in; the host's apt proxy and
#     Check-Valid-Until/Check-Date settings are copied too, and so are its
#     local CAs (/usr/local/share/ca-certificates), with an /etc/npmrc that
#     makes npm use them
#   - disk: ~0.3 GB for the cached bootstrap, ~6 GB per root while it runs
#     (FRESH_MIN_GB, default 8, is checked before starting)
#   - optional: a writable cgroup v2 hierarchy, to find every process started
#     inside (daemons and sandboxes included) and kill what is left; without
#     it, processes are found by their root directory (/proc/PID/root)
#
# Everything it mounts is unmounted (in reverse order, lazily if busy) and
# everything left running inside is killed on exit, failure, Ctrl-C or TERM.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=${FRESH_WORK:-/var/tmp/lua-e2b-fresh}
ONLY=""
KEEP=0
TAIL=${FRESH_TAIL:-30}
MIN_GB=${FRESH_MIN_GB:-8}
CLEAN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# State the exit trap cleans up: the dir being worked on, its mounts, the
# running job and its cgroup.
ACTIVE=""
ACTIVE_KEEP=0
MOUNTS=()
JOB=""
CG=""

say() { printf 'fresh: %s\n' "$*"; }
die() {
  say "$*" >&2
  exit 2
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit "${1:-0}"
}

parse_args() {
  while [ $# -gt 0 ]; do
    case $1 in
      --only) ONLY=${2:-}; shift ;;
      --keep) KEEP=1 ;;
      --src) SRC=${2:-}; shift ;;
      --work) WORK=${2:-}; shift ;;
      -h | --help) usage 0 ;;
      *) say "unknown option: $1"; usage 2 >&2 ;;
    esac
    shift
  done
  case $ONLY in "" | 1 | 2) ;; *) die "--only takes 1 or 2" ;; esac
  git -C "$SRC" rev-parse --verify -q HEAD >/dev/null || die "--src $SRC: not a git checkout"
  SRC=$(cd "$SRC" && pwd)
  # Paths go through findmnt's output and case patterns: keep them plain.
  case $WORK in /*) ;; *) die "--work must be an absolute path" ;; esac
  case $WORK in *[!A-Za-z0-9/._+-]*) die "--work: only [A-Za-z0-9/._+-] please" ;; esac
}

# --- host prerequisites -------------------------------------------------

need_host() {
  [ "$(id -u)" = 0 ] || die "must run as root (mount, chroot)"
  local p missing=""
  for p in debootstrap gpgv debian-archive-keyring; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    command -v apt-get >/dev/null || die "needs:$missing (no apt-get to install them)"
    say "installing on the host:$missing"
    apt-get update -qq
    # shellcheck disable=SC2086 # one word per package
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
  for p in git mount umount findmnt flock tar unshare pivot_root; do
    command -v "$p" >/dev/null || die "needs $p on the host"
  done
}

check_disk() {
  local avail
  avail=$(df -P -BG "$WORK" | awk 'NR == 2 { sub("G", "", $4); print $4 }')
  [ "$avail" -ge "$MIN_GB" ] || die "$WORK has ${avail} GB free; needs $MIN_GB (FRESH_MIN_GB)"
}

# The host's apt entries for bookworm suites, one "deb URI SUITE COMPONENTS"
# line each: the same mirror as the host, without its third-party repos (a
# fresh Debian has none, and their keys are not inside).
host_sources() {
  # shellcheck disable=SC2016 # $(...) here is apt's template syntax
  apt-get indextargets --no-release-info --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
    'Created-By: Packages' 2>/dev/null |
    awk '$2 ~ /^bookworm(-updates|-security|-backports)?$/' | sort -u |
    awk '{ k = $1 " " $2; c[k] = c[k] " " $3 } END { for (k in c) print "deb " k c[k] }' | sort
}

# Debian's defaults, for a host whose sources name no bookworm suite.
default_sources() {
  local m=${FRESH_MIRROR:-http://deb.debian.org/debian}
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$m" "$m"
  printf 'deb http://deb.debian.org/debian-security bookworm-security main\n'
}

sources() {
  if [ -n "${FRESH_MIRROR:-}" ] || [ -z "$(host_sources)" ]; then default_sources; else host_sources; fi
}

mirror() {
  sources | awk '$3 == "bookworm" { print $2; exit }'
}

# --- mounts and processes -----------------------------------------------

mounts_under() { # dir: mount points at or below it, deepest first
  findmnt -rn -o TARGET | awk -v d="$1" '$0 == d || index($0, d "/") == 1 { print length($0), $0 }' |
    sort -rn | cut -d' ' -f2-
}

mnt() { # mount-args... target: mount and remember it for the unmount
  mount "$@"
  MOUNTS+=("${@: -1}")
}

# Each mount in the root is its own private (or slave) copy: an unmount
# there must not propagate to the host's /dev/pts or /sys/fs/cgroup.
mount_root() { # root
  local r=$1
  mnt --bind "$r" "$r" # bwrap pivots the root: / must be a mount point
  mount --make-private "$r"
  mnt -t proc proc "$r/proc"
  mnt --rbind /sys "$r/sys" # rbind: the cgroup hierarchies come along
  mount --make-rslave "$r/sys"
  mnt --rbind /dev "$r/dev" # with /dev/pts and /dev/shm
  mount --make-rslave "$r/dev"
  # /tmp stays the root's own directory: Debian 12 keeps /tmp on disk.
}

unmount_all() { # dir
  local i m
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    m=${MOUNTS[i]}
    umount -R "$m" 2>/dev/null || umount -R -l "$m" 2>/dev/null || true
  done
  MOUNTS=()
  # Anything else mounted below (by something inside, or a killed debootstrap).
  for m in $(mounts_under "$1"); do
    umount -l "$m" 2>/dev/null || true
  done
  [ -z "$(mounts_under "$1")" ] || { say "still mounted below $1:"; mounts_under "$1"; return 1; }
}

# A cgroup v2 group for the job: every process it starts stays in it, even
# daemons that leave the process tree and sandboxes in other namespaces.
make_cgroup() {
  local top
  top=$(findmnt -rn -t cgroup2 -o TARGET | head -n 1)
  CG=""
  [ -n "$top" ] && mkdir "$top/lua-e2b-fresh.$$" 2>/dev/null && CG="$top/lua-e2b-fresh.$$"
  return 0
}

kill_cgroup() {
  [ -n "$CG" ] && [ -d "$CG" ] || return 0
  local n
  n=$(wc -l <"$CG/cgroup.procs")
  [ "$n" = 0 ] || say "killing $n process(es) left running inside"
  if [ -e "$CG/cgroup.kill" ]; then echo 1 >"$CG/cgroup.kill"; else xargs -r kill -9 <"$CG/cgroup.procs"; fi
  # (cgroup files report size 0: read them, do not test -s)
  for n in $(seq 150); do [ -n "$(cat "$CG/cgroup.procs")" ] || break; sleep 0.2; done
  rmdir "$CG" 2>/dev/null || say "cgroup $CG not empty: $(tr '\n' ' ' <"$CG/cgroup.procs")"
  CG=""
}

# Without a cgroup (or for what escaped it): processes whose root is below dir.
kill_by_root() { # dir
  local p r
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2>/dev/null) || continue
    case $r in "$1" | "$1"/*) say "killing ${p#/proc/} ($(cat "$p/comm" 2>/dev/null))"; kill -9 "${p#/proc/}" 2>/dev/null ;; esac
  done
  return 0
}

kill_inside() { # dir
  if [ -n "$JOB" ]; then kill -9 -- "-$JOB" 2>/dev/null; wait "$JOB" 2>/dev/null; JOB=""; fi
  kill_cgroup
  kill_by_root "$1"
  sleep 0.5
}

# rm -rf only what no longer has anything mounted below it: never the
# host's /dev or /sys through a bind mount.
remove_dir() { # dir
  [ -e "$1" ] || return 0
  [ -z "$(mounts_under "$1")" ] || die "refusing to remove $1: something is mounted below it"
  rm -rf --one-file-system "$1"
}

settle() { # dir: nothing running inside, nothing mounted below
  kill_inside "$1"
  unmount_all "$1"
}

release() { # dir: settle, then remove (unless kept)
  [ -n "$1" ] || return 0
  settle "$1" || return 1
  if [ "$ACTIVE_KEEP" = 1 ]; then say "kept $1 (unmounted)"; else remove_dir "$1"; fi
}

# shellcheck disable=SC2317 # called by the traps
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  release "$ACTIVE" || rc=1
  ACTIVE=""
  exit "$rc"
}

# Runs a command as a job of its own (set -m: own process group, SIGINT not
# ignored in it), in the cgroup, and waits for it; a signal to this script
# interrupts the wait, and the exit trap then kills the job.
run_job() { # log command...
  local log=$1
  shift
  make_cgroup
  /bin/sh -c '[ -z "$0" ] || echo $$ >"$0/cgroup.procs"; exec "$@"' "$CG" "$@" \
    </dev/null >"$log" 2>&1 9>&- & # (fd 9: the lock, not theirs to hold)
  JOB=$!
  local rc=0
  wait "$JOB" || rc=$?
  JOB=""
  return "$rc"
}

# --- the root -----------------------------------------------------------

bootstrap() { # tarball: the cached pristine root, made once
  local tar=$1 dir="$WORK/bootstrap.tmp" m
  [ -s "$tar" ] && { say "using the cached bootstrap $tar"; return 0; }
  m=$(mirror)
  say "debootstrap --variant=minbase bookworm from $m (log: $WORK/debootstrap.log)"
  ACTIVE=$dir ACTIVE_KEEP=0
  remove_dir "$dir"
  mkdir -p "$dir"
  run_job "$WORK/debootstrap.log" debootstrap --variant=minbase --arch="$(dpkg --print-architecture)" \
    bookworm "$dir" "$m" || { tail -n "$TAIL" "$WORK/debootstrap.log"; die "debootstrap failed"; }
  settle "$dir"
  tar --numeric-owner --xattrs --xattrs-include='*' --acls -C "$dir" -cf "$tar.tmp" .
  mv "$tar.tmp" "$tar"
  remove_dir "$dir"
  ACTIVE=""
}

# What a machine installed by Debian's installer has and a minbase lacks,
# plus what the chroot needs to reach the network like the host.
provision() { # root
  local r=$1
  rm -f "$r/etc/resolv.conf" # a symlink there would lead out of the root
  cp -L /etc/resolv.conf "$r/etc/resolv.conf"
  sources >"$r/etc/apt/sources.list"
  apt-config dump | grep -E '^Acquire::(https?|ftp)::Proxy |^Acquire::Check-(Valid-Until|Date) ' \
    >"$r/etc/apt/apt.conf.d/00fresh-host" || rm -f "$r/etc/apt/apt.conf.d/00fresh-host"
  local_cas "$r"
  [ -s "$r/etc/hosts" ] ||
    printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$r/etc/hosts"
  # Services apt installs (nginx) would run in the host's network namespace,
  # on the host's port 80: a chroot does not start them.
  printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
  chmod 755 "$r/usr/sbin/policy-rc.d"
  chmod 1777 "$r/tmp"
}

# CAs the host trusts locally (a TLS-inspecting proxy's, say): the
# ca-certificates package, once setup.sh installs it, adds them to the
# system bundle. The Node.js that setup.sh takes from npm trusts only its own
# CA list, so npm is pointed at that bundle (Debian's npm reads /etc/npmrc).
local_cas() { # root
  ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1 || return 0
  mkdir -p "$1/usr/local/share/ca-certificates"
  cp -a /usr/local/share/ca-certificates/. "$1/usr/local/share/ca-certificates/"
  echo "cafile=/etc/ssl/certs/ca-certificates.crt" >"$1/etc/npmrc"
}

# The checkout's HEAD, cloned (not hard-linked) into /root, which stays 0700
# as on Debian: what nginx's workers (nobody) cannot read must not matter.
copy_project() { # root
  local r=$1 head
  head=$(git -C "$SRC" rev-parse HEAD)
  chmod 700 "$r/root"
  git clone -q --no-hardlinks "$SRC" "$r/root/lua-e2b"
  git -C "$r/root/lua-e2b" checkout -q --detach "$head"
  say "project: $SRC at $(git -C "$SRC" log -1 --format='%h %s')"
  [ -z "$(git -C "$SRC" status --porcelain --untracked-files=no)" ] ||
    say "note: $SRC has uncommitted changes; they are not tested"
}

new_root() { # n: a fresh copy of the cached bootstrap, mounted
  local r="$WORK/root-$1"
  ACTIVE=$r ACTIVE_KEEP=$KEEP
  [ -z "$(mounts_under "$r")" ] || unmount_all "$r"
  remove_dir "$r"
  mkdir "$r"
  tar --numeric-owner --xattrs --xattrs-include='*' --acls -C "$r" -xpf "$CACHE"
  provision "$r"
  copy_project "$r"
  mount_root "$r"
}

# --- the commands -------------------------------------------------------

readme_commands() { # the lines of README.md's first fenced block
  awk '/^```/ { if (inblock) exit; inblock = 1; next } inblock' "$1"
}

# Returns 0 (set -e stays in force inside); a failure is counted in FAILED.
run_command() { # n command: in a fresh root
  local n=$1 cmd=$2 log="$WORK/fresh-$1.log" start=$SECONDS rc=0 r
  r="$WORK/root-$n"
  new_root "$n"
  say "command $n: $cmd"
  say "  in $r (its own mount namespace pivoted into it, clean environment), log: $log"
  # pivot_root, not chroot: the kernel refuses a user namespace to a process
  # whose root is not its mount namespace's (e2b-local gives each sandbox
  # host uids of its own through one), and a fresh machine has no chroot.
  run_job "$log" env -i HOME=/root PATH="$CLEAN_PATH" TERM=dumb \
    unshare --mount --propagation private /bin/sh -c 'cd "$1" && mkdir -p .oldroot &&
      pivot_root . .oldroot && exec /bin/sh -c "umount -l /.oldroot && rmdir /.oldroot &&
      cd /root/lua-e2b && $2"' fresh "$r" "$cmd" || rc=$?
  report "$n" "$rc" $((SECONDS - start)) "$log"
  keep_test_logs "$n" "$r"
  release "$r"
  ACTIVE=""
  [ "$rc" = 0 ] || FAILED=$((FAILED + 1))
}

keep_test_logs() { # n root: the suite's logs outlive the root
  local d="$2/root/lua-e2b/build/test-logs"
  rm -rf "$WORK/test-logs-$1"
  [ -d "$d" ] && cp -r "$d" "$WORK/test-logs-$1" && say "  test logs copied to $WORK/test-logs-$1/"
  return 0
}

report() { # n rc seconds log
  local verdict=PASS total
  [ "$2" = 0 ] || verdict="FAIL (exit $2)"
  say "---- last $TAIL lines of command $1's output ----"
  tail -n "$TAIL" "$4"
  say "----"
  total=$(grep -E '^TOTAL: [0-9]+ passed, [0-9]+ failed' "$4" | tail -n 1 || true)
  RESULTS+=("command $1: $verdict in $3 s${total:+; $total}")
  say "${RESULTS[-1]}"
}

main() {
  parse_args "$@"
  need_host
  mkdir -p "$WORK"
  exec 9>"$WORK/lock"
  flock -n 9 || die "another fresh.sh is using $WORK"
  check_disk
  set -m
  trap cleanup EXIT
  trap 'say interrupted; exit 130' INT
  trap 'say terminated; exit 143' TERM

  local cmds start=$SECONDS
  mapfile -t cmds < <(git -C "$SRC" show HEAD:README.md | readme_commands /dev/stdin)
  [ "${#cmds[@]}" = 2 ] || die "README.md's first fenced block has ${#cmds[@]} lines, not 2 commands"

  CACHE="$WORK/bookworm-minbase-$(dpkg --print-architecture).tar"
  bootstrap "$CACHE"
  say "bootstrap ready in $((SECONDS - start)) s"

  RESULTS=()
  FAILED=0
  [ "$ONLY" = 2 ] || run_command 1 "${cmds[0]}"
  [ "$ONLY" = 1 ] || run_command 2 "${cmds[1]}"
  say "summary (total $((SECONDS - start)) s):"
  printf '  %s\n' "${RESULTS[@]}"
  [ "$FAILED" = 0 ]
}

# On one line: bash reads a script as it runs, and this one runs for half an
# hour, during which a checkout or an edit may change the file under it.
main "$@"; exit
