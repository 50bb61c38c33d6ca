-- Commands: sbx:run and sbx:spawn, byte-exact both ways.
local h = require("spec.helpers")

describe("commands", function()
  local sbx
  setup(function() sbx = h.sandbox() end)
  teardown(h.cleanup)

  describe("run", function()
    it("returns stdout, stderr and the exit code; a non-zero exit is not an error", function()
      local r = assert(sbx:run("echo out; echo err >&2; exit 7"))
      assert.are.equal("out\n", r.stdout)
      assert.are.equal("err\n", r.stderr)
      assert.are.equal(7, r.exit_code)
      assert.is_false(r.ok)
      r = assert(sbx:run("true"))
      assert.is_true(r.ok)
      assert.are.equal(0, r.exit_code)
      assert.are.equal("", r.stdout)
    end)

    it("runs a shell string through bash and an argv array without a shell", function()
      local r = assert(sbx:run("echo $((6 * 7)) | tr 4 X"))
      assert.are.equal("X2\n", r.stdout)
      r = assert(sbx:run({ "printf", "%s|%s", "$HOME", "a b" }))
      assert.are.equal("$HOME|a b", r.stdout)
    end)

    it("applies cwd and env", function()
      local r = assert(sbx:run('printf "%s %s" "$PWD" "$MY_VAR"', { cwd = "/tmp", env = { MY_VAR = "v=1 2" } }))
      assert.are.equal("/tmp v=1 2", r.stdout)
    end)

    it("names a missing cwd in the error, kept or not, run or spawn, as envd does", function()
      for _, keep in ipairs({ true, false }) do
        local r, err = sbx:run("true", { cwd = "/home/user/no/such/dir", keep_output = keep })
        assert.is_nil(r)
        assert.are.equal("invalid_argument", err.kind)
        assert.truthy(err.message:find("cwd '/home/user/no/such/dir' does not exist", 1, true), err.message)
        local p
        p, err = sbx:spawn("true", { cwd = "/home/user/no/such/dir", keep_output = keep })
        assert.is_nil(p)
        assert.truthy(err.message:find("/home/user/no/such/dir", 1, true), err.message)
      end
    end)

    it("keeps env values out of the process's command line", function()
      local secret = "s3cret-value-" .. h.core.uuid4()
      local r = assert(sbx:run("cat /proc/$$/cmdline | tr '\\0' ' '; echo; ps -eo args", { env = { TOKEN = secret } }))
      assert.is_nil(r.stdout:find(secret, 1, true))
    end)

    it("delivers stdin bytes, then EOF", function()
      local bytes = h.all_bytes() .. "\0tail without newline"
      local r = assert(sbx:run("cat", { stdin = bytes }))
      assert.are.equal(bytes, r.stdout)
      r = assert(sbx:run("wc -c", { stdin = "" }))
      assert.are.equal("0\n", r.stdout)
    end)

    it("carries every byte value, NUL, invalid UTF-8 and a last line without newline", function()
      local r = assert(sbx:run([[printf 'a\000b\377\376c'; printf 'no newline' >&2]]))
      assert.are.equal("a\0b\255\254c", r.stdout)
      assert.are.equal("no newline", r.stderr)
      assert(sbx.files:write("/tmp/all.bin", h.all_bytes()))
      r = assert(sbx:run("cat /tmp/all.bin; cat /tmp/all.bin >&2"))
      assert.are.equal(h.all_bytes(), r.stdout)
      assert.are.equal(h.all_bytes(), r.stderr)
    end)

    it("streams output to on_stdout and on_stderr as it arrives", function()
      local seen_out, seen_err, one_at = {}, {}, nil
      local r = assert(sbx:run("echo one; sleep 1; echo two >&2", {
        on_stdout = function(c)
          seen_out[#seen_out + 1] = c
          one_at = one_at or h.now_ms()
        end,
        on_stderr = function(c) seen_err[#seen_err + 1] = c end,
      }))
      local done_at = h.now_ms()
      assert.are.equal("one\n", table.concat(seen_out))
      assert.are.equal("two\n", table.concat(seen_err))
      -- "one" reached its callback while the command still slept, not at its end
      assert.is_true(done_at - one_at >= 500, ("one came %d ms before the end"):format(done_at - one_at))
    end)

    it("keeps output for user commands after a root command made the scratch directory", function()
      local s2 = h.sandbox()
      assert.are.equal("r\n", assert(s2:run("echo r", { user = "root" })).stdout)
      local r = assert(s2:run("echo u", { user = "user" }))
      assert.are.equal(0, r.exit_code, r.stderr)
      assert.are.equal("u\n", r.stdout)
      assert(s2:kill())
    end)

    it("hands out output line by line per stream, joining lines split across chunks", function()
      local proc = assert(sbx:spawn("printf 'a1\\na'; sleep 0.2; printf '2\\n'; printf 'e1\\n' >&2; printf 'tail'"))
      local got = {}
      for line, stream in proc:lines({ timeout_ms = 10000 }) do got[#got + 1] = stream .. ":" .. line end
      proc:close()
      table.sort(got)
      assert.are.same({ "stderr:e1", "stdout:a1", "stdout:a2", "stdout:tail" }, got)
    end)

    it("leaves a stream with a callback to the caller unless asked to keep it", function()
      local n = 0
      local big = "head -c 5000000 /dev/zero; echo err >&2"
      local r = assert(sbx:run(big, { on_stdout = function(c) n = n + #c end }))
      assert.are.equal(5000000, n)
      assert.are.equal("", r.stdout)
      assert.are.equal("err\n", r.stderr)
      r = assert(sbx:run("echo kept", { on_stdout = function() end, keep = "all" }))
      assert.are.equal("kept\n", r.stdout)
      r = assert(sbx:run("echo gone; echo gone2 >&2", { keep = "none" }))
      assert.are.equal("", r.stdout .. r.stderr)
    end)

    it("kills the process group on timeout_ms and returns kind timeout with the output so far", function()
      local t0 = h.now_ms()
      local r, err = sbx:run("echo started; (sleep 30; echo child) & sleep 30", { timeout_ms = 700 })
      assert.is_nil(r)
      assert.are.equal("timeout", err.kind)
      assert.are.equal("started\n", err.stdout)
      assert.is_true(h.now_ms() - t0 < 5000)
      assert.are.equal("0\n", h.count_procs(sbx, "[s]leep 30"))
    end)

    it("refuses arguments that are not valid UTF-8 before any request", function()
      local r, err = sbx:run({ "echo", "\255" })
      assert.is_nil(r)
      assert.are.equal("invalid_argument", err.kind)
      r, err = sbx:run("echo hi", { bogus = 1 })
      assert.are.equal("invalid_argument", err.kind)
      assert.are.equal("bogus", err.field)
      r, err = sbx:run("echo hi", { timeout_ms = -5 })
      assert.are.equal("timeout_ms", err.field)
    end)

    it("refuses a kept command that does not exist as envd before 0.5.4 did (no wrapper message)", function()
      for _, cmd in ipairs({ { "/no/such/bin" }, { "no-such-command-xyz" } }) do
        local r, err = sbx:run(cmd, { keep_output = true })
        assert.is_nil(r)
        assert.are.equal("invalid_argument", err.kind, tostring(err))
        assert.truthy(err.message:find("failed to start process", 1, true), tostring(err))
        assert.is_nil(err.message:find("e2b-proc", 1, true), tostring(err))
      end
    end)

    it("runs an unkept command that does not exist as E2B's envd (0.5.4 on) does: it exits 127, nice saying why", function()
      for _, name in ipairs({ "/no/such/bin", "no-such-command-xyz" }) do
        local r = assert(sbx:run({ name }, { keep_output = false }))
        assert.are.equal(127, r.exit_code)
        assert.are.equal("/usr/bin/nice: '" .. name .. "': No such file or directory\n", r.stderr)
      end
    end)

    it("runs a kept command string as bash -l -c runs it unkept: $0, $#, umask, line numbers", function()
      local cmd = 'echo "$0 $#"; umask; echo ${__p-none}\nno-such-command-xyz'
      local kept = assert(sbx:run(cmd))
      local direct = assert(sbx:run(cmd, { keep_output = false }))
      assert.are.equal(direct.stdout, kept.stdout)
      assert.are.equal(direct.stderr, kept.stderr)
      assert.are.equal(direct.exit_code, kept.exit_code)
      local argv = assert(sbx:run({ "sh", "-c", "umask" }))
      assert.are.equal(assert(sbx:run({ "sh", "-c", "umask" }, { keep_output = false })).stdout, argv.stdout)
    end)

    it("runs a kept command with no helper process beside it", function()
      local proc = assert(sbx:spawn({ "sleep", "39" }))
      assert.is_true(h.eventually(function() return h.count_procs(sbx, "^sleep 39$") == "1\n" end))
      -- the command's own process and its parent (the wrapper, or envd) are
      -- all it adds: nothing else of the sandbox's user has it for parent
      local pid = assert(sbx:run("pgrep -x -f 'sleep 39'")).stdout:match("%d+")
      local ps = assert(sbx:run({ "ps", "-eo", "pid=,ppid=,args=" })).stdout
      proc:close()
      local parent
      for line in ps:gmatch("[^\n]+") do
        local p, pp = line:match("^%s*(%d+)%s+(%d+)")
        if p == pid then parent = pp end
      end
      assert.is_string(parent, ps)
      for line in ps:gmatch("[^\n]+") do
        local p, pp, args = line:match("^%s*(%d+)%s+(%d+)%s+(.*)$")
        if pp == parent and p ~= pid and not args:find("^ps ") then
          error("a process beside the command: " .. line .. "\n" .. ps)
        end
      end
    end)

    it("runs as user by default and as root when asked", function()
      assert.are.equal("user\n", assert(sbx:run("whoami")).stdout)
      assert.are.equal("root\n", assert(sbx:run("whoami", { user = "root" })).stdout)
    end)
  end)

  describe("spawn", function()
    -- kept (the default), kept and parked at once, not kept, not kept with env_mode "replace"
    local paths = {
      { name = "kept" }, { name = "park", park = true }, { name = "unkept", keep_output = false },
      { name = "unkept replace", keep_output = false, env_mode = "replace" },
    }

    -- Every path lua-e2b wraps; a plain unkept argv is envd's own, and
    -- envd 0.5.4 on starts it and has it exit 127 (the spec above).
    it("fails a missing or non-executable program at spawn with one kind and message on every wrapped path", function()
      assert(sbx:run("printf x > /tmp/not-exec; chmod 644 /tmp/not-exec"))
      local cases = {
        { "no-such-command-xyz", "failed to start process 'no-such-command-xyz': No such file or directory" },
        { "/no/such/bin", "failed to start process '/no/such/bin': No such file or directory" },
        { "/tmp/not-exec", "failed to start process '/tmp/not-exec': Permission denied" },
      }
      for _, path in ipairs(paths) do
        for _, case in ipairs(path.name == "unkept" and {} or cases) do
          local opts = { keep_output = path.keep_output, park = path.park, env_mode = path.env_mode }
          local p, err = sbx:spawn({ case[1], "arg" }, opts)
          assert.is_nil(p, path.name .. " " .. case[1])
          assert.are.equal("invalid_argument", err.kind, path.name .. ": " .. tostring(err))
          assert.truthy(err.message:find(case[2], 1, true), path.name .. ": " .. tostring(err))
          assert.is_nil(err.message:find("e2b-proc", 1, true), tostring(err))
          local r
          r, err = sbx:run({ case[1] }, { keep_output = path.keep_output, env_mode = path.env_mode })
          assert.is_nil(r)
          assert.are.equal(case[2], err.message:match("failed to start process .*$"), path.name)
        end
      end
    end)

    it("runs a shell string naming a missing program as bash does: exit 127 and bash's message", function()
      for _, path in ipairs(paths) do
        local r = assert(sbx:run("no-such-command-xyz", { keep_output = path.keep_output, env_mode = path.env_mode }))
        assert.are.equal(127, r.exit_code, path.name)
        assert.are.equal("", r.stdout, path.name)
        assert.truthy(r.stderr:find("no-such-command-xyz: command not found", 1, true), path.name .. r.stderr)
        local p = assert(sbx:spawn("no-such-command-xyz", { keep_output = path.keep_output, park = path.park,
                                                           env_mode = path.env_mode }))
        assert.are.equal(127, assert(p:wait()).exit_code, path.name)
      end
    end)

    it("reads output chunks with their stream, then nil at the end", function()
      local proc = assert(sbx:spawn("echo a; sleep 0.1; echo b >&2"))
      assert.is_number(proc.pid)
      local got = { stdout = "", stderr = "" }
      while true do
        local data, stream = proc:read(5000)
        if data == nil then
          assert.is_nil(stream)
          break
        end
        got[stream] = got[stream] .. data
      end
      assert.are.same({ stdout = "a\n", stderr = "b\n" }, got)
      local res = assert(proc:wait())
      assert.are.equal(0, res.exit_code)
      assert.are.equal("", res.stdout)
      proc:close()
    end)

    it("writes stdin and closes it when kept open", function()
      local proc = assert(sbx:spawn("cat; echo closed", { stdin = true }))
      assert(proc:write("one\n"))
      assert.are.equal("one\n", (proc:read(5000)))
      assert(proc:write("\0\255two"))
      assert(proc:close_stdin())
      local res = assert(proc:wait(5000))
      assert.are.equal("\0\255twoclosed\n", res.stdout)
      proc:close()
    end)

    it("hands a spawned command's chunks to its callbacks in wait and keeps every stream, after what read() took", function()
      local seen = {}
      local proc = assert(sbx:spawn("printf 'first\\n'; sleep 0.3; printf 'out\\n'; printf 'err\\n' >&2",
        { on_stderr = function(c) seen[#seen + 1] = c end }))
      assert.are.equal("first\n", (proc:read(5000)))
      local res = assert(proc:wait(10000))
      assert.are.equal("out\n", res.stdout)
      assert.are.equal("err\n", res.stderr)
      assert.are.equal("err\n", table.concat(seen))
      assert.are.same({ stdout = 10, stderr = 4 }, { stdout = proc:offsets().stdout, stderr = proc:offsets().stderr })
      proc:close()
    end)

    it("fails a spawned command's wait past 64 MiB of one stream, as run does", function()
      local proc = assert(sbx:spawn("head -c 67108865 /dev/zero", { keep_output = false }))
      local res, err = proc:wait(60000)
      assert.is_nil(res)
      local r, rerr = sbx:run("head -c 67108865 /dev/zero", { keep_output = false })
      assert.is_nil(r)
      assert.are.equal(rerr.kind, err.kind)
      assert.truthy(err.message:find("max_output", 1, true), err.message)
      proc:close()
    end)

    it("times out a read when nothing comes, leaving the process running", function()
      local proc = assert(sbx:spawn("sleep 5"))
      local data, err = proc:read(200)
      assert.is_nil(data)
      assert.are.equal("timeout", err.kind)
      local _, werr = proc:wait(100)
      assert.are.equal("timeout", werr.kind)
      assert(proc:kill())
      local res = assert(proc:wait(5000))
      assert.are_not.equal(0, res.exit_code)
      proc:close()
    end)

    it("kill() succeeds only once the group is gone, and could-not-look is an error, not gone", function()
      local proc = assert(sbx:spawn("sleep 30"))
      if not h.live then
        -- envd cannot list processes: the kill cannot know, so it says so
        h.faults({ { match = "POST envd:/process.Process/List", action = "status", status = 503, count = 1000 } })
        local ok, err = proc:kill()
        h.faults()
        assert.is_nil(ok)
        assert.are_not.equal("not_found", err.kind)
      end
      assert(proc:kill())
      assert.are.equal("0\n", h.count_procs(sbx, "[s]leep 30"))
      proc:close()
    end)

    it("counts consumed bytes in offsets()", function()
      local proc = assert(sbx:spawn("printf 12345; printf ab >&2"))
      local res = assert(proc:wait(5000))
      assert.are.equal("12345", res.stdout)
      assert.are.same({ stdout = 5, stderr = 2, pty = 0 }, proc:offsets())
      proc:close()
    end)

    it("signals the pid of an unkept command, and kills a kept one's group", function()
      -- each command's trap is set once its own sleep runs
      local function cmd(n) return "trap 'echo got-term; exit 3' TERM; sleep " .. n .. " & wait" end
      local function trapped(n) return h.count_procs(sbx, "^sleep " .. n .. "$") == "1\n" end
      local plain = assert(sbx:spawn(cmd(37), { tag = "sig", keep_output = false }))
      assert.is_true(h.eventually(function() return trapped(37) end))
      assert(plain:signal("TERM"))
      local res = assert(plain:wait(5000))
      assert.are.same({ 3, "got-term\n" }, { res.exit_code, res.stdout })
      plain:close()
      -- Kept, TERM is the wrapper's: it kills the command's group (envd
      -- signals one pid, the wrapper's).
      local proc = assert(sbx:spawn(cmd(38), { tag = "sig" }))
      assert.is_true(h.eventually(function() return trapped(38) end))
      assert(proc:signal("TERM"))
      res = assert(proc:wait(5000))
      assert.are.same({ -1, "signal: killed", "" }, { res.exit_code, res.status, res.stdout })
      proc:close()
      local _, err = proc:signal("HUP")
      assert.are.equal("invalid_argument", err.kind)
    end)

    it("kills its process group on close unless detached", function()
      local a = assert(sbx:spawn("sleep 41"))
      local b = assert(sbx:spawn("sleep 42"))
      b:detach()
      a:close()
      b:close()
      assert.is_true(h.eventually(function() return h.count_procs(sbx, "^sleep 41$") == "0\n" end))
      assert.are.equal("1\n", h.count_procs(sbx, "^sleep 42$"))
      assert(sbx:run("pkill -f 'sleep 42'", { user = "root" }))
    end)

    it("lists running processes with their tags", function()
      local proc = assert(sbx:spawn({ "sleep", "30" }, { tag = "sleeper" }))
      local list = assert(sbx:processes())
      local found
      for _, p in ipairs(list) do
        if p.pid == proc.pid then found = p end
      end
      assert.truthy(found)
      assert.are.equal("sleeper", found.tag)
      assert.are.equal("sleep", found.cmd)
      assert.are.same({ "30" }, found.args)
      assert.is_true(found.kept)
      proc:close()
    end)
  end)
end)
