-- A sandbox that ends under a running command (killed by another client,
-- or its deadline passed): every way of waiting on the command reports
-- not_found, saying the sandbox ended, within 2 s, and the client stops
-- sending it requests. Before, a kept command waited out idle_timeout_ms
-- polling envd's 502s, and an unkept one said `unavailable`.
local h = require("spec.helpers")
local e2b = h.e2b

-- Short enough that a reader waiting out the idle budget fails the spec
-- quickly, long enough that no correct reader gets near it.
local IDLE = 8000

-- The ways of waiting on `sleep 60`: each returns nil, err.
local ways = {
  run = function(sbx, keep)
    return sbx:run("sleep 60", { keep_output = keep, idle_timeout_ms = IDLE })
  end,
  wait = function(sbx, keep, opts)
    local o = { keep_output = keep, idle_timeout_ms = IDLE }
    for k, v in pairs(opts or {}) do o[k] = v end
    local proc = assert(sbx:spawn("sleep 60", o))
    local r, err = proc:wait()
    proc:close()
    return r, err
  end,
  lines = function(sbx, keep)
    local proc = assert(sbx:spawn("sleep 60", { keep_output = keep, idle_timeout_ms = IDLE }))
    local ok, err = pcall(function()
      for _ in proc:lines() do end
    end)
    proc:close()
    assert.is_false(ok, "lines() ended without an error")
    return nil, err
  end,
}

-- Kills sbx from another client (a task of this state) after ms; that
-- client's options: opts (default: the backend under test's).
local function kill_later(sbx, ms, opts)
  return e2b.spawn(function()
    e2b.sleep(ms)
    local other = assert(h.client(opts):connect(sbx.sandbox_id))
    assert(other:kill())
    return h.now_ms()
  end)
end

local function assert_ended(r, err, id)
  assert.is_nil(r)
  assert.are.equal("not_found", err.kind, tostring(err))
  assert.truthy(err.message:find("sandbox " .. id .. " ended", 1, true), err.message)
  assert.are.equal(id, err.sandbox_id)
end

describe("a command whose sandbox is killed", function()
  teardown(h.cleanup)

  for _, keep in ipairs({ true, false }) do
    for _, name in ipairs({ "run", "wait", "lines" }) do
      it(("%s, %s: not_found within 2 s"):format(name, keep and "kept" or "unkept"), function()
        local sbx = h.sandbox()
        local killer = kill_later(sbx, 500)
        local r, err = ways[name](sbx, keep)
        local now = h.now_ms()
        local killed_at = assert(killer:wait())
        assert_ended(r, err, sbx.sandbox_id)
        assert.is_true(now - killed_at < 2000, ("%d ms after the kill"):format(now - killed_at))
      end)
    end
  end

  it("parked: spawn():wait() is not_found within 2 s", function()
    local sbx = h.sandbox()
    local killer = kill_later(sbx, 3000) -- parked 2 s after its start
    local r, err = ways.wait(sbx, true, { park = true })
    local now = h.now_ms()
    local killed_at = assert(killer:wait())
    assert_ended(r, err, sbx.sandbox_id)
    assert.is_true(now - killed_at < 2000, ("%d ms after the kill"):format(now - killed_at))
  end)

  it("attached from another handle: wait() is not_found within 2 s", function()
    local sbx = h.sandbox()
    local proc = assert(sbx:spawn("sleep 60", { tag = "gone-attach" }))
    local other = assert(h.client():connect(sbx.sandbox_id))
    local again = assert(other:attach("gone-attach", { idle_timeout_ms = IDLE }))
    local killer = kill_later(sbx, 500)
    local r, err = again:wait()
    local now = h.now_ms()
    local killed_at = assert(killer:wait())
    assert_ended(r, err, sbx.sandbox_id)
    assert.is_true(now - killed_at < 2000, ("%d ms after the kill"):format(now - killed_at))
    again:close()
    proc:close()
  end)

  it("inside a task: the same error", function()
    local sbx = h.sandbox()
    local killer = kill_later(sbx, 500)
    local r, err = e2b.spawn(function() return ways.wait(sbx, true) end):wait()
    killer:wait()
    assert_ended(r, err, sbx.sandbox_id)
  end)

  it("every later envd call of the handle says the same at once, without a request", function()
    local sbx = h.sandbox()
    kill_later(sbx, 300):wait()
    local _, err = ways.run(sbx, true)
    assert_ended(nil, err, sbx.sandbox_id)
    local t0 = h.now_ms()
    local _, again = sbx.files:read("/etc/hostname")
    assert_ended(nil, again, sbx.sandbox_id)
    assert.is_true(h.now_ms() - t0 < 50)
  end)
end)

