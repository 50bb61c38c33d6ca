-- bench/burst.lua: 200 concurrent run("echo i") on one sandbox, kept and unkept,
-- what each burst costs: wall ms, the requests and new connections the server
-- counted, this process's CPU ms and e2b-local's. Each round takes a fresh
-- sandbox and runs three bursts (kept, unkept, kept; the next round the other
-- way round). With `warm`, a kept reader streams 20 MB just before each burst,
-- so the sandbox's output watch is still there (core/src/kept/outwatch.c).
--   e2b-local exec -- lua5.4 bench/burst.lua [rounds=3] [warm]
local e2b = require("e2b")
local core = require("e2b.core")
local stats = require("spec.server_stats")
local run_burst = require("bench.burst_workload")

local rounds, warm = tonumber(arg[1]) or 3, arg[2] == "warm"

local cpu_ms = stats.cpu_ms
local function comm(pid)
  local f = assert(io.open("/proc/" .. pid .. "/comm"))
  local c = f:read("l")
  f:close()
  return c
end
local server = select(2, cpu_ms("self"))
while comm(server) ~= "e2b-local" do server = select(2, cpu_ms(server)) end

-- the server's requests and connections so far (the read itself is one of each)
local function counted()
  local t = stats.read()
  return t.http.requests + t.https.requests + 1, t.http.connections + t.https.connections + 1
end

local client = assert(e2b.client())
for round = 1, rounds do
  local sbx = assert(client:create())
  for _ = 1, 5 do assert(sbx:run("true")) end
  for _, kept in ipairs(round % 2 == 1 and { true, false, true } or { false, true, false }) do
    if warm then
      local p = assert(sbx:spawn("head -c 20000000 /dev/zero"))
      repeat until not p:read()
      p:close()
    end
    local r0, n0 = counted()
    local c0, s0, t0 = os.clock(), cpu_ms(server), core.now_ms()
    run_burst(sbx, { keep_output = kept })
    local ms = core.now_ms() - t0
    local r1, n1 = counted()
    print(("round %d %-6s %5d ms %4d requests %4d connections  client cpu %4.0f ms  e2b-local cpu %4d ms")
      :format(round, kept and "kept" or "unkept", ms, r1 - r0 - 1, n1 - n0 - 1, (os.clock() - c0) * 1000,
        cpu_ms(server) - s0))
  end
  sbx:kill()
end
