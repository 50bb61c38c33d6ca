--- e2b.process: commands in a sandbox (docs/manual.md, "Process" and sbx:run).
--
-- A process is a process stream of libe2b's e2b_proc_track: its output is also kept in the
-- sandbox and the stream falls back to reading it by offset, so a reader
-- never loses or repeats a byte, and sbx:attach() continues from offsets on
-- any client. Output is taken from the core's bounded queue as it is read:
-- read() returns at most 1 MiB. run() is the core's (e2b_run_with): what it
-- keeps (max_output per stream), its stdin, its deadline and its kill are
-- decided there; this module hands it the options and calls the callbacks
-- with the chunks it passes on.
-- @module e2b.process
local cancel = require("e2b.cancel")
local check = require("e2b.check")
local core = require("e2b.core")
local errors = require("e2b.errors")
local rt = require("e2b.rt")

local M = {}

--- A process handle, from `Sandbox:spawn` or `Sandbox:attach`. Every
-- method returning values returns nil, err on failure.
-- @type Process
-- @field pid the process id in the sandbox
-- @field tag the tag naming it (signals and input go by tag)
-- @field kept true when its output is kept in the sandbox (attach() can continue it)
-- @field tracked deprecated: the same as kept
local Process = rt.class(M, "Process")

local adapter = rt.adapter
local READ_MAX = 1024 * 1024

-- envd delivers these two only (SendSignal answers any other "unimplemented").
local SIGNALS = { TERM = 15, KILL = 9 }
local NO_CALLBACKS = {} -- a handle without callbacks holds no table of them

local function cmd_checker(v)
  if type(v) == "string" then
    if v == "" then return "must not be empty" end
    return
  end
  if type(v) ~= "table" or #v == 0 then
    return "must be a command string or a non-empty array {argv...}"
  end
  for i = 1, #v do
    if type(v[i]) ~= "string" then return ("argv[%d] must be a string"):format(i) end
  end
  if v[1] == "" then return "argv[1] must not be empty" end
end

local function pty_checker(v)
  if type(v) ~= "table" then return "must be a table { cols, rows }" end
  local cols, rows = v.cols or v[1], v.rows or v[2]
  if type(cols) ~= "number" or type(rows) ~= "number" or cols < 1 or rows < 1
    or cols ~= math.floor(cols) or rows ~= math.floor(rows) then
    return "needs positive integer cols and rows"
  end
end

local COMMON = {
  cwd = "nonempty",
  env = "string_map",
  env_mode = check.oneof("extend", "replace"),
  user = "nonempty",
  timeout_ms = "positive_ms",
  on_stdout = "function",
  on_stderr = "function",
  idle_timeout_ms = "positive_ms",
  max_output = "positive",
  keep = check.oneof("all", "tail", "none"),
  tag = "nonempty",
  keep_output = "boolean",
  cancel = "cancel",
}

local RUN_SPEC = setmetatable({
  stdin = function(v) if type(v) ~= "string" then return "must be a string of bytes" end end,
}, { __index = COMMON })

local SPAWN_SPEC = setmetatable({
  stdin = function(v)
    if type(v) ~= "string" and v ~= true then return "must be bytes (a string) or true" end
  end,
  pty = pty_checker,
  park = "boolean",
}, { __index = COMMON })

