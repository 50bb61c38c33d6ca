--- e2b.watch: watching a sandbox directory (docs/manual.md, "files:watch_dir").
-- The core drives envd's WatchDir stream and keeps its events in a bounded
-- queue: a reader that falls behind pauses the stream, it never grows.
-- @module e2b.watch
local errors = require("e2b.errors")
local check = require("e2b.check")
local rt = require("e2b.rt")

local M = {}

--- A directory watch, from `Files:watch_dir`. Close it with stop() (also
-- what `<close>` and the finalizer do).
-- @type Watch
local Watch = rt.class(M, "Watch")

local adapter = rt.adapter

-- M.start(port, path, opts) -> watch | nil, err; port: the sandbox's envd
-- port (e2b.sandbox). Returns once envd watches, as the SDKs do.
function M.start(port, path, opts)
  local req, err = port.call("watch", path, opts)
  if not req then return nil, port.explain(nil, err) end
  local self = setmetatable({ _req = req, _port = port, _stopped = false }, Watch)
  while true do
    -- "start" | "fs", name, type | false (over) | nil (nothing yet)
    local kind = req:read()
    if kind == "start" then return self end
    if kind == false then
      local _, e = req:result()
      e = e and port.explain(req, e)
      req:close()
      return nil, e or errors.new("protocol", "files.watch", "watch ended before it started",
        { sandbox_id = port.sandbox_id })
    end
    adapter.await(req)
  end
end

--- Takes the next change.
-- @tparam[opt] int timeout_ms how long to wait; none: no limit
-- @treturn table event { type ("create", "write", "remove", "rename", "chmod"),
--   name (relative to the watched directory) }
-- @return or nil when the watch ended cleanly or was stopped
-- @return or nil, err: kind "timeout" when nothing came in time (the watch goes
--   on), or what ended it (its own timeout_ms: kind "timeout")
function Watch:next(timeout_ms)
  if timeout_ms ~= nil then
    local ok, err = check.value("files.watch", "timeout_ms", timeout_ms, "ms")
    if not ok then return nil, err end
  end
  local deadline = timeout_ms and adapter.now_ms() + timeout_ms
  while not self._stopped do
    local kind, name, kind_of = self._req:read()
    if kind == "fs" then return { type = kind_of, name = name } end
    if kind == false then return self:_ended() end
    if kind == nil and not adapter.await(self._req, deadline) then
      return nil, errors.new("timeout", "files.watch", ("no change within %d ms"):format(timeout_ms),
        { retryable = false })
    end
  end
  return nil
end

function Watch:_ended()
  local ok, err = self._req:result()
  if ok then return nil end
  return nil, self._port.explain(self._req, err)
end

--- Iterates over changes until the watch ends: `for ev in w:events() do ... end`.
-- An error ending it is raised (use next() to get it as a value).
-- @treturn function iterator of event tables
function Watch:events()
  return function()
    local ev, err = self:next()
    if err then error(err, 2) end
    return ev
  end
end

--- Stops watching (closes the stream). Safe to call again.
function Watch:stop()
  if self._stopped then return end
  self._stopped = true
  self._req:close()
end

Watch.__close = Watch.stop
Watch.__gc = function(self) if not self._stopped then self:stop() end end

return M
