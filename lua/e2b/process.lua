-- e2b.process: commands in a sandbox (shared/API.md, "Process" and sbx:run).
--
-- A process is one Connect stream of events (start, output, end). Output is
-- taken from the core's bounded queue as it is read, so memory stays bounded
-- however much a process writes: read() returns at most 1 MiB, and run()
-- keeps at most max_output bytes per stream.
local check = require("e2b.check")
local errors = require("e2b.errors")
local rt = require("e2b.rt")

local M = {}

local Process = {}
Process.__index = Process
M.Process = Process

local adapter = rt.adapter
local READ_MAX = 1024 * 1024
local STDIN_CHUNK = 1024 * 1024
local DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024

local SIGNALS = { TERM = 15, KILL = 9, INT = 2 }

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

local COMMON = {
  cwd = "nonempty",
  env = "string_map",
  user = "nonempty",
  timeout_ms = "positive_ms",
  on_stdout = "function",
  on_stderr = "function",
  idle_timeout_ms = "positive_ms",
  max_output = "positive",
  keep = check.oneof("tail"),
  tag = "nonempty",
}

local RUN_SPEC = setmetatable({
  stdin = function(v) if type(v) ~= "string" then return "must be a string of bytes" end end,
}, { __index = COMMON })

local SPAWN_SPEC = setmetatable({
  stdin = function(v)
    if type(v) ~= "string" and v ~= true then return "must be bytes (a string) or true" end
  end,
  pty = function(v)
    if type(v) ~= "table" then return "must be a table { cols, rows }" end
    local cols, rows = v.cols or v[1], v.rows or v[2]
    if type(cols) ~= "number" or type(rows) ~= "number" or cols < 1 or rows < 1
      or cols ~= math.floor(cols) or rows ~= math.floor(rows) then
      return "needs positive integer cols and rows"
    end
  end,
}, { __index = COMMON })

