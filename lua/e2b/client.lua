--- e2b.client: the control-plane face of lua-e2b (docs/manual.md, "Client").
-- The rules (identity, serialised creates, readiness, setup, reaping...)
-- live in libe2b; this file checks options and shapes results.
-- @module e2b.client
local core = require("e2b.core")
local cancel = require("e2b.cancel")
local check = require("e2b.check")
local errors = require("e2b.errors")
local mcp = require("e2b.mcp")
local policy = require("e2b.policy")
local rt = require("e2b.rt")
local Sandbox = require("e2b.sandbox")
local Template = require("e2b.template")
local Volume = require("e2b.volume")

local M = {}

-- Metadata keys libe2b keeps beside the caller's (E2B_META_ID / _OWNER);
-- every key starting with core.META_PREFIX is reserved to it.
M.ID_KEY, M.OWNER_KEY = core.META_ID, core.META_OWNER

local Client = rt.class(M, "Client")

local ON_CLOSE = Sandbox.ON_CLOSE

local function network_checker(v)
  if type(v) ~= "string" and type(v) ~= "table" then
    return 'must be "all", "none" or a table'
  end
end

-- The options a client gives every sandbox it creates and create() may
-- override: checked the same way in both places.
local SANDBOX_DEFAULTS = {
  template = "nonempty",
  timeout_ms = "positive_ms",
  network = network_checker,
  lifecycle = "table",
  on_close = ON_CLOSE,
  ready_timeout_ms = "ms",
}

-- spec with the SANDBOX_DEFAULTS keys added.
local function with_sandbox_defaults(spec)
  for k, v in pairs(SANDBOX_DEFAULTS) do spec[k] = v end
  return spec
end

local CLIENT_SPEC = with_sandbox_defaults({
  api_key = "string",
  domain = "nonempty",
  api_url = "nonempty",
  sandbox_url = "nonempty",
  ca_file = "nonempty",
  request_timeout_ms = "positive_ms",
  budget_ms = "positive_ms",
  user = "nonempty",
  owner = "nonempty",
  max_retries = "count",
  max_concurrent = "positive",
  page_size = function(v)
    if type(v) ~= "number" or v ~= math.floor(v) or v < 1 or v > 100 then
      return "must be an integer between 1 and 100"
    end
  end,
})

-- What a Sandbox may ask of its client (e2b.sandbox reads nothing else of
-- it): the calls on its sandbox id and the defaults it inherits.
local function sandbox_port(self)
  local h = self._h
  return {
    client = self, -- the owner (sbx._client)
    user = self._user,
    on_close = self._on_close,
    -- The envd handle of a control-plane sandbox table.
    envd = function(raw)
      return assert(h:sandbox(raw.sandbox_id, raw.envd_access_token, raw.domain, raw.envd_version))
    end,
    -- Connects (resuming a paused one), asking for the client's timeout_ms,
    -- or the lifetime it was created with when a handle of this client
    -- paused it (paused_by_me), which saves the /timeout after the connect.
    attach = function(sandbox_id)
      return rt.finish(h:attach(sandbox_id, self._timeout_ms, self:_take_paused(sandbox_id)))
    end,
    -- A handle of this client paused sandbox_id, created with lifetime_ms.
    paused = function(sandbox_id, lifetime_ms) self:_note_paused(sandbox_id, lifetime_ms) end,
    -- The core call `name` on a sandbox id: a request.
    call = function(name, sandbox_id, ...) return h[name](h, sandbox_id, ...) end,
  }
end

