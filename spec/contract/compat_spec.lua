-- lua-e2b against E2B as it is, and e2b-local never more lenient than E2B:
-- each spec is named after the rule it proves. Specs that need e2b-local
-- (fault injection, a second server) say so and are skipped live.
local h = require("spec.helpers")

local cjson = require("cjson")

-- count_routes(vars, routes, fn) -> how many requests each route got while
-- fn ran, on the e2b-local serve_local started (zero-length stalls count
-- them and change nothing).
local function count_routes(vars, routes, fn)
  local rules = {}
  for i, r in ipairs(routes) do rules[i] = { match = r, action = "stall", ms = 0 } end
  h.faults(rules, 1, vars)
  fn()
  local hdr = os.tmpname() -- the token in a private file, never on curl's command line
  h.write_file(hdr, "X-Admin-Token: " .. vars.E2B_LOCAL_ADMIN_TOKEN .. "\n")
  local listed = cjson.decode(h.host(("curl -s -H @%s '%s/_e2b_local/faults'"):format(hdr, vars.E2B_API_URL))).rules
  os.remove(hdr)
  h.faults(nil, nil, vars)
  local hits = {}
  for i, r in ipairs(listed) do hits[i] = r.hits end
  return hits
end

local api_url = os.getenv("E2B_API_URL") or ("https://api." .. (os.getenv("E2B_DOMAIN") or "e2b.app"))

