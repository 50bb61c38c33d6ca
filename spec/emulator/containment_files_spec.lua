-- Containment of file operations: /files and the Filesystem RPCs run as the
-- requested user, inside the sandbox, whatever the sandbox's own code planted
-- (symlinks, root-only files, huge trees). Each attack is followed by
-- h.assert_healthy, which proves the server and the bystanders survived.
local h = require("spec.helpers")

if h.live then return end

-- e2b-local's pid: the nearest ancestor of this process running e2b-local
-- (the specs run under `e2b-local exec`).
local function server_pid()
  local pid = "self"
  for _ = 1, 16 do
    local f = io.open("/proc/" .. pid .. "/status")
    if not f then return nil end
    local status = f:read("a")
    f:close()
    local ppid = status:match("\nPPid:%s*(%d+)")
    if not ppid or ppid == "0" then return nil end
    local cmd = io.open("/proc/" .. ppid .. "/cmdline")
    local line = cmd and cmd:read("a") or ""
    if cmd then cmd:close() end
    if line:match("^[^%z]*e2b%-local%z") then return ppid end
    pid = ppid
  end
end

-- Resident memory of a process in KiB (VmRSS, or VmHWM: its peak).
local function kib(pid, field)
  local f = assert(io.open("/proc/" .. pid .. "/status"))
  local status = f:read("a")
  f:close()
  return tonumber(assert(status:match(field .. ":%s*(%d+) kB")))
end

-- A bwrap process on the host binds this sandbox's home over /home/user
-- (the sandbox boots while create returns: wait a little for it).
local function held_by_bwrap(id)
  for _ = 1, 100 do
    for pid in h.host("ls /proc"):gmatch("%d+") do
      local f = io.open("/proc/" .. pid .. "/cmdline")
      local args = f and f:read("a") or ""
      if f then f:close() end
      if args:match("^[^%z]*bwrap%z") and args:find("/sandboxes/" .. id .. "/home%z/home/user%z") then return true end
    end
    h.e2b.sleep(50)
  end
  return false
end

local function denied(ok, err)
  assert.is_nil(ok)
  assert.are.equal(403, err.status, tostring(err))
end

