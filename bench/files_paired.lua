-- bench/files_paired.lua: lua-e2b's file transfers against raw curl's, paired.
-- Run under e2b-local exec:
--   lua5.4 bench/files_paired.lua [FILE_MB=1024] [SRC=a FILE_MB MiB file] [PAIRS=4]
-- The upload rows of compare.sh run each client's three tries minutes apart,
-- so the sandbox's disk (its write-back, the VM's neighbours) decides more
-- of their ratio than the clients do. Here each pair uploads the same file to
-- the same sandbox path with lua-e2b and then with curl, back to back after a
-- sync, the first of each pair alternating; downloads likewise. Prints the
-- median of the pairs' lua/curl ratios and their range.
local e2b = require("e2b")
local core = require("e2b.core")

local FILE_MB = tonumber(arg[1]) or 1024
local PAIRS = tonumber(arg[3]) or 4
local size = FILE_MB * 1048576
local now = core.now_ms
local path = "/tmp/paired"

local src = arg[2] ~= "" and arg[2] or nil
local own = not src
if own then
  src = os.tmpname()
  assert(os.execute(("head -c %d /dev/zero > %s"):format(size, src)))
end

-- secure = false: curl reaches envd as bench/files_curl.sh does, without a token
local client = assert(e2b.client{})
local sbx = assert(client:create{ secure = false })

-- The API key goes to curl in a private file, never on its command line.
local keyfile = os.tmpname()
local kf = assert(io.open(keyfile, "w"))
kf:write("X-API-Key: ", assert(os.getenv("E2B_API_KEY")), "\n")
kf:close()

local function mibps(ms) return size / 1048576 / (ms / 1000) end

local function timed(step)
  os.execute("sync")
  local t0 = now()
  step()
  return mibps(now() - t0)
end

local function curl(args)
  local cmd = ("curl -sSf -H @%s -H 'E2b-Sandbox-Id: %s' -H 'E2b-Sandbox-Port: 49983' "
    .. "-H 'Expect:' -o /dev/null %s '%s/files?path=%s' 2>&1"):format(
    keyfile, sbx.sandbox_id, args, assert(os.getenv("E2B_SANDBOX_URL")), path)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  assert(p:close(), "curl: " .. out)
end

local clients = {
  upload = {
    lua = function()
      local f = assert(io.open(src, "rb"))
      assert(sbx.files:write(path, f))
      f:close()
    end,
    curl = function() curl(("-F 'file=@%s;type=application/octet-stream'"):format(src)) end,
  },
  download = {
    lua = function()
      local null = assert(io.open("/dev/null", "wb"))
      assert(assert(sbx.files:read_to(path, null)) == size)
      null:close()
    end,
    curl = function() curl("") end,
  },
}

local function median(t)
  table.sort(t)
  return (t[math.floor((#t + 1) / 2)] + t[math.ceil((#t + 1) / 2)]) / 2
end

for _, what in ipairs({ "upload", "download" }) do
  local c, ratios = clients[what], {}
  for i = 1, PAIRS do
    local l, r
    if i % 2 == 1 then
      l = timed(c.lua)
      r = timed(c.curl)
    else
      r = timed(c.curl)
      l = timed(c.lua)
    end
    ratios[i] = l / r
  end
  local m = median(ratios)
  print(("file_%s_paired_x %.2f # lua/curl, median of %d pairs, %.2f to %.2f"):format(
    what, m, PAIRS, ratios[1], ratios[#ratios]))
end

assert(sbx.files:remove(path))
sbx:kill()
os.remove(keyfile)
if own then os.remove(src) end
