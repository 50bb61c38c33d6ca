-- e2b.sandbox: one sandbox (shared/API.md, "Sandbox").
local check = require("e2b.check")
local errors = require("e2b.errors")
local rt = require("e2b.rt")
local Process = require("e2b.process")
local Files = require("e2b.files")

local unpack = table.unpack or unpack

local M = {}

local Sandbox = {}
Sandbox.__index = Sandbox
M.Sandbox = Sandbox


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

-- envd of a dead sandbox answers 502/503 from E2B's edge. After one info
-- check that becomes not_found (it is gone); a paused sandbox is said so;
-- anything else keeps the original error ("could not look" stays that).
function Sandbox:_envd_err(err)
  if type(err) ~= "table" then return err end
  err = self:_tag(err)
  if err.status ~= 502 and err.status ~= 503 then return err end
  local raw, ierr = rt.finish(self._client._h:info(self.sandbox_id))
  if not raw and errors.is(ierr, "not_found") then
    return errors.new("not_found", err.op, ("sandbox %s is gone (killed or timed out): %s")
      :format(self.sandbox_id, err.message), { sandbox_id = self.sandbox_id, status = err.status,
        retryable = false })
  elseif raw and raw.state == "paused" then
    err.message = err.message .. " (the sandbox is paused: resume it with sbx:connect() or client:resume())"
    err.retryable = false
  end
  return err
end

-- Finishes an envd request, mapping a dead sandbox to not_found.
function Sandbox:_envd(req, err)
  local a, b = rt.finish(req, err)
  if a == nil then return nil, self:_envd_err(b) end
  return a, b
end

function Sandbox:_finish(req, err)
  local a, b = rt.finish(req, err)
  if a == nil then return nil, self:_tag(b) end
  return a, b
end

-- ---- commands ----

function Sandbox:spawn(cmd, opts)
  return Process.spawn(self, cmd, opts)
end

function Sandbox:run(cmd, opts)
  return Process.run(self, cmd, opts)
end

-- attach(pid_or_tag, { offsets = { stdout, stderr } }) -> proc: continues a
-- process's output exactly where a reader stopped, from any client.
function Sandbox:attach(target, opts)
  return Process.attach(self, target, opts)
end

function Sandbox:processes()
  local list, err = self:_envd(self._h:processes())
  if not list then return nil, err end
  local out = {}
  for i, p in ipairs(list) do
    local cmd, args = p.cmd, p.args
    -- A tracked command runs under lua-e2b's wrapper: show the command itself.
    if args[1] == "-c" and (args[3] == "e2b-proc" or args[3] == "e2b-env") then
      local first = args[3] == "e2b-proc" and 5 or 4
      cmd, args = args[first], { unpack(args, first + 1) }
    end
    out[i] = { pid = p.pid, tag = p.tag, cmd = cmd, args = args, cwd = p.cwd }
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

-- connect() -> self: resumes this sandbox if it is paused (as client:connect
-- does) and keeps using this handle; never shortens a running deadline.
function Sandbox:connect()
  local raw, err = rt.finish(self._client._h:attach(self.sandbox_id, self._client._timeout_ms))
  if not raw then return nil, self:_tag(err) end
  self._h = assert(self._client._h:sandbox(raw.sandbox_id, raw.envd_access_token, raw.domain))
  return self
end

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
  return self:_finish(self._client._h:pause(self.sandbox_id, (o.mode or "memory") == "memory"))
end

-- keep_alive(ms): the deadline becomes at least now + ms, never earlier.
function Sandbox:keep_alive(ms)
  local ok, err = check.value("keep_alive", "ms", ms, "positive_ms")
  if not ok then return nil, err end
  return self:_finish(self._client._h:keep_alive(self.sandbox_id, ms))
end

-- set_network(policy): replaces the egress policy of the running sandbox.
function Sandbox:set_network(net)
  local fields, err = require("e2b.policy").network("set_network", net, "policy")
  if not fields then return nil, err end
  return self:_finish(self._client._h:set_network(self.sandbox_id, {
    allow_internet_access = fields.allow_internet_access,
    allow_out = fields.allow_out, deny_out = fields.deny_out,
  }))
end

-- snapshot(name) -> { id, names }: a template to create sandboxes from; a
-- snapshot of the same name is replaced (E2B gives the name a new build).
function Sandbox:snapshot(name)
  local ok, err = check.value("snapshot", "name", name, "nonempty")
  if not ok then return nil, err end
  local list
  list, err = self:_finish(self._client._h:snapshot(self.sandbox_id, name))
  if not list then return nil, err end
  return { id = list[1].snapshot_id, snapshot_id = list[1].snapshot_id, names = list[1].names }
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
