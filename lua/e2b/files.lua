--- e2b.files: a sandbox's filesystem (docs/manual.md, "sbx.files").
-- Transfers stream both ways through the core's bounded queues, so reading
-- or writing a file of any size holds at most a few MiB.
-- @module e2b.files
local core = require("e2b.core")
local cancel = require("e2b.cancel")
local check = require("e2b.check")
local errors = require("e2b.errors")
local rt = require("e2b.rt")
local Watch = require("e2b.watch")

local M = {}

--- A sandbox's filesystem: `sbx.files`. Paths are sandbox paths; every
-- operation runs as the client's user, or as opts.user where it takes opts. Every method returns nil, err on
-- failure.
-- @type Files
local Files = rt.class(M, "Files")

local adapter = rt.adapter
local CHUNK = 1024 * 1024
-- files:read's default bound: a whole value past it belongs in read_to.
local READ_MAX = 256 * 1024 * 1024
local READ_SPEC = { max_bytes = "positive", user = "nonempty", cancel = "cancel" }
-- The per-call user alone (stat, mkdir, remove, rename, exists).
local USER_SPEC = { user = "nonempty" }
local UPLOAD_HIGH_WATER = 1024 * 1024

-- M.new(port) -> files; port: what it may ask of its sandbox (user,
-- sandbox_id, call, explain, envd, run, spawn: e2b.sandbox's envd port).
function M.new(port)
  return setmetatable({ _port = port }, Files)
end

-- The user an operation runs as: opts.user, else the client's.
function Files:_user(o)
  return o and o.user or self._port.user
end

local function entry(e)
  return {
    name = e.name, path = e.path, type = e.type, size = e.size, mode = e.mode,
    permissions = e.permissions, owner = e.owner, group = e.group,
    modified_at = e.modified_at, symlink_target = e.symlink_target,
  }
end

local function check_path(op, path, field)
  return check.value(op, field or "path", path, "nonempty")
end

-- Starts the download of path as user (default: the client's user):
-- the request | nil, err.
function Files:_start_read(op, path, user)
  local ok, err = check_path(op, path)
  if not ok then return nil, err end
  local req
  req, err = self._port.call("read", path, user or self:_user(), 0)
  if not req then return nil, self._port.explain(nil, err) end
  return req
end

-- Ends a download that moved total bytes: total | nil, err (its failure).
function Files:_end_read(op, req, total)
  local done, err = req:result()
  if not done then err = rt.relabel(self._port.explain(req, err), op) end
  req:close()
  if not done then return nil, err end
  return total
end

-- Streams a download into emit(chunk); returns the byte count.
function Files:_download(op, path, emit, user)
  local req, err = self:_start_read(op, path, user)
  if not req then return nil, err end
  local total = 0
  while true do
    local chunk = req:read_bytes(CHUNK)
    if chunk then
      total = total + #chunk
      local sink_ok, sink_err = emit(chunk)
      if sink_ok == false or (sink_ok == nil and sink_err) then
        req:close()
        return nil, errors.new("canceled", op, "sink failed: " .. tostring(sink_err))
      end
    elseif chunk == false then
      return self:_end_read(op, req, total)
    else
      adapter.await(req)
    end
  end
end

-- Streams a download into target (a core.buffer or an open file) in C,
-- without a Lua string per chunk; returns the byte count. Past max bytes
-- (when given) it stops: an envd answer may be endless.
function Files:_drain(op, path, target, progress, max, user)
  local req, err = self:_start_read(op, path, user)
  if not req then return nil, err end
  local total = 0
  while true do
    local ended, n = req:drain(target)
    if ended == nil then
      req:close()
      return nil, errors.new("canceled", op, "sink failed: " .. tostring(n))
    end
    if n > 0 then
      total = total + n
      if progress then progress(total, nil) end
    end
    if max and total > max then
      req:close()
      return nil, errors.invalid(op, "max_bytes", ("%s is larger than %d bytes: raise max_bytes, or stream it"
        .. " with files:read_to"):format(path, max))
    end
    if ended then break end
    adapter.await(req)
  end
  return self:_end_read(op, req, total)
end

--- Reads a whole file. The bytes gather in one buffer that becomes the
-- string (on Lua 5.4 without a copy), so a file is held about once; a file
-- larger than opts.max_bytes is an error, not a string of any size.
-- @tparam string path
-- @tparam[opt] table opts
-- @tparam[opt=268435456] int opts.max_bytes the most it returns (256 MiB)
-- @treturn string the exact bytes
-- @return or nil, err
function Files:read(path, opts)
  local o, err = check.options("files.read", opts, READ_SPEC)
  if not o then return nil, err end
  local buf = core.buffer()
  local n
  n, err = cancel.scope(o.cancel, self._drain, self, "files.read", path, buf, nil, o.max_bytes or READ_MAX, o.user)
  if not n then return nil, err end
  return buf:take()
end

-- read_to(path, sink) -> bytes_count | nil, err; sink: function(chunk) or a file.
-- A sink (a function taking chunks, or an open file) as a function that
-- returns false when the chunk could not be taken.
local function sink_fn(op, sink)
  if type(sink) == "function" then return sink end
  if io.type(sink) == "file" then
    return function(chunk)
      local ok, err = sink:write(chunk)
      if not ok then return false, err end
      return true
    end
  end
  return nil, errors.invalid(op, "sink", "must be a function or an open file")
end

-- Progress reporting for long transfers: opts.progress(done, total) after
-- each chunk (total when known, else nil).
local PROGRESS_SPEC = { progress = "function", user = "nonempty" }
local READ_TO_SPEC = { progress = "function", user = "nonempty", cancel = "cancel" }

-- import and export: the directory checked, then opts -> opts | nil, err.
local function tree_args(op, dir, opts)
  local ok, err = check_path(op, dir, "dir")
  if not ok then return nil, err end
  return check.options(op, opts, PROGRESS_SPEC)
end

local function counting_sink(emit, progress, total)
  if not progress then return emit end
  local done = 0
  return function(chunk)
    local a, b = emit(chunk)
    done = done + #chunk
    progress(done, total)
    return a, b
  end
end

local function counting_source(source, progress, total)
  if not progress then return source end
  local done = 0
  return function()
    local chunk = source()
    if type(chunk) == "string" then
      done = done + #chunk
      progress(done, total)
    end
    return chunk
  end
end

--- Streams a file to a sink: a function(chunk) (returning false, or nil, err,
-- aborts with kind "canceled") or an open file.
-- @tparam string path
-- @param sink function or file
-- @tparam[opt] table opts
-- @tparam[opt] function opts.progress called as progress(bytes_done, total) after each
--   chunk (total when known, else nil)
-- @treturn int bytes written to the sink
-- @return or nil, err
function Files:read_to(path, sink, opts)
  local op = "files.read_to"
  local emit, err = sink_fn(op, sink)
  if not emit then return nil, err end
  local o
  o, err = check.options(op, opts, READ_TO_SPEC)
  if not o then return nil, err end
  -- An open file takes the bytes straight from the core's queue.
  if io.type(sink) == "file" then
    return cancel.scope(o.cancel, self._drain, self, op, path, sink, o.progress, nil, o.user)
  end
  return cancel.scope(o.cancel, self._download, self, op, path, counting_sink(emit, o.progress), o.user)
end

-- A string or a chunk function as a chunk function (strings go in CHUNK slices).
local function chunk_source(op, source, field)
  if type(source) == "string" then
    local pos = 1
    return function()
      if pos > #source then return nil end
      local chunk = source:sub(pos, pos + CHUNK - 1)
      pos = pos + CHUNK
      return chunk
    end
  elseif type(source) == "function" then
    return source
  end
  return nil, errors.invalid(op, field, "must be a string or a function returning chunks")
end

-- Feeds an upload from a chunk function, never holding more
-- than about a MiB beyond the caller's own chunk.
local function upload(req, source)
  while true do
    while req:pending() > UPLOAD_HIGH_WATER and not req:done() do adapter.await(req) end
    if req:done() then return end
    local chunk = source()
    if chunk == nil then
      req:finish()
      return
    end
    if type(chunk) ~= "string" then
      req:cancel()
      return errors.invalid("files.write", "data", "chunk function must return strings, then nil")
    end
    if #chunk > 0 then req:send(chunk) end
  end
end

-- Feeds an upload from an open file, read in C straight into the upload
-- (no Lua string per chunk), with the same bound.
local function upload_file(req, file, progress)
  local done = 0
  while true do
    while req:pending() > UPLOAD_HIGH_WATER and not req:done() do adapter.await(req) end
    if req:done() then return end
    local n, err = req:send_from(file, CHUNK)
    if not n then
      req:cancel()
      return errors.new("canceled", "files.write", "reading the source file failed: " .. tostring(err))
    end
    if n == 0 then
      req:finish()
      return
    end
    done = done + n
    if progress then progress(done, nil) end
  end
end

-- feed(req, op, data, progress) -> nil | err: feeds an upload request (of
-- e2b_file_write's or e2b_vol_write's kind) from data, a string, a chunk
-- function or an open file, with bounded memory, and ends it; err when the
-- source failed (the request is canceled then).
function M.feed(req, op, data, progress)
  if io.type(data) == "file" then return upload_file(req, data, progress) end
  return upload(req, counting_source(chunk_source(op, data, "data"), progress,
    type(data) == "string" and #data or nil))
end

local WRITE_SPEC = { mode = "count", exclusive = "boolean", progress = "function", user = "nonempty",
                     cancel = "cancel" }

--- Writes a file (parent directories are created).
-- @tparam string path
-- @param data a string, a function returning chunks (strings), then nil, or an open
--   file (read from where it stands to its end)
-- @tparam[opt] table opts
-- @tparam[opt] int opts.mode permission bits, at most 0o7777 (applied with chmod after)
-- @tparam[opt=false] boolean opts.exclusive fail with kind "conflict" when it exists
--   (checked, then written: two writers can still race)
-- @tparam[opt] function opts.progress called as progress(bytes_done, total) after each
--   chunk (total: the string's size, else nil)
-- @treturn table { name, path, type = "file", size (when data is a string) }
-- @return or nil, err
function Files:write(path, data, opts)
  local op = "files.write"
  local ok, err = check_path(op, path)
  if not ok then return nil, err end
  local file = io.type(data) == "file"
  if type(data) ~= "string" and type(data) ~= "function" and not file then
    return nil, errors.invalid(op, "data", "must be a string, a function returning chunks or an open file")
  end
  local o
  o, err = check.options(op, opts, WRITE_SPEC)
  if not o then return nil, err end
  if o.mode and o.mode > 4095 then return nil, errors.invalid(op, "mode", "must be at most 0o7777") end
  return cancel.scope(o.cancel, self._write, self, op, path, data, o)
end

-- write with its arguments checked (under the call's cancel token).
function Files:_write(op, path, data, o)
  local err
  if o.exclusive then
    local exists
    exists, err = self:exists(path, { user = o.user })
    if exists == nil then return nil, err end
    if exists then
      return nil, errors.new("conflict", op, ("%s already exists"):format(path),
        { retryable = false, sandbox_id = self._port.sandbox_id })
    end
  end
  local req
  req, err = self._port.call("write", path, self:_user(o))
  if not req then return nil, self._port.explain(nil, err) end
  local feed_err = M.feed(req, op, data, o.progress)
  local written
  written, err = rt.finish(req, nil, function(r, e) return not feed_err and self._port.explain(r, e) or e end)
  if feed_err then return nil, feed_err end
  if not written then return nil, err end
  if o.mode then
    local res
    res, err = self._port.run({ "chmod", ("%o"):format(o.mode), written }, { user = o.user })
    if not res then return nil, err end
    if res.exit_code ~= 0 then
      return nil, errors.new("sandbox", op, "chmod failed: " .. res.stderr,
        { sandbox_id = self._port.sandbox_id })
    end
  end
  local name = written:match("([^/]*)$")
  return { name = name, path = written, type = "file", size = type(data) == "string" and #data or nil }
end

function Files:_finish(req, err)
  return self._port.envd(req, err)
end

-- stat, mkdir and remove: path and opts checked, then envd's call of that
-- name on it, as opts.user or the client's user.
function Files:_on_path(call, path, opts)
  local ok, err = check_path("files." .. call, path)
  if ok then ok, err = check.options("files." .. call, opts, USER_SPEC) end
  if not ok then return nil, err end
  return self:_finish(self._port.call(call, path, self:_user(ok)))
end

--- Describes a path.
-- @tparam string path
-- @tparam[opt] table opts
-- @tparam[opt] string opts.user the sandbox user to look as (default: the client's)
-- @treturn table entry { name, path, type ("file", "dir", "symlink", "unknown"), size,
--   mode, permissions, owner, group, modified_at (epoch ms), symlink_target }
-- @return or nil, err (kind "not_found" when absent)
function Files:stat(path, opts)
  local e, err = self:_on_path("stat", path, opts)
  if not e then return nil, err end
  return entry(e)
end

--- Whether a path exists ("could not look" is an error, not false).
-- @tparam string path
-- @tparam[opt] table opts
-- @tparam[opt] string opts.user as in `Files:stat`
-- @treturn boolean
-- @return or nil, err
function Files:exists(path, opts)
  local e, err = self:stat(path, opts)
  if e then return true end
  if errors.is(err, "not_found") then return false end
  return nil, err
end

--- Lists a directory.
-- @tparam string path
-- @tparam[opt] table opts
-- @tparam[opt=1] int opts.depth levels to descend, positive
-- @tparam[opt] string opts.user the sandbox user to list as
-- @treturn {table,...} array of entry (see `Files:stat`)
-- @return or nil, err
function Files:list(path, opts)
  local ok, err = check_path("files.list", path)
  if not ok then return nil, err end
  local o
  o, err = check.options("files.list", opts, { depth = "positive", user = "nonempty" })
  if not o then return nil, err end
  local list
  list, err = self:_finish(self._port.call("list", path, o.depth, self:_user(o)))
  if not list then return nil, err end
  local out = {}
  for i, e in ipairs(list) do out[i] = entry(e) end
  return out
end

--- Makes a directory and its parents; an existing directory is success.
-- @tparam string path
-- @tparam[opt] table opts
-- @tparam[opt] string opts.user the sandbox user to make it as
-- @treturn boolean true
-- @return or nil, err
function Files:mkdir(path, opts)
  local e, err = self:_on_path("mkdir", path, opts)
  if e then return true end
  if errors.is(err, "conflict") then
    local st = self:stat(path, opts)
    if st and st.type == "dir" then return true end
  end
  return nil, err
end

--- Removes a file or a whole directory.
-- @tparam string path
-- @tparam[opt] table opts
-- @tparam[opt] string opts.user the sandbox user to remove it as
-- @treturn boolean true
-- @return or nil, err
function Files:remove(path, opts)
  return self:_on_path("remove", path, opts)
end

--- Moves a path.
-- @tparam string from
-- @tparam string to
-- @tparam[opt] table opts
-- @tparam[opt] string opts.user the sandbox user to move it as
-- @treturn table the entry of to
-- @return or nil, err
function Files:rename(from, to, opts)
  local ok, err = check_path("files.rename", from, "from")
  if ok then ok, err = check_path("files.rename", to, "to") end
  if ok then ok, err = check.options("files.rename", opts, USER_SPEC) end
  if not ok then return nil, err end
  local e
  e, err = self:_finish(self._port.call("move", from, to, self:_user(ok)))
  if not e then return nil, err end
  return entry(e)
end

local WATCH_SPEC = { user = "nonempty", recursive = "boolean", timeout_ms = "ms" }

--- Watches a directory for changes, as the SDKs' files.watchDir does;
-- returns once envd watches it.
-- @tparam string path a directory
-- @tparam[opt] table opts
-- @tparam[opt=false] boolean opts.recursive the directories below too
-- @tparam[opt] string opts.user the sandbox user to watch as
-- @tparam[opt=60000] int opts.timeout_ms the watch ends after this long (0: never)
-- @treturn e2b.watch.Watch
-- @return or nil, err (kind "not_found" for a missing path)
function Files:watch_dir(path, opts)
  local ok, err = check_path("files.watch_dir", path)
  if ok then ok, err = check.options("files.watch_dir", opts, WATCH_SPEC) end
  if not ok then return nil, err end
  return Watch.start(self._port, path, {
    user = self:_user(ok), recursive = ok.recursive, timeout_ms = ok.timeout_ms or 60000,
  })
end

-- ---- trees as tar streams ----
-- GNU tar in the sandbox does the archive work (a well-kept implementation,
-- and it detects truncated archives: "Unexpected EOF"); bytes move through
-- the process's stdin/stdout in bounded chunks.

local function tar_error(op, res, what)
  return errors.new("sandbox", op, ("%s (tar exited %d): %s"):format(what, res.exit_code,
    (res.stderr or ""):sub(-1000)), { exit_code = res.exit_code, retryable = false })
end

local ZERO_BLOCKS = ("\0"):rep(1024)


--- Unpacks a tar stream into dir (created), in bounded memory. A stream
-- without the end-of-archive marker is an error (kind "sandbox"), never a
-- success; what was unpacked before a failure stays.
-- @tparam string dir
-- @param tar_source a string, or a function returning chunks, then nil
-- @tparam[opt] table opts
-- @tparam[opt] function opts.progress called as progress(bytes_done, total) after each
--   chunk (total when known, else nil)
-- @treturn boolean true
-- @return or nil, err
function Files:import(dir, tar_source, opts)
  local op = "files.import"
  local o, err = tree_args(op, dir, opts)
  if not o then return nil, err end
  local source
  source, err = chunk_source(op, tar_source, "tar_source")
  if not source then return nil, err end
  source = counting_source(source, o.progress, type(tar_source) == "string" and #tar_source or nil)
  local proc
  proc, err = self._port.spawn({ "sh", "-c", 'mkdir -p "$1" && exec tar -x -f - -C "$1"', "import", dir },
    { stdin = true, user = self:_user(o) })
  if not proc then return nil, err end
  -- Each write completes before the next chunk is pulled: bounded memory.
  -- tar accepts an archive cut at a block boundary, so the end-of-archive
  -- marker (two zero blocks, the stream a multiple of 512) is checked here.
  local werr, total, tail = nil, 0, ""
  while true do
    local chunk = source()
    if chunk == nil then break end
    if type(chunk) ~= "string" then
      proc:close()
      return nil, errors.invalid(op, "tar_source", "chunk function must return strings, then nil")
    end
    if #chunk > 0 then
      total = total + #chunk
      tail = (tail .. chunk:sub(-1024)):sub(-1024)
      local wok, e = proc:write(chunk)
      if not wok then werr = e break end
    end
  end
  if not werr and (total % 512 ~= 0 or tail ~= ZERO_BLOCKS) then
    werr = errors.new("sandbox", op, ("the archive is truncated: %d bytes without an end-of-archive marker")
      :format(total), { retryable = false })
  end
  if werr then
    -- What was unpacked so far stays: an import is not atomic.
    proc:close()
    return nil, werr
  end
  local closed, close_err = proc:close_stdin()
  local res
  res, err = proc:wait()
  proc:close()
  if not res then return nil, err end
  if res.exit_code ~= 0 then
    return nil, tar_error(op, res, "the archive could not be unpacked (truncated or corrupt?)")
  end
  -- tar stops at the end-of-archive marker and may be gone before stdin is
  -- closed: with its clean exit, a not_found there is no failure.
  if not closed and not errors.is(close_err, "not_found") then return nil, close_err end
  return true
end

--- Streams dir as a tar archive to a sink (as in `Files:read_to`).
-- @tparam string dir
-- @param sink function or file
-- @tparam[opt] table opts
-- @tparam[opt] function opts.progress called as progress(bytes_done, total) after each
--   chunk (total when known, else nil)
-- @treturn int bytes of the archive
-- @return or nil, err
function Files:export(dir, sink, opts)
  local op = "files.export"
  local o, err = tree_args(op, dir, opts)
  if not o then return nil, err end
  local emit
  emit, err = sink_fn(op, sink)
  if not emit then return nil, err end
  emit = counting_sink(emit, o.progress)
  local proc
  proc, err = self._port.spawn({ "tar", "-c", "-f", "-", "-C", dir, "." }, { user = self:_user(o) })
  if not proc then return nil, err end
  local total, stderr = 0, {}
  while true do
    local data, stream = proc:read()
    if data == nil then
      if stream then proc:close() return nil, stream end
      break
    end
    if stream == "stdout" then
      total = total + #data
      if emit(data) == false then
        proc:close()
        return nil, errors.new("canceled", op, "sink failed")
      end
    else
      stderr[#stderr + 1] = data
    end
  end
  local res
  res, err = proc:wait()
  proc:close()
  if not res then return nil, err end
  if res.exit_code ~= 0 then
    res.stderr = table.concat(stderr) .. res.stderr
    return nil, tar_error(op, res, "the tree could not be archived")
  end
  return total
end

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- The host's tar never trusts what comes out of a sandbox: it gets only the
-- filter's archive (core.tarsafe: plain files, directories, links that stay
-- inside), and keeps no owner, permission bit past the umask, xattr or ACL.
local HOST_UNTAR = "tar -x -f - --no-same-owner --no-same-permissions --no-overwrite-dir"
  .. " --no-xattrs --no-acls --no-selinux -C "

-- A sink that passes the sandbox's archive through the filter into pipe;
-- state.refused says why the filter stopped it.
local function filtered_sink(filter, pipe, state)
  return function(chunk)
    local out, why = filter:feed(chunk)
    if not out then state.refused = why return false end
    if #out > 0 and not pipe:write(out) then state.broken = true return false end
    return true
  end
end

--- Unpacks the sandbox's dir into a local directory (created), in bounded
-- memory. What comes out of a sandbox is not trusted: the archive is
-- filtered before the host's tar sees it, and one setuid/setgid bit kept,
-- device node, FIFO, socket, absolute or ".." name, symlink leading out,
-- hard link out or path through a symlink of the archive fails the whole
-- download (kind "sandbox", `err.refused` naming the entry); what was
-- unpacked before it stays.
-- @tparam string dir
-- @tparam string local_dir
-- @tparam[opt] table opts
-- @tparam[opt] function opts.progress as in `Files:export`
-- @treturn int bytes of the sandbox's archive
-- @return or nil, err
function Files:download(dir, local_dir, opts)
  local op = "files.download"
  local ok, err = check.value(op, "local_dir", local_dir, "nonempty")
  if not ok then return nil, err end
  if not os.execute("mkdir -p " .. shell_quote(local_dir)) then
    return nil, errors.new("sandbox", op, "could not create the local directory " .. local_dir, { retryable = false })
  end
  -- tar's complaints are kept for its own failures, not shown after a refusal
  local tar_err = os.tmpname()
  local pipe = io.popen(HOST_UNTAR .. shell_quote(local_dir) .. " 2>" .. shell_quote(tar_err), "w")
  if not pipe then os.remove(tar_err) return nil, errors.new("sandbox", op, "could not run the local tar") end
  local filter, state = core.tarsafe(), {}
  local n
  n, err = self:export(dir, filtered_sink(filter, pipe, state), opts)
  if n and not state.refused then
    local done, why = filter:finish()
    if not done then n, state.refused = nil, why end
  end
  filter:close()
  local closed = pipe:close()
  local f = io.open(tar_err, "rb")
  local complaint = f and f:read(1000) or ""
  if f then f:close() end
  os.remove(tar_err)
  if state.refused then
    return nil, errors.new("sandbox", op, "the tree from the sandbox was not unpacked: " .. state.refused,
      { retryable = false, refused = state.refused })
  end
  if n and not closed then
    n, err = nil, errors.new("sandbox", op, ("the local tar could not unpack the tree into %s: %s")
      :format(local_dir, complaint), { retryable = false })
  end
  return n, err
end

--- Sends a local directory tree as one streamed tar (the host's tar packs
-- it), not a request per file.
-- @tparam string local_dir a readable local directory (else kind "not_found")
-- @tparam string remote_dir created in the sandbox
-- @tparam[opt] table opts
-- @tparam[opt] function opts.progress called as progress(bytes_done, total) after each
--   chunk (total when known, else nil)
-- @treturn boolean true
-- @return or nil, err
function Files:sync(local_dir, remote_dir, opts)
  local op = "files.sync"
  local ok, err = check.value(op, "local_dir", local_dir, "nonempty")
  if ok then ok, err = check_path(op, remote_dir, "remote_dir") end
  if not ok then return nil, err end
  local o
  o, err = check.options(op, opts, PROGRESS_SPEC)
  if not o then return nil, err end
  local probe = io.open(local_dir .. "/.", "r")
  if not probe then
    return nil, errors.new("not_found", op, local_dir .. " is not a readable local directory",
      { retryable = false })
  end
  probe:close()
  -- The host's tar builds the archive; it is read in bounded chunks.
  local pipe = io.popen("tar -c -f - -C " .. shell_quote(local_dir) .. " . 2>/dev/null", "r")
  if not pipe then return nil, errors.new("sandbox", op, "could not run the local tar") end
  ok, err = self:import(remote_dir, function() return pipe:read(CHUNK) end, { progress = o.progress, user = o.user })
  local closed, _, code = pipe:close()
  if ok and not closed then
    return nil, errors.new("sandbox", op, ("the local tar failed (exit %s)"):format(tostring(code)),
      { retryable = false })
  end
  if not ok then return nil, err end
  return true
end

--- A signed /files URL others can download from (or upload to) without
-- the API key. Needs a secure sandbox.
-- @tparam string path
-- @tparam[opt] table opts
-- @tparam[opt="read"] string opts.operation "read" or "write"
-- @tparam[opt] int opts.expires_ms positive; default no expiry
-- @tparam[opt] string opts.user the sandbox user the URL acts as
-- @treturn string
-- @return or nil, err
function Files:url(path, opts)
  local o, err = check.options("files.url", opts, {
    operation = check.oneof("read", "write"), expires_ms = "positive_ms", user = "nonempty",
  })
  if not o then return nil, err end
  local expires = o.expires_ms and math.floor((core.time_ms() + o.expires_ms) / 1000) or 0
  return self._port.call("url", path, o.operation or "read", self:_user(o), expires)
end

return M
