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
