-- bench/burst_workload.lua: the burst the burst benches time, in one place
-- so they all time the same work: 200 run("echo i") at once on one sandbox,
-- each output checked. opts go to every run (keep_output = false: unkept).
--   local run_burst = require("bench.burst_workload"); run_burst(sbx, opts)
local e2b = require("e2b")

return function(sbx, opts)
  e2b.run(function()
    local tasks = {}
    for i = 1, 200 do tasks[i] = e2b.spawn(function() return assert(sbx:run("echo " .. i, opts)).stdout end) end
    for i = 1, 200 do assert(tasks[i]:wait() == i .. "\n") end
  end)
end
