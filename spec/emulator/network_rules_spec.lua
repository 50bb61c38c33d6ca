-- network.rules on e2b-local: per-domain headers the egress proxy adds to (or
-- replaces in) a sandbox's HTTP requests, on every request of a connection,
-- and the checks that keep a rule from injecting anything but one header.
-- The "internet" is a web server on the host's loopback that reports the
-- headers it received, reached by name: rule keys are domain names (E2B
-- refuses IP addresses), and localhost and *.localhost name the loopback
-- (RFC 6761) inside a sandbox as outside. lua-e2b has no rules option: the specs set them with
-- the control plane's own routes (create and PUT /sandboxes/{id}/network).
local h = require("spec.helpers")
local cjson = require("cjson")

if h.live then return end

-- Answers every request with one JSON line: which connection it came on
-- (the client's port), its number on that connection, the path, the body
-- and every value of the headers the specs look at. HTTP/1.1 keep-alive.
local SERVER = [[
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    count = 0
    def log_message(self, *a): pass
    def body(self):
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            out = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0], 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b""): pass
                    return out
                out += self.rfile.read(n)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))
    def answer(self):
        self.count += 1
        seen = {k: self.headers.get_all(k) or [] for k in ("X-Injected", "Authorization", "X-Second", "Host")}
        msg = json.dumps({"conn": self.client_address[1], "n": self.count, "path": self.path,
                          "body": self.body().decode("latin-1"), "h": seen}).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(msg)))
        self.end_headers()
        self.wfile.write(msg)
    do_GET = do_POST = answer
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print("port", s.server_address[1], flush=True)
s.serve_forever()
]]

-- Three requests written at once on one connection to the forwarder
-- (pipelined), the second a chunked POST whose body looks like a request
-- with a forged header: each answer's line, in order.
local PIPELINE = [[
import socket, sys
host = sys.argv[1]
def req(method, path, extra=b"", body=b""):
    return (b"%s http://%s%s HTTP/1.1\r\nHost: %s\r\n" % (method, host.encode(), path, host.encode())) + extra + b"\r\n" + body
fake = b"GET http://" + host.encode() + b"/fake HTTP/1.1\r\nX-Injected: forged\r\n\r\n"
chunked = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (10, fake[:10], len(fake) - 10, fake[10:])
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(req(b"GET", b"/1", b"Authorization: Bearer sandbox-own\r\nx-injected: sandbox-own\r\n")
          + req(b"POST", b"/2", b"Transfer-Encoding: chunked\r\n", chunked) + req(b"GET", b"/3"))
f = s.makefile("rb")
for _ in range(3):
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""): break
        if line.lower().startswith(b"content-length:"): length = int(line.split(b":")[1])
    sys.stdout.write(f.read(length).decode())
]]

local api = h.api

-- The headers network.rules set for host (Name = value).
local function rules_for(host, headers)
  return { [host] = { { transform = { headers = headers } } } }
end

local function put_network(sbx, net)
  return api("PUT", "/sandboxes/" .. sbx.sandbox_id .. "/network", cjson.encode(net))
end

local lines = h.json_lines

