-- Containment of e2b-local's own process: what a sandbox leaves on disk, and
-- what a client sends, never crashes the server or outlives a restart as a
-- crash. Each attack ends with h.assert_healthy (the server still serves and
-- no bystander sandbox was lost).
local h = require("spec.helpers")
local e2b = h.e2b

if h.live then return end

-- Shell text building a tree `depth` directories deep under dir, one
-- relative mkdir + chdir at a time (an absolute path would pass PATH_MAX).
local function deep_tree(dir, depth)
  return ("mkdir -p %s && cd %s && perl -e 'for (1..%d) { mkdir q(d) or die $!; chdir q(d) or die $! }' && echo built")
    :format(dir, dir, depth)
end

local function build_deep(sbx, dir, depth, user)
  local r = assert(sbx:run(deep_tree(dir, depth), { user = user or "user", timeout_ms = 120000 }))
  assert(r.stdout == "built\n", "the deep tree was not built: " .. tostring(r.stderr))
end

-- post(path, body, headers) -> status, decoded body: a raw request to the
-- server under test, its headers (the API key among them) in a private file.
local function post(path, body, headers)
  local file = os.tmpname()
  local f = assert(io.open(file, "w"))
  for k, v in pairs(headers) do f:write(k, ": ", v, "\n") end
  f:close()
  local out = h.host(("curl -s -w '\\n%%{http_code}' -H @%s --data-binary %s '%s%s'")
    :format(file, h.shell_quote(body), os.getenv("E2B_API_URL"), path))
  os.remove(file)
  local text, code = out:match("^(.*)\n(%d+)$")
  local ok, decoded = pcall(require("cjson").decode, text or "")
  return tonumber(code), ok and decoded or text
end

describe("e2b-local containment (server)", function()
  local client
  setup(function() client = h.client() end)
  after_each(h.cleanup)

  it("survives killing a sandbox whose user built a 1,000-deep tree in /tmp", function()
    local bystander = h.sandbox({}, client)
    local sbx = h.sandbox({}, client)
    build_deep(sbx, "/tmp/deep", 1000)
    assert(sbx:kill())
    h.assert_healthy({ bystander }, client)
  end)

  it("removes a 5,000-deep tree root built, with bounded stack", function()
    local bystander = h.sandbox({}, client)
    local sbx = h.sandbox({}, client)
    build_deep(sbx, "/root/deep", 5000, "root")
    assert(sbx:kill())
    h.assert_healthy({ bystander }, client)
  end)

  it("survives deleting a snapshot that holds a 1,000-deep tree", function()
    local bystander = h.sandbox({}, client)
    local sbx = h.sandbox({}, client)
    build_deep(sbx, "/home/user/deep", 1000)
    local name = "deep" .. h.core.uuid4():gsub("-", ""):sub(1, 10)
    assert(sbx:snapshot(name))
    assert(client:delete_snapshot(name))
    h.assert_healthy({ bystander, sbx }, client)
  end)

  it("does not wake a paused auto-resume sandbox for a request without its token", function()
    local bystander = h.sandbox({}, client)
    local sbx = h.sandbox({ lifecycle = { on_timeout = "pause", auto_resume = true } }, client)
    assert(sbx:pause())
    local untrusted = assert(client._h:sandbox(sbx.sandbox_id, "not-the-token"))
    local ok, err = require("e2b.rt").finish(assert(untrusted:stat("/home/user")))
    assert.is_nil(ok)
    assert.are.equal(401, err.status)
    assert.are.equal("paused", assert(client:describe(sbx.sandbox_id)).state)
    -- the right token still wakes it
    assert.are.equal("up\n", assert(sbx:run("echo up")).stdout)
    assert.are.equal("running", assert(client:describe(sbx.sandbox_id)).state)
    h.assert_healthy({ bystander }, client)
  end)

  it("answers a chunked body over 64 MiB with a JSON 413, not a reset", function()
    local bystander = h.sandbox({}, client)
    local header = os.tmpname()
    local f = assert(io.open(header, "w"))
    f:write("X-API-Key: ", os.getenv("E2B_API_KEY"), "\nTransfer-Encoding: chunked\nContent-Type: application/json\n")
    f:close()
    local out = h.host(("head -c 80M /dev/zero | curl -s -w '\\n%%{http_code}' -H @%s --data-binary @- '%s/sandboxes'")
      :format(header, os.getenv("E2B_API_URL")))
    os.remove(header)
    local body, code = out:match("^(.*)\n(%d+)$")
    assert.are.equal("413", code, out)
    assert.truthy(require("cjson").decode(body).message:find("too large", 1, true))
    h.assert_healthy({ bystander }, client)
  end)

  it("refuses JSON numbers out of range with a 400 naming the field", function()
    local bystander = h.sandbox({}, client)
    local code, body = post("/sandboxes", '{"templateID":"base","timeout":1e300}',
      { ["X-API-Key"] = os.getenv("E2B_API_KEY"), ["Content-Type"] = "application/json" })
    assert.are.equal(400, code)
    assert.truthy(body.message:find("timeout", 1, true), body.message)
    -- envd's Connect JSON: a signal number past 2^32 must not wrap into SIGHUP
    local sbx = h.sandbox({ secure = false }, client)
    local proc = assert(sbx:spawn({ "sleep", "60" }))
    local envd = { ["E2b-Sandbox-Id"] = sbx.sandbox_id, ["Content-Type"] = "application/json",
      ["Connect-Protocol-Version"] = "1" }
    code, body = post("/process.Process/SendSignal",
      ('{"process":{"pid":%d},"signal":4294967297}'):format(proc.pid), envd)
    assert.are.equal(400, code)
    assert.are.equal("invalid_argument", body.code)
    code, body = post("/filesystem.Filesystem/ListDir", '{"path":"/home/user","depth":1e300}', envd)
    assert.are.equal(400, code)
    assert.truthy(body.message:find("depth", 1, true), body.message)
    assert.truthy(assert(sbx:run("ps -eo args")).stdout:find("sleep 60", 1, true), "the process was signalled")
    proc:close()
    h.assert_healthy({ bystander, sbx }, client)
  end)
end)

