-- e2b.policy: lua-e2b's network and lifecycle policies mapped to E2B's
-- create fields, with every combination E2B cannot honour refused before
-- allocation.
local errors = require("e2b.errors")

local M = {}

local ALL_TRAFFIC = "0.0.0.0/0"

local function list_of_strings(v)
  if type(v) ~= "table" then return false end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  for i = 1, n do
    if type(v[i]) ~= "string" or v[i] == "" then return false end
  end
  return true
end

-- network(op, policy) -> fields for core create/update | nil, err
--   "all"            -> internet on
--   "none"           -> internet off
--   { allow = {...} } -> denyOut everything, allowOut the list (hosts, IPs, CIDRs);
--                       an empty list blocks all egress
--   { deny = {...} }  -> denyOut the CIDRs, everything else allowed
-- allow together with deny is unsupported: E2B's allow rules override deny
-- rules, while a deny list inside an allow list would need the opposite.
function M.network(op, policy, field)
  field = field or "network"
  if policy == "all" then
    return { allow_internet_access = true }
  elseif policy == "none" then
    return { allow_internet_access = false }
  elseif type(policy) ~= "table" then
    return nil, errors.invalid(op, field, 'must be "all", "none" or a table with allow or deny')
  end
  for k in pairs(policy) do
    if k == "transform" or k == "transforms" or k == "rules" then
      return nil, errors.new("unsupported", op,
        field .. ": request transforms are not supported (E2B's per-host transforms cannot be "
          .. "limited to the requests that need them; credentials are never injected more broadly)",
        { field = field .. "." .. k, retryable = false })
    elseif k ~= "allow" and k ~= "deny" then
      return nil, errors.invalid(op, field .. "." .. tostring(k), "unknown option")
    end
  end
  local allow, deny = policy.allow, policy.deny
  if allow ~= nil and not list_of_strings(allow) then
    return nil, errors.invalid(op, field .. ".allow", "must be an array of hosts, IPs or CIDRs")
  end
  if deny ~= nil and not list_of_strings(deny) then
    return nil, errors.invalid(op, field .. ".deny", "must be an array of IPs or CIDRs")
  end
  if allow and deny and #deny > 0 then
    return nil, errors.new("unsupported", op,
      field .. ": deny CIDRs together with an allow list cannot be enforced on E2B "
        .. "(its allow rules take precedence over deny rules)",
      { field = field .. ".deny", retryable = false })
  end
  if deny then
    for i, d in ipairs(deny) do
      if not d:match("^[%x:%.]+/?%d*$") then
        return nil, errors.invalid(op, ("%s.deny[%d]"):format(field, i),
          "deny rules take IPs or CIDRs only (E2B cannot deny by domain)")
      end
    end
  end
  if allow then
    return { allow_internet_access = true, network = true, allow_out = allow,
             deny_out = { ALL_TRAFFIC } }
  end
  return { allow_internet_access = true, network = true, deny_out = deny }
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
  if keep_memory ~= nil and on_timeout ~= "pause" then
    return nil, errors.invalid(op, field .. ".keep_memory", 'only applies when on_timeout is "pause"')
  end
  if auto_resume and on_timeout ~= "pause" then
    return nil, errors.invalid(op, field .. ".auto_resume", 'requires on_timeout = "pause"')
  end
  if auto_resume and keep_memory == false then
    return nil, errors.invalid(op, field .. ".auto_resume",
      "cannot resume automatically after a filesystem-only pause (keep_memory = false)")
  end
  local out = {}
  if on_timeout ~= nil then out.auto_pause = on_timeout == "pause" end
  if keep_memory ~= nil then out.auto_pause_memory = keep_memory end
  if auto_resume ~= nil then out.auto_resume = auto_resume end
  return out
end

return M
