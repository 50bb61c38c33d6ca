--- e2b.sandbox: one sandbox (docs/manual.md, "Sandbox").
-- @module e2b.sandbox
local check = require("e2b.check")
local errors = require("e2b.errors")
local rt = require("e2b.rt")
local Process = require("e2b.process")
local Files = require("e2b.files")
local Git = require("e2b.git")
local mcp = require("e2b.mcp")
local policy = require("e2b.policy")


local M = {}

--- A sandbox handle, from `Client:create` (owned) or `Client:connect` /
-- `Client:resume` (external). Every method returning values returns
-- nil, err on failure.
-- @type Sandbox
-- @field id the logical id (the provider id when it has none); nil on a
--   handle from `Client:connect` that read nothing (`info()` has it)
-- @field sandbox_id the provider id
-- @field template template alias, else id
-- @field metadata E2B metadata without lua-e2b's reserved keys (nil as id is)
-- @field traffic_token value for the e2b-traffic-access-token header, or nil
-- @field domain the domain its ports are served under
-- @field files the sandbox's filesystem (`e2b.files.Files`)
-- @field git git in the sandbox (`e2b.git.Git`)
local Sandbox = rt.class(M, "Sandbox")

-- What close() may do to an owned sandbox, and what it does unless told
-- (the client's and fork's on_close take both from here).
M.ON_CLOSE = check.oneof("kill", "pause", "leave")
M.ON_CLOSE_DEFAULT = "kill"

-- The network E2B reports, rules shaped as the create option takes them.
local function network_info(net)
  if not net then return nil end
  local out = {}
  for k, v in pairs(net) do out[k] = v end
  if net.rules then
    out.rules = {}
    for domain, headers in pairs(net.rules) do out.rules[domain] = { headers = headers } end
  end
  return out
end

-- The info record (docs/manual.md, "Records"), from a control-plane sandbox table.
function M.to_info(raw)
  return {
    id = raw.id,
    sandbox_id = raw.sandbox_id,
    template = raw.alias or raw.template_id,
    template_id = raw.template_id,
    state = raw.state,
    metadata = raw.metadata,
    owner = raw.owner,
    started_at = raw.started_at,
    end_at = raw.end_at,
    cpu_count = raw.cpu_count,
    memory_mb = raw.memory_mb,
    disk_size_mb = raw.disk_size_mb,
    envd_version = raw.envd_version,
    domain = raw.domain,
    lifecycle = raw.on_timeout and { on_timeout = raw.on_timeout, auto_resume = raw.auto_resume } or nil,
    allow_internet_access = raw.allow_internet_access,
    network = network_info(raw.network),
  }
end

-- What e2b.files, e2b.git and e2b.process may ask of their sandbox (they
-- read nothing else of it): its envd calls, what their failures mean, and
-- its commands (files' tar and chmod, git's runs).
local function envd_port(self)
  local port
  port = {
    user = self._port.user,
    sandbox_id = self.sandbox_id,
    -- The envd call `name` of the current handle (connect() may replace it).
    call = function(name, ...)
      local h = self._h
      return h[name](h, ...)
    end,
    explain = function(req, err) return self:_explain(req, err) end,
    envd = function(req, err) return self:_envd(req, err) end,
    run = function(cmd, opts) return Process.run(port, cmd, opts) end,
    spawn = function(cmd, opts) return Process.spawn(port, cmd, opts) end,
  }
  return port
end