--- Makes a client (what `e2b.client` calls). No I/O; the API key is not
-- needed here (calls without one fail with kind "auth").
-- @tparam[opt] table opts
-- @tparam[opt] string opts.api_key default: env E2B_API_KEY
-- @tparam[opt] string opts.domain default: env E2B_DOMAIN, else "e2b.app"
-- @tparam[opt] string opts.api_url default: env E2B_API_URL, else "https://api.<domain>"
--   ("http://" for a bare "localhost[:port]" or "127.0.0.1[:port]" domain)
-- @tparam[opt] string opts.sandbox_url default: env E2B_SANDBOX_URL; when set all envd
--   traffic goes there, routed by the E2b-Sandbox-Id header
-- @tparam[opt] string opts.ca_file PEM file of certificate authorities to trust besides
--   the system's certificate directory, e.g. e2b-local's CA; default: env E2B_CA_FILE
--   (which `e2b-local exec` sets); a file that cannot be read is kind "invalid_argument"
-- @tparam[opt=60000] int opts.request_timeout_ms positive: each attempt of a unary
--   request, and a stream's connect time
-- @tparam[opt=60000] int opts.budget_ms positive: one unary call's total time, every
--   attempt and backoff included; a spent budget is kind "timeout" naming budget_ms
-- @tparam[opt=3] int opts.max_retries extra attempts after a retryable failure of an
--   idempotent call (backoff 125-4000 ms with jitter, Retry-After up to 60 s); 0: none
-- @tparam[opt=16] int opts.max_concurrent control-plane requests in flight; the rest queue
-- @tparam[opt=100] int opts.page_size 1-100, sandboxes per list page
-- @tparam[opt] string opts.template default template: env E2B_TEMPLATE, else "base"
-- @tparam[opt=300000] int opts.timeout_ms default sandbox lifetime (also what connect
--   and resume ask for)
-- @param[opt="all"] opts.network default network policy: "all", "none", or a table
--   { allow = {hosts, IPs, CIDRs} } or { deny = {IPs, CIDRs} }, with rules,
--   egress_proxy, allow_internet_access, allow_public_traffic, mask_request_host
--   (docs/manual.md, "Sandboxes")
-- @tparam[opt] table opts.lifecycle default lifecycle (see `Client:create`)
-- @tparam[opt="user"] string opts.user user for commands, files and setup
-- @tparam[opt] string opts.owner owner tag, default env E2B_OWNER, else "<user>@<hostname>"
-- @tparam[opt="kill"] string opts.on_close "kill", "pause" or "leave"
-- @tparam[opt=0] int opts.ready_timeout_ms default wait for envd at create; 0: none (E2B answers a
--   create once envd is up)
-- @treturn Client
-- @return or nil, err (kind "invalid_argument" naming the field)
function M.new(opts)
  local op = "client"
  local o, err = check.options(op, opts, CLIENT_SPEC)
  if not o then return nil, err end
  local net
  net, err = policy.network(op, o.network or "all")
  if not net then return nil, err end
  local lc
  lc, err = policy.lifecycle(op, o.lifecycle)
  if not lc then return nil, err end
  local h
  h, err = core.client(rt.adapter.loop, {
    api_key = o.api_key, domain = o.domain, api_url = o.api_url, sandbox_url = o.sandbox_url,
    ca_file = o.ca_file,
    template = o.template, request_timeout_ms = o.request_timeout_ms, budget_ms = o.budget_ms,
    owner = o.owner, user_agent = "lua-e2b/" .. core.VERSION, -- libe2b's own default says libe2b
    max_retries = o.max_retries, -- 0: none (the binding says it as E2B_NO_RETRY)
    max_inflight = o.max_concurrent, page_size = o.page_size,
  })
  if not h then return nil, err end
  local self = setmetatable({
    _h = h,
    _timeout_ms = o.timeout_ms or core.DEFAULTS.sandbox_timeout_ms,
    _network = o.network or "all",
    _lifecycle = o.lifecycle,
    _user = o.user or "user",
    _on_close = o.on_close or Sandbox.ON_CLOSE_DEFAULT,
    _ready_timeout_ms = o.ready_timeout_ms,
  }, Client)
  self._port = sandbox_port(self)
  local cfg = h:config()
  self.api_url, self.domain, self.sandbox_url, self.template, self.owner =
    cfg.api_url, cfg.domain, cfg.sandbox_url, cfg.template, cfg.owner
  self.ca_file = cfg.ca_file
  self.request_timeout_ms, self.budget_ms = cfg.request_timeout_ms, cfg.budget_ms
  return self
