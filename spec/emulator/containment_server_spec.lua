-- e2b-local survives what a sandbox leaves on disk: trees of any depth are
-- removed without recursion on a request thread's small stack, and start-up
-- survives whatever a crash or a sandbox left in the state directory. A
-- SIGKILLed server leaves no sandbox process behind.
local h = require("spec.helpers")
local e2b = h.e2b

if h.live then return end

-- A directory chain `depth` levels deep under `dir`, built by `user`.
local function deep_tree(sbx, dir, depth, user)
  local r = assert(sbx:run({ "python3", "-c", ([[
import os
os.makedirs(%q, exist_ok=True); os.chdir(%q)
for i in range(%d):
    os.mkdir("d"); os.chdir("d")
open("leaf", "w").write("x")
print("built")]]):format(dir, dir, depth) }, { user = user, timeout_ms = 60000 }))
  assert(r.stdout == "built\n", r.stderr)
end

describe("e2b-local state containment", function()
  local client, bystander
  setup(function() client = h.client() end)
  before_each(function() bystander = h.sandbox({}, client) end)
  after_each(h.cleanup)

  it("survives killing a sandbox that holds a 4,000-level directory tree", function()
    local sbx = assert(client:create{})
    deep_tree(sbx, "/tmp/deep", 4000, "user")
    deep_tree(sbx, "/home/user/deep", 1500, "root")
    assert(sbx:kill())
    h.assert_healthy({ bystander }, client)
  end)

  it("survives snapshotting and deleting snapshots of deep trees", function()
    local sbx = h.sandbox({}, client)
    deep_tree(sbx, "/home/user/deep", 1000, "user")
    local snap = assert(sbx:snapshot("deep-" .. h.core.uuid4():sub(1, 8)))
    assert(client:delete_snapshot(snap.id))
    -- Past PATH_MAX the copy cannot be made: a clear error, nothing left half-made.
    deep_tree(sbx, "/home/user/deeper", 3000, "user")
    local name = "deeper-" .. h.core.uuid4():sub(1, 8)
    local none, err = sbx:snapshot(name)
    assert.is_nil(none)
    assert.truthy(err.message:find("copy", 1, true), tostring(err))
    assert.are.equal(0, #assert(client:snapshots(name)))
    h.assert_healthy({ bystander, sbx }, client)
  end)

  it("starts over a half-removed state directory (a deep tree and no meta.json)", function()
    local dir = os.tmpname()
    os.remove(dir)
    local vars, stop = h.serve_local("--state " .. dir)
    assert(vars.E2B_API_URL, "the second server did not start")
    local c2 = h.client({ api_url = vars.E2B_API_URL, sandbox_url = vars.E2B_SANDBOX_URL,
                          api_key = vars.E2B_API_KEY, domain = vars.E2B_DOMAIN })
    local sbx = assert(c2:create{ on_close = "leave" })
    deep_tree(sbx, "/home/user/deep", 3000, "user")
    stop()
    -- What a crash in the middle of a removal leaves: the files, no meta.json;
    -- and what a damaged disk could: meta.json that is not JSON, or has wrong types.
    h.host(("rm -f %s/sandboxes/%s/meta.json"):format(dir, sbx.sandbox_id))
    h.host(([[cd %s/sandboxes && mkdir -p ibadjson1 ibadtypes1 && printf '{"state": "pau' > ibadjson1/meta.json &&
      printf '{"state":"paused","templateID":"base","metadata":[1],"mounts":[{"src":7}]}' > ibadtypes1/meta.json]])
      :format(dir))
    vars, stop = h.serve_local("--state " .. dir)
    local ok = vars.E2B_API_URL and h.client({ api_url = vars.E2B_API_URL, api_key = vars.E2B_API_KEY }):probe()
    local log = stop()
    h.host("rm -rf " .. dir)
    assert.is_true(ok, log)
    for _, id in ipairs({ sbx.sandbox_id, "ibadjson1", "ibadtypes1" }) do
      assert.truthy(log:find(id .. ": no usable meta.json", 1, true), log)
    end
    h.assert_healthy({ bystander }, client)
  end)

  it("authenticates before waking: no request without the token resumes a paused auto-resume sandbox", function()
    local sbx = h.sandbox({ lifecycle = { on_timeout = "pause", auto_resume = true } }, client)
    assert(sbx:pause())
    local base = os.getenv("E2B_SANDBOX_URL")
    local function status(path, extra)
      return h.host(("curl -s -o /dev/null -w '%%{http_code}' -X POST -H 'E2b-Sandbox-Id: %s' "
        .. "-H 'Content-Type: application/json' %s --data '{}' '%s%s'"):format(sbx.sandbox_id, extra or "", base, path))
    end
    assert.are.equal("401", status("/process.Process/List"))
    assert.are.equal("401", status("/process.Process/List", "-H 'X-Access-Token: wrong'"))
    assert.are.equal("401", status("/files?path=/tmp/x&username=user"))
    assert.are.equal("502", h.host(("curl -s -o /dev/null -w '%%{http_code}' -H 'E2b-Sandbox-Id: %s' '%s/health'")
      :format(sbx.sandbox_id, base)))
    assert.are.equal("paused", assert(client:describe(sbx.sandbox_id)).state)
    -- with the token it wakes, as auto-resume promises
    assert.are.equal("ok\n", assert(sbx:run("echo ok")).stdout)
    assert.are.equal("running", assert(client:describe(sbx.sandbox_id)).state)
    h.assert_healthy({ bystander }, client)
  end)

  it("answers a chunked body past its bounds with 413, not a reset", function()
    -- the key goes to curl in a private file, never on its command line
    local header = h.key_header()
    local out = h.host(("head -c 80000000 /dev/zero | curl -s -o /dev/null -w '%%{http_code}' "
      .. "-H 'Transfer-Encoding: chunked' -H 'Content-Type: application/json' -H @%s "
      .. "--data-binary @- '%s/sandboxes'; echo \" rc=$?\""):format(header, os.getenv("E2B_API_URL")))
    os.remove(header)
    assert.truthy(out:match("^413 rc=0"), out)
    h.assert_healthy({ bystander }, client)
  end)
end)

-- Sandbox services that misbehave as HTTP upstreams of the port proxy.
local ENDLESS_HEAD = [[
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8080)); s.listen(64)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    try:
        c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\n")
        line = b"X-Endless: " + b"a" * 1000 + b"\r\n"
        while True:
            c.sendall(line * 64)
    except OSError:
        c.close()
]]
local SILENT = [[
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8081)); s.listen(64)
print("listening", flush=True)
held = []
while True:
    c, _ = s.accept()
    held.append(c)
]]