-- api(method, path, body?, server?) -> status, decoded JSON body (or its
-- text): a control-plane request as any client may send it (the key in a
-- private file, never on curl's command line). server: serve_local's vars.
local function api(method, path, body, server)
  local hdr = os.tmpname()
  h.write_file(hdr, "X-API-Key: " .. (server and server.E2B_API_KEY or os.getenv("E2B_API_KEY")) .. "\n")
  local out = h.host(("curl -s -w '\\n%%{http_code}' -X %s -H @%s -H 'Content-Type: application/json' %s '%s%s'")
    :format(method, hdr, body and ("--data-binary " .. h.shell_quote(body)) or "",
      server and server.E2B_API_URL or api_url, path))
  os.remove(hdr)
  local text, status = out:match("^(.*)\n(%d+)$")
  local ok, json = pcall(cjson.decode, text)
  return tonumber(status), ok and json or text
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
    local j = cjson.decode(body)
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

describe("ids that are not sandbox ids", function()
  after_each(function() h.cleanup() end)
  local not_ids = { h.core.uuid4(), "Agent42", "a-b-c", "-x", "agent_42" }

  it("get 400 'Invalid sandbox ID' from the control plane, after authentication", function()
    local sbx = h.sandbox()
    for _, id in ipairs(not_ids) do
      local esc = id:gsub("[^%w%-_]", function(c) return ("%%%02X"):format(c:byte()) end)
      for _, call in ipairs({ { "GET", "" }, { "DELETE", "" }, { "POST", "/timeout", '{"timeout":60}' },
                              { "POST", "/connect", '{"timeout":60}' }, { "POST", "/pause", "{}" },
                              { "POST", "/refreshes", '{"duration":60}' } }) do
        local status, body = api(call[1], "/sandboxes/" .. esc .. call[2], call[3])
        assert.are.equal(400, status, call[1] .. " " .. call[2] .. " " .. id)
        assert.are.same({ code = 400, message = "Invalid sandbox ID" }, body)
      end
    end
    -- a composite id "<sandbox id>-<client id>" names the sandbox
    local status, body = api("GET", "/sandboxes/" .. sbx.sandbox_id .. "-client")
    assert.are.equal(200, status)
    assert.are.equal(sbx.sandbox_id, body.sandboxID)
    if h.live then return end
    -- e2b-local's own key check comes first, as E2B's
    assert.are.equal(401, (api("GET", "/sandboxes/" .. not_ids[1], nil,
      { E2B_API_KEY = "e2b_wrong", E2B_API_URL = api_url })))
  end)

  it("get 400 from the edge when they route envd traffic (e2b-local)", function()
    if h.live then return end
    local function health(header)
      return h.host(("curl -s -o /dev/null -w '%%{http_code}' -H %s '%s/health'")
        :format(h.shell_quote(header), os.getenv("E2B_SANDBOX_URL")))
    end
    local sbx = h.sandbox()
    assert.are.equal("204", health("E2b-Sandbox-Id: " .. sbx.sandbox_id))
    assert.are.equal("400", health("E2b-Sandbox-Id: " .. sbx.sandbox_id .. "-client"))
    assert.are.equal("400", health("E2b-Sandbox-Id: " .. sbx.sandbox_id:upper()))
    assert.are.equal("400", health("Host: 49983-" .. sbx.sandbox_id:upper() .. ".e2b.localhost"))
  end)

  it("name no sandbox: describe and resume say not_found, destroy succeeds, never invalid_argument", function()
    local c = h.client()
    for _, id in ipairs(not_ids) do
      local info, err = c:describe(id)
      assert.is_nil(info)
      assert.are.equal("not_found", err.kind, id .. ": " .. tostring(err))
      local sbx, rerr = c:resume(id)
      assert.is_nil(sbx)
      assert.are.equal("not_found", rerr.kind, id .. ": " .. tostring(rerr))
      assert.is_true(assert(c:destroy(id)))
    end
    -- a sandbox id's shape is still looked up as one
    local _, err = c:describe("i0000000000000000000")
    assert.are.equal("not_found", err.kind)
  end)

  it("destroy of a gone sandbox succeeds by its (UUID) logical id", function()
    local c = h.client()
    local sbx = assert(c:create({}))
    local id = sbx.id
    assert.matches("^%x+%-%x+%-%x+%-%x+%-%x+$", id)
    assert(sbx:kill())
    assert.is_true(assert(c:destroy(id)))
    local _, err = c:describe(id)
    assert.are.equal("not_found", err.kind)
  end)

  it("are refused by the raw calls before anything is sent", function()
    local c = h.client()
    local sbx, err = c:connect("Not-An-Id")
    assert.is_nil(sbx)
    assert.are.equal("invalid_argument", err.kind)
    assert.matches("not a sandbox id", err.message)
  end)
end)

describe("create knows both of E2B's routes", function()
  after_each(function() h.cleanup() end)

  it("a wrong method on a known path is 404, as E2B's router answers it", function()
    local status, body = api("PUT", "/v2/sandboxes", "{}")
    assert.are.equal(404, status)
    assert.are.equal(404, body.code)
    assert.are.equal(404, (api("PATCH", "/sandboxes/i0abc")))
  end)

  it("bodies follow the schema: templateID required, connect v1 needs its timeout", function()
    assert.are.equal(400, (api("POST", "/v2/sandboxes", "{}")))
    assert.are.equal(400, (api("POST", "/sandboxes", '{"timeout":60}')))
    local sbx = h.sandbox()
    assert.are.equal(400, (api("POST", "/sandboxes/" .. sbx.sandbox_id .. "/connect", "{}")))
    -- unknown fields are ignored, as E2B's schema allows them
    local status, created = api("POST", "/v2/sandboxes", '{"templateID":"base","timeout":60,"no_such_field":1}')
    assert.are.equal(201, status)
    assert.are.equal(204, (api("DELETE", "/sandboxes/" .. created.sandboxID)))
  end)

  it("a v2 create is always secure (NewSandboxV2 has no `secure`)", function()
    local status, created = api("POST", "/v2/sandboxes", '{"templateID":"base","timeout":60,"secure":false}')
    assert.are.equal(201, status)
    assert.are.equal("string", type(created.envdAccessToken))
    api("DELETE", "/sandboxes/" .. created.sandboxID)
  end)

  it("an insecure create goes to POST /sandboxes, the only route that carries `secure`", function()
    local sbx = h.sandbox({ secure = false })
    local url, err = sbx.files:url("/tmp/x")
    assert.is_nil(url)
    assert.matches("secure sandbox", err.message)
    assert.are.equal("string", type(assert(h.sandbox()).files:url("/tmp/x")))
  end)

  it("falls back to POST /sandboxes where E2B has no v2 create, and remembers the route (e2b-local --api self-hosted)", function()
    if h.live then return end
    h.with_local_server("--api self-hosted --no-tls", function(client, vars)
      -- the self-hosted API: v2 is GET only, v2 connect absent
      assert.are.equal(404, (api("POST", "/v2/sandboxes", '{"templateID":"base"}', vars)))
      assert.are.equal(200, (api("GET", "/v2/sandboxes", nil, vars)))
      assert.are.equal(404, (api("POST", "/v2/sandboxes/i0abc/connect", "{}", vars)))
      local function count(fn) return count_routes(vars, { "POST /v2/sandboxes", "POST /sandboxes" }, fn) end
      local first, second
      assert.are.same({ 1, 1 }, count(function() first = assert(client:create({ timeout_ms = 60000 })) end))
      assert.are.same({ 0, 1 }, count(function() second = assert(client:create({ timeout_ms = 60000 })) end))
      assert.are.equal("ok\n", assert(first:run("echo ok")).stdout)
      assert.is_string(first.files:url("/tmp/x"), "the v1 create asked for a secure sandbox")
      first:kill()
      second:kill()
      assert.are.equal("/sandboxes", assert(client:doctor()).create_route)
    end)
  end)

  it("connect and resume work where E2B has no connect route, never shortening a deadline (e2b-local --api self-hosted-no-connect)", function()
    if h.live then return end
    h.with_local_server("--api self-hosted-no-connect --no-tls", function(client, vars)
      assert.are.equal(404, (api("POST", "/sandboxes/i0abc/connect", '{"timeout":60}', vars)))
      local sbx = assert(client:create({ id = "compat-" .. h.core.uuid4() }))
      assert(sbx:pause())
      local routes = { "POST /sandboxes/*/connect", "POST /sandboxes/*/resume", "POST /sandboxes/*/timeout" }
      local back
      -- paused: /resume; the first connect's 404 teaches the client
      assert.are.same({ 1, 1, 0 }, count_routes(vars, routes, function() back = assert(client:connect(sbx.sandbox_id)) end))
      assert.are.equal("ok\n", assert(back:run("echo ok")).stdout)
      assert(back:set_timeout(900000))
      -- running: kept as it is, its deadline only extended, by logical id too
      local again
      assert.are.same({ 0, 0, 1 }, count_routes(vars, routes, function() again = assert(client:resume(sbx.id)) end))
      assert.are.equal("ok\n", assert(again:run("echo ok")).stdout)
      local info = assert(client:describe(sbx.id))
      assert.are.equal("running", info.state)
      assert.is_true(info.end_at > os.time() * 1000 + 800000, "the 900 s deadline was kept")
      sbx:kill()
    end)
  end)
end)

describe("a cold boot empties /tmp", function()
  after_each(h.cleanup)

  -- E2B's base images wipe /tmp at boot (systemd-tmpfiles' `D /tmp`), so a
  -- resume after a filesystem-only pause finds it empty; a memory resume
  -- is no boot and keeps it.
  it("after a filesystem-only pause, not after a memory pause", function()
    local sbx = h.sandbox({ timeout_ms = 120000 })
    assert(sbx.files:write("/tmp/mark", "x"))
    assert(sbx:pause({ mode = "memory" }))
    assert(sbx:connect())
    assert.is_true((assert(sbx.files:exists("/tmp/mark"))))
    assert(sbx:pause({ mode = "filesystem" }))
    assert(sbx:connect())
    local there, err = sbx.files:exists("/tmp/mark")
    assert.is_nil(err)
    assert.is_false(there)
    assert.is_true((assert(sbx.files:exists("/tmp"))), "the directory itself is there")
    assert.are.equal("ok\n", assert(sbx:run("touch /tmp/again && echo ok", { user = "user" })).stdout)
  end)

  it("a reattach after it says the kept output was lost, at once", function()
    local sbx = h.sandbox({ timeout_ms = 120000 })
    local proc = assert(sbx:spawn("echo before; sleep 600", { tag = "coldboot" }))
    assert.are.equal("before\n", assert(proc:read(10000)))
    local offsets = proc:offsets()
    proc:detach()
    proc:close()
    assert(sbx:pause({ mode = "filesystem" }))
    assert(sbx:connect())
    local t0 = h.now_ms()
    local again, err = sbx:attach("coldboot", { offsets = offsets, idle_timeout_ms = 60000 })
    if again then again, err = nil, select(2, again:wait(60000)) end
    assert.is_nil(again)
    assert.are.equal("not_found", err.kind, tostring(err))
    assert.truthy(err.message:find("lost", 1, true), err.message)
    assert.truthy(err.message:find("cold boot", 1, true), err.message)
    assert.is_true(h.now_ms() - t0 < 5000, "no wait for files that cannot come")
  end)
end)

