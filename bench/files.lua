-- bench/files.lua: lua-e2b's file transfers for bench/compare.sh (same output
-- format as client.lua: "<name> <value>"). Run under e2b-local exec.
--   lua5.4 bench/files.lua [FILE_MB=1024] [READ_MB=200] [SRC=a FILE_MB MiB file]
-- Uploads FILE_MB MiB from a local file (SRC, else made here) with files:write (a chunk function
-- reading it), downloads it with files:read_to into /dev/null, and reads a
-- READ_MB MB file whole with files:read. RSS growth is this process's peak
-- (VmHWM, reset through /proc/self/clear_refs before each step) minus its
-- RSS before the step.
local e2b = require("e2b")
local core = require("e2b.core")

local FILE_MB = tonumber(arg[1]) or 1024
local READ_MB = tonumber(arg[2]) or 200
local now = core.now_ms

local function report(name, value) print(("%s %.1f"):format(name, value)) end

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

local client = assert(e2b.client{})
local sbx = assert(client:create{})
local size = FILE_MB * 1048576
local src = arg[3]
local own = not src
if own then
  src = os.tmpname()
  assert(os.execute(("head -c %d /dev/zero > %s"):format(size, src)))
end

-- upload: files:write from a chunk function reading the local file
local base = rss_mark()
local t0 = now()
local f = assert(io.open(src, "rb"))
assert(sbx.files:write("/tmp/big", function() return f:read(1048576) end))
f:close()
report("file_upload_mibps", mbps(size, now() - t0))
report("file_upload_rss_growth_mb", status("VmHWM") - base)
if own then os.remove(src) end

-- download: files:read_to into a file
base = rss_mark()
t0 = now()
local null = assert(io.open("/dev/null", "wb"))
assert(assert(sbx.files:read_to("/tmp/big", null)) == size)
null:close()
report("file_download_mibps", mbps(size, now() - t0))
report("file_download_rss_growth_mb", status("VmHWM") - base)
assert(sbx.files:remove("/tmp/big"))

-- files:read of a whole READ_MB MB file: peak growth over its size
local rsize = READ_MB * 1000000
assert(assert(sbx:run(("head -c %d /dev/zero > /tmp/whole"):format(rsize))).exit_code == 0)
base = rss_mark()
t0 = now()
local data = assert(sbx.files:read("/tmp/whole"))
assert(#data == rsize)
report("file_read_whole_mibps", mbps(rsize, now() - t0))
report("file_read_whole_peak_x", (status("VmHWM") - base) * 1048576 / rsize)
data = nil -- luacheck: ignore 311
sbx:kill()
