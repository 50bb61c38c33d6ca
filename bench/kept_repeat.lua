-- bench/kept_repeat.lua: kept stdout streaming, several big outputs one after
-- another in one sandbox (each spawned, read to its end, closed), with the
-- disk the kept files still hold afterwards; numbers, not assertions. Per
-- output: MB/s, the reads that handed data (proc:read), the requests the
-- server counted, this process's CPU ms and e2b-local's (its parent).
--   e2b-local exec -- lua5.4 bench/kept_repeat.lua [reps=5] [MB=200]
local e2b = require("e2b")
local core = require("e2b.core")
local stats = require("spec.server_stats")

local reps, MB = tonumber(arg[1]) or 5, tonumber(arg[2]) or 200

local cpu_ms = stats.cpu_ms
local _, server = cpu_ms("self")
local function requests()
  local t = stats.read()
  return t.http.requests + t.https.requests
end

local client = assert(e2b.client())
local sbx = assert(client:create())
local rates = {}
for rep = 1, reps do
  local r0, c0, s0 = requests(), os.clock(), cpu_ms(server)
  local t0 = core.now_ms()
  local proc = assert(sbx:spawn(("head -c %d /dev/zero"):format(MB * 1000000)))
  local bytes, reads = 0, 0
  while true do
    local d = proc:read()
    if not d then break end
    bytes, reads = bytes + #d, reads + 1
  end
  proc:close()
  local ms = math.max(1, core.now_ms() - t0)
  assert(bytes == MB * 1000000, "got " .. bytes)
  rates[rep] = ("%.0f"):format(bytes / 1e3 / ms)
  print(("rep %d: %s MB/s, %d ms, %d reads, %d requests, client cpu %.0f ms, e2b-local cpu %d ms")
    :format(rep, rates[rep], ms, reads, requests() - r0 - 1, (os.clock() - c0) * 1000, cpu_ms(server) - s0))
end
-- The removal of closed handles' files is sent unattended: let it land.
e2b.sleep(500)
local du = assert(sbx:run("du -sk /tmp/.e2b-proc | cut -f1", { keep_output = false })).stdout
print(("kept stdout MB/s, %d outputs of %d MB in one sandbox: %s; kept files left: %d KiB")
  :format(reps, MB, table.concat(rates, " "), tonumber(du)))
sbx:kill()
