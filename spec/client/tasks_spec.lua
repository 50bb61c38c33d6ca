-- The task layer's plain-Lua face. What both schedulers must do (results,
-- errors, interleaving, overlapping commands) is the shared table in
-- spec/ngx/cases.lua, run under e2b.sched by spec/ngx/behaviour_spec.lua;
-- here is only what the blocking face adds: a call outside any task drives
-- the tasks, and an idle wait costs no CPU.
local h = require("spec.helpers")
local e2b = h.e2b

describe("tasks", function()
  local sbx
  setup(function() sbx = h.sandbox() end)
  teardown(h.cleanup)

  it("blocks outside any task while spawned tasks keep progressing", function()
    local progressed = false
    local t = e2b.spawn(function() e2b.sleep(50); progressed = true; return "done" end)
    local r = assert(sbx:run("sleep 0.3; echo outside"))
    assert.are.equal("outside\n", r.stdout)
    assert.is_true(progressed)
    assert.are.equal("done", t:wait())
  end)

  -- A task that waits on nothing (sleep(0), or coroutine.yield() itself)
  -- is ready again at once; the loop must still step between its rounds,
  -- or no request of anyone else moves. Each spinner gives up after SPINS
  -- rounds, so a starved loop fails these instead of hanging them.
  local SPINS = 1000000

  local function spinner(pause)
    local state = { spins = 0, done = false }
    state.task = e2b.spawn(function()
      while not state.done and state.spins < SPINS do pause(); state.spins = state.spins + 1 end
    end)
    return state
  end

  it("a call outside any task finishes while a task spins on sleep(0)", function()
    local spin = spinner(function() e2b.sleep(0) end)
    local r = assert(sbx:run("echo outside"))
    spin.done = true
    spin.task:wait()
    assert.is_true(spin.spins < SPINS, "spun " .. spin.spins .. " rounds")
    assert.are.equal("outside\n", r.stdout)
  end)

  -- A task spinning on step() while another runs a command: the command
  -- finishes (the spinner stops then) within SPINS rounds.
  local function command_finishes_beside(step)
    local spin, out
    e2b.run(function()
      spin = spinner(step)
      e2b.spawn(function() out = assert(sbx:run("echo hi")).stdout; spin.done = true end)
    end)
    assert.is_true(spin.spins < SPINS, "spun " .. spin.spins .. " rounds")
    assert.are.equal("hi\n", out)
  end

  it("a task spinning on coroutine.yield() lets another task's command finish", function()
    command_finishes_beside(coroutine.yield)
  end)

  it("a task joining one task after another, none doing I/O, lets a command finish", function()
    command_finishes_beside(function() e2b.spawn(function() end):wait() end)
  end)

  it("a spinning task still yields to ready tasks at every sleep(0)", function()
    local order = {}
    e2b.run(function()
      local t = e2b.spawn(function()
        for i = 1, 3 do order[#order + 1] = "b" .. i; e2b.sleep(0) end
      end)
      for i = 1, 3 do order[#order + 1] = "a" .. i; e2b.sleep(0) end
      t:wait()
    end)
    assert.are.equal("a1 b1 a2 b2 a3 b3", table.concat(order, " "))
  end)

  it("sleep(0) outside any task returns before a task's nearer timer fires", function()
    local t = e2b.spawn(function() e2b.sleep(2000) end)
    for _ = 1, 3 do e2b.sleep(0) end
    assert.is_false(t:done(), "sleep(0) waited for the loop's next timer")
    t:wait()
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
end)
