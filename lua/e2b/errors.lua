--- e2b.errors: the one error shape of lua-e2b.
-- Every failure is returned as `nil, err` where err is a table with kind,
-- message, op, retryable and, where known, status, retry_after_ms,
-- sandbox_id (and field for invalid_argument). tostring(err) gives one
-- readable line, so assert(call()) reads well in scripts. The kinds and when
-- each occurs: docs/manual.md, "Error fields and kinds".
-- @module e2b.errors
local core = require("e2b.core")

local M = {}

local Error = {}
Error.__index = Error

function Error.__tostring(e)
  local where = e.op and (" in " .. e.op) or ""
  local sbx = e.sandbox_id and (" [sandbox " .. e.sandbox_id .. "]") or ""
  return ("e2b %s error%s%s: %s"):format(e.kind, where, sbx, e.message or "")
end

--- The metatable of every error (its `__tostring` gives
-- "e2b KIND error in OP [sandbox ID]: MESSAGE").
-- @field Error
M.Error = Error
core.set_error_metatable(Error)

--- The set of error kinds: `KINDS[kind] == true` for not_found, auth,
-- rate_limited, timeout, unavailable, unsupported, invalid_argument,
-- conflict, canceled, protocol and sandbox.
-- @table KINDS
M.KINDS = {}
for _, kind in ipairs(core.KINDS) do M.KINDS[kind] = true end -- the core's, each once

--- Makes an error table.
-- @tparam string kind one of `KINDS`
-- @tparam string op the operation, e.g. "run"
-- @tparam string message one line
-- @tparam[opt] table fields more fields (status, sandbox_id, retryable...)
-- @treturn table err; retryable defaults to true for unavailable, rate_limited and timeout
-- @raise on an unknown kind
function M.new(kind, op, message, fields)
  assert(M.KINDS[kind], "unknown error kind")
  local e = setmetatable({ kind = kind, op = op, message = message,
                           retryable = core.RETRYABLE[kind] == true }, Error)
  if fields then
    for k, v in pairs(fields) do e[k] = v end
  end
  return e
end

--- Makes an invalid_argument error naming the offending field.
-- @tparam string op the operation
-- @tparam string field the option or argument, e.g. "timeout_ms"
-- @tparam string what what is wrong with it
-- @treturn table err (not retryable)
function M.invalid(op, field, what)
  return M.new("invalid_argument", op, field .. ": " .. what, { field = field, retryable = false })
end

--- Whether err is an error table of that kind.
-- @param err any value
-- @tparam string kind
-- @treturn boolean
function M.is(err, kind)
  return type(err) == "table" and err.kind == kind
end

return M
