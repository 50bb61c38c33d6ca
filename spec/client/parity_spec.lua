-- Parity with the official SDKs (issue 31): directory watches, per-call
-- users on file operations, killing a process by pid, metrics, the info
-- fields and listing page by page.
local h = require("spec.helpers")

describe("parity with the SDKs", function()
  local sbx, files
  setup(function()
    sbx = h.sandbox()
    files = sbx.files
  end)
  teardown(h.cleanup)

  describe("files:watch_dir", function()
    it("reports each change with its type and name, and stops", function()
      assert(files:mkdir("/tmp/w1"))
      local w = assert(files:watch_dir("/tmp/w1"))
      assert(files:write("/tmp/w1/a.txt", "x"))
      assert(files:remove("/tmp/w1/a.txt"))
      local seen = {}
      while not (seen["create a.txt"] and seen["remove a.txt"]) do
        local ev = assert(w:next(10000))
        seen[ev.type .. " " .. ev.name] = true
      end
      w:stop()
      assert.is_nil(w:next(10))
    end)

    it("sees the directories below only when recursive", function()
      assert(files:mkdir("/tmp/w2/sub"))
      local flat = assert(files:watch_dir("/tmp/w2"))
      local deep = assert(files:watch_dir("/tmp/w2", { recursive = true }))
      assert(files:write("/tmp/w2/sub/b.txt", "y"))
      local ev = assert(deep:next(10000))
      while ev.name ~= "sub/b.txt" do ev = assert(deep:next(10000)) end
      -- the write's events reached the recursive watch: the flat one has none of them
      local _, err = flat:next(300)
      assert.are.equal("timeout", err.kind)
      flat:stop()
      deep:stop()
    end)

    it("ends after its timeout_ms", function()
      assert(files:mkdir("/tmp/w3"))
      local w = assert(files:watch_dir("/tmp/w3", { timeout_ms = 500 }))
      local t0 = h.now_ms()
      local ev, err = w:next(20000)
      assert.is_nil(ev)
      assert.is_true(h.now_ms() - t0 < 10000, "the watch outlived its timeout_ms")
      if err then assert.are.equal("timeout", err.kind) end
      w:stop()
    end)

    it("fails as not_found for a missing directory, invalid_argument for a file", function()
      local w, err = files:watch_dir("/tmp/no-such-dir")
      assert.is_nil(w)
      assert.are.equal("not_found", err.kind)
      assert(files:write("/tmp/plain-file", "f"))
      w, err = files:watch_dir("/tmp/plain-file")
      assert.is_nil(w)
      assert.are.equal("invalid_argument", err.kind)
    end)

    it("delivers every event of a burst to a reader that comes later", function()
      assert(files:mkdir("/tmp/w4"))
      local w = assert(files:watch_dir("/tmp/w4"))
      assert(sbx:run("for i in $(seq 1 300); do : > /tmp/w4/f$i; done"))
      local n = 0
      while n < 300 do
        local ev = assert(w:next(10000))
        if ev.type == "create" then n = n + 1 end
      end
      w:stop()
    end)

    it("refuses bad input naming the field, before any request", function()
      local _, err = files:watch_dir("")
      assert.are.same({ "invalid_argument", "path" }, { err.kind, err.field })
      _, err = files:watch_dir("/tmp", { recursive = "yes" })
      assert.are.same({ "invalid_argument", "recursive" }, { err.kind, err.field })
      _, err = files:watch_dir("/tmp", { timeout_ms = -1 })
      assert.are.same({ "invalid_argument", "timeout_ms" }, { err.kind, err.field })
      _, err = files:watch_dir("/tmp", { user = "" })
      assert.are.same({ "invalid_argument", "user" }, { err.kind, err.field })
    end)
  end)

  describe("opts.user on file operations", function()
    it("writes, stats, lists, renames and removes as the user given", function()
      local info = assert(files:write("/tmp/as_root.txt", "r", { user = "root" }))
      assert.are.equal("/tmp/as_root.txt", info.path)
      assert.are.equal("root", assert(files:stat("/tmp/as_root.txt")).owner)
      assert.are.equal("root", assert(files:stat("/tmp/as_root.txt", { user = "root" })).owner)
      -- the default user may not remove root's file from root's directory
      assert(files:mkdir("/tmp/rootdir", { user = "root" }))
      assert(files:write("/tmp/rootdir/f", "z", { user = "root" }))
      local ok, err = files:remove("/tmp/rootdir/f")
      assert.is_nil(ok)
      assert.are.equal("permission", err.kind)
      assert(files:rename("/tmp/rootdir/f", "/tmp/rootdir/g", { user = "root" }))
      local names = {}
      for _, e in ipairs(assert(files:list("/tmp/rootdir", { user = "root" }))) do names[#names + 1] = e.name end
      assert.are.same({ "g" }, names)
      assert.are.equal("z", assert(files:read("/tmp/rootdir/g", { user = "root" })))
      assert(files:remove("/tmp/rootdir/g", { user = "root" }))
      assert.is_false(files:exists("/tmp/rootdir/g", { user = "root" }))
    end)

    it("refuses a user that is not a non-empty string, naming it", function()
      for _, call in ipairs({
        function() return files:read("/tmp/x", { user = 1 }) end,
        function() return files:write("/tmp/x", "", { user = "" }) end,
        function() return files:stat("/tmp/x", { user = false }) end,
        function() return files:list("/tmp", { user = {} }) end,
        function() return files:rename("/tmp/x", "/tmp/y", { user = "" }) end,
      }) do
        local _, err = call()
        assert.are.same({ "invalid_argument", "user" }, { err.kind, err.field })
      end
    end)
  end)

  describe("sbx:kill_process", function()
    it("kills a process by pid without attaching, and says false for none", function()
      local p = assert(sbx:spawn("sleep 600"))
      local pid = p.pid
      p:detach()
      assert.is_true(assert(sbx:kill_process(pid)))
      for _, q in ipairs(assert(sbx:processes())) do assert.are_not.equal(pid, q.pid) end
      assert.is_false(sbx:kill_process(pid))
    end)

    it("kills a process by tag", function()
      local p = assert(sbx:spawn("sleep 600", { tag = "parity-kill" }))
      p:detach()
      assert.is_true(assert(sbx:kill_process("parity-kill")))
      for _, q in ipairs(assert(sbx:processes())) do assert.are_not.equal("parity-kill", q.tag) end
      assert.is_false(sbx:kill_process("parity-kill"))
    end)

    it("refuses a target that is no pid or tag", function()
      local _, err = sbx:kill_process(0)
      assert.are.same({ "invalid_argument", "target" }, { err.kind, err.field })
    end)
  end)

  describe("metrics and info", function()
    it("gives samples with cpu, memory and disk numbers", function()
      local t0 = os.time() * 1000
      local samples
      assert(h.eventually(function()
        samples = assert(sbx:metrics())
        return #samples > 0
      end, 30000))
      local m = samples[#samples]
      assert.is_true(m.cpu_count >= 1 and m.cpu_used_pct >= 0)
      assert.is_true(m.mem_total > 0 and m.mem_used >= 0 and m.disk_total > 0 and m.disk_used >= 0)
      assert.is_true(m.timestamp > t0 - 3600 * 1000 and m.timestamp <= os.time() * 1000 + 1000)
      -- an interval that ended before the sandbox started holds nothing (e2b-local;
      -- E2B's retention rules for such an interval are its own)
      if not h.live then assert.are.same({}, assert(sbx:metrics({ start = 1000, end_ = 2000 }))) end
    end)

    it("refuses a bad interval, naming the field", function()
      local _, err = sbx:metrics({ start = -1 })
      assert.are.same({ "invalid_argument", "start" }, { err.kind, err.field })
      _, err = sbx:metrics({ start = 5000, end_ = 1000 })
      assert.are.equal("invalid_argument", err.kind)
      assert.matches("end", err.message)
    end)

    it("info and describe carry resources, envd version and times", function()
      for _, info in ipairs({ assert(sbx:info()), assert(sbx._client:describe(sbx.sandbox_id)) }) do
        assert.is_true(info.cpu_count >= 1 and info.memory_mb >= 1)
        assert.is_string(info.envd_version)
        assert.is_true(info.started_at > 0 and info.end_at > info.started_at)
      end
      assert.is_true(assert(sbx:info()).disk_size_mb >= 1)
    end)

    it("info shows the network and lifecycle the sandbox was made with", function()
      local net = h.sandbox({ network = { allow = { "example.com" } }, lifecycle = { on_timeout = "pause" } },
        sbx._client)
      local info = assert(net:info())
      assert.is_false(info.allow_internet_access == nil)
      assert.are.same({ "example.com" }, info.network.allow_out)
      assert.are.same({ "0.0.0.0/0" }, info.network.deny_out)
      assert.are.equal("pause", info.lifecycle.on_timeout)
      assert.is_true(assert(sbx:info()).allow_internet_access)
    end)
  end)

  describe("listing page by page", function()
    it("hands one page and the token of the next, and filters by template and start", function()
      local c = sbx._client
      local other = h.sandbox(nil, c)
      local seen, token, pages = {}, nil, 0
      repeat
        local page
        page, token = assert(c:list_page({ limit = 1, next_token = token }))
        assert.is_true(#page <= 1)
        for _, i in ipairs(page) do seen[i.sandbox_id] = true end
        pages = pages + 1
      until not token
      assert.is_true(seen[sbx.sandbox_id] and seen[other.sandbox_id] and pages >= 2)
      local asc = assert(c:list({ order = "asc" }))
      local desc = assert(c:list({ order = "desc" }))
      assert.is_true(#asc >= 2 and asc[1].started_at <= asc[#asc].started_at)
      assert.is_true(desc[1].started_at >= desc[#desc].started_at)
      assert.are.same({}, assert(c:list({ template = "no-such-template" })))
      local later = assert(c:list({ started_after = os.time() * 1000 + 3600 * 1000 }))
      assert.are.same({}, later)
      assert.is_true(#assert(c:list({ template = "base" })) >= 2)
    end)

    it("lists the snapshots of one sandbox", function()
      local c = sbx._client
      local other = h.sandbox(nil, c)
      local name = "parity-" .. tostring(os.time())
      local mine = assert(sbx:snapshot(name .. "-a"))
      local theirs = assert(other:snapshot(name .. "-b"))
      local ids = {}
      for _, s in ipairs(assert(c:list_snapshots({ sandbox_id = sbx.sandbox_id }))) do ids[s.id] = true end
      assert.is_true(ids[mine.id])
      assert.is_nil(ids[theirs.id])
      assert.are.equal(1, #assert(c:list_snapshots({ sandbox_id = other.sandbox_id, name = name .. "-b" })))
      -- the core refuses the shape before any request; its message names the field
      local _, err = c:list_snapshots({ sandbox_id = "Not An Id" })
      assert.are.equal("invalid_argument", err.kind)
      assert.matches("sandbox_id", err.message, 1, true)
      assert(c:delete_snapshot(name .. "-a"))
      assert(c:delete_snapshot(name .. "-b"))
    end)

    it("refuses bad paging and filters, naming the field", function()
      local c = sbx._client
      for field, opts in pairs({
        limit = { limit = 0 }, next_token = { next_token = "" }, template = { template = "" },
        started_after = { started_after = -1 }, order = { order = "up" },
      }) do
        local _, err = c:list_page(opts)
        assert.are.same({ "invalid_argument", field }, { err.kind, err.field })
      end
      local _, err = c:list_page({ limit = 101 })
      assert.are.equal("invalid_argument", err.kind)
    end)
  end)
end)
