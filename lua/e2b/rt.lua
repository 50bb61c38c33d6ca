-- e2b.rt: the runtime shared by the API modules — the scheduler adapter in
-- use and the one way to wait for a core request.
local M = {}

-- Under OpenResty (ngx present) waits must go through ngx's primitives;
-- everywhere else the plain-Lua scheduler drives the core loop.
if rawget(_G, "ngx") and ngx.timer then
  M.adapter = require("e2b.ngx")
else
  M.adapter = require("e2b.sched")
end

local adapter = M.adapter

-- finish(req, err[, on_fail]) -> req:result() once req is done; closes req.
-- Passes a start failure (req nil) through as nil, err. on_fail(req, err)
-- -> err is called on a failure before the close, while the core can
-- still read req's own error.
function M.finish(req, err, on_fail)
  if not req then return nil, err end
  while not req:done() do adapter.await(req) end
  local a, b = req:result()
  if a == nil and on_fail then b = on_fail(req, b) end
  req:close()
  return a, b
end

-- A public method called with a dot (sbx.files.read(path)) gets its first
-- argument as self: say so, instead of failing deep inside on a string.
local function colon_guard(class, name, key, method)
  return function(self, ...)
    if getmetatable(self) ~= class then
      error(("%s.%s called without its object: use a colon, obj:%s(...)"):format(name, key, key), 2)
    end
    return method(self, ...)
  end
end

-- class(module, name) -> a class table: its own __index, and module[name].
-- Public methods (no leading _) defined on it are guarded by colon_guard.
function M.class(module, name)
  local class = setmetatable({}, { __newindex = function(t, k, v)
    if type(v) == "function" and type(k) == "string" and k:sub(1, 1) ~= "_" then v = colon_guard(t, name, k, v) end
    rawset(t, k, v)
  end })
  class.__index = class
  module[name] = class
  return class
end

-- Tags an error with the sandbox it concerns, for readable messages.
function M.tag(err, sandbox_id)
  if type(err) == "table" and sandbox_id and not err.sandbox_id then
    err.sandbox_id = sandbox_id
  end
  return err
end

-- Labels an error with the user's call; the core step it came from moves
-- into the message (the C composites do the same for their sub-steps).
function M.relabel(err, op)
  if type(err) == "table" and err.op and err.op ~= op then
    err.message = err.op .. ": " .. (err.message or "")
    err.op = op
  end
  return err
end

return M
