-- lua-e2b against E2B as it is, and e2b-local never more lenient than E2B:
-- each spec is named after the rule it proves. Specs that need e2b-local
-- (fault injection, a second server) say so and are skipped live.
local h = require("spec.helpers")

-- The control plane's base URL and key, for requests lua-e2b never sends.
local function api(method, path, body, key)
  local hdr = os.tmpname()
  h.write_file(hdr, "X-API-Key: " .. (key or os.getenv("E2B_API_KEY")) .. "\n")
  local out = h.host(("curl -s -o - -w '\\n%%{http_code}' -X %s -H @%s -H 'Content-Type: application/json' %s '%s%s'")
    :format(method, hdr, body and ("--data-binary " .. h.shell_quote(body)) or "",
      os.getenv("E2B_API_URL"), path))
  os.remove(hdr)
  local text, status = out:match("^(.*)\n(%d+)$")
  return tonumber(status), text
end

describe("429 is rate_limited", function()
  -- Fault injection: e2b-local only.
  if h.live then return end
  local sbx
  setup(function() sbx = h.sandbox() end)
  after_each(function() h.faults() end)
  teardown(function() h.cleanup() end)
  local edge_429 = function(match) return { { match = match, action = "status", status = 429 } } end

  it("e2b-local answers an envd 429 as E2B's edge does (JSON with a numeric code)", function()
    h.faults(edge_429("POST envd:/process.Process/Start"))
    -- The edge answers before envd: no access token needed to see it.
    local out = h.host(("curl -s -w '\\n%%{http_code}' -X POST -H 'E2b-Sandbox-Id: %s' "
      .. "-H 'E2b-Sandbox-Port: 49983' -H 'Content-Type: application/json' -d '{}' '%s/process.Process/Start'")
      :format(sbx.sandbox_id, os.getenv("E2B_SANDBOX_URL")))
    local body, status = out:match("^(.*)\n(%d+)$")
    assert.are.equal("429", status)
    local j = require("cjson").decode(body)
    assert.are.equal(429, j.code)
    assert.are.equal(sbx.sandbox_id, j.sandboxId)
  end)

  it("a 429 while reading a kept command's output is rate_limited, not an idle timeout", function()
    h.faults(edge_429("GET envd:/files*"))
    local t0 = h.now_ms()
    local res, err = sbx:run("head -c 100000 /dev/zero", { idle_timeout_ms = 20000 })
    assert.is_nil(res)
    assert.are.equal("rate_limited", err.kind)
    assert.are.equal(429, err.status)
    assert.is_true(h.now_ms() - t0 < 15000, "reported at once, not after idle_timeout_ms")
  end)

  it("a 429 on a command's stdin is rate_limited, not a command waiting for ever", function()
    h.faults(edge_429("POST envd:/process.Process/SendInput"))
    local res, err = sbx:run("cat", { stdin = "abc", timeout_ms = 20000 })
    assert.is_nil(res)
    assert.are.equal("rate_limited", err.kind)
    -- a spawned command's stdin string: its reader hears of it
    local proc = assert(sbx:spawn("cat", { stdin = "def" }))
    local _, werr = proc:wait(20000)
    assert.are.equal("rate_limited", werr.kind)
    h.faults()
    proc:kill()
  end)

  it("a 429 while create waits for envd is rate_limited, and the allocation is destroyed", function()
    local c = h.client({ max_retries = 0 })
    local tag = h.core.uuid4()
    h.faults(edge_429("GET envd:/health"))
    local got, err = c:create({ metadata = { compat = tag }, ready_timeout_ms = 20000 })
    assert.is_nil(got)
    assert.are.equal("rate_limited", err.kind)
    h.faults()
    assert.are.same({}, assert(c:list({ metadata = { compat = tag } })))
  end)
end)

describe("signed file URLs", function()
  after_each(function() h.cleanup() end)

  it("name the sandbox's own host, also on E2B's domains (its edge routes nothing else without headers)", function()
    local url = h.fresh_lua([[
      local c = assert(require("e2b").client{ domain = "e2b.app", api_key = "e2b_0" })
      io.write(assert(c._h:sandbox("i0abc", "token"):url("/tmp/a b", "read", "user")))
    ]], { bare = true })
    assert.matches("^https://49983%-i0abc%.e2b%.app/files%?path=%%2Ftmp%%2Fa%%20b&username=user&signature=v1_", url)
  end)

  it("download with no header at all (live: through E2B's edge)", function()
    local sbx = h.sandbox()
    assert(sbx.files:write("/tmp/signed.txt", "signed bytes"))
    local url = assert(sbx.files:url("/tmp/signed.txt"))
    assert.are.equal("signed bytes", h.host("curl -s " .. h.shell_quote(url)))
    if h.live then return end
    -- e2b-local by its HTTPS domain, as E2B is reached: no sandbox_url
    url = h.fresh_lua(([[
      local c = assert(require("e2b").client{})
      io.write(assert(assert(c:connect("%s")).files:url("/tmp/signed.txt")))
    ]]):format(sbx.sandbox_id), { bare = true, env = { E2B_API_KEY = os.getenv("E2B_API_KEY"),
      E2B_DOMAIN = os.getenv("E2B_DOMAIN"), E2B_CA_FILE = os.getenv("E2B_CA_FILE") } })
    assert.matches("^https://49983%-" .. sbx.sandbox_id .. "%.", url)
    assert.are.equal("signed bytes", h.host(("curl -s --cacert %s %s")
      :format(h.shell_quote(os.getenv("E2B_CA_FILE")), h.shell_quote(url))))
  end)

  it("e2b-local refuses a signed URL on sandbox.<domain> without routing headers, as E2B's edge does", function()
    if h.live then return end -- e2b-local's own routing
    local sbx = h.sandbox()
    assert(sbx.files:write("/tmp/signed.txt", "signed bytes"))
    local url = assert(sbx.files:url("/tmp/signed.txt"))
    local query = url:match("(/files%?.*)$")
    local function get(host, extra)
      return h.host(("curl -s -o /dev/null -w '%%{http_code}' -H %s %s '%s%s'")
        :format(h.shell_quote("Host: " .. host), extra or "", os.getenv("E2B_API_URL"), query))
    end
    assert.are.equal("400", get("sandbox.e2b.localhost"))
    assert.are.equal("200", get("sandbox.e2b.localhost", "-H 'E2b-Sandbox-Id: " .. sbx.sandbox_id .. "'"))
    assert.are.equal("200", get("49983-" .. sbx.sandbox_id .. ".e2b.localhost"))
  end)
end)
