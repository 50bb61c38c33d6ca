-- OpenResty integration: Debian's nginx-light + libnginx-mod-http-lua, one
-- worker, lua-e2b on LuaJIT with the e2b.ngx adapter, against the e2b-local
-- this runs under. Each describe starts its own nginx on a free loopback
-- port with a temp prefix and stops it. Run by scripts/test.sh:
--   e2b-local exec -- busted --lua=lua5.4 --pattern=_test spec/ngx
local nginx = require("spec.ngx.nginx")
local cases = require("spec.ngx.cases")
local cjson = require("cjson")
local socket = require("socket")

assert((os.getenv("E2B_API_URL") or ""):match("^http://127%.0%.0%.1[:/]") or
  (os.getenv("E2B_API_URL") or ""):match("^http://localhost[:/]"),
  "run under `e2b-local exec -- busted --lua=lua5.4 --pattern=_test spec/ngx`")

local function urlencode(s)
  return (s:gsub("[^%w%-_.~]", function(c) return ("%%%02X"):format(c:byte()) end))
end

-- Polls fn every 50 ms until it returns a truthy value or max_ms pass.
local function eventually(fn, max_ms, what)
  local deadline = nginx.now_ms() + max_ms
  while true do
    local v = fn()
    if v then return v end
    if nginx.now_ms() > deadline then error("gave up waiting for " .. what, 2) end
    socket.sleep(0.05)
  end
end

local APP = 'content_by_lua_block { require("spec.ngx.app").%s() }'

