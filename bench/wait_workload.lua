-- bench/wait_workload.lua: the workload that compares ways of waiting
-- (bench/ngx_wait.lua runs it under Lua 5.4's e2b.sched and inside nginx
-- under each e2b.ngx wait mode). Returns a table of numbers.
local core = require("e2b.core")

local M = {}

-- CPU seconds this process has used (clock(3): user + system, µs resolution).
M.cpu_s = os.clock

-- Resident set size in MiB.
function M.rss_mb()
  local f = io.open("/proc/self/status")
  local s = f:read("*a")
  f:close()
  return tonumber(s:match("VmRSS:%s*(%d+)")) / 1024
end

local function timed(fn)
  local t0 = core.now_ms()
  fn()
  return core.now_ms() - t0
end

function M.run(e2b, sbx)
  local r = {}
  local lat = {}
  for i = 1, 50 do
    lat[i] = timed(function() assert(sbx.files:exists("/tmp")) end)
  end
  table.sort(lat)
  local sum = 0
  for i = 1, #lat do sum = sum + lat[i] end
  r.unary_mean_ms = sum / #lat
  r.unary_p90_ms = lat[45]
  r.run_true_ms = timed(function()
    for _ = 1, 20 do assert(sbx:run("true")) end
  end) / 20
  local data = ("\0\255 lua-e2b "):rep(300000) -- 3.6 MB
  r.upload_ms = timed(function() assert(sbx.files:write("/tmp/bench.bin", data)) end)
  r.download_ms = timed(function() assert(#assert(sbx.files:read("/tmp/bench.bin")) == #data) end)
  local input = ("0123456789abcdef"):rep(256 * 1024) -- 4 MiB through cat
  r.stdin_cat_ms = timed(function()
    assert(#assert(sbx:run("cat", { stdin = input })).stdout == #input)
  end)
  r.spawn20_sleep05_ms = timed(function()
    e2b.run(function()
      local t = {}
      for i = 1, 20 do t[i] = e2b.spawn(function() return assert(sbx:run("sleep 0.5")) end) end
      for i = 1, 20 do t[i]:wait() end
    end)
  end)
  local c0 = M.cpu_s()
  r.idle_2s_ms = timed(function() assert(sbx:run("sleep 2")) end)
  r.idle_2s_cpu_ms = (M.cpu_s() - c0) * 1000
  return r
end

M.KEYS = { "unary_mean_ms", "unary_p90_ms", "run_true_ms", "upload_ms", "download_ms",
  "stdin_cat_ms", "spawn20_sleep05_ms", "idle_2s_ms", "idle_2s_cpu_ms" }

return M