describe("features are gated on the envd version the sandbox reports", function()
  after_each(h.cleanup)

  -- The SDKs refuse what an older envd lacks (js-sdk src/envd/versions.ts);
  -- so does lua-e2b, before sending anything. Needs an e2b-local that
  -- reports an old envd (live sandboxes run a current one).
  it("closing stdin needs envd 0.5.2: refused as unsupported, naming both versions (e2b-local --envd-version)", function()
    if h.live then return end
    h.with_local_server("--envd-version 0.5.1 --no-tls", function(client)
      local sbx = assert(client:create({ timeout_ms = 60000 }))
      local proc = assert(sbx:spawn("cat", { stdin = true }))
      local ok, err = proc:close_stdin()
      assert.is_nil(ok)
      assert.are.equal("unsupported", err.kind, tostring(err))
      assert.truthy(err.message:find("envd 0.5.2", 1, true), err.message)
      assert.truthy(err.message:find("0.5.1", 1, true), err.message)
      proc:close()
      sbx:kill()
    end)
  end)

  it("e2b-local as envd 0.5.1 has no CloseStdin route, as that envd had none", function()
    if h.live then return end
    h.with_local_server("--envd-version 0.5.1 --no-tls", function(client, vars)
      local sbx = assert(client:create({ timeout_ms = 60000, secure = false })) -- no token to pass
      local hdr = os.tmpname()
      h.write_file(hdr, "E2b-Sandbox-Id: " .. sbx.sandbox_id .. "\n")
      local code = h.host(("curl -s -o /dev/null -w '%%{http_code}' -X POST -H @%s -H 'Content-Type: application/json' --data '{\"process\":{\"pid\":1}}' '%s/process.Process/CloseStdin'")
        :format(hdr, vars.E2B_SANDBOX_URL))
      os.remove(hdr)
      assert.are.equal("404", code)
      sbx:kill()
    end)
  end)

  it("kept output still streams where WatchDir has no includeEntry (envd 0.6.2): every event wakes the reader", function()
    if h.live then return end
    h.with_local_server("--envd-version 0.6.2 --no-tls", function(client)
      local sbx = assert(client:create({ timeout_ms = 60000 }))
      local proc = assert(sbx:spawn("for i in 1 2 3; do echo $i; sleep 1; done", { park = true }))
      local r = assert(proc:wait(30000))
      assert.are.equal("1\n2\n3\n", r.stdout)
      sbx:kill()
    end)
  end)
end)