describe("network rules", function()
  local client, stop, port, dir
  setup(function()
    client = h.client()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. h.shell_quote(dir)))
    local f = assert(io.open(dir .. "/server.py", "w"))
    f:write(SERVER)
    f:close()
    local pid = h.host(("cd %s && python3 -u server.py >log 2>&1 & echo $!"):format(h.shell_quote(dir))):match("%d+")
    for _ = 1, 100 do
      local log = io.open(dir .. "/log")
      port = log and tonumber(log:read("a"):match("port (%d+)"))
      if log then log:close() end
      if port then break end
      h.e2b.sleep(50)
    end
    stop = function() h.host("kill " .. pid .. " 2>/dev/null; rm -rf " .. h.shell_quote(dir)) end
    assert(port, "the host web server did not start")
  end)
  teardown(function() stop() end)
  after_each(h.cleanup)

  local ALLOW = { "localhost", "*.localhost" }
  local ALLOW_HOST = { allowOut = ALLOW, denyOut = { "0.0.0.0/0" } }

  local function with(net, extra)
    local t = {}
    for k, v in pairs(net) do t[k] = v end
    for k, v in pairs(extra or {}) do t[k] = v end
    return t
  end

  local function curl(sbx, ...)
    local cmd = { "curl", "-s", "--max-time", "10", "-H", "X-Injected: sandbox-own" }
    for _, path in ipairs({ ... }) do cmd[#cmd + 1] = ("http://localhost:%d%s"):format(port, path) end
    return assert(sbx:run(cmd)).stdout
  end

  it("adds and replaces the rule's headers on every request of a keep-alive connection", function()
    local sbx = h.sandbox({ network = { allow = ALLOW } }, client)
    assert.are.equal(204, (put_network(sbx, with(ALLOW_HOST, {
      rules = rules_for("localhost", { ["X-Injected"] = "from-rules", Authorization = "Bearer from-rules" }) }))))
    -- curl keeps its connection to the proxy for the second URL
    local got = lines(curl(sbx, "/a", "/b"))
    assert.are.equal(2, #got)
    assert.are.equal(got[1].conn, got[2].conn)
    assert.are.same({ 1, 2 }, { got[1].n, got[2].n })
    for _, r in ipairs(got) do
      assert.are.same({ "from-rules" }, r.h["X-Injected"]) -- the sandbox's own value replaced
      assert.are.same({ "Bearer from-rules" }, r.h.Authorization)
    end
    -- a request for another host on that connection is not sent to this one:
    -- the proxy ends the connection after the answers so far and curl retries
    local other = lines(assert(sbx:run({ "curl", "-s", "--max-time", "10", "-H", "X-Injected: sandbox-own",
      ("http://localhost:%d/a"):format(port), ("http://other.localhost:%d/b"):format(port) })).stdout)
    assert.are.equal(2, #other)
    assert.are_not.equal(other[1].conn, other[2].conn)
    assert.are.same({ "from-rules" }, other[1].h["X-Injected"])
    assert.are.same({ "sandbox-own" }, other[2].h["X-Injected"]) -- no rules for "other.localhost"
    -- three pipelined requests, one with a chunked body that looks like a request
    local host = ("localhost:%d"):format(port)
    got = lines(assert(sbx:run({ "python3", "-c", PIPELINE, host })).stdout)
    assert.are.equal(3, #got)
    assert.are.same({ "/1", "/2", "/3" }, { got[1].path, got[2].path, got[3].path })
    assert.are.same({ 1, 2, 3 }, { got[1].n, got[2].n, got[3].n })
    for _, r in ipairs(got) do
      assert.are.equal(got[1].conn, r.conn)
      assert.are.same({ "from-rules" }, r.h["X-Injected"])
      assert.are.same({ "Bearer from-rules" }, r.h.Authorization)
      assert.are.same({ host }, r.h.Host)
    end
    -- the body went on byte for byte, not taken for a request
    assert.are.equal("GET http://" .. host .. "/fake HTTP/1.1\r\nX-Injected: forged\r\n\r\n", got[2].body)
    h.assert_healthy({ sbx }, client)
  end)

  it("replaces a sandbox's rules on update and clears them when the update omits them", function()
    local sbx = h.sandbox({ network = { allow = ALLOW } }, client)
    assert.are.equal(204, (put_network(sbx, with(ALLOW_HOST, { rules = rules_for("localhost", { ["X-Injected"] = "one" }) }))))
    assert.are.same({ "one" }, lines(curl(sbx, "/"))[1].h["X-Injected"])
    assert.are.equal(204, (put_network(sbx, with(ALLOW_HOST, { rules = rules_for("localhost", { ["X-Second"] = "two" }) }))))
    local r = lines(curl(sbx, "/"))[1]
    assert.are.same({ "sandbox-own" }, r.h["X-Injected"])
    assert.are.same({ "two" }, r.h["X-Second"])
    local status, body = api("GET", "/sandboxes/" .. sbx.sandbox_id)
    assert.are.equal(200, status)
    assert.are.same(rules_for("localhost", { ["X-Second"] = "two" }), cjson.decode(body).network.rules)
    assert.are.equal(204, (put_network(sbx, ALLOW_HOST)))
    r = lines(curl(sbx, "/"))[1]
    assert.are.same({ "sandbox-own" }, r.h["X-Injected"])
    assert.are.same({}, r.h["X-Second"])
    assert.is_nil(cjson.decode(select(2, api("GET", "/sandboxes/" .. sbx.sandbox_id))).network.rules)
  end)

  it("gives a host the rules of its own name only, never a parent's, and never grants access", function()
    local sbx = h.sandbox({ network = { allow = { "localhost" } } }, client)
    local rules = rules_for("localhost", { ["X-Injected"] = "apex" })
    rules["api.localhost"] = { { transform = { headers = { ["X-Injected"] = "exact" } } } }
    -- rules for names the policy does not allow: still denied
    assert.are.equal(204, (put_network(sbx, { allowOut = { "localhost" }, denyOut = { "0.0.0.0/0" }, rules = rules })))
    local function via(name)
      local out = assert(sbx:run({ "curl", "-s", "--max-time", "10", "-H", "X-Injected: sandbox-own",
        ("http://%s:%d/"):format(name, port) })).stdout
      return out ~= "" and lines(out)[1].h["X-Injected"][1] or "denied"
    end
    assert.are.equal("denied", via("api.localhost"))
    assert.are.equal("apex", via("localhost"))
    assert.are.equal(204, (put_network(sbx, { allowOut = { "localhost", "*.localhost" }, denyOut = { "0.0.0.0/0" },
      rules = rules })))
    assert.are.equal("exact", via("api.localhost"))
    assert.are.equal("exact", via("API.localhost."))
    assert.are.equal("sandbox-own", via("v1.api.localhost")) -- a key covers no subdomain
    assert.are.equal("sandbox-own", via("other.localhost"))
    assert.are.equal("apex", via("localhost"))
  end)

  it("never sends a rule's headers to the sandbox's own loopback, only to the upstream the rule names", function()
    local sbx = h.sandbox({ network = { allow = ALLOW } }, client)
    local secret = { ["X-Injected"] = "secret", Authorization = "Bearer secret" }
    local rules = rules_for("localhost", secret)
    rules["api.localhost"] = rules.localhost
    assert.are.equal(204, (put_network(sbx, with(ALLOW_HOST, { rules = rules }))))
    -- the sandbox's own server on its loopback, the same one as the host's
    local own = assert(sbx:spawn({ "python3", "-u", "-c", SERVER }))
    local out, inner = "", nil
    while not inner do
      local data = own:read(10000)
      assert(data, "the sandbox's server did not start: " .. out)
      out = out .. data
      inner = tonumber(out:match("port (%d+)"))
    end
    -- plain requests and CONNECT tunnels, by each name with rules, all reach it
    -- through the proxy (the sandbox's own loopback first): none carries the secret
    for _, name in ipairs({ "localhost", "api.localhost" }) do
      for _, tunnel in ipairs({ false, true }) do
        local cmd = { "curl", "-s", "--max-time", "10", "-H", "X-Injected: sandbox-own" }
        if tunnel then cmd[#cmd + 1] = "-p" end
        cmd[#cmd + 1] = ("http://%s:%d/own"):format(name, inner)
        local got = lines(assert(sbx:run(cmd)).stdout)
        local what = name .. (tunnel and " (CONNECT)" or "")
        assert.are.equal(1, #got, what)
        assert.are.same({ "sandbox-own" }, got[1].h["X-Injected"], what)
        assert.are.same({}, got[1].h.Authorization, what)
      end
    end
    -- the host's server, which the rule names, still gets them
    local got = lines(curl(sbx, "/host"))
    assert.are.same({ "secret" }, got[1].h["X-Injected"])
    assert.are.same({ "Bearer secret" }, got[1].h.Authorization)
    h.assert_healthy({ sbx }, client)
  end)

  it("refuses a rule that would inject more than one header (CR/LF) or an invalid name with 400", function()
    local bystander = h.sandbox({}, client)
    local bad = {
      rules_for("localhost", { ["X-Injected"] = "a\r\nX-Evil: 1" }),
      rules_for("localhost", { ["X-Injected"] = "a\nX-Evil: 1" }),
      rules_for("localhost", { ["X-Evil: 1\r\nX-Injected"] = "a" }),
      rules_for("localhost", { ["Content-Length"] = "0" }),
      rules_for("localhost", { ["X-Injected"] = ("v"):rep(2049) }),
      rules_for("*", { ["X-Injected"] = "a" }),
      { localhost = { { transform = { headers = { ["X-A"] = 1 } } } } },
      { localhost = { { transform = { body = "x" } } } },
    }
    for _, rules in ipairs(bad) do
      local status, body = api("POST", "/sandboxes", cjson.encode({ templateID = "base", network = with(ALLOW_HOST, { rules = rules }) }))
      assert.are.equal(400, status, body)
      assert.is_nil(body:find("X-Evil: 1\r\n", 1, true))
      status = put_network(bystander, with(ALLOW_HOST, { rules = rules }))
      assert.are.equal(400, status)
    end
    -- the refused updates left the sandbox as it was
    local status, body = api("GET", "/sandboxes/" .. bystander.sandbox_id)
    assert.are.equal(200, status)
    assert.is_nil((cjson.decode(body).network or {}).rules)
    h.assert_healthy({ bystander }, client)
  end)

  it("keeps the rules given at create (keys in lower case) in the sandbox's record across a restart", function()
    local state = os.tmpname()
    os.remove(state)
    local srv, stop_srv = h.serve_local("--state " .. state)
    local want = rules_for("api.example.com", { ["X-Injected"] = "kept" })
    -- the second server is stopped and its state removed whatever the outcome
    local ok, err = pcall(function()
      assert(srv.E2B_API_URL, "the second server did not start")
      local status, body = api("POST", "/sandboxes", cjson.encode({ templateID = "base", timeout = 60,
        network = with(ALLOW_HOST, { rules = rules_for("API.Example.COM", { ["X-Injected"] = "kept" }) }) }), srv)
      assert.are.equal(201, status, body)
      local id = cjson.decode(body).sandboxID
      assert.are.same(want, cjson.decode(select(2, api("GET", "/sandboxes/" .. id, nil, srv))).network.rules)
      stop_srv()
      srv, stop_srv = h.serve_local("--state " .. state)
      status, body = api("GET", "/sandboxes/" .. id, nil, srv)
      api("DELETE", "/sandboxes/" .. id, nil, srv)
      assert.are.equal(200, status, body)
      assert.are.same(want, cjson.decode(body).network.rules)
    end)
    stop_srv()
    h.host("rm -rf " .. h.shell_quote(state))
    assert(ok, err)
  end)
end)
