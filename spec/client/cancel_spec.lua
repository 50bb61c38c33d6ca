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

-- The command the stalled-start specs run: it writes its pid to pidfile
-- first (when it gets that far), then sleeps.
local function sleeper(pidfile)
  return ("echo $$ > %s; exec sleep 60"):format(pidfile)
end

-- envd starts a stalled Start once the stall (1.5 s from t0) is over: the
-- sandbox's log says so, and every process started there since t0 must
-- end, the command under a kept command's wrapper too (pidfile: sleeper's).
-- -> the longest any of them lived (ms)
local function assert_none_left(client, sbx, t0, pidfile)
  local started, ended
  local settled = h.eventually(function()
    started, ended = {}, {}
    local at = {}
    for _, l in ipairs(assert(client:logs(sbx.sandbox_id, { cursor_ms = t0, search = "process" }))) do
      local pid = l.message:match("^process (%d+) started")
      if pid then started[#started + 1], at[pid] = pid, l.timestamp end
      pid = l.message:match("^process (%d+) exited") or l.message:match("^process (%d+) was killed")
      if pid then ended[pid] = l.timestamp - (at[pid] or l.timestamp) end
    end
    for _, pid in ipairs(started) do if not ended[pid] then return false end end
    return #started > 0 and h.now_ms() - t0 > 1500
  end, 10000)
  assert.is_true(#started > 0, "the command never started")
  assert.is_true(settled, "a process it started still runs")
  -- (a kill between the shell's truncating open of the pidfile and its
  -- write leaves it empty: no pid, nothing alive, not "/proc/")
  local left = assert(sbx:run(("p=$(cat %s 2>/dev/null) && [ -n \"$p\" ] && test -e /proc/$p && echo alive; true")
    :format(pidfile)))
  assert.are.equal("", left.stdout, "the command outlived its wrapper")
  local longest = 0
  for _, ms in pairs(ended) do longest = math.max(longest, ms) end
  return longest
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

  it("kill a run canceled after its start was sent and before envd answered it", function()
    if h.live then return end -- needs e2b-local's fault injection (a stalled Start)
    local tag = "cancel-unanswered-" .. h.now_ms()
    local own = h.sandbox({}, client) -- its log holds this run's processes only
    h.faults({ { match = "POST envd:/process.Process/Start", action = "stall", ms = 1500, count = 1 } })
    local t0 = h.now_ms()
    local res, err, ms = canceled_from_another_task(function() return h.now_ms() - t0 > 300 end, function(c)
      return own:run(sleeper("/tmp/" .. tag), { tag = tag, cancel = c })
    end)
    h.faults()
    assert.is_nil(res)
    assert.are.equal("canceled", err.kind)
    assert.is_true(ms < 1500, "the cancel waited for the start's answer")
    assert_none_left(client, own, t0, "/tmp/" .. tag)
    assert.is_true(gone(own, tag), "the command still runs")
  end)

  it("kill a run that timed out after its start was sent and before envd answered it", function()
    if h.live then return end -- needs e2b-local's fault injection (a stalled Start)
    local tag = "timeout-unanswered-" .. h.now_ms()
    local own = h.sandbox({}, client)
    h.faults({ { match = "POST envd:/process.Process/Start", action = "stall", ms = 1500, count = 1 } })
    local t0 = h.now_ms()
    local res, err = own:run(sleeper("/tmp/" .. tag), { tag = tag, timeout_ms = 300 })
    h.faults()
    assert.is_nil(res)
    assert.are.equal("timeout", err.kind)
    assert.is_true(h.now_ms() - t0 < 1500, "the timeout waited for the start's answer")
    -- ended by the client once envd named it, not by envd's own deadline
    -- (the run's timeout and 2 s more from the start: run.c's KILL_SETTLE_MS)
    assert.is_true(assert_none_left(client, own, t0, "/tmp/" .. tag) < 2000, "left to envd's deadline")
    assert.is_true(gone(own, tag), "the command still runs")
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
