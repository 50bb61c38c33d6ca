-- Containment of the sandbox runtime: what root inside a sandbox can reach
-- of the agent, the server and the host, and the resource limits a sandbox
-- runs under. Every attack runs inside a sandbox; h.assert_healthy then
-- proves the server and the bystander sandboxes survived it.
local h = require("spec.helpers")

if h.live then return end

-- Runs cmd as root in sbx (one user per sandbox: lua-e2b's output
-- directory under /tmp belongs to the first user that runs a command).
local function run(sbx, cmd, opts)
  opts = opts or {}
  return assert(sbx:run(cmd, { user = opts.user or "root", timeout_ms = opts.timeout_ms }))
end

-- Runs a python3 program as root in sbx; returns its stdout.
local function py_root(sbx, program, opts)
  local r = run(sbx, "python3 -c " .. h.shell_quote(program) .. " 2>&1", opts)
  return r.stdout, r
end

-- As root: ptrace pid 1 (the agent), then take its socket (fd 3) with
-- pidfd_getfd and, if that works, send a reply claiming a 1 TiB body.
local STEAL_SOCKET = [[
import ctypes, os, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(16, 1, None, None) == 0:
    os.waitpid(1, 0x40000000)
    libc.ptrace(17, 1, None, None)
    print("ptrace attached")
else:
    print("ptrace refused", ctypes.get_errno())
try:
    print("fd3 is", os.readlink("/proc/1/fd/3"))
except OSError as e:
    print("fd3 hidden", e.errno)
pidfd = os.pidfd_open(1)
fd = libc.syscall(438, pidfd, 3, 0)
if fd < 0:
    print("getfd refused", ctypes.get_errno())
else:
    s = socket.socket(fileno=fd)
    body = os.memfd_create("x")
    os.ftruncate(body, 1 << 40)
    hdr = struct.pack("<IIiI", 101, 0, 0, 1)
    s.sendmsg([hdr], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", body))])
    print("forged message sent")
]]

-- Forks until fork fails; the children wait in pause() and are killed.
local FORK_BOMB = [[
import os, signal
kids = []
try:
    for _ in range(1500):
        pid = os.fork()
        if pid == 0:
            signal.pause()
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print("fork failed", e.errno)
for k in kids:
    os.kill(k, signal.SIGKILL)
for k in kids:
    os.waitpid(k, 0)
print("forked", len(kids))
]]

-- Forks up to 250 children, says how many, and holds them until killed.
local FORK_HOLD = [[
import os, signal, sys
n = 0
try:
    for _ in range(250):
        if os.fork() == 0:
            signal.pause()
            os._exit(0)
        n += 1
except OSError as e:
    pass
print("held", n, flush=True)
signal.pause()
]]

-- Run by a fresh lua under its own e2b-local with diskSizeMB 32: writes
-- 48 MiB to /tmp and waits for the disk watch to end the sandbox.
local DISK_FILLER = [[
local e2b = require("e2b")
local c = assert(e2b.client{})
local sbx = assert(c:create{})
local raw = assert(require("e2b.rt").finish(c._h:describe(sbx.sandbox_id)))
io.write("disk=", tostring(raw.disk_size_mb), "\n")
local r = sbx:run("head -c 48M /dev/zero >/tmp/fill && echo wrote", { user = "root" })
io.write("run=", r and r.stdout or "failed\n")
for _ = 1, 100 do
  local info, err = c:describe(sbx.sandbox_id)
  if not info then io.write("gone=", err.kind, "\n") break end
  e2b.sleep(200)
end
]]

-- Run by a fresh lua under its own e2b-local (diskSizeMB 100, or the free-
-- space floor it was given): a root process writes 300 MiB to /tmp/fill
-- (FILL_HOW "unlinked": removed first, written through its descriptor, kept
-- open; "mapped": removed and its descriptor closed, written through a
-- shared mapping; "kept": left in place), then sleeps, and the disk watch
-- must end the sandbox.
local HIDDEN_FILLER = [[
local e2b = require("e2b")
local how = os.getenv("FILL_HOW")
local c = assert(e2b.client{})
local sbx = assert(c:create{})
local writer = table.concat({
  "import ctypes, os, sys, time",
  "how, n = sys.argv[1], 300 << 20",
  "f = open('/tmp/fill', 'w+b')",
  "if how != 'kept': os.unlink('/tmp/fill')",
  "b = b'\\1' * (1 << 20)",
  "if how == 'mapped':",
  "    libc = ctypes.CDLL(None, use_errno=True)",
  "    libc.mmap.restype = ctypes.c_void_p",
  "    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]",
  "    libc.msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]",
  "    f.truncate(n)",
  "    m = libc.mmap(None, n, 3, 1, f.fileno(), 0)",  -- PROT_READ|PROT_WRITE, MAP_SHARED
  "    f.close()",  -- only the mapping holds the file now
  "    for i in range(300):",
  "        ctypes.memmove(m + (i << 20), b, 1 << 20)",
  "        if i % 32 == 31: libc.msync(m, n, 4)",
  "    libc.msync(m, n, 4)",
  "else:",
  "    for i in range(300):",
  "        f.write(b)",
  "        if i % 32 == 31: f.flush(); os.fsync(f.fileno())",
  "    f.flush(); os.fsync(f.fileno())",
  "print('written', flush=True)",
  "time.sleep(600)" }, "\n")
-- held until the end: a collected handle would end the writer
local proc = assert(sbx:spawn({ "python3", "-c", writer, how }, { user = "root", keep_output = false }))
for _ = 1, 200 do
  local info, err = c:describe(sbx.sandbox_id)
  if not info then io.write("gone=", err.kind, "\n") break end
  e2b.sleep(100)
end
io.write(proc and "" or "")
]]

-- The e2b-local serving these specs (an ancestor of this process): its
-- pid and executable (the disk spec starts the same build).
local function server()
  local pid, bin = h.server_process()
  return assert(pid, "not run under e2b-local exec"), h.e2b_local_bin() ~= "e2b-local" and h.e2b_local_bin() or bin
end

local function server_bin() return select(2, server()) end

-- Runs HIDDEN_FILLER (how: "unlinked" or "kept") under a new e2b-local of
-- this build with env (shell words); returns what it wrote and the log.
local function fill_under(env, how)
  local log = os.tmpname()
  local words = { "env -u E2B_API_URL -u E2B_SANDBOX_URL -u E2B_DOMAIN -u E2B_API_KEY", env, "FILL_HOW=" .. how,
    h.shell_quote(server_bin()), "exec -- env", "LUA_PATH=" .. h.shell_quote(package.path),
    "LUA_CPATH=" .. h.shell_quote(package.cpath), h.lua_bin, "-e", h.shell_quote(HIDDEN_FILLER), "2>" .. log }
  local preload = os.getenv("LD_PRELOAD") -- sanitizer runs: as h.fresh_lua does
  if preload then
    table.insert(words, 3, "LD_PRELOAD=" .. h.shell_quote(preload) .. " ASAN_OPTIONS=detect_leaks=0")
  end
  local out = h.host(table.concat(words, " "))
  local text = h.read_file(log)
  os.remove(log)
  assert.is_nil(text:find("ERROR: %a+Sanitizer") or text:find("runtime error:", 1, true), text) -- under ASan/UBSan
  return out, text
end

-- The cgroup2 mount whose root offers memory and pids, or nil.
local function cgroup2_mount()
  local out = h.host([[awk '$3 == "cgroup2" { print $2 }' /proc/self/mounts | while read -r m; do
    c=$(cat "$m/cgroup.controllers"); case " $c " in *" memory "*) case " $c " in *" pids "*)
    echo "$m"; exit;; esac;; esac; done]])
  return out:match("^(%S+)")
