-- The behaviour table of spec/ngx/cases.lua under the plain scheduler
-- (e2b.sched): Lua 5.4 in the conformance run, LuaJIT in the LuaJIT run.
-- spec/ngx/openresty_test.lua runs the same table inside nginx (e2b.ngx).
local h = require("spec.helpers")
local cases = require("spec.ngx.cases")

describe("behaviour table under e2b." .. h.e2b.scheduler, function()
  local ctx
  setup(function() ctx = cases.context(h.e2b) end)
  teardown(function() ctx.cleanup() end)

  for _, c in ipairs(cases.cases) do
    it(c.name, function() c.fn(h.e2b, ctx) end)
  end
end)
