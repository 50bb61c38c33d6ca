-- client:volume(name): a volume's content (the SDKs' Volume: readFile,
-- writeFile, list, makeDir, remove, getInfo), reached with the volume's own
-- token on E2B's /volumecontent routes; bytes exact both ways, large files
-- streamed with bounded memory.
local h = require("spec.helpers")
local e2b = h.e2b

-- This process's resident memory (KiB), where the core's queues live.
local function rss_kib()
  local f = io.open("/proc/self/status")
  if not f then return 0 end
  local kib = tonumber(f:read("a"):match("VmRSS:%s*(%d+)"))
  f:close()
  return kib or 0
end

local function unique(prefix)
  return ("%s-%d-%d"):format(prefix, h.now_ms(), math.random(1e6))
end

describe("volume content", function()
  local client, name, vol
  setup(function()
    client = h.client()
    name = unique("volspec")
    assert(client:create_volume(name))
    vol = assert(client:volume(name))
  end)
  teardown(function()
    h.cleanup()
    client:delete_volume(name)
  end)

  it("opens a volume by name or id, and not_found for none", function()
    assert.are.equal(name, vol.name)
    local again = assert(client:volume(vol.id))
    assert.are.equal(vol.id, again.id)
    local none, err = client:volume(unique("none"))
    assert.is_nil(none)
    assert.are.equal("not_found", err.kind)
  end)

  it("writes, reads, lists, stats, makes directories and removes, bytes exact", function()
    local d = assert(vol:mkdir("/notes"))
    assert.are.equal("directory", d.type)
    assert.are.equal("/notes", d.path)
    local bytes = h.all_bytes()
    local w = assert(vol:write("/notes/all.bin", bytes))
    assert.are.equal("file", w.type)
    assert.are.equal(#bytes, w.size)
    assert.are.equal(bytes, assert(vol:read("/notes/all.bin")))
    assert.are.equal("", (function() assert(vol:write("/notes/empty", "")) return assert(vol:read("/notes/empty")) end)())
    local st = assert(vol:stat("/notes/all.bin"))
    assert.are.equal(#bytes, st.size)
    assert.is_true(math.abs(st.mtime - os.time() * 1000) < 120000)
    local paths = {}
    for _, e in ipairs(assert(vol:list("/", { depth = 2 }))) do paths[#paths + 1] = e.path end
    table.sort(paths)
    assert.are.same({ "/notes", "/notes/all.bin", "/notes/empty" }, paths)
    assert.are.equal(1, #assert(vol:list("/")))
    assert.is_true(assert(vol:exists("/notes/all.bin")))
    assert.is_true(assert(vol:remove("/notes")))
    local exists, err = vol:exists("/notes")
    assert.is_nil(err)
    assert.is_false(exists)
  end)

  it("refuses to replace a file unless force, and makes parents with force", function()
    assert(vol:write("/f.txt", "one"))
    local res, err = vol:write("/f.txt", "two")
    assert.is_nil(res)
    assert.are.equal("conflict", err.kind)
    assert(vol:write("/f.txt", "two", { force = true }))
    assert.are.equal("two", assert(vol:read("/f.txt")))
    local _, missing = vol:mkdir("/a/b/c")
    assert.are.equal("not_found", missing.kind)
    assert.are.equal("/a/b/c", assert(vol:mkdir("/a/b/c", { force = true })).path)
    local m = assert(vol:write("/a/m", "x", { mode = tonumber("600", 8) }))
    assert.are.equal(tonumber("600", 8), m.mode % 512)
  end)

  it("makes a forced write's missing parent directories, as E2B's ensureDirs does", function()
    local _, err = vol:write("/p/q/r.txt", "x")
    assert.are.equal("not_found", err.kind)
    assert(vol:write("/p/q/r.txt", "deep", { force = true }))
    assert.are.equal("deep", assert(vol:read("/p/q/r.txt")))
    assert.are.equal("directory", assert(vol:stat("/p/q")).type)
  end)

  it("makes files 0666 and directories 0777 when no mode is given, as E2B's volume service does", function()
    local oct = function(s) return tonumber(s, 8) end
    assert.are.equal(oct("666"), assert(vol:write("/modes/f.txt", "x", { force = true })).mode % 512)
    assert.are.equal(oct("777"), assert(vol:stat("/modes")).mode % 512) -- a parent the write made
    assert.are.equal(oct("777"), assert(vol:mkdir("/modes/d")).mode % 512)
    -- a mode given is the new directory's; the parents made on the way get the default
    assert.are.equal(oct("700"), assert(vol:mkdir("/modes/p/q", { force = true, mode = oct("700") })).mode % 512)
    assert.are.equal(oct("777"), assert(vol:stat("/modes/p")).mode % 512)
    assert.are.equal(oct("666"), assert(vol:stat("/modes/f.txt")).mode % 512)
  end)

  it("owns new entries by 9090:9090 and resets a forced overwrite's owner and mode, as E2B's volume service does", function()
    local oct = function(s) return tonumber(s, 8) end
    local function owner(e) return { e.uid, e.gid, e.mode } end
    -- new file, the parents a forced write makes, a new directory: E2B's 9090:9090
    assert.are.same({ 9090, 9090, oct("666") }, owner(assert(vol:write("/own/f.txt", "x", { force = true }))))
    assert.are.same({ 9090, 9090, oct("777") }, owner(assert(vol:stat("/own"))))
    assert.are.same({ 9090, 9090, oct("777") }, owner(assert(vol:mkdir("/own/d"))))
    -- owner and mode given are the new file's
    local given = { uid = 1000, gid = 1000, mode = oct("600") }
    assert.are.same({ 1000, 1000, oct("600") }, owner(assert(vol:write("/own/g.txt", "x", given))))
    -- a forced overwrite sets the ones given, else the defaults: what the file had is gone
    assert(vol:set_metadata("/own/f.txt", { uid = 0, gid = 0, mode = oct("640") }))
    assert.are.same({ 9090, 9090, oct("666") }, owner(assert(vol:write("/own/f.txt", "y", { force = true }))))
    assert.are.same({ 9090, 9090, oct("666") }, owner(assert(vol:stat("/own/f.txt"))))
    assert.are.same({ 1000, 1000, oct("600") }, owner(assert(vol:write("/own/f.txt", "z", { force = true, uid = 1000,
      gid = 1000, mode = oct("600") }))))
    assert.are.same({ 9090, 9090, oct("666") }, owner(assert(vol:write("/own/g.txt", "w", { force = true }))))
    assert.are.equal("w", assert(vol:read("/own/g.txt")))
    -- a forced mkdir over an existing directory changes nothing
    assert(vol:set_metadata("/own/d", { uid = 1000, gid = 1000, mode = oct("750") }))
    assert.are.same({ 1000, 1000, oct("750") }, owner(assert(vol:mkdir("/own/d", { force = true }))))
  end)

  it("reports permission bits only, and a forced overwrite of a sandbox's setuid file drops its owner and mode", function()
    local oct = function(s) return tonumber(s, 8) end
    local sbx = h.sandbox({ volumes = { ["/mnt/v"] = name } }, client)
    assert(sbx:run("mkdir -p /mnt/v/in && cp /bin/true /mnt/v/in/suid && chmod 4755 /mnt/v/in/suid", { user = "root" }))
    local e = assert(vol:stat("/in/suid"))
    assert.are.same({ 0, 0, oct("755") }, { e.uid, e.gid, e.mode }) -- E2B: mode & 0777
    e = assert(vol:write("/in/suid", "plain", { force = true }))
    assert.are.same({ 9090, 9090, oct("666") }, { e.uid, e.gid, e.mode })
    assert.are.equal("9090:9090 666", assert(sbx:run("stat -c '%u:%g %a' /mnt/v/in/suid")).stdout:match("^(%S+ %S+)"))
    -- the sandbox's user still writes the files the API made, as on E2B (0666 in 0777)
    assert(vol:write("/in/new/shared.txt", "api", { force = true }))
    assert(sbx:run("echo sandbox >> /mnt/v/in/new/shared.txt && touch /mnt/v/in/new/more"))
    assert.are.equal("apisandbox\n", assert(vol:read("/in/new/shared.txt")))
  end)

  it("answers a forced mkdir over a file with conflict, and over a directory with success", function()
    assert(vol:write("/plain.txt", "x"))
    local _, err = vol:mkdir("/plain.txt", { force = true })
    assert.are.equal("conflict", err.kind)
    assert.are.equal("file", assert(vol:stat("/plain.txt")).type)
    assert(vol:mkdir("/already"))
    assert.are.equal("directory", assert(vol:mkdir("/already", { force = true })).type)
  end)

  it("changes an entry's owner and mode (the SDKs' updateMetadata)", function()
    assert(vol:write("/meta.txt", "m"))
    local e = assert(vol:set_metadata("/meta.txt", { mode = tonumber("640", 8), uid = 0, gid = 0 }))
    assert.are.equal(tonumber("640", 8), e.mode % 512)
    assert.are.equal(0, e.uid)
    assert.are.equal(0, assert(vol:stat("/meta.txt")).gid)
    local _, err = vol:set_metadata("/meta.txt", { mode = tonumber("4755", 8) })
    assert.are.equal("mode", err.field)
    _, err = vol:set_metadata("/missing", { mode = tonumber("600", 8) })
    assert.are.equal("not_found", err.kind)
  end)

  it("says not_found for a missing path", function()
    for _, call in ipairs({
      function() return vol:read("/missing") end,
      function() return vol:stat("/missing") end,
      function() return vol:remove("/missing") end,
      function() return vol:list("/missing") end,
    }) do
      local res, err = call()
      assert.is_nil(res)
      assert.are.equal("not_found", err.kind)
    end
  end)

  it("shares its files with the sandboxes that mount it", function()
    assert(vol:write("/shared.txt", "from the client\n"))
    local sbx = h.sandbox({ volumes = { ["/mnt/v"] = name } }, client)
    assert.are.equal("from the client\n", assert(sbx:run("cat /mnt/v/shared.txt")).stdout)
    assert(sbx:run("printf 'from the sandbox' > /mnt/v/back.txt"))
    assert.are.equal("from the sandbox", assert(vol:read("/back.txt")))
  end)

  it("streams a large file both ways in bounded memory", function()
    local size, piece = 48 * 1048576, 1048576
    local pattern = {}
    for i = 0, 255 do pattern[#pattern + 1] = string.char((i * 7) % 256) end
    local block = table.concat(pattern):rep(math.floor(piece / 256))
    local ref = block .. table.concat(pattern) -- any chunk of at most a MiB, at any offset
    local sent = 0
    collectgarbage()
    local base, peak, rss0, rss_peak = collectgarbage("count"), 0, rss_kib(), 0
    assert(vol:write("/big.bin", function()
      if sent == size then return nil end
      sent = sent + #block
      collectgarbage() -- what is held, not garbage awaiting the collector
      peak = math.max(peak, collectgarbage("count") - base)
      rss_peak = math.max(rss_peak, rss_kib() - rss0)
      return block
    end))
    local got, same = 0, true
    assert.are.equal(size, assert(vol:read_to("/big.bin", function(chunk)
      if #chunk > piece or chunk ~= ref:sub(got % 256 + 1, got % 256 + #chunk) then same = false end
      got = got + #chunk
      collectgarbage()
      peak = math.max(peak, collectgarbage("count") - base)
      rss_peak = math.max(rss_peak, rss_kib() - rss0)
      return true
    end)))
    assert.are.equal(size, got)
    assert.is_true(same, "the bytes read differ from those written")
    assert.is_true(peak < 24 * 1024, ("Lua heap held %d KiB more"):format(math.floor(peak)))
    assert.is_true(rss_peak < 32 * 1024, ("the process grew by %d KiB"):format(rss_peak))
  end)

  it("ends a write with kind canceled when its token is canceled from another task", function()
    local c, sent = e2b.cancel_token(), 0
    local chunk = ("v"):rep(65536)
    local res, err = e2b.run(function()
      local t = e2b.spawn(function()
        return vol:write("/canceled.bin", function() sent = sent + #chunk return chunk end, { cancel = c })
      end)
      while sent < 4 * 1048576 do e2b.sleep(5) end
      c:cancel()
      return t:wait()
    end)
    assert.is_nil(res)
    assert.are.equal("canceled", err.kind)
  end)

  it("refuses bad input as invalid_argument naming the field", function()
    for field, call in pairs({
      name = function() return client:volume("") end,
      path = function() return vol:read(42) end,
      data = function() return vol:write("/x", 5) end,
      depth = function() return vol:list("/", { depth = 0 }) end,
      mode = function() return vol:mkdir("/x", { mode = tonumber("4755", 8) }) end,
      uid = function() return vol:write("/x", "y", { uid = -3 }) end,
      sink = function() return vol:read_to("/x", 7) end,
      force = function() return vol:write("/x", "y", { force = "yes" }) end,
      cancel = function() return vol:read("/x", { cancel = true }) end,
    }) do
      local res, err = call()
      assert.is_nil(res)
      assert.are.equal("invalid_argument", err.kind, field)
      assert.are.equal(field, err.field)
    end
  end)
end)
