-- e2b.client: the control-plane face of lua-e2b (shared/API.md, "Client").
local core = require("e2b.core")
local check = require("e2b.check")
local errors = require("e2b.errors")
local policy = require("e2b.policy")
local rt = require("e2b.rt")
local Sandbox = require("e2b.sandbox")

local M = {}

-- Metadata keys lua-e2b keeps beside the caller's: the logical id (found
-- again from any host) and the owner tag (for reaping orphans).
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
  template = "nonempty",
  timeout_ms = "positive_ms",
  network = network_checker,
  lifecycle = "table",
  user = "nonempty",
  owner = "nonempty",
  on_close = ON_CLOSE,
  ready_timeout_ms = "ms",
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
    template = o.template, request_timeout_ms = o.request_timeout_ms,
  })
  if not h then return nil, err end
  local self = setmetatable({
    _h = h,
    _timeout_ms = o.timeout_ms or 300000,
    _network = o.network or "all",
    _lifecycle = o.lifecycle,
    _user = o.user or "user",
    _owner = o.owner or core.host_pid(),
    _on_close = o.on_close or "kill",
    _ready_timeout_ms = o.ready_timeout_ms or 60000,
  }, Client)
  local cfg = h:config()
  self.api_url, self.domain, self.sandbox_url, self.template =
    cfg.api_url, cfg.domain, cfg.sandbox_url, cfg.template
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

-- Walks every page of the sandbox list. filter: { metadata, states }.
function Client:_list_raw(filter)
  local out, token, seen = {}, nil, {}
  repeat
    local page, next_token = rt.finish(self._h:list({
      metadata = filter.metadata, states = filter.states, limit = 100, next_token = token,
    }))
    if not page then return nil, next_token end
    for i = 1, #page do out[#out + 1] = page[i] end
    if next_token and seen[next_token] then
      return nil, errors.new("protocol", "list", "pagination returned the same token twice")
    end
    token = next_token
    if token then seen[token] = true end
  until not token
  return out
end

-- Finds the sandboxes carrying logical id `id` (running and paused).
function Client:_find(id)
  return self:_list_raw({ metadata = { [ID_KEY] = id } })
end

-- probe() -> true | nil, err: one authenticated list of at most one sandbox.
function Client:probe()
  local page, err = rt.finish(self._h:list({ limit = 1 }))
  if not page then return nil, err end
  return true
end

local SETUP_SPEC = { script = "string", name = "nonempty", timeout_ms = "positive_ms" }

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
}

local function create_fields(self, o)
  local op = "create"
  local net, err = policy.network(op, o.network or self._network)
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
  local metadata = {}
  for k, v in pairs(o.metadata or {}) do
    if k == ID_KEY or k == OWNER_KEY then
      return nil, errors.invalid(op, "metadata." .. k, "is reserved by lua-e2b")
    end
    metadata[k] = v
  end
  local id = o.id or core.uuid4()
  metadata[ID_KEY] = id
  metadata[OWNER_KEY] = self._owner
  return {
    id = id,
    setup = setup,
    core = {
      template = o.template,
      timeout_ms = o.timeout_ms or self._timeout_ms,
      secure = o.secure ~= false,
      env = o.env,
      metadata = metadata,
      allow_internet_access = net.allow_internet_access,
      network = net.network,
      allow_out = net.allow_out,
      deny_out = net.deny_out,
      auto_pause = lc.auto_pause,
      auto_pause_memory = lc.auto_pause_memory,
      auto_resume = lc.auto_resume,
    },
  }
end

-- Kills an allocation this client made and failed to finish; the original
-- failure is what the caller sees.
function Client:_discard(sandbox_id)
  rt.finish(self._h:kill(sandbox_id))
end

-- create(opts) -> sbx | nil, err
function Client:create(opts)
  local o, err = check.options("create", opts, CREATE_SPEC)
  if not o then return nil, err end
  local f
  f, err = create_fields(self, o)
  if not f then return nil, err end
  if o.id then
    local found
    found, err = self:_find(o.id)
    if not found then return nil, err end
    if #found > 0 then
      return nil, errors.new("conflict", "create",
        ("a sandbox with id %q already exists (%s)"):format(o.id, found[1].sandbox_id),
        { retryable = false, sandbox_id = found[1].sandbox_id })
    end
  end
  local raw
  raw, err = rt.finish(self._h:create(f.core))
  if not raw then return nil, err end
  if o.id then
    -- Another creator may have raced us: keep the sandbox only if ours is alone.
    local found
    found, err = self:_find(o.id)
    if not found or #found > 1 then
      self:_discard(raw.sandbox_id)
      return nil, err or errors.new("conflict", "create",
        ("another sandbox with id %q was created concurrently; this one was removed"):format(o.id),
        { retryable = false })
    end
  end
  raw.metadata = f.core.metadata
  local sbx = Sandbox.new(self, raw, { owned = true, on_close = o.on_close or self._on_close })
  local ok
  ok, err = sbx:_wait_ready(o.ready_timeout_ms or self._ready_timeout_ms)
  if ok and f.setup then ok, err = sbx:_setup(f.setup, o.env) end
  if not ok then
    self:_discard(raw.sandbox_id)
    return nil, rt.tag(err, raw.sandbox_id)
  end
  return sbx