-- Sandbox.new(port, raw, { owned, on_close }) -> sbx; port: what it may ask
-- of its client (e2b.client's sandbox_port).
function M.new(port, raw, opts)
  local client = port.client
  local self = setmetatable({
    id = raw.id,
    sandbox_id = raw.sandbox_id,
    template = raw.alias or raw.template_id,
    metadata = raw.metadata,
    traffic_token = raw.traffic_access_token,
    domain = raw.domain or client.domain,
    _client = client,
    _port = port,
    _mcp_token = raw.mcp_token, -- a create with mcp made it; a secret, never a public field
    _lifetime_ms = raw.lifetime_ms, -- what it was created with, for a resume to ask for
    _h = port.envd(raw),
    _owned = opts.owned,
    _on_close = opts.on_close or M.ON_CLOSE_DEFAULT,
    _closed = false,
  }, Sandbox)
  self._envd_port = envd_port(self)
  self.files = Files.new(self._envd_port)
  self.git = Git.new(self._envd_port)
  return self
end

function Sandbox:_tag(err)
  return rt.tag(err, self.sandbox_id)
end

-- What the failure of an envd request means for the sandbox (gone,
-- paused, or the error itself) is the core's call (e2b_sbx_explain), made
-- on req's own error before req is closed; this only asks. A call that
-- never started (req nil) needs no look.
function Sandbox:_explain(req, err)
  local look = req and self._h:explain(req)
  if look then
    local _, explained = rt.finish(look)
    if explained then err = explained end
  end
  return self:_tag(err)
end

-- Finishes an envd request, mapping a dead sandbox to not_found.
function Sandbox:_envd(req, err)
  if not req then return nil, self:_tag(err) end
  return rt.finish(req, nil, function(r, e) return self:_explain(r, e) end)
end

function Sandbox:_finish(req, err)
  local a, b = rt.finish(req, err)
  if a == nil then return nil, self:_tag(b) end
  return a, b
end

-- ---- commands ----

--- Starts a command and returns once it has started.
-- Takes run's options, plus: stdin = true (kept open for proc:write), pty = { cols, rows },
-- park = true or false (a kept command that runs on for 2 s gives up its own stream
-- and ends through the sandbox's watch, with the same result: a connection less each
-- for thousands of long commands; one SIGKILLed by anything but its own kill() then
-- ends up to about 1.5 s later than an unparked one). true parks, false never; by
-- default the first 256 such commands of a Lua state keep their streams and later
-- ones park.
-- @param cmd a string (run by bash -l -c) or an array { argv... } (no shell)
-- @tparam[opt] table opts see `Sandbox:run`
-- @treturn e2b.process.Process
-- @return or nil, err
function Sandbox:spawn(cmd, opts)
  return Process.spawn(self._envd_port, cmd, opts)
end

--- Runs a command to its end. A non-zero exit is a result, not an error.
-- On a failure after the start the process group is killed and err.stdout,
-- err.stderr (what was read) and err.pid are set.
-- @param cmd a string (run by bash -l -c) or an array { argv... } (no shell)
-- @tparam[opt] table opts
-- @tparam[opt] string opts.cwd default: the user's home
-- @tparam[opt] table opts.env { NAME = value }; values never appear on a command line
-- @tparam[opt="extend"] string opts.env_mode "extend" or "replace" (only env + PATH)
-- @tparam[opt] string opts.user default: the client's user ("user")
-- @tparam[opt] int opts.timeout_ms run time, positive; none by default; past it the
--   group is killed and the call fails with kind "timeout"
-- @tparam[opt=90000] int opts.idle_timeout_ms a stream silent this long fails ("timeout")
-- @tparam[opt] func opts.on_stdout called with each stdout (and pty) chunk
-- @tparam[opt] func opts.on_stderr called with each stderr chunk
-- @tparam[opt=67108864] int opts.max_output bytes kept per stream (64 MiB); past it
--   the run fails (kind "sandbox") unless keep = "tail"
-- @tparam[opt] string opts.keep what the result keeps of each stream: "all" (default
--   without a callback), "tail" (the last max_output bytes, sets bytes_dropped) or
--   "none" (default for a stream with on_stdout/on_stderr: the caller has the bytes)
-- @tparam[opt] string opts.tag names the process (default "e2b-<uuid>")
-- @tparam[opt=true] boolean opts.keep_output keep output in the sandbox for attach()
-- @tparam[opt] string opts.stdin bytes written, then stdin is closed
-- @treturn table result { exit_code, ok, stdout, stderr, status, error,
--   pty (pty only), bytes_dropped (keep = "tail" only) }
-- @return or nil, err
function Sandbox:run(cmd, opts)
  return Process.run(self._envd_port, cmd, opts)
end

--- Continues a process's output exactly where a reader stopped, from any
-- client. A process whose output is not kept is followed from now (offsets 0).
-- @param target a pid (integer) or a tag (string)
-- @tparam[opt] table opts
-- @tparam[opt] table opts.offsets { stdout = n, stderr = m }: bytes already taken (default 0)
-- @tparam[opt=90000] int opts.idle_timeout_ms
-- @treturn e2b.process.Process
-- @return or nil, err
function Sandbox:attach(target, opts)
  return Process.attach(self._envd_port, target, opts)
end

--- The processes envd runs (a kept command shown as itself, not its wrapper).
-- @treturn {table,...} array of { pid, tag, cmd, args, cwd, kept }; kept is
--   true when its output is kept (attach() can continue it)
-- @return or nil, err
function Sandbox:processes()
  return self:_envd(self._h:processes())
end

--- Kills a process by pid or tag without attaching to it (the SDKs'
-- commands.kill): SIGKILL to its group, true once it is gone.
-- @param target pid (positive integer) or tag (string)
-- @treturn boolean true when it was killed, false when no such process runs
-- @return or nil, err
function Sandbox:kill_process(target)
  if type(target) ~= "string" and not (type(target) == "number" and target >= 1 and target == math.floor(target)) then
    return nil, errors.invalid("kill_process", "target", "must be a pid (positive integer) or a tag")
  end
  -- SIGKILL only if envd lists it (not_found: none runs), then its group,
  -- which may take 2 s to go, as Process:kill allows it
  local ok, err = self:_envd(self._h:signal(target, 9))
  if not ok then
    if errors.is(err, "not_found") then return false end
    return nil, err
  end
  ok, err = self:_envd(self._h:kill(target))
  if not ok then return nil, err end
  return true
end

-- ---- ports ----

--- The MCP gateway's URL (a sandbox created with `mcp`): its port 50005, path /mcp.
-- @treturn string "https://50005-<sandbox_id>.<domain>/mcp"
function Sandbox:mcp_url()
  return mcp.url(self)
end

--- The MCP gateway's access token: the one this handle's create started it
-- with, else the one the gateway keeps (/etc/mcp-gateway/.token, read as
-- root), as the SDKs' getMcpToken.
-- @treturn string
-- @return or nil, err (kind "not_found" when the sandbox has no gateway's token)
function Sandbox:mcp_token()
  if self._mcp_token then return self._mcp_token end
  local token, err = self.files:read(mcp.TOKEN_FILE, { user = "root" })
  if not token then return nil, err end
  self._mcp_token = token
  return token
end

--- The host name a port of the sandbox is served at.
-- @tparam int port 1-65535
-- @treturn string "<port>-<sandbox_id>.<domain>"
-- @raise when port is not an integer in range
function Sandbox:host(port)
  assert(type(port) == "number" and port == math.floor(port) and port > 0 and port < 65536,
    "sbx:host: port must be an integer between 1 and 65535")
  return ("%d-%s.%s"):format(port, self.sandbox_id, self.domain)
end

--- The URL of a port of the sandbox (http/ws on a bare "localhost[:port]" or
-- "127.0.0.1[:port]" domain, as e2b-local --no-tls prints; e2b-local's
-- "e2b.localhost:PORT" is HTTPS, like E2B).
-- @tparam int port 1-65535
-- @tparam[opt="https"] string scheme "https", "wss", "http" or "ws"
-- @treturn string
-- @raise on a bad port or scheme
function Sandbox:url(port, scheme)
  scheme = scheme or "https"
  assert(scheme == "https" or scheme == "wss" or scheme == "http" or scheme == "ws",
    'sbx:url: scheme must be "https", "wss", "http" or "ws"')
  local host = self:host(port)
  -- e2b-local without TLS (a bare loopback domain) serves plain HTTP.
  local d = self.domain:match("^[^:]+")
  if d == "localhost" or d == "127.0.0.1" then
    scheme = (scheme == "wss" or scheme == "ws") and "ws" or "http"
  end
  return scheme .. "://" .. host
end

local METRICS_SPEC = { start = "count", end_ = "count" }

--- Samples of the sandbox's resource use, oldest first (the SDKs' getMetrics).
-- @tparam[opt] table opts
-- @tparam[opt] int opts.start epoch ms (default: the sandbox's start)
-- @tparam[opt] int opts.end_ epoch ms (default: now); not before start
-- @treturn {table,...} array of { timestamp (epoch ms), cpu_count, cpu_used_pct,
--   mem_used, mem_total, mem_cache, disk_used, disk_total (bytes) }
-- @return or nil, err
function Sandbox:metrics(opts)
  local o, err = check.options("metrics", opts, METRICS_SPEC)
  if not o then return nil, err end
  return self:_finish(self._port.call("metrics", self.sandbox_id, o.start, o.end_))
end

-- ---- lifecycle ----

--- Resumes this sandbox if it is paused (as `Client:connect` does) and keeps
-- using this handle; never shortens a running sandbox's deadline.
-- @treturn Sandbox self
-- @return or nil, err
function Sandbox:connect()
  local raw, err = self._port.attach(self.sandbox_id)
  if not raw then return nil, self:_tag(err) end
  self._h = self._port.envd(raw)
  return self
end

--- Describes the sandbox. Never resumes.
-- @treturn table info (see `e2b.client.Client:describe`)
-- @return or nil, err
function Sandbox:info()
  local raw, err = self:_finish(self._port.call("info", self.sandbox_id))
  if not raw then return nil, err end
  return M.to_info(raw)
end

-- set_timeout and keep_alive: ms checked, then the core's call of the same op.
function Sandbox:_deadline(op, ms)
  local ok, err = check.value(op, "ms", ms, "positive_ms")
  if not ok then return nil, err end
  return self:_finish(self._port.call(op, self.sandbox_id, ms))
end

--- Sets the deadline to exactly now + ms (it may shorten it).
-- @tparam int ms positive
-- @treturn boolean true
-- @return or nil, err
function Sandbox:set_timeout(ms)
  return self:_deadline("set_timeout", ms)
end

--- Pauses the sandbox; true only once it is paused. Pausing a paused
-- sandbox succeeds (it is paused); nothing else pretends.
-- @tparam[opt] table opts
-- @tparam[opt="memory"] string opts.mode "memory" (processes continue after a resume)
--   or "filesystem" (only files are kept)
-- @treturn boolean true
-- @return or nil, err
function Sandbox:pause(opts)
  local o, err = check.options("pause", opts, { mode = check.oneof("memory", "filesystem") })
  if not o then return nil, err end
  local ok
  ok, err = self:_finish(self._port.call("pause", self.sandbox_id, (o.mode or "memory") == "memory"))
  if ok then self._port.paused(self.sandbox_id, self._lifetime_ms) end
  return ok, err
end

--- Moves the deadline to at least now + ms, never earlier.
-- @tparam int ms positive
-- @treturn boolean true
-- @return or nil, err
function Sandbox:keep_alive(ms)
  return self:_deadline("keep_alive", ms)
end

--- Replaces the egress policy of the running sandbox: allow/deny, rules and
-- egress proxy together (what it leaves out is cleared).
-- @param net "all", "none", or a table: allow = {hosts, IPs, CIDRs} or
--   deny = {IPs, CIDRs}, allow_internet_access, rules = { [domain] = { headers } },
--   egress_proxy = { address, username, password } (docs/manual.md, "Sandboxes")
-- @treturn boolean true
-- @return or nil, err (allow with deny: kind "unsupported"; create-only options
--   allow_public_traffic and mask_request_host: "invalid_argument")
function Sandbox:set_network(net)
  local fields, err = policy.network("set_network", net, true)
  if not fields then return nil, err end
  return self:_finish(self._port.call("set_network", self.sandbox_id, fields))
end

local FORK_SPEC = { count = "positive", timeout_ms = "positive_ms", on_close = M.ON_CLOSE }

--- Forks the sandbox: snapshots it in place (it goes on running) and
-- creates `count` new sandboxes from that snapshot, with its settings and
-- metadata. All or nothing: when one fork does not start, those that did
-- are killed and the call fails. The forks are owned by this client
-- (close() applies on_close) and carry their own ids (a fork is not the
-- parent: its logical id is its sandbox id, its owner this client's).
-- @tparam[opt] table opts
-- @tparam[opt=1] int opts.count 1-100
-- @tparam[opt] int opts.timeout_ms each fork's lifetime (default 300000, as the SDKs')
-- @tparam[opt] string opts.on_close "kill" (default), "pause" or "leave"
-- @treturn {Sandbox,...} the forks
-- @return or nil, err
function Sandbox:fork(opts)
  local o, err = check.options("fork", opts, FORK_SPEC)
  if not o then return nil, err end
  local raws
  raws, err = self:_finish(self._port.call("fork", self.sandbox_id, o.timeout_ms, o.count))
  if not raws then return nil, err end
  local forks = {}
  for i, raw in ipairs(raws) do
    forks[i] = M.new(self._port, raw, { owned = true, on_close = o.on_close or self._port.on_close })
  end
  return forks
end

--- Snapshots the sandbox: a template to create sandboxes from; a snapshot
-- of the same name is replaced (E2B gives the name a new build).
-- @tparam string name
-- @treturn table { id, snapshot_id, names }
-- @return or nil, err
function Sandbox:snapshot(name)
  local ok, err = check.value("snapshot", "name", name, "nonempty")
  if not ok then return nil, err end
  local list
  list, err = self:_finish(self._port.call("snapshot", self.sandbox_id, name))
  if not list then return nil, err end
  return { id = list[1].snapshot_id, snapshot_id = list[1].snapshot_id, names = list[1].names }
end

--- Kills the sandbox, owned or not; one already gone counts as killed.
-- @treturn boolean true
-- @return or nil, err
function Sandbox:kill()
  local ok, err = rt.finish(self._port.call("kill", self.sandbox_id)) -- gone counts as killed: the core's rule
  if ok then
    self._closed = true
    self._h:flush_forgets(true)
    return true
  end
  return nil, self:_tag(err)
end

--- Applies on_close to an owned sandbox (kill by default, "pause", or
-- "leave"); a connected sandbox is only forgotten. Safe to call more than
-- once; also what `<close>` does.
-- @treturn boolean true
-- @return or nil, err
function Sandbox:close()
  if self._closed then return true end
  self._closed = true
  -- A sandbox left running keeps no output of closed commands.
  if not self._owned or self._on_close ~= "kill" then self._h:flush_forgets() end
  if not self._owned or self._on_close == "leave" then return true end
  if self._on_close == "pause" then return self:pause() end
  return self:kill()
end

Sandbox.__close = function(self) self:close() end

return M
