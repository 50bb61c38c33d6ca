-- What comes out of a sandbox is not trusted by the host: `lua-e2b cp
-- SANDBOX:/dir LOCAL` (files:download) never makes a setuid/setgid file, a
-- device node, a FIFO, a file of another owner, or anything outside LOCAL,
-- even run as root. The sandbox here is hostile: its root has replaced tar
-- (PATH) by one that sends an archive crafted with python3's tarfile, as a
-- hostile envd on E2B could.
local h = require("spec.helpers")

-- The tool as a subprocess: stdout, stderr, exit code.
local function run(args)
  local words = { "env -u LD_PRELOAD" }
  -- a sanitizer build's binding needs its runtime first (as cli_spec does)
  local preload = os.getenv("LD_PRELOAD")
  if preload then words[#words + 1] = "LD_PRELOAD=" .. h.shell_quote(preload) .. " ASAN_OPTIONS=detect_leaks=0" end
  for _, w in ipairs({ "LUA_PATH=" .. h.shell_quote(package.path), "LUA_CPATH=" .. h.shell_quote(package.cpath),
                       h.lua_bin, "bin/lua-e2b" }) do
    words[#words + 1] = w
  end
  for _, a in ipairs(args) do words[#words + 1] = h.shell_quote(a) end
  local errf = os.tmpname()
  local p = assert(io.popen(table.concat(words, " ") .. " 2>" .. errf .. "; echo \"exit=$?\"", "r"))
  local out = p:read("a")
  p:close()
  local err = h.read_file(errf)
  os.remove(errf)
  return out, err, tonumber(out:match("exit=(%d+)%s*$"))
end

-- python3 that writes /home/user/evil.tar from add(...) calls.
local PY_HEAD = [[
import tarfile, io
t = tarfile.open("/home/user/evil.tar", "w", format=tarfile.%s)
def add(name, type=tarfile.REGTYPE, data=b"x", mode=0o644, link="", uid=0, major=0, minor=0):
    i = tarfile.TarInfo(name); i.type = type; i.mode = mode; i.linkname = link
    i.uid = uid; i.uname = "other" if uid else "root"; i.devmajor = major; i.devminor = minor
    if type == tarfile.REGTYPE:
        i.size = len(data); t.addfile(i, io.BytesIO(data))
    else:
        t.addfile(i)
]]

local function craft(sbx, body, format)
  local py = PY_HEAD:format(format or "GNU_FORMAT") .. body .. "\nt.close()\n"
  assert(sbx.files:write("/home/user/craft.py", py))
  local r = assert(sbx:run("python3 /home/user/craft.py", { user = "root" }))
  assert(r.exit_code == 0, r.stderr)
end

-- What under base is forbidden: setuid/setgid, devices, FIFOs, sockets, not
-- ours, or a symlink resolving outside base/out.
local function forbidden(base)
  local me = h.host("id -u"):match("%d+")
  local found = h.host(("find %s \\( -perm /6000 -o -type b -o -type c -o -type p -o -type s -o ! -uid %s \\) -print")
    :format(h.shell_quote(base), me))
  local out = base .. "/out"
  for link in h.host("find " .. h.shell_quote(out) .. " -type l 2>/dev/null"):gmatch("[^\n]+") do
    local real = h.host("realpath -m " .. h.shell_quote(link)):gsub("\n$", "")
    if real:sub(1, #out + 1) ~= out .. "/" then found = found .. link .. " -> " .. real .. "\n" end
  end
  return found
end

describe("extraction containment (a hostile sandbox's tree on the host)", function()
  if h.live then return end
  local sbx, base
  setup(function()
    sbx = h.sandbox({ env = { PATH = "/home/user/bin:/usr/local/bin:/usr/bin:/bin" } })
    local r = assert(sbx:run("mkdir -p /home/user/bin /home/user/tree && printf '#!/bin/sh\\nexec cat /home/user/evil.tar\\n'"
      .. " > /home/user/bin/tar && chmod 755 /home/user/bin/tar", { user = "root" }))
    assert(r.exit_code == 0, r.stderr)
  end)
  teardown(function() h.cleanup() end)
  before_each(function()
    base = os.tmpname()
    os.remove(base)
    assert(os.execute("mkdir -p " .. h.shell_quote(base)))
  end)
  after_each(function() h.host("rm -rf " .. h.shell_quote(base)) end)

  local function cp()
    return run({ "cp", sbx.sandbox_id .. ":/home/user/tree", base .. "/out" })
  end

  it("keeps files and links inside, without setuid/setgid bits or the archive's owners", function()
    craft(sbx, [[
add("./", tarfile.DIRTYPE, mode=0o755)
add("rootshell", data=b"#!/bin/sh\n", mode=0o4755)
add("sg", tarfile.DIRTYPE, mode=0o3777)
add("sg/theirs", data=b"theirs", mode=0o2755, uid=4242)
add("sg/up", tarfile.SYMTYPE, link="../rootshell")
add("sg/hard", tarfile.LNKTYPE, link="sg/theirs")
add("long/" + "n" * 200, data=b"long")
]])
    local _, err, code = cp()
    assert.are.equal(0, code, err)
    assert.are.equal("", forbidden(base))
    assert.are.equal("theirs", h.read_file(base .. "/out/sg/hard"))
    assert.are.equal("#!/bin/sh\n", h.read_file(base .. "/out/sg/up"))
    assert.are.equal("long", h.read_file(base .. "/out/long/" .. ("n"):rep(200)))
  end)

  -- Each archive is refused whole, naming the entry; nothing forbidden is
  -- left, nothing is written outside.
  local hostile = {
    { "a block device (the host's disk)", 'add("disk", tarfile.BLKTYPE, major=8, minor=0)', "disk: a block device" },
    { "a character device (/dev/mem)", 'add("mem", tarfile.CHRTYPE, major=1, minor=1)', "mem: a character device" },
    { "a FIFO", 'add("pipe", tarfile.FIFOTYPE)', "pipe: a FIFO" },
    { "an absolute name", 'add("/tmp/lua-e2b-extract-abs")', "/tmp/lua-e2b-extract-abs: an absolute name" },
    { "a .. name", 'add("../escaped")', "../escaped: a '..' component" },
    { "a symlink leading out", 'add("up", tarfile.SYMTYPE, link="../../..")', "up: a symlink" },
    { "an absolute symlink", 'add("etc", tarfile.SYMTYPE, link="/etc")', "etc: a symlink" },
    { "a write through a symlink of the archive",
      'add("d", tarfile.DIRTYPE, mode=0o755)\nadd("s", tarfile.SYMTYPE, link="d")\nadd("s/x")',
      "s/x: a path through a symlink" },
    { "a hard link out", 'add("passwd", tarfile.LNKTYPE, link="/etc/passwd")', "passwd: a hard link" },
    { "a hard link with ..", 'add("h", tarfile.LNKTYPE, link="../escaped")', "h: a hard link" },
    { "a hard link to a symlink", 'add("s", tarfile.SYMTYPE, link=".")\nadd("h", tarfile.LNKTYPE, link="s")',
      "h: a hard link" },
    { "a GNU long name hiding ..", 'add("a" * 120 + "/../../escaped")', ("a"):rep(120) .. "/../../escaped: a '..' component" },
  }
  for _, case in ipairs(hostile) do
    it("refuses " .. case[1], function()
      craft(sbx, 'add("ok", data=b"fine")\n' .. case[2])
      local _, err, code = cp()
      assert.are_not.equal(0, code)
      assert.truthy(err:find("refused " .. case[3], 1, true), err)
      assert.are.equal("", forbidden(base))
      assert.is_nil(io.open(base .. "/escaped"))
      assert.is_nil(io.open("/tmp/lua-e2b-extract-abs"))
    end)
  end

  it("reads a pax path, not the ustar name it stands for", function()
    craft(sbx, 'add("a" * 120 + "/../../escaped")', "PAX_FORMAT")
    local _, err, code = cp()
    assert.are_not.equal(0, code)
    assert.truthy(err:find("a '..' component", 1, true), err)
    assert.is_nil(io.open(base .. "/escaped"))
  end)

  it("gives files:download the same rule", function()
    craft(sbx, 'add("mem", tarfile.CHRTYPE, major=1, minor=1)')
    local n, err = sbx.files:download("/home/user/tree", base .. "/out")
    assert.is_nil(n)
    assert.are.equal("sandbox", err.kind)
    assert.truthy(err.refused:find("^refused mem: a character device"), err.refused)
    assert.are.equal("", forbidden(base))
  end)
end)