-- VmRSS (kB) and the thread and descriptor counts of a process.
local function usage(pid)
  local out = h.host(("grep -E '^(VmRSS|Threads):' /proc/%d/status | awk '{print $2}' | tr '\n' ' ';"
    .. " ls /proc/%d/fd | wc -l"):format(pid, pid))
  local rss, threads, fds = out:match("^(%d+) (%d+) (%d+)")
  return tonumber(rss), tonumber(threads), tonumber(fds)
end

describe("e2b-local's port proxy against a hostile upstream", function()
  local client, sbx
  setup(function()
    client = h.client()
    sbx = h.sandbox({}, client)
    for _, code in ipairs({ ENDLESS_HEAD, SILENT }) do
      local p = assert(sbx:spawn({ "python3", "-c", code }))
      assert.truthy((p:read(10000) or ""):find("listening", 1, true))
      p:detach()
    end
  end)
  teardown(h.cleanup)

  -- curl to port of the sandbox through the port proxy, n callers at once
  -- (default 1): their statuses.
  local function via_proxy(port, seconds, n)
    local one = ("curl -s -o /dev/null -w '%%{http_code}' --max-time %d -H %s %s/"):format(seconds,
      h.shell_quote("Host: " .. sbx:host(port)), os.getenv("E2B_API_URL"))
    return h.host(("for i in $(seq %d); do %s & done; wait"):format(n or 1, one))
  end

  it("refuses an endless response head with 502, its memory bounded", function()
    local pid = assert(h.server_process())
    local before = usage(pid)
    assert.are.equal("502", via_proxy(8080, 30))
    local after = usage(pid)
    assert.is_true(after - before < 100 * 1024, ("RSS grew from %d to %d kB"):format(before, after))
    h.assert_healthy({ sbx }, client)
  end)

  it("releases the thread and descriptors of a request whose caller left a silent upstream", function()
    local pid = assert(h.server_process())
    via_proxy(8081, 1) -- warm: the first request's thread and connection
    e2b.sleep(500)
    local _, threads0, fds0 = usage(pid)
    -- 20 callers give up at once: each leaves its request to the proxy
    assert.are.equal(string.rep("000", 20), via_proxy(8081, 1, 20))
    local threads, fds
    for _ = 1, 50 do
      _, threads, fds = usage(pid)
      if threads <= threads0 + 2 and fds <= fds0 + 4 then break end
      e2b.sleep(100)
    end
    assert.is_true(threads <= threads0 + 2, ("threads %d -> %d"):format(threads0, threads))
    assert.is_true(fds <= fds0 + 4, ("descriptors %d -> %d"):format(fds0, fds))
    h.assert_healthy({ sbx }, client)
  end)
end)

