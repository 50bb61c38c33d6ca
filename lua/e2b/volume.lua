-- e2b.volume: a volume's content (client:volume(name)), the SDKs' Volume
-- object: its files read, written (streamed both ways, as a sandbox's
-- files are), listed, made, removed and described. The calls, their checks
-- and the volume's token are the core's (volfiles.c); this presents them.
local cancel = require("e2b.cancel")
local check = require("e2b.check")
local errors = require("e2b.errors")
local files = require("e2b.files")
local rt = require("e2b.rt")

local M = {}

local Volume = rt.class(M, "Volume")
local adapter = rt.adapter

-- M.new(port, raw) -> volume; port.call(name, ...) is the client's core call
-- `name` on this volume (its id and token first); raw: the core's volume.
function M.new(port, raw)
  local self = setmetatable({ id = raw.volume_id, name = raw.name, _port = port }, Volume)
  -- reads stream through e2b.files' loops, which ask their port for "read"
  self._files = files.new({
    call = function(_, path) return port.call("vol_read", path) end,
    explain = function(_, err) return err end,
  })
  return self
end

local function check_path(op, path)
  return check.value(op, "path", path, "nonempty")
end

-- A call's path, then its options against spec: the options, or nil, err.
local function check_call(op, path, opts, spec)
  local ok, err = check_path(op, path)
  if not ok then return nil, err end
  return check.options(op, opts, spec)
end

-- what the core's e2b_vol_write_opts can carry (a uint32); which modes
-- E2B takes (permission bits only) is the core's rule (volfiles.c)
local function uint32_checker(v)
  if type(v) ~= "number" or v ~= math.floor(v) or v < 0 or v > 4294967295 then
    return "must be an integer from 0 to 4294967295"
  end
end

local OWNER = { uid = uint32_checker, gid = uint32_checker, mode = uint32_checker, force = "boolean" }
local WRITE_SPEC = setmetatable({ progress = "function", cancel = "cancel" }, { __index = OWNER })

-- The call's entry: the first of the core's list.
local function one(list, err)
  if not list then return nil, err end
  return list[1]
end

--- Reads a whole file of the volume.
-- @tparam string path from the volume's root ("/a/b")
-- @tparam[opt] table opts
-- @tparam[opt=268435456] int opts.max_bytes the most it returns (256 MiB)
-- @param[opt] opts.cancel a cancel token (`e2b.cancel_token()`)
-- @treturn string the exact bytes
-- @return or nil, err
function Volume:read(path, opts)
  local op = "volume.read"
  local o, err = check_call(op, path, opts, { max_bytes = "positive", cancel = "cancel" })
  if not o then return nil, err end
  local data
  data, err = self._files:read(path, o)
  return data, rt.relabel(err, op)
end

--- Streams a file of the volume to a sink: a function(chunk) (returning
-- false, or nil, err, aborts with kind "canceled") or an open file.
-- @tparam string path
-- @param sink function or file
-- @tparam[opt] table opts `progress` (as files:read_to), `cancel`
-- @treturn int bytes written to the sink
-- @return or nil, err
function Volume:read_to(path, sink, opts)
  local op = "volume.read_to"
  local ok, err = check_path(op, path)
  if not ok then return nil, err end
  if type(sink) ~= "function" and io.type(sink) ~= "file" then
    return nil, errors.invalid(op, "sink", "must be a function or an open file")
  end
  local o
  o, err = check.options(op, opts, { progress = "function", cancel = "cancel" })
  if not o then return nil, err end
  local n
  n, err = self._files:read_to(path, sink, o)
  return n, rt.relabel(err, op)
end

local function write(self, op, path, data, o)
  local req, err = self._port.call("vol_write", path, { uid = o.uid, gid = o.gid, mode = o.mode, force = o.force })
  if not req then return nil, err end
  local feed_err = files.feed(req, op, data, o.progress)
  while not req:done() do adapter.await(req) end
  local list
  list, err = req:result()
  req:close()
  if feed_err then return nil, feed_err end
  return one(list, err)
end

--- Writes a file into the volume. An existing file is kind "conflict"
-- unless opts.force, which also makes missing parent directories.
-- @tparam string path
-- @param data a string, a function returning chunks (strings), then nil, or an open file
-- @tparam[opt] table opts `uid`, `gid` (0-4294967295; E2B's default 9090), `mode` (at most
--   0o777; E2B's default 0o666) of a new or forced-over file; `force` (replace an existing
--   one, its owner and mode set again); `progress`; `cancel`
-- @treturn table the written file's entry
-- @return or nil, err
function Volume:write(path, data, opts)
  local op = "volume.write"
  local ok, err = check_path(op, path)
  if not ok then return nil, err end
  if type(data) ~= "string" and type(data) ~= "function" and io.type(data) ~= "file" then
    return nil, errors.invalid(op, "data", "must be a string, a function returning chunks or an open file")
  end
  local o
  o, err = check.options(op, opts, WRITE_SPEC)
  if not o then return nil, err end
  return cancel.scope(o.cancel, write, self, op, path, data, o)
end

--- Lists a directory of the volume.
-- @tparam string path
-- @tparam[opt] table opts `depth` (levels, default 1)
-- @treturn {table,...} entries
-- @return or nil, err
function Volume:list(path, opts)
  local op = "volume.list"
  local o, err = check_call(op, path, opts, { depth = "positive" })
  if not o then return nil, err end
  return rt.finish(self._port.call("vol_list", path, o.depth))
end

--- Makes a directory in the volume; with opts.force its parents too, and an
-- existing one is success.
-- @tparam string path
-- @tparam[opt] table opts `uid`, `gid`, `mode` (at most 0o777; E2B's default 0o777), `force`
-- @treturn table the directory's entry
-- @return or nil, err
function Volume:mkdir(path, opts)
  local op = "volume.mkdir"
  local o, err = check_call(op, path, opts, OWNER)
  if not o then return nil, err end
  return one(rt.finish(self._port.call("vol_mkdir", path, o)))
end

local META_SPEC = { uid = OWNER.uid, gid = OWNER.gid, mode = OWNER.mode }

--- Changes the owner and mode of a file or directory (the SDKs'
-- updateMetadata); a symlink or a file with other hard links is refused.
-- @tparam string path
-- @tparam table opts `uid`, `gid` (0-4294967295), `mode` (at most 0o777): those given change
-- @treturn table the entry as it is then
-- @return or nil, err
function Volume:set_metadata(path, opts)
  local op = "volume.set_metadata"
  local o, err = check_call(op, path, opts, META_SPEC)
  if not o then return nil, err end
  return one(rt.finish(self._port.call("vol_set_metadata", path, o)))
end

--- Removes a file, or a directory with everything in it.
-- @tparam string path
-- @treturn boolean true
-- @return or nil, err
function Volume:remove(path)
  local ok, err = check_path("volume.remove", path)
  if not ok then return nil, err end
  return rt.finish(self._port.call("vol_remove", path))
end

--- Describes a file or directory of the volume.
-- @tparam string path
-- @treturn table entry { name, path, type, size, mode, uid, gid, target, atime, mtime, ctime }
-- @return or nil, err (kind "not_found" when absent)
function Volume:stat(path)
  local ok, err = check_path("volume.stat", path)
  if not ok then return nil, err end
  return one(rt.finish(self._port.call("vol_stat", path)))
end

--- Whether a path exists in the volume ("could not look" is an error, never false).
-- @tparam string path
-- @treturn boolean
-- @return or nil, err
function Volume:exists(path)
  local e, err = self:stat(path)
  if e then return true end
  if errors.is(err, "not_found") then return false end
  return nil, err
end

return M
