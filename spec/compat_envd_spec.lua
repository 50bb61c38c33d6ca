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
end)
