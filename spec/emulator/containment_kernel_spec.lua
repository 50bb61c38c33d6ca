-- Containment at the kernel's interface: the system calls a sandbox may make
-- (its seccomp filter), the kernel state it must not share with the host or
-- another sandbox (keyrings), and a kill that leaves nothing behind even in
-- a cgroup the sandbox's processes were moved into. Every attack runs inside
-- a sandbox; h.assert_healthy then proves the server and a bystander survived.
local h = require("spec.helpers")

if h.live then return end

local function run(sbx, cmd, opts)
  opts = opts or {}
  return assert(sbx:run(cmd, { user = opts.user or "root", timeout_ms = opts.timeout_ms }))
end

local function py(sbx, program, user)
  return run(sbx, "python3 -c " .. h.shell_quote(program) .. " 2>&1", { user = user }).stdout
end

-- Calls each refused system call (x86_64 numbers) with harmless arguments
-- and prints "name errno" (or "name ok"); a child a clone made exits at once.
local PROBE = [[
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(L(nr), *[L(a) if isinstance(a, int) else a for a in args])
    if r == 0 and name.startswith("clone"):
        os._exit(0)
    if r > 0 and name.startswith("clone"):
        os.waitpid(r, 0)
    print(name, "ok" if r >= 0 else ctypes.get_errno(), flush=True)
assert platform.machine() == "x86_64", platform.machine()
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWCGROUP, SIGCHLD = 0x10000000, 0x20000, 0x02000000, 17
cargs = (ctypes.c_uint64 * 11)(0, 0, 0, 0, SIGCHLD)
call("unshare-user", 272, CLONE_NEWUSER)
call("unshare-mount", 272, CLONE_NEWNS)
call("unshare-cgroup", 272, CLONE_NEWCGROUP)
call("clone-user", 56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
call("clone3", 435, ctypes.byref(cargs), 88)
call("setns", 308, -1, 0)
call("mount", 165, 0, 0, 0, 0, 0)
call("umount2", 166, b"/tmp", 0)
call("pivot_root", 155, b"/tmp", b"/tmp")
call("open_tree", 428, -100, b"/", 0)
call("move_mount", 429, -1, b"", -1, b"", 0)
call("fsopen", 430, b"tmpfs", 0)
call("fsmount", 432, -1, 0, 0)
call("keyctl", 250, 0, -3, 0)
call("add_key", 248, b"user", b"e2b-probe", b"x", 1, -3)
call("request_key", 249, b"user", b"e2b-probe", 0, 0)
call("bpf", 321, 0, 0, 0)
call("perf_event_open", 298, 0, 0, -1, -1, 0)
call("userfaultfd", 323, 1)
call("kexec_load", 246, 0, 0, 0, 0)
call("kexec_file_load", 320, -1, -1, 0, 0, 0)
call("init_module", 175, 0, 0, 0)
call("finit_module", 313, -1, 0, 0)
call("delete_module", 176, b"e2b-probe", 0)
call("reboot", 169, 0, 0, 0, 0)
call("swapon", 167, b"/tmp/none", 0)
call("swapoff", 168, b"/tmp/none")
call("acct", 163, 0)
call("quotactl", 179, 0, 0, 0, 0)
call("lookup_dcookie", 212, 0, 0, 0)
call("open_by_handle_at", 304, -1, 0, 0)
call("io_uring_setup", 425, 1, 0)
print("survived")
]]

local REFUSED = { "unshare-user", "unshare-mount", "unshare-cgroup", "clone-user", "setns", "mount",
  "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsmount", "keyctl", "add_key",
  "request_key", "bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load",
  "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
  "quotactl", "lookup_dcookie", "open_by_handle_at", "io_uring_setup" }

-- keyctl/add_key through ctypes (keyutils may not be installed). Host side:
-- adds a key readable by its uid to the user keyring and prints its serial.
local function keys_program(body)
  return [[
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
USER = -4
def add(desc, payload):
    r = libc.syscall(L(248), b"user", desc.encode(), payload, L(len(payload)), L(USER))
    return r if r >= 0 else "errno=%d" % ctypes.get_errno()
def search(desc):
    r = libc.syscall(L(250), L(10), L(USER), b"user", desc.encode(), L(0))
    return r if r >= 0 else "errno=%d" % ctypes.get_errno()
def read(serial):
    buf = ctypes.create_string_buffer(256)
    r = libc.syscall(L(250), L(11), L(serial), buf, L(256))
    return buf.raw[:r].decode() if r >= 0 else "errno=%d" % ctypes.get_errno()
]] .. body
end

-- The e2b-local serving these specs' log is not ours to read: a second one.
local function sandbox_proc(c2, tag)
  local sbx = assert(c2:create{})
  run(sbx, "(exec -a e2b-hide-" .. tag .. " sleep 1000) >/dev/null 2>&1 </dev/null &")
  local pid
  for _ = 1, 50 do
    pid = h.host("pgrep -f '^e2b-hide-" .. tag .. "'"):match("%d+")
    if pid then break end
    h.e2b.sleep(100)
  end
  return sbx, assert(pid, "the sandbox's sleep was not found")
end

-- Moves the host pid into a new child of its freezer cgroup (v1) or of its
-- cgroup v2, and freezes that child; returns the child's directory.
local function hide_frozen(pid)
  local cg = h.host("cat /proc/" .. pid .. "/cgroup")
  local v1 = cg:match("%d+:freezer:(/[^\n]+)")
  local dir
  if v1 then
    dir = "/sys/fs/cgroup/freezer" .. v1 .. "/hide"
    h.host(("mkdir %s && echo %s >%s/cgroup.procs && echo FROZEN >%s/freezer.state"):format(dir, pid, dir, dir))
  else
    local v2 = assert(cg:match("0::(/[^\n]+)"), cg)
    local mnt = h.host("awk '$3 == \"cgroup2\" { print $2; exit }' /proc/self/mounts"):match("%S+")
    dir = mnt .. v2 .. "/hide"
    h.host(("mkdir %s && echo %s >%s/cgroup.procs && echo 1 >%s/cgroup.freeze"):format(dir, pid, dir, dir))
  end
  assert(h.host("cat " .. dir .. "/cgroup.procs"):find(pid, 1, true), "the process was not moved")
  return dir
end

-- Holds every inotify instance it can get (as many as the per-user limit
-- leaves), prints how many and the errno that stopped it, keeps them.
local INOTIFY_HOG = [[
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
held = 0
while libc.inotify_init1(0) >= 0:
    held += 1
print(held, ctypes.get_errno(), flush=True)
time.sleep(1000)
]]

local INOTIFY_ONE = [[
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print("ok" if libc.inotify_init1(0) >= 0 else "errno=%d" % ctypes.get_errno())
]]

-- Starts a background process in sbx as user, named by tag so the host finds
-- it; returns its host uid (the real one, from the host's /proc).
local function host_uid_of(sbx, user, tag)
  run(sbx, "(exec -a e2b-uid-" .. tag .. " sleep 1000) >/dev/null 2>&1 </dev/null &", { user = user })
  local pid = h.eventually(function() return h.host("pgrep -f '^e2b-uid-" .. tag .. "'"):match("%d+") end)
  assert(pid, "the sandbox's sleep was not found")
  local status = h.host("cat /proc/" .. pid .. "/status")
  return assert(tonumber(status:match("\nUid:%s+(%d+)")), status)
end

describe("kernel interface containment", function()
  local client, bystander
  setup(function() client = h.client() end)
  before_each(function() bystander = h.sandbox({}, client) end)
  after_each(h.cleanup)

  it("refuses namespaces, mounts, keyrings, bpf and the other calls Docker refuses: EPERM, clone3 ENOSYS", function()
    local sbx = h.sandbox({}, client)
    for _, user in ipairs({ "root", "user" }) do
      local out = py(sbx, PROBE, user)
      assert.truthy(out:find("\nsurvived\n", 1, true), out)
      for _, name in ipairs(REFUSED) do
        assert.truthy(("\n" .. out):find("\n" .. name .. " 1\n", 1, true),
          user .. ": " .. name .. " not refused with EPERM:\n" .. out)
      end
      assert.truthy(out:find("\nclone3 38\n", 1, true), out) -- ENOSYS: libc falls back to clone
    end
    h.assert_healthy({ bystander }, client)
  end)

  it("keeps root from lifting its cgroup limits: no new user, mount or cgroup namespace", function()
    local sbx = h.sandbox({}, client)
    local r = run(sbx, "unshare -rmC sh -c 'mkdir -p /tmp/cg && (mount -t cgroup2 none /tmp/cg"
      .. " || mount -t cgroup -o memory none /tmp/cg) && echo mounted' 2>&1; echo done")
    assert.is_nil(r.stdout:find("mounted", 1, true), r.stdout)
    assert.truthy(r.stdout:find("unshare failed: Operation not permitted", 1, true), r.stdout)
    -- What a normal program does still works under the filter.
    r = run(sbx, "bash -c 'echo $((1+1))' && python3 -c 'import threading, subprocess;"
      .. " t = threading.Thread(target=print, args=(\"thread\",)); t.start(); t.join();"
      .. " print(subprocess.run([\"id\", \"-u\"], capture_output=True).stdout.decode().strip())'"
      .. " && setpriv --reuid 1000 --regid 1000 --clear-groups id -u")
    assert.are.equal("2\nthread\n0\n1000\n", r.stdout)
    assert.are.equal("0\n", run(sbx, "sudo id -u", { user = "user" }).stdout)
    h.assert_healthy({ bystander }, client)
  end)

  it("runs each sandbox's users as host uids of its own: never another sandbox's nor the server's", function()
    local server_pid = assert(h.server_process(), "not run under e2b-local exec")
    local server_status = h.host("cat /proc/" .. server_pid .. "/status")
    local server_uid = assert(tonumber(server_status:match("\nUid:%s+(%d+)")), server_status)
    local tag = h.core.uuid4():sub(1, 8)
    local a, b = h.sandbox({}, client), h.sandbox({}, client)
    local seen = {}
    for i, sbx in ipairs({ a, b }) do
      for _, user in ipairs({ "root", "user" }) do
        local uid = host_uid_of(sbx, user, tag .. "-" .. i .. user)
        assert.are_not.equal(server_uid, uid, user .. " of sandbox " .. i .. " runs as the server's uid")
        assert.is_nil(seen[uid], user .. " of sandbox " .. i .. " shares host uid " .. uid .. " with " .. tostring(seen[uid]))
        seen[uid] = user .. " of sandbox " .. i
      end
      -- inside, the identities are still E2B's
      assert.are.equal("0\n1000\n", run(sbx, "id -u && setpriv --reuid 1000 --regid 1000 --clear-groups id -u").stdout)
    end
    h.assert_healthy({ bystander }, client)
  end)

  it("takes a sandbox's host uids from --sandbox-uid-base, in blocks of 65536, and refuses a base with no block", function()
    local base = 0x74000000
    local tag = h.core.uuid4():sub(1, 8)
    local log = h.with_local_server("--sandbox-uid-base " .. base, function(c2)
      local sbx = assert(c2:create{})
      for _, user in ipairs({ "root", "user" }) do
        local uid = host_uid_of(sbx, user, tag .. "-" .. user)
        assert(uid >= base and uid < 0x80000000, "host uid " .. uid .. " is outside the blocks from " .. base)
        assert.are.equal(user == "root" and 0 or 1000, (uid - base) % 65536)
      end
      assert(sbx:kill())
    end)
    assert.truthy(log:find("each sandbox runs as host uids of its own", 1, true), log)
    for _, bad in ipairs({ "5", "2147483647", "x" }) do
      local out = h.host(h.shell_quote(h.e2b_local_bin()) .. " serve --sandbox-uid-base " .. bad .. " 2>&1; echo rc=$?")
      assert.truthy(out:find("invalid --sandbox-uid-base '" .. bad .. "'", 1, true), out)
      assert.truthy(out:find("rc=2\n", 1, true), out)
    end
  end)

  it("gives sandboxes host uids of their own with a state directory below one others may not enter", function()
    local parent = h.host("mktemp -d"):match("%S+") -- 0700, the server's
    local tag = h.core.uuid4():sub(1, 8)
    local ok, err = pcall(h.with_local_server, "--state " .. parent .. "/state", function(c2)
      local sbx = assert(c2:create{})
      assert(host_uid_of(sbx, "user", tag) >= 65536, "user is not a uid of its own")
      assert(sbx.files:write("/home/user/f", "x"))
      assert.are.equal("user\nx", assert(sbx:run("stat -c %U /home/user/f; cat /home/user/f")).stdout)
      assert(sbx:kill())
    end)
    h.host("rm -rf " .. h.shell_quote(parent))
    assert(ok, err)
  end)

  it("gives sandboxes host uids of their own when its own binary lies below a directory others may not enter", function()
    -- as after the README's set-up in a checkout under /root (0700): the
    -- agent is the server's binary, bound from where it lies
    local parent = h.host("mktemp -d"):match("%S+") -- 0700, the server's
    h.host("cp " .. h.shell_quote(h.e2b_local_bin()) .. " " .. parent .. "/e2b-local")
    local bin, tag = h.e2b_local_bin, h.core.uuid4():sub(1, 8)
    h.e2b_local_bin = function() return parent .. "/e2b-local" end
    local ok, err = pcall(h.with_local_server, "", function(c2)
      local sbx = assert(c2:create{})
      assert(host_uid_of(sbx, "user", tag) >= 65536, "user is not a uid of its own")
      assert(sbx:kill())
    end)
    h.e2b_local_bin = bin
    h.host("rm -rf " .. h.shell_quote(parent))
    assert(ok, err)
  end)

  it("keeps a per-user kernel limit one sandbox exhausts (inotify instances) from another and the server", function()
    local max = tonumber(h.host("cat /proc/sys/fs/inotify/max_user_instances"))
    assert(max and max > 0, "no fs.inotify.max_user_instances")
    local a, b = h.sandbox({}, client), h.sandbox({}, client)
    for _, user in ipairs({ "user", "root" }) do
      run(a, "(python3 -c " .. h.shell_quote(INOTIFY_HOG) .. " >/tmp/hog-" .. user .. " 2>&1 </dev/null &)",
        { user = user })
    end
    local function held(user)
      local out = h.eventually(function()
        local o = run(a, "cat /tmp/hog-" .. user).stdout
        return o:match("^%d+ %d+\n$") and o
      end)
      return assert(out, "the hog never said what it held"):match("^(%d+) (%d+)")
    end
    local user_held, user_errno = held("user")
    local _, root_errno = held("root")
    -- A took all it could: the limit stopped it (EMFILE), not something else
    assert.are.equal("24", user_errno)
    assert.are.equal("24", root_errno)
    assert(tonumber(user_held) <= max, user_held)
    for _, user in ipairs({ "user", "root" }) do
      assert.are.equal("ok\n", py(b, INOTIFY_ONE, user), user .. " of another sandbox cannot inotify_init1")
    end
    assert.are.equal("ok\n", h.host("python3 -c " .. h.shell_quote(INOTIFY_ONE)), "the server's uid cannot inotify_init1")
    h.assert_healthy({ bystander }, client)
  end)

  it("shares no keyring with the host or another sandbox", function()
    local tag = h.core.uuid4():sub(1, 8)
    local host_key = h.host("python3 -c " .. h.shell_quote(keys_program(([[
k = add("e2b-host-%s", b"host-secret")
libc.syscall(L(250), L(5), L(k), L(0x3f3f0000))  # KEYCTL_SETPERM: its uid may read it
print(k)]]):format(tag))))
    local serial = assert(tonumber(host_key:match("^(%d+)")), host_key)
    local a, b = h.sandbox({}, client), h.sandbox({}, client)
    local ok, err = pcall(function()
      local out = py(a, keys_program(([[
print("search", search("e2b-host-%s"))
print("read", read(%d))
print("add", add("e2b-planted-%s", b"planted"))]]):format(tag, serial, tag)))
      assert.are.equal("search errno=1\nread errno=1\nadd errno=1\n", out)
      local planted = h.host("python3 -c " .. h.shell_quote(keys_program(
        ('print(search("e2b-planted-%s"))'):format(tag))))
      assert.truthy(planted:find("errno=", 1, true), planted)
      -- user in one sandbox and user in another: never a keyring
      assert.are.equal("errno=1\n", py(a, keys_program(('print(add("e2b-user-%s", b"u"))'):format(tag)), "user"))
      assert.are.equal("errno=1\n", py(b, keys_program(('print(search("e2b-user-%s"))'):format(tag)), "user"))
    end)
    h.host("python3 -c " .. h.shell_quote(keys_program(([[
for d in ("e2b-host-%s", "e2b-planted-%s"):
    k = search(d)
    if isinstance(k, int): libc.syscall(L(250), L(21), L(k))  # KEYCTL_INVALIDATE]]):format(tag, tag))))
    assert(ok, err)
    h.assert_healthy({ bystander }, client)
  end)

  it("kills a process hidden in a frozen child cgroup, and logs that it had to", function()
    local tag = h.core.uuid4():sub(1, 8)
    local pid, dir
    local log = h.with_local_server("", function(c2)
      local sbx
      sbx, pid = sandbox_proc(c2, tag)
      dir = hide_frozen(pid)
      assert(sbx:kill())
    end)
    local alive = h.host("kill -0 " .. pid .. " 2>/dev/null && echo alive; test -d " .. dir .. " && echo dir")
    if alive ~= "" then -- leave nothing behind on the host, then fail
      h.host(("echo THAWED >%s/freezer.state; echo 0 >%s/cgroup.freeze; kill -9 %s; sleep 0.2; rmdir %s")
        :format(dir, dir, pid, dir) .. " 2>/dev/null")
    end
    assert.are.equal("", alive)
    -- v1: the sweep found it there; v2: cgroup.kill took it, the sweep the cgroup
    assert.truthy(log:find("hidden in a child cgroup", 1, true) or log:find("child cgroup(s) made below", 1, true), log)
    h.assert_healthy({ bystander }, client)
  end)
end)