-- Checks a command and its options (spec's __index holds the shared keys).
local function check_command(op, cmd, opts, spec)
  local reason = cmd_checker(cmd)
  if reason then return nil, errors.invalid(op, "cmd", reason) end
  return check.options(op, opts, spec)
end

-- The core start options for a command string (shell: the core runs it
-- with bash -l -c, as E2B's SDKs do) or an argv array (no shell).
local function start_opts(port, cmd, o)
  local start = {
    env = o.env, cwd = o.cwd, user = o.user or port.user, tag = o.tag,
    stdin = o.stdin ~= nil, timeout_ms = o.timeout_ms, idle_timeout_ms = o.idle_timeout_ms,
  }
  if type(cmd) == "string" then
    start.shell = cmd
  else
    start.cmd = cmd[1]
    start.args = {}
    for i = 2, #cmd do start.args[i - 1] = cmd[i] end
  end
  if o.pty then
    start.pty_cols, start.pty_rows = o.pty.cols or o.pty[1], o.pty.rows or o.pty[2]
    start.stdin = nil
  end
  return start
end

-- Finalizer: a collected, non-detached handle does what close() does: kills
-- its process group and removes its kept output. It cannot wait, so both are
-- sent unattended (the loop sends them before the Lua state closes). (Lua
-- 5.1/LuaJIT run __gc only for userdata, hence the proxy.)
local function on_collect(self)
  if self._closed or self._detached then return end
  self:_end_unattended()
end

-- Ends the process group and removes kept output without waiting (the
-- finalizer's way, and a cancel token's).
function Process:_end_unattended()
  local kept = self.kept and self.tag
  if not self._exit and not self._killed then
    -- a kept command's files go once its wrapper is gone, which writes last
    if kept then return self._port.call("end_async", self.pid, self.tag) end
    self._port.call("stop_async", self.pid, self.kept)
  end
  if kept then self._port.call("forget_async", self.tag, self._user) end
end

local newproxy = rawget(_G, "newproxy")

local function new_process(port, req, info, offsets)
  local self = setmetatable({
    pid = info.pid,
    tag = info.tag,
    kept = info.kept,
    tracked = info.kept, -- deprecated name of kept
    _port = port,
    _req = req,
    _offsets = { stdout = offsets and offsets.stdout or 0, stderr = offsets and offsets.stderr or 0,
                 pty = 0 },
    _detached = false,
  }, Process)
  if newproxy then
    local proxy = newproxy(true)
    getmetatable(proxy).__gc = function() on_collect(self) end
    self._gc_proxy = proxy
  end
  return self
end

-- Waits for the start event; returns the process info or nil, err.
local function await_start(req, port)
  while true do
    local kind = req:read(READ_MAX)
    if kind == "start" then return req:process() end
    if kind ~= nil then
      local ok, err = req:result()
      if not ok then return nil, port.explain(req, err) end
      return nil, errors.new("protocol", "spawn", "stream did not begin with a start event",
        { sandbox_id = port.sandbox_id })
    end
    adapter.await(req)
  end
end

-- The handle of a started or attached process, once its start event came.
local function started(port, req, offsets)
  local info, err = await_start(req, port)
  if not info then
    req:close()
    return nil, err
  end
  return new_process(port, req, info, offsets)
end

-- A cancel token's end of a spawned handle: the process group ended and
-- its kept files removed as a collected handle's are (unattended: cancel()
-- never waits), its stream canceled, and every read or wait from now on
-- fails with kind "canceled".
function Process:_cancel()
  if self._closed or self._canceled then return end
  self._canceled = true
  if not self._detached then self:_end_unattended() end
  self._detached = true -- what close() would send is sent
  self._req:cancel()
end

-- Starts a checked command.
local function spawn(port, cmd, o)
  if o.cancel and o.cancel:is_canceled() then
    return nil, errors.new("canceled", "spawn", "the call's cancel token was canceled", { retryable = false })
  end
  local start = start_opts(port, cmd, o)
  -- keep_output nil: the core's default (kept)
  local req, err = port.call("track", start, o.env_mode == "replace", o.keep_output, false, o.park)
  if not req then return nil, port.explain(nil, err) end
  local proc
  proc, err = started(port, req)
  if not proc then return nil, err end
  proc._user = start.user -- whose commands may remove its kept files
  proc._pty = o.pty ~= nil
  if o.on_stdout or o.on_stderr then proc._on = { stdout = o.on_stdout, stderr = o.on_stderr } end
  -- The core feeds the bytes (in pieces) and closes stdin; its feed fails
  -- only when the input never reached the process (read reports it).
  if type(o.stdin) == "string" then proc._feeding = port.call("feed", proc:_target(), o.stdin, proc._pty) end
  -- The start is never canceled half-way (a process could start unknown to
  -- anyone): a token canceled meanwhile ends the handle at once.
  if o.cancel then
    proc._cancel_token = o.cancel
    -- held weakly: a token that lives on never keeps a dropped handle (and
    -- its finalizer) from being collected, on Lua 5.1 too (no ephemerons)
    local ref = setmetatable({ proc }, { __mode = "v" })
    cancel.hook(o.cancel, proc, function()
      local p = ref[1]
      if p then p:_cancel() end
    end)
  end
  return proc
end

-- spawn(port, cmd, opts) -> proc | nil, err; port: what a process may ask of
-- its sandbox (e2b.sandbox's envd port: user, sandbox_id, call, envd, explain)
function M.spawn(port, cmd, opts)
  local o, err = check_command("spawn", cmd, opts, SPAWN_SPEC)
  if not o then return nil, err end
  return spawn(port, cmd, o)
end

-- attach(port, pid_or_tag, { offsets = { stdout = n, stderr = m }, idle_timeout_ms }) -> proc
function M.attach(port, target, opts)
  local op = "attach"
  if type(target) ~= "string" and (type(target) ~= "number" or target < 1 or target ~= math.floor(target)) then
    return nil, errors.invalid(op, "pid_or_tag", "must be a pid or a tag")
  end
  local o, err = check.options(op, opts, {
    offsets = function(v)
      if type(v) ~= "table" then return "must be a table { stdout = n, stderr = m }" end
      for k, n in pairs(v) do
        if k ~= "stdout" and k ~= "stderr" and k ~= "pty" then return "unknown stream " .. tostring(k) end
        if type(n) ~= "number" or n < 0 or n ~= math.floor(n) then return "offsets are byte counts" end
      end
    end,
    idle_timeout_ms = "positive_ms",
  })
  if not o then return nil, err end
  local offsets = o.offsets or {}
  local req
  req, err = port.call("attach", target, offsets.stdout or 0, offsets.stderr or 0, o.idle_timeout_ms)
  if not req then return nil, port.explain(nil, err) end
  return started(port, req, offsets)
end

-- The stdin feed still in flight, if any (awaited beside the output); a
-- feed that failed is kept as the error the next read reports (explained
-- on the feed's own request).
function Process:_feed_pending()
  local f = self._feeding
  if f and f:done() then
    local ok, err = f:result()
    if not ok then self._feed_err = self._port.explain(f, err) end
    f:close()
    self._feeding, f = nil, nil
  end
  return f
end

-- Signals and input go by pid, as the SDKs send them: envd's lookup by tag
-- stops at the first other tagged process it meets, so it can miss ours.
function Process:_target()
  return self.pid or self.tag
end

-- What _next returns once the process ended and all was read: a value no
-- output can be (a chunk may well be the bytes "end").
local ENDED = setmetatable({}, { __name = "e2b.process.ENDED" })

-- Takes the next piece of output. Returns data, stream | ENDED | nil, err
-- (nil, nil when nothing arrives before deadline). Given a collector out
-- (wait's core.output), output goes into it in C, as a run's does, and
-- only the chunks of a stream in want (a callback's) come back.
function Process:_next(deadline, out, want)
  while true do
    -- closed by another task while this one waited: never a bare nil (that
    -- means "exited, all read"), never a read of a closed request
    if self._closed then return nil, errors.new("canceled", "read", "the process handle was closed") end
    if self._canceled then
      return nil, errors.new("canceled", "read", "the spawn's cancel token was canceled", { retryable = false })
    end
    local kind, a, b, c, d
    if out then
      kind, a, b, c, d = self._req:collect(out, want, self._offsets) -- counts the offsets itself
    else
      kind, a, b, c, d = self._req:read(READ_MAX)
      if a and (kind == "stdout" or kind == "stderr" or kind == "pty") then
        self._offsets[kind] = self._offsets[kind] + #a
      end
    end
    if kind == "stdout" or kind == "stderr" or kind == "pty" then
      return a, kind
    elseif kind == "refused" then
      return nil, a
    elseif kind == "end" then
      self._exit = { exit_code = a, exited = b, status = c, error = d }
    elseif kind == false then
      if self._exit then return ENDED end
      local ok, err = self._req:result()
      if ok then
        return nil, errors.new("protocol", "process", "stream ended without an end event",
          { sandbox_id = self._port.sandbox_id })
      end
      return nil, self._port.explain(self._req, err)
    elseif kind == nil then
      local feeding = self:_feed_pending()
      if self._feed_err then
        local err = self._feed_err
        self._feed_err = nil
        return nil, err
      end
      local waits = feeding and { self._req, feeding } or self._req
      if not adapter.await(waits, deadline) then return nil, nil end
    end
    -- "start" (after a reconnect) carries nothing new
  end
end

local function timeout_error(op, ms, what)
  return errors.new("timeout", op, ("%s after %d ms"):format(what, ms), { retryable = false })
end

-- read and wait: timeout_ms checked and the handle open; the deadline it
-- sets (nil: none, with no error) | nil, err.
function Process:_deadline(op, timeout_ms)
  if timeout_ms ~= nil then
    local ok, err = check.value(op, "timeout_ms", timeout_ms, "ms")
    if not ok then return nil, err end
  end
  if self._closed then return nil, errors.new("canceled", op, "process handle is closed") end
  if self._canceled then
    return nil, errors.new("canceled", op, "the spawn's cancel token was canceled", { retryable = false })
  end
  return timeout_ms and adapter.now_ms() + timeout_ms
end

--- Takes the next chunk of output (at most 1 MiB, of one stream).
-- Pending stdin is fed while reading.
-- @tparam[opt] int timeout_ms how long to wait for a chunk (not a size); none: no limit
-- @treturn string data
-- @treturn string stream "stdout", "stderr" or "pty"
-- @return or nil when the process exited and everything was read
-- @return or nil, err: kind "timeout" when nothing came in time (the process
--   keeps running), "canceled" after close()
function Process:read(timeout_ms)
  local deadline, err = self:_deadline("read", timeout_ms)
  if err then return nil, err end
  local data, stream = self:_next(deadline)
  if data == ENDED then return nil end
  if data == nil and stream == nil then
    return nil, timeout_error("read", timeout_ms, "no output")
  end
  return data, stream
end

--- Iterates over the output line by line: each complete line (without its
-- "\n") of stdout, stderr or pty as it arrives, each stream cut separately
-- (a line split across chunks is joined), then each stream's unterminated
-- last piece. `for line, stream in proc:lines() do ... end`
-- @tparam[opt] table opts
-- @tparam[opt] int opts.timeout_ms how long each wait for output may take (ms; default no limit)
-- @treturn function iterator returning line, stream ("stdout", "stderr" or "pty")
-- @raise the error object of a failed read (as io.lines does)
function Process:lines(opts)
  local o, err = check.options("lines", opts, { timeout_ms = "ms" })
  if not o then error(err, 2) end
  local pending, ready, ended = {}, {}, false
  local function flush_ends()
    for _, stream in ipairs({ "stdout", "stderr", "pty" }) do
      if pending[stream] and pending[stream] ~= "" then ready[#ready + 1] = { pending[stream], stream } end
      pending[stream] = nil
    end
  end
  return function()
    while #ready == 0 do
      if ended then return nil end
      local data, stream = self:read(o.timeout_ms)
      if data == nil then
        if stream ~= nil then error(stream, 2) end
        ended = true
        flush_ends()
      else
        local buf, from = (pending[stream] or "") .. data, 1
        for line, stop in buf:gmatch("([^\n]*)\n()") do
          ready[#ready + 1] = { line, stream }
          from = stop
        end
        pending[stream] = buf:sub(from)
      end
    end
    local item = table.remove(ready, 1)
    return item[1], item[2]
  end
end

--- Waits for the end; stdout/stderr hold what read() had not taken (at
-- most 64 MiB per stream); on_stdout/on_stderr are called as it collects.
-- @tparam[opt] int timeout_ms none: no limit; a timeout leaves the process running
-- @treturn table result (see `e2b.sandbox.Sandbox:run`)
-- @return or nil, err
function Process:wait(timeout_ms)
  local deadline, err = self:_deadline("wait", timeout_ms)
  if err then return nil, err end
  -- What is kept is the core's call (core.output, as run's); a wait that
  -- timed out leaves it for the next one.
  local out = self._output or core.output(0, "all") -- 0: the core's default max_output
  self._output = out
  local on = self._on or NO_CALLBACKS
  local want = { stdout = on.stdout ~= nil, pty = on.stdout ~= nil, stderr = on.stderr ~= nil }
  while true do
    local data, stream = self:_next(deadline, out, want)
    if data == ENDED then break end
    if data == nil then
      if stream == nil then return nil, timeout_error("wait", timeout_ms, "process still running") end
      return nil, stream
    end
    on[stream == "pty" and "stdout" or stream](data)
  end
  self._output = nil
  local exit = self._exit
  return out:result(exit.exit_code, exit.status, exit.error, self._pty)
end

-- run(port, cmd, opts) -> result | nil, err. The core's run does it all
-- (e2b_run_with): this hands it the options, calls the callbacks with the
-- chunks it passes on while it runs, and returns its result or its error
-- (with what the command wrote, past a failure after the start).
local function run(port, cmd, o)
  local req, err
  req, err = port.call("run", start_opts(port, cmd, o), {
    stdin = o.stdin, max_output = o.max_output, keep = o.keep,
    chunks_stdout = o.on_stdout ~= nil, chunks_stderr = o.on_stderr ~= nil,
    env_replace = o.env_mode == "replace", keep_output = o.keep_output, -- nil: the core's default (kept)
    track = true, -- started by e2b_proc_track: kept (reattachable) unless keep_output is false
  })
  if not req then return nil, port.explain(nil, err) end
  -- Only the streams with a callback are handed on (a pty's as stdout).
  local on = { stdout = o.on_stdout, pty = o.on_stdout, stderr = o.on_stderr }
  while true do
    local kind, data = req:read(READ_MAX)
    if kind == false then break end
    if kind == nil then adapter.await(req) else on[kind](data) end
  end
  return rt.finish(req, nil, function(r, e)
    local stdout, stderr, pid = e.stdout, e.stderr, e.pid
    e = port.explain(r, e)
    e.stdout, e.stderr, e.pid = stdout, stderr, pid
    return e
  end)
end

function M.run(port, cmd, opts)
  local o, err = check_command("run", cmd, opts, RUN_SPEC)
  if not o then return nil, err end
  -- canceled, the core's run kills the group as a timeout does (its release)
  return cancel.scope(o.cancel, run, port, cmd, o)
end

-- ---- control ----

function Process:_unary(req, err)
  return self._port.envd(req, err)
end

--- Writes to its stdin (spawned with stdin = true) or its pty.
-- @tparam string bytes
-- @treturn boolean true
-- @return or nil, err
function Process:write(bytes)
  local ok, err = check.value("write", "bytes", bytes, "string")
  if not ok then return nil, err end
  return self:_unary(self._port.call("send_input", self:_target(), bytes, self._pty))
end

--- Ends its input.
-- @treturn boolean true
-- @return or nil, err
function Process:close_stdin()
  return self:_unary(self._port.call("close_stdin", self:_target()))
end

--- Sends a signal to its process group.
-- @tparam string name "TERM" or "KILL" (envd delivers no other)
-- @treturn boolean true
-- @return or nil, err
function Process:signal(name)
  local signo = SIGNALS[name]
  if not signo then return nil, errors.invalid("signal", "name",
    'must be "TERM" or "KILL": envd delivers no other signal') end
  -- by pid, once envd's list shows it with our tag: a reused pid is never hit
  return self:_unary(self._port.call("signal", self.tag or self.pid, signo, self.pid))
end

--- SIGKILL to the process group; true once the group is gone (checked for
-- 2 s), an error naming the survivor otherwise (never a success that did
-- not happen).
-- @treturn boolean true
-- @return or nil, err (kind "sandbox" for a survivor)
function Process:kill()
  if self._exit then return true end
  -- by tag when it has one: the core finds it in envd's list, so a reused pid is never hit
  local ok, err = self:_unary(self._port.call("kill", self.tag or self.pid)) -- the core's settle time
  if not ok then
    if errors.is(err, "sandbox") then err.pid = self.pid end
    return nil, err
  end
  self._killed = true
  if not self._closed then self._req:killed() end -- a parked stream ends now, as envd says
  return true
end

--- Resizes its pty.
-- @tparam table size { cols, rows } (or { cols = c, rows = r })
-- @treturn boolean true
-- @return or nil, err (kind "unsupported" without a pty)
function Process:resize(size)
  if not self._pty then
    return nil, errors.new("unsupported", "resize", "process has no pty", { retryable = false })
  end
  local cols = type(size) == "table" and (size.cols or size[1])
  local rows = type(size) == "table" and (size.rows or size[2])
  local ok, err = check.value("resize", "cols", cols, "positive")
  if ok then ok, err = check.value("resize", "rows", rows, "positive") end
  if not ok then return nil, err end
  return self:_unary(self._port.call("resize", self:_target(), cols, rows))
end

--- The sandbox boot id this process started under (kept with its output;
-- it changes when the sandbox boots again).
-- @treturn string
-- @return or nil for a process whose output is not kept, or nil, err
function Process:boot_id()
  if not self.kept or not self.tag then return nil end
  if self._boot_id then return self._boot_id end
  -- Where and when it is recorded is the core's business (e2b_proc_boot_id).
  local id, err = self._port.envd(self._port.call("boot_id", self.tag))
  if not id then return nil, err end
  self._boot_id = id
  return id
end

--- Bytes of each stream taken so far, for `e2b.sandbox.Sandbox:attach`.
-- @treturn table { stdout = n, stderr = m, pty = k }
function Process:offsets()
  return { stdout = self._offsets.stdout, stderr = self._offsets.stderr, pty = self._offsets.pty }
end

--- Leaves the process (and its kept output) when the handle is closed or
-- collected.
function Process:detach()
  self._detached = true
end

--- Kills the process group unless detached (or ended), removes its kept
-- output and frees the handle. Safe to call again; also what `<close>` and
-- the finalizer do.
function Process:close()
  if self._closed then return end
  self._closed = true
  if self._cancel_token then cancel.unhook(self._cancel_token, self) end
  if not self._detached then
    if not self._exit and not self._killed then self:kill() end
    -- Cleanup need not be waited for: the loop sends it unattended.
    if self.kept and self.tag then self._port.call("forget_async", self.tag, self._user) end
  end
  if self._feeding then self._feeding:close() end
  self._req:close()
end

Process.__close = Process.close
Process.__gc = on_collect

return M
