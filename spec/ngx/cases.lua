-- spec/ngx/cases.lua: the behaviour table both schedulers must satisfy.
--
-- Each case is plain Lua (no busted), run as user code would run it:
--   * under Lua 5.4 (and LuaJIT) with e2b.sched by spec/ngx/behaviour_spec.lua,
--   * inside nginx with e2b.ngx, one request per case, by spec/ngx/openresty_test.lua.
-- A case raises on failure. ctx.sandbox() is one shared sandbox (made on first
-- use), ctx.client the client. No case depends on timing: concurrency is shown
-- by commands that can only finish when they overlap.
local M = {}

local function fail(msg, level)
  error(msg, (level or 1) + 1)
end

local function eq(want, got, what)
  if want ~= got then
    fail(("%s: expected %s, got %s"):format(what or "value", tostring(want), tostring(got)), 2)
  end
end

local function ok(v, what)
  if not v then fail((what or "check") .. " failed", 2) end
  return v
end

local function kind(err)
  return type(err) == "table" and err.kind or tostring(err)
end

local cases = {}
local function case(name, fn) cases[#cases + 1] = { name = name, fn = fn } end

case("e2b.run returns fn's results and task:wait the task's", function(e2b)
  local x, y, z = e2b.run(function(p, q)
    local t = e2b.spawn(function(a) return a .. "!", nil end, "z")
    return p + q, t:wait()
  end, 2, 3)
  eq(5, x, "run result")
  eq("z!", y, "task result")
  eq(nil, z, "trailing nil")
end)

case("a task starts when its spawner waits, then interleaves at every wait", function(e2b)
  local order = {}
  e2b.run(function()
    local t = e2b.spawn(function()
      for i = 1, 3 do order[#order + 1] = "b" .. i; e2b.sleep(10) end
    end)
    for i = 1, 3 do order[#order + 1] = "a" .. i; e2b.sleep(10) end
    t:wait()
  end)
  eq("a1 b1 a2 b2 a3 b3", table.concat(order, " "), "order")
end)

case("task:done is false while it runs and true once it returned", function(e2b)
  e2b.run(function()
    local t = e2b.spawn(function() e2b.sleep(5) return 1 end)
    eq(false, t:done(), "done before")
    eq(1, t:wait(), "result")
    eq(true, t:done(), "done after")
  end)
end)

case("task:wait re-raises the task's error in the waiter", function(e2b)
  local good, msg = pcall(e2b.run, function()
    return e2b.spawn(function() error("boom") end):wait()
  end)
  eq(false, good, "pcall")
  ok(tostring(msg):find("boom"), "message carries the error: " .. tostring(msg))
end)

case("e2b.run raises when a task nobody waited for failed", function(e2b)
  local good, msg = pcall(e2b.run, function()
    e2b.spawn(function() e2b.sleep(1) error("lost") end)
    return "main"
  end)
  eq(false, good, "pcall")
  ok(tostring(msg):find("a task failed", 1, true) and tostring(msg):find("lost"),
    "message names the failure: " .. tostring(msg))
end)

case("e2b.run waits for every task it started", function(e2b)
  local finished = 0
  e2b.run(function()
    for _ = 1, 5 do
      e2b.spawn(function() e2b.sleep(20) finished = finished + 1 end)
    end
  end)
  eq(5, finished, "tasks finished")
end)

case("two commands in two tasks overlap", function(e2b, ctx)
  local sbx = ctx.sandbox()
  local tag = tostring(ctx.unique())
  local a_path, b_path = "/tmp/a" .. tag, "/tmp/b" .. tag
  -- Each command only ends once the other has started: they must overlap.
  local function rendezvous(mine, other)
    return ("touch %s; while [ ! -e %s ]; do sleep 0.01; done; echo %s"):format(mine, other, mine)
  end
  local ra, rb = e2b.run(function()
    local ta = e2b.spawn(function() return sbx:run(rendezvous(a_path, b_path), { timeout_ms = 20000 }) end)
    local tb = e2b.spawn(function() return sbx:run(rendezvous(b_path, a_path), { timeout_ms = 20000 }) end)
    return ta:wait(), tb:wait()
  end)
  ok(ra, "first command")
  ok(rb, "second command")
  eq(a_path .. "\n", ra.stdout, "first output")
  eq(b_path .. "\n", rb.stdout, "second output")
end)

case("many commands at once each return their own output", function(e2b, ctx)
  local sbx = ctx.sandbox()
  local outs = e2b.run(function()
    local tasks = {}
    for i = 1, 20 do
      tasks[i] = e2b.spawn(function() return assert(sbx:run("echo " .. i)).stdout end)
    end
    local got = {}
    for i = 1, 20 do got[i] = tasks[i]:wait() end
    return got
  end)
  for i = 1, 20 do eq(i .. "\n", outs[i], "output " .. i) end
end)

case("a process's output streams through read() byte-exact", function(_, ctx)
  local sbx = ctx.sandbox()
  -- 4 MiB of every byte value, more than one read and than the core's queue.
  local proc = assert(sbx:spawn(
    "python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 16384)'"))
  local parts, n = {}, 0
  while true do
    local data, stream = proc:read(30000)
    if data == nil then
      ok(stream == nil, "read error: " .. tostring(stream))
      break
    end
    eq("stdout", stream, "stream")
    parts[#parts + 1] = data
    n = n + 1
  end
  local all = table.concat(parts)
  eq(256 * 16384, #all, "bytes")
  local block = {}
  for i = 0, 255 do block[#block + 1] = string.char(i) end
  block = table.concat(block)
  eq(block:rep(16384), all, "content")
  ok(n > 1, "output came in more than one read")
  local res = assert(proc:wait())
  eq(0, res.exit_code, "exit code")
end)

case("a read with a deadline times out on a silent process, which keeps running", function(_, ctx)
  local sbx = ctx.sandbox()
  local proc = assert(sbx:spawn("read line; echo got $line", { stdin = true }))
  local data, err = proc:read(200)
  eq(nil, data, "data")
  eq("timeout", kind(err), "error kind")
  assert(proc:write("go\n"))
  local res = assert(proc:wait(20000))
  eq("got go\n", res.stdout, "output")
  proc:close()
end)

case("task:wait gives a task's results back whole, a nil first one too", function(e2b)
  local a, b, c = e2b.run(function()
    return e2b.spawn(function() return nil, "why", nil end):wait()
  end)
  eq(nil, a, "first")
  eq("why", b, "second")
  eq(nil, c, "third")
end)

case("closing a handle while another task reads it ends that read with canceled", function(e2b, ctx)
  local sbx = ctx.sandbox()
  local proc = assert(sbx:spawn("echo started; sleep 30"))
  eq("started\n", (proc:read(20000)), "first output")
  local data, err = e2b.run(function()
    local reader = e2b.spawn(function() return proc:read(20000) end)
    e2b.sleep(100) -- the reader is parked in read() by now (it has nothing to read for 30 s)
    proc:close()
    return reader:wait()
  end)
  eq(nil, data, "data")
  eq("canceled", kind(err), "error kind")
end)

case("a cancel token ends a run from another task with canceled, its command killed", function(e2b, ctx)
  local sbx = ctx.sandbox()
  local c, up = e2b.cancel_token(), false
  local tag = "ngx-cancel-" .. tostring(math.random(1e9))
  local res, err = e2b.run(function()
    local t = e2b.spawn(function()
      return sbx:run("echo up; sleep 30", { tag = tag, cancel = c, on_stdout = function() up = true end })
    end)
    while not up do e2b.sleep(5) end
    c:cancel()
    return t:wait()
  end)
  eq(nil, res, "result")
  eq("canceled", kind(err), "error kind")
  local listed = true
  for _ = 1, 100 do -- the kill was sent unattended: look until it is gone (at most 5 s)
    listed = false
    for _, p in ipairs(assert(sbx:processes())) do
      if p.tag == tag then listed = true end
    end
    if not listed then break end
    e2b.sleep(50)
  end
  eq(false, listed, "command still listed")
end)

case("a command past its timeout_ms fails with kind timeout", function(_, ctx)
  local sbx = ctx.sandbox()
  local res, err = sbx:run("sleep 30", { timeout_ms = 300 })
  eq(nil, res, "result")
  eq("timeout", kind(err), "error kind")
end)

case("stdin is fed while output is read", function(_, ctx)
  local sbx = ctx.sandbox()
  local input = ("0123456789abcdef"):rep(256 * 1024) -- 4 MiB through cat
  local res = assert(sbx:run("cat", { stdin = input }))
  eq(#input, #res.stdout, "bytes back")
  ok(res.stdout == input, "content back")
end)

case("files move both ways through the loop", function(_, ctx)
  local sbx = ctx.sandbox()
  local path = "/tmp/roundtrip" .. ctx.unique()
  local data = ("\0\255 lua-e2b "):rep(300000) -- 3.6 MB
  assert(sbx.files:write(path, data))
  eq(data, assert(sbx.files:read(path)), "content")
  eq(true, assert(sbx.files:exists(path)), "exists")
end)

case("e2b.sleep lets other tasks run", function(e2b)
  local flag = false
  e2b.run(function()
    e2b.spawn(function() e2b.sleep(1) flag = true end)
    e2b.sleep(50)
    eq(true, flag, "flag set by the other task")
  end)
end)

-- A task spinning on e2b.sleep(0) waits on nothing, but the loop must still
-- move other tasks' requests on (as ngx.sleep(0) and libuv's setImmediate
-- let I/O run). The spinner gives up after SPINS rounds, so a scheduler that
-- starves the loop fails here instead of hanging.
local SPINS = 1000000

case("a task spinning on e2b.sleep(0) lets another task's command finish", function(e2b, ctx)
  local sbx = ctx.sandbox()
  local spins, out = 0, nil
  e2b.run(function()
    local spinner = e2b.spawn(function()
      while not out and spins < SPINS do e2b.sleep(0); spins = spins + 1 end
    end)
    e2b.spawn(function() out = assert(sbx:run("echo hi")).stdout end)
    spinner:wait()
  end)
  ok(spins < SPINS, "the command finished while the spinner spun (" .. spins .. " rounds)")
  eq("hi\n", out, "output")
end)

case("an unknown logical id is not_found, and nothing is allocated", function(_, ctx)
  local sbx, err = ctx.client:resume("no-such-id-" .. ctx.unique())
  eq(nil, sbx, "sandbox")
  eq("not_found", kind(err), "error kind")
end)

M.cases = cases
M.eq, M.ok = eq, ok

-- context(e2b) -> ctx for the cases: the client, one lazily created sandbox,
-- unique suffixes, and cleanup().
function M.context(e2b)
  local ctx = { client = assert(e2b.client{}) }
  local sbx, counter = nil, 0
  function ctx.sandbox()
    if not sbx then sbx = assert(ctx.client:create{}) end
    return sbx
  end
  function ctx.unique()
    counter = counter + 1
    return ("%d-%d"):format(os.time(), counter)
  end
  function ctx.cleanup()
    if sbx then sbx:kill() sbx = nil end
  end
  return ctx
end

function M.find(name)
  for _, c in ipairs(cases) do
    if c.name == name then return c end
  end
end

return M
