-- The lua-e2b command-line tool (bin/lua-e2b, lua/e2b/cli.lua): every verb
-- run as a subprocess against the backend under test, with this process's
-- package paths; the argument parser and the progress bar in-process.
local h = require("spec.helpers")
local cjson = require("cjson")
local cli = require("e2b.cli")

-- A stream for cli.main that keeps what is written.
local function buffer()
  local b = { parts = {} }
  function b:write(...)
    for i = 1, select("#", ...) do self.parts[#self.parts + 1] = tostring((select(i, ...))) end
    return self
  end
  function b:flush() return self end
  function b:text() return table.concat(self.parts) end
  return b
end

local read_file, write_file = h.read_file, h.write_file

local tool = require("spec.cli_tool")
local tool_cmd, run = tool.cmd, tool.run

describe("lua-e2b argument parsing", function()
  it("takes --name value, --name=value, short names, repeats and --", function()
    local defs = { env = { arg = true, many = true, short = "e" }, user = { arg = true }, quiet = {} }
    local opts, pos = cli.parse({ "-e", "A=1", "--env=B=2", "--user", "root", "--quiet", "x", "--", "--env" },
      defs, "t")
    assert.are.same({ "A=1", "B=2" }, opts.env)
    assert.are.equal("root", opts.user)
    assert.is_true(opts.quiet)
    assert.are.same({ "x", "--env" }, pos)
  end)

  it("leaves a command's own options alone after the sandbox id (exec ID [OPTS] CMD ARGS)", function()
    local defs = { user = { arg = true } }
    local opts, pos = cli.parse({ "sbx", "--user", "root", "ls", "-la", "--user" }, defs, "exec", 1)
    assert.are.equal("root", opts.user)
    assert.are.same({ "sbx", "ls", "-la", "--user" }, pos)
  end)

  it("names the problem: unknown option, missing value, value given to a flag", function()
    local defs = { user = { arg = true }, quiet = {} }
    local _, err = cli.parse({ "--nope" }, defs, "t")
    assert.are.equal("t: unknown option --nope", err.message)
    _, err = cli.parse({ "-z" }, defs, "t")
    assert.are.equal("t: unknown option -z", err.message)
    _, err = cli.parse({ "--user" }, defs, "t")
    assert.are.equal("t: --user needs a value", err.message)
    _, err = cli.parse({ "--quiet=1" }, defs, "t")
    assert.are.equal("t: --quiet takes no value", err.message)
  end)

  it("resolves global options before the command and refuses --json where it has no meaning", function()
    local job = assert(cli.resolve({ "--json", "list", "--state", "paused" }))
    assert.are.equal("list", job.command.name)
    assert.is_true(job.opts.json)
    assert.are.same({ "paused" }, job.opts.state)
    local _, err = cli.resolve({ "--json", "exec", "x", "ls" })
    assert.are.equal("exec: --json is not supported", err.message)
    assert.truthy(assert(cli.resolve({ "help", "cp" })).help:find("usage: lua-e2b cp", 1, true))
  end)
end)

if h.live then return end

describe("lua-e2b", function()
  local client, tag
  setup(function()
    client = h.client()
    tag = ("cli-%d-%d"):format(os.time(), math.random(1, 1e6))
  end)
  teardown(function()
    for _, s in ipairs(client:list{ metadata = { spec = tag } } or {}) do client:destroy(s.sandbox_id) end
  end)

  -- create(extra args) -> logical id, sandbox id (through the tool)
  local n = 0
  local function create(extra, env)
    n = n + 1
    local id = ("%s-%d"):format(tag, n)
    local args = { "create", "--id", id, "--metadata", "spec=" .. tag }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    local out, err, code = run(args, env)
    assert.are.equal(0, code, err)
    local got_id, sid = out:match("^(%S+) (%S+)\n$")
    assert.are.equal(id, got_id, out)
    return id, sid
  end

  it("prints --help, CMD --help and --version", function()
    local out, err, code = run({ "--version" })
    assert.are.same({ "lua-e2b " .. h.e2b.VERSION .. "\n", "", 0 }, { out, err, code })
    out, _, code = run({ "--help" })
    assert.are.equal(0, code)
    for _, c in ipairs(cli.COMMANDS) do
      assert.truthy(out:find("\n  " .. c.name .. " ", 1, true), c.name)
    end
    out, _, code = run({ "exec", "--help" })
    assert.are.equal(0, code)
    assert.truthy(out:find("usage: lua-e2b exec ID", 1, true), out)
  end)

  it("exits 2 on usage errors with one line naming the problem, before any request", function()
    local cases = {
      { { "frobnicate" }, 'unknown command "frobnicate"' },
      { {}, "no command given" },
      { { "list", "--bogus" }, "list: unknown option --bogus" },
      { { "list", "--state", "asleep" }, 'list: --state wants "running" or "paused", got "asleep"' },
      { { "create", "--metadata", "novalue" }, 'create: --metadata wants KEY=VALUE, got "novalue"' },
      { { "create", "--timeout", "-3" }, 'create: --timeout wants a positive number of seconds, got "-3"' },
      { { "info" }, "info: needs a sandbox id" },
      { { "info", "a", "b" }, 'info: unexpected argument "b"' },
      { { "exec", "only-id" }, "exec: needs a sandbox id and a command (or --pty)" },
      { { "connect" }, "connect: needs a sandbox id" },
      { { "logs" }, "logs: needs a sandbox id" },
      { { "logs", "x", "--limit", "0" }, 'logs: --limit wants a whole number 1 .. 1000, got "0"' },
      { { "logs", "x", "--limit", "1001" }, 'logs: --limit wants a whole number 1 .. 1000, got "1001"' },
      { { "logs", "x", "--level", "loud" }, 'logs: --level wants debug, info, warn or error, got "loud"' },
      { { "watch", "x" }, "watch: needs a sandbox id and a directory" },
      { { "watch", "x", "/d", "--timeout", "0" }, 'watch: --timeout wants a positive number of seconds, got "0"' },
      { { "watch", "x", "/d", "--follow" }, "watch: unknown option --follow" },
      { { "watch", "x", "/d", "--user" }, "watch: --user needs a value" },
      { { "metrics" }, "metrics: needs a sandbox id" },
      { { "metrics", "x", "--since", "60", "--start", "1" }, "metrics: --since and --start exclude each other" },
      { { "metrics", "x", "--since", "-1" }, 'metrics: --since wants a positive number of seconds, got "-1"' },
      { { "metrics", "x", "--start", "soon" }, 'metrics: --start wants epoch milliseconds (a whole number), got "soon"' },
      { { "metrics", "x", "--start", "10", "--end", "5" }, "metrics: --end is before the window's start" },
      { { "connect", "x", "--pty" }, "connect: unknown option --pty" },
      { { "cp", "a", "b" }, "cp: exactly one of SRC and DST must be remote (ID:/path)" },
      { { "pause", "x", "--mode", "deep" }, 'pause: --mode wants "memory" or "filesystem"' },
    }
    for _, c in ipairs(cases) do
      -- A key that would fail auth proves nothing was sent before the check.
      local out, err, code = run(c[1], { E2B_API_KEY = "bad" })
      assert.are.equal(2, code, err)
      assert.are.equal("", out)
      assert.truthy(err:find("^lua%-e2b: [^\n]*\n$"), err)
      assert.truthy(err:find(c[2], 1, true), err)
    end
  end)

  it("exits 1 with one auth error line for a bad key", function()
    local out, err, code = run({ "list" }, { E2B_API_KEY = "not-the-key" })
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.truthy(err:find("^lua%-e2b: e2b auth error[^\n]*\n$"), err)
    assert.is_nil(err:find("not-the-key", 1, true))
  end)

  it("create -> list (table and --json) -> info by either id -> pause -> resume -> kill", function()
    local id, sid = create({ "--timeout", "120", "--metadata", "team=blue" })
    local out, err, code = run({ "list", "--metadata", "spec=" .. tag, "--metadata", "team=blue" })
    assert.are.equal(0, code, err)
    local header, row = out:match("^([^\n]*)\n([^\n]*)\n$")
    assert.truthy(header and header:find("^ID%s+SANDBOX ID%s+TEMPLATE%s+STATE"), out)
    assert.truthy(row:find("^" .. id:gsub("%-", "%%-") .. "%s+" .. sid .. "%s+base%s+running%s"), out)
    assert.truthy(row:find("spec=" .. tag .. ",team=blue", 1, true), out)
    out, err, code = run({ "list", "--json", "--metadata", "spec=" .. tag, "--state", "running" })
    assert.are.equal(0, code, err)
    local list = cjson.decode(out)
    assert.are.equal(1, #list)
    assert.are.same({ id, sid, "running", "blue" }, { list[1].id, list[1].sandbox_id, list[1].state,
      list[1].metadata.team })
    out = run({ "list", "--json", "--metadata", "spec=" .. tag, "--state", "paused" })
    assert.are.equal("[]\n", out)
    for _, which in ipairs({ id, sid }) do
      out, err, code = run({ "info", which })
      assert.are.equal(0, code, err)
      assert.truthy(out:find("\nsandbox_id%s+" .. sid .. "\n"), out)
      assert.truthy(out:find("\nstate%s+running\n"), out)
    end

    out, err, code = run({ "pause", id })
    assert.are.same({ ("paused %s (%s)\n"):format(id, sid), "", 0 }, { out, err, code })
    out = run({ "info", "--json", sid })
    assert.are.equal("paused", cjson.decode(out).state)
    out, err, code = run({ "pause", sid })   -- pausing a paused sandbox succeeds
    assert.are.equal(0, code, err)
    out, err, code = run({ "resume", id, "--json" })
    assert.are.equal(0, code, err)
    assert.are.equal("running", cjson.decode(out).state)
    out, err, code = run({ "exec", id, "--", "echo back" })
    assert.are.same({ "back\n", "", 0 }, { out, err, code })

    out, err, code = run({ "kill", sid })
    assert.are.same({ ("killed %s (%s)\n"):format(id, sid), "", 0 }, { out, err, code })
    out, err, code = run({ "info", id })
    assert.are.equal(1, code)
    assert.truthy(err:find("^lua%-e2b: e2b not_found error"), err)
    -- a gone id succeeds, as destroy does, and says nothing was killed
    out, err, code = run({ "kill", id })
    assert.are.same({ ("already gone: %s (nothing to kill)\n"):format(id), "", 0 }, { out, err, code })
  end)

  it("logs shows the sandbox's own log lines, oldest first, as text or --json, by either id", function()
    local id, sid = create()
    local out, err, code = run({ "exec", id, "--", "exit 3" }, nil, "< /dev/null")
    assert.are.equal(3, code, err)
    out, err, code = run({ "logs", id })
    assert.are.equal(0, code, err)
    local first = out:match("^[^\n]*")
    assert.truthy(first:find("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ info ", 1), out)
    assert.truthy(first:find("sandbox created", 1, true), out)
    out, err, code = run({ "logs", sid, "--json" })
    assert.are.equal(0, code, err)
    local lines = cjson.decode(out)
    assert.is_true(#lines >= 2, out)
    for _, l in ipairs(lines) do
      assert.are.equal("number", type(l.timestamp))
      assert.truthy(({ debug = 1, info = 1, warn = 1, error = 1 })[l.level], l.level)
      assert.are.equal("string", type(l.message))
      assert.are.equal("table", type(l.fields))
    end
    -- --limit keeps the oldest N; --level the lines at or above a level
    out = run({ "logs", id, "--json", "--limit", "1" })
    assert.are.same({ lines[1] }, cjson.decode(out))
    out = run({ "logs", id, "--json", "--level", "error" })
    for _, l in ipairs(cjson.decode(out)) do assert.are.equal("error", l.level) end
    -- what the sandbox wrote is shown, never obeyed: control bytes come out escaped
    -- (e2b-local logs the program a process runs: here one named with ESC and BEL)
    _, err, code = run({ "exec", id, "--", "ln -s /bin/true \"/tmp/$(printf '\\033]0;x\\007')\"" },
      nil, "< /dev/null")
    assert.are.equal(0, code, err)
    _, err, code = run({ "exec", id, "--", "/tmp/\27]0;x\7", "an-argv" }, nil, "< /dev/null")
    assert.are.equal(0, code, err)
    out = run({ "logs", id })
    assert.truthy(out:find("\\x1b]0;x\\x07", 1, true), out)
    assert.is_nil(out:find("[%z\1-\9\11-\31\127]"), out)
    out, err, code = run({ "logs", "no-such-sandbox-" .. tag })
    assert.are.equal(1, code, out)
    assert.truthy(err:find("not_found", 1, true), err)
  end)

  it("metrics shows a running sandbox's samples as a table, and --json parses to them", function()
    local id, sid = create()
    local out, err, code = run({ "metrics", id })
    assert.are.equal(0, code, err)
    local header, rows = out:match("^([^\n]*)\n(.*)$")
    assert.truthy(header:find("^TIME%s+CPU%s+CPUS%s+MEMORY USED / TOTAL%s+DISK USED / TOTAL$"), out)
    assert.truthy(rows:find("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ%s+[%d.]+%%%s+%d+%s+[%d.]+ %a+ / [%d.]+ %a+%s+"), out)
    local since = os.time() * 1000 - 3600 * 1000
    out, err, code = run({ "metrics", sid, "--json", "--start", tostring(since) })
    assert.are.equal(0, code, err)
    local samples = cjson.decode(out)
    assert.is_true(#samples >= 1, out)
    for _, m in ipairs(samples) do
      for _, k in ipairs({ "timestamp", "cpu_used_pct", "cpu_count", "mem_used", "mem_total", "disk_used",
                           "disk_total" }) do
        assert.are.equal("number", type(m[k]), k)
      end
      assert.is_true(m.mem_used <= m.mem_total and m.timestamp >= since - 1000, out)
    end
    out, err, code = run({ "metrics", id, "--json", "--since", "3600" })
    assert.are.equal(0, code, err)
    assert.is_true(#cjson.decode(out) >= 1, out)
    out, err, code = run({ "metrics", "no-such-sandbox-" .. tag })
    assert.are.equal(1, code, out)
    assert.truthy(err:find("not_found", 1, true), err)
  end)

  it("exec streams stdout and stderr byte-exact as they arrive and exits with the command's code", function()
    local id = create()
    local out, err, code = run({ "exec", id, "--", "printf 'o\\0\\377'; printf 'e\\0' >&2; exit 7" })
    assert.are.same({ "o\0\255", "e\0", 7 }, { out, err, code })
    -- An argv (several words) runs without a shell; options may sit between id and command.
    out, err, code = run({ "exec", id, "--user", "root", "--cwd", "/tmp", "-e", "A=x y", "sh", "-c",
      'id -un; pwd; printf "%s\\n" "$A"' })
    assert.are.same({ "root\n/tmp\nx y\n", "", 0 }, { out, err, code })
    -- Streaming: the first line is read before the command is allowed to
    -- go on; output held until exit would make it print "no-go".
    local errf = os.tmpname()
    local p = assert(io.popen("env -u LD_PRELOAD sh -c " .. h.shell_quote(tool_cmd({ "exec", id, "--",
      "echo first; for i in $(seq 100); do [ -e /tmp/go ] && echo saw-go && exit 0; sleep 0.1; done; echo no-go"
    }) .. " 2>" .. errf), "r"))
    assert.are.equal("first", p:read("l"))
    assert(client:resume(id).files:write("/tmp/go", ""))
    assert.are.equal("saw-go\n", p:read("a"))
    p:close()
    os.remove(errf)
  end)

  it("cp copies files up and down byte-exact (NUL bytes, several chunks) and directories both ways", function()
    local id, sid = create()
    local data = h.all_bytes():rep(5000) .. "\0tail"   -- 1.28 MB: more than one 1 MiB chunk
    local src, back = os.tmpname(), os.tmpname()
    write_file(src, data)
    local out, err, code = run({ "cp", src, id .. ":/home/user/data.bin" })
    assert.are.same({ "", "", 0 }, { out, err, code })   -- stderr is no terminal: no progress bar
    assert.are.equal(data, assert(client:resume(sid).files:read("/home/user/data.bin")))
    out, err, code = run({ "cp", "--json", sid .. ":/home/user/data.bin", back })
    assert.are.equal(0, code, err)
    assert.are.equal(#data, cjson.decode(out).bytes)
    assert.are.equal(data, read_file(back))
    -- into an existing remote directory, and down to stdout
    out, err, code = run({ "cp", src, id .. ":/home/user/" })
    assert.are.equal(0, code, err)
    out, err, code = run({ "cp", id .. ":/home/user/" .. src:match("[^/]+$"), "-" })
    assert.are.equal(0, code, err)
    assert.are.equal(data, out)

    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. "/sub"))
    write_file(dir .. "/a.bin", "\0a\255")
    write_file(dir .. "/sub/b.txt", "b\n")
    out, err, code = run({ "cp", dir, id .. ":/home/user/tree" })
    assert.are.equal(0, code, err)
    assert.are.equal("b\n", assert(client:resume(id).files:read("/home/user/tree/sub/b.txt")))
    local down = dir .. "-down"
    out, err, code = run({ "cp", id .. ":/home/user/tree", down })
    assert.are.equal(0, code, err)
    assert.are.equal("\0a\255", read_file(down .. "/a.bin"))
    assert.are.equal("b\n", read_file(down .. "/sub/b.txt"))
    h.host("rm -rf " .. h.shell_quote(dir) .. " " .. h.shell_quote(down))
    os.remove(src)
    os.remove(back)

    out, err, code = run({ "cp", id .. ":/home/user/absent", back })
    assert.are.equal(1, code)
    assert.truthy(err:find("^lua%-e2b: e2b not_found error"), err)
    assert.is_nil(io.open(back .. ".lua-e2b-part"))
  end)

  it("cp draws a progress bar on a terminal stderr, and not with --quiet", function()
    local id = create()
    local src = os.tmpname()
    write_file(src, ("x"):rep(3 * 1024 * 1024))
    local out, errs = buffer(), buffer()
    local tty = function(name) return name == "stderr" end
    assert.are.equal(0, cli.main({ "cp", src, id .. ":/home/user/big" }, { stdout = out, stderr = errs, isatty = tty }))
    local bar = errs:text()
    assert.truthy(bar:find("^\rupload " .. src:match("[^/]+$") .. " %[#*%-*%]"), bar)
    assert.truthy(bar:find("100%% 3%.0 MiB/3%.0 MiB\27%[K\n$"), bar)
    errs = buffer()
    assert.are.equal(0, cli.main({ "cp", id .. ":/home/user/big", src }, { stdout = out, stderr = errs, isatty = tty }))
    assert.truthy(errs:text():find("^\rdownload big %[.*100%% 3%.0 MiB/3%.0 MiB\27%[K\n$"), errs:text())
    errs = buffer()
    assert.are.equal(0, cli.main({ "cp", "-q", src, id .. ":/home/user/big" }, { stdout = out, stderr = errs, isatty = tty }))
    assert.are.same({ "", "" }, { errs:text(), out:text() })
    -- "-" is the stdout it was given (any stream with write, not only a file)
    assert.are.equal(0, cli.main({ "cp", id .. ":/home/user/big", "-" }, { stdout = out, stderr = errs }))
    assert.are.equal(("x"):rep(3 * 1024 * 1024), out:text())
    os.remove(src)
  end)

  it("reap finds nothing, then an orphan of the given owner (and E2B_OWNER's with --mine)", function()
    local owner = tag .. "-owner"
    local out, err, code = run({ "reap", "--owner", owner })
    assert.are.same({ ("nothing to reap for owner %s\n"):format(owner), "", 0 }, { out, err, code })
    local id, sid = create({ "--owner", owner })
    local id2 = create({}, { E2B_OWNER = owner .. "-env" })
    out, err, code = run({ "reap", "--json", "--owner", owner, "--older-than", "0" })
    assert.are.equal(0, code, err)
    local killed = cjson.decode(out)
    assert.are.same({ { id, sid } }, { { killed[1].id, killed[1].sandbox_id } })
    assert.are.equal(1, #killed)
    out, err, code = run({ "reap", "--mine" }, { E2B_OWNER = owner .. "-env" })
    assert.are.equal(0, code, err)
    assert.truthy(out:find("^killed " .. id2:gsub("%-", "%%-") .. " %("), out)
    for _, s in ipairs(cjson.decode((run({ "list", "--json", "--metadata", "spec=" .. tag })))) do
      assert.is_true(s.id ~= id and s.id ~= id2, s.id)
    end
  end)

  it("doctor prints the configuration and what the backend supports, never the key", function()
    local key = assert(os.getenv("E2B_API_KEY"))
    local out, err, code = run({ "doctor" })
    assert.are.equal(0, code, err)
    assert.truthy(out:find("\napi_url%s+" .. os.getenv("E2B_API_URL"):gsub("%p", "%%%0") .. "\n"), out)
    assert.truthy(out:find("\nprobe%s+ok\n"), out)
    assert.truthy(out:find("\nenvd%s+yes\n"), out)
    -- every feature the report has is named, "unknown" when it could not tell
    for _, f in ipairs({ "auth", "envd", "stdin_close", "group_signals", "volumes", "snapshots",
                         "network_update", "pagination" }) do
      assert.truthy(out:find("\n" .. f .. "%s+[%w(]"), f .. " missing from:\n" .. out)
    end
    assert.is_nil(out:find(key, 1, true))
    out, err, code = run({ "doctor", "--json" })
    assert.are.equal(0, code, err)
    local report = cjson.decode(out)
    assert.are.same({ "set", "ok", true }, { report.api_key, report.probe, report.capabilities.envd })
    out, err, code = run({ "doctor" }, { E2B_API_KEY = "wrong" })
    assert.are.equal(1, code)
    assert.truthy(out:find("\nprobe%s+e2b auth error"), out)
    assert.truthy(err:find("^lua%-e2b: e2b auth error[^\n]*\n$"), err)
  end)
end)