end

-- Resolves a logical or provider id to one control-plane sandbox table.
-- Only a real 404 is not_found; any other failure is returned as it is.
function Client:_resolve(id, op)
  local ok, err = check.value(op, "id", id, "nonempty")
  if not ok then return nil, err end
  local found
  found, err = self:_find(id)
  if not found then return nil, err end
  if #found > 1 then
    return nil, errors.new("conflict", op,
      ("%d sandboxes carry id %q; refusing to choose one"):format(#found, id),
      { retryable = false })
  end
  if #found == 1 then return found[1] end
  local raw
  raw, err = rt.finish(self._h:info(id))
  if not raw then return nil, rt.tag(err, id) end
  return raw
end

-- describe(id) -> info | nil, err. Never resumes: it only reads.
function Client:describe(id)
  local raw, err = self:_resolve(id, "describe")
  if not raw then return nil, err end
  return to_info(raw)
end

-- list{ metadata = {...}, state = {"running","paused"} } -> array of info
function Client:list(opts)
  local o, err = check.options("list", opts, {
    metadata = "string_map",
    state = function(v)
      if type(v) ~= "table" then return 'must be an array of "running" / "paused"' end
      for _, s in ipairs(v) do
        if s ~= "running" and s ~= "paused" then return 'entries must be "running" or "paused"' end
      end
    end,
  })
  if not o then return nil, err end
  local raws
  raws, err = self:_list_raw({ metadata = o.metadata, states = o.state })
  if not raws then return nil, err end
  local out = {}
  for i = 1, #raws do out[i] = to_info(raws[i]) end
  return out
end

-- destroy(id) -> true | nil, err. Idempotent: an absent sandbox is destroyed.
function Client:destroy(id)
  local raw, err = self:_resolve(id, "destroy")
  if not raw then
    if errors.is(err, "not_found") then return true end
    return nil, err
  end
  local ok
  ok, err = rt.finish(self._h:kill(raw.sandbox_id))
  if not ok and not errors.is(err, "not_found") then return nil, rt.tag(err, raw.sandbox_id) end
  return true
end

-- Connects to a sandbox by provider id: resumes it if paused. The deadline
-- asked for is the client's timeout; E2B only ever extends a running one.
function Client:_connect_raw(sandbox_id)
  local raw, err = rt.finish(self._h:connect(sandbox_id, self._timeout_ms))
  if not raw then return nil, rt.tag(err, sandbox_id) end
  local info
  info, err = rt.finish(self._h:info(sandbox_id))
  if not info then return nil, rt.tag(err, sandbox_id) end
  raw.metadata = info.metadata
  return raw
end

-- connect(sandbox_id) -> sbx: an externally owned sandbox (close never kills it).
function Client:connect(sandbox_id)
  local ok, err = check.value("connect", "sandbox_id", sandbox_id, "nonempty")
  if not ok then return nil, err end
  local raw
  raw, err = self:_connect_raw(sandbox_id)
  if not raw then return nil, err end
  return Sandbox.new(self, raw, { owned = false })
end

-- resume(id) -> sbx: by logical id, running or paused, on any page.
function Client:resume(id)
  local ok, err = check.value("resume", "id", id, "nonempty")
  if not ok then return nil, err end
  local found
  found, err = self:_find(id)
  if not found then return nil, err end
  if #found == 0 then
    return nil, errors.new("not_found", "resume", ("no sandbox has id %q"):format(id),
      { retryable = false })
  elseif #found > 1 then
    return nil, errors.new("conflict", "resume",
      ("%d sandboxes carry id %q; refusing to choose one"):format(#found, id),
      { retryable = false })
  end
  local raw
  raw, err = self:_connect_raw(found[1].sandbox_id)
  if not raw then return nil, err end
  return Sandbox.new(self, raw, { owned = false })
end

return M
