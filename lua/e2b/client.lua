-- e2b.client: the control-plane face of lua-e2b (shared/API.md, "Client").
-- The rules (identity, serialised creates, readiness, setup, reaping...)
-- live in libe2b; this file checks options and shapes results.
local core = require("e2b.core")
local check = require("e2b.check")
local errors = require("e2b.errors")
local policy = require("e2b.policy")
local rt = require("e2b.rt")
local Sandbox = require("e2b.sandbox")

local M = {}

-- Metadata keys libe2b keeps beside the caller's (E2B_META_ID / _OWNER).
local ID_KEY = "lua_e2b_id"
local OWNER_KEY = "lua_e2b_owner"
M.ID_KEY, M.OWNER_KEY = ID_KEY, OWNER_KEY

local Client = {}
Client.__index = Client
M.Client = Client

local ON_CLOSE = check.oneof("kill", "pause", "leave")

local function network_checker(v)
  if type(v) ~= "string" and type(v) ~= "table" then
    return 'must be "all", "none" or a table'
  end
end

local CLIENT_SPEC = {
  api_key = "string",
  domain = "nonempty",
  api_url = "nonempty",
  sandbox_url = "nonempty",
  request_timeout_ms = "positive_ms",
  budget_ms = "positive_ms",
  template = "nonempty",
  timeout_ms = "positive_ms",
  network = network_checker,
  lifecycle = "table",
  user = "nonempty",
  owner = "nonempty",
  on_close = ON_CLOSE,
  ready_timeout_ms = "ms",
  max_retries = "count",
  max_concurrent = "positive",
  page_size = function(v)
    if type(v) ~= "number" or v ~= math.floor(v) or v < 1 or v > 100 then
      return "must be an integer between 1 and 100"
    end
  end,
}

-- e2b.client(opts) -> client | nil, err
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
    template = o.template, request_timeout_ms = o.request_timeout_ms, budget_ms = o.budget_ms,
    owner = o.owner,
    max_retries = o.max_retries == 0 and -1 or o.max_retries,
    max_inflight = o.max_concurrent, page_size = o.page_size,
  })
  if not h then return nil, err end
  local self = setmetatable({
    _h = h,
    _timeout_ms = o.timeout_ms or 300000,
    _network = o.network or "all",
    _lifecycle = o.lifecycle,
    _user = o.user or "user",
    _on_close = o.on_close or "kill",
    _ready_timeout_ms = o.ready_timeout_ms,
  }, Client)
  local cfg = h:config()
  self.api_url, self.domain, self.sandbox_url, self.template, self.owner =
    cfg.api_url, cfg.domain, cfg.sandbox_url, cfg.template, cfg.owner
  self.request_timeout_ms, self.budget_ms = cfg.request_timeout_ms, cfg.budget_ms
  return self
end

-- The info shape of shared/API.md, from a control-plane sandbox table.
local function to_info(raw)
  local meta, id, owner = {}, raw.sandbox_id, nil
  for k, v in pairs(raw.metadata or {}) do
    if k == ID_KEY then id = v
    elseif k == OWNER_KEY then owner = v
    else meta[k] = v end
  end
  return {
    id = id,
    sandbox_id = raw.sandbox_id,
    template = raw.alias or raw.template_id,
    template_id = raw.template_id,
    state = raw.state,
    metadata = meta,
    owner = owner,
    started_at = raw.started_at,
    end_at = raw.end_at,
  }
end
M.to_info = to_info

local function infos(raws)
  local out = {}
  for i = 1, #raws do out[i] = to_info(raws[i]) end
  return out
end

-- probe() -> true | nil, err: one authenticated list of at most one sandbox.
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

local CREATE_SPEC = {
  id = "nonempty",
  template = "nonempty",
  timeout_ms = "positive_ms",
  env = "string_map",
  metadata = "string_map",
  network = network_checker,
  lifecycle = "table",
  secure = "boolean",
  setup = function(v)
    if type(v) ~= "string" and type(v) ~= "table" then
      return "must be a script string or a table { script, name, timeout_ms }"
    end
  end,
  ready_timeout_ms = "ms",
  on_close = ON_CLOSE,
  volumes = volumes_checker,
}

-- create(opts) -> sbx | nil, err
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
  for k in pairs(o.metadata or {}) do
    if k == ID_KEY or k == OWNER_KEY then
      return nil, errors.invalid(op, "metadata." .. k, "is reserved by lua-e2b")
    end
  end
  local ready = o.ready_timeout_ms or self._ready_timeout_ms
  local raw
  raw, err = rt.finish(self._h:provision({
    id = o.id,
    template = o.template,
    timeout_ms = o.timeout_ms or self._timeout_ms,
    secure = o.secure ~= false,
    env = o.env,
    metadata = o.metadata,
    volume_mounts = o.volumes,
    auto_pause = lc.auto_pause,
    auto_pause_memory = lc.auto_pause_memory,
    auto_resume = lc.auto_resume,
    network = {
      allow_internet_access = net.allow_internet_access,
      allow_out = net.allow_out,
      deny_out = net.deny_out,
    },
    ready_timeout_ms = ready == 0 and -1 or ready,
    setup_script = setup and setup.script,
    setup_name = setup and setup.name,
    setup_timeout_ms = setup and setup.timeout_ms,
    user = self._user,
  }))
  if not raw then return nil, err end
  return Sandbox.new(self, raw, { owned = true, on_close = o.on_close or self._on_close })