describe("a command whose sandbox reaches its deadline", function()
  teardown(h.cleanup)

  for _, keep in ipairs({ true, false }) do
    for _, name in ipairs({ "run", "wait" }) do
      it(("%s, %s: not_found within 2 s of it"):format(name, keep and "kept" or "unkept"), function()
        local sbx = h.sandbox({ timeout_ms = 3000 })
        local t0 = h.now_ms()
        local r, err = ways[name](sbx, keep)
        assert_ended(r, err, sbx.sandbox_id)
        local late = h.now_ms() - t0 - 3000
        assert.is_true(late < 2000, ("%d ms after the deadline"):format(late))
      end)
    end
  end
end)

if h.live then return end

-- e2b-local's request log after the first DELETE of id: how many envd
-- requests the client sent, and how many looks at the control plane.
local function after_kill(log, id)
  local at = assert(log:find("DELETE /sandboxes/" .. id, 1, true), log)
  local envd, looks = 0, 0
  for line in log:sub(at):gmatch("[^\n]+") do
    if line:find(" /process%.") or line:find(" /filesystem%.") or line:find(" /files") then envd = envd + 1 end
    if line:find("GET /sandboxes/" .. id, 1, true) then looks = looks + 1 end
  end
  return envd, looks
end

describe("e2b-local's log when a sandbox is killed under a command", function()
  for _, case in ipairs({ { "kept", true, {} }, { "parked", true, { park = true } }, { "unkept", false, {} } }) do
    it(case[1] .. ": the client stops sending to it", function()
      local log = h.with_local_server("--log-requests", function(client, vars)
        local sbx = assert(client:create({}))
        local killer = kill_later(sbx, case[1] == "parked" and 3000 or 500,
          { api_url = vars.E2B_API_URL, sandbox_url = vars.E2B_SANDBOX_URL,
            api_key = vars.E2B_API_KEY, domain = vars.E2B_DOMAIN })
        local _, err = ways.wait(sbx, case[2], case[3])
        killer:wait()
        assert.are.equal("not_found", err.kind)
        e2b.sleep(1000) -- anything still polling shows in the log
        sbx:kill()
      end)
      local envd, looks = after_kill(log, log:match("DELETE /sandboxes/(%w+)"))
      assert.is_true(envd <= 3, log)
      assert.is_true(looks <= 2, log)
    end)
  end
end)

describe("e2b-local's edge for a sandbox that is gone", function()
  it("answers as E2B's proxy does: 502 with a JSON body naming the sandbox not found", function()
    local sbx = assert(h.client():create({}))
    local id = sbx.sandbox_id
    assert(sbx:kill())
    local out = h.host(("curl -s -X POST -H 'E2b-Sandbox-Id: %s' -H 'E2b-Sandbox-Port: 49983' "
      .. "'%s/process.Process/List' -w ' %%{http_code}'"):format(id, os.getenv("E2B_SANDBOX_URL")))
    local body, status = out:match("^(.*) (%d+)$")
    assert.are.equal("502", status, out)
    assert.are.same({ sandboxId = id, message = "The sandbox was not found", code = 502 },
      require("cjson").decode(body))
  end)
end)
