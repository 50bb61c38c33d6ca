-- e2b-local over HTTPS: lua-e2b given only E2B_DOMAIN, E2B_API_KEY and
-- E2B_CA_FILE (what `e2b-local exec` sets) speaks to https://api.<domain> and
-- https://49983-<id>.<domain> with TLS verification on; and the CA's key
-- stays out of every sandbox.
local h = require("spec.helpers")

if h.live then return end

local domain, key, ca = os.getenv("E2B_DOMAIN"), os.getenv("E2B_API_KEY"), os.getenv("E2B_CA_FILE")

-- A fresh interpreter with none of the plain-HTTP variables, only vars.
local function https_lua(vars, code)
  return h.fresh_lua(code, { bare = true, env = vars })
end

describe("e2b-local over HTTPS", function()
  it("exec hands over an e2b.localhost domain and the CA to trust", function()
    assert.truthy(domain and domain:match("^e2b%.localhost:%d+$"), domain)
    assert.truthy(ca and ca:match("/tls/ca%.pem$"), ca)
    -- Node trusts one extra file: the CA, or a bundle of the caller's and the CA beside it
    local node_ca = os.getenv("NODE_EXTRA_CA_CERTS")
    assert.truthy(node_ca == ca or node_ca == ca:gsub("ca%.pem$", "node-extra-ca.pem"), node_ca)
    local function slurp(path)
      local f = assert(io.open(path))
      local text = f:read("a")
      f:close()
      return text
    end
    assert.truthy(slurp(node_ca):find(slurp(ca), 1, true), "the bundle holds the CA")
  end)

  it("lua-e2b with only E2B_DOMAIN, E2B_API_KEY and E2B_CA_FILE: create, run, files, kill over https", function()
    local out = https_lua({ E2B_DOMAIN = domain, E2B_API_KEY = key, E2B_CA_FILE = ca }, [[
      local e2b = require("e2b")
      local c = assert(e2b.client{})
      local sbx = assert(c:create{})
      local r = assert(sbx:run("echo hello; id -un"))
      assert(sbx.files:write("/home/user/f", "\0bytes\255"))
      local back = assert(sbx.files:read("/home/user/f"))
      assert(sbx:kill())
      io.write(c.api_url, "|", c.ca_file, "|", r.stdout, "|", tostring(back == "\0bytes\255"), "|", sbx:url(8000))
    ]])
    local api, cafile, stdout, same, url = out:match("^(.-)|(.-)|(.-)|(.-)|(.*)$")
    assert.are.equal("https://api." .. domain, api, out)
    assert.are.equal(ca, cafile)
    assert.are.equal("hello\nuser\n", stdout)
    assert.are.equal("true", same)
    assert.truthy(url:match("^https://8000%-[%w]+%.e2b%.localhost:%d+$"), url)
  end)

  it("without the CA, TLS verification refuses e2b-local's certificate, and says how to trust it", function()
    local out = https_lua({ E2B_DOMAIN = domain, E2B_API_KEY = key }, [[
      local ok, err = require("e2b").client{}:probe()
      io.write(tostring(ok), "|", err and err.kind or "", "|", err and err.message or "")
    ]])
    local ok, kind, msg = out:match("^(.-)|(.-)|(.*)$")
    assert.are.equal("nil", ok, out)
    assert.are_not.equal("auth", kind)
    assert.truthy(msg:lower():find("certificate", 1, true), msg)
    assert.truthy(msg:find("E2B_CA_FILE", 1, true), msg)
  end)

  it("refuses a ca_file it cannot read before any request when it speaks https, naming it", function()
    local c, err = h.e2b.client({ ca_file = "/nonexistent/ca.pem", api_url = "https://api.e2b.localhost:1",
                                  sandbox_url = "https://e2b.localhost:1" })
    assert.is_nil(c)
    assert.are.equal("invalid_argument", err.kind)
    assert.truthy(tostring(err):find("ca_file", 1, true), tostring(err))
    local out = https_lua({ E2B_DOMAIN = domain, E2B_CA_FILE = "/nonexistent/ca.pem" },
      [[local c, err = require("e2b").client{}; io.write(tostring(c), "|", err.kind)]])
    assert.are.equal("nil|invalid_argument", out)
  end)

  it("needs no ca_file over plain http (an nginx worker may not read e2b-local's state dir)", function()
    assert(h.e2b.client({ ca_file = "/nonexistent/ca.pem", api_url = "http://127.0.0.1:1",
                          sandbox_url = "http://127.0.0.1:1" }))
  end)
end)

describe("containment: the HTTPS listener", function()
  after_each(h.cleanup)

  it("is never reachable from a sandbox, even one granted the host's loopback", function()
    local port = domain:match(":(%d+)$")
    local bystander = h.sandbox({ secure = false }) -- its envd has no token to guard it
    local sbx = h.sandbox({ network = { allow = { "127.0.0.1", "localhost" } } })
    local cmd = table.concat({
      "curl -sk -o /dev/null -w '%{http_code}\\n' --max-time 5 https://127.0.0.1:" .. port .. "/health",
      "curl -sk -o /dev/null -w '%{http_code}\\n' --max-time 5 https://localhost:" .. port .. "/health",
      ("curl -sk -o /dev/null -w '%%{http_code}\\n' --max-time 5 -H 'Host: 49983-%s.%s' https://127.0.0.1:%s/envs")
        :format(bystander.sandbox_id, domain, port),
    }, "; ")
    local r = assert(sbx:run(cmd, { user = "root" }))
    assert.are.equal("000\n000\n000\n", r.stdout)
    h.assert_healthy({ bystander })
  end)
end)

describe("containment: the CA key", function()
  after_each(h.cleanup)

  it("is 0600 in a 0700 directory, and root in a sandbox cannot read it", function()
    local dir = ca:match("^(.*)/ca%.pem$")
    local cakey = dir .. "/ca.key"
    assert.are.equal("600 700", h.host(("stat -c %%a %s %s | tr '\\n' ' '"):format(h.shell_quote(cakey),
      h.shell_quote(dir))):gsub("%s+$", ""))
    local bystander = h.sandbox()
    local sbx = h.sandbox()
    local r = assert(sbx:run(("cat %s 2>&1; ls %s 2>&1; echo status=$?"):format(h.shell_quote(cakey),
      h.shell_quote(dir)), { user = "root" }))
    assert.is_nil(r.stdout:find("PRIVATE KEY", 1, true))
    assert.truthy(r.stdout:match("status=[1-9]"), r.stdout)
    -- nor does any variable hand its path (or the CA's) to sandbox processes
    r = assert(sbx:run("env", { user = "root" }))
    assert.is_nil(r.stdout:find("E2B_CA_FILE", 1, true))
    assert.is_nil(r.stdout:find(dir, 1, true))
    h.assert_healthy({ bystander })
  end)
end)
