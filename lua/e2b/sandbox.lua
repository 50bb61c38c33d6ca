-- e2b.sandbox: one sandbox (shared/API.md, "Sandbox").
local check = require("e2b.check")
local errors = require("e2b.errors")
local rt = require("e2b.rt")
local Process = require("e2b.process")
local Files = require("e2b.files")

local M = {}

local Sandbox = {}
Sandbox.__index = Sandbox
M.Sandbox = Sandbox

local adapter = rt.adapter

-- Sandbox.new(client, raw, { owned, on_close }) -> sbx
function M.new(client, raw, opts)
  local h = assert(client._h:sandbox(raw.sandbox_id, raw.envd_access_token, raw.domain))
  local meta, id = {}, raw.sandbox_id
  for k, v in pairs(raw.metadata or {}) do
    if k == "lua_e2b_id" then id = v elseif k ~= "lua_e2b_owner" then meta[k] = v end
  end
  local self = setmetatable({
    id = id,
    sandbox_id = raw.sandbox_id,
    template = raw.alias or raw.template_id,
    metadata = meta,
    traffic_token = raw.traffic_access_token,
    domain = raw.domain or client.domain,
    _client = client,
    _h = h,
    _owned = opts.owned,
    _on_close = opts.on_close or "kill",
    _closed = false,
  }, Sandbox)
  self.files = Files.new(self)
  return self
end

function Sandbox:_tag(err)
  return rt.tag(err, self.sandbox_id)
end

function Sandbox:_finish(req, err)
  local a, b = rt.finish(req, err)
  if a == nil then return nil, self:_tag(b) end
  return a, b
end

-- Waits until envd answers /health, backing off up to ready_ms.
function Sandbox:_wait_ready(ready_ms)
  if ready_ms == 0 then return true end
  local deadline = adapter.now_ms() + ready_ms
  local delay, last = 25, nil
  while true do
    local ok, err = rt.finish(self._h:health())
    if ok then return true end
    last = err
    if errors.is(err, "auth") or errors.is(err, "invalid_argument") then break end
    if adapter.now_ms() + delay > deadline then break end
    adapter.sleep(delay)
    delay = math.min(delay * 2, 1000)
  end
  return nil, errors.new("timeout", "create",
    ("sandbox did not become ready within %d ms (last: %s)"):format(ready_ms, tostring(last)),
    { sandbox_id = self.sandbox_id })
end

-- Uploads the setup script, makes it executable and runs it with the
-- sandbox env; a failure carries the tail of its stderr.
function Sandbox:_setup(setup, env)
  local name = setup.name or "e2b-setup.sh"
  if name:find("/") then
    return nil, errors.invalid("create", "setup.name", "must be a plain file name")
  end
  local path = "/tmp/" .. name
  local ok, err = self.files:write(path, setup.script, { mode = 493 })
  if not ok then return nil, err end
  local res
  res, err = self:run({ path }, { env = env, timeout_ms = setup.timeout_ms or 600000 })
  if not res then
    err.message = "setup failed: " .. err.message
    return nil, err
  end
  if res.exit_code ~= 0 then
    local tail = res.stderr:sub(-2000)
    return nil, errors.new("sandbox", "create",
      ("setup script exited with %d: %s"):format(res.exit_code, tail),
      { exit_code = res.exit_code, stderr = tail, sandbox_id = self.sandbox_id, retryable = false })
  end
  return true
end

-- ---- commands ----

function Sandbox:spawn(cmd, opts)
  return Process.spawn(self, cmd, opts)
end

function Sandbox:run(cmd, opts)
  return Process.run(self, cmd, opts)
end

function Sandbox:processes()
  local list, err = self:_finish(self._h:processes())
  if not list then return nil, err end
  local out = {}
  for i, p in ipairs(list) do
    out[i] = { pid = p.pid, tag = p.tag, cmd = p.cmd, args = p.args, cwd = p.cwd }
  end
  return out
end

-- ---- ports ----

function Sandbox:host(port)
  assert(type(port) == "number" and port == math.floor(port) and port > 0 and port < 65536,
    "sbx:host: port must be an integer between 1 and 65535")
  return ("%d-%s.%s"):format(port, self.sandbox_id, self.domain)
end

function Sandbox:url(port, scheme)
  scheme = scheme or "https"
  assert(scheme == "https" or scheme == "wss" or scheme == "http" or scheme == "ws",
    'sbx:url: scheme must be "https", "wss", "http" or "ws"')
  local host = self:host(port)
  -- e2b-local (a loopback domain) serves plain HTTP.
  local d = self.domain:match("^[^:]+")
  if d == "localhost" or d:match("%.localhost$") or d == "127.0.0.1" then
    scheme = (scheme == "wss" or scheme == "ws") and "ws" or "http"
  end
  return scheme .. "://" .. host
end

-- ---- lifecycle ----

function Sandbox:info()
  local raw, err = self:_finish(self._client._h:info(self.sandbox_id))
  if not raw then return nil, err end
  return require("e2b.client").to_info(raw)
end

function Sandbox:set_timeout(ms)
  local ok, err = check.value("set_timeout", "ms", ms, "positive_ms")
  if not ok then return nil, err end
  return self:_finish(self._client._h:set_timeout(self.sandbox_id, ms))
end

-- pause{ mode = "memory" | "filesystem" } -> true only once it is paused.
-- Pausing a paused sandbox succeeds (it is paused); nothing else pretends.
function Sandbox:pause(opts)
  local o, err = check.options("pause", opts, { mode = check.oneof("memory", "filesystem") })
  if not o then return nil, err end
  local ok
  ok, err = rt.finish(self._client._h:pause(self.sandbox_id, (o.mode or "memory") == "memory"))
  if ok then return true end
  if errors.is(err, "conflict") then
    local info = self:info()
    if info and info.state == "paused" then return true end
  end
  return nil, self:_tag(err)
end

-- kill() -> true; killing a sandbox that is already gone succeeds.
function Sandbox:kill()
  local ok, err = rt.finish(self._client._h:kill(self.sandbox_id))
  if ok or errors.is(err, "not_found") then
    self._closed = true
    return true
  end
  return nil, self:_tag(err)
end

-- close(): applies on_close to an owned sandbox (kill by default); a
-- connected sandbox is only forgotten. Safe to call more than once.
function Sandbox:close()
  if self._closed then return true end
  self._closed = true
  if not self._owned or self._on_close == "leave" then return true end
  if self._on_close == "pause" then return self:pause() end
  local ok, err = rt.finish(self._client._h:kill(self.sandbox_id))
  if ok or errors.is(err, "not_found") then return true end
  return nil, self:_tag(err)
end

Sandbox.__close = function(self) self:close() end

return M