end

local to_info = Sandbox.to_info
M.to_info = to_info

local function infos(raws)
  local out = {}
  for i = 1, #raws do out[i] = to_info(raws[i]) end
  return out
end

--- A client: one E2B account and endpoint, its defaults for the sandboxes
-- it creates and its transport limits. Made by `e2b.client` (`new`).
-- @type Client
-- @field api_url the control-plane base URL in use
-- @field domain the sandbox domain in use
-- @field sandbox_url the envd URL override, or nil
-- @field ca_file the extra CA file in use, or nil
-- @field template the default template
-- @field owner the owner tag put in created sandboxes

--- The cheapest authenticated call: one list of at most one sandbox.
-- Allocates nothing; reports a missing or wrong key as kind "auth".
-- @treturn boolean true
-- @return or nil, err
function Client:probe()
  local page, err = rt.finish(self._h:list({ limit = 1 }))
  if not page then return nil, rt.relabel(err, "probe") end
  return true
end

local SETUP_SPEC = { script = "string", name = "nonempty", timeout_ms = "positive_ms" }

local function volumes_checker(v)
  if type(v) ~= "table" then return "must be a table { [mount_path] = volume_name }" end
  for path, name in pairs(v) do
    if type(path) ~= "string" or path:sub(1, 1) ~= "/" then
      return "every mount needs an absolute path as its key"
    end
    if type(name) ~= "string" or name == "" then return "volume names must be non-empty strings" end
  end
end

local CREATE_SPEC = with_sandbox_defaults({
  id = "nonempty",
  cancel = "cancel",
  env = "string_map",
  metadata = "string_map",
  secure = "boolean",
  setup = function(v)
    if type(v) ~= "string" and type(v) ~= "table" then
      return "must be a script string or a table { script, name, timeout_ms }"
    end
  end,
  volumes = volumes_checker,
  mcp = function(v)
    if type(v) ~= "table" then return "must be a table of MCP servers (the gateway's configuration)" end
  end,
})

