-- The sandbox contract's identity, lifecycle and error rules (issue 4), each
-- proved against the backend. Specs using fault injection or e2b-local's
-- internals say so; they run only on e2b-local.
local h = require("spec.helpers")
local e2b = h.e2b

local function fresh_id() return "rule-" .. h.core.uuid4() end

describe("identity", function()
  local client
  setup(function() client = h.client() end)
  after_each(function() if not h.live then h.faults() end h.cleanup() end)

  it("serialises creates of one logical id within a client: one wins, the other is a conflict", function()
    local id = fresh_id()
    local results = e2b.run(function()
      local a = e2b.spawn(function() return { client:create({ id = id }) } end)
      local b = e2b.spawn(function() return { client:create({ id = id }) } end)
      return { a:wait(), b:wait() }
    end)
    local won, conflicts = 0, 0
    for _, r in ipairs(results) do
      if r[1] then won = won + 1; r[1]:kill() else assert.are.equal("conflict", r[2].kind); conflicts = conflicts + 1 end
    end
    assert.are.equal(1, won)
    assert.are.equal(1, conflicts)
  end)

  it("never keeps a duplicate when two clients race for one logical id", function()
    local id = fresh_id()
    local c1, c2 = h.client({ owner = "racer-1" }), h.client({ owner = "racer-2" })
    local results = e2b.run(function()
      local a = e2b.spawn(function() return { c1:create({ id = id }) } end)
      local b = e2b.spawn(function() return { c2:create({ id = id }) } end)
      return { a:wait(), b:wait() }
    end)
    for _, r in ipairs(results) do
      if not r[1] then assert.are.equal("conflict", r[2].kind) end
    end
    assert.is_true(#assert(client:list({ metadata = { lua_e2b_id = id } })) <= 1)
    client:destroy(id)
  end)

  it("finds a sandbox by logical id from a fresh process with another owner", function()
    local id = fresh_id()
    local sbx = h.sandbox({ id = id }, client)
    assert(sbx:pause())
    local code = ([[local c = assert(require("e2b").client{ owner = "elsewhere" })
      local s = assert(c:resume(%q)); io.write(s.sandbox_id, " ", assert(s:info()).state)]]):format(id)
    local out = h.fresh_lua(code)
    assert.are.equal(sbx.sandbox_id .. " running", out)
  end)

  it("walks every page when resolving ids and listing", function()
    local paged = h.client({ page_size = 2 })
    local tag = h.core.uuid4()
    for _ = 1, 5 do h.sandbox({ metadata = { page_batch = tag } }, client) end
    local target = h.sandbox({ id = fresh_id(), metadata = { page_batch = tag } }, client)
    assert.are.equal(6, #assert(paged:list({ metadata = { page_batch = tag } })))
    assert(target:pause())
    assert.are.equal(6, #assert(paged:list({ metadata = { page_batch = tag }, state = { "running", "paused" } })))
    assert.are.equal(target.sandbox_id, assert(paged:resume(target.id)).sandbox_id)
  end)

  it("refuses two sandboxes with one logical id instead of choosing", function()
    local id = fresh_id()
    -- Two allocations with the same id, made behind lua-e2b's back.
    local raw = h.client()
    for _ = 1, 2 do
      local sb = assert(require("e2b.rt").finish(raw._h:create({ metadata = { lua_e2b_id = id } })))
      finally(function() raw:destroy(sb.sandbox_id) end)
    end
    local s, err = client:resume(id)
    assert.is_nil(s)
    assert.are.equal("conflict", err.kind)
    _, err = client:describe(id)
    assert.are.equal("conflict", err.kind)
  end)

  it("describes without resuming, and reports could-not-look as what it is, never not_found", function()
    if h.live then return end
    local sbx = h.sandbox({}, client)
    h.faults({ { match = "GET /v2/sandboxes*", action = "status", status = 503 },
               { match = "GET /sandboxes/*", action = "status", status = 503 } })
    local info, err = h.client({ max_retries = 0 }):describe(sbx.id)
    assert.is_nil(info)
    assert.are.equal("unavailable", err.kind)
    assert.is_true(err.retryable)
    h.faults()
    assert.are.equal("running", assert(client:describe(sbx.id)).state)
  end)
end)

describe("lifecycle", function()
  local client
  setup(function() client = h.client() end)
  after_each(function() if not h.live then h.faults() end h.cleanup() end)

  it("keep_alive only extends the deadline, never shortens it", function()
    local sbx = h.sandbox({ timeout_ms = 600000 }, client)
    local before = assert(sbx:info()).end_at
    assert(sbx:keep_alive(30000))
    assert.is_true(assert(sbx:info()).end_at >= before - 1000)
    assert(sbx:keep_alive(900000))
    local now = h.core.time_ms()
    assert.is_true(math.abs(assert(sbx:info()).end_at - (now + 900000)) < 5000)
  end)

  it("connect and resume never shorten a running sandbox's deadline", function()
    local sbx = h.sandbox({ timeout_ms = 900000 }, client)
    local before = assert(sbx:info()).end_at
    local short = h.client({ timeout_ms = 10000 })
    assert(short:connect(sbx.sandbox_id))
    assert(short:resume(sbx.id))
    assert.is_true(assert(sbx:info()).end_at >= before - 1000)
  end)

  it("gives a paused sandbox the client's lifetime when it resumes", function()
    local sbx = h.sandbox({ timeout_ms = 60000 }, client)
    assert(sbx:pause())
    assert(h.client({ timeout_ms = 200000 }):resume(sbx.id))
    local left = assert(sbx:info()).end_at - h.core.time_ms()
    assert.is_true(left > 150000, "left " .. left)
  end)

  it("tags every sandbox with its owner and reaps an owner's orphans across pages", function()
    local owner = "reaper-" .. h.core.uuid4()
    local mine = h.client({ owner = owner, page_size = 1 })
    local a = h.sandbox({}, mine)
    local b = h.sandbox({}, mine)
    local other = h.sandbox({}, client)
    assert.are.equal(owner, assert(mine:describe(a.sandbox_id)).owner)
    assert.are.same({}, assert(mine:reap({ older_than_ms = 3600000 })))
    local killed = assert(mine:reap({ older_than_ms = 0 }))
    local ids = {}
    for _, info in ipairs(killed) do ids[info.sandbox_id] = true end
    assert.are.equal(2, #killed)
    assert.is_true(ids[a.sandbox_id] and ids[b.sandbox_id])
    assert.are.equal("not_found", select(2, client:describe(a.sandbox_id)).kind)
    assert.are.equal("running", assert(client:describe(other.sandbox_id)).state)
  end)

  it("never pretends a pause: a pause answer on a still-running sandbox is an error; repeats succeed", function()
    local sbx = h.sandbox({}, client)
    if not h.live then
      -- e2b-local answers 409 to the pause without pausing: only looking tells.
      h.faults({ { match = "POST /sandboxes/*/pause", action = "status", status = 409, count = 1 } })
      local ok, err = sbx:pause()
      h.faults()
      assert.is_nil(ok)
      assert.truthy(err.message:find("still running", 1, true), tostring(err))
      assert.are.equal("running", assert(client:describe(sbx.sandbox_id)).state)
    end
    assert.is_true(assert(sbx:pause({ mode = "filesystem" })))
    assert.is_true(assert(sbx:pause({ mode = "filesystem" })))
    assert.are.equal("paused", assert(client:describe(sbx.sandbox_id)).state)
    assert.is_true(assert(sbx:kill()))
    assert.is_true(assert(sbx:kill()))
  end)

  it("pauses filesystem-only: processes end, files stay, and the boot id changes", function()
    local sbx = h.sandbox({}, client)
    local boot = assert(sbx:run("cat /proc/sys/kernel/random/boot_id")).stdout
    assert(sbx.files:write("/home/user/kept", "yes"))
    local proc = assert(sbx:spawn({ "sleep", "300" }))
    proc:detach()
    assert.is_true(assert(sbx:pause({ mode = "filesystem" })))
    assert.is_true(assert(sbx:pause({ mode = "filesystem" })))
    local back = assert(client:connect(sbx.sandbox_id))
    assert.are.equal("yes", assert(back.files:read("/home/user/kept")))
    assert.are_not.equal(boot, assert(back:run("cat /proc/sys/kernel/random/boot_id")).stdout)
    assert.is_nil(assert(back:run("ps -eo args")).stdout:find("sleep 300", 1, true))
  end)

  it("fails a setup that runs past its timeout and destroys the allocation", function()
    local tag = h.core.uuid4()
    local sbx, err = client:create({ metadata = { setup_case = tag },
      setup = { script = "#!/bin/sh\necho slow-setup >&2\nsleep 30\n", timeout_ms = 800 } })
    assert.is_nil(sbx)
    assert.are.equal("timeout", err.kind)
    assert.truthy(err.message:find("slow-setup", 1, true))
    assert.are.equal(0, #assert(client:list({ metadata = { setup_case = tag } })))
  end)

  it("waits for envd with backoff and destroys the allocation when it never answers", function()
    if h.live then return end
    h.faults({ { match = "GET envd:/health", action = "status", status = 502, count = 3 } })
    local sbx = assert(client:create({}))
    assert.is_true(assert(sbx:run("true")).ok)
    sbx:kill()
    h.faults()
    local tag = h.core.uuid4()
    h.faults({ { match = "GET envd:/health", action = "status", status = 502 } })
    local none, err = client:create({ metadata = { ready_case = tag }, ready_timeout_ms = 600 })
    h.faults()
    assert.is_nil(none)
    assert.are.equal("timeout", err.kind)
    assert.are.equal(0, #assert(client:list({ metadata = { ready_case = tag } })))
  end)
end)

describe("network", function()
  local client, host_url, stop, port
  setup(function()
    client = h.client()
    if not h.live then host_url, stop, port = h.http_server("reachable", { internet = true }) end
  end)
  teardown(function() if stop then stop() end end)
  after_each(h.cleanup)

  -- What a sandbox sees of a URL: the HTTP status, or "000" when nothing answered.
  local function status(sbx, url)
    return assert(sbx:run({ "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "3", url })).stdout
  end

  -- An allowed host name, a URL on it, one on a host off the list, and one by raw IP.
  -- On e2b-local they are a web server on the host's loopback the spec starts, marked as
  -- standing in for the internet (the host's loopback itself never is).
  local function targets()
    if h.live then return "example.com", "https://example.com/", "https://e2b.dev/", "https://1.1.1.1/" end
    return "localhost", ("http://localhost:%d/"):format(port), ("http://denied.localhost:%d/"):format(port),
      host_url .. "/"
  end

  it("applies the network policy after setup: setup may use the network", function()
    local _, allowed = targets()
    local sbx = h.sandbox({ network = "none", setup = ("#!/bin/sh\ncurl -s -o /dev/null -w '%%{http_code}' "
      .. "--max-time 5 %s > /tmp/during-setup\n"):format(allowed) }, client)
    assert.are.equal("200", assert(sbx.files:read("/tmp/during-setup")))
    assert.are.equal("000", status(sbx, allowed))
  end)

  it("changes the egress policy of a live sandbox, each change holding for the next connection", function()
    local host, allowed, _, ip = targets()
    local sbx = h.sandbox({}, client)
    assert.are.equal("200", status(sbx, allowed))
    assert.is_true(assert(sbx:set_network("none")))
    assert.are.equal("000", status(sbx, allowed))
    assert.is_true(assert(sbx:set_network({ allow = { host } })))
    assert.are.equal("200", status(sbx, allowed))
    assert.are.equal("000", status(sbx, ip))
    assert.is_true(assert(sbx:set_network("all")))
    assert.are.equal("200", status(sbx, ip))
    local _, err = sbx:set_network({ allow = { "a.com" }, deny = { "10.0.0.0/8" } })
    assert.are.equal("unsupported", err.kind)
  end)

  it("verify_egress calls an enforced allow-list filtered, observed from inside", function()
    local host, allowed, denied, ip = targets()
    if not h.live then
      -- With open egress every target answers: the verdict rests on what is observable.
      local open = h.sandbox({}, client)
      assert.are.equal("200", status(open, allowed))
      assert.are.equal("200", status(open, denied))
      assert.are.equal("200", status(open, ip))
    end
    local verdict, report = client:verify_egress({ allow_host = host, allowed_url = allowed,
      denied_url = denied, ip_url = ip, timeout_ms = 3000 })
    assert.are.equal("filtered", verdict, report.detail)
    assert.are.equal(200, report.allowed_code)
  end)

  it("verify_egress is inconclusive when it could not observe, never filtered", function()
    local host, _, denied, ip = targets()
    -- nothing listens on port 1: the allowed host cannot answer
    local verdict, report = client:verify_egress({ allow_host = host, allowed_url = "http://" .. host .. ":1/",
      denied_url = denied, ip_url = ip, timeout_ms = 2000 })
    assert.are.equal("inconclusive", verdict, report.detail)
  end)
end)

describe("snapshots and volumes", function()
  local client
  setup(function() client = h.client() end)
  after_each(h.cleanup)

  it("snapshots a sandbox, restores its files in a new one, replaces by name and deletes", function()
    local name = "snap-" .. h.core.uuid4():sub(1, 8)
    local sbx = h.sandbox({}, client)
    assert(sbx.files:write("/home/user/state.txt", "v1"))
    local snap = assert(sbx:snapshot(name))
    assert.is_string(snap.id)
    assert(sbx.files:write("/home/user/state.txt", "v2"))
    assert(sbx:snapshot(name))
    local found = assert(client:snapshots(name))
    assert.are.equal(1, #found)
    local restored = h.sandbox({ template = found[1].id }, client)
    assert.are.equal("v2", assert(restored.files:read("/home/user/state.txt")))
    -- as on E2B, not while a sandbox made from it runs
    local ok, err = client:delete_snapshot(name)
    assert.is_nil(ok)
    assert.are.equal("invalid_argument", err.kind)
    assert(restored:kill())
    assert.is_true(assert(client:delete_snapshot(name)))
    assert.is_true(assert(client:delete_snapshot(name)))
    assert.are.equal(0, #assert(client:snapshots(name)))
  end)

  it("creates, mounts (path required), lists and deletes volumes", function()
    local name = "vol-" .. h.core.uuid4():sub(1, 8)
    local vol = assert(client:create_volume(name))
    assert.are.equal(name, vol.name)
    local a = h.sandbox({ volumes = { ["/mnt/shared"] = name } }, client)
    assert(a.files:write("/mnt/shared/note", "from a"))
    local b = h.sandbox({ volumes = { ["/data"] = name } }, client)
    assert.are.equal("from a", assert(b.files:read("/data/note")))
    local listed = false
    for _, v in ipairs(assert(client:volumes())) do listed = listed or v.name == name end
    assert.is_true(listed)
    local _, err = client:create({ volumes = { ["relative/path"] = name } })
    assert.are.equal("invalid_argument", err.kind)
    a:kill(); b:kill()
    assert.is_true(assert(client:delete_volume(name)))
    assert.is_true(assert(client:delete_volume(name)))
  end)
end)

describe("errors and retries", function()
  after_each(function() h.faults() h.cleanup() end)
  if h.live then return end

  it("retries idempotent calls after 5xx with backoff", function()
    local c = h.client()
    h.faults({ { match = "GET /v2/sandboxes", action = "status", status = 503, count = 2 } })
    assert.is_true(assert(c:probe()))
  end)

  it("maps 429 to rate_limited with retry_after, honouring Retry-After before retrying", function()
    local c = h.client({ max_retries = 1 })
    h.faults({ { match = "GET /v2/sandboxes", action = "status", status = 429, retry_after_s = 1 } })
    local t0 = h.now_ms()
    local ok, err = c:probe()
    assert.is_nil(ok)
    assert.are.equal("rate_limited", err.kind)
    assert.are.equal(1000, err.retry_after_ms)
    assert.is_true(err.retryable)
    assert.is_true(h.now_ms() - t0 >= 900, "waited for Retry-After before the retry")
  end)

  it("never retries a create that may have been processed", function()
    local c = h.client()
    local tag = h.core.uuid4()
    h.faults({ { match = "POST /v2/sandboxes", action = "drop", count = 1 } })
    local sbx, err = c:create({ metadata = { retry_case = tag } })
    assert.is_nil(sbx)
    assert.are.equal("unavailable", err.kind)
    h.faults()
    assert.are.equal(0, #assert(c:list({ metadata = { retry_case = tag } })))
  end)

  it("reports 401 and 403 as auth, not retryable", function()
    local c = h.client()
    h.faults({ { match = "GET /v2/sandboxes", action = "status", status = 403 } })
    local _, err = c:probe()
    assert.are.equal("auth", err.kind)
    assert.is_false(err.retryable)
  end)

  it("caps concurrent control-plane requests per client", function()
    h.faults({ { match = "GET /v2/sandboxes", action = "stall", ms = 300 } })
    local c = h.client({ max_concurrent = 2 })
    local t0 = h.now_ms()
    e2b.run(function()
      local tasks = {}
      for i = 1, 6 do tasks[i] = e2b.spawn(function() return assert(c:probe()) end) end
      for i = 1, 6 do tasks[i]:wait() end
    end)
    -- 6 stalled calls, 2 at a time: at least three rounds of the stall.
    assert.is_true(h.now_ms() - t0 >= 850, "took " .. (h.now_ms() - t0))
  end)
end)

describe("looking at the backend", function()
  after_each(h.cleanup)

  it("doctor reports what the backend supports, found by trying", function()
    local report = assert(h.client():doctor())
    assert.is_true(report.auth)
    assert.is_string(report.create_route)
    assert.is_string(report.envd_version)
    assert.is_true(report.envd)
    assert.is_true(report.stdin_close)
    assert.is_false(report.group_signals) -- envd signals one pid, as E2B
  end)

  it("doctor fails loudly on a bad key instead of hanging", function()
    local report = assert(h.client({ api_key = "e2b_bad" }):doctor())
    assert.is_false(report.auth)
    assert.truthy(report.notes)
  end)

  it("accepts API keys of any format (self-hosted keys differ)", function()
    local c = h.client({ api_key = "not-an-e2b-format-key" })
    local _, err = c:probe()
    assert.are.equal("auth", err.kind) -- refused by the server, not by the client
    assert.are.equal(401, err.status)
  end)
end)
