-- Sandbox lifecycle: create, identity, describe, list, timeouts, pause,
-- connect, kill, close and the errors each returns.
local h = require("spec.helpers")
local e2b = h.e2b

local function fresh_id()
  return "spec-" .. h.core.uuid4()
end

describe("sandbox lifecycle", function()
  local client
  setup(function() client = h.client() end)
  after_each(h.cleanup)

  it("creates a ready sandbox with a generated UUIDv4 logical id", function()
    local sbx = h.sandbox({}, client)
    assert.truthy(sbx.id:match("^%x+%-%x+%-4%x+%-[89ab]%x+%-%x+$"))
    assert.is_string(sbx.sandbox_id)
    assert.are_not.equal(sbx.id, sbx.sandbox_id)
    assert.are.equal("base", sbx.template)
    assert.is_true(assert(sbx:run("true")).ok)
  end)

  it("records the logical id and metadata, found again by describe from another client", function()
    local id = fresh_id()
    local sbx = h.sandbox({ id = id, metadata = { team = "blue" } }, client)
    assert.are.equal(id, sbx.id)
    local other = h.client()
    local info = assert(other:describe(id))
    assert.are.equal(id, info.id)
    assert.are.equal(sbx.sandbox_id, info.sandbox_id)
    assert.are.equal("running", info.state)
    assert.are.same({ team = "blue" }, info.metadata)
    assert.is_true(info.end_at > info.started_at)
    -- describe also takes the provider id
    assert.are.equal(id, assert(other:describe(sbx.sandbox_id)).id)
  end)

  it("fails a duplicate logical id with conflict and leaves the existing sandbox alone", function()
    local id = fresh_id()
    local first = h.sandbox({ id = id }, client)
    local dup, err = client:create({ id = id })
    assert.is_nil(dup)
    assert.are.equal("conflict", err.kind)
    assert.are.equal("running", assert(client:describe(id)).state)
    assert.is_true(assert(first:run("true")).ok)
    assert.are.equal(1, #assert(client:list({ metadata = { lua_e2b_id = id } })))
  end)

  it("describes an unknown id as not_found", function()
    local info, err = client:describe("no-such-sandbox-" .. h.core.uuid4())
    assert.is_nil(info)
    assert.are.equal("not_found", err.kind)
    assert.is_false(err.retryable)
  end)

  it("lists by metadata and by state, walking every page", function()
    local tag = h.core.uuid4()
    local a = h.sandbox({ metadata = { batch = tag } }, client)
    local b = h.sandbox({ metadata = { batch = tag } }, client)
    h.sandbox({ metadata = { batch = "other" } }, client)
    local found = assert(client:list({ metadata = { batch = tag } }))
    local ids = {}
    for _, info in ipairs(found) do ids[info.sandbox_id] = true end
    assert.are.equal(2, #found)
    assert.is_true(ids[a.sandbox_id] and ids[b.sandbox_id])
    assert(b:pause())
    local paused = assert(client:list({ metadata = { batch = tag }, state = { "paused" } }))
    assert.are.equal(1, #paused)
    assert.are.equal(b.sandbox_id, paused[1].sandbox_id)
    local running = assert(client:list({ metadata = { batch = tag }, state = { "running" } }))
    assert.are.equal(1, #running)
    assert.are.equal(a.sandbox_id, running[1].sandbox_id)
  end)

  it("sets the lifetime from timeout_ms and set_timeout moves end_at exactly", function()
    local sbx = h.sandbox({ timeout_ms = 120000 }, client)
    local info = assert(sbx:info())
    assert.is_true(math.abs(info.end_at - info.started_at - 120000) < 3000)
    assert(sbx:set_timeout(30000))
    local later = assert(sbx:info())
    local now = h.core.time_ms()
    assert.is_true(math.abs(later.end_at - (now + 30000)) < 3000, "end_at " .. later.end_at - now)
    local _, err = sbx:set_timeout(0)
    assert.are.equal("invalid_argument", err.kind)
  end)

  it("pauses in memory: files and processes survive, connect resumes them with the same pid", function()
    local sbx = h.sandbox({}, client)
    assert(sbx.files:write("/home/user/keep.txt", "kept"))
    local proc = assert(sbx:spawn("i=0; while true; do i=$((i+1)); echo $i > /tmp/c.new; mv /tmp/c.new /tmp/counter; sleep 0.1; done"))
    proc:detach()
    assert.is_true(h.eventually(function() return sbx.files:exists("/tmp/counter") end))
    assert.is_true(assert(sbx:pause({ mode = "memory" })))
    local info = assert(client:describe(sbx.sandbox_id))
    assert.are.equal("paused", info.state)
    -- pause again: it is paused, so this succeeds
    assert.is_true(assert(sbx:pause()))
    -- describe never resumes
    assert.are.equal("paused", assert(client:describe(sbx.sandbox_id)).state)
    local again = assert(client:connect(sbx.sandbox_id))
    assert.are.equal("running", assert(again:info()).state)
    assert.are.equal("kept", assert(again.files:read("/home/user/keep.txt")))
    local r = assert(again:run("ps -o pid= -p " .. proc.pid))
    assert.are.equal(tostring(proc.pid), (r.stdout:gsub("%s", "")))
    local c1 = tonumber(assert(again.files:read("/tmp/counter")))
    e2b.sleep(400)
    local c2 = tonumber(assert(again.files:read("/tmp/counter")))
    assert.is_true(c2 > c1, "process continued after resume")
    proc:close()
  end)

  it("kills idempotently; afterwards describe is not_found", function()
    local sbx = h.sandbox({}, client)
    assert.is_true(assert(sbx:kill()))
    assert.is_true(assert(sbx:kill()))
    local info, err = client:describe(sbx.sandbox_id)
    assert.is_nil(info)
    assert.are.equal("not_found", err.kind)
    assert.is_true(assert(client:destroy(sbx.sandbox_id)))
  end)

  it("destroys by logical id", function()
    local id = fresh_id()
    h.sandbox({ id = id }, client)
    assert.is_true(assert(client:destroy(id)))
    local _, err = client:describe(id)
    assert.are.equal("not_found", err.kind)
  end)

  it("kills an owned sandbox on close and when its <close> variable goes out of scope", function()
    local sbx = assert(client:create({}))
    sbx:close()
    assert.are.equal("not_found", select(2, client:describe(sbx.sandbox_id)).kind)
    local id
    do
      local scoped <close> = assert(client:create({}))
      id = scoped.sandbox_id
      assert.is_true(assert(scoped:run("true")).ok)
    end
    assert.are.equal("not_found", select(2, client:describe(id)).kind)
  end)

  it("never kills a connected sandbox on close", function()
    local sbx = h.sandbox({}, client)
    local attached = assert(client:connect(sbx.sandbox_id))
    attached:close()
    assert.are.equal("running", assert(client:describe(sbx.sandbox_id)).state)
  end)

  it("leaves or pauses an owned sandbox on close when asked", function()
    local left = h.sandbox({ on_close = "leave" }, client)
    left:close()
    assert.are.equal("running", assert(client:describe(left.sandbox_id)).state)
    local paused = h.sandbox({ on_close = "pause" }, client)
    paused:close()
    assert.are.equal("paused", assert(client:describe(paused.sandbox_id)).state)
  end)

  it("resumes by logical id, and refuses an unknown one without allocating", function()
    local id = fresh_id()
    local sbx = h.sandbox({ id = id }, client)
    assert(sbx:pause())
    local back = assert(h.client():resume(id))
    assert.are.equal(sbx.sandbox_id, back.sandbox_id)
    assert.are.equal("running", assert(back:info()).state)
    local before = #assert(client:list())
    local none, err = client:resume(fresh_id())
    assert.is_nil(none)
    assert.are.equal("not_found", err.kind)
    assert.are.equal(before, #assert(client:list()))
  end)

  it("never shortens a deadline on resume: a paused sandbox gets back the lifetime it was created with", function()
    local id = fresh_id()
    local sbx = h.sandbox({ id = id, timeout_ms = 600000 }, client)
    assert(sbx:pause())
    local back = assert(h.client():resume(id)) -- another client: what it knows is in the metadata
    local left = assert(back:info()).end_at - os.time() * 1000
    assert.is_true(left > 590000 and left <= 601000, tostring(left))
    assert.is_nil(back.metadata.lua_e2b_timeout_ms) -- libe2b's key, not the caller's metadata
  end)

  it("never keeps two sandboxes for one id when two clients race to create it", function()
    for _ = 1, 4 do
      local id = fresh_id()
      local results = {}
      e2b.run(function()
        local tasks = {}
        for i = 1, 2 do
          local c = h.client() -- two clients: creates of one client queue behind each other
          tasks[i] = e2b.spawn(function() return c:create{ id = id, on_close = "leave" } end)
        end
        for i, t in ipairs(tasks) do results[i] = { t:wait() } end
      end)
      local carrying = assert(client:list{ metadata = { lua_e2b_id = id } })
      assert.is_true(#carrying <= 1, tostring(#carrying))
      for _, r in ipairs(results) do
        if r[1] then
          assert.are.equal(carrying[1].sandbox_id, r[1].sandbox_id)
        else
          assert.are.equal("conflict", r[2].kind, tostring(r[2]))
        end
      end
      if #carrying == 1 then assert(client:destroy(id)) end
    end
  end)

  it("refuses the metadata keys libe2b reserves, before anything is created", function()
    local before = #assert(client:list())
    for _, key in ipairs({ "lua_e2b_id", "lua_e2b_owner", "lua_e2b_timeout_ms", "lua_e2b_future" }) do
      local none, err = client:create{ metadata = { [key] = "1" } }
      assert.is_nil(none)
      assert.are.equal("invalid_argument", err.kind)
      assert.truthy(err.message:find("metadata." .. key, 1, true), err.message)
    end
    assert.are.equal(before, #assert(client:list()))
  end)

  it("accepts the E2B sandbox id wherever it takes an id, so resume-else-create never duplicates", function()
    local id = fresh_id()
    local sbx = h.sandbox({ id = id }, client)
    assert(sbx:pause())
    local back = assert(client:resume(sbx.sandbox_id))
    assert.are.equal(sbx.sandbox_id, back.sandbox_id)
    assert.are.equal(id, back.id)
    assert.are.equal("running", assert(back:info()).state)
    assert.are.equal(1, #assert(client:list({ metadata = { lua_e2b_id = id } })))
  end)

  it("names calls that exist in the paused-sandbox hint, and the handle can connect itself", function()
    local sbx = h.sandbox({}, client)
    assert(sbx:pause())
    local _, err = sbx:run("true")
    assert.truthy(err, "a command on a paused sandbox must fail")
    local hint = err.message:match("%((the sandbox is paused[^)]*)%)")
    assert.truthy(hint, err.message)
    for call in hint:gmatch("([%w_.:]+)%(%)") do
      local obj, name = call:match("^(%w+)[:.]([%w_]+)$")
      local target = obj == "client" and client or sbx
      assert.is_function(target[name or call], call .. " is named by the hint but does not exist")
    end
    assert.are.equal(sbx, assert(sbx:connect()))
    assert.are.equal("running", assert(client:describe(sbx.sandbox_id)).state)
    assert.are.equal("ok\n", assert(sbx:run("echo ok")).stdout)
  end)

  it("forks a sandbox into new ones from its files, the parent going on; all or nothing", function()
    local parent = h.sandbox({ env = { FROM = "parent" } }, client)
    assert(parent.files:write("/home/user/state.txt", "forked state"))
    local forks = assert(parent:fork({ count = 2, timeout_ms = 60000 }))
    assert.are.equal(2, #forks)
    for _, f in ipairs(forks) do
      assert.are_not.equal(parent.sandbox_id, f.sandbox_id)
      assert.are.equal("forked state", assert(f.files:read("/home/user/state.txt")))
      assert.are.equal("parent\n", assert(f:run("echo $FROM")).stdout)
    end
    assert(forks[1].files:write("/home/user/only1", "x"))
    assert.is_false(forks[2].files:exists("/home/user/only1"))
    assert.are.equal("running", assert(parent:info()).state)
    for _, f in ipairs(forks) do assert(f:kill()) end
    local none, err = parent:fork({ count = 101 })
    assert.is_nil(none)
    assert.are.equal("invalid_argument", err.kind)
    assert.truthy(err.message:find("count", 1, true))
    assert(parent:kill())
    none, err = parent:fork()
    assert.is_nil(none)
    assert.are.equal("not_found", err.kind)
  end)

  it("gives a fork an identity of its own: the parent's logical id still names the parent alone", function()
    local id = fresh_id()
    local parent = h.sandbox({ id = id, metadata = { spec = id } }, client)
    local forker = h.client({ owner = "spec-forker" })
    local pview = assert(forker:resume(id))
    local forks = assert(pview:fork({ count = 2, timeout_ms = 60000 }))
    local other = h.client()
    for _, f in ipairs(forks) do
      -- found by its sandbox id, which is its logical id; the caller's metadata
      -- comes along, lua-e2b's keys are its own (owner: the forking client's)
      assert.are.equal(f.sandbox_id, f.id)
      local info = assert(other:describe(f.sandbox_id))
      assert.are.equal(f.sandbox_id, info.id)
      assert.are.equal("spec-forker", info.owner)
      assert.are.same({ spec = id }, info.metadata)
    end
    assert.are.equal(3, #assert(other:list({ metadata = { spec = id } })))
    -- describe, resume and destroy by the parent's logical id find the parent, no conflict
    assert.are.equal(parent.sandbox_id, assert(other:describe(id)).sandbox_id)
    assert.are.equal(parent.sandbox_id, assert(other:resume(id)).sandbox_id)
    assert(other:destroy(id))
    local _, err = other:describe(id)
    assert.are.equal("not_found", err.kind)
    for _, f in ipairs(forks) do assert.are.equal("running", assert(other:describe(f.sandbox_id)).state) end
    for _, f in ipairs(forks) do assert(f:kill()) end
  end)

  it("gives a fork the parent's egress policy and lifecycle, not the defaults", function()
    local url, stop = h.http_server("host page", { internet = true })
    local get = { "curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", url .. "/" }
    local open = h.sandbox({}, client)
    assert.are.equal("200", assert(open:run(get)).stdout) -- what no policy gives
    local parent = h.sandbox({ network = { deny = { "127.0.0.1/32" } }, lifecycle = { on_timeout = "pause" } }, client)
    local forks = assert(parent:fork({ timeout_ms = 3000 }))
    local ok, got = pcall(function() return assert(forks[1]:run(get)).stdout end)
    stop()
    assert(ok, got)
    assert.are.equal("000", got)
    -- at its deadline the fork is paused, as its parent would be, not killed
    local state
    for _ = 1, 150 do
      state = assert(client:describe(forks[1].sandbox_id)).state
      if state ~= "running" then break end
      e2b.sleep(100)
    end
    assert(forks[1]:kill())
    assert.are.equal("paused", state)
  end)

  it("makes a fork all or nothing: when one does not start, those that did are killed and the snapshot dropped", function()
    local parent = h.sandbox({}, client)
    local seed = tonumber(os.getenv("SPEC_FORK_SEED") or "6")
    h.faults({ { match = "POST /v2/sandboxes", action = "status", status = 503, probability = 0.5, count = 1 } }, seed)
    local forks, err = parent:fork({ count = 3, timeout_ms = 60000 })
    h.faults()
    assert.is_nil(forks)
    assert.are.equal("unavailable", err.kind)
    assert.are.equal("fork", err.op)
    local started = tonumber(err.message:match("the (%d+) that did were killed"))
    assert.is_true(started and started >= 1, err.message)
    local left = assert(client:list({ state = { "running" } }))
    assert.are.equal(1, #left, "only the parent runs")
    assert.are.equal(parent.sandbox_id, left[1].sandbox_id)
    for _, snap in ipairs(assert(client:snapshots())) do -- the fork's is named after the parent
      assert.is_nil(snap.snapshot_id:find(parent.sandbox_id, 1, true), snap.snapshot_id)
    end
  end)

  it("refuses to fork a paused sandbox with conflict, as E2B does, and leaves no snapshot", function()
    local parent = h.sandbox({}, client)
    assert(parent:pause())
    local before = #assert(client:snapshots())
    local forks, err = parent:fork()
    assert.is_nil(forks)
    assert.are.equal("conflict", err.kind)
    assert.truthy(err.message:find("paused", 1, true))
    assert.are.equal(before, #assert(client:snapshots()))
  end)

  it("gives forks the official SDKs' 300 s lifetime by default, not E2B's 15 s", function()
    local parent = h.sandbox({}, client)
    local forks = assert(parent:fork())
    local left = assert(forks[1]:info()).end_at - os.time() * 1000
    assert.is_true(left > 280000 and left <= 301000, tostring(left))
    assert(forks[1]:kill())
  end)

  it("reports envd calls on a killed sandbox as errors, never as success", function()
    local sbx = h.sandbox({}, client)
    assert(sbx:kill())
    local r, err = sbx:run("true")
    assert.is_nil(r)
    assert.is_string(err.kind)
    local data
    data, err = sbx.files:read("/home/user/x")
    assert.is_nil(data)
    assert.is_string(err.kind)
  end)

  it("runs a setup script before create returns, with the sandbox env", function()
    local sbx = h.sandbox({ env = { GREETING = "hello" },
      setup = { script = "#!/bin/sh\necho \"$GREETING\" > /home/user/setup-ran\n", name = "prep.sh" } }, client)
    assert.are.equal("hello\n", assert(sbx.files:read("/home/user/setup-ran")))
  end)

  it("destroys the allocation when setup fails, returning its stderr tail", function()
    local tag = h.core.uuid4()
    local sbx, err = client:create({ metadata = { setup_case = tag },
      setup = "#!/bin/sh\necho broken-setup >&2\nexit 4\n" })
    assert.is_nil(sbx)
    assert.are.equal("sandbox", err.kind)
    assert.truthy(err.message:find("broken-setup", 1, true))
    assert.are.equal(0, #assert(client:list({ metadata = { setup_case = tag } })))
  end)
end)
