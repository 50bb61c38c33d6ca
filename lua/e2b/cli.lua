-- e2b.cli: the `lua-e2b` command-line tool, written on the e2b module.
--
--   cli.main(argv, streams) -> exit code
--
-- argv is the argument array (without the program name); streams holds
-- stdout, stderr (files or anything with :write), and optionally
-- isatty(name) -> boolean for "stderr", so the tool can be run in-process.
-- Exit codes: 0 success, 1 a failure (one line on stderr: "lua-e2b: <err>"),
-- 2 a usage error; `exec` exits with the command's own code, 128+N when
-- this tool got signal N (forwarded to the command), 124 on --timeout;
-- `watch` 128+N on signal N, 0 on --timeout.
local M = {}

local PROG = "lua-e2b"
local unpack = table.unpack or unpack

-- ---- argument parsing ----
-- A command's options: name -> { arg = true (takes a value), many = true
-- (repeatable, collected in an array), short = "x" }. "--name=value" and
-- "--name value" both work; "--" ends the options.

local GLOBAL = {
  help = { short = "h" },
  json = { short = "j" },
}

local function usage_error(msg)
  return { usage = true, message = msg }
end

local function find_short(defs, letter)
  for name, d in pairs(defs) do
    if d.short == letter then return name, d end
  end
end

-- Stores one option value in opts.
local function store(opts, name, def, value)
  if def.many then
    opts[name] = opts[name] or {}
    table.insert(opts[name], value)
  else
    opts[name] = value
  end
end

-- Resolves one option word to its name and definition.
local function option_def(word, defs, cmd)
  local name, value = word:match("^%-%-([^=]+)=(.*)$")
  if not name then
    name = word:match("^%-%-(.+)$")
    if not name then
      name = find_short(defs, word:sub(2))
      if not name then return nil, usage_error(("%s: unknown option %s"):format(cmd, word)) end
    end
  end
  local def = defs[name]
  if not def then return nil, usage_error(("%s: unknown option --%s"):format(cmd, name)) end
  return name, def, value
end

