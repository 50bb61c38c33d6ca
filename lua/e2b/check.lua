-- e2b.check: option validation, done before any allocation or I/O.
-- A failure is an invalid_argument error naming the field; unknown keys are
-- refused so a typo never silently does nothing.
local cancel = require("e2b.cancel")
local errors = require("e2b.errors")

local M = {}

local function is_int(v)
  return type(v) == "number" and v == math.floor(v) and v > -math.huge and v < math.huge
end

local function string_map(v)
  if type(v) ~= "table" then return "must be a table of strings" end
  for k, x in pairs(v) do
    if type(k) ~= "string" or k == "" then return "keys must be non-empty strings" end
    if type(x) ~= "string" then return ("value of %q must be a string"):format(k) end
  end
end

local function string_list(v)
  if type(v) ~= "table" then return "must be an array of strings" end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  for i = 1, n do
    if type(v[i]) ~= "string" then return "must be an array of strings" end
  end
end

local function of_type(t, reason)
  return function(v) if type(v) ~= t then return reason end end
end

local function int_from(min, reason)
  return function(v) if not is_int(v) or v < min then return reason end end
end

-- Checkers return nil when v is acceptable, else a reason.
M.types = {
  string = of_type("string", "must be a string"),
  nonempty = function(v)
    if type(v) ~= "string" or v == "" then return "must be a non-empty string" end
  end,
  boolean = of_type("boolean", "must be a boolean"),
  ["function"] = of_type("function", "must be a function"),
  table = of_type("table", "must be a table"),
  ms = int_from(0, "must be a non-negative integer (milliseconds)"),
  positive_ms = int_from(1, "must be a positive integer (milliseconds)"),
  count = int_from(0, "must be a non-negative integer"),
  positive = int_from(1, "must be a positive integer"),
  string_map = string_map,
  string_list = string_list,
  cancel = cancel.checker,
}

-- oneof("a", "b") -> checker
function M.oneof(...)
  local allowed, names = {}, {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    allowed[v] = true
    names[#names + 1] = ("%q"):format(v)
  end
  local reason = "must be one of " .. table.concat(names, ", ")
  return function(v) if not allowed[v] then return reason end end
end

-- options(op, opts, spec, name?) -> opts (never nil) | nil, err
-- spec maps each allowed key to a type name of M.types or a checker function.
function M.options(op, opts, spec, name)
  name = name or "opts"
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    return nil, errors.invalid(op, name, "must be a table")
  end
  for k, v in pairs(opts) do
    local want = spec[k]
    if want == nil then
      return nil, errors.invalid(op, tostring(k), "unknown option")
    end
    local checker = type(want) == "function" and want or M.types[want]
    local reason = checker(v)
    if reason then
      return nil, errors.invalid(op, tostring(k), reason)
    end
  end
  return opts
end

-- value(op, field, v, type) -> true | nil, err  (for positional arguments)
function M.value(op, field, v, want)
  local checker = type(want) == "function" and want or M.types[want]
  local reason = checker(v)
  if reason then return nil, errors.invalid(op, field, reason) end
  return true
end

return M
