-- e2b.policy: lua-e2b's network and lifecycle policies as the core takes
-- them. The core decides (libe2b's e2b_network_check and
-- e2b_lifecycle_check: what E2B cannot enforce or refuses is refused there,
-- before allocation); this module only checks the table's shape, so that a
-- wrong type names its field, converts it and asks the core.
local core = require("e2b.core")
local errors = require("e2b.errors")

local M = {}

local function list_of_strings(v)
  if type(v) ~= "table" then return false end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  for i = 1, n do
    if type(v[i]) ~= "string" then return false end
  end
  return true
end

local function string_map(v)
  if type(v) ~= "table" then return false end
  for k, x in pairs(v) do
    if type(k) ~= "string" or type(x) ~= "string" then return false end
  end
  return true
end

-- rules = { [domain] = { headers = { Name = value } } } -> { [domain] = headers }
local function convert_rules(op, rules, field)
  if type(rules) ~= "table" then
    return nil, errors.invalid(op, field, "must be a table { [domain] = { headers = {...} } }")
  end
  local out = {}
  for domain, rule in pairs(rules) do
    local at = ("%s[\"%s\"]"):format(field, tostring(domain))
    if type(domain) ~= "string" or type(rule) ~= "table" then
      return nil, errors.invalid(op, at, "must be { headers = { Name = value } } under a domain name")
    end
    for k in pairs(rule) do
      if k ~= "headers" then return nil, errors.invalid(op, at .. "." .. tostring(k), "unknown option") end
    end
    if not string_map(rule.headers or {}) then
      return nil, errors.invalid(op, at .. ".headers", "must be a table of strings { Name = value }")
    end
    out[domain] = rule.headers or {}
  end
  return out
end

local PROXY_KEYS = { address = true, username = true, password = true }

local function check_proxy(op, p, field)
  if type(p) ~= "table" then
    return nil, errors.invalid(op, field, "must be a table { address, username, password }")
  end
  for k, v in pairs(p) do
    if not PROXY_KEYS[k] then return nil, errors.invalid(op, field .. "." .. tostring(k), "unknown option") end
    if type(v) ~= "string" then return nil, errors.invalid(op, field .. "." .. k, "must be a string") end
  end
  return p
end

local TABLE_KEYS = {
  allow = "list", deny = "list", allow_internet_access = "boolean", allow_public_traffic = "boolean",
  mask_request_host = "string", rules = "rules", egress_proxy = "proxy",
}

local function check_key(op, policy, k, field)
  local kind, v, at = TABLE_KEYS[k], policy[k], field .. "." .. tostring(k)
  if k == "transform" or k == "transforms" then
    return errors.new("unsupported", op, at .. ": request transforms are given as rules "
      .. "({ rules = { [domain] = { headers = {...} } } })", { field = at, retryable = false })
  elseif not kind then
    return errors.invalid(op, at, "unknown option")
  elseif kind == "list" and not list_of_strings(v) then
    return errors.invalid(op, at, "must be an array of strings")
  elseif (kind == "boolean" or kind == "string") and type(v) ~= kind then
    return errors.invalid(op, at, "must be a " .. kind)
  end
end

-- network(op, policy[, update]) -> fields for the core | nil, err
--   "all"  -> internet on;  "none" -> internet off
--   { allow = {...} }   -> only those (hosts, IPs, CIDRs); an empty list: nothing
--   { deny = {...} }    -> those IPs/CIDRs denied, everything else allowed
--   plus rules, egress_proxy, allow_internet_access and, at create only,
--   allow_public_traffic and mask_request_host.
-- Errors name fields "network.*", as the core's do.
function M.network(op, policy, update)
  local field = "network"
  if policy == "all" then
    return { allow_internet_access = true }
  elseif policy == "none" then
    return { allow_internet_access = false }
  elseif type(policy) ~= "table" then
    return nil, errors.invalid(op, field, 'must be "all", "none" or a table of options')
  end
  for k in pairs(policy) do
    local err = check_key(op, policy, k, field)
    if err then return nil, err end
  end
  local out = {
    allow_out = policy.allow, deny_out = policy.deny,
    allow_internet_access = policy.allow_internet_access,
    allow_public_traffic = policy.allow_public_traffic,
    mask_request_host = policy.mask_request_host,
  }
  -- an empty allow list allows nothing
  if policy.allow and #policy.allow == 0 then out.allow_internet_access = false end
  local err
  if policy.rules ~= nil then
    out.rules, err = convert_rules(op, policy.rules, field .. ".rules")
    if not out.rules then return nil, err end
  end
  if policy.egress_proxy ~= nil then
    out.egress_proxy, err = check_proxy(op, policy.egress_proxy, field .. ".egress_proxy")
    if not out.egress_proxy then return nil, err end
  end
  local ok
  ok, err = core.network_check(out, update, op)
  if not ok then return nil, errors.new(err.kind, op, err.message, { field = err.field, retryable = false }) end
  return out
end

-- lifecycle(op, lc) -> { auto_pause, auto_pause_memory, auto_resume } | nil, err
function M.lifecycle(op, lc, field)
  field = field or "lifecycle"
  if lc == nil then return {} end
  if type(lc) ~= "table" then return nil, errors.invalid(op, field, "must be a table") end
  for k in pairs(lc) do
    if k ~= "on_timeout" and k ~= "keep_memory" and k ~= "auto_resume" then
      return nil, errors.invalid(op, field .. "." .. tostring(k), "unknown option")
    end
  end
  local on_timeout, keep_memory, auto_resume = lc.on_timeout, lc.keep_memory, lc.auto_resume
  if on_timeout ~= nil and on_timeout ~= "kill" and on_timeout ~= "pause" then
    return nil, errors.invalid(op, field .. ".on_timeout", 'must be "kill" or "pause"')
  end
  if keep_memory ~= nil and type(keep_memory) ~= "boolean" then
    return nil, errors.invalid(op, field .. ".keep_memory", "must be a boolean")
  end
  if auto_resume ~= nil and type(auto_resume) ~= "boolean" then
    return nil, errors.invalid(op, field .. ".auto_resume", "must be a boolean")
  end
  local out = {}
  if on_timeout ~= nil then out.auto_pause = on_timeout == "pause" end
  if keep_memory ~= nil then out.auto_pause_memory = keep_memory end
  if auto_resume ~= nil then out.auto_resume = auto_resume end
  -- which combinations E2B refuses is the core's rule (e2b_lifecycle_check)
  local ok, err = core.lifecycle_check(out, op)
  if not ok then return nil, errors.new(err.kind, op, err.message, { field = err.field, retryable = false }) end
  return out
end

return M
