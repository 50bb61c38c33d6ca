-- bench/burst_ab.lua: one side of bench/burst_ab.sh, run by whichever
-- lua-e2b LUA_PATH and LUA_CPATH pick. On a fresh sandbox, five runs to warm
-- up, then three bursts of 200 run("echo i") at once, kept (the default) or,
-- with KEPT = unkept, keep_output = false. One line per burst:
--   <side> <round> <burst> <wall ms> <client CPU ms> <server CPU ms> <machine CPU ms>
-- Server CPU is e2b-local's process tree, its sandboxes included (SRV_PID's,
-- DRV_PID's subtree, the clients, left out); machine CPU is every core's
-- busy time from /proc/stat (the 2 cores this runs on are shared by all).
local e2b = require("e2b")
local core = require("e2b.core")
local stats = require("spec.server_stats")
local run_burst = require("bench.burst_workload")

local SIDE, ROUND, KEPT = assert(arg[1]), assert(arg[2]), arg[3] ~= "unkept"
local srv, drv = assert(tonumber(os.getenv("SRV_PID"))), assert(tonumber(os.getenv("DRV_PID")))

local function machine_ms()
  local f = assert(io.open("/proc/stat"))
  local v = {}
  for w in f:read("l"):gmatch("%d+") do v[#v + 1] = tonumber(w) end
  f:close()
  return (v[1] + v[2] + v[3] + v[6] + v[7] + v[8]) * 10 -- user nice system irq softirq steal
end

local client = assert(e2b.client())
local sbx = assert(client:create{ timeout_ms = 600000 })
for _ = 1, 5 do assert(sbx:run("true")) end
for burst = 1, 3 do
  local t0, c0, s0, m0 = core.now_ms(), os.clock(), stats.tree_cpu_ms(srv, drv), machine_ms()
  run_burst(sbx, { keep_output = KEPT })
  print(("%s %s %d %d %.0f %d %d"):format(SIDE, ROUND, burst, core.now_ms() - t0, (os.clock() - c0) * 1000,
    stats.tree_cpu_ms(srv, drv) - s0, machine_ms() - m0))
  io.stdout:flush()
end
assert(sbx:kill())