describe("file operations (containment)", function()
  local client, root, bystander
  setup(function()
    client = h.client()
    root = h.client({ user = "root" })
    bystander = h.sandbox({}, client)
  end)
  teardown(h.cleanup)

  -- sbx as user and the same sandbox as root. Without bubblewrap e2b-local
  -- runs sandboxes on the host itself, where these attacks (Remove "/", root
  -- writes) would hit the host: refuse to go on unless bwrap holds this one.
  local function pair()
    local sbx = h.sandbox({}, client)
    assert(held_by_bwrap(sbx.sandbox_id),
      "these attacks need e2b-local's bubblewrap isolation: not running them on the host")
    -- lua-e2b keeps run output under /tmp/.e2b-proc: user makes it first,
    -- else root's first run leaves it root's
    assert(sbx:run("true"))
    return sbx, assert(root:connect(sbx.sandbox_id))
  end

  local function as_root(sbx, cmd)
    local r = assert(sbx:run(cmd, { user = "root" }))
    assert.are.equal(0, r.exit_code, r.stderr)
    return r.stdout
  end

  it("a download as user cannot read a root-only file", function()
    local sbx, rsbx = pair()
    as_root(sbx, "printf s3cret > /root/secret && printf s3cret > /tmp/rootonly && chmod 600 /tmp/rootonly")
    denied(sbx.files:read("/tmp/rootonly"))
    denied(sbx.files:read("/root/secret"))
    assert.are.equal("s3cret", assert(rsbx.files:read("/root/secret")))
    h.assert_healthy({ bystander })
  end)

  it("Stat, ListDir, MakeDir, Move and Remove run as user: refused where user may not go", function()
    local sbx, rsbx = pair()
    as_root(sbx, "printf x > /root/secret && mkdir -m 755 /tmp/rootdir && printf x > /tmp/rootdir/f && chmod 644 /tmp/rootdir/f")
    denied(sbx.files:stat("/root/secret"))
    denied(sbx.files:list("/root"))
    denied(sbx.files:mkdir("/root/mine"))
    denied(sbx.files:mkdir("/tmp/rootdir/mine"))
    denied(sbx.files:rename("/tmp/rootdir/f", "/tmp/stolen"))
    denied(sbx.files:remove("/tmp/rootdir/f"))
    as_root(sbx, "test -f /tmp/rootdir/f && test ! -e /root/mine && test ! -e /tmp/rootdir/mine")
    -- root keeps root's powers
    assert(rsbx.files:mkdir("/root/mine"))
    assert.are.equal("root", assert(rsbx.files:stat("/root/mine")).owner)
    -- and what user makes belongs to user
    assert(sbx.files:mkdir("/home/user/made/deep"))
    assert.are.equal("user:user\n", assert(sbx:run("stat -c %U:%G /home/user/made/deep")).stdout)
    h.assert_healthy({ bystander })
  end)

  -- A sandbox of pair() where root ran root_cmd and then user ran links
  -- (the symlinks user plants).
  local function planted(root_cmd, links)
    local sbx = pair()
    as_root(sbx, root_cmd)
    local r = assert(sbx:run(links))
    assert.are.equal(0, r.exit_code, r.stderr)
    return sbx
  end

  it("a symlink planted by user does not turn a download into a root read", function()
    local sbx = planted("printf s3cret > /root/secret && printf s3cret > /tmp/rootonly && chmod 600 /tmp/rootonly",
      "ln -s /root/secret /home/user/x && ln -s /tmp/rootonly /home/user/y && ln -s /root /home/user/r")
    denied(sbx.files:read("/home/user/x"))
    denied(sbx.files:read("/home/user/y"))
    denied(sbx.files:read("/home/user/r/secret"))
    denied(sbx.files:list("/home/user/r"))
    h.assert_healthy({ bystander })
  end)

  it("a symlink planted by user does not turn an upload into a root write", function()
    local sbx = planted("printf original > /tmp/rootfile && chmod 644 /tmp/rootfile",
      "ln -s /tmp/rootfile /home/user/w && ln -s /root /home/user/r")
    denied(sbx.files:write("/home/user/w", "overwritten"))
    denied(sbx.files:write("/home/user/r/planted", "planted"))
    denied(sbx.files:write("/home/user/r/sub/planted", "planted"))
    assert.are.equal("original", as_root(sbx, "cat /tmp/rootfile"))
    as_root(sbx, "test ! -e /root/planted && test ! -e /root/sub")
    h.assert_healthy({ bystander })
  end)

  describe("kernel settings", function()
    local original
    setup(function() original = h.host("cat /proc/sys/kernel/domainname") end)
    teardown(function()
      -- whatever happened, the host keeps its domain name
      if h.host("cat /proc/sys/kernel/domainname") ~= original then
        h.host("printf %s " .. h.shell_quote((original:gsub("\n$", ""))) .. " > /proc/sys/kernel/domainname")
      end
    end)

    it("an upload as root to /proc/sys never reaches the host's kernel", function()
      local sbx, rsbx = pair()
      local ok = rsbx.files:write("/proc/sys/kernel/domainname", "pwned-by-sandbox")
      assert.are.equal(original, h.host("cat /proc/sys/kernel/domainname"))
      if ok then
        -- allowed only if it stayed the sandbox's own setting
        assert.are.equal("pwned-by-sandbox\n", as_root(sbx, "cat /proc/sys/kernel/domainname"))
      end
      -- and a read gives the sandbox's view, never the host's
      local host_name = h.host("cat /proc/sys/kernel/hostname")
      local got = rsbx.files:read("/proc/sys/kernel/hostname")
      assert.are_not.equal(host_name, got)
      h.assert_healthy({ bystander })
    end)
  end)

  it("Remove '/' as the default user leaves root-owned entries in place", function()
    local sbx = pair()
    as_root(sbx, "mkdir -p /tmp/rootdir && printf x > /tmp/rootdir/f && printf y > /root/keep")
    assert(sbx.files:write("/home/user/mine", "m"))
    denied(sbx.files:remove("/"))
    as_root(sbx, "test -f /tmp/rootdir/f && test -f /root/keep && test -d /run && test -d /var/tmp && test -d /home/user")
    h.assert_healthy({ bystander })
  end)

  it("ListDir of a huge tree is a clear error and the server's memory stays bounded", function()
    local pid = assert(server_pid(), "cannot find the e2b-local process")
    local sbx, rsbx = pair()
    -- on the sandbox's own /dev tmpfs (quick, and gone with the sandbox)
    as_root(sbx, "mkdir -p /dev/shm/big/deep/$(printf 'd/%.0s' $(seq 1000)) && mkdir /dev/shm/big/wide && " ..
      "cd /dev/shm/big/wide && seq 1 20001 | xargs touch")
    local before = kib(pid, "VmRSS")
    h.host("echo 5 > /proc/" .. pid .. "/clear_refs") -- VmHWM restarts from VmRSS
    local list, err = rsbx.files:list("/dev/shm/big/wide", { depth = 1000 })
    assert.is_nil(list)
    assert.are.equal(400, err.status, tostring(err)) -- out_of_range: not worth retrying
    assert.truthy(err.message:find("entries", 1, true), err.message)
    -- a deep tree lists as deep as asked within the bound, and past it is refused
    list, err = rsbx.files:list("/dev/shm/big/deep", { depth = 40 })
    assert.are.equal(40, #assert(list, err))
    list, err = rsbx.files:list("/dev/shm/big/deep", { depth = 1000 })
    assert.is_nil(list)
    assert.are.equal(400, err.status, tostring(err))
    assert.truthy(err.message:find("deep", 1, true), err.message)
    local grew = kib(pid, "VmHWM") - before
    assert.is_true(grew < 64 * 1024, ("the server grew by %d KiB"):format(grew))
    h.assert_healthy({ bystander })
  end)
end)
