-- bench/kept_repeat.lua: kept stdout streaming, several big outputs one after
-- another in one sandbox (each spawned, read to its end, closed), with the
-- disk the kept files still hold afterwards; numbers, not assertions.
--   e2b-local exec -- lua5.4 bench/kept_repeat.lua [reps=5] [MB=200]
local e2b = require("e2b")
local core = require("e2b.core")

local reps, MB = tonumber(arg[1]) or 5, tonumber(arg[2]) or 200
local client = assert(e2b.client())
local sbx = assert(client:create())
local rates = {}
for rep = 1, reps do
  local t0 = core.now_ms()
  local proc = assert(sbx:spawn(("head -c %d /dev/zero"):format(MB * 1000000)))
  local bytes = 0
  while true do
    local d = proc:read()
    if not d then break end
    bytes = bytes + #d
  end
  proc:close()
  assert(bytes == MB * 1000000, "got " .. bytes)
  rates[rep] = ("%.0f"):format(bytes / 1e3 / math.max(1, core.now_ms() - t0))
end
-- The removal of closed handles' files is sent unattended: let it land.
e2b.sleep(500)
local du = assert(sbx:run("du -sk /tmp/.e2b-proc | cut -f1", { keep_output = false })).stdout
print(("kept stdout MB/s, %d outputs of %d MB in one sandbox: %s; kept files left: %d KiB")
  :format(reps, MB, table.concat(rates, " "), tonumber(du)))
sbx:kill()
