-- What real envd does with processes, and that lua-e2b works with it: each
-- rule was read in envd's source (packages/envd/internal/services/process).
-- The client half runs live too (E2B_LIVE=1); the raw envd calls check that
-- e2b-local answers as envd does, so they run against e2b-local only.
local h = require("spec.helpers")
local cjson = require("cjson")

-- A raw Connect call to e2b-local's envd: HTTP status and decoded body.
local function envd_call(sbx, method, body)
  local out = h.host(("curl -s -w '\\n%%{http_code}' -X POST -H 'E2b-Sandbox-Id: %s' "
    .. "-H 'Content-Type: application/json' --data %s '%s/process.Process/%s'")
    :format(sbx.sandbox_id, h.shell_quote(cjson.encode(body)), os.getenv("E2B_SANDBOX_URL"), method))
  local text, code = out:match("^(.*)\n(%d+)$")
  return tonumber(code), text ~= "" and cjson.decode(text) or {}
end

describe("envd compatibility", function()
  local sbx, open -- open: no access token, for the raw envd calls
  setup(function()
    sbx = h.sandbox({})
    if not h.live then open = h.sandbox({ secure = false }) end
  end)
  teardown(h.cleanup)

  describe("only SIGKILL and SIGTERM exist", function()
    it("refuses any other signal before sending it, saying why", function()
      local proc = assert(sbx:spawn("sleep 30"))
      for _, name in ipairs({ "INT", "HUP", "USR1" }) do
        local ok, err = proc:signal(name)
        assert.is_nil(ok)
        assert.are.equal("invalid_argument", err.kind)
        assert.truthy(err.message:find("envd delivers no other signal", 1, true), err.message)
      end
      assert(proc:kill())
      proc:close()
    end)

    if not h.live then
      it("e2b-local answers any other signal unimplemented, as envd", function()
        local proc = assert(open:spawn("sleep 30", { keep_output = false }))
        local sel = { pid = proc.pid }
        local code, body = envd_call(open, "SendSignal", { process = sel, signal = 2 })
        assert.are.same({ 501, "unimplemented" }, { code, body.code })
        code, body = envd_call(open, "SendSignal", { process = { pid = 999999 }, signal = 2 })
        assert.are.same({ 404, "not_found" }, { code, body.code }) -- the process is looked up first
        code = envd_call(open, "SendSignal", { process = sel, signal = "SIGNAL_SIGINT" })
        assert.are.equal(400, code) -- no such name in envd's Signal enum
        assert(proc:kill())
        proc:close()
      end)
    end
  end)

  describe("lookup by tag is unreliable", function()
    -- envd's getProcess stops at the first tagged process whose tag differs,
    -- so with two tagged processes one of them can be missed by tag.
    it("addresses processes by pid: input, close, attach and kill reach each of two tagged ones", function()
      local a = assert(sbx:spawn("cat", { tag = "compat-a", stdin = true }))
      local b = assert(sbx:spawn("cat", { tag = "compat-b", stdin = true }))
      for _, p in ipairs({ a, b }) do
        assert(p:write(p.tag .. "\n"))
        assert.are.equal(p.tag .. "\n", (assert(p:read(5000))))
        local again = assert(sbx:attach(p.tag, { offsets = p:offsets() }))
        assert(p:close_stdin())
        assert.are.same({ 0, "" }, (function(r) return { r.exit_code, r.stdout } end)(assert(again:wait(5000))))
        again:close()
        p:close()
      end
      local c = assert(sbx:spawn("sleep 30", { tag = "compat-c" }))
      local d = assert(sbx:spawn("sleep 30", { tag = "compat-d" }))
      assert.is_true(assert(c:kill()))
      assert.is_true(assert(d:kill()))
      c:close(); d:close()
    end)

    if not h.live then
      it("e2b-local misses a tag as envd's walk does, and finds every pid", function()
        local a = assert(open:spawn("cat; sleep 30", { tag = "walk-a", keep_output = false, stdin = true }))
        local b = assert(open:spawn("cat; sleep 30", { tag = "walk-b", keep_output = false, stdin = true }))
        local found = 0
        for _, sel in ipairs({ { tag = "walk-a" }, { tag = "walk-b" } }) do
          if envd_call(open, "SendInput", { process = sel, input = { stdin = "" } }) == 200 then found = found + 1 end
        end
        assert.are.equal(1, found) -- newest first here: the older one is hidden
        for _, p in ipairs({ a, b }) do
          assert.are.equal(200, (envd_call(open, "SendInput", { process = { pid = p.pid }, input = { stdin = "" } })))
        end
        assert(a:kill()); assert(b:kill())
        a:close(); b:close()
      end)
    end
  end)

  describe("signals reach one pid, not a group", function()
    -- envd starts a command in its own process group and signals only its
    -- pid: a kept command's wrapper must end the command's group itself.

    -- The processes running in the sandbox whose command line matches pattern.
    local function running(pattern)
      local r = assert(sbx:run(("pgrep -f -- '%s' || true"):format(pattern), { keep_output = false }))
      return r.stdout
    end

    it("kill() of a kept command ends every child it forked and reports killed", function()
      local proc = assert(sbx:spawn("sleep 3101 & sleep 3102 & wait"))
      assert(sbx:run("sleep 0.3"))
      assert.is_true(assert(proc:kill()))
      local r = assert(proc:wait(10000))
      proc:close()
      assert.are.same({ -1, "signal: killed" }, { r.exit_code, r.status })
      assert.are.equal("", running("sleep 310[12]"))
    end)

    it("a run() past its timeout_ms leaves no child of its command running", function()
      local r, err = sbx:run("sleep 3103 & sleep 3104 & wait", { timeout_ms = 500 })
      assert.is_nil(r)
      assert.are.equal("timeout", err.kind)
      assert.are.equal("", running("sleep 310[34]"))
    end)

    it("TERM to a kept command ends its group: it never runs on to a normal end", function()
      local proc = assert(sbx:spawn("sleep 1; touch /tmp/term-ran-on"))
      assert(sbx:run("sleep 0.2"))
      assert(proc:signal("TERM"))
      local r = assert(proc:wait(10000))
      proc:close()
      assert.are.same({ -1, "signal: killed" }, { r.exit_code, r.status })
      assert(sbx:run("sleep 1.2"))
      assert.are.equal(1, assert(sbx:run("test -e /tmp/term-ran-on", { keep_output = false })).exit_code)
      -- No TERM, nothing trapped: the statuses stay the command's own.
      for cmd, code in pairs({ ["sleep 0.1 & wait; true"] = 0, ["sleep 0.1 & wait; exit 3"] = 3 }) do
        assert.are.equal(code, assert(sbx:run(cmd)).exit_code, cmd)
      end
    end)

    if not h.live then
      it("e2b-local ends the stream once a SIGKILLed pid exits, though its child holds the pipes", function()
        -- The child has a session of its own: no group signal reaches it.
        local proc = assert(open:spawn("setsid sleep 3105 & sleep 300", { keep_output = false }))
        assert(open:run("sleep 0.3"))
        assert.are.equal(200, (envd_call(open, "SendSignal", { process = { pid = proc.pid }, signal = "SIGNAL_SIGKILL" })))
        local r = assert(proc:wait(5000))
        proc:close()
        assert.are.same({ -1, "signal: killed" }, { r.exit_code, r.status })
        assert(open:run("pkill -f 'sleep 3105'", { keep_output = false }))
      end)
    end
  end)
end)
