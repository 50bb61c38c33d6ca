-- The task layer: e2b.run / e2b.spawn / e2b.sleep and real concurrency.
local h = require("spec.helpers")
local e2b = h.e2b

describe("tasks", function()
  local sbx
  setup(function() sbx = h.sandbox() end)
  teardown(h.cleanup)

  it("runs two sbx:run('sleep 1') in two tasks in about one second", function()
    local t0 = h.now_ms()
    local a, b = e2b.run(function()
      local ta = e2b.spawn(function() return assert(sbx:run("sleep 1; echo a")).stdout end)
      local tb = e2b.spawn(function() return assert(sbx:run("sleep 1; echo b")).stdout end)
      return ta:wait(), tb:wait()
    end)
    local elapsed = h.now_ms() - t0
    assert.are.equal("a\n", a)
    assert.are.equal("b\n", b)
    assert.is_true(elapsed >= 1000 and elapsed < 1800, "took " .. elapsed .. " ms")
  end)

  it("interleaves tasks at every wait", function()
    local order = {}
    e2b.run(function()
      local t = e2b.spawn(function()
        for i = 1, 3 do order[#order + 1] = "b" .. i; e2b.sleep(10) end
      end)
      for i = 1, 3 do order[#order + 1] = "a" .. i; e2b.sleep(10) end
      t:wait()
    end)
    assert.are.same({ "a1", "b1", "a2", "b2", "a3", "b3" }, order)
  end)

  it("returns fn's results from e2b.run and task:wait", function()
    local x, y = e2b.run(function(p, q) return p + q, e2b.spawn(function() return "z" end):wait() end, 2, 3)
    assert.are.equal(5, x)
    assert.are.equal("z", y)
  end)

  it("re-raises a task's error in its waiter", function()
    local ok, msg = pcall(e2b.run, function()
      return e2b.spawn(function() error("boom") end):wait()
    end)
    assert.is_false(ok)
    assert.truthy(tostring(msg):find("boom"))
  end)

  it("blocks outside any task while spawned tasks keep progressing", function()
    local progressed = false
    local t = e2b.spawn(function() e2b.sleep(50); progressed = true; return "done" end)
    local r = assert(sbx:run("sleep 0.3; echo outside"))
    assert.are.equal("outside\n", r.stdout)
    assert.is_true(progressed)
    assert.are.equal("done", t:wait())
  end)

  it("sleeps without burning CPU while idle", function()
    local cpu0 = os.clock()
    e2b.run(function() e2b.sleep(400) end)
    e2b.sleep(400)
    assert.is_true(os.clock() - cpu0 < 0.1, "cpu " .. (os.clock() - cpu0))
  end)

  it("waits for a command without burning CPU", function()
    local cpu0 = os.clock()
    assert(sbx:run("sleep 1"))
    assert.is_true(os.clock() - cpu0 < 0.15, "cpu " .. (os.clock() - cpu0))
  end)

  it("drives many commands at once from one Lua state", function()
    local n = 20
    local t0 = h.now_ms()
    local outs = e2b.run(function()
      local tasks = {}
      for i = 1, n do
        tasks[i] = e2b.spawn(function() return assert(sbx:run("sleep 0.5; echo " .. i)).stdout end)
      end
      local got = {}
      for i = 1, n do got[i] = tasks[i]:wait() end
      return got
    end)
    for i = 1, n do assert.are.equal(i .. "\n", outs[i]) end
    assert.is_true(h.now_ms() - t0 < 3000, "took " .. (h.now_ms() - t0) .. " ms")
  end)
end)