--- Creates a sandbox, waits for its envd, runs the setup script, then
-- applies the network policy. Any failure after allocation destroys the
-- allocation first. An explicit id is looked up before and after
-- allocation (a duplicate: kind "conflict"); creates of one client are
-- serialised.
-- @tparam[opt] table opts
-- @tparam[opt] string opts.id logical id, 1-256 bytes of UTF-8; default a new UUIDv4
-- @tparam[opt] string opts.template default: the client's
-- @tparam[opt] int opts.timeout_ms lifetime, positive; default: the client's (300000)
-- @tparam[opt] table opts.env { NAME = value } for every command (and setup)
-- @tparam[opt] table opts.metadata { key = value }; keys starting with lua_e2b_ are reserved
-- @param[opt] opts.network policy (as `new`'s); default: the client's ("all")
-- @tparam[opt] table opts.lifecycle { on_timeout = "kill"|"pause", keep_memory = bool
--   (only with "pause"), auto_resume = bool (requires "pause", not keep_memory = false) }
-- @tparam[opt=true] boolean opts.secure envd requires the access token
-- @param[opt] opts.setup a script string, or { script, name = "e2b-setup.sh" (under /tmp),
--   timeout_ms = 600000 }; run as the client's user with env; a non-zero exit: kind "sandbox"
-- @tparam[opt] int opts.ready_timeout_ms wait for envd's /health; default the client's (0: none)
-- @tparam[opt] string opts.on_close "kill", "pause" or "leave"; default the client's ("kill")
-- @tparam[opt] table opts.volumes { [absolute mount path] = volume name }
-- @tparam[opt] table opts.mcp an MCP gateway's configuration ({ [server] = { ... } }, sent as
--   JSON): the template defaults to "mcp-gateway" and the gateway is started as root with an
--   access token of its own (`Sandbox:mcp_url`, `Sandbox:mcp_token`); failing: kind "sandbox"
-- @treturn e2b.sandbox.Sandbox an owned sandbox
-- @return or nil, err
function Client:create(opts)
  local op = "create"
  local o, err = check.options(op, opts, CREATE_SPEC)
  if not o then return nil, err end
  local net
  net, err = policy.network(op, o.network or self._network)
  if not net then return nil, err end
  local lc
  lc, err = policy.lifecycle(op, o.lifecycle or self._lifecycle)
  if not lc then return nil, err end
  local setup = o.setup
  if type(setup) == "string" then setup = { script = setup } end
  if setup ~= nil then
    local s
    s, err = check.options(op, setup, SETUP_SPEC, "setup")
    if not s then return nil, err end
    if type(setup.script) ~= "string" then
      return nil, errors.invalid(op, "setup.script", "is required")
    end
  end
  -- reserved metadata keys (core.META_PREFIX) are the core's rule: its provision refuses them
  local mcp_text
  if o.mcp ~= nil then
    local why
    mcp_text, why = mcp.encode(o.mcp)
    if not mcp_text then return nil, errors.invalid(op, "mcp", why) end
  end
  local ready = o.ready_timeout_ms or self._ready_timeout_ms
  local raw
  -- canceled, the core's provision destroys what it made (as on any failure)
  raw, err = cancel.scope(o.cancel, rt.finish, self._h:provision({
    id = o.id,
    template = o.template,
    timeout_ms = o.timeout_ms or self._timeout_ms,
    secure = o.secure ~= false,
    env = o.env,
    metadata = o.metadata,
    volume_mounts = o.volumes,
    mcp = mcp_text,
    auto_pause = lc.auto_pause,
    auto_pause_memory = lc.auto_pause_memory,
    auto_resume = lc.auto_resume,
    network = net,
    ready_timeout_ms = ready, -- 0: no wait (the binding says it as libe2b's -1)
    setup_script = setup and setup.script,
    setup_name = setup and setup.name,
    setup_timeout_ms = setup and setup.timeout_ms,
    user = self._user,
  }))
  if not raw then return nil, err end
  return Sandbox.new(self._port, raw, { owned = true, on_close = o.on_close or self._on_close })
end

-- The calls on one sandbox by id: the id checked (`field` names it), then
-- the core's call `call` with it and the rest; a failure carries the id.
function Client:_by_id(op, field, call, id, ...)
  local ok, err = check.value(op, field, id, "nonempty")
  if not ok then return nil, err end
  local res
  res, err = rt.finish(self._h[call](self._h, id, ...))
  if not res then return nil, rt.tag(err, id) end
  return res
end

--- Describes a sandbox by logical or provider id. Never resumes: it only reads.
-- @tparam string id
-- @treturn table info { id, sandbox_id, template, template_id, state, metadata, owner,
--   started_at, end_at }
-- @return or nil, err (kind "not_found" only when it is known not to exist;
--   "conflict" when two sandboxes carry the id)
function Client:describe(id)
  local raw, err = self:_by_id("describe", "id", "describe", id)
  if not raw then return nil, err end
  return to_info(raw)
end

local STATE_CHECK = function(v)
  if type(v) ~= "table" then return 'must be an array of "running" / "paused"' end
  for _, s in ipairs(v) do
    if s ~= "running" and s ~= "paused" then return 'entries must be "running" or "paused"' end
  end
end

local LIST_SPEC = {
  metadata = "string_map", state = STATE_CHECK, template = "nonempty", started_after = "count",
  order = check.oneof("asc", "desc"),
}

-- The core's list options from checked opts.
local function list_opts(o)
  return {
    metadata = o.metadata, states = o.state, template = o.template, started_after = o.started_after,
    order = o.order, limit = o.limit, next_token = o.next_token,
  }
end

--- Lists sandboxes, every page.
-- @tparam[opt] table opts
-- @tparam[opt] table opts.metadata { key = value }: all pairs must match
-- @tparam[opt] table opts.state array of "running" / "paused" (default both)
-- @tparam[opt] string opts.template only sandboxes of this template id or alias
-- @tparam[opt] int opts.started_after only sandboxes started at or after (epoch ms)
-- @tparam[opt] string opts.order "asc" or "desc" by start time (default: newest first)
-- @treturn {table,...} array of info
-- @return or nil, err
function Client:list(opts)
  local o, err = check.options("list", opts, LIST_SPEC)
  if not o then return nil, err end
  local raws
  raws, err = rt.finish(self._h:find(list_opts(o)))
  if not raws then return nil, err end
  return infos(raws)
end

local PAGE_SPEC = { limit = "positive", next_token = "nonempty" }
for k, v in pairs(LIST_SPEC) do PAGE_SPEC[k] = v end

--- Lists one page of sandboxes, as the SDKs' paginator does.
-- @tparam[opt] table opts list's filters, plus:
-- @tparam[opt] int opts.limit sandboxes on the page, 1-100 (default: E2B's)
-- @tparam[opt] string opts.next_token where the previous page ended
-- @treturn {table,...} array of info
-- @treturn string|nil the next page's token; nil on the last page
-- @return or nil, err
function Client:list_page(opts)
  local o, err = check.options("list_page", opts, PAGE_SPEC)
  if not o then return nil, err end
  local raws, token = rt.finish(self._h:list(list_opts(o)))
  if not raws then return nil, token end
  return infos(raws), token
end

--- Kills a sandbox by logical or provider id. Idempotent: an absent sandbox
-- counts as destroyed.
-- @tparam string id
-- @treturn boolean true
-- @return or nil, err
function Client:destroy(id)
  return self:_by_id("destroy", "id", "destroy", id)
end

-- The sandboxes this client's handles paused, with the lifetime each was
-- created with (bounded: past PAUSED_MAX the oldest is forgotten, and a
-- connect then restores the lifetime with one request more).
local PAUSED_MAX = 256

function Client:_note_paused(sandbox_id, lifetime_ms)
  local p = self._paused
  if not p then
    p = { ms = {}, order = {} }
    self._paused = p
  end
  if not lifetime_ms then return end
  if not p.ms[sandbox_id] then
    if #p.order >= PAUSED_MAX then p.ms[table.remove(p.order, 1)] = nil end
    p.order[#p.order + 1] = sandbox_id
  end
  p.ms[sandbox_id] = lifetime_ms
end

-- The lifetime of a sandbox this client paused, forgotten once taken (a
-- connect resumes it).
function Client:_take_paused(sandbox_id)
  local p = self._paused
  local ms = p and type(sandbox_id) == "string" and p.ms[sandbox_id]
  if not ms then return nil end
  p.ms[sandbox_id] = nil
  for i, id in ipairs(p.order) do
    if id == sandbox_id then
      table.remove(p.order, i)
      break
    end
  end
  return ms
end

--- Connects to a sandbox by provider id: an externally owned handle (close
-- never kills it). Resumes a paused one; never shortens a running one's
-- deadline (it asks for the client's timeout_ms). One request, as the SDK's,
-- unless it resumed a sandbox whose created lifetime this client does not
-- know (then a read, and a /timeout if it was longer); the handle's `id` and
-- `metadata` are nil when nothing was read (`info()` has them).
-- @tparam string sandbox_id
-- @treturn e2b.sandbox.Sandbox
-- @return or nil, err
function Client:connect(sandbox_id)
  local raw, err = self:_by_id("connect", "sandbox_id", "attach", sandbox_id, self._timeout_ms,
                               self:_take_paused(sandbox_id))
  if not raw then return nil, err end
  -- No state: the connect's answer was all (nothing read the sandbox), so
  -- its logical id and metadata are unknown here; info() reads them.
  if not raw.state then raw.id, raw.metadata = nil, nil end
  return Sandbox.new(self._port, raw, { owned = false })
end

--- Finds a sandbox by logical id, running or paused, on any page, and
-- connects to it (resuming it if paused). close() forgets it, kill() kills it.
-- @tparam string id logical (or provider) id
-- @treturn e2b.sandbox.Sandbox
-- @return or nil, err (kind "not_found": nothing allocated; "conflict": two carry the id)
function Client:resume(id)
  local raw, err = self:_by_id("resume", "id", "resume", id, self._timeout_ms)
  if not raw then return nil, err end
  return Sandbox.new(self._port, raw, { owned = false })
end

--- Kills every sandbox of one owner started more than older_than_ms ago,
-- on every page.
-- @tparam[opt] table opts
-- @tparam[opt] string opts.owner default: the client's owner
-- @tparam[opt=0] int opts.older_than_ms 0: all of them
-- @tparam[opt=false] bool opts.dry_run find them by the same rule, kill none
-- @treturn {table,...} array of the killed sandboxes' info (those it would kill, dry_run)
-- @return or nil, err
function Client:reap(opts)
  local o, err = check.options("reap", opts, { owner = "nonempty", older_than_ms = "ms", dry_run = "boolean" })
  if not o then return nil, err end
  local raws
  local call = o.dry_run and "reap_preview" or "reap"
  raws, err = rt.finish(self._h[call](self._h, o.owner or self.owner, o.older_than_ms or 0))
  if not raws then return nil, err end
  return infos(raws)
end

-- The calls that take a snapshot's or a volume's name: the name checked
-- (nil passes when optional), then the core's call of the same op.
function Client:_by_name(op, name, optional)
  if name ~= nil or not optional then
    local ok, err = check.value(op, "name", name, "nonempty")
    if not ok then return nil, err end
  end
  return rt.finish(self._h[op](self._h, name))
end

local LOGS_SPEC = {
  limit = "positive", cursor_ms = "count", backward = "boolean",
  level = check.oneof("debug", "info", "warn", "error"), search = "string",
}

--- A sandbox's own log lines, as E2B keeps them (a killed sandbox's too,
-- while it does): `GET /v2/sandboxes/{id}/logs`. Never resumes it.
-- @tparam string id logical or provider id
-- @tparam[opt] table opts
-- @tparam[opt=1000] int opts.limit 1-1000 lines
-- @tparam[opt] int opts.cursor_ms from this Unix time (ms) on; with backward, up to it
-- @tparam[opt] boolean opts.backward newest first
-- @tparam[opt] string opts.level the least level: "debug", "info", "warn", "error"
-- @tparam[opt] string opts.search only lines whose message holds it (at most 256 bytes)
-- @treturn {table,...} array of { timestamp (Unix ms), level, message, fields }
-- @return or nil, err
function Client:logs(id, opts)
  local o, err = check.options("logs", opts, LOGS_SPEC)
  if not o then return nil, err end
  local info
  info, err = self:describe(id)
  -- a killed sandbox is no longer described, but E2B keeps its logs
  if not info and not (err.kind == "not_found" and core.utf8_valid(id) and id:match("^[%l%d]+$")) then
    return nil, err
  end
  return self:_by_id("logs", "id", "logs", info and info.sandbox_id or id, o)
end

local function snapshot_records(list)
  local out = {}
  for i, s in ipairs(list) do out[i] = { id = s.snapshot_id, snapshot_id = s.snapshot_id, names = s.names } end
  return out
end

--- Lists snapshots, every page.
-- @tparam[opt] string name only those matching it
-- @treturn {table,...} array of { id, snapshot_id, names }
-- @return or nil, err
function Client:snapshots(name)
  local list, err = self:_by_name("snapshots", name, true)
  if not list then return nil, err end
  return snapshot_records(list)
end

--- Lists snapshots, every page, as the SDKs' listSnapshots filters them.
-- @tparam[opt] table opts
-- @tparam[opt] string opts.name only those matching it
-- @tparam[opt] string opts.sandbox_id only those taken of this sandbox (a provider id)
-- @treturn {table,...} array of { id, snapshot_id, names }
-- @return or nil, err
function Client:list_snapshots(opts)
  local o, err = check.options("list_snapshots", opts, { name = "nonempty", sandbox_id = "nonempty" })
  if not o then return nil, err end
  local list
  list, err = rt.finish(self._h:snapshots(o.name, o.sandbox_id))
  if not list then return nil, err end
  return snapshot_records(list)
end

--- Deletes every snapshot matching name (or that id); none left is success.
-- @tparam string name
-- @treturn boolean true
-- @return or nil, err
function Client:delete_snapshot(name)
  return self:_by_name("delete_snapshot", name)
end

--- Creates a persistent volume (mount it with create{ volumes = ... }).
-- @tparam string name
-- @treturn table { id, name }
-- @return or nil, err
function Client:create_volume(name)
  local list, err = self:_by_name("create_volume", name)
  if not list then return nil, err end
  return { id = list[1].volume_id, name = list[1].name }
end

--- Lists volumes.
-- @treturn {table,...} array of { id, name }
-- @return or nil, err
function Client:volumes()
  local list, err = rt.finish(self._h:volumes())
  if not list then return nil, err end
  local out = {}
  for i, v in ipairs(list) do out[i] = { id = v.volume_id, name = v.name } end
  return out
end

--- Opens a volume's content (the SDKs' Volume): its files read, written,
-- listed, made and removed with the volume's own token, which the core
-- fetches (GET /volumes/{id}) and keeps out of sight.
-- @tparam string name_or_id
-- @treturn e2b.volume.Volume
-- @return or nil, err (kind "not_found" when no volume has that name or id)
function Client:volume(name_or_id)
  local ok, err = check.value("volume", "name", name_or_id, "nonempty")
  if not ok then return nil, err end
  local list
  list, err = rt.finish(self._h:volume_open(name_or_id))
  if not list then return nil, err end
  local raw, h = list[1], self._h
  local id, token = raw.volume_id, raw.token
  return Volume.new({ call = function(name, ...) return h[name](h, id, token, ...) end }, raw)
end

--- Deletes a volume by name or id; an absent one is success.
-- @tparam string name
-- @treturn boolean true
-- @return or nil, err
function Client:delete_volume(name)
  return self:_by_name("delete_volume", name)
end

-- The core's template calls, each waited for; a failure names the user's call.
local function template_port(self, op)
  local h = self._h
  return { call = function(name, ...)
    local res, err = rt.finish(h[name](h, ...))
    if not res then return nil, rt.relabel(err, op) end
    return res
  end }
end

--- Builds a template made with `e2b.template()` on E2B (the SDKs' `Template.build`):
-- asks for a build, uploads each COPY's files E2B does not have yet (a gzip tar
-- each, spooled to a temporary file), starts it and follows it to its end.
-- @tparam e2b.template.Template t
-- @tparam table opts { name = "alias[:tag]" (required), tags = { more tags },
--   cpu_count, memory_mb, min_free_disk_mb, skip_cache = bool (rebuild every step),
--   on_log = function(entry) (the build's log lines: { timestamp (ms), level, message }),
--   on_progress = function(event) ({ stage = "hashed" | "requested" | "uploaded" | "cached" | "status", ... }),
--   background = bool (return once started), cancel = a cancel token (ends the call,
--   not E2B's build) }
-- @treturn table { template_id, build_id, name, tags }
-- @return or nil, err (a failed build: kind "sandbox", the build's reason as message,
--   with template_id, build_id and step; bad input: invalid_argument before any request)
function Client:build_template(t, opts)
  return Template.build(t, template_port(self, "build_template"), opts)
end

--- A build's status (the SDKs' `Template.getBuildStatus`).
-- @tparam string template_id
-- @tparam string build_id
-- @tparam[opt] table opts { logs_offset = log entries already seen }
-- @treturn table { status = "building" | "waiting" | "ready" | "error", reason, reason_step,
--   logs = { { timestamp, level, message }, ... } }
-- @return or nil, err
function Client:template_build_status(template_id, build_id, opts)
  local op = "template_build_status"
  local ok, err = check.value(op, "template_id", template_id, "nonempty")
  if not ok then return nil, err end
  ok, err = check.value(op, "build_id", build_id, "nonempty")
  if not ok then return nil, err end
  local o
  o, err = check.options(op, opts, { logs_offset = "count" })
  if not o then return nil, err end
  local a
  a, err = template_port(self, op).call("template_status", template_id, build_id, o.logs_offset or 0)
  if not a then return nil, err end
  return { template_id = a.template_id, build_id = a.build_id, status = a.status, reason = a.reason,
           reason_step = a.reason_step, logs = a.logs }
end

--- Whether a template name is taken (the SDKs' `Template.exists`).
-- @tparam string name
-- @treturn boolean
-- @return or nil, err
function Client:template_exists(name)
  local a, err = template_port(self, "template_exists").call("template_exists", name)
  if not a then return nil, err end
  return a.exists
end

-- A tag or an array of them, checked: the array, or nil, err.
local function tag_list(op, tags)
  if type(tags) == "string" then return { tags } end
  local ok, err = check.value(op, "tags", tags, "string_list")
  if not ok then return nil, err end
  return tags
end

--- Puts tags on a build (the SDKs' `Template.assignTags`).
-- @tparam string target "name:tag", the build to tag
-- @tparam string|{string,...} tags
-- @treturn table { build_id, tags }
-- @return or nil, err
function Client:assign_template_tags(target, tags)
  local list, err = tag_list("assign_template_tags", tags)
  if not list then return nil, err end
  local a
  a, err = template_port(self, "assign_template_tags").call("template_assign_tags", target, list)
  if not a then return nil, err end
  return { build_id = a.build_id, tags = a.tags }
end

--- Takes tags off a template (the SDKs' `Template.removeTags`).
-- @tparam string name
-- @tparam string|{string,...} tags
-- @treturn boolean true
-- @return or nil, err
function Client:remove_template_tags(name, tags)
  local list, err = tag_list("remove_template_tags", tags)
  if not list then return nil, err end
  local ok
  ok, err = template_port(self, "remove_template_tags").call("template_remove_tags", name, list)
  if not ok then return nil, err end
  return true
end

--- A template's tags (the SDKs' `Template.getTags`).
-- @tparam string template_id
-- @treturn {table,...} { tag, build_id, created_at (ms) } each
-- @return or nil, err
function Client:template_tags(template_id)
  local a, err = template_port(self, "template_tags").call("template_tags", template_id)
  if not a then return nil, err end
  return a.tag_list
end

--- What this backend supports, found by trying it: one list, then a
-- throwaway sandbox (lifetime 120 s, killed at the end).
-- @treturn table report { auth, envd, stdin_close, group_signals, volumes, snapshots,
--   network_update, pagination (each true, false or nil: could not tell),
--   create_route, envd_version, notes }
-- @return or nil, err
function Client:doctor()
  return rt.finish(self._h:doctor())
end

local EGRESS_SPEC = {
  allow_host = "nonempty", allowed_url = "nonempty", denied_url = "nonempty", ip_url = "nonempty",
  template = "nonempty", timeout_ms = "positive_ms",
}

--- Observes from inside a throwaway sandbox, with an allow-list of one
-- host, whether egress filtering holds.
-- @tparam[opt] table opts
-- @tparam[opt="example.com"] string opts.allow_host the one allowed host
-- @tparam[opt] string opts.allowed_url must answer for a verdict; default https://<allow_host>
-- @tparam[opt="https://example.org"] string opts.denied_url a host not on the list
-- @tparam[opt="http://1.1.1.1"] string opts.ip_url a raw IP not on the list
-- @tparam[opt] string opts.template
-- @tparam[opt=5000] int opts.timeout_ms per probe
-- @treturn string "filtered", "open" or "inconclusive" (whenever it could not observe)
-- @treturn table details { verdict, allowed_code, denied_code, ip_code, detail }, or
--   { detail, error } when the check itself failed
function Client:verify_egress(opts)
  local o, err = check.options("verify_egress", opts, EGRESS_SPEC)
  if not o then return nil, err end
  local report
  report, err = rt.finish(self._h:verify_egress(o))
  if not report then return "inconclusive", { detail = tostring(err), error = err } end
  return report.verdict, report
end

return M
