-- bench/burst_paired.lua: lua-e2b's side of bench/burst_paired.mjs. On a
-- fresh sandbox, five runs to warm up, then "ready"; for each line read on
-- stdin one burst of 200 run("echo i") at once (kept, the default) and one
-- line back: its wall ms. Ends at the end of its input.
local e2b = require("e2b")
local core = require("e2b.core")
local run_burst = require("bench.burst_workload")

local client = assert(e2b.client())
local sbx = assert(client:create{ timeout_ms = 600000 })
for _ = 1, 5 do assert(sbx:run("true")) end
io.stdout:write("ready\n")
io.stdout:flush()
for _ in io.stdin:lines() do
  local t0 = core.now_ms()
  run_burst(sbx)
  io.stdout:write(core.now_ms() - t0, "\n")
  io.stdout:flush()
end
assert(sbx:kill())
