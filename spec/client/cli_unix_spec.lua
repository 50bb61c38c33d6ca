-- lua-e2b as a Unix citizen (spec/cli_spec.lua has the verbs themselves):
-- exec's stdin is the command's, its signals reach the command and its
-- exit statuses are a shell's (128+N, timeout(1)'s 124); cp copies trees as
-- cp -r.
local h = require("spec.helpers")
local tool = require("spec.cli_tool")

local run, start = tool.run, tool.start
local read_file, write_file = h.read_file, h.write_file

if h.live then return end

describe("lua-e2b as a Unix tool", function()
  local client, tag, id, sbx
  setup(function()
    client = h.client()
    tag = ("cliu-%d-%d"):format(os.time(), math.random(1, 1e6))
    id = tag .. "-1"
    local out, err, code = run({ "create", "--id", id, "--metadata", "spec=" .. tag })
    assert.are.equal(0, code, err)
    sbx = assert(client:resume(out:match("^%S+ (%S+)\n$")))
  end)
  teardown(function()
    for _, s in ipairs(client:list{ metadata = { spec = tag } } or {}) do client:destroy(s.sandbox_id) end
  end)

  it("exec passes piped stdin byte-exact, and its end closes the command's stdin", function()
    local out, err, code = run({ "exec", id, "--", "cat" }, nil, "< /dev/null")
    assert.are.same({ "", "", 0 }, { out, err, code })
    local src = os.tmpname()
    write_file(src, "hi\n")
    out, err, code = run({ "exec", id, "--", "cat" }, nil, "< " .. src)
    assert.are.same({ "hi\n", "", 0 }, { out, err, code })
    -- several 1 MiB pieces, every byte value, no newline at the end
    local data = h.all_bytes():rep(12000) .. "\0tail"
    write_file(src, data)
    out, err, code = run({ "exec", id, "--", "sh", "-c", "cat; echo done >&2" }, nil, "< " .. src)
    assert.are.equal(0, code, err)
    assert.are.equal("done\n", err)
    assert.are.equal(#data, #out)
    assert.is_true(data == out, "bytes differ")
    out = run({ "exec", id, "--", "cat" }, nil, "< " .. src .. " | cat")
    assert.is_true(data == out, "bytes differ through a pipe")
    os.remove(src)
  end)

  it("exec streams stdin as it comes: a line is answered before the next is written", function()
    local fifo = os.tmpname()
    os.remove(fifo)
    assert(os.execute("mkfifo " .. fifo))
    local t = start({ "exec", id, "--", "cat" }, "< " .. fifo)
    local w = assert(io.open(fifo, "w"))
    w:write("one\n")
    w:flush()
    assert.are.equal("one", t.p:read("l"))
    w:write("two")
    w:close()
    local out, err, code = t.finish()
    assert.are.same({ "two", "", 0 }, { out, err, code })
    os.remove(fifo)
  end)

  for _, case in ipairs({ { "TERM", 15, "301" }, { "INT", 2, "302" } }) do
    local name, signo, secs = case[1], case[2], case[3]
    it("exec forwards SIG" .. name .. " to the command, which ends, and exits 128+" .. signo, function()
      local t = start({ "exec", id, "--", "sh", "-c", "echo started; exec sleep " .. secs })
      assert.are.equal("started", t.p:read("l"))
      assert.are.equal("1\n", h.count_procs(sbx, "[s]leep " .. secs))
      assert(os.execute(("kill -%s %d"):format(name, t.pid)))
      local out, err, code = t.finish()
      assert.are.same({ "", "", 128 + signo }, { out, err, code })
      assert.are.equal("0\n", h.count_procs(sbx, "[s]leep " .. secs))
    end)
  end

  it("exec ends the command when its own stdout is closed (SIGPIPE) and exits 141", function()
    local codef = os.tmpname()
    local out = h.host("{ " .. tool.cmd({ "exec", id, "--", "yes", "304" }) .. " </dev/null 2>/dev/null; echo $? >"
      .. codef .. "; } | head -1")
    assert.are.equal("304\n", out)
    assert.are.equal("141\n", read_file(codef))
    os.remove(codef)
    assert.are.equal("0\n", h.count_procs(sbx, "[y]es 304"))
  end)

  it("exec exits 124 when --timeout expires, as timeout(1), with the command killed", function()
    local out, err, code = run({ "exec", id, "--timeout", "1", "--", "sh", "-c", "echo up; exec sleep 303" },
      nil, "< /dev/null")
    assert.are.equal(124, code, err)
    assert.are.equal("up\n", out)
    assert.truthy(err:find("^lua%-e2b: exec: timed out after 1 s"), err)
    assert.are.equal("0\n", h.count_procs(sbx, "[s]leep 303"))
  end)

  it("exec keeps the command's own exit status and a signal death's 128+N", function()
    local _, _, code = run({ "exec", id, "--", "exit 3" }, nil, "< /dev/null")
    assert.are.equal(3, code)
    _, _, code = run({ "exec", id, "--", "kill -TERM $$" }, nil, "< /dev/null")
    assert.are.equal(143, code)
  end)

  it("exec takes a closed stdin as no input (never a descriptor opened since), and --no-stdin's", function()
    local out, err, code = run({ "exec", id, "--", "cat" }, nil, "<&-")
    assert.are.same({ "", "", 0 }, { out, err, code })
    out, err, code = run({ "exec", id, "--no-stdin", "--", "cat" }, nil, "< /etc/passwd")
    assert.are.same({ "", "", 0 }, { out, err, code })
  end)

  -- A `lua-e2b watch` of dir, started and known to be watching: a sandbox
  -- loop touches dir/probe until the tool prints it (no sleep guesses when
  -- envd's watch begins); the loop is killed before this returns.
  local function watching(dir, extra)
    assert.are.equal(0, select(3, run({ "exec", id, "--", "mkdir -p " .. dir .. "/sub" }, nil, "< /dev/null")))
    local args = { "watch", id, dir }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    local t = start(args)
    local probe = assert(sbx:spawn("while :; do touch " .. dir .. "/probe; sleep 0.2; done"))
    repeat
      local line = t.p:read("l")
      assert(line, "the watch ended before it saw the probe")
    until line:find("probe", 1, true)
    probe:kill()
    probe:close()
    return t
  end

  -- The lines t prints until want(line) is true for all of wanted; -> all lines read.
  local function read_until(t, wanted)
    local seen, lines = {}, {}
    local left = #wanted
    while left > 0 do
      local line = assert(t.p:read("l"), "the watch ended early: " .. table.concat(lines, "\n"))
      lines[#lines + 1] = line
      for i, w in ipairs(wanted) do
        if not seen[i] and line == w then seen[i], left = true, left - 1 end
      end
    end
    return lines
  end

  it("watch prints each change a sandbox command makes as TYPE NAME, escaped, and SIGINT ends it with 130",
    function()
    local t = watching("/home/user/w1", { "--recursive" })
    local out, err, code = run({ "exec", id, "--",
      "printf x > /home/user/w1/a.txt; printf y > \"/home/user/w1/sub/$(printf 'b\\033c')\"" }, nil, "< /dev/null")
    assert.are.same({ "", "", 0 }, { out, err, code })
    local lines = read_until(t, { "create a.txt", "write a.txt", "create sub/b\\x1bc" })
    for _, l in ipairs(lines) do
      assert.truthy(l:find("^%l+ %S+$"), l)   -- TYPE NAME, no raw control byte
    end
    assert(os.execute("kill -INT " .. t.pid))
    out, err, code = t.finish()
    assert.are.equal(130, code, err)
    assert.are.equal("", err)
    assert.is_nil(out:find("[%z\1-\9\11-\31\127]"), out)
  end)

  it("watch --json prints one {type, name} object per line, SIGTERM ends it with 143", function()
    local t = watching("/home/user/w2", { "--json" })
    assert.are.equal(0, select(3, run({ "exec", id, "--", "printf j > /home/user/w2/j.txt" }, nil, "< /dev/null")))
    local cjson = require("cjson")
    local got
    repeat
      local line = assert(t.p:read("l"), "the watch ended early")
      local ev = cjson.decode(line)
      assert.are.equal("string", type(ev.type), line)
      assert.are.equal("string", type(ev.name), line)
      if ev.name == "j.txt" and ev.type == "create" then got = ev end
    until got
    assert.are.same({ type = "create", name = "j.txt" }, got)
    assert(os.execute("kill -TERM " .. t.pid))
    local _, err, code = t.finish()
    assert.are.same({ "", 143 }, { err, code })
  end)

  it("watch exits 0 when --timeout passes, and 1 naming not_found for a missing directory", function()
    assert.are.equal(0, select(3, run({ "exec", id, "--", "mkdir -p /home/user/w3" }, nil, "< /dev/null")))
    local out, err, code = run({ "watch", id, "/home/user/w3", "--timeout", "0.5" }, nil, "< /dev/null")
    assert.are.same({ "", "", 0 }, { out, err, code })
    out, err, code = run({ "watch", id, "/home/user/no-such-dir" }, nil, "< /dev/null")
    assert.are.equal(1, code, err)
    assert.are.equal("", out)
    assert.truthy(err:find("^lua%-e2b: [^\n]*not_found"), err)
  end)

  -- The tool on a terminal of its own, driven by spec/pty_driver.py (a
  -- person at a terminal); returns what the driver saw.
  local function at_terminal(args, script)
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local json = h.host(("python3 spec/pty_driver.py %s %s %s"):format(dir,
      h.shell_quote("env -u LD_PRELOAD " .. tool.cmd(args)), script))
    h.host("rm -rf " .. h.shell_quote(dir))
    local seen = require("cjson").decode(json)
    assert.is_nil(seen.error, (seen.error or "") .. ": " .. tostring(seen.seen))
    return seen
  end

  it("exec --pty is an interactive terminal: raw keys in, output out, resize, the remote exit status", function()
    local seen = at_terminal({ "exec", "--pty", id }, "session")
    assert.is_true(seen.raw, "the terminal is raw while the sandbox's shell has it")
    assert.is_true(seen.size, "the pty starts at the terminal's size (30 rows, 100 columns)\n" .. seen.seen)
    assert.is_true(seen.resized)
    assert.are.equal(7, seen.code, seen.seen)
    assert.is_true(seen.restored, "the terminal's modes are back as they were")
    assert.is_nil(seen.seen:find("\nSLEPT", 1, true), "Ctrl-C reached the sandbox's sleep, not the tool")
  end)

  it("connect ID is exec --pty ID, and a signal to it restores the terminal", function()
    local seen = at_terminal({ "connect", id }, "signalled")
    assert.are.equal(143, seen.code, seen.seen)
    assert.is_true(seen.restored, "the terminal's modes are back as they were")
  end)

  it("exec --pty runs the command given after --, at a terminal or not", function()
    local seen = at_terminal({ "exec", "--pty", id, "--", "echo READY$((6*7)); tty; exit 5" }, "command")
    assert.are.equal(5, seen.code, seen.seen)
    assert.truthy(seen.seen:find("/dev/pts/", 1, true), seen.seen)
    assert.is_true(seen.restored)
    -- no terminal here: input still goes to the command's pty, the size is 80x24
    local out, err, code = run({ "exec", "--pty", id, "--", "stty size; read x; echo got=$x" }, nil,
      "< /etc/hostname")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("24 80\r\n", 1, true), out)
    assert.truthy(out:find("got=" .. read_file("/etc/hostname"):gsub("\n", ""), 1, true), out)
  end)

  -- a local tree: <dir>/a.bin and <dir>/sub/b.txt
  local function local_tree()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. "/sub"))
    write_file(dir .. "/a.bin", "\0a\255")
    write_file(dir .. "/sub/b.txt", "b\n")
    return dir, dir:match("[^/]+$")
  end

  it("cp copies a directory as cp -r: into DST when it is a directory, else as DST", function()
    local dir, base = local_tree()
    local out, err, code = run({ "cp", dir, id .. ":/home/user/" })
    assert.are.same({ "", "", 0 }, { out, err, code })
    assert.are.equal("b\n", assert(sbx.files:read("/home/user/" .. base .. "/sub/b.txt")))
    out, err, code = run({ "cp", dir, id .. ":/home/user/copy" })   -- absent: made as the copy
    assert.are.equal(0, code, err)
    assert.are.equal("\0a\255", assert(sbx.files:read("/home/user/copy/a.bin")))
    out, err, code = run({ "cp", dir, id .. ":/home/user/copy" })   -- present now: goes inside
    assert.are.equal(0, code, err)
    assert.are.equal("b\n", assert(sbx.files:read("/home/user/copy/" .. base .. "/sub/b.txt")))
    -- and back down the same way
    local down = dir .. "-down"
    assert(os.execute("mkdir " .. down))
    out, err, code = run({ "cp", id .. ":/home/user/copy", down })
    assert.are.equal(0, code, err)
    assert.are.equal("\0a\255", read_file(down .. "/copy/a.bin"))
    h.host("rm -rf " .. h.shell_quote(dir) .. " " .. h.shell_quote(down))
  end)

  it("cp into a missing parent directory says which directory is missing", function()
    local dir = local_tree()
    for _, src in ipairs({ dir, dir .. "/a.bin" }) do
      local out, err, code = run({ "cp", src, id .. ":/home/user/absent/x" })
      assert.are.equal(1, code, err)
      assert.are.equal("", out)
      assert.truthy(err:find("^lua%-e2b: cp: cannot copy to " .. id:gsub("%-", "%%-")
        .. ":/home/user/absent/x: directory /home/user/absent does not exist"), err)
    end
    assert.is_nil(sbx.files:stat("/home/user/absent"))
    local out, err, code = run({ "cp", id .. ":/home/user", dir .. "/absent/x" })
    assert.are.equal(1, code, out)
    assert.truthy(err:find("directory " .. dir .. "/absent does not exist", 1, true), err)
    h.host("rm -rf " .. h.shell_quote(dir))
  end)
end)