-- The ids of the sandboxes made under the state directories in dir.
local function sandbox_ids(dir)
  local ids = {}
  local names = h.host("find " .. dir .. " -mindepth 3 -maxdepth 3 -path '*/sandboxes/*' -printf '%f\\n'")
  for id in names:gmatch("[^\n]+") do ids[#ids + 1] = id end
  return ids
end

-- Live processes (zombies waiting for init are not) that sandboxes of the
-- servers under dir left: a command line naming dir (bwrap's binds, an
-- unisolated agent's maps, a forked server before its exec) or a cgroup of
-- one of their sandboxes (all that runs inside one).
local function left_behind(dir)
  local ids, found = sandbox_ids(dir), {}
  for pid in h.host("ls /proc"):gmatch("%d+") do
    local state = h.read_file("/proc/" .. pid .. "/stat"):match(".*%) (%a) ")
    local cmd = h.read_file("/proc/" .. pid .. "/cmdline")
    local cgroups = h.read_file("/proc/" .. pid .. "/cgroup")
    local hit = cmd:find(dir, 1, true)
    for _, id in ipairs(ids) do hit = hit or cgroups:find("/" .. id, 1, true) end
    if hit and state and state ~= "Z" then found[#found + 1] = pid .. " " .. cmd:gsub("%z", " "):sub(1, 100) end
  end
  return found
end

-- Waits (bounded) for the death signals to land; what is still left.
local function settled(dir)
  local left
  for _ = 1, 20 do
    left = left_behind(dir)
    if #left == 0 then break end
    e2b.sleep(50)
  end
  return left
end

describe("a SIGKILLed e2b-local", function()
  -- A second server with its state in a temporary directory (removed when
  -- the spec ends) and one sandbox left running on it: the directory, the
  -- sandbox, the server's stop() and its pid.
  local function server_with_sandbox()
    local dir = os.tmpname()
    os.remove(dir)
    finally(function() h.host("rm -rf " .. dir) end)
    local vars, stop, pid = h.serve_local("--state " .. dir .. "/s")
    local c = h.client({ api_url = vars.E2B_API_URL, sandbox_url = vars.E2B_SANDBOX_URL,
                         api_key = vars.E2B_API_KEY, domain = vars.E2B_DOMAIN })
    return dir, assert(c:create{ on_close = "leave" }), stop, pid
  end

  it("leaves no process of a sandbox it was creating behind, whenever it dies", function()
    local dir = os.tmpname()
    os.remove(dir)
    h.host("mkdir -p " .. dir)
    local header = os.tmpname() -- the key never goes on curl's command line
    finally(function() h.host("rm -rf " .. dir .. " " .. header) end)
    for i = 1, 20 do
      -- Odd rounds hold each forked sandbox 5 s before its exec (the window
      -- before bwrap's --die-with-parent, longer than settled() waits);
      -- even ones kill the server as bwrap starts.
      local env = i % 2 == 1 and "E2B_LOCAL_SPAWN_HOLD_MS=5000" or ""
      local isolation = i % 3 == 0 and "--no-isolation" or ""
      local vars, stop, pid = h.serve_local(("--state %s/s%d %s"):format(dir, i, isolation), env)
      assert(vars.E2B_API_KEY, "the server did not start")
      h.write_file(header, "X-API-Key: " .. vars.E2B_API_KEY .. "\n")
      h.host(("curl -s -o /dev/null -H @%s -H 'Content-Type: application/json' --data '{\"templateID\":\"base\"}' "
        .. "%s/sandboxes & sleep 0.%03d; kill -KILL %s"):format(header, vars.E2B_API_URL, 2 * i, pid))
      local left = settled(dir)
      stop()
      assert.are.same({}, left, "round " .. i)
    end
  end)

  it("leaves no cgroup directory of its own behind once the next server starts", function()
    local dir, sbx, stop, pid = server_with_sandbox()
    -- its level in each hierarchy, and each sandbox's below it
    local function dirs_of(server_pid, id)
      return h.host(("find /sys/fs/cgroup -maxdepth 5 -type d \\( -name 'server-%s' -o -name '%s' \\) 2>/dev/null | sort")
        :format(server_pid, id))
    end
    local made = dirs_of(pid, sbx.sandbox_id)
    h.host("kill -KILL " .. pid)
    settled(dir)
    local log = stop()
    if made == "" then
      -- a host that lets it make none says so, and leaves nothing
      assert.is_truthy(log:find("sandbox limits NOT enforced", 1, true), log)
      return
    end
    assert.are.equal(made, dirs_of(pid, sbx.sandbox_id), "gone before the next server started")
    local _, stop2 = h.serve_local("--state " .. dir .. "/s2")
    local left = dirs_of(pid, sbx.sandbox_id)
    stop2()
    assert.are.equal("", left, "left of the server SIGKILLed before")
  end)

  it("leaves no process of a paused (frozen) sandbox behind", function()
    local dir, sbx, stop, pid = server_with_sandbox()
    assert(sbx:spawn({ "sleep", "600" }))
    assert(sbx:pause())
    h.host("kill -KILL " .. pid)
    local left = settled(dir)
    stop()
    assert.are.same({}, left)
  end)
end)
