--- e2b.mcp: the MCP gateway option of `Client:create` (docs/manual.md,
-- "MCP gateway"): the configuration table as the JSON text libe2b takes
-- (libe2b checks it is an object of valid UTF-8 and starts the gateway),
-- and the gateway's URL and access token for `Sandbox:mcp_url` and
-- `Sandbox:mcp_token`.
-- @module e2b.mcp
local core = require("e2b.core")

local M = {}

local MAX_DEPTH = 64
local math_type = math.type or function() return nil end

local ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n",
                  ["\r"] = "\\r", ["\t"] = "\\t" }

local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESCAPES[c] or (c:byte() < 32 and ("\\u%04x"):format(c:byte())) or c
  end) .. '"'
end

local function number(v)
  if v ~= v or v == math.huge or v == -math.huge then return nil, "numbers must be finite" end
  if math_type(v) == "integer" then return ("%d"):format(v) end
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ("%.0f"):format(v) end
  return ("%.17g"):format(v)
end

local encode

-- A table's kind: "array" (keys 1..n, n > 0), "object" (string keys, or
-- none) or nil, why.
local function shape(t)
  local n, strings = 0, 0
  for k in pairs(t) do
    if type(k) == "string" then
      strings = strings + 1
    elseif type(k) == "number" and k >= 1 and k == math.floor(k) then
      n = n + 1
    else
      return nil, "keys must be strings (an object) or 1..n (an array)"
    end
  end
  if n > 0 and (strings > 0 or #t ~= n) then return nil, "a table is either an object or an array" end
  return n > 0 and "array" or "object"
end

local function encode_table(t, depth)
  if depth > MAX_DEPTH then return nil, "nests deeper than 64 tables" end
  local kind, why = shape(t)
  if not kind then return nil, why end
  local out = {}
  if kind == "array" then
    for i = 1, #t do
      local v, err = encode(t[i], depth + 1)
      if not v then return nil, err end
      out[i] = v
    end
    return "[" .. table.concat(out, ",") .. "]"
  end
  for k, v in pairs(t) do
    local text, err = encode(v, depth + 1)
    if not text then return nil, err end
    out[#out + 1] = quote(k) .. ":" .. text
  end
  return "{" .. table.concat(out, ",") .. "}"
end

-- The JSON text of v: string | nil, why.
encode = function(v, depth)
  local t = type(v)
  if t == "string" then return quote(v) end
  if t == "number" then return number(v) end
  if t == "boolean" then return tostring(v) end
  if t == "table" then return encode_table(v, depth) end
  return nil, "holds a " .. t .. ", which JSON cannot"
end

--- The configuration as JSON text: string | nil, why (an object is required;
-- libe2b checks the text again, UTF-8 included).
-- @tparam table config
function M.encode(config)
  if type(config) ~= "table" or shape(config) ~= "object" then
    return nil, "must be a table of MCP servers (a JSON object)"
  end
  return encode(config, 1)
end

--- The gateway's URL: https://<port>-<sandbox id>.<domain>/mcp.
function M.url(sbx)
  return sbx:url(core.MCP_PORT) .. "/mcp"
end

M.TOKEN_FILE = core.MCP_TOKEN_FILE

return M