end

-- How this host can limit sandboxes, in /health's words.
local function host_cgroups()
  if cgroup2_mount() then return "cgroup-v2" end
  local v1 = h.host("test -d /sys/fs/cgroup/memory && test -d /sys/fs/cgroup/pids && echo v1") == "v1\n"
  return v1 and "cgroup-v1" or "unavailable"
end

-- Run by a fresh lua under its own e2b-local in a pids cgroup of 80 tasks:
-- starts commands until the server cannot make the threads they need, then
-- stops them and checks that the server still runs one.
local TASK_EXHAUSTER = [[
local e2b = require("e2b")
local sbx = assert(assert(e2b.client{}):create{})
local procs, failed = {}, 0
for _ = 1, 80 do
  local p = sbx:spawn("sleep 30", { keep_output = false })
  if p then procs[#procs + 1] = p else failed = failed + 1 end
end
for _, p in ipairs(procs) do p:kill() p:close() end
local r, err = sbx:run("echo alive")
print("failed=" .. failed)
print("after=" .. (r and r.stdout or tostring(err)))
sbx:kill()
]]

describe("sandbox runtime containment", function()
  local client, bystander
  setup(function()
    client = h.client()
  end)
  before_each(function() bystander = h.sandbox({}, client) end)
  after_each(h.cleanup)

  it("keeps the agent out of reach: root cannot ptrace it or take its socket", function()
    local sbx = h.sandbox({}, client)
    local out = py_root(sbx, STEAL_SOCKET)
    assert.truthy(out:find("ptrace refused 1\n", 1, true), out)
    assert.truthy(out:find("fd3 hidden", 1, true), out)
    assert.truthy(out:find("getfd refused 1\n", 1, true), out)
    assert.is_nil(out:find("forged", 1, true), out)
    assert.are.equal("ok\n", run(sbx, "echo ok").stdout)
    h.assert_healthy({ bystander }, client)
  end)

  it("gives the agent no host descriptor: root cannot read or write the server's log", function()
    local sbx = h.sandbox({}, client)
    local r = run(sbx, "for f in 0 1 2 3; do timeout 1 cat /proc/1/fd/$f </dev/null >/dev/null 2>&1 && echo read$f;"
      .. " (echo x >/proc/1/fd/$f) 2>/dev/null && echo wrote$f; readlink /proc/1/fd/$f; done; echo done")
    assert.are.equal("done\n", r.stdout)
    -- Seen from the host: every agent of this server has /dev/null and a
    -- pipe of its own as 0/1/2, never the server's stdout or stderr.
    local pid = server()
    local fds = h.host(("readlink /proc/%s/fd/1 /proc/%s/fd/2; for a in $(pgrep -P %s -x bwrap); do"
      .. " for c in $(pgrep -P $a); do echo agent; readlink /proc/$c/fd/0 /proc/$c/fd/1 /proc/$c/fd/2; done; done")
      :format(pid, pid, pid))
    local server_out, server_err, agents = fds:match("^(%S+)\n(%S+)\n(.*)$")
    assert.truthy(agents and agents:find("agent", 1, true), fds)
    local checked = 0
    for stdin, out, err in agents:gmatch("agent\n(%S+)\n(%S+)\n(%S+)\n") do
      checked = checked + 1
      assert.are.equal("/dev/null", stdin)
      assert.truthy(out:find("^pipe:"), out)
      assert.are.equal(out, err)
      assert.are_not.equal(server_out, out)
      assert.are_not.equal(server_err, out)
    end
    assert.are.equal(select(2, agents:gsub("agent\n", "")), checked)
    -- A command sees its own 0/1/2 and nothing of the host's.
    r = run(sbx, "ls /proc/self/fd")
    assert.are.equal("0\n1\n2\n3\n", r.stdout) -- 3: the directory ls is reading
    -- The API key and the admin token are nowhere a sandbox process can read: every descriptor,
    -- environment and command line in the sandbox (but the scanning
    -- shell's own) is copied out and searched here, on the host side.
    run(sbx, "for f in /proc/[0-9]*/fd/* /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do"
      .. " case $f in /proc/$$/*) continue;; esac;"
      .. " timeout 0.2 head -c 65536 \"$f\" </dev/null 2>/dev/null; done >/tmp/scan; chmod 644 /tmp/scan",
      { timeout_ms = 60000 }) -- (file operations run as the default user: it reads the copy)
    local seen = assert(sbx.files:read("/tmp/scan"))
    assert.truthy(seen:find("python3", 1, true) or seen:find("bash", 1, true) or seen:find("sh", 1, true))
    assert.is_nil(seen:find(assert(os.getenv("E2B_API_KEY")), 1, true))
    assert.is_nil(seen:find(assert(os.getenv("E2B_LOCAL_ADMIN_TOKEN")), 1, true))
    h.assert_healthy({ bystander }, client)
  end)

  it("hides the host's /etc secrets and keeps /proc/sys read-only", function()
    local sbx = h.sandbox({}, client)
    local host_domain = h.host("cat /proc/sys/kernel/domainname")
    local r = run(sbx, "cat /etc/shadow- /etc/gshadow- 2>/dev/null | wc -c; ls -A /etc/ssl/private 2>/dev/null | wc -l;"
      .. " cat /etc/shadow /etc/gshadow | wc -c")
    assert.are.equal("0\n0\n0\n", r.stdout)
    r = run(sbx, "echo pwned >/proc/sys/kernel/domainname 2>/dev/null && echo wrote-domainname;"
      .. " python3 -c 'import os; os.close(os.open(\"/proc/sysrq-trigger\", os.O_WRONLY))' 2>/dev/null && echo opened-sysrq;"
      .. " echo done")
    assert.are.equal("done\n", r.stdout)
    assert.are.equal(host_domain, h.host("cat /proc/sys/kernel/domainname"))
    -- The base userland still works on the /etc it is given.
    r = run(sbx, "python3 -c 'print(1)' && curl --version >/dev/null && bash -c 'echo b' && ps -p 1 -o pid= "
      .. "&& tar --version >/dev/null && getent passwd user | cut -d: -f1 && ls /etc/ssl/certs | grep -c . >/dev/null && echo works")
    assert.are.equal("1\nb\n      1\nuser\nworks\n", r.stdout)
    h.assert_healthy({ bystander }, client)
  end)

  it("says how each limit is enforced: e2b-local's /health and the client's doctor", function()
    local report = assert(client:doctor())
    local mem, pids = (report.limits or ""):match("^memory=(%S+) pids=(%S+) disk=watched$")
    assert.truthy(mem, report.limits)
    -- what this host offers decides the answer: cgroup v2 with memory and
    -- pids to delegate (a systemd host), else cgroup v1 hierarchies, else nothing
    local kind = host_cgroups()
    assert.are.equal(kind, mem)
    assert.are.equal(kind, pids)
    h.assert_healthy({ bystander }, client)
  end)

  -- E2B runs a sandbox's commands in envd.service, which sets no TasksMax
  -- (e2b-dev/infra packages/orchestrator/pkg/template/build/core/rootfs/
  -- files/envd.service.tpl): systemd's default, 15% of the guest's
  -- threads-max (a 512 MiB VM: about 3,900), caps it near 580 tasks. A
  -- client that forks more here would fail there.
  it("caps the number of processes below a 512 MiB E2B sandbox's: a fork bomb stops short of 560", function()
    local sbx = h.sandbox({}, client)
    local out = py_root(sbx, FORK_BOMB, { user = "user", timeout_ms = 60000 })
    local n = tonumber(out:match("forked (%d+)"))
    assert.truthy(n, out)
    assert.is_true(n < 560, out)
    assert.truthy(out:find("fork failed 11", 1, true), out) -- EAGAIN
    assert.are.equal("ok\n", run(sbx, "echo ok", { user = "user" }).stdout)
    h.assert_healthy({ bystander }, client)
  end)

  it("holds all sandboxes together to --sandbox-pids, so their fork bombs leave the host and the server tasks", function()
    h.with_local_server("--sandbox-pids 400", function(c2)
      local a, b = assert(c2:create{}), assert(c2:create{})
      local holder = assert(a:spawn({ "python3", "-c", FORK_HOLD }, { user = "root" }))
      local held = tonumber((holder:read(60000) or ""):match("held (%d+)"))
      assert.are.equal(250, held)
      -- Each sandbox may hold 560 on its own; together they get 400.
      local out = py_root(b, FORK_BOMB, { user = "user", timeout_ms = 60000 })
      local n = tonumber(out:match("forked (%d+)"))
      assert.truthy(n, out)
      assert.is_true(held + n < 400, out)
      assert.truthy(out:find("fork failed 11", 1, true), out) -- EAGAIN
      -- Once a's children are gone, b gets their share.
      assert(holder:kill())
      holder:close()
      local again = tonumber(py_root(b, FORK_BOMB, { user = "user", timeout_ms = 60000 }):match("forked (%d+)"))
      assert.is_true(again > n + 200, tostring(again))
      h.assert_healthy({ a, b }, c2)
      assert(a:kill())
      assert(b:kill())
    end)
    h.assert_healthy({ bystander }, client)
  end)

  it("survives running out of tasks: starts that need a thread fail, the server goes on", function()
    -- a pids cgroup of 80 tasks in the hierarchy this host limits with
    local v2 = host_cgroups() == "cgroup-v2" and cgroup2_mount()
    local cg = (v2 or "/sys/fs/cgroup/pids") .. "/e2b-spec-" .. h.core.uuid4():sub(1, 8)
    local words = { v2 and "echo +pids >" .. v2 .. "/cgroup.subtree_control &&" or "",
      "mkdir", cg, "&& echo 80 >", cg .. "/pids.max", "&& sh -c", h.shell_quote(
      "echo $$ >" .. cg .. "/cgroup.procs && exec env -u E2B_API_URL -u E2B_SANDBOX_URL -u E2B_DOMAIN -u E2B_API_KEY "
      .. h.shell_quote(server_bin()) .. " exec -- env LUA_PATH=" .. h.shell_quote(package.path)
      .. " LUA_CPATH=" .. h.shell_quote(package.cpath) .. " " .. h.lua_bin .. " -e " .. h.shell_quote(TASK_EXHAUSTER)),
      "2>&1; echo status=$?" }
    local preload = os.getenv("LD_PRELOAD") -- sanitizer runs: as h.fresh_lua does
    if preload then
      table.insert(words, 1, "export LD_PRELOAD=" .. h.shell_quote(preload) .. " ASAN_OPTIONS=detect_leaks=0;")
    end
    local out = h.host(table.concat(words, " "))
    h.host("rmdir " .. cg .. "/e2b-local/* " .. cg .. "/e2b-local " .. cg .. " 2>/dev/null")
    assert.truthy(out:find("after=alive\n", 1, true), out)
    assert.truthy(out:find("status=0\n", 1, true), out)
    assert.is_true(tonumber(out:match("failed=(%d+)")) > 0, out)
    h.assert_healthy({ bystander }, client)
  end)

  it("caps memory at the reported memoryMB: 2 GiB kills the offender, not the sandbox", function()
    local sbx = h.sandbox({}, client)
    -- the limit is the memoryMB the control plane reports for the sandbox
    local raw = assert(require("e2b.rt").finish(client._h:describe(sbx.sandbox_id)))
    assert.are.equal(512, raw.memory_mb)
    local _, r = py_root(sbx, "b = bytearray(b'\\1') * (2 << 30); print('allocated', len(b))",
      { timeout_ms = 60000 })
    assert.is_nil(r.stdout:find("allocated", 1, true), r.stdout)
    assert.are_not.equal(0, r.exit_code)
    assert.are.equal("ok\n", run(sbx, "echo ok").stdout)
    h.assert_healthy({ bystander }, client)
  end)

  it("ends a sandbox whose files outgrow the reported diskSizeMB (watched, not kernel-enforced)", function()
    local words = { "env -u E2B_API_URL -u E2B_SANDBOX_URL -u E2B_DOMAIN -u E2B_API_KEY E2B_LOCAL_DISK_MB=32",
      h.shell_quote(server_bin()), "exec -- env", "LUA_PATH=" .. h.shell_quote(package.path),
      "LUA_CPATH=" .. h.shell_quote(package.cpath), h.lua_bin, "-e", h.shell_quote(DISK_FILLER), "2>&1" }
    local preload = os.getenv("LD_PRELOAD") -- sanitizer runs: as h.fresh_lua does
    if preload then
      table.insert(words, 4, "LD_PRELOAD=" .. h.shell_quote(preload) .. " ASAN_OPTIONS=detect_leaks=0")
    end
    local out = h.host(table.concat(words, " "))
    assert.truthy(out:find("disk=32\n", 1, true), out)
    assert.truthy(out:find("run=wrote\n", 1, true), out)
    assert.truthy(out:find("gone=not_found\n", 1, true), out)
    h.assert_healthy({ bystander }, client)
  end)

  it("counts a deleted file its processes hold open against diskSizeMB", function()
    local out, log = fill_under("E2B_LOCAL_DISK_MB=100", "unlinked")
    assert.truthy(out:find("gone=not_found\n", 1, true), out .. log)
    assert.truthy(log:find("over diskSizeMB 100", 1, true), log)
    h.assert_healthy({ bystander }, client)
  end)

  it("counts a deleted file its processes only map against diskSizeMB", function()
    local out, log = fill_under("E2B_LOCAL_DISK_MB=100", "mapped")
    assert.truthy(out:find("gone=not_found\n", 1, true), out .. log)
    assert.truthy(log:find("over diskSizeMB 100", 1, true), log)
    h.assert_healthy({ bystander }, client)
  end)

  it("keeps a free-space floor on the host's disk, whatever diskSizeMB allows", function()
    -- the floor: 150 MiB below what is free now, so 300 MiB cannot fit above it
    local free_mb = tonumber(h.host("df -Pm " .. h.shell_quote(os.getenv("TMPDIR") or "/tmp")
      .. " | awk 'NR==2 {print $4}'"))
    local out, log = fill_under("E2B_LOCAL_DISK_FLOOR_MB=" .. (free_mb - 150), "kept")
    assert.truthy(out:find("gone=not_found\n", 1, true), out .. log)
    assert.truthy(log:find("free on the host's disk", 1, true), log)
    h.assert_healthy({ bystander }, client)
  end)
end)