-- parse(argv, defs, cmd, stop_after) -> opts, positionals | nil, usage err.
-- stop_after: after that many positionals, the next word that is not an
-- option starts the rest, all positionals (exec ID [OPTIONS] CMD ARGS...:
-- the command's own options are left alone).
function M.parse(argv, defs, cmd, stop_after)
  local opts, pos = {}, {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local is_option = a:match("^%-%-?.") and a ~= "-" and a ~= "--"
    if a == "--" or (stop_after and #pos >= stop_after and not is_option) then
      for j = (a == "--" and i + 1 or i), #argv do pos[#pos + 1] = argv[j] end
      break
    elseif is_option then
      local name, def, value = option_def(a, defs, cmd)
      if not name then return nil, def end
      if def.arg and value == nil then
        i = i + 1
        value = argv[i]
        if value == nil then return nil, usage_error(("%s: --%s needs a value"):format(cmd, name)) end
      elseif not def.arg and value ~= nil then
        return nil, usage_error(("%s: --%s takes no value"):format(cmd, name))
      end
      store(opts, name, def, def.arg and value or true)
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  return opts, pos
end

-- "K=V" words -> map, or nil, usage error naming the option.
local function pairs_arg(cmd, option, words)
  if not words then return nil end
  local map = {}
  for _, w in ipairs(words) do
    local k, v = w:match("^([^=]+)=(.*)$")
    if not k then
      return nil, usage_error(("%s: --%s wants KEY=VALUE, got %q"):format(cmd, option, w))
    end
    map[k] = v
  end
  return map
end

-- Seconds (a number > 0, or >= 0 when zero_ok) -> milliseconds.
local function seconds_arg(cmd, option, word, zero_ok)
  if word == nil then return nil end
  local n = tonumber(word)
  if not n or n ~= n or n == math.huge or n < 0 or (n == 0 and not zero_ok) then
    return nil, usage_error(("%s: --%s wants %s number of seconds, got %q")
      :format(cmd, option, zero_ok and "a non-negative" or "a positive", word))
  end
  return math.floor(n * 1000 + 0.5)
end

-- --state running,paused (repeatable) -> array, or nil, usage error.
local function states_arg(cmd, words)
  if not words then return nil end
  local out = {}
  for _, w in ipairs(words) do
    for s in w:gmatch("[^,]+") do
      if s ~= "running" and s ~= "paused" then
        return nil, usage_error(('%s: --state wants "running" or "paused", got %q'):format(cmd, s))
      end
      out[#out + 1] = s
    end
  end
  return out
end

-- ---- output ----

local function json()
  return require("cjson")
end

-- JSON text for v; an empty array stays an array (cjson alone makes {}).
local function to_json(v, is_array)
  if is_array and next(v) == nil then return "[]" end
  return json().encode(v)
end

local function iso_time(ms)
  if type(ms) ~= "number" or ms <= 0 then return "-" end
  return os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(ms / 1000))
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

local function metadata_text(meta)
  local parts = {}
  for _, k in ipairs(sorted_keys(meta)) do parts[#parts + 1] = k .. "=" .. meta[k] end
  return #parts > 0 and table.concat(parts, ",") or "-"
end

-- Rows (arrays of strings) as aligned columns; the last column is not padded.
local function table_text(header, rows)
  local all = { header }
  for _, r in ipairs(rows) do all[#all + 1] = r end
  local widths = {}
  for _, r in ipairs(all) do
    for c, cell in ipairs(r) do widths[c] = math.max(widths[c] or 0, #cell) end
  end
  local lines = {}
  for _, r in ipairs(all) do
    local cells = {}
    for c, cell in ipairs(r) do
      cells[c] = c < #r and cell .. (" "):rep(widths[c] - #cell) or cell
    end
    lines[#lines + 1] = table.concat(cells, "  ")
  end
  return table.concat(lines, "\n") .. "\n"
end

local function human_size(n)
  local units = { "B", "KiB", "MiB", "GiB", "TiB" }
  local u = 1
  while n >= 1024 and u < #units do n, u = n / 1024, u + 1 end
  return u == 1 and ("%d B"):format(n) or ("%.1f %s"):format(n, units[u])
end

-- A progress bar on a terminal: redrawn in place, at most once per percent
-- (or per chunk when the total is unknown); finish() ends its line.
local function progress_bar(out, label)
  local last
  local bar = {}
  function bar.update(done, total)
    local text
    if total and total > 0 then
      local pct = math.floor(done * 100 / total)
      if pct == last then return end
      last = pct
      local filled = math.floor(pct * 30 / 100)
      text = ("%s [%s%s] %3d%% %s/%s"):format(label, ("#"):rep(filled), ("-"):rep(30 - filled), pct,
        human_size(done), human_size(total))
    else
      text = ("%s %s"):format(label, human_size(done))
    end
    out:write("\r", text, "\27[K")
    if out.flush then out:flush() end
    bar.drawn = true
  end
  function bar.finish()
    if bar.drawn then out:write("\n") end
  end
  return bar
end

-- ---- the commands ----
-- Each takes (ctx, opts, args) and returns an exit code, or nil, err.
-- ctx: out(text), err(text), streams, client(extra options).

local function client_for(_ctx, extra)
  local e2b = require("e2b")
  local opts = {}
  for k, v in pairs(extra or {}) do opts[k] = v end
  return e2b.client(opts)
end

local function info_fields(info)
  return {
    { "id", info.id }, { "sandbox_id", info.sandbox_id }, { "template", info.template },
    { "state", info.state }, { "owner", info.owner or "-" },
    { "started_at", iso_time(info.started_at) }, { "end_at", iso_time(info.end_at) },
    { "metadata", metadata_text(info.metadata) },
  }
end

local function print_info(ctx, opts, info)
  if opts.json then return ctx.out(to_json(info) .. "\n") end
  local rows = {}
  for _, f in ipairs(info_fields(info)) do rows[#rows + 1] = { f[1], tostring(f[2] or "-") } end
  local lines = {}
  for _, r in ipairs(rows) do lines[#lines + 1] = ("%-11s %s"):format(r[1], r[2]) end
  ctx.out(table.concat(lines, "\n") .. "\n")
end

-- A count (a positive integer) from an option's word, or nil, usage error.
local function count_arg(cmd, option, word)
  if word == nil then return nil end
  local n = tonumber(word)
  if not n or n < 1 or n ~= math.floor(n) or n == math.huge then
    return nil, usage_error(("%s: --%s wants a positive whole number, got %q"):format(cmd, option, word))
  end
  return n
end

-- The sandboxes --state, --metadata and --template select, oldest first
-- (started_at, then sandbox id). -> list | nil, err
local function select_sandboxes(ctx, cmd, opts)
  local meta, err = pairs_arg(cmd, "metadata", opts.metadata)
  if err then return nil, err end
  local states
  states, err = states_arg(cmd, opts.state)
  if err then return nil, err end
  local client
  client, err = client_for(ctx)
  if not client then return nil, err end
  local list
  list, err = client:list{ metadata = meta, state = states }
  if not list then return nil, err end
  local tmpl, kept = opts.template, {}
  for _, s in ipairs(list) do
    if not tmpl or s.template == tmpl or s.template_id == tmpl then kept[#kept + 1] = s end
  end
  table.sort(kept, function(a, b)
    if (a.started_at or 0) ~= (b.started_at or 0) then return (a.started_at or 0) < (b.started_at or 0) end
    return a.sandbox_id < b.sandbox_id
  end)
  return kept, client
end

local function cmd_list(ctx, opts)
  local limit, err = count_arg("list", "limit", opts.limit)
  if err then return nil, err end
  local list
  list, err = select_sandboxes(ctx, "list", opts)
  if not list then return nil, err end
  for i = #list, (limit or #list) + 1, -1 do list[i] = nil end
  if opts.json then return ctx.out(to_json(list, true) .. "\n") end
  local rows = {}
  for _, s in ipairs(list) do
    rows[#rows + 1] = { s.id or "-", s.sandbox_id, s.template or "-", s.state or "-",
      iso_time(s.started_at), iso_time(s.end_at), s.owner or "-", metadata_text(s.metadata) }
  end
  ctx.out(table_text({ "ID", "SANDBOX ID", "TEMPLATE", "STATE", "STARTED AT", "END AT", "OWNER",
    "METADATA" }, rows))
end

local function cmd_info(ctx, opts, args)
  local client, err = client_for(ctx)
  if not client then return nil, err end
  local info
  info, err = client:describe(args[1])
  if not info then return nil, err end
  print_info(ctx, opts, info)
end

local function cmd_create(ctx, opts)
  local meta, err = pairs_arg("create", "metadata", opts.metadata)
  if err then return nil, err end
  local env
  env, err = pairs_arg("create", "env", opts.env)
  if err then return nil, err end
  local timeout_ms
  timeout_ms, err = seconds_arg("create", "timeout", opts.timeout)
  if err then return nil, err end
  local client
  client, err = client_for(ctx, { owner = opts.owner })
  if not client then return nil, err end
  local sbx
  sbx, err = client:create{ id = opts.id, template = opts.template, timeout_ms = timeout_ms,
    metadata = meta, env = env, on_close = "leave" }
  if not sbx then return nil, err end
  if opts.json then
    local info = sbx:info() or { id = sbx.id, sandbox_id = sbx.sandbox_id, template = sbx.template,
      metadata = sbx.metadata }
    return ctx.out(to_json(info) .. "\n")
  end
  ctx.out(("%s %s\n"):format(sbx.id, sbx.sandbox_id))
end

-- A process's exit as this tool's exit code (a signal death is 128 + n when
-- the status names one the shell numbers, else 1).
local SIGNUMS = { hangup = 1, interrupt = 2, quit = 3, killed = 9, terminated = 15, aborted = 6,
                  ["segmentation fault"] = 11, ["broken pipe"] = 13, alarm = 14 }
local function exit_status(result)
  local code = result.exit_code
  if type(code) == "number" and code >= 0 and code <= 255 then return code end
  local sig = type(result.status) == "string" and result.status:match("signal: (.+)$")
  return sig and SIGNUMS[sig] and 128 + SIGNUMS[sig] or 1
end

-- exec: the command is spawned (its pid is what signals and stdin need);
-- three parts share one state table while it runs: the reader (this
-- caller) writes its output until its end, a watcher task forwards this
-- tool's signals and enforces --timeout, and a feeder task streams this
-- tool's stdin (when it is no terminal) into the command's, in pieces of
-- at most CHUNK, one in flight: memory stays bounded however large the
-- input. Lua cannot catch a signal: core.trap_signals makes HUP, INT,
-- PIPE (a closed stdout) and TERM set flags the watcher takes every
-- EXEC_POLL_MS.
local CHUNK = 1024 * 1024     -- the most read from a file or stdin at once
local EXEC_POLL_MS = 50      -- how often the watcher looks at signals and the deadline
local STDIN_POLL_MS = 20     -- how often an idle stdin is looked at again
local TERM_GRACE_MS = 3000   -- after a forwarded signal, how long before SIGKILL
local BACKSTOP_MS = 2000     -- envd's own deadline comes this much after ours

local function feed_stdin(proc, state)
  local core, e2b = require("e2b.core"), require("e2b")
  while not state.ended do
    local chunk, rerr = core.read_ready(0, CHUNK)
    if chunk == false then
      e2b.sleep(STDIN_POLL_MS)
    elseif chunk == nil then
      if rerr then state.failed = state.failed or { message = "exec: stdin: " .. rerr } return end
      if state.pty then return end -- a pty has no end of input: the command's shell decides
      local ok, err = proc:close_stdin()
      if not ok and err.kind ~= "not_found" then state.warn = err end
      return
    else
      -- As the core's feed: a 429 means the input never reached a process
      -- that waits for it (the exec fails); not_found, a process that
      -- ended without reading it. Any other failure stops the input and
      -- closes the command's stdin (it never waits for what cannot come),
      -- and is told once the command ends.
      local ok, err = proc:write(chunk)
      if not ok then
        if err.kind == "rate_limited" then state.failed = state.failed or err end
        if err.kind ~= "rate_limited" and err.kind ~= "not_found" then
          state.warn = err
          proc:close_stdin()
        end
        return
      end
    end
  end
end

-- One look: a trapped signal is forwarded as SIGTERM (envd delivers no
-- SIGINT), a second one, the grace's end or the deadline kill the group.
local function watch_once(proc, state, now)
  local signo = require("e2b.core").take_signal()
  if signo and state.signal then
    state.kill_at = now
  elseif signo then
    state.signal = signo
    proc:signal("TERM")
    state.kill_at = now + TERM_GRACE_MS
  end
  if state.deadline and not state.signal and not state.timed_out and now >= state.deadline then
    state.timed_out, state.kill_at = true, now
  end
  if state.failed and not state.stopping then state.stopping, state.kill_at = true, now end
  if state.kill_at and now >= state.kill_at then
    state.kill_at = nil
    local ok, err = proc:kill()
    if not ok then state.kill_err = err end
  end
end

-- The size of this tool's terminal (80x24 when it has none).
local function terminal_size()
  local core = require("e2b.core")
  local cols, rows = core.tty_size(0)
  if not cols then cols, rows = core.tty_size(1) end
  return { cols = cols or 80, rows = rows or 24 }
end

local function watch(proc, state)
  local e2b = require("e2b")
  local core = require("e2b.core")
  while not state.ended do
    watch_once(proc, state, core.now_ms())
    -- a resize the command misses (it may have just ended) only costs its layout
    if state.pty and core.take_resize() and not state.ended then proc:resize(terminal_size()) end
    if not state.ended then e2b.sleep(EXEC_POLL_MS) end
  end
end

-- Writes the command's output as it comes, to its end.
local function read_to_end(ctx, proc)
  local out, errs = ctx.streams.stdout, ctx.streams.stderr
  while true do
    local data, stream = proc:read()
    if data == nil then return stream == nil, stream end
    local f = stream == "stderr" and errs or out
    f:write(data)
    if f.flush then f:flush() end
  end
end

-- The exit code of an exec whose command ran (or was stopped).
local function exec_outcome(ctx, proc, state, read_ok, read_err)
  local signo, timeout = state.signal, state.timeout
  if state.kill_err then
    ctx.streams.stderr:write(("%s: exec: the command may still run: %s\n"):format(PROG, tostring(state.kill_err)))
  end
  if signo then return 128 + signo end
  if state.timed_out then
    ctx.streams.stderr:write(("%s: exec: timed out after %s s; the command was killed\n"):format(PROG, timeout))
    return 124
  end
  if state.failed then return nil, state.failed end
  if not read_ok then return nil, read_err end
  if state.warn then
    ctx.streams.stderr:write(("%s: exec: the command's stdin: %s\n"):format(PROG, tostring(state.warn)))
  end
  local result, err = proc:wait()
  if not result then return nil, err end
  return exit_status(result)
end

local function run_exec(ctx, opts, sbx, cmd, env, timeout_ms, feed)
  local e2b, core = require("e2b"), require("e2b.core")
  local proc, err = sbx:spawn(cmd, { user = opts.user, cwd = opts.cwd, env = env,
    stdin = (feed and not opts.pty) or nil, pty = opts.pty and terminal_size() or nil,
    timeout_ms = timeout_ms and timeout_ms + BACKSTOP_MS, keep_output = false })
  if not proc then return nil, err end
  local state = { timeout = opts.timeout, deadline = timeout_ms and core.now_ms() + timeout_ms, pty = opts.pty }
  -- At a terminal, every key is the command's from now (Ctrl-C too): raw mode.
  if feed == "tty" and opts.pty then
    local ok, terr = core.tty_raw(0)
    if not ok then proc:kill() proc:close() return nil, { message = "exec: the terminal: " .. terr } end
  end
  local tasks = { e2b.spawn(watch, proc, state) }
  if feed then tasks[2] = e2b.spawn(feed_stdin, proc, state) end
  local read_ok, read_err = read_to_end(ctx, proc)
  state.ended = true
  for _, t in ipairs(tasks) do t:wait() end
  core.tty_restore()
  local code
  code, err = exec_outcome(ctx, proc, state, read_ok, read_err)
  proc:close()
  return code, err
end

-- What a pty's command gets unless --env says otherwise, as E2B's SDKs
-- give it.
local PTY_ENV = { TERM = "xterm-256color", LANG = "C.UTF-8", LC_ALL = "C.UTF-8" }

-- The command exec runs (nil, usage error without one) and its env.
-- One word is a shell command line (bash -l -c, as E2B's SDKs run a
-- string); more words are an argv, run without a shell; none, with --pty,
-- an interactive login shell, as E2B's terminal.
local function exec_command(verb, opts, args)
  local env, err = pairs_arg(verb, "env", opts.env)
  if err then return nil, err end
  if #args < 2 and not opts.pty then
    return nil, usage_error(verb .. ": needs a sandbox id and a command (or --pty)")
  end
  if not opts.pty then return #args == 2 and args[2] or { unpack(args, 2) }, env end
  env = env or {}
  for k, v in pairs(PTY_ENV) do env[k] = env[k] or v end
  if #args == 1 then return { "/bin/bash", "-i", "-l" }, env end
  return #args == 2 and args[2] or { unpack(args, 2) }, env
end

-- Where exec's input comes from: "tty", "open" (a pipe or file), or false
-- (none: a closed stdin, --no-stdin, or a terminal without --pty). Asked
-- before the loop opens its sockets: a closed stdin's fd 0 would be one
-- of them.
local function exec_input(opts)
  local fd = require("e2b.core").fd_state(0)
  if opts["no-stdin"] or fd == "closed" or (fd == "tty" and not opts.pty) then return false end
  return fd
end

local function cmd_exec(ctx, opts, args, verb)
  verb = verb or "exec"
  local cmd, env = exec_command(verb, opts, args)
  if not cmd then return nil, env end
  local timeout_ms, err = seconds_arg(verb, "timeout", opts.timeout)
  if err then return nil, err end
  local core = require("e2b.core")
  local feed = exec_input(opts)
  core.trap_signals()
  if opts.pty then core.trap_resize() end
  local ok, code, cerr = pcall(function()
    local client, sbx
    client, err = client_for(ctx)
    if not client then return nil, err end
    sbx, err = client:resume(args[1])
    if not sbx then return nil, err end
    local signo = core.take_signal() -- one that came before the command started: it never runs
    if signo then return 128 + signo end
    return run_exec(ctx, opts, sbx, cmd, env, timeout_ms, feed)
  end)
  core.tty_restore()
  core.untrap_signals()
  if not ok then error(code, 0) end
  return code, cerr
end

-- connect ID: an operator's word for exec --pty ID (E2B's CLI has it).
local function cmd_connect(ctx, opts, args)
  opts.pty = true
  return cmd_exec(ctx, opts, args, "connect")
end

-- "ID:/path" -> id, path; anything else is local. A local path with a colon
-- can be written ./a:b.
local function remote_arg(word)
  local id, path = word:match("^([^/:]+):(.*)$")
  if id and path ~= "" then return id, path end
end

local function basename(path)
  return path:match("([^/]+)/*$") or path
end

local function is_local_dir(path)
  local f = io.open(path .. "/.", "r")
  if f then f:close() return true end
  return false
end

-- The progress callback for a transfer (nil when quiet or not a terminal).
local function transfer_progress(ctx, opts, label, total)
  if opts.quiet or not ctx.isatty("stderr") then return nil, { finish = function() end } end
  local bar = progress_bar(ctx.streams.stderr, label)
  return function(done, t) bar.update(done, t or total) end, bar
end


-- The parent directory of a path ("/" for /x; nil for a bare relative name).
local function dirname(path)
  local d = path:gsub("/+$", ""):match("^(.*)/[^/]*$")
  if d == nil then return nil end
  return d == "" and "/" or d
end

local function cp_error(msg)
  return { message = "cp: " .. msg }
end

-- Where a local file or tree named name lands for DST, as cp -r decides:
-- into DST when it is a directory (or ends in /), else at DST, whose
-- parent must be a directory already. -> path | nil, err
local function remote_target(sbx, dst, name, is_dir)
  local st, err = sbx.files:stat(dst)
  if not st and err.kind ~= "not_found" then return nil, err end
  if st and st.type == "dir" then return dst:gsub("/*$", "") .. "/" .. name end
  if st and is_dir then
    return nil, cp_error(("cannot copy directory %s over non-directory %s:%s"):format(name, sbx.id, dst))
  end
  if st then return dst end
  local parent = dst:sub(-1) == "/" and dst:gsub("/+$", "") or dirname(dst)
  if parent and parent ~= "" then
    local pst, perr = sbx.files:stat(parent)
    if not pst and perr.kind ~= "not_found" then return nil, perr end
    if not pst or pst.type ~= "dir" then
      return nil, cp_error(("cannot copy to %s:%s: directory %s does not exist (create it first: "
        .. "%s exec %s -- mkdir -p %s)"):format(sbx.id, dst, parent, PROG, sbx.id, parent))
    end
  end
  return dst
end

local function upload_file(ctx, opts, sbx, src, dst)
  local target, terr = remote_target(sbx, dst, basename(src), false)
  if not target then return nil, terr end
  local f, ferr = io.stdin, nil
  if src ~= "-" then f, ferr = io.open(src, "rb") end
  if not f then return nil, { message = ferr } end
  local total = src ~= "-" and f:seek("end") or nil
  if total then f:seek("set", 0) end
  local progress, bar = transfer_progress(ctx, opts, "upload " .. basename(src), total)
  local info, err = sbx.files:write(target, function() return f:read(CHUNK) end,
    { progress = progress })
  bar.finish()
  if f ~= io.stdin then f:close() end
  if not info then return nil, err end
  return { from = src, to = sbx.id .. ":" .. info.path, bytes = total }
end

-- A local tree as cp -r copies it: DST/<name> when DST is a directory,
-- else DST itself (made).
local function upload_dir(ctx, opts, sbx, src, dst)
  local target, err = remote_target(sbx, dst, basename(src), true)
  if not target then return nil, err end
  local progress, bar = transfer_progress(ctx, opts, "upload " .. basename(src) .. "/")
  local ok
  ok, err = sbx.files:sync(src, target, { progress = progress })
  bar.finish()
  if not ok then return nil, err end
  return { from = src, to = sbx.id .. ":" .. target }
end

-- Writes a download to dst through a temporary name, renamed when complete.
local function download_file(ctx, opts, sbx, src, dst, size)
  if dst ~= "-" and is_local_dir(dst) then dst = dst:gsub("/*$", "") .. "/" .. basename(src) end
  local tmp = dst ~= "-" and dst .. ".lua-e2b-part" or nil
  local f, ferr = ctx.streams.stdout, nil
  if tmp then f, ferr = io.open(tmp, "wb") end
  if not f then return nil, { message = ferr } end
  local progress, bar = transfer_progress(ctx, opts, "download " .. basename(src), size)
  local n, err = sbx.files:read_to(src, function(chunk)
    local ok, werr = f:write(chunk)
    if not ok then return false, werr end
    return true
  end, { progress = progress })
  bar.finish()
  if not tmp then
    if f.flush then f:flush() end
  else
    local closed, cerr = f:close()
    if n and not closed then n, err = nil, { message = cerr } end
    if n then
      local moved, merr = os.rename(tmp, dst)
      if not moved then n, err = nil, { message = merr } end
    end
    if not n then os.remove(tmp) end
  end
  if not n then return nil, err end
  return { from = sbx.id .. ":" .. src, to = dst, bytes = n }
end

-- A remote tree as cp -r copies it (into DST when that is a directory,
-- else as DST, made): files:download filters
-- the sandbox's tar (nothing setuid, no device, no link out) before the
-- host's tar unpacks it.
local function download_dir(ctx, opts, sbx, src, dst)
  if is_local_dir(dst) then dst = dst:gsub("/*$", "") .. "/" .. basename(src) end
  local parent = dirname(dst)
  if parent and not is_local_dir(parent) then
    return nil, cp_error(("cannot copy to %s: directory %s does not exist"):format(dst, parent))
  end
  local progress, bar = transfer_progress(ctx, opts, "download " .. basename(src) .. "/")
  local n, err = sbx.files:download(src, dst, { progress = progress })
  bar.finish()
  if not n then return nil, err end
  return { from = sbx.id .. ":" .. src, to = dst, bytes = n }
end

local function cmd_cp(ctx, opts, args)
  local sid, spath = remote_arg(args[1])
  local did, dpath = remote_arg(args[2])
  if (sid and did) or (not sid and not did) then
    return nil, usage_error("cp: exactly one of SRC and DST must be remote (ID:/path)")
  end
  local client, err = client_for(ctx, { user = opts.user })
  if not client then return nil, err end
  local sbx
  sbx, err = client:resume(sid or did)
  if not sbx then return nil, err end
  local done
  if did then
    if args[1] ~= "-" and is_local_dir(args[1]) then
      done, err = upload_dir(ctx, opts, sbx, args[1], dpath)
    else
      done, err = upload_file(ctx, opts, sbx, args[1], dpath)
    end
  else
    local st
    st, err = sbx.files:stat(spath)
    if not st then return nil, err end
    if st.type == "dir" then
      if args[2] == "-" then return nil, usage_error("cp: a directory cannot go to stdout") end
      done, err = download_dir(ctx, opts, sbx, spath, args[2])
    else
      done, err = download_file(ctx, opts, sbx, spath, args[2], st.size)
    end
  end
  if not done then return nil, err end
  if opts.json and args[2] ~= "-" then ctx.out(to_json(done) .. "\n") end
end

local function cmd_pause(ctx, opts, args)
  if opts.mode and opts.mode ~= "memory" and opts.mode ~= "filesystem" then
    return nil, usage_error(('pause: --mode wants "memory" or "filesystem", got %q'):format(opts.mode))
  end
  local client, err = client_for(ctx)
  if not client then return nil, err end
  local info
  info, err = client:describe(args[1])
  if not info then return nil, err end
  -- Pausing a paused sandbox succeeds (it is paused); a running one is
  -- attached by its E2B id (which keeps its deadline) and paused.
  if info.state ~= "paused" then
    local sbx
    sbx, err = client:connect(info.sandbox_id)
    if not sbx then return nil, err end
    local ok
    ok, err = sbx:pause{ mode = opts.mode }
    if not ok then return nil, err end
    info.state = "paused"
  end
  if opts.json then return ctx.out(to_json(info) .. "\n") end
  ctx.out(("paused %s (%s)\n"):format(info.id, info.sandbox_id))
end

local function cmd_resume(ctx, opts, args)
  local timeout_ms, err = seconds_arg("resume", "timeout", opts.timeout)
  if err then return nil, err end
  local client
  client, err = client_for(ctx, { timeout_ms = timeout_ms })
  if not client then return nil, err end
  local sbx
  sbx, err = client:resume(args[1])
  if not sbx then return nil, err end
  if opts.json then
    local info
    info, err = sbx:info()
    if not info then return nil, err end
    return ctx.out(to_json(info) .. "\n")
  end
  ctx.out(("resumed %s (%s)\n"):format(sbx.id, sbx.sandbox_id))
end

-- Text a sandbox influenced, safe on a terminal: control bytes as \xNN.
local function printable(s)
  return (tostring(s):gsub("[%z\1-\31\127]", function(c) return ("\\x%02x"):format(c:byte()) end))
end

local LEVELS = { debug = true, info = true, warn = true, error = true }

-- logs: the sandbox's own log lines, oldest first (E2B keeps them; a
-- killed sandbox's too, for a while).
local function cmd_logs(ctx, opts, args)
  local limit = opts.limit and tonumber(opts.limit)
  if opts.limit and not (limit and limit >= 1 and limit <= 1000 and limit == math.floor(limit)) then
    return nil, usage_error(("logs: --limit wants a whole number 1 .. 1000, got %q"):format(opts.limit))
  end
  if opts.level and not LEVELS[opts.level] then
    return nil, usage_error(("logs: --level wants debug, info, warn or error, got %q"):format(opts.level))
  end
  local client, err = client_for(ctx)
  if not client then return nil, err end
  local lines
  lines, err = client:logs(args[1], { limit = limit, level = opts.level, search = opts.search })
  if not lines then return nil, err end
  if opts.json then return ctx.out(to_json(lines, true) .. "\n") end
  local out = {}
  for _, l in ipairs(lines) do
    local fields = {}
    for _, k in ipairs(sorted_keys(l.fields)) do fields[#fields + 1] = printable(k) .. "=" .. printable(l.fields[k]) end
    out[#out + 1] = ("%s.%03dZ %s %s%s\n"):format(os.date("!%Y-%m-%dT%H:%M:%S", math.floor(l.timestamp / 1000)),
      l.timestamp % 1000, printable(l.level), printable(l.message),
      #fields > 0 and " (" .. table.concat(fields, ", ") .. ")" or "")
  end
  ctx.out(table.concat(out))
end

-- watch: one line per change in a sandbox directory, written as it comes,
-- until the watch ends, --timeout (exit 0) or a trapped signal (128+N, as
-- exec). The watch itself never times out: this loop looks at the signals
-- and the deadline every EXEC_POLL_MS between events.
-- Whether w:next's error is only "nothing came within the wait" (the watch
-- goes on; its own timeout is off here, so no other timeout ends it).
local function idle(err)
  return err.kind == "timeout" and err.op == "files.watch" and tostring(err.message):find("^no change within") ~= nil
end

local function watch_loop(ctx, opts, w, deadline)
  local core, out = require("e2b.core"), ctx.streams.stdout
  while true do
    local signo = core.take_signal()
    if signo then return 128 + signo end
    if deadline and core.now_ms() >= deadline then return 0 end
    local ev, err = w:next(EXEC_POLL_MS)
    if ev then
      out:write(opts.json and to_json({ type = ev.type, name = ev.name }) .. "\n"
        or ("%s %s\n"):format(printable(ev.type), printable(ev.name)))
      if out.flush then out:flush() end
    elseif not err then
      return 0
    elseif not idle(err) then
      return nil, err
    end
  end
end

local function cmd_watch(ctx, opts, args)
  local timeout_ms, err = seconds_arg("watch", "timeout", opts.timeout)
  if err then return nil, err end
  local core = require("e2b.core")
  core.trap_signals()
  local ok, code, cerr = pcall(function()
    local client, sbx, w
    client, err = client_for(ctx)
    if not client then return nil, err end
    sbx, err = client:resume(args[1])
    if not sbx then return nil, err end
    w, err = sbx.files:watch_dir(args[2], { recursive = opts.recursive or nil, user = opts.user, timeout_ms = 0 })
    if not w then return nil, err end
    local c, lerr = watch_loop(ctx, opts, w, timeout_ms and core.now_ms() + timeout_ms)
    w:stop()
    return c, lerr
  end)
  core.untrap_signals()
  if not ok then error(code, 0) end
  return code, cerr
end

-- A point in time in epoch ms (a whole number >= 0), or nil, usage error.
local function epoch_ms_arg(option, word)
  if word == nil then return nil end
  local n = tonumber(word)
  if not n or n < 0 or n ~= math.floor(n) or n == math.huge then
    return nil, usage_error(("metrics: --%s wants epoch milliseconds (a whole number), got %q"):format(option, word))
  end
  return n
end

-- The window metrics asks for: start and end_ in epoch ms (nil: E2B's default).
local function metrics_window(opts)
  if opts.since and opts.start then return nil, usage_error("metrics: --since and --start exclude each other") end
  local since_ms, err = seconds_arg("metrics", "since", opts.since)
  if err then return nil, err end
  local w = {}
  w.start, err = epoch_ms_arg("start", opts.start)
  if err then return nil, err end
  w.end_, err = epoch_ms_arg("end", opts["end"])
  if err then return nil, err end
  if since_ms then w.start = math.max(0, os.time() * 1000 - since_ms) end
  if w.start and w.end_ and w.end_ < w.start then
    return nil, usage_error("metrics: --end is before the window's start")
  end
  return w
end

local function used_of_text(used, total)
  return ("%s / %s"):format(human_size(used or 0), human_size(total or 0))
end

-- metrics: the sandbox's resource samples, oldest first.
local function cmd_metrics(ctx, opts, args)
  local window, err = metrics_window(opts)
  if not window then return nil, err end
  local client, sbx, samples
  client, err = client_for(ctx)
  if not client then return nil, err end
  sbx, err = client:resume(args[1])
  if not sbx then return nil, err end
  samples, err = sbx:metrics(window)
  if not samples then return nil, err end
  if opts.json then return ctx.out(to_json(samples, true) .. "\n") end
  local rows = {}
  for _, m in ipairs(samples) do
    rows[#rows + 1] = { iso_time(m.timestamp), ("%.1f%%"):format(m.cpu_used_pct or 0), tostring(m.cpu_count or "-"),
      used_of_text(m.mem_used, m.mem_total), used_of_text(m.disk_used, m.disk_total) }
  end
  ctx.out(table_text({ "TIME", "CPU", "CPUS", "MEMORY USED / TOTAL", "DISK USED / TOTAL" }, rows))
end

-- Kills one id: { id, sandbox_id }, false when it was already gone, or nil, err.
local function kill_one(client, id)
  local info, err = client:describe(id)
  if not info and err.kind == "not_found" then return false end
  if not info then return nil, err end
  local ok
  ok, err = client:destroy(info.sandbox_id)
  if not ok then return nil, err end
  return { id = info.id, sandbox_id = info.sandbox_id }
end

-- What kill --all and reap print: one line per sandbox, or a JSON array.
local function print_killed(ctx, opts, list, verb)
  if opts.json then return ctx.out(to_json(list, true) .. "\n") end
  for _, s in ipairs(list) do ctx.out(("%s %s (%s)\n"):format(verb, s.id or "-", s.sandbox_id)) end
end

-- kill --all: every sandbox the filters select (at least one is needed).
local function kill_all(ctx, opts, args)
  if #args > 0 then return nil, usage_error("kill: --all takes no ID") end
  if not opts.state and not opts.metadata and not opts.template then
    return nil, usage_error("kill: --all needs a filter (--metadata KEY=VALUE, --state running|paused "
      .. "or --template T); --dry-run lists what it would kill")
  end
  local list, client = select_sandboxes(ctx, "kill", opts)
  if not list then return nil, client end
  if not opts["dry-run"] then
    for _, s in ipairs(list) do
      local ok, err = client:destroy(s.sandbox_id)
      if not ok then return nil, err end
    end
  end
  return print_killed(ctx, opts, list, opts["dry-run"] and "would kill" or "killed")
end

local function cmd_kill(ctx, opts, args)
  if opts.all then return kill_all(ctx, opts, args) end
  if #args == 0 then return nil, usage_error("kill: needs at least one sandbox id (or --all with a filter)") end
  for _, o in ipairs({ "state", "metadata", "template", "dry-run" }) do
    if opts[o] then return nil, usage_error(("kill: --%s goes with --all"):format(o)) end
  end
  local client, err = client_for(ctx)
  if not client then return nil, err end
  local killed = {}
  for _, id in ipairs(args) do
    local one
    one, err = kill_one(client, id)
    if one == nil then return nil, err end
    -- A gone id succeeds, as destroy does, but says so: a typo must not
    -- look like a kill.
    if one then killed[#killed + 1] = one end
    if not opts.json then
      ctx.out(one and ("killed %s (%s)\n"):format(one.id, one.sandbox_id)
        or ("already gone: %s (nothing to kill)\n"):format(id))
    end
  end
  if opts.json then ctx.out(to_json(killed, true) .. "\n") end
end

local function cmd_reap(ctx, opts)
  local older_ms, err = seconds_arg("reap", "older-than", opts["older-than"], true)
  if err then return nil, err end
  if not opts.owner and not opts.mine then
    return nil, usage_error("reap: needs whose sandboxes: --owner OWNER, or --mine for this host's "
      .. "(E2B_OWNER, else user@host); --dry-run lists what it would kill")
  end
  if opts.owner and opts.mine then return nil, usage_error("reap: --owner and --mine exclude each other") end
  local client
  client, err = client_for(ctx)
  if not client then return nil, err end
  local owner = opts.owner or client.owner
  local killed
  killed, err = client:reap{ owner = owner, older_than_ms = older_ms, dry_run = opts["dry-run"] or nil }
  if not killed then return nil, err end
  if not opts.json and #killed == 0 then return ctx.out(("nothing to reap for owner %s\n"):format(owner)) end
  return print_killed(ctx, opts, killed, opts["dry-run"] and "would kill" or "killed")
end

-- The yes/no answers of client:doctor(): each is shown, "unknown" when
-- the report could not tell (nil).
local DOCTOR_FEATURES = { auth = true, envd = true, stdin_close = true, group_signals = true, volumes = true,
                          snapshots = true, network_update = true, pagination = true }

-- doctor: the configuration in use (never the key itself), an
-- authenticated probe, then what the backend supports, found by trying.
-- build: a template built in code. FILE is a Lua script that returns an
-- e2b.template() builder (the SDKs' template file); it sees `e2b`, whose
-- template() reads COPY sources from FILE's directory unless told otherwise.
local function load_template(path)
  local e2b = require("e2b")
  local f, err = io.open(path, "rb")
  if not f then return nil, usage_error(("build: cannot read %s"):format(tostring(err))) end
  local text = f:read("*a")
  f:close()
  local dir = path:match("^(.*)/[^/]*$") or "."
  local mine = setmetatable({ template = function(o)
    local copy = {}
    for k, v in pairs(o or {}) do copy[k] = v end
    if copy.context == nil then copy.context = dir end
    return e2b.template(copy)
  end }, { __index = e2b })
  local env = setmetatable({ e2b = mine }, { __index = _G })
  local chunk
  local setfenv, loadstring = rawget(_G, "setfenv"), rawget(_G, "loadstring")
  if setfenv then -- Lua 5.1 and LuaJIT: a chunk's environment is set after loading it
    chunk, err = loadstring(text, "@" .. path)
    if chunk then setfenv(chunk, env) end
  else
    chunk, err = load(text, "@" .. path, "t", env)
  end
  if not chunk then return nil, usage_error("build: " .. tostring(err)) end
  local ok, t = pcall(chunk)
  if not ok then return nil, usage_error("build: " .. tostring(t)) end
  if type(t) ~= "table" or type(t.check) ~= "function" then
    return nil, usage_error(("build: %s must return a template (e2b.template():...)"):format(path))
  end
  return t
end

local function build_opts(ctx, opts)
  local function count(option)
    local v = opts[option] and tonumber(opts[option])
    if opts[option] and not (v and v >= 1 and v == math.floor(v)) then
      return nil, usage_error(("build: --%s wants a whole number above 0, got %q"):format(option, opts[option]))
    end
    return v or false
  end
  local cpu, err = count("cpu")
  if cpu == nil then return nil, err end
  local memory
  memory, err = count("memory")
  if memory == nil then return nil, err end
  return { name = opts.name, tags = opts.tag, cpu_count = cpu or nil, memory_mb = memory or nil,
           skip_cache = opts["skip-cache"] or nil, background = opts.background or nil,
           on_log = function(e)
             local line = ("%s %s\n"):format(printable(e.level), printable(e.message))
             if opts.json then ctx.streams.stderr:write(line) else ctx.out(line) end
           end }
end

local function cmd_build(ctx, opts, args)
  if not opts.name then return nil, usage_error("build: needs --name NAME") end
  local t, err = load_template(args[1])
  if not t then return nil, err end
  local o
  o, err = build_opts(ctx, opts)
  if not o then return nil, err end
  local client
  client, err = client_for(ctx)
  if not client then return nil, err end
  local info
  info, err = client:build_template(t, o)
  if not info then return nil, err end
  if opts.json then return ctx.out(to_json(info) .. "\n") end
  ctx.out(("%s %s (template %s, build %s)\n"):format(opts.background and "started" or "built", info.name,
    info.template_id, info.build_id))
end

local function cmd_doctor(ctx, opts)
  local e2b = require("e2b")
  local key = os.getenv("E2B_API_KEY")
  local report = {
    version = e2b.VERSION, lua = _VERSION, scheduler = e2b.scheduler,
    api_key = (key and key ~= "") and "set" or "not set",
  }
  local client, err = client_for(ctx)
  if client then
    report.api_url, report.sandbox_url, report.domain, report.owner, report.template =
      client.api_url, client.sandbox_url, client.domain, client.owner, client.template
    local ok, perr = client:probe()
    report.probe = ok and "ok" or tostring(perr)
    err = perr
    if ok then
      report.capabilities, err = client:doctor()
    end
  end
  if opts.json then
    ctx.out(to_json(report) .. "\n")
  else
    local lines = {}
    for _, k in ipairs({ "version", "lua", "scheduler", "api_url", "sandbox_url", "domain", "api_key",
                         "owner", "template", "probe" }) do
      if report[k] ~= nil then lines[#lines + 1] = ("%-14s %s"):format(k, tostring(report[k])) end
    end
    local caps = report.capabilities
    for _, k in ipairs(caps and sorted_keys(DOCTOR_FEATURES) or {}) do
      local v = caps[k]
      if type(v) == "boolean" then v = v and "yes" or "no" end
      lines[#lines + 1] = ("%-14s %s"):format(k, v == nil and "unknown (could not tell)" or tostring(v))
    end
    for _, k in ipairs(sorted_keys(caps)) do
      if DOCTOR_FEATURES[k] == nil then lines[#lines + 1] = ("%-14s %s"):format(k, tostring(caps[k])) end
    end
    ctx.out(table.concat(lines, "\n") .. "\n")
  end
  if err then return nil, err end
end

-- ---- command table and help ----

local ID_ARG = { min = 1, max = 1, what = "a sandbox id" }
local ID_ARG_ONWARD = { min = 1, what = "a sandbox id" }

local COMMANDS = {
  { name = "list", run = cmd_list, args = { min = 0, max = 0 }, json = true,
    usage = "list [--state running|paused]... [--metadata KEY=VALUE]... [--template T] [--limit N] [--json]",
    summary = "list sandboxes (running and paused unless --state narrows it)",
    more = "Oldest first; --limit N shows the first N that match.",
    opts = { state = { arg = true, many = true, short = "s" },
             metadata = { arg = true, many = true, short = "m" }, template = { arg = true, short = "t" },
             limit = { arg = true, short = "n" } } },
  { name = "info", run = cmd_info, args = ID_ARG, json = true, usage = "info ID [--json]",
    summary = "show one sandbox (never resumes it)", opts = {} },
  { name = "create", run = cmd_create, args = { min = 0, max = 0 }, json = true,
    usage = "create [--template T] [--id ID] [--timeout SECONDS] [--metadata KEY=VALUE]... "
      .. "[--env KEY=VALUE]... [--owner O] [--json]",
    summary = "create a sandbox and print its logical id and E2B sandbox id",
    opts = { template = { arg = true, short = "t" }, id = { arg = true }, timeout = { arg = true },
             metadata = { arg = true, many = true, short = "m" }, env = { arg = true, many = true, short = "e" },
             owner = { arg = true } } },
  { name = "exec", run = cmd_exec, stop_after = 1,
    args = { min = 1, what = "a sandbox id and a command (or --pty)" },
    usage = "exec ID [--user U] [--cwd DIR] [--env KEY=VALUE]... [--timeout SECONDS] [--no-stdin] [--pty] "
      .. "[--] CMD [ARGS...]",
    summary = "run a command, streaming its output; exits with the command's exit code",
    more = "One CMD word is a shell command line (bash -l -c); more words are an argv run without a shell.\n"
      .. "A paused sandbox is resumed first. Stdin, unless a terminal or --no-stdin, streams into the\n"
      .. "command's. SIGINT, SIGTERM and SIGHUP are forwarded to it (as SIGTERM, SIGKILL 3 s later),\n"
      .. "then the exit status is 128+N; --timeout kills it and exits 124.\n"
      .. "--pty runs it (default: an interactive login bash) on a pseudo-terminal of this terminal's size,\n"
      .. "which is raw meanwhile (every key, Ctrl-C too, is the command's) and follows its resizes.",
    opts = { user = { arg = true, short = "u" }, cwd = { arg = true, short = "c" },
             env = { arg = true, many = true, short = "e" }, timeout = { arg = true },
             ["no-stdin"] = { short = "n" }, pty = { short = "t" } } },
  { name = "connect", run = cmd_connect, stop_after = 1, args = ID_ARG_ONWARD,
    usage = "connect ID [--user U] [--cwd DIR] [--env KEY=VALUE]... [-- CMD [ARGS...]]",
    summary = "an interactive terminal in a sandbox (exec --pty; default: a login bash)",
    opts = { user = { arg = true, short = "u" }, cwd = { arg = true, short = "c" },
             env = { arg = true, many = true, short = "e" } } },
  { name = "cp", run = cmd_cp, json = true,
    args = { min = 2, max = 2, what = "a source and a destination (cp SRC DST)" },
    usage = "cp [--quiet] [--user U] SRC DST   (one of them ID:/path; - is stdin/stdout)",
    summary = "copy a file or directory into or out of a sandbox",
    more = "Directories are copied as cp -r does: into DST when it is a directory, else as DST "
      .. "(whose parent must exist).\nA progress bar goes to stderr when it is a terminal; --quiet turns it off.",
    opts = { quiet = { short = "q" }, user = { arg = true, short = "u" } } },
  { name = "pause", run = cmd_pause, args = ID_ARG, json = true,
    usage = "pause ID [--mode memory|filesystem] [--json]", summary = "pause a sandbox",
    opts = { mode = { arg = true } } },
  { name = "resume", run = cmd_resume, args = ID_ARG, json = true,
    usage = "resume ID [--timeout SECONDS] [--json]",
    summary = "resume a paused sandbox (a running one keeps running; its deadline never shortens)",
    opts = { timeout = { arg = true } } },
  { name = "kill", run = cmd_kill, args = { min = 0 }, json = true,
    usage = "kill ID... | kill --all [--state running|paused]... [--metadata KEY=VALUE]... [--template T] "
      .. "[--dry-run] [--json]",
    summary = "kill sandboxes (--all: every one the filters select; one filter at least)",
    more = "An id already gone succeeds and says so. --dry-run lists what --all would kill.",
    opts = { all = {}, ["dry-run"] = {}, state = { arg = true, many = true, short = "s" },
             metadata = { arg = true, many = true, short = "m" }, template = { arg = true, short = "t" } } },
  { name = "reap", run = cmd_reap, args = { min = 0, max = 0 }, json = true,
    usage = "reap (--owner O | --mine) [--older-than SECONDS] [--dry-run] [--json]",
    summary = "kill an owner's sandboxes (--mine: this host's owner, E2B_OWNER or user@host)",
    more = "--dry-run lists what it would kill and kills nothing.",
    opts = { owner = { arg = true }, mine = {}, ["older-than"] = { arg = true }, ["dry-run"] = {} } },
  { name = "logs", run = cmd_logs, args = ID_ARG, json = true,
    usage = "logs ID [--limit N] [--level debug|info|warn|error] [--search TEXT] [--json]",
    summary = "show a sandbox's own log lines, oldest first (never resumes it)",
    more = "--limit N (1-1000, E2B's most and default) keeps the oldest N; --level the lines at or above it;\n"
      .. "--search those whose message holds TEXT. Control bytes print as \\xNN.",
    opts = { limit = { arg = true, short = "n" }, level = { arg = true }, search = { arg = true } } },
  { name = "watch", run = cmd_watch, args = { min = 2, max = 2, what = "a sandbox id and a directory" },
    json = true, usage = "watch ID PATH [--recursive] [--user U] [--timeout SECONDS] [--json]",
    summary = "print the changes in a sandbox directory as they happen, one line each",
    more = "Each line is TYPE NAME (create, write, remove, rename or chmod; NAME relative to PATH;\n"
      .. "control bytes as \\xNN), or with --json one object {type, name} per line. It runs until the\n"
      .. "watch ends, --timeout SECONDS pass (exit 0), or SIGINT, SIGTERM or SIGHUP (exit 128+N).\n"
      .. "A paused sandbox is resumed first.",
    opts = { recursive = { short = "r" }, user = { arg = true, short = "u" }, timeout = { arg = true } } },
  { name = "metrics", run = cmd_metrics, args = ID_ARG, json = true,
    usage = "metrics ID [--since SECONDS | --start EPOCH_MS] [--end EPOCH_MS] [--json]",
    summary = "show a sandbox's resource samples (cpu, memory, disk), oldest first",
    more = "Default window: from the sandbox's start to now. --since SECONDS: the last SECONDS;\n"
      .. "--start and --end: epoch milliseconds. A paused sandbox is resumed first.",
    opts = { since = { arg = true }, start = { arg = true }, ["end"] = { arg = true } } },
  { name = "build", run = cmd_build, args = { min = 1, max = 1, what = "a template file (Lua)" }, json = true,
    usage = "build FILE --name NAME[:TAG] [--tag TAG]... [--cpu N] [--memory MB] [--skip-cache] [--background] "
      .. "[--json]",
    summary = "build a template from a Lua file that returns an e2b.template() builder",
    more = "FILE is run with `e2b` in scope and must return a template builder; its COPY sources are\n"
      .. "read from FILE's directory unless its e2b.template{ context = } says otherwise. The build's\n"
      .. "log lines print as they come (to stderr with --json, which prints the result object);\n"
      .. "--background returns once the build started. A failed build prints E2B's reason (exit 1).",
    opts = { name = { arg = true }, tag = { arg = true, many = true }, cpu = { arg = true },
             memory = { arg = true }, ["skip-cache"] = {}, background = {} } },
  { name = "doctor", run = cmd_doctor, args = { min = 0, max = 0 }, json = true, usage = "doctor [--json]",
    summary = "show the configuration in use and what the backend supports", opts = {} },
}

local BY_NAME = {}
for _, c in ipairs(COMMANDS) do BY_NAME[c.name] = c end
M.COMMANDS = COMMANDS

local ENV_HELP = [[
Environment (as the E2B SDKs read it):
  E2B_API_KEY      API key (never printed)
  E2B_DOMAIN       E2B domain (default e2b.app)
  E2B_API_URL      control-plane URL (default https://api.<domain>)
  E2B_SANDBOX_URL  route envd traffic through this URL (e2b-local sets it)
  E2B_TEMPLATE     default template (default base)
  E2B_OWNER        owner tag put on created sandboxes (default user@host)
  E2B_CA_FILE      PEM file of CAs to trust besides the system's (e2b-local's CA;
                   e2b-local exec sets it)
Also read: http_proxy, HTTPS_PROXY, ALL_PROXY, NO_PROXY (libcurl's proxies, lower
  case too), SSLKEYLOGFILE (libcurl logs TLS keys there), PATH (the host's tar, for
  directories), LUA_PATH and LUA_CPATH (the Lua interpreter's).
IDs are a sandbox's logical id (create --id) or its E2B sandbox id.
Exit status: 0, 1 a failure, 2 a usage error; exec: the command's, 128+N on
signal N, 124 when --timeout expired; watch: 0 when --timeout expired, 128+N on
signal N.
]]

local function main_help()
  local lines = { ("usage: %s [--help] [--version] COMMAND [OPTIONS] [ARGS]"):format(PROG), "",
    "Commands:" }
  for _, c in ipairs(COMMANDS) do lines[#lines + 1] = ("  %-7s %s"):format(c.name, c.summary) end
  lines[#lines + 1] = ""
  lines[#lines + 1] = ("Run '%s COMMAND --help' for a command's options."):format(PROG)
  lines[#lines + 1] = ""
  return table.concat(lines, "\n") .. "\n" .. ENV_HELP
end

local function command_help(c)
  local text = ("usage: %s %s\n\n%s.\n"):format(PROG, c.usage, c.summary:gsub("^%l", string.upper))
  if c.more then text = text .. c.more .. "\n" end
  return text .. "\n" .. ENV_HELP
end

-- ---- main ----

local function default_isatty(name)
  local fd = ({ stdin = 0, stdout = 1, stderr = 2 })[name]
  local r = os.execute("test -t " .. fd)
  return r == true or r == 0
end

local function check_arity(c, args)
  local min, max = c.args.min or 0, c.args.max
  if #args < min then return usage_error(("%s: needs %s"):format(c.name, c.args.what)) end
  if max and #args > max then
    return usage_error(("%s: unexpected argument %q"):format(c.name, args[max + 1]))
  end
end

-- Parses one command's words; returns the command, opts, args or a usage
-- error / a help request.
local function parse_command(c, words)
  local defs = {}
  for k, v in pairs(c.opts) do defs[k] = v end
  defs.help = GLOBAL.help
  if c.json then defs.json = GLOBAL.json end
  local opts, args = M.parse(words, defs, c.name, c.stop_after)
  if not opts then return nil, args end
  if opts.help then return { help = command_help(c) } end
  local err = check_arity(c, args)
  if err then return nil, err end
  return { command = c, opts = opts, args = args }
end

-- Splits argv into the command and its parsed options: a table with
-- command/opts/args, or help/version text, or nil, usage error.
function M.resolve(argv)
  local i = 1
  local json_first = false
  while argv[i] and argv[i]:sub(1, 1) == "-" do
    local a = argv[i]
    if a == "--help" or a == "-h" then return { help = main_help() } end
    if a == "--version" or a == "-V" then return { version = true } end
    if a == "--json" or a == "-j" then
      json_first = true
    else
      return nil, usage_error(("unknown option %s (see %s --help)"):format(a, PROG))
    end
    i = i + 1
  end
  local name = argv[i]
  if not name then return nil, usage_error(("no command given (see %s --help)"):format(PROG)) end
  if name == "help" then
    local c = argv[i + 1] and BY_NAME[argv[i + 1]]
    return { help = c and command_help(c) or main_help() }
  end
  local c = BY_NAME[name]
  if not c then return nil, usage_error(("unknown command %q (see %s --help)"):format(name, PROG)) end
  local words = { unpack(argv, i + 1) }
  if json_first then
    if not c.json then return nil, usage_error(("%s: --json is not supported"):format(name)) end
    table.insert(words, 1, "--json")
  end
  return parse_command(c, words)
end

-- main(argv, streams) -> exit code
function M.main(argv, streams)
  streams = streams or {}
  streams.stdout = streams.stdout or io.stdout
  streams.stderr = streams.stderr or io.stderr
  local function fail(err, code)
    local text = type(err) == "table" and (err.usage and err.message or
      (getmetatable(err) and tostring(err)) or err.message) or tostring(err)
    streams.stderr:write(PROG, ": ", (tostring(text):gsub("\n", " ")), "\n")
    return code
  end
  local job, uerr = M.resolve(argv)
  if not job then return fail(uerr, 2) end
  if job.help then streams.stdout:write(job.help) return 0 end
  if job.version then
    streams.stdout:write(PROG, " ", require("e2b").VERSION, "\n")
    return 0
  end
  local ctx = {
    streams = streams,
    isatty = streams.isatty or default_isatty,
    out = function(text) streams.stdout:write(text) end,
  }
  local ok, code, err = pcall(job.command.run, ctx, job.opts, job.args)
  -- Ctrl-C outside exec: the interpreter's own SIGINT handler raises
  -- "interrupted!" (lua.c, luajit.c); a shell says 130 for it, no message.
  if not ok and type(code) == "string" and code:match("^[^\n]*interrupted!") then return 130 end
  if not ok then return fail(code, 1) end
  if code == nil and err ~= nil then return fail(err, err.usage and 2 or 1) end
  return code or 0
end

return M
