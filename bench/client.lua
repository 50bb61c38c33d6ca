-- bench/client.lua: lua-e2b's side of bench/compare.sh. Prints one line per
-- measurement: "<name> <value>" (ms or MB/s). Run under e2b-local exec.
local e2b = require("e2b")
local core = require("e2b.core")

local N = tonumber(arg[1]) or 10
local MB = tonumber(arg[2]) or 200
local now = core.now_ms

local function report(name, value) print(("%s %.1f"):format(name, value)) end

local client = assert(e2b.client{})

-- create + run + kill, one after the other
local times = {}
for i = 1, N do
  local t0 = now()
  local sbx = assert(client:create{})
  assert(assert(sbx:run("echo hi")).stdout == "hi\n")
  assert(sbx:kill())
  times[i] = now() - t0
end
table.sort(times)
report("create_run_kill_ms", times[math.ceil(N / 2)])

local sbx = assert(client:create{})

-- one command's stdout read as it comes (tracked: the default)
local function throughput(read_all)
  local t0 = now()
  local bytes = read_all()
  assert(bytes == MB * 1000000, "got " .. bytes)
  return bytes / 1e6 / ((now() - t0) / 1000)
end

report("stdout_mbps_tracked", throughput(function()
  local proc = assert(sbx:spawn(("head -c %d /dev/zero"):format(MB * 1000000)))
  local n = 0
  while true do
    local d = proc:read()
    if not d then break end
    n = n + #d
  end
  proc:close()
  return n
end))

-- the same with keep_output = false: the live Connect stream alone
report("stdout_mbps_live_only", throughput(function()
  local proc = assert(sbx:spawn(("head -c %d /dev/zero"):format(MB * 1000000), { keep_output = false }))
  local n = 0
  while true do
    local d = proc:read()
    if not d then break end
    n = n + #d
  end
  proc:close()
  return n
end))

-- reading kept output back by offset (what a reattach after a drop does)
local proc = assert(sbx:spawn(("head -c %d /dev/zero"):format(MB * 1000000)))
repeat until not proc:read() -- to its end; the kept copy stays after detach
proc:detach()
proc:close()
report("stdout_mbps_polled", throughput(function()
  local again = assert(sbx:attach(proc.tag))
  local n = 0
  while true do
    local d = again:read()
    if not d then break end
    n = n + #d
  end
  again:close()
  return n
end))

-- 200 concurrent commands
local t0 = now()
e2b.run(function()
  local tasks = {}
  for i = 1, 200 do tasks[i] = e2b.spawn(function() return assert(sbx:run("echo " .. i)).stdout end) end
  for i = 1, 200 do assert(tasks[i]:wait() == i .. "\n") end
end)
report("concurrent_200_ms", now() - t0)

-- and without kept output (no wrapper, no tee processes)
t0 = now()
e2b.run(function()
  local tasks = {}
  for i = 1, 200 do
    tasks[i] = e2b.spawn(function() return assert(sbx:run("echo " .. i, { keep_output = false })).stdout end)
  end
  for i = 1, 200 do assert(tasks[i]:wait() == i .. "\n") end
end)
report("concurrent_200_unkept_ms", now() - t0)
sbx:kill()
