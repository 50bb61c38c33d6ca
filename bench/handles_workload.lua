-- bench/handles_workload.lua: N concurrent command handles across S
-- sandboxes in one Lua state (bench/handles.lua runs it under e2b.sched in
-- Lua 5.4 and LuaJIT, and inside one nginx worker under e2b.ngx). Returns
-- numbers; checks every output so a wrong answer cannot pass for a fast one.
local core = require("e2b.core")

local M = {}

local function status_kb(field)
  local f = io.open("/proc/self/status")
  local s = f:read("*a")
  f:close()
  return tonumber(s:match(field .. ":%s*(%d+)"))
end

-- Each command: `sleep N; echo i` (the shell stays: with the kept wrapper,
-- three processes in the sandbox), or with exec = true `echo i; exec sleep N`
-- (two), which is how 10,000 fit in this host's task limit.
local function command(i, secs, exec)
  local script = exec and ("echo %d; exec sleep %d"):format(i, secs) or ("sleep %d; echo %d"):format(secs, i)
  return { "sh", "-c", script }
end

-- run(e2b, { handles = 1000, sandboxes = 50, seconds = 2, park = nil (spawn's default),
--            exec = false }) -> results
function M.run(e2b, opts)
  local handles, nsbx, secs = opts.handles or 1000, opts.sandboxes or 50, opts.seconds or 2
  local client = assert(e2b.client{})
  local r = { handles = handles, sandboxes = nsbx, rss_start_mb = status_kb("VmRSS") / 1024 }
  local cpu0, t0 = os.clock(), core.now_ms()

  local sbxs = e2b.run(function()
    local tasks = {}
    for i = 1, nsbx do tasks[i] = e2b.spawn(function() return assert(client:create{}) end) end
    local out = {}
    for i = 1, nsbx do out[i] = tasks[i]:wait() end
    return out
  end)
  r.create_ms = core.now_ms() - t0

  local t1, started, all_started_ms, rss_live = core.now_ms(), 0, nil, nil
  local outs = e2b.run(function()
    local tasks = {}
    for i = 1, handles do
      local sbx = sbxs[(i - 1) % nsbx + 1]
      tasks[i] = e2b.spawn(function()
        local proc = assert(sbx:spawn(command(i, secs, opts.exec), { park = opts.park }))
        started = started + 1
        if started == handles then
          all_started_ms = core.now_ms() - t1
          rss_live = status_kb("VmRSS") / 1024
          -- With a long sleep, once more after the last handle could park
          -- (a kept command may park its stream after 2 s, see track.c).
          if secs >= 10 then
            e2b.spawn(function()
              e2b.sleep(5000)
              r.rss_settled_mb = status_kb("VmRSS") / 1024
            end)
          end
        end
        local res = assert(proc:wait())
        proc:close()
        return res.stdout
      end)
    end
    local got = {}
    for i = 1, handles do got[i] = tasks[i]:wait() end
    return got
  end)
  r.handles_ms = core.now_ms() - t1
  for i = 1, handles do assert(outs[i] == i .. "\n", "wrong output for handle " .. i) end
  r.all_started_ms = all_started_ms
  r.rss_live_mb = rss_live

  local t2 = core.now_ms()
  e2b.run(function()
    for i = 1, nsbx do e2b.spawn(function() assert(sbxs[i]:kill()) end) end
  end)
  r.kill_ms = core.now_ms() - t2
  r.wall_ms = core.now_ms() - t0
  r.cpu_ms = (os.clock() - cpu0) * 1000
  r.rss_peak_mb = status_kb("VmHWM") / 1024
  return r
end

M.KEYS = { "create_ms", "all_started_ms", "handles_ms", "kill_ms", "wall_ms", "cpu_ms",
  "rss_start_mb", "rss_live_mb", "rss_settled_mb", "rss_peak_mb" }

return M
