-- lua-e2b's network options beyond allow/deny, each proved by its effect on
-- e2b-local: rules put a header on the requests to their domain,
-- allow_public_traffic = false makes the port proxy demand the sandbox's
-- traffic token, mask_request_host is the Host header the sandbox's server
-- sees; each is refused with the field named when E2B would refuse it.
local h = require("spec.helpers")

if h.live then return end

-- Answers every request with the request's Host and X-Injected headers as
-- "host|x-injected" (both as received; "-" when absent).
local ECHO = [[
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        msg = ("%s|%s" % (self.headers.get("Host", "-"), self.headers.get("X-Injected", "-"))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(msg)))
        self.end_headers()
        self.wfile.write(msg)
s = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
print("port", s.server_address[1], flush=True)
s.serve_forever()
]]

local function curl_host(url, headers)
  local ca = os.getenv("E2B_CA_FILE")
  local cmd = { "curl -s --max-time 3 -o /dev/stderr -w '%{http_code}'" }
  if ca then cmd[#cmd + 1] = "--cacert " .. h.shell_quote(ca) end
  for k, v in pairs(headers or {}) do cmd[#cmd + 1] = "-H " .. h.shell_quote(k .. ": " .. v) end
  cmd[#cmd + 1] = h.shell_quote(url) .. " 2>&1"
  local out = h.host(table.concat(cmd, " "))
  return out:sub(-3), out:sub(1, -4)
end

-- Starts ECHO in the sandbox on port 8000 and waits until the port proxy
-- reaches it (with headers, which the proxy may require).
local function serve_echo(sbx, headers)
  assert(sbx.files:write("/tmp/echo.py", ECHO))
  assert(sbx:spawn({ "python3", "/tmp/echo.py", "8000" }))
  assert(h.eventually(function() return (curl_host(sbx:url(8000), headers)) == "200" end),
    "the sandbox's server did not answer")
end

describe("network options", function()
  after_each(h.cleanup)

  it("rules: the header a rule names reaches the upstream of that domain only", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. h.shell_quote(dir)))
    h.write_file(dir .. "/echo.py", ECHO)
    local pid = h.host(("cd %s && python3 -u echo.py 0 >log 2>&1 & echo $!"):format(h.shell_quote(dir))):match("%d+")
    finally(function() h.host("kill " .. pid .. "; rm -rf " .. h.shell_quote(dir)) end)
    local port = h.eventually(function() return (h.read_file(dir .. "/log") or ""):match("port (%d+)") end)
    assert(port, "the host web server did not start")
    local sbx = h.sandbox({ network = { allow = { "127.0.0.1/32" },
      rules = { LocalHost = { headers = { ["X-Injected"] = "from-rules" } } } } })
    local function get(host)
      return assert(sbx:run({ "curl", "-s", "--max-time", "10", ("http://%s:%s/"):format(host, port) })).stdout
    end
    assert.are.equal("localhost:" .. port .. "|from-rules", get("localhost"))
    assert.are.equal("127.0.0.1:" .. port .. "|-", get("127.0.0.1"))
    -- set_network replaces the rules; leaving them out clears them
    assert(sbx:set_network({ allow = { "127.0.0.1/32" }, rules = { localhost = { headers = { ["X-Injected"] = "two" } } } }))
    assert.are.equal("localhost:" .. port .. "|two", get("localhost"))
    assert(sbx:set_network({ allow = { "127.0.0.1/32" } }))
    assert.are.equal("localhost:" .. port .. "|-", get("localhost"))
  end)

  it("allow_internet_access = false: no egress, as \"none\"; true: open", function()
    local url, stop = h.http_server("hello", { internet = true })
    finally(stop)
    local function get(sbx)
      return assert(sbx:run({ "curl", "-s", "--max-time", "5", url .. "/" })).stdout
    end
    local off, c = h.sandbox({ network = { allow_internet_access = false } })
    local on = h.sandbox({ network = { allow_internet_access = true } }, c)
    assert.are.equal("hello", get(on))
    assert.are.equal("", get(off))
    assert.is_false(assert(c:describe(off.id)).allow_internet_access)
  end)

  it("allow_public_traffic = false: the port proxy answers only with the traffic token", function()
    local sbx = h.sandbox({ network = { allow_public_traffic = false } })
    assert.is_string(sbx.traffic_token)
    serve_echo(sbx, { ["e2b-traffic-access-token"] = sbx.traffic_token })
    assert.are.equal("403", (curl_host(sbx:url(8000))))
    assert.are.equal("403", (curl_host(sbx:url(8000), { ["e2b-traffic-access-token"] = "wrong" })))
    local open = h.sandbox({ network = { allow_public_traffic = true } })
    assert.is_nil(open.traffic_token)
  end)

  it("mask_request_host: the sandbox's server sees that Host, ${PORT} replaced", function()
    local sbx = h.sandbox({ network = { mask_request_host = "masked.example:${PORT}" } })
    serve_echo(sbx)
    local status, body = curl_host(sbx:url(8000))
    assert.are.equal("200", status)
    assert.are.equal("masked.example:8000|-", body)
  end)

  it("describe() gives back the network options E2B reports", function()
    local sbx, c = h.sandbox({ network = { allow = { "example.com" }, allow_public_traffic = false,
      mask_request_host = "masked.example:${PORT}", rules = { ["example.com"] = { headers = { ["X-A"] = "b" } } } } })
    local net = assert(c:describe(sbx.id)).network
    assert.are.same({ "example.com" }, net.allow_out)
    assert.are.same({ "0.0.0.0/0" }, net.deny_out)
    assert.is_false(net.allow_public_traffic)
    assert.are.equal("masked.example:${PORT}", net.mask_request_host)
    assert.are.same({ ["example.com"] = { headers = { ["X-A"] = "b" } } }, net.rules)
    assert.is_false(assert(c:describe(sbx.id)).allow_internet_access) -- E2B folds the catch-all deny in
    local open = h.sandbox({}, c)
    local info = assert(c:describe(open.id))
    assert.is_true(info.allow_internet_access)
    assert.is_nil((info.network or {}).rules)
    assert.are.same({}, (info.network or {}).allow_out or {})
    -- the ingress options exist only at create
    for _, k in ipairs({ "allow_public_traffic", "mask_request_host" }) do
      local _, err = open:set_network({ [k] = k == "mask_request_host" and "a.example" or false })
      assert.are.same({ "invalid_argument", "network." .. k }, { err.kind, err.field })
    end
  end)

  it("refuses what E2B refuses, naming the field, before any call", function()
    local c = h.client({ api_url = "http://127.0.0.1:1", sandbox_url = "http://127.0.0.1:1" })
    local cases = {
      { { rules = { ["127.0.0.1"] = { headers = { A = "b" } } } }, 'network.rules["127.0.0.1"]' },
      -- E2B takes exact DNS names only: a wildcard key is a 400 there
      { { rules = { ["*.openai.com"] = { headers = { A = "b" } } } }, 'network.rules["*.openai.com"]' },
      { { rules = { ["*."] = { headers = { A = "b" } } } }, 'network.rules["*."]' },
      { { rules = { ["a.com"] = { headers = { ["Bad Name"] = "b" } } } }, 'network.rules["a.com"].headers' },
      { { rules = { ["a.com"] = { headers = { A = ("v"):rep(2049) } } } }, 'network.rules["a.com"].headers' },
      { { rules = { ["a.com"] = { headers = { A = "${e2b.secrets.k" } } } }, 'network.rules["a.com"].headers' },
      { { rules = { ["a.com"] = { body = "x" } } }, 'network.rules["a.com"].body' },
      { { mask_request_host = "h\195\169.example" }, "network.mask_request_host" },
      { { mask_request_host = 5 }, "network.mask_request_host" },
      { { allow_public_traffic = "no" }, "network.allow_public_traffic" },
      { { egress_proxy = { address = "proxy.example.com" } }, "network.egress_proxy.address" },
      { { egress_proxy = { address = "p.example.com:1080", password = "x" } }, "network.egress_proxy.password" },
    }
    for _, case in ipairs(cases) do
      local _, err = c:create({ network = case[1] })
      assert.are.equal("invalid_argument", err.kind, tostring(err))
      assert.are.equal(case[2], err.field, tostring(err))
    end
    local _, err = c:create({ secure = false, network = { allow_public_traffic = false } })
    assert.are.same({ "invalid_argument", "network.allow_public_traffic" }, { err.kind, err.field })
  end)
end)
