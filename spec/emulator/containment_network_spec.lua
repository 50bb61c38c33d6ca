-- Containment of e2b-local's network paths against hostile sandbox code:
-- the egress proxy (the forwarder on 127.0.0.1:3128 in every sandbox) and the
-- port proxy (<port>-<id>.<domain>). The "internet" here is a web server on
-- the host's loopback: the host's loopback is never the internet, so a
-- sandbox reaches it only with a policy that names it (127.0.0.1/32).
local h = require("spec.helpers")

if h.live then return end

-- Documented in emulator/README.md (egress): connections one sandbox may hold.
local PER_SANDBOX = 256

-- Holds n connections to the forwarder without ever completing a request line.
-- Prints "held K of n" once the proxy has dealt with all of them (closed
-- what it refuses), then "left K" once the header timeout closed the rest
-- (or 30 s passed). A last probe connection that asks for a closed port is
-- handled after all of them (one agent, one proxy loop, both in order): its
-- end says the proxy has seen every connection before it.
local FLOOD = [[
import select, socket, sys, time
n = int(sys.argv[1])
socks = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(n)]
live = {s.fileno(): s for s in socks}
def drain(timeout_s):
    p = select.poll()
    for fd in live: p.register(fd, select.POLLIN)
    closed = 0
    for fd, _ in p.poll(timeout_s * 1000):
        s = live[fd]
        try:
            gone = s.recv(4096) == b""
        except OSError:
            gone = True
        if gone:
            del live[fd]
            s.close()
            closed += 1
    return closed
probe = socket.create_connection(("127.0.0.1", 3128))
probe.settimeout(30)
try:
    probe.sendall(b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n")
    while probe.recv(4096):
        pass
except OSError:
    pass
probe.close()
while drain(0):
    pass
print("held %d of %d" % (len(live), n), flush=True)
# one of them trickles a byte a second: the timeout is for the whole head
trickler = next(iter(live.values()))
deadline = time.time() + 30
while live and time.time() < deadline:
    if trickler.fileno() in live:
        try:
            trickler.send(b"G")
        except OSError:
            pass
    drain(1.0)
print("left %d" % len(live), flush=True)
]]

-- A request through the forwarder for a host name exactly as given (curl
-- would rewrite a numeric-looking name into an address): the status, or
-- "000" when the proxy closed without an answer.
local RAW_GET = [[
import socket, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n" % (sys.argv[1], sys.argv[1])).encode())
d = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        d += b
except OSError:
    pass
print(d.split(b" ")[1].decode() if d.startswith(b"HTTP/") else "000")
]]

