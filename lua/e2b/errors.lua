-- e2b.errors: the one error shape of lua-e2b.
-- Every failure is returned as `nil, err` where err is a table with kind,
-- message and, where known, status, retryable, op, sandbox_id (and field for
-- invalid_argument). tostring(err) gives one readable line, so
-- assert(call()) reads well in scripts.
local core = require("e2b.core")

local M = {}

local Error = {}
Error.__index = Error

function Error.__tostring(e)
  local where = e.op and (" in " .. e.op) or ""
  local sbx = e.sandbox_id and (" [sandbox " .. e.sandbox_id .. "]") or ""
  return ("e2b %s error%s%s: %s"):format(e.kind, where, sbx, e.message or "")
end

M.Error = Error
core.set_error_metatable(Error)

M.KINDS = {
  not_found = true, auth = true, rate_limited = true, timeout = true, unavailable = true,
  unsupported = true, invalid_argument = true, conflict = true, canceled = true,
  protocol = true, sandbox = true, permission = true,
}

-- new(kind, op, message, fields?) -> err
function M.new(kind, op, message, fields)
  assert(M.KINDS[kind], "unknown error kind")
  local e = setmetatable({ kind = kind, op = op, message = message,
                           retryable = kind == "unavailable" or kind == "rate_limited"
                             or kind == "timeout" }, Error)
  if fields then
    for k, v in pairs(fields) do e[k] = v end
  end
  return e
end

-- invalid(op, field, what) -> err naming the offending field
function M.invalid(op, field, what)
  return M.new("invalid_argument", op, field .. ": " .. what, { field = field, retryable = false })
end

function M.is(err, kind)
  return type(err) == "table" and err.kind == kind
end

return M
