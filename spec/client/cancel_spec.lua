-- Cancel tokens: any call given { cancel = token } ends with kind "canceled"
-- once another task calls token:cancel(), and leaves nothing behind (a run's
-- or a spawned command's process group killed, an upload's file as any
-- failed upload leaves it, a create's sandbox destroyed).
local h = require("spec.helpers")
local e2b = h.e2b

-- Runs fn(c) as a task beside a canceller that waits for ready() and then
-- cancels; returns what fn returned and how long it took (ms).
local function canceled_from_another_task(ready, fn)
  local c = e2b.cancel_token()
  local t0 = h.now_ms()
  local a, b = e2b.run(function()
    local t = e2b.spawn(fn, c)
    while not ready() do e2b.sleep(5) end
    assert.is_false(c:is_canceled())
    c:cancel()
    assert.is_true(c:is_canceled())
    return t:wait()
  end)
  return a, b, h.now_ms() - t0
end

local function gone(sbx, tag)
  return h.eventually(function()
    for _, p in ipairs(assert(sbx:processes())) do
      if p.tag == tag then return false end
    end
    return true
  end, 5000)
end

describe("cancel tokens", function()
  local sbx, client
  setup(function() sbx, client = h.sandbox() end)
  teardown(h.cleanup)

  it("end a run with kind canceled and kill its command", function()
    local up = false
    local tag = "cancel-run-" .. h.now_ms()
    local res, err, ms = canceled_from_another_task(function() return up end, function(c)
      return sbx:run("echo up; sleep 60", { tag = tag, cancel = c, on_stdout = function() up = true end })
    end)
    assert.is_nil(res)
    assert.are.equal("canceled", err.kind)
    assert.is_true(ms < 30000)
    assert.is_true(gone(sbx, tag), "the command still runs")
  end)

  it("end a spawned command's wait with kind canceled and kill it", function()
    local proc
    local tag = "cancel-spawn-" .. h.now_ms()
    local res, err = canceled_from_another_task(function() return proc ~= nil end, function(c)
      proc = assert(sbx:spawn("sleep 60", { tag = tag, cancel = c }))
      return proc:wait()
    end)
    assert.is_nil(res)
    assert.are.equal("canceled", err.kind)
    assert.is_true(gone(sbx, tag), "the command still runs")
    local _, again = proc:read()
    assert.are.equal("canceled", again.kind)
    proc:close()
  end)

  it("end an upload from a function with kind canceled", function()
    local sent = 0
    local chunk = ("x"):rep(65536)
    local path = "/tmp/cancel-upload-" .. h.now_ms()
    local res, err = canceled_from_another_task(function() return sent >= 4 * 1048576 end, function(c)
      return sbx.files:write(path, function()
        sent = sent + #chunk
        return chunk
      end, { cancel = c })
    end)
    assert.is_nil(res)
    assert.are.equal("canceled", err.kind)
    -- the same state a failed upload leaves: no whole file
    local st = sbx.files:stat(path)
    assert.is_true(st == nil or st.size < sent)
  end)

  it("end a download with kind canceled and hand the sink nothing more", function()
    assert(sbx:run("head -c 33554432 /dev/zero > /tmp/cancel-big"))
    local got, after = 0, nil
    local res, err = canceled_from_another_task(function() return got > 0 end, function(c)
      local n, e = sbx.files:read_to("/tmp/cancel-big", function(chunk)
        got = got + #chunk
        if after then after = after + 1 end
        return true
      end, { cancel = c })
      return n, e
    end)
    assert.is_nil(res)
    assert.are.equal("canceled", err.kind)
    assert.is_true(got < 33554432)
  end)

  it("end a create with kind canceled and leave no sandbox", function()
    local before = #assert(client:list({ metadata = { cancelspec = "1" } }))
    -- its setup script holds the create until the cancel comes: the
    -- canceller waits until the sandbox is listed, then cancels
    local res, err = canceled_from_another_task(function()
      return #assert(client:list({ metadata = { cancelspec = "1" } })) > before
    end, function(c)
      return client:create({ metadata = { cancelspec = "1" }, setup = "sleep 60", cancel = c })
    end)
    assert.is_nil(res)
    assert.are.equal("canceled", err.kind)
    assert.is_true(h.eventually(function()
      return #assert(client:list({ metadata = { cancelspec = "1" } })) == before
    end, 10000), "a sandbox was left behind")
  end)

  it("end a create canceled while its allocation is unanswered and leave no sandbox", function()
    if h.live then return end -- needs e2b-local's fault injection (a stalled create)
    local before = #assert(client:list({ metadata = { cancelspec = "2" } }))
    h.faults({ { match = "POST /v2/sandboxes", action = "stall", ms = 1500, count = 1 },
               { match = "POST /sandboxes", action = "stall", ms = 1500, count = 1 } })
    local t0 = h.now_ms()
    local res, err = canceled_from_another_task(function() return h.now_ms() - t0 > 300 end, function(c)
      return client:create({ metadata = { cancelspec = "2" }, cancel = c })
    end)
    h.faults()
    assert.is_nil(res)
    assert.are.equal("canceled", err.kind)
    -- the server allocates it once its stall (the rule's 1.5 s) is over and
    -- the client kills it then: look only after that, until it is gone
    local function stall_over() return h.now_ms() - t0 > 1500 end
    assert.is_true(h.eventually(function()
      return stall_over() and #assert(client:list({ metadata = { cancelspec = "2" } })) == before
    end, 10000), "a sandbox was left behind")
  end)

  it("cancel a call given an already canceled token before it sends anything", function()
    local c = e2b.cancel_token()
    c:cancel()
    local tag = "cancel-before-" .. h.now_ms()
    local res, err = sbx:run("sleep 60", { tag = tag, cancel = c })
    assert.is_nil(res)
    assert.are.equal("canceled", err.kind)
    assert.is_true(gone(sbx, tag))
  end)

  it("let go of a token when its call raised, so later calls are not its", function()
    local c = e2b.cancel_token()
    local ok = pcall(sbx.run, sbx, "echo x", { cancel = c, on_stdout = function() error("callback failed") end })
    assert.is_false(ok)
    c:cancel()
    assert.are.equal("fine\n", assert(sbx:run("echo fine")).stdout)
  end)

  it("leave calls without the token alone", function()
    local c = e2b.cancel_token()
    local res = e2b.run(function()
      local t = e2b.spawn(function() return sbx:run("sleep 0.3; echo fine") end)
      e2b.sleep(20)
      c:cancel()
      return t:wait()
    end)
    assert.are.equal("fine\n", res.stdout)
  end)

  it("refuse a cancel option that is no token, naming the field", function()
    for _, call in ipairs({
      function() return sbx:run("true", { cancel = "x" }) end,
      function() return sbx:spawn("true", { cancel = {} }) end,
      function() return sbx.files:read("/etc/hostname", { cancel = 1 }) end,
      function() return sbx.files:read_to("/etc/hostname", function() end, { cancel = true }) end,
      function() return sbx.files:write("/tmp/x", "y", { cancel = "x" }) end,
      function() return client:create({ cancel = "x" }) end,
    }) do
      local res, err = call()
      assert.is_nil(res)
      assert.are.equal("invalid_argument", err.kind)
      assert.are.equal("cancel", err.field)
    end
  end)
end)