describe("lua-e2b's killing verbs and list", function()
  local client, tag
  local n = 0
  setup(function()
    client = h.client()
    tag = ("cliu-%d-%d"):format(os.time(), math.random(1, 1e6))
  end)
  teardown(function()
    for _, s in ipairs(client:list{ metadata = { spec = tag } } or {}) do client:destroy(s.sandbox_id) end
  end)

  -- create(extra args) -> logical id, sandbox id (through the tool)
  local function create(extra)
    n = n + 1
    local id = ("%s-k%d"):format(tag, n)
    local args = { "create", "--id", id, "--metadata", "spec=" .. tag }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    local out, err, code = run(args)
    assert.are.equal(0, code, err)
    return id, out:match("^%S+ (%S+)\n$")
  end

  local function alive(id)
    local _, _, code = run({ "info", id })
    return code == 0
  end

  it("reap refuses without --owner or --mine, naming them, and --dry-run kills nothing", function()
    local owner = tag .. "-owner"
    local id, sid = create({ "--owner", owner })
    local out, err, code = run({ "reap" }, { E2B_OWNER = owner })
    assert.are.equal(2, code, err)
    assert.are.equal("", out)
    assert.truthy(err:find("^lua%-e2b: reap: needs whose sandboxes: %-%-owner OWNER, or %-%-mine"), err)
    out, err, code = run({ "reap", "--owner", owner, "--dry-run" })
    assert.are.same({ ("would kill %s (%s)\n"):format(id, sid), "", 0 }, { out, err, code })
    out, err, code = run({ "reap", "--mine", "--dry-run", "--json" }, { E2B_OWNER = owner })
    assert.are.equal(0, code, err)
    assert.are.equal(sid, require("cjson").decode(out)[1].sandbox_id)
    assert.is_true(alive(id))
    out, err, code = run({ "reap", "--mine" }, { E2B_OWNER = owner })
    assert.are.same({ ("killed %s (%s)\n"):format(id, sid), "", 0 }, { out, err, code })
    assert.is_false(alive(id))
  end)

  it("kill --all refuses without a filter and kills only what --metadata and --state select", function()
    local a, sa = create({ "--metadata", "grp=a" })
    local b, sb = create({ "--metadata", "grp=b" })
    local out, err, code = run({ "kill", "--all" })
    assert.are.equal(2, code, err)
    assert.truthy(err:find("^lua%-e2b: kill: %-%-all needs a filter %(%-%-metadata KEY=VALUE, %-%-state"), err)
    out, err, code = run({ "kill", "--all", "--metadata", "spec=" .. tag, "--metadata", "grp=a", "--dry-run" })
    assert.are.same({ ("would kill %s (%s)\n"):format(a, sa), "", 0 }, { out, err, code })
    assert.is_true(alive(a))
    out, err, code = run({ "kill", "--all", "--metadata", "spec=" .. tag, "--metadata", "grp=a" })
    assert.are.same({ ("killed %s (%s)\n"):format(a, sa), "", 0 }, { out, err, code })
    assert.is_false(alive(a))
    assert.are.equal(0, select(3, run({ "pause", b })))
    out, err, code = run({ "kill", "--all", "--metadata", "spec=" .. tag, "--state", "running", "--json" })
    assert.are.same({ "[]\n", "", 0 }, { out, err, code })
    out, err, code = run({ "kill", "--all", "--metadata", "spec=" .. tag, "--state", "paused" })
    assert.are.same({ ("killed %s (%s)\n"):format(b, sb), "", 0 }, { out, err, code })
    assert.is_false(alive(b))
    out, err, code = run({ "kill", "--state", "paused", b })
    assert.are.equal(2, code, out)
    assert.truthy(err:find("kill: --state goes with --all", 1, true), err)
  end)

  it("list --limit N shows the oldest N that match, --template only that template's", function()
    local first = create()
    local second = create()
    local cjson = require("cjson")
    local out, err, code = run({ "list", "--json", "--metadata", "spec=" .. tag, "--limit", "1" })
    assert.are.equal(0, code, err)
    local list = cjson.decode(out)
    assert.are.same({ first }, { list[1].id, list[2] })
    out = run({ "list", "--json", "--metadata", "spec=" .. tag, "--template", "base", "--state", "running" })
    list = cjson.decode(out)
    assert.are.same({ first, second }, { list[1].id, list[2].id })
    out, err, code = run({ "list", "--metadata", "spec=" .. tag, "--template", "no-such-template" })
    assert.are.equal(0, code, err)
    assert.truthy(out:find("^ID%s[^\n]*\n$"), out)
    out, err, code = run({ "list", "--limit", "0" }, { E2B_API_KEY = "bad" })
    assert.are.equal(2, code, out)
    assert.truthy(err:find('list: --limit wants a positive whole number, got "0"', 1, true), err)
  end)

  it("--help names every environment variable the tool reads", function()
    local names = {}
    -- the core's configuration (env_or in client.c), the Lua side's getenv
    for name in read_file("core/src/client.c"):gmatch('env_or%([^,]+,%s*"([%w_]+)"%)') do names[name] = true end
    for _, f in ipairs({ "lua/e2b.lua", "lua/e2b/cli.lua", "lua/e2b/client.lua", "lua/e2b/files.lua" }) do
      for name in read_file(f):gmatch('getenv%("([%w_]+)"%)') do names[name] = true end
    end
    assert.is_true(names.E2B_API_KEY and names.E2B_CA_FILE, "the scan found the core's names")
    -- libcurl's own, the host tools' and the interpreter's
    for _, name in ipairs({ "http_proxy", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSLKEYLOGFILE", "PATH",
                            "LUA_PATH", "LUA_CPATH" }) do
      names[name] = true
    end
    local out, err, code = run({ "--help" })
    assert.are.equal(0, code, err)
    for name in pairs(names) do
      assert.truthy(out:find("%f[%w_]" .. name .. "%f[^%w_]"), name .. " missing from --help")
    end
  end)
end)

-- pred's first true value within 10 s (an assertion fails otherwise).
local function eventually(pred)
  return assert(h.eventually(pred, 10000), "condition not met in 10 s")
end

describe("lua-e2b interrupted", function()
  it("exits 130 without a message on SIGINT while it waits for an answer (any command)", function()
    -- a listener that accepts, says so, and never answers
    local dir = os.tmpname()
    local pid = h.host(("python3 -u -c %s >%s 2>&1 & echo $!"):format(h.shell_quote(table.concat({
      "import socket,time", "s=socket.socket()", "s.bind(('127.0.0.1',0))", "s.listen(1)",
      "print(s.getsockname()[1])", "c=s.accept()", "print('accepted')", "time.sleep(60)" }, "\n")), dir))
      :match("%d+")
    local port = eventually(function() return read_file(dir):match("^(%d+)\n") end)
    local t = start({ "list" }, nil, { E2B_API_URL = "http://127.0.0.1:" .. port })
    eventually(function() return read_file(dir):find("accepted", 1, true) end)
    assert(os.execute("kill -INT " .. t.pid))
    local out, err, code = t.finish()
    assert.are.same({ "", "", 130 }, { out, err, code })
    h.host("kill " .. pid)
    os.remove(dir)
  end)
end)