end

local function id_arg(op, id)
  return check.value(op, "id", id, "nonempty")
end

-- describe(id) -> info | nil, err. Never resumes: it only reads.
function Client:describe(id)
  local ok, err = id_arg("describe", id)
  if not ok then return nil, err end
  local raw
  raw, err = rt.finish(self._h:describe(id))
  if not raw then return nil, rt.tag(err, id) end
  return to_info(raw)
end

local STATE_CHECK = function(v)
  if type(v) ~= "table" then return 'must be an array of "running" / "paused"' end
  for _, s in ipairs(v) do
    if s ~= "running" and s ~= "paused" then return 'entries must be "running" or "paused"' end
  end
end

-- list{ metadata = {...}, state = {"running","paused"} } -> array of info (every page)
function Client:list(opts)
  local o, err = check.options("list", opts, { metadata = "string_map", state = STATE_CHECK })
  if not o then return nil, err end
  local raws
  raws, err = rt.finish(self._h:find({ metadata = o.metadata, states = o.state }))
  if not raws then return nil, err end
  return infos(raws)
end

-- destroy(id) -> true | nil, err. Idempotent: an absent sandbox is destroyed.
function Client:destroy(id)
  local ok, err = id_arg("destroy", id)
  if not ok then return nil, err end
  ok, err = rt.finish(self._h:destroy(id))
  if not ok then return nil, rt.tag(err, id) end
  return true
end

-- connect(sandbox_id) -> sbx: an externally owned sandbox (close never kills
-- it). Resumes a paused one; never shortens a running one's deadline.
function Client:connect(sandbox_id)
  local ok, err = check.value("connect", "sandbox_id", sandbox_id, "nonempty")
  if not ok then return nil, err end
  local raw
  raw, err = rt.finish(self._h:attach(sandbox_id, self._timeout_ms))
  if not raw then return nil, rt.tag(err, sandbox_id) end
  return Sandbox.new(self, raw, { owned = false })
end

-- resume(id) -> sbx: by logical id, running or paused, found on any page.
-- The sandbox stays as owned as it was: close() forgets it, kill() kills it.
function Client:resume(id)
  local ok, err = id_arg("resume", id)
  if not ok then return nil, err end
  local raw
  raw, err = rt.finish(self._h:resume(id, self._timeout_ms))
  if not raw then return nil, rt.tag(err, id) end
  return Sandbox.new(self, raw, { owned = false })
end

-- reap{ owner = ..., older_than_ms = ... } -> array of the killed info
function Client:reap(opts)
  local o, err = check.options("reap", opts, { owner = "nonempty", older_than_ms = "ms" })
  if not o then return nil, err end
  local raws
  raws, err = rt.finish(self._h:reap(o.owner or self.owner, o.older_than_ms or 0))
  if not raws then return nil, err end
  return infos(raws)
end

-- snapshots() -> array of { id, names }
function Client:snapshots(name)
  if name ~= nil then
    local ok, err = check.value("snapshots", "name", name, "nonempty")
    if not ok then return nil, err end
  end
  local list, err = rt.finish(self._h:snapshots(name))
  if not list then return nil, err end
  local out = {}
  for i, s in ipairs(list) do out[i] = { id = s.snapshot_id, snapshot_id = s.snapshot_id, names = s.names } end
  return out
end

function Client:delete_snapshot(name)
  local ok, err = check.value("delete_snapshot", "name", name, "nonempty")
  if not ok then return nil, err end
  return rt.finish(self._h:delete_snapshot(name))
end

-- Volumes: create_volume(name) -> { id, name }, volumes(), delete_volume(name).
function Client:create_volume(name)
  local ok, err = check.value("create_volume", "name", name, "nonempty")
  if not ok then return nil, err end
  local list
  list, err = rt.finish(self._h:create_volume(name))
  if not list then return nil, err end
  return { id = list[1].volume_id, name = list[1].name }
end

function Client:volumes()
  local list, err = rt.finish(self._h:volumes())
  if not list then return nil, err end
  local out = {}
  for i, v in ipairs(list) do out[i] = { id = v.volume_id, name = v.name } end
  return out
end

function Client:delete_volume(name)
  local ok, err = check.value("delete_volume", "name", name, "nonempty")
  if not ok then return nil, err end
  return rt.finish(self._h:delete_volume(name))
end

-- doctor() -> report: what this backend supports, found by trying it.
function Client:doctor()
  return rt.finish(self._h:doctor())
end

local EGRESS_SPEC = {
  allow_host = "nonempty", allowed_url = "nonempty", denied_url = "nonempty", ip_url = "nonempty",
  template = "nonempty", timeout_ms = "positive_ms",
}

-- verify_egress(opts) -> "filtered" | "open" | "inconclusive", details
function Client:verify_egress(opts)
  local o, err = check.options("verify_egress", opts, EGRESS_SPEC)
  if not o then return nil, err end
  local report
  report, err = rt.finish(self._h:verify_egress(o))
  if not report then return "inconclusive", { detail = tostring(err), error = err } end
  return report.verdict, report
end

return M
