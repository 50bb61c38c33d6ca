-- spec/ngx/nginx.lua: starts and stops a throwaway nginx (Debian's
-- nginx-light + libnginx-mod-http-lua) for the OpenResty specs and benches,
-- and talks HTTP to it. Runs in the test driver (Lua 5.4 + LuaSocket), not
-- inside nginx.
--
--   local nginx = require("spec.ngx.nginx")
--   local srv = nginx.start{ http = "...", server = "location ... { ... }" }
--   local r = srv:get("/path")          -- { status, body, chunks = {{t_ms, data}...} }
--   srv:stop(); srv:log()
local socket = require("socket")

local M = {}

M.MODULES = os.getenv("E2B_NGINX_MODULES") or "/usr/lib/nginx/modules"
M.NGINX = os.getenv("E2B_NGINX") or "nginx"

-- Where the OpenResty side finds lua-e2b: the installed 5.1 rock by default
-- (LuaJIT's default paths); E2B_NGX_LUA_PATH / E2B_NGX_LUA_CPATH prepend.
local ROOT = (debug.getinfo(1, "S").source:match("^@(.*)/spec/ngx/nginx%.lua$")) or "."
if ROOT:sub(1, 1) ~= "/" then ROOT = os.getenv("PWD") .. "/" .. ROOT end
M.ROOT = ROOT

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1", "r"))
  local out = p:read("a")
  local ok, _, code = p:close()
  return ok, out, code
end

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
M.quote = quote

-- nginx started as root runs its workers as `nobody`, who may not read the
-- checkout (a clone under /root is 0700 on Debian): the Lua files that
-- nginx loads are served from a world-readable copy, made once and removed
-- when this Lua state closes.
local served
function M.served_root()
  if served then return served.dir end
  local ok, out = sh("mktemp -d /tmp/e2b-nginx-src.XXXXXX")
  local dir = assert(ok and out:match("^(%S+)"), out)
  local copied, msg = sh(("cd %s && find spec examples bench -name '*.lua' -print0 2>/dev/null"
    .. " | xargs -0 cp --parents -t %s && chmod -R a+rX %s"):format(quote(ROOT), quote(dir), quote(dir)))
  assert(copied, "cannot copy the Lua files nginx loads: " .. msg)
  served = setmetatable({ dir = dir }, { __gc = function(t) os.execute("rm -rf " .. quote(t.dir)) end })
  return dir
end

local function now_ms()
  return socket.gettime() * 1000
end
M.now_ms = now_ms

function M.free_port()
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  s:close()
  return tonumber(port)
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local function read(path)
  local f = io.open(path, "r")
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end
M.read = read

-- The nginx.conf around a server block. opts: http (http-level directives),
-- server (server-level), main (main-level), workers (default 1).
function M.conf(port, opts)
  local lua_path = (os.getenv("E2B_NGX_LUA_PATH") or "") .. M.served_root() .. "/?.lua;;"
  local lua_cpath = (os.getenv("E2B_NGX_LUA_CPATH") or "") .. ";;"
  return ([[
worker_processes %d;
error_log logs/error.log info;
pid logs/nginx.pid;
load_module %s/ndk_http_module.so;
load_module %s/ngx_http_lua_module.so;
env E2B_API_URL;
env E2B_SANDBOX_URL;
env E2B_API_KEY;
env E2B_DOMAIN;
env E2B_CA_FILE;
%s
events { worker_connections 4096; }
http {
  access_log off;
  lua_package_path "%s";
  lua_package_cpath "%s";
  %s
  server {
    listen 127.0.0.1:%d;
    %s
  }
}
]]):format(opts.workers or 1, M.MODULES, M.MODULES, opts.main or "", lua_path, lua_cpath,
    opts.http or "", port, opts.server or "")
end

local Server = {}
Server.__index = Server

-- start(opts) -> server; opts as for conf, or opts.conf = full text with
-- the port as %d (e.g. an example's nginx.conf, rewritten).
function M.start(opts)
  local ok, out = sh("mktemp -d /tmp/e2b-nginx.XXXXXX")
  local prefix = assert(ok and out:match("^(%S+)"), out)
  assert(sh("chmod 755 " .. quote(prefix) .. " && mkdir -p " .. quote(prefix .. "/logs")
    .. " " .. quote(prefix .. "/conf")))
  local port = M.free_port()
  local text = opts.conf and opts.conf(port, prefix) or M.conf(port, opts)
  write(prefix .. "/conf/nginx.conf", text)
  local self = setmetatable({ prefix = prefix, port = port }, Server)
  local started, msg = sh(M.NGINX .. " -p " .. quote(prefix) .. " -c conf/nginx.conf")
  if not started then
    error("nginx did not start: " .. msg .. "\n" .. read(prefix .. "/logs/error.log"))
  end
  local deadline = now_ms() + 10000
  while true do
    local c = socket.tcp()
    c:settimeout(0.2)
    if c:connect("127.0.0.1", port) then c:close() break end
    c:close()
    if now_ms() > deadline then
      error("nginx does not accept on port " .. port .. "\n" .. self:log())
    end
    socket.sleep(0.02)
  end
  return self
end

function Server:log()
  return read(self.prefix .. "/logs/error.log")
end

-- Lines of the error log at level error or worse.
function Server:errors()
  local bad = {}
  for line in self:log():gmatch("[^\n]+") do
    if line:find("%[error%]") or line:find("%[crit%]") or line:find("%[alert%]")
      or line:find("%[emerg%]") then
      bad[#bad + 1] = line
    end
  end
  return bad
end

function Server:master_pid()
  return tonumber((read(self.prefix .. "/logs/nginx.pid"):match("%d+")))
end

-- The pids of the worker processes (children of the master).
function Server:worker_pids()
  local pids = {}
  local _, out = sh("ps -o pid= --ppid " .. self:master_pid())
  for pid in out:gmatch("%d+") do pids[#pids + 1] = tonumber(pid) end
  return pids
end

-- stop(): graceful quit, waiting for the master to exit (forced after 15 s).
function Server:stop()
  if self.stopped then return end
  self.stopped = true
  local pid = self:master_pid()
  if not pid then return end
  sh("kill -QUIT " .. pid)
  local deadline = now_ms() + 15000
  while sh("kill -0 " .. pid) do
    if now_ms() > deadline then
      sh("kill -KILL " .. pid)
      break
    end
    socket.sleep(0.02)
  end
end

function Server:remove()
  self:stop()
  sh("rm -rf " .. quote(self.prefix))
end

-- ---- HTTP/1.1 client (Connection: close): streamed output arrives as
-- nginx flushes it, in chunked framing that body() undoes ----

-- Decodes the complete chunks of a chunked body; returns the data so far.
local function dechunk(s)
  local out, pos = {}, 1
  while true do
    local size_hex, after = s:match("^(%x+)[^\r\n]*\r\n()", pos)
    if not size_hex then break end
    local size = tonumber(size_hex, 16)
    if size == 0 or #s < after + size - 1 then break end
    out[#out + 1] = s:sub(after, after + size - 1)
    pos = after + size + 2
  end
  return table.concat(out)
end

local Request = {}
Request.__index = Request

-- open(path, opts) -> a request in flight (non-blocking); opts.method, opts.body
function Server:open(path, opts)
  opts = opts or {}
  local c = assert(socket.tcp())
  c:settimeout(5)
  assert(c:connect("127.0.0.1", self.port))
  local body = opts.body or ""
  local req = ("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    .. "Content-Length: %d\r\n\r\n%s")
    :format(opts.method or "GET", path, #body, body)
  assert(c:send(req))
  c:settimeout(0)
  return setmetatable({ sock = c, raw = {}, chunks = {}, t0 = now_ms(), done = false,
                        path = path }, Request)
end

-- The head and the (de-chunked) body received so far.
function Request:received()
  local text = table.concat(self.raw)
  local head, body = text:match("^(.-)\r\n\r\n(.*)$")
  if not head then return nil, "" end
  if head:lower():find("\ntransfer%-encoding:%s*chunked") then body = dechunk(body) end
  return head, body
end

-- Reads what has arrived; returns true once the response is complete.
function Request:pump()
  if self.done then return true end
  while true do
    local data, err, partial = self.sock:receive(65536)
    data = data or partial
    if data and #data > 0 then
      self.raw[#self.raw + 1] = data
      self.chunks[#self.chunks + 1] = { t = now_ms() - self.t0, data = data }
    end
    if err == "closed" then
      self.sock:close()
      self.done = true
      self.elapsed = now_ms() - self.t0
      local head, body = self:received()
      self.status = tonumber((head or ""):match("^HTTP/%d%.%d (%d+)"))
      self.headers = head
      self.body = body or ""
      return true
    elseif err == "timeout" then
      return false
    elseif err then
      error("HTTP " .. self.path .. ": " .. err)
    end
  end
end

-- wait(timeout_ms) -> self (raises on timeout)
function Request:wait(timeout_ms)
  local deadline = now_ms() + (timeout_ms or 30000)
  while not self:pump() do
    if now_ms() > deadline then error("HTTP " .. self.path .. ": no complete answer in time") end
    socket.select({ self.sock }, nil, 0.05)
  end
  return self
end

-- Waits until the body received so far contains text (raises on timeout).
function Request:wait_for(text, timeout_ms)
  local deadline = now_ms() + (timeout_ms or 30000)
  while true do
    self:pump()
    local _, body = self:received()
    if body:find(text, 1, true) then return body end
    if self.done then error("HTTP " .. self.path .. ": ended without " .. text .. ": " .. body) end
    if now_ms() > deadline then error("HTTP " .. self.path .. ": no " .. text .. " in time") end
    socket.select({ self.sock }, nil, 0.05)
  end
end

function Server:get(path, timeout_ms)
  return self:open(path):wait(timeout_ms)
end

-- Waits for every request of the array; returns it.
function M.wait_all(reqs, timeout_ms)
  local deadline = now_ms() + (timeout_ms or 30000)
  while true do
    local socks, all = {}, true
    for _, r in ipairs(reqs) do
      if not r:pump() then all = false; socks[#socks + 1] = r.sock end
    end
    if all then return reqs end
    if now_ms() > deadline then error("HTTP: requests still unanswered") end
    socket.select(socks, nil, 0.05)
  end
end

M.sh = sh
M.write = write

return M
