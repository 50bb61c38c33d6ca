-- bench/client.lua: lua-e2b's side of bench/compare.sh. Prints one line per
-- measurement: "<name> <value>" (ms or MB/s). Run under e2b-local exec.
local e2b = require("e2b")
local core = require("e2b.core")

local N = tonumber(arg[1]) or 10
local MB = tonumber(arg[2]) or 200
-- the clock lua-e2b itself keeps time with (whole ms; the SDK side's performance.now() has
-- fractions, so a short command's few ms read coarser here)
local now = core.now_ms
-- what the server counted (its requests, all listeners), for the rows that show the cost
-- of a measurement beside its time; one read is itself one request
local stats = require("spec.server_stats")
local function requests()
  local t = stats.read()
  return t.http.requests + t.https.requests + 1
end

-- each line also says the CPU this process used so far (where a run's CPU goes)
local function report(name, value) print(("%s %.1f # cpu so far %.0f ms"):format(name, value, os.clock() * 1000)) end

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

-- run("true") one after another: what an agent's many short commands cost. Timed in
-- N groups of 5 (this clock's whole ms would round a 4.6 ms run to 4 or 5, and a median of
-- such readings to the nearer one), the median group's time per run; the SDK side alike
times = {}
for g = 1, N do
  local t0 = now()
  for _ = 1, 5 do assert(assert(sbx:run("true")).exit_code == 0) end
  times[g] = (now() - t0) / 5
end
table.sort(times)
report("run_true_ms", times[math.ceil(#times / 2)])

-- MB/s of reading what open() returns (a process handle) to its end. A kept
-- stream runs at the pace of the sandbox's write of its file, which the
-- disk's write-back of earlier rounds' files slowed to a third (reader at
-- the writer's heels, hundreds of reads: bench/HISTORY.md): each starts
-- after a sync, as the file transfers do, and the SDK's and curl's alike.
local function throughput(open)
  os.execute("sync")
  local t0 = now()
  local proc = open()
  local bytes = 0
  while true do
    local d = proc:read()
    if not d then break end
    bytes = bytes + #d
  end
  proc:close()
  assert(bytes == MB * 1000000, "got " .. bytes)
  return bytes / 1e6 / ((now() - t0) / 1000)
end
local command = ("head -c %d /dev/zero"):format(MB * 1000000)

-- one command's stdout read as it comes (tracked: the default), with the requests that
-- took and this process's CPU
local r0, c0 = requests(), os.clock()
report("stdout_mbps_tracked", throughput(function() return assert(sbx:spawn(command)) end))
report("tracked_cpu_ms", (os.clock() - c0) * 1000)
report("tracked_requests", requests() - r0 - 1)

-- the same with keep_output = false: the live Connect stream alone
report("stdout_mbps_live_only", throughput(function()
  return assert(sbx:spawn(command, { keep_output = false }))
end))

-- reading kept output back by offset (what a reattach after a drop does)
local proc = assert(sbx:spawn(command))
repeat until not proc:read() -- to its end; the kept copy stays after detach
proc:detach()
proc:close()
report("stdout_mbps_polled", throughput(function() return assert(sbx:attach(proc.tag)) end))

-- 200 concurrent commands
local run_burst = require("bench.burst_workload")
local t0 = now()
run_burst(sbx)
report("concurrent_200_ms", now() - t0)

-- and without kept output (no wrapper)
t0 = now()
run_burst(sbx, { keep_output = false })
report("concurrent_200_unkept_ms", now() - t0)
sbx:kill()
