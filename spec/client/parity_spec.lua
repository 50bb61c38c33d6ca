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

    it("fails as not_found for a missing directory", function()
      local w, err = files:watch_dir("/tmp/no-such-dir")
      assert.is_nil(w)
      assert.are.equal("not_found", err.kind)
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

    it("refuses a target that is no pid or tag", function()
      local _, err = sbx:kill_process(0)
      assert.are.same({ "invalid_argument", "target" }, { err.kind, err.field })
    end)
  end)
end)
