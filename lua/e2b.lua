-- lua-e2b: drive E2B sandboxes from Lua (shared/API.md is the contract).
--
--   local e2b = require("e2b")
--   local client = assert(e2b.client{})
--   local sbx <close> = assert(client:create{})
--   print(assert(sbx:run("echo hello")).stdout)
--
-- Inside a task (e2b.run / e2b.spawn) every blocking call yields, so one Lua
-- state drives many sandboxes at once; outside a task the same calls block.
local core = require("e2b.core")
local rt = require("e2b.rt")
local errors = require("e2b.errors")

local M = {
  -- The version comes from libe2b (e2b_version()), the one place it is kept.
  VERSION = core.VERSION,        -- "0.1.0"
  _VERSION = "lua-e2b " .. core.VERSION,
  errors = errors,
}

local adapter = rt.adapter
M.scheduler = adapter.name

-- run(fn, ...) -> fn's results, once every task has ended.
M.run = adapter.run
-- spawn(fn, ...) -> task; task:wait() -> fn's results.
M.spawn = adapter.spawn
-- sleep(ms): yields inside a task, blocks outside one.
M.sleep = adapter.sleep

-- client(opts) -> client | nil, err
function M.client(opts)
  return require("e2b.client").new(opts)
end

return M
