-- bench/network_ab.lua: one side of bench/network_ab.sh, run by whichever
-- lua-e2b LUA_PATH and LUA_CPATH pick. Over HTTPS, one sandbox: one warm-up
-- run, then 20 runs at once twice (the first opens the connections, the
-- second reuses them) and 5 runs in a row. One line per operation:
--   <tag> <op> <wall ms> <client CPU ms> <requests> <new connections> <server CPU ms>
-- per operation (per batch for the concurrent ones). Server CPU is
-- e2b-local's process tree (its sandboxes included; DRV_PID's subtree, the
-- clients, left out), user + system with reaped children, at the kernel's
-- 10 ms tick (spec/server_stats.lua's tree_cpu_ms). "lua5.4
-- bench/network_ab.lua cpu ROOT EXCL" prints that sum alone
-- (network_ab_sdk.mjs reads it so).
local stats = require("spec.server_stats")
local tree_cpu_ms = stats.tree_cpu_ms
if arg[1] == "cpu" then
  print(tree_cpu_ms(tonumber(arg[2]), tonumber(arg[3])))
  return
end

local e2b = require("e2b")
local core = require("e2b.core")

local TAG = assert(arg[1], "usage: network_ab.lua TAG")
local url, token = assert(os.getenv("STATS_URL")), assert(os.getenv("E2B_LOCAL_ADMIN_TOKEN"))
local srv, drv = assert(tonumber(os.getenv("SRV_PID"))), assert(tonumber(os.getenv("DRV_PID")))

local function measure(name, reps, fn)
  local before, s0 = stats.read(url, token).https, tree_cpu_ms(srv, drv)
  local t0, c0 = core.now_ms(), os.clock()
  for i = 1, reps do fn(i) end
  local wall, cpu = core.now_ms() - t0, (os.clock() - c0) * 1000
  local s1, after = tree_cpu_ms(srv, drv), stats.read(url, token).https
  print(("%s %s %.1f %.1f %.2f %.2f %.1f"):format(TAG, name, wall / reps, cpu / reps,
    (after.requests - before.requests) / reps, (after.connections - before.connections) / reps, (s1 - s0) / reps))
  io.stdout:flush()
end

local client = assert(e2b.client{})
assert(client.api_url:match("^https://"), "run over HTTPS: unset E2B_API_URL and E2B_SANDBOX_URL")
local sbx = assert(client:create{ timeout_ms = 600000 })
assert(sbx:run("true"))
local function batch()
  e2b.run(function()
    local tasks = {}
    for i = 1, 20 do tasks[i] = e2b.spawn(function() return assert(sbx:run("true")) end) end
    for i = 1, 20 do tasks[i]:wait() end
  end)
end
measure("concurrent_20", 1, batch)
measure("concurrent_20_warm", 1, batch)
measure("run_true", 5, function() assert(assert(sbx:run("true")).exit_code == 0) end)
assert(sbx:kill())
