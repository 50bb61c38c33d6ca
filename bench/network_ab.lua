-- bench/network_ab.lua: one side of bench/network_ab.sh, run by whichever
-- lua-e2b LUA_PATH and LUA_CPATH pick. Over HTTPS, one sandbox: one warm-up
-- run, then 20 runs at once twice (the first opens the connections, the
-- second reuses them) and 5 runs in a row. One line per operation:
--   <tag> <op> <wall ms> <client CPU ms> <requests> <new connections> <server CPU ms>
-- per operation (per batch for the concurrent ones). Server CPU is
-- e2b-local's process tree (its sandboxes included; DRV_PID's subtree, the
-- clients, left out), user + system with reaped children, at the kernel's
-- 10 ms tick. "lua5.4 bench/network_ab.lua cpu ROOT EXCL" prints that sum
-- alone (network_ab_sdk.mjs reads it so).
local function tree_cpu_ms(root, excl)
  local parent, ticks = {}, {}
  local ls = assert(io.popen("ls /proc"))
  for name in ls:lines() do
    local pid = tonumber(name)
    local f = pid and io.open("/proc/" .. name .. "/stat")
    local stat = f and f:read("a")
    if f then f:close() end
    local rest = stat and stat:match("%) (.*)$")
    if rest then
      local t = {}
      for w in rest:gmatch("%S+") do t[#t + 1] = w end
      parent[pid] = tonumber(t[2])
      ticks[pid] = t[12] + t[13] + t[14] + t[15]
    end
  end
  ls:close()
  local function under(pid, top)
    while pid and pid > 1 do
      if pid == top then return true end
      pid = parent[pid]
    end
    return false
  end
  local sum = 0
  for pid, t in pairs(ticks) do
    if under(pid, root) and not under(pid, excl) then sum = sum + t end
  end
  return sum * 10
end

if arg[1] == "cpu" then
  print(tree_cpu_ms(tonumber(arg[2]), tonumber(arg[3])))
  return
end

local e2b = require("e2b")
local core = require("e2b.core")
local stats = require("spec.server_stats")

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