describe("network containment", function()
  local client, url, stop, port
  setup(function()
    client = h.client()
    url, stop, port = h.http_server("host loopback")
  end)
  teardown(function() stop() end)
  after_each(h.cleanup)

  -- curl through the proxy, as a sandbox's environment says: the status or "000".
  local function curl(sbx)
    return assert(sbx:run({ "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", url .. "/" }))
      .stdout
  end

  local function raw_get(sbx, host, p)
    return assert(sbx:run({ "python3", "-c", RAW_GET, ("%s:%d"):format(host, p or port) })).stdout:gsub("%s+$", "")
  end

  -- A sandbox whose policy names the host's web server (and nothing else).
  local NAMES_HOST = { network = { allow = { "127.0.0.1/32" } } }

  it("caps one sandbox's egress connections and closes the ones that never complete a request head", function()
    local bystander = h.sandbox(NAMES_HOST, client)
    local attacker = h.sandbox(NAMES_HOST, client)
    local flood = assert(attacker:spawn({ "python3", "-c", FLOOD, tostring(PER_SANDBOX + 50) }))
    local out = ""
    while not out:find("held %d+") do
      local data, err = flood:read(60000)
      assert(data, "the flood ended early: " .. out .. tostring(err))
      out = out .. data
    end
    -- the attacker holds every connection it may; its excess was refused
    assert.are.equal(("held %d of %d"):format(PER_SANDBOX, PER_SANDBOX + 50), out:match("held %d+ of %d+"))
    -- meanwhile another sandbox's egress works
    assert.are.equal("200", curl(bystander))
    for data in function() return flood:read(60000) end do out = out .. data end
    -- nobody sent a request line: the header timeout closed them all
    assert.are.equal("left 0", out:match("left %d+"))
    -- and the attacker's own slots are free again
    assert.are.equal("200", curl(attacker))
    h.assert_healthy({ bystander }, client)
  end)

  -- A bystander, and a sandbox whose egress allows only allow.
  local function bystander_and(allow)
    return h.sandbox(NAMES_HOST, client), h.sandbox({ network = { allow = allow } }, client)
  end

  -- The bystander's egress still works, and the server is healthy.
  local function bystander_unharmed(bystander)
    assert.are.equal("200", curl(bystander))
    h.assert_healthy({ bystander }, client)
  end

  it("never lets an allowed name carry a connection into the host's loopback", function()
    -- 0x7f000001 is a valid host name that the host's resolver turns into
    -- 127.0.0.1 with no DNS at all: it stands for any allowed name whose
    -- records point at loopback (a DNS rebinding)
    local bystander, sbx = bystander_and({ "0x7f000001" })
    assert.are.equal("000", raw_get(sbx, "0x7f000001"))
    -- an explicit loopback grant still works: localhost by name (RFC 6761)
    assert(sbx:set_network({ allow = { "localhost" } }))
    assert.are.equal("200", raw_get(sbx, "localhost"))
    bystander_unharmed(bystander)
  end)

  it("resolves no host name for a sandbox whose allow-list has only addresses", function()
    local bystander, sbx = bystander_and({ "127.0.0.1/32" })
    -- had the name been resolved, 127.0.0.1 would have been allowed
    assert.are.equal("000", raw_get(sbx, "0x7f000001"))
    -- the address itself is allowed, and localhost is loopback without DNS
    assert.are.equal("200", raw_get(sbx, "127.0.0.1"))
    assert.are.equal("200", raw_get(sbx, "localhost"))
    bystander_unharmed(bystander)
  end)

  it("treats every spelling of this host as loopback: a denied 127.0.0.0/8 is not reached as 0.0.0.0", function()
    local bystander = h.sandbox(NAMES_HOST, client)
    local sbx = h.sandbox({ network = { deny = { "127.0.0.0/8", "::1/128" } } }, client)
    assert.are.equal("000", raw_get(sbx, "127.0.0.1"))
    -- the unspecified address, as a literal, a short form and IPv4-mapped,
    -- connects to the loopback: the policy must see it so
    for _, host in ipairs({ "0.0.0.0", "0", "[::ffff:0.0.0.0]", "[::]" }) do
      assert.are.equal("000", raw_get(sbx, host), host)
    end
    bystander_unharmed(bystander)
  end)

  it("never lets a sandbox reach the host's loopback, another e2b-local included, unless its policy names it", function()
    local srv, stop_srv = h.serve_local()
    local ok, err = pcall(function()
      local api_port = tonumber(assert(srv.E2B_API_URL, "the second server did not start"):match(":(%d+)$"))
      local tls_port = tonumber(srv.E2B_DOMAIN:match(":(%d+)$"))
      local sbx = h.sandbox({}, client) -- allow-all: the internet, which the host's loopback is not
      local function none_reached(why)
        -- the other e2b-local's API (its port proxy too) and HTTPS listener, and a plain listener
        for _, p in ipairs({ api_port, tls_port, port }) do
          for _, host in ipairs({ "127.0.0.1", "localhost", "0.0.0.0", "127.1.2.3" }) do
            assert.are.equal("000", raw_get(sbx, host, p), ("%s: %s:%d"):format(why, host, p))
          end
        end
      end
      none_reached("allow-all")
      -- a deny-list that leaves loopback alone does not open it, nor do wide allow CIDRs
      assert(sbx:set_network({ deny = { "10.0.0.0/8" } }))
      none_reached("a deny-list")
      assert(sbx:set_network({ allow = { "0.0.0.0/0", "1.0.0.0/1", "::1/0" } })) -- 0.0.0.0/1, ::/0: E2B's 400
      none_reached("wide allow CIDRs")
      -- named by address, or by the name localhost (RFC 6761): reached, that far only
      assert(sbx:set_network({ allow = { "127.0.0.1/32" } }))
      assert.are.equal("200", raw_get(sbx, "127.0.0.1"))
      assert.are.equal("000", raw_get(sbx, "127.1.2.3"))
      assert(sbx:set_network({ allow = { "localhost" } }))
      assert.are.equal("200", raw_get(sbx, "localhost"))
      assert.are.equal("000", raw_get(sbx, "127.0.0.1"))
      -- e2b-local's own listeners stay out of reach even when named
      local own = tonumber(os.getenv("E2B_API_URL"):match(":(%d+)$"))
      assert(sbx:set_network({ allow = { "127.0.0.0/8" } }))
      assert.are.equal("000", raw_get(sbx, "127.0.0.1", own))
      h.assert_healthy({ sbx }, client)
    end)
    stop_srv()
    assert(ok, err)
  end)

  it("judges a host loopback port the operator marked as the internet as the internet, until unmarked", function()
    local cjson = require("cjson")
    local open = h.sandbox({}, client)
    local none = h.sandbox({ network = "none" }, client)
    local deny_host = h.sandbox({ network = { deny = { "127.0.0.1/32" } } }, client)
    assert.are.equal("000", raw_get(open, "127.0.0.1"))
    local ok, err = pcall(function()
      local status, body = h.admin("PUT", "/_e2b_local/internet", { ports = { port } })
      assert.are.equal(200, status, body)
      assert.are.same({ ports = { port } }, cjson.decode(body))
      assert.are.equal("200", raw_get(open, "127.0.0.1"))
      assert.are.equal("200", raw_get(open, "localhost"))
      -- judged as an internet address would be: the deny lists still hold
      assert.are.equal("000", raw_get(none, "127.0.0.1"))
      assert.are.equal("000", raw_get(deny_host, "127.0.0.1"))
      -- other ports stay this machine; bad lists are refused and change nothing
      local srv_port = tonumber(os.getenv("E2B_API_URL"):match(":(%d+)$"))
      assert.are.equal("000", raw_get(open, "127.0.0.1", srv_port))
      for _, bad in ipairs({ { ports = { 0 } }, { ports = { 65536 } }, { ports = { "80" } }, { ports = "80" },
        { ports = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17 } } }) do
        status, body = h.admin("PUT", "/_e2b_local/internet", bad)
        assert.are.equal(400, status, body)
        assert.matches("ports", body)
      end
      assert.are.equal("200", raw_get(open, "127.0.0.1"))
    end)
    local status, body = h.admin("DELETE", "/_e2b_local/internet")
    assert(ok, err)
    assert.are.equal(200, status, body)
    assert.are.equal("000", raw_get(open, "127.0.0.1"))
    -- the admin API needs its token
    local out = h.host(("curl -s -o /dev/null -w '%%{http_code}' -X PUT --data-binary '{\"ports\":[%d]}' %s")
      :format(port, h.shell_quote(os.getenv("E2B_API_URL") .. "/_e2b_local/internet")))
    assert.are.equal("403", out)
    assert.are.equal("000", raw_get(open, "127.0.0.1"))
  end)

  it("never exposes the egress forwarder through the port proxy", function()
    local sbx = h.sandbox({}, client)
    -- an absolute-form request to 3128-<id>.<domain> would be a request to
    -- the sandbox's forwarder: an open proxy into the host's loopback
    local cmd = ("curl -s -o /dev/null -w '%%{http_code}' --max-time 5 -x %s -H %s http://127.0.0.1:%d/")
      :format(h.shell_quote(os.getenv("E2B_API_URL")), h.shell_quote("Host: " .. sbx:host(3128)), port)
    assert.are.equal("502", h.host(cmd))
    -- the same request at a closed port is a 502 too: 3128 looks closed
    cmd = cmd:gsub("Host: 3128%-", "Host: 3129-")
    assert.are.equal("502", h.host(cmd))
    h.assert_healthy({ sbx }, client)
  end)
end)