describe("OpenResty (nginx + LuaJIT, e2b.ngx)", function()
  local srv
  setup(function()
    srv = nginx.start{
      http = [[
  init_by_lua_block { require("spec.ngx.app").try_wait("init") }
  init_worker_by_lua_block { require("spec.ngx.app").try_wait("init_worker") }
]],
      server = ([[
    location = /plain { return 200 "plain\n"; }
    location = /scheduler { %s }
    location = /case { %s }
    location = /sandbox { %s }
    location = /stream { %s }
    location = /go { %s }
    location = /phases { %s }
    location = /stats { %s }
    location = /idle { %s }
    location = /cleanup { %s }
    location = /abortable { lua_check_client_abort on; %s }
]]):format(APP:format("scheduler"), APP:format("case"), APP:format("sandbox"),
        APP:format("stream"), APP:format("go"), APP:format("phases"), APP:format("stats"),
        APP:format("idle"), APP:format("cleanup"), APP:format("abortable")),
    }
  end)
  teardown(function() if srv then srv:remove() end end)

  it("picks e2b.ngx by itself under nginx", function()
    assert.are.equal("ngx\n", srv:get("/scheduler").body)
  end)

  for _, c in ipairs(cases.cases) do
    it("behaviour table: " .. c.name, function()
      local r = srv:get("/case?name=" .. urlencode(c.name), 120000)
      assert.are.equal(200, r.status)
      assert.are.equal("ok\n", r.body)
    end)
  end

  it("runs two sandbox requests at once in one worker while a plain location answers within 100 ms",
    function()
      local a, b = srv:open("/sandbox"), srv:open("/sandbox")
      local plain = {}
      while not (a:pump() and b:pump()) do
        local p = srv:get("/plain", 5000)
        assert.are.equal("plain\n", p.body)
        plain[#plain + 1] = p.elapsed
        socket.select({ a.sock, b.sock }, nil, 0.02)
        assert.is_true(nginx.now_ms() - a.t0 < 10000, "the sandbox requests did not finish")
      end
      for _, r in ipairs({ a, b }) do
        assert.are.equal(200, r.status, r.body)
        local t = cjson.decode(r.body)
        assert.are.equal("slept\n", t.stdout)
        assert.are.equal("ngx", t.scheduler)
        -- Each ran a 1 s command; one after the other would take over 2 s.
        assert.is_true(r.elapsed >= 1000 and r.elapsed < 1800, ("took %.0f ms"):format(r.elapsed))
      end
      table.sort(plain)
      assert.is_true(#plain >= 10, "only " .. #plain .. " plain requests while they ran")
      assert.is_true(plain[#plain] < 100, ("a plain request took %.0f ms"):format(plain[#plain]))
    end)

  it("relays a process's output to the client chunk by chunk", function()
    local id = "ngx-stream-" .. os.time() .. "-" .. math.random(1e6)
    local r = srv:open("/stream?id=" .. id)
    -- "second" is only printed after /go, so "first" arriving first shows it
    -- was flushed while the process still ran.
    local body = r:wait_for("first\n", 20000)
    assert.is_nil(body:find("second", 1, true))
    assert.is_false(r.done)
    assert.are.equal("ok\n", srv:get("/go?id=" .. id, 20000).body)
    r:wait(20000)
    assert.are.equal(200, r.status)
    assert.are.equal("first\nsecond\n", r.body)
    assert.is_true(#r.chunks >= 2)
  end)

  -- Polling curl's sockets every 16 ms wakes the pump 62 times a second;
  -- sleeping until a socket is ready or the core's next deadline, once (its
  -- sweep), in the quietest of three seconds (app.lua). The worker's CPU in
  -- that second moved with the machine (0.3-4 ms sleeping, 3.7-10 polling,
  -- 2.03 once in a fresh set-up), so the wake-ups are what is counted.
  it("waits for a command without burning the worker's CPU", function()
    local r = srv:get("/idle", 30000)
    assert.are.equal(200, r.status, r.body)
    local t = cjson.decode(r.body)
    assert.are.equal("idle\n", t.stdout)
    assert.is_true(t.bridged, "the pump did not sleep on the readiness bridge")
    assert.is_true(t.steps <= 5, ("the pump woke %d times in its quietest second (%.2f ms of CPU)"):format(t.steps, t.cpu_ms))
  end)

  -- Where the bridge is unavailable (or turned off) the pump polls.
  for _, name in ipairs({ "a process's output streams through read() byte-exact",
    "stdin is fed while output is read", "files move both ways through the loop" }) do
    it("behaviour table, polling instead of the readiness bridge: " .. name, function()
      local r = srv:get("/case?bridge=0&name=" .. urlencode(name), 120000)
      assert.are.equal(200, r.status)
      assert.are.equal("ok\n", r.body)
    end)
  end

  it("refuses to wait in init_by_lua and init_worker_by_lua, naming the phase", function()
    local t = cjson.decode(srv:get("/phases").body)
    for _, phase in ipairs({ "init", "init_worker" }) do
      assert.truthy(t[phase]:find("cannot wait in nginx's " .. phase .. " phase", 1, true), t[phase])
    end
  end)

  it("forgets the wait of a request whose client hung up", function()
    local r = srv:open("/abortable")
    r:wait_for("waiting\n", 20000)
    eventually(function() return cjson.decode(srv:get("/stats").body).waiting >= 1 end, 5000,
      "the parked wait")
    r.sock:close()
    eventually(function()
      local t = cjson.decode(srv:get("/stats").body)
      return t.waiting == 0 and t.requests == 0
    end, 10000, "the adapter to forget the aborted wait")
  end)

  it("leaves no [error] in nginx's log", function()
    assert.are.equal("ok\n", srv:get("/cleanup", 20000).body)
    srv:stop()
    assert.are.same({}, srv:errors())
  end)
end)

-- The example gateway as shipped, on a free port with `workers` workers.
local function start_gateway(workers)
  local dir = nginx.served_root() .. "/examples/openresty"
  local text = nginx.read(nginx.ROOT .. "/examples/openresty/nginx.conf")
  local function sub(from, to)
    local i, j = text:find(from, 1, true)
    assert(i, "examples/openresty/nginx.conf no longer has " .. from)
    text = text:sub(1, i - 1) .. to .. text:sub(j + 1)
  end
  return nginx.start{ conf = function(port)
    sub("worker_processes auto;", ("worker_processes %d;"):format(workers))
    -- reuseport: the kernel spreads connections over the workers (without
    -- it, one worker may accept them all and no race is tried)
    sub("listen 127.0.0.1:8080;", ("listen 127.0.0.1:%d%s;"):format(port, workers > 1 and " reuseport" or ""))
    sub("error_log stderr info;", "error_log logs/error.log info;")
    sub("pid /tmp/e2b-gateway.pid;", "pid logs/nginx.pid;")
    sub('lua_package_path "$prefix/?.lua;;";', ('lua_package_path "%s/?.lua;%s;";')
      :format(dir, os.getenv("E2B_NGX_LUA_PATH") or ""))
    if os.getenv("E2B_NGX_LUA_CPATH") then
      sub("http {", ('http {\n  lua_package_cpath "%s;";'):format(os.getenv("E2B_NGX_LUA_CPATH")))
    end
    return text
  end }
end

describe("examples/openresty gateway with two workers", function()
  local srv, user
  setup(function()
    user = "race" .. os.time() .. math.random(1e6)
    srv = start_gateway(2)
  end)
  teardown(function()
    if srv then srv:remove() end
    local client = require("e2b").client{}
    if client then client:destroy("gateway-" .. user) end
  end)

  it("gives a user's concurrent first requests, spread over both workers, one sandbox", function()
    local reqs = {}
    for i = 1, 20 do
      reqs[i] = srv:open("/run?user=" .. user, { method = "POST", body = "echo " .. i })
    end
    local ids = {}
    for i, r in ipairs(reqs) do
      r:wait(120000)
      assert.are.equal(200, r.status, r.body)
      assert.are.equal(i .. "\n[exit 0]\n", r.body)
      ids[r.headers:match("X%-Sandbox%-Id: (%S+)")] = true
    end
    local distinct = {}
    for id in pairs(ids) do distinct[#distinct + 1] = id end
    assert.are.equal(1, #distinct, table.concat(distinct, " "))
    local client = assert(require("e2b").client{})
    local carrying = assert(client:list{ metadata = { lua_e2b_id = "gateway-" .. user } })
    assert.are.equal(1, #carrying)
    assert.are.equal(distinct[1], carrying[1].sandbox_id)
    assert.are.equal(2, #srv:worker_pids())
  end)
end)

describe("examples/openresty gateway", function()
  local srv, user
  local function run(cmd)
    return srv:open("/run?user=" .. user, { method = "POST", body = cmd })
  end

  setup(function()
    user = "spec" .. os.time() .. math.random(1e6)
    srv = start_gateway(1)
  end)
  teardown(function()
    if srv then srv:remove() end
    local client = require("e2b").client{}
    if client then client:destroy("gateway-" .. user) end
  end)

  it("creates the caller's sandbox, finds it again by logical id and streams the output", function()
    local first = run("echo hello > /tmp/mark; echo made"):wait(30000)
    assert.are.equal(200, first.status, first.body)
    assert.are.equal("made\n[exit 0]\n", first.body)
    local sandbox_id = first.headers:match("X%-Sandbox%-Id: (%S+)")
    assert.truthy(sandbox_id)

    -- Output flows while the command runs: it waits for a second request,
    -- which must land in the same sandbox.
    local gated = run("echo first; while [ ! -e /tmp/go ]; do sleep 0.02; done; cat /tmp/mark")
    gated:wait_for("first\n", 20000)
    assert.is_false(gated.done)
    local go = run("touch /tmp/go"):wait(20000)
    assert.are.equal("[exit 0]\n", go.body)
    assert.are.equal(sandbox_id, go.headers:match("X%-Sandbox%-Id: (%S+)"))
    gated:wait(20000)
    assert.are.equal("first\nhello\n[exit 0]\n", gated.body)
  end)

  it("stops the command when the caller hangs up", function()
    local r = run("echo started; sleep 30; echo never")
    r:wait_for("started\n", 20000)
    r.sock:close()
    eventually(function()
      return run("pgrep -x sleep >/dev/null && echo running || echo stopped"):wait(20000)
        .body == "stopped\n[exit 0]\n"
    end, 10000, "the command to stop")
  end)

  it("rejects a request without a valid user or command", function()
    assert.are.equal(400, srv:open("/run?user=a%20b", { method = "POST", body = "true" }):wait().status)
    assert.are.equal(400, srv:open("/run?user=x", { method = "POST", body = "" }):wait().status)
    assert.are.equal(405, srv:get("/run?user=x").status)
  end)

  it("leaves no [error] in nginx's log", function()
    srv:stop()
    assert.are.same({}, srv:errors())
  end)
end)
