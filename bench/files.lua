-- bench/files.lua: lua-e2b's file transfers for bench/compare.sh (same output
-- format as client.lua: "<name> <value>"). Run under e2b-local exec.
--   lua5.4 bench/files.lua [FILE_MB=1024] [READ_MB=200] [SRC=a FILE_MB MiB file] [REPS=3]
-- Uploads FILE_MB MiB from a local file (SRC, else made here) with files:write
-- (given the open file), downloads it with files:read_to into /dev/null, and reads a
-- READ_MB MB file whole with files:read, each REPS times. RSS growth is this process's peak
-- (VmHWM, reset through /proc/self/clear_refs before each step) minus its
-- RSS before the step.
local e2b = require("e2b")
local core = require("e2b.core")

local FILE_MB = tonumber(arg[1]) or 1024
local READ_MB = tonumber(arg[2]) or 200
local REPS = tonumber(arg[4]) or 3
local now = core.now_ms

-- each line also says the CPU this process used so far (where a run's CPU goes)
local function report(name, value) print(("%s %.1f # cpu so far %.0f ms"):format(name, value, os.clock() * 1000)) end

local function status(field)
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("a")
  f:close()
  return tonumber(s:match(field .. ":%s*(%d+)")) / 1024
end

-- Starts a step: the peak is reset to the current RSS, which is returned.
local function rss_mark()
  collectgarbage()
  local f = io.open("/proc/self/clear_refs", "w")
  if f then
    f:write("5")
    f:close()
  end
  return status("VmRSS")
end

local function mbps(bytes, ms) return bytes / 1048576 / (ms / 1000) end

-- Runs step REPS times, each after a sync (so no earlier write-back runs
-- into it) from a fresh peak: the best rate (the least disturbed run) and
-- the highest RSS growth.
local function best(bytes, step)
  local rate, growth = 0, 0
  for _ = 1, REPS do
    os.execute("sync")
    local base = rss_mark()
    local t0 = now()
    step()
    rate = math.max(rate, mbps(bytes, now() - t0))
    growth = math.max(growth, status("VmHWM") - base)
  end
  return rate, growth
end

local client = assert(e2b.client{})
local sbx = assert(client:create{})
local size = FILE_MB * 1048576
local src = arg[3]
local own = not src
if own then
  src = os.tmpname()
  assert(os.execute(("head -c %d /dev/zero > %s"):format(size, src)))
end

-- upload: files:write from the open local file
local rate, growth = best(size, function()
  local f = assert(io.open(src, "rb"))
  assert(sbx.files:write("/tmp/big", f))
  f:close()
end)
report("file_upload_mibps", rate)
report("file_upload_rss_growth_mb", growth)
if own then os.remove(src) end

-- download: files:read_to into a file
rate, growth = best(size, function()
  local null = assert(io.open("/dev/null", "wb"))
  assert(assert(sbx.files:read_to("/tmp/big", null)) == size)
  null:close()
end)
report("file_download_mibps", rate)
report("file_download_rss_growth_mb", growth)
assert(sbx.files:remove("/tmp/big"))

-- files:read of a whole READ_MB MB file: peak growth over its size
local rsize = READ_MB * 1000000
assert(assert(sbx:run(("head -c %d /dev/zero > /tmp/whole"):format(rsize))).exit_code == 0)
rate, growth = best(rsize, function()
  local data = assert(sbx.files:read("/tmp/whole"))
  assert(#data == rsize)
end)
report("file_read_whole_mibps", rate)
report("file_read_whole_peak_x", growth * 1048576 / rsize)
sbx:kill()
