--- lua-e2b: drive E2B sandboxes from Lua (docs/manual.md is its contract).
--
--   local e2b = require("e2b")
--   local client = assert(e2b.client{})
--   local sbx <close> = assert(client:create{})
--   print(assert(sbx:run("echo hello")).stdout)
--
-- Inside a task (e2b.run / e2b.spawn) every blocking call yields, so one Lua
-- state drives many sandboxes at once; outside a task the same calls block.
-- Every call that can fail returns `nil, err` (see `e2b.errors`).
-- @module e2b
local core = require("e2b.core")
local rt = require("e2b.rt")
local errors = require("e2b.errors")
local cancel = require("e2b.cancel")

local M = {}

--- The library version, "MAJOR.MINOR.PATCH" (libe2b's `e2b_version()`, the
-- one place it is kept).
-- @field VERSION
M.VERSION = core.VERSION

--- "lua-e2b MAJOR.MINOR.PATCH", as Lua modules name themselves.
-- @field _VERSION
M._VERSION = "lua-e2b " .. core.VERSION

--- The error helpers and kinds (the `e2b.errors` module).
-- @field errors
M.errors = errors

local adapter = rt.adapter
--- The scheduler adapter in use: "lua" (e2b.sched) or "ngx" (e2b.ngx, under OpenResty).
-- @field scheduler
M.scheduler = adapter.name

--- Runs fn(...) as a task and drives the loop until it and every other task
-- has ended (under nginx: every task started inside this run). Nested inside
-- a task it is `e2b.spawn(fn, ...):wait()`.
-- @function run
-- @tparam function fn
-- @param ... fn's arguments
-- @return fn's results
-- @raise a task's error; "e2b.run: a task failed: ..." for a task nobody waited for
M.run = adapter.run

--- Starts fn(...) as a task; it first runs when the caller next waits.
-- @function spawn
-- @tparam function fn
-- @param ... fn's arguments
-- @treturn e2b.sched.Task join it with task:wait()
-- @raise when fn is not a function (and under nginx, in a phase that cannot yield)
M.spawn = adapter.spawn

--- Sleeps: yields inside a task, blocks outside one (under nginx at least 1 ms).
-- @function sleep
-- @tparam int ms milliseconds
M.sleep = adapter.sleep

--- Makes a cancel token: pass it as a call's `cancel` option (run, spawn,
-- files:read, read_to, write, client:create, a volume's read, read_to,
-- write); token:cancel(), from another
-- task, ends that call with kind "canceled".
-- @function cancel_token
-- @treturn e2b.cancel.Token
M.cancel_token = cancel.new

--- Makes a client: one E2B account and endpoint with its defaults.
-- Unset options fall back to E2B_API_KEY, E2B_DOMAIN, E2B_API_URL,
-- E2B_SANDBOX_URL and E2B_TEMPLATE, as the official SDKs read them. The
-- options (request_timeout_ms, max_retries, max_concurrent, page_size,
-- template, timeout_ms, network, lifecycle, user, owner, on_close,
-- ready_timeout_ms), their types and defaults are listed at `e2b.client.new`.
-- @tparam[opt] table opts
-- @treturn e2b.client.Client client
-- @return or nil, err
function M.client(opts)
  return require("e2b.client").new(opts)
end

--- A new template builder (the SDKs' `Template()`): chain its steps, then
-- build it with `client:build_template(t, { name = ... })`. See `e2b.template`.
-- @tparam[opt] table opts { context = directory COPY sources are read from (default "."),
--   ignore = { patterns left out of every COPY } }
-- @treturn e2b.template.Template
function M.template(opts)
  return require("e2b.template").new(opts)
end

-- The ready commands for `Template:set_start_cmd` (the SDKs' waitForPort and
-- the others) are e2b.template's; each returns a shell command, or nil, err.
local function ready(name)
  return function(...) return require("e2b.template")[name](...) end
end

--- A ready command: something listens on port.
-- @function wait_for_port
-- @tparam int port
M.wait_for_port = ready("wait_for_port")
--- A ready command: url answers with status (default 200).
-- @function wait_for_url
M.wait_for_url = ready("wait_for_url")
--- A ready command: a process of that name runs.
-- @function wait_for_process
M.wait_for_process = ready("wait_for_process")
--- A ready command: the file exists.
-- @function wait_for_file
M.wait_for_file = ready("wait_for_file")
--- A ready command: sleep ms milliseconds (whole seconds, at least one).
-- @function wait_for_timeout
M.wait_for_timeout = ready("wait_for_timeout")

return M