-- Checks a command and its options (spec's __index holds the shared keys).
local function check_command(op, cmd, opts, spec)
  local reason = cmd_checker(cmd)
  if reason then return nil, errors.invalid(op, "cmd", reason) end
  return check.options(op, opts, spec)
end

-- The core start options for a command string (run by bash, as E2B's SDKs
-- do) or an argv array (no shell).
local function start_opts(sbx, cmd, o)
  local start = {
    env = o.env, cwd = o.cwd, user = o.user or sbx._client._user, tag = o.tag,
    stdin = o.stdin ~= nil, timeout_ms = o.timeout_ms,
  }
  if type(cmd) == "string" then
    start.cmd, start.args = "/bin/bash", { "-l", "-c", cmd }
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

local function new_process(sbx, req, pid, tag)
  return setmetatable({
    pid = pid,
    tag = tag,
    _sbx = sbx,
    _req = req,
    _offsets = { stdout = 0, stderr = 0, pty = 0 },
    _stdin = nil, -- bytes still to send (run's stdin)
    _detached = false,
  }, Process)
end

-- Waits for the start event; returns the pid or nil, err.
local function await_start(req, sbx)
  while true do
    local kind, pid = req:read(READ_MAX)
    if kind == "start" then return pid end
    if kind == false or (kind ~= nil) then
      local ok, err = req:result()
      if not ok then return nil, sbx:_envd_err(err) end
      return nil, errors.new("protocol", "process.start",
        "stream did not begin with a start event", { sandbox_id = sbx.sandbox_id })
    end
    adapter.await(req)
  end
end

-- spawn(sbx, cmd, opts) -> proc | nil, err
function M.spawn(sbx, cmd, opts)
  local o, err = check_command("spawn", cmd, opts, SPAWN_SPEC)
  if not o then return nil, err end
  local req
  req, err = sbx._h:start(start_opts(sbx, cmd, o))
  if not req then return nil, sbx:_envd_err(err) end
  local pid
  pid, err = await_start(req, sbx)
  if not pid then
    req:close()
    return nil, err
  end
  local proc = new_process(sbx, req, pid, o.tag)
  proc._pty = o.pty ~= nil
  proc._on = { stdout = o.on_stdout, stderr = o.on_stderr }
  if type(o.stdin) == "string" then proc._stdin, proc._close_stdin = o.stdin, true end
  return proc
end

-- Sends pending stdin bytes one request at a time (never blocking the
-- output: the caller keeps reading while a send is in flight). Returns the
-- request in flight, if any.
function Process:_feed_stdin()
  local f = self._feeding
  if f then
    if not f:done() then return f end
    local ok, err = f:result()
    f:close()
    self._feeding = nil
    if not ok then
      -- The process may have exited without reading its input; that is its business.
      self._stdin, self._close_stdin = nil, nil
      if not errors.is(err, "not_found") then self._stdin_error = err end
      return nil
    end
  end
  local h = self._sbx._h
  if self._stdin and #self._stdin > 0 then
    local chunk = self._stdin:sub(1, STDIN_CHUNK)
    self._stdin = self._stdin:sub(STDIN_CHUNK + 1)
    self._feeding = h:send_input(self.pid, chunk, self._pty)
    return self._feeding
  elseif self._close_stdin then
    self._close_stdin, self._stdin = nil, nil
    self._feeding = h:close_stdin(self.pid)
    return self._feeding
  end
  return nil
end

-- Takes the next piece of output. Returns data, stream | "end" | nil, err
-- (nil, nil when nothing arrives before deadline).
function Process:_next(deadline)
  while true do
    local kind, a, b, c, d = self._req:read(READ_MAX)
    if kind == "stdout" or kind == "stderr" or kind == "pty" then
      self._offsets[kind] = self._offsets[kind] + #a
      return a, kind
    elseif kind == "end" then
      self._exit = { exit_code = a, exited = b, status = c, error = d }
    elseif kind == false then
      if self._exit then return "end" end
      local ok, err = self._req:result()
      if ok then
        err = errors.new("protocol", "process", "stream ended without an end event")
      end
      return nil, self._sbx:_envd_err(err)
    elseif kind == nil then
      local feeding = self:_feed_stdin()
      local waits = feeding and { self._req, feeding } or self._req
      if not adapter.await(waits, deadline) then return nil, nil end
    end
    -- "start" (after a reconnect) carries nothing new
  end
end

local function timeout_error(op, ms, what)
  return errors.new("timeout", op, ("%s after %d ms"):format(what, ms), { retryable = false })
end

-- read(timeout_ms?) -> data, stream | nil (ended, all read) | nil, err
function Process:read(timeout_ms)
  if timeout_ms ~= nil then
    local ok, err = check.value("read", "timeout_ms", timeout_ms, "ms")
    if not ok then return nil, err end
  end
  if self._closed then return nil, errors.new("canceled", "read", "process handle is closed") end
  local deadline = timeout_ms and adapter.now_ms() + timeout_ms
  local data, stream = self:_next(deadline)
  if data == "end" then return nil end
  if data == nil and stream == nil then
    return nil, timeout_error("read", timeout_ms, "no output")
  end
  return data, stream
end

-- Collects output until the end. sinks: per-stream { parts, bytes, max, tail, dropped }.
local function new_sink(max, tail)
  return { parts = {}, first = 1, bytes = 0, max = max, tail = tail, dropped = 0 }
end

local function sink_add(s, data)
  local parts = s.parts
  parts[#parts + 1] = data
  s.bytes = s.bytes + #data
  if s.bytes <= s.max then return true end
  if not s.tail then return false end
  -- Keep the last max bytes: drop whole chunks from the front, then trim.
  while s.bytes - #parts[s.first] >= s.max do
    s.bytes = s.bytes - #parts[s.first]
    s.dropped = s.dropped + #parts[s.first]
    parts[s.first] = false
    s.first = s.first + 1
  end
  local over = s.bytes - s.max
  if over > 0 then
    parts[s.first] = parts[s.first]:sub(over + 1)
    s.bytes, s.dropped = s.bytes - over, s.dropped + over
  end
  if s.first > 64 and s.first > #parts / 2 then
    local compact = {}
    for i = s.first, #parts do compact[#compact + 1] = parts[i] end
    s.parts, s.first = compact, 1
  end
  return true
end

local function sink_text(s)
  return table.concat(s.parts, "", s.first)
end

function Process:_collect(deadline, max_output, tail, idle_ms)
  local sinks = { stdout = new_sink(max_output, tail), stderr = new_sink(max_output, tail),
                  pty = new_sink(max_output, tail) }
  local on = self._on or {}
  while true do
    local step_deadline = deadline
    if idle_ms then
      local idle = adapter.now_ms() + idle_ms
      if not step_deadline or idle < step_deadline then step_deadline = idle end
    end
    local data, stream = self:_next(step_deadline)
    if data == "end" then break end
    if data == nil then
      return nil, stream, sinks, deadline and adapter.now_ms() >= deadline and "deadline" or "idle"
    end
    if not sink_add(sinks[stream], data) then
      return nil, errors.new("sandbox", "run",
        ("%s exceeded max_output (%d bytes); use keep = \"tail\" or spawn() and read()")
          :format(stream, max_output), { retryable = false }), sinks, "overflow"
    end
    local cb = on[stream == "pty" and "stdout" or stream]
    if cb then cb(data) end
  end
  local exit = self._exit
  local result = {
    exit_code = exit.exit_code,
    stdout = sink_text(sinks.stdout),
    stderr = sink_text(sinks.stderr),
    ok = exit.exit_code == 0,
    status = exit.status,
    error = exit.error,
  }
  if self._pty then result.pty = sink_text(sinks.pty) end
  local dropped = sinks.stdout.dropped + sinks.stderr.dropped + sinks.pty.dropped
  if tail then result.bytes_dropped = dropped end
  return result
end

-- Kills the group after a failed collect and attaches what was read.
function Process:_abort(err, sinks, why, timeout_ms)
  self:kill()
  if why == "deadline" then
    err = timeout_error("run", timeout_ms, "command timed out")
  elseif why == "idle" then
    err = timeout_error("run", self._idle_ms, "no output (idle_timeout_ms)")
  end
  err = self._sbx:_envd_err(err)
  err.stdout, err.stderr = sink_text(sinks.stdout), sink_text(sinks.stderr)
  err.pid = self.pid
  self:close()
  return nil, err
end

-- wait(timeout_ms?) -> result | nil, err. stdout/stderr hold what read()
-- had not taken. A wait timeout leaves the process running.
function Process:wait(timeout_ms)
  if timeout_ms ~= nil then
    local ok, err = check.value("wait", "timeout_ms", timeout_ms, "ms")
    if not ok then return nil, err end
  end
  if self._closed then return nil, errors.new("canceled", "wait", "process handle is closed") end
  local deadline = timeout_ms and adapter.now_ms() + timeout_ms
  local result, err, sinks, why = self:_collect(deadline, DEFAULT_MAX_OUTPUT, false, nil)
  if not result then
    if why == "deadline" then err = timeout_error("wait", timeout_ms, "process still running") end
    return nil, err
  end
  return result
end

-- run(sbx, cmd, opts) -> result | nil, err
function M.run(sbx, cmd, opts)
  local op = "run"
  local o, err = check_command(op, cmd, opts, RUN_SPEC)
  if not o then return nil, err end
  local proc
  proc, err = M.spawn(sbx, cmd, o)
  if not proc then return nil, err end
  proc._idle_ms = o.idle_timeout_ms
  -- The client-side deadline backs up envd's own (Connect-Timeout-Ms).
  local deadline = o.timeout_ms and adapter.now_ms() + o.timeout_ms
  local result, sinks, why
  result, err, sinks, why = proc:_collect(deadline, o.max_output or DEFAULT_MAX_OUTPUT,
    o.keep == "tail", o.idle_timeout_ms)
  if not result then return proc:_abort(err, sinks, why, o.timeout_ms) end
  proc:close()
  if o.timeout_ms and result.status and result.status:find("signal") and
    adapter.now_ms() >= deadline - 50 then
    -- envd's deadline fired first and killed the group.
    local terr = timeout_error(op, o.timeout_ms, "command timed out")
    terr.stdout, terr.stderr, terr.sandbox_id = result.stdout, result.stderr, sbx.sandbox_id
    return nil, terr
  end
  return result
end

-- ---- control ----

function Process:_unary(req, err)
  return self._sbx:_envd(req, err)
end

function Process:write(bytes)
  local ok, err = check.value("write", "bytes", bytes, "string")
  if not ok then return nil, err end
  return self:_unary(self._sbx._h:send_input(self.pid, bytes, self._pty))
end

function Process:close_stdin()
  return self:_unary(self._sbx._h:close_stdin(self.pid))
end

function Process:signal(name)
  local signo = SIGNALS[name]
  if not signo then return nil, errors.invalid("signal", "name", 'must be "TERM", "KILL" or "INT"') end
  return self:_unary(self._sbx._h:signal(self.pid, signo))
end

function Process:kill()
  local ok, err = self:signal("KILL")
  if ok or errors.is(err, "not_found") then
    self._killed = true
    return true
  end
  return nil, err
end

function Process:resize(size)
  if not self._pty then
    return nil, errors.new("unsupported", "resize", "process has no pty", { retryable = false })
  end
  local cols, rows = type(size) == "table" and (size.cols or size[1]), type(size) == "table" and (size.rows or size[2])
  local ok, err = check.value("resize", "cols", cols, "positive")
  if ok then ok, err = check.value("resize", "rows", rows, "positive") end
  if not ok then return nil, err end
  return self:_unary(self._sbx._h:resize(self.pid, cols, rows))
end

function Process:offsets()
  return { stdout = self._offsets.stdout, stderr = self._offsets.stderr, pty = self._offsets.pty }
end

function Process:detach()
  self._detached = true
end

-- close(): kills the process group unless detached, then frees the stream.
function Process:close()
  if self._closed then return end
  self._closed = true
  if not self._detached and not self._exit and not self._killed then
    rt.finish(self._sbx._h:signal(self.pid, 9))
  end
  if self._feeding then self._feeding:close() end
  self._req:close()
end

Process.__close = Process.close

return M