-- A separate e2b-local on its own --state directory, for the restart specs.
local function start_server(state)
  local log = state .. ".log"
  local pid = h.host(("e2b-local serve --listen 127.0.0.1:0 --state %s >%s 2>&1 & echo $!")
    :format(h.shell_quote(state), h.shell_quote(log))):match("%d+")
  local env
  for _ = 1, 300 do
    local f = io.open(log)
    local text = f and f:read("a") or ""
    if f then f:close() end
    local url, key = text:match("E2B_API_URL=(%S+)"), text:match("E2B_API_KEY=(%S+)")
    if url and key and text:find("E2B_LOCAL_ADMIN_TOKEN=", 1, true) then
      env = { api_url = url, sandbox_url = url, domain = text:match("E2B_DOMAIN=(%S+)"), api_key = key }
      break
    end
    if h.host("kill -0 " .. pid .. " 2>/dev/null && echo up") == "" then break end
    e2b.sleep(50)
  end
  local function stop()
    h.host(("kill %s; while kill -0 %s 2>/dev/null; do sleep 0.05; done"):format(pid, pid))
  end
  if not env then
    local f = io.open(log)
    local text = f and f:read("a") or ""
    if f then f:close() end
    stop()
    error("the restarted e2b-local does not serve:\n" .. text:sub(-2000))
  end
  return h.client(env), stop
end

describe("e2b-local containment (restart)", function()
  local state, stop
  before_each(function()
    state = os.tmpname()
    os.remove(state)
  end)
  after_each(function()
    if stop then stop() end
    stop = nil
    h.host("rm -rf " .. h.shell_quote(state) .. " " .. h.shell_quote(state .. ".log"))
  end)

  it("starts on a state directory a sandbox left half-deleted and hostile", function()
    local outside = state .. ".outside"
    h.host(("mkdir -p %s && echo keep > %s/canary"):format(h.shell_quote(outside), h.shell_quote(outside)))
    local c
    c, stop = start_server(state)
    local sbx = assert(c:create({}))
    build_deep(sbx, "/home/user/deep", 1000)
    local kept = assert(c:create({}))
    build_deep(kept, "/tmp/deep", 1000)
    -- a symlink to a host directory: removal must not follow it
    assert(kept:run("ln -s " .. h.shell_quote(outside) .. " /tmp/deep/out && ln -s / /home/user/root"))
    stop()
    local dir = state .. "/sandboxes/" .. sbx.sandbox_id
    -- Half-deleted: the meta.json is gone, the deep tree is still there.
    assert(os.remove(dir .. "/meta.json"))
    -- Planted leftovers: a symlink where a sandbox directory is expected
    -- (whose target must survive), a file, a malformed and a huge meta.json.
    local q = h.shell_quote(state)
    h.host(("ln -s %s %s/sandboxes/ilink; echo junk > %s/sandboxes/ifile"):format(h.shell_quote(outside), q, q))
    h.host(("mkdir -p %s/sandboxes/ibad && echo '{\"state\": \"paused\", \"mounts\": 7, \"timeout\": 1e300}' > %s/sandboxes/ibad/meta.json")
      :format(q, q))
    h.host(("mkdir -p %s/sandboxes/ihuge && truncate -s 3G %s/sandboxes/ihuge/meta.json"):format(q, q))
    h.host(("mkdir -p %s/snapshots/s1 && echo '[1,2' > %s/snapshots/s1/meta.json && ln -s %s %s/volumes/v2")
      :format(q, q, h.shell_quote(outside), q))
    c, stop = start_server(state)
    h.assert_healthy({}, c)
    -- The kept sandbox came back paused; killing it removes its deep tree.
    assert.are.equal("paused", assert(c:describe(kept.sandbox_id)).state)
    assert(c:destroy(kept.sandbox_id))
    h.assert_healthy({}, c)
    assert.are.equal("keep\n", h.host("cat " .. h.shell_quote(outside .. "/canary")))
    assert.are.equal("", h.host("ls -A " .. q .. "/sandboxes"))
    h.host("rm -rf " .. h.shell_quote(outside))
  end)
end)
