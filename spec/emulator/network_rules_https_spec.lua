-- network.rules over HTTPS: for a host with rules, e2b-local's egress proxy
-- ends the sandbox's TLS with a certificate from its own CA (which sandboxes
-- trust), opens verified TLS to the real upstream and adds the rule's
-- headers to the decrypted requests; a host without rules is never
-- intercepted, an upstream it cannot verify is never reached, and a hostile
-- client's handshake harms nothing. The "internet" is an HTTPS server on the
-- host's loopback with a certificate from a CA the spec makes; a second
-- e2b-local is told to trust that CA (E2B_LOCAL_EGRESS_CA_FILE).
local h = require("spec.helpers")
local cjson = require("cjson")

if h.live then return end

-- Answers each GET with one JSON line (path, client port, the headers the
-- specs look at) and logs "request <path>" on stdout. The handshake runs in
-- the request's thread: a stalled one never holds the accept loop.
local SERVER = [[
import http.server, json, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        print("request", self.path, flush=True)
        seen = {k: self.headers.get_all(k) or [] for k in ("X-Injected", "Authorization", "Host")}
        msg = json.dumps({"path": self.path, "conn": self.client_address[1], "h": seen}).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(msg)))
        self.end_headers()
        self.wfile.write(msg)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.socket = ctx.wrap_socket(s.socket, server_side=True, do_handshake_on_connect=False)
print("port", s.server_address[1], flush=True)
s.serve_forever()
]]

-- A client that misbehaves through the proxy: after `CONNECT host:port`,
-- mode "garbage" sends a TLS record header then junk, "stall" half a
-- ClientHello record and nothing more (the connection stays open), "huge" a
-- record header announcing more than any record may hold.
local HOSTILE = [[
import socket, sys, time
host, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
held = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (host.encode(), host.encode()))
    s.recv(4096)
    if mode == "garbage":
        s.sendall(b"\x16\x03\x01\x00\x40" + b"\xff" * 64)
    elif mode == "huge":
        s.sendall(b"\x16\x03\x03\xff\xff" + b"\x01" * 4096)
    else:
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00")
    held.append(s)
if mode == "stall":
    print("stalled", n, flush=True)
    time.sleep(60)
ended = 0
for s in held:
    if mode == "stall":
        continue
    try:
        s.settimeout(10)
        ended += s.recv(4096) == b""
    except OSError:
        ended += 1
print("ended", ended, flush=True)
]]

-- Starts n intercepted TLS handshakes at once through the proxy and counts
-- those that completed and those the proxy refused (closed).
local FLOOD = [[
import select, socket, ssl, sys, time
host, n = sys.argv[1], int(sys.argv[2])
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
pending = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (host.encode(), host.encode()))
    s.recv(4096)
    s.setblocking(False)
    pending.append(ctx.wrap_socket(s, server_hostname=host.split(":")[0], do_handshake_on_connect=False))
done = refused = 0
deadline = time.time() + 30
while pending and time.time() < deadline:
    waiting = []
    for t in pending:
        try:
            t.do_handshake()
            done += 1
            t.close()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            waiting.append(t)
        except OSError:
            refused += 1
    pending = waiting
    if pending:
        select.select(pending, [], [], 0.05)
print("done", done, "refused", refused, "left", len(pending), flush=True)
]]

local write, slurp = h.write_file, h.read_file

-- A CA, a leaf from it for api.localhost (and 127.0.0.1), and a self-signed
-- "rogue" leaf for the same name that nobody trusts.
local function make_certs(dir)
  local q = h.shell_quote(dir)
  write(dir .. "/leaf.ext", "subjectAltName=DNS:api.localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n" ..
    "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
  local ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
  h.host(("cd %s && openssl req -x509 %s -keyout ca.key -out ca.pem -days 2 -subj '/CN=spec upstream CA' " ..
    "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null" ..
    " && openssl req %s -keyout up.key -out up.csr -subj /CN=api.localhost 2>/dev/null" ..
    " && openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out up.pem -days 2" ..
    " -extfile leaf.ext 2>/dev/null" ..
    " && openssl req -x509 %s -keyout rogue.key -out rogue.pem -days 2 -subj /CN=api.localhost" ..
    " -addext subjectAltName=DNS:api.localhost 2>/dev/null"):format(q, ec, ec, ec))
  assert(slurp(dir .. "/up.pem"):find("BEGIN CERTIFICATE"), "openssl did not make the spec's certificates")
  assert(slurp(dir .. "/rogue.pem"):find("BEGIN CERTIFICATE"), "openssl did not make the rogue certificate")
end

-- An HTTPS server on the host's loopback with cert/key: its port, its log path.
local function start_upstream(dir, name, cert, key)
  local log = dir .. "/" .. name .. ".log"
  local pid = h.host(("cd %s && python3 -u server.py %s %s >%s 2>&1 & echo $!"):format(h.shell_quote(dir),
    cert, key, h.shell_quote(log))):match("%d+")
  local port
  for _ = 1, 100 do
    port = tonumber(slurp(log):match("port (%d+)"))
    if port then break end
    h.e2b.sleep(50)
  end
  assert(port, "the host HTTPS server did not start: " .. slurp(log))
  return port, log, pid
end

-- The control plane of srv, as the SDKs call it; the key in a private file.
local function api(srv, method, path, body)
  local header = os.tmpname()
  write(header, "X-API-Key: " .. srv.E2B_API_KEY .. "\n")
  local out = h.host(("curl -s -w '\\n%%{http_code}' -X %s -H @%s -H 'Content-Type: application/json' %s %s")
    :format(method, header, body and ("--data-binary " .. h.shell_quote(body)) or "", h.shell_quote(srv.E2B_API_URL .. path)))
  os.remove(header)
  local text, status = out:match("^(.*)\n(%d+)$")
  return tonumber(status), text
end

describe("network rules over HTTPS", function()
  local dir, srv, stop_srv, client, port, rogue_port, rogue_log, pids
  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. h.shell_quote(dir)))
    write(dir .. "/server.py", SERVER)
    make_certs(dir)
    pids = {}
    local up = { start_upstream(dir, "up", "up.pem", "up.key") }
    port, pids[1] = up[1], up[3]
    rogue_port, rogue_log, pids[2] = start_upstream(dir, "rogue", "rogue.pem", "rogue.key")
    srv, stop_srv = h.serve_local("", "E2B_LOCAL_EGRESS_CA_FILE=" .. h.shell_quote(dir .. "/ca.pem"))
    assert(srv.E2B_API_URL, "the second e2b-local did not start")
    client = h.client({ api_key = srv.E2B_API_KEY, api_url = srv.E2B_API_URL, sandbox_url = srv.E2B_SANDBOX_URL,
                        domain = srv.E2B_DOMAIN, ca_file = srv.E2B_CA_FILE })
  end)
  teardown(function()
    h.cleanup()
    local log = stop_srv and stop_srv() or ""
    h.host("kill " .. table.concat(pids, " ") .. " 2>/dev/null; rm -rf " .. h.shell_quote(dir))
    -- no header value ever reaches the log; the refused upstream is named
    assert.is_nil(log:find("from-rules", 1, true))
    assert.matches("egress TLS to api%.localhost:%d+: the upstream's certificate is not trusted", log)
    assert.is_nil(log:find("ERROR: %a+Sanitizer") or log:find("runtime error:", 1, true), log) -- under ASan/UBSan
  end)

  -- A sandbox that may reach the host's loopback (by name or address) with rules for the given hosts.
  local function sandbox_with_rules(...)
    local allow = { "localhost", "*.localhost", "127.0.0.1/32" }
    local sbx = h.sandbox({ network = { allow = allow } }, client)
    local rules = {}
    for _, host in ipairs({ ... }) do
      rules[host] = { { transform = { headers = { ["X-Injected"] = "from-rules", Authorization = "Bearer from-rules" } } } }
    end
    local status = api(srv, "PUT", "/sandboxes/" .. sbx.sandbox_id .. "/network",
      cjson.encode({ allowOut = allow, denyOut = { "0.0.0.0/0" }, rules = rules }))
    assert.are.equal(204, status)
    return sbx
  end

  local lines = h.json_lines

  local function curl(sbx, extra, ...)
    local cmd = { "curl", "-s", "--max-time", "10", "-H", "X-Injected: sandbox-own" }
    for _, a in ipairs(extra) do cmd[#cmd + 1] = a end
    for _, url in ipairs({ ... }) do cmd[#cmd + 1] = url end
    return assert(sbx:run(cmd))
  end

  -- The issuer of the certificate the sandbox's curl was shown for url.
  local function issuer(sbx, url, extra)
    local cmd = { "curl", "-sv", "-o", "/dev/null", "--max-time", "10" }
    for _, a in ipairs(extra or {}) do cmd[#cmd + 1] = a end
    cmd[#cmd + 1] = url
    return (assert(sbx:run(cmd)).stderr:match("issuer: ([^\r\n]+)"))
  end

  it("adds the rules' headers to HTTPS requests for a host with rules, behind a certificate from e2b-local's CA", function()
    local sbx = sandbox_with_rules("api.localhost")
    local base = ("https://api.localhost:%d"):format(port)
    -- curl checks the certificate against the sandbox's system store (no -k)
    local r = curl(sbx, {}, base .. "/a", base .. "/b")
    assert.are.equal(0, r.exit_code, r.stderr)
    local got = lines(r.stdout)
    assert.are.equal(2, #got)
    assert.are.same({ "/a", "/b" }, { got[1].path, got[2].path })
    assert.are.equal(got[1].conn, got[2].conn) -- one TLS connection, both requests rewritten
    for _, g in ipairs(got) do
      assert.are.same({ "from-rules" }, g.h["X-Injected"])
      assert.are.same({ "Bearer from-rules" }, g.h.Authorization)
      assert.are.same({ ("api.localhost:%d"):format(port) }, g.h.Host)
    end
    assert.matches("^CN=e2b%-local CA", issuer(sbx, base .. "/"))
    -- the same upstream by address: no rule can name one (E2B takes domain names
    -- only), so its TLS is the upstream's own, untouched
    assert(sbx.files:write("/tmp/up-ca.pem", slurp(dir .. "/ca.pem")))
    local by_ip = ("https://127.0.0.1:%d/ip"):format(port)
    r = curl(sbx, { "--cacert", "/tmp/up-ca.pem" }, by_ip)
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.are.same({ "sandbox-own" }, lines(r.stdout)[1].h["X-Injected"])
    assert.are.equal("CN=spec upstream CA", issuer(sbx, by_ip, { "--cacert", "/tmp/up-ca.pem" }))
    -- clients with stores of their own are pointed at the CA too; never its key
    local env = assert(sbx:run("echo $NODE_EXTRA_CA_CERTS $REQUESTS_CA_BUNDLE; cat $NODE_EXTRA_CA_CERTS")).stdout
    assert.matches("^/run/e2b/ca.pem /etc/ssl/certs/ca%-certificates.crt\n%-%-%-%-%-BEGIN CERTIFICATE", env)
    assert.is_nil(env:find("PRIVATE KEY", 1, true))
    -- Python's own TLS (urllib through https_proxy, the default store)
    local py = assert(sbx:run({ "python3", "-c", "import json, urllib.request as u; " ..
      "r = u.urlopen(u.Request('" .. base .. "/py', headers={'X-Injected': 'own'}), timeout=10); " ..
      "print(json.loads(r.read())['h']['X-Injected'][0])" }))
    assert.are.equal("from-rules\n", py.stdout, py.stderr)
    h.assert_healthy({ sbx }, client)
  end)

  it("leaves HTTPS to a host without rules untouched: the sandbox sees the upstream's own certificate", function()
    local sbx = sandbox_with_rules("other.localhost")
    assert(sbx.files:write("/tmp/up-ca.pem", slurp(dir .. "/ca.pem")))
    local url = ("https://api.localhost:%d/plain"):format(port)
    local r = curl(sbx, { "--cacert", "/tmp/up-ca.pem" }, url)
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.are.same({ "sandbox-own" }, lines(r.stdout)[1].h["X-Injected"])
    assert.are.equal("CN=spec upstream CA", issuer(sbx, url, { "--cacert", "/tmp/up-ca.pem" }))
  end)

  it("never reaches an upstream whose certificate it cannot verify (fails closed)", function()
    local sbx = sandbox_with_rules("api.localhost")
    local before = select(2, slurp(rogue_log):gsub("request /", ""))
    local r = curl(sbx, {}, ("https://api.localhost:%d/secret"):format(rogue_port))
    assert.are_not.equal(0, r.exit_code)
    assert.are.equal("", r.stdout)
    assert.are.equal(before, select(2, slurp(rogue_log):gsub("request /", "")))
    h.assert_healthy({ sbx }, client)
  end)

  it("limits how fast one sandbox starts intercepted handshakes, and others still get theirs", function()
    local bystander = sandbox_with_rules("api.localhost")
    local sbx = sandbox_with_rules("api.localhost")
    local target = ("api.localhost:%d"):format(port)
    local r = assert(sbx:run({ "python3", "-c", FLOOD, target, "200" }))
    local done, refused = r.stdout:match("^done (%d+) refused (%d+) left 0\n$")
    assert(done, r.stdout .. r.stderr)
    -- 200 at once are more than a burst of 64 and 32 a second can cover
    assert.is_true(tonumber(refused) > 0, r.stdout)
    assert.is_true(tonumber(done) > 0, r.stdout)
    r = curl(bystander, {}, ("https://%s/other"):format(target))
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.are.same({ "from-rules" }, lines(r.stdout)[1].h["X-Injected"])
    h.assert_healthy({ bystander, sbx }, client)
  end)

  it("survives a hostile client's handshake: junk, a huge record, stalled ClientHellos", function()
    local bystander = h.sandbox({}, client)
    local sbx = sandbox_with_rules("api.localhost")
    local target = ("api.localhost:%d"):format(port)
    for _, mode in ipairs({ "garbage", "huge" }) do
      local r = assert(sbx:run({ "python3", "-c", HOSTILE, target, mode, "8" }))
      assert.are.equal("ended 8\n", r.stdout, r.stderr) -- each such connection ends, the server stays
    end
    -- stalled handshakes stay open in the background while others are served
    assert(sbx.files:write("/tmp/hostile.py", HOSTILE))
    assert(sbx:run("python3 /tmp/hostile.py " .. target .. " stall 32 >/tmp/stalled 2>&1 &"))
    local stalled
    for _ = 1, 100 do
      stalled = assert(sbx:run("cat /tmp/stalled")).stdout
      if stalled ~= "" then break end
      h.e2b.sleep(50)
    end
    assert.are.equal("stalled 32\n", stalled)
    local r = curl(sbx, {}, ("https://%s/after"):format(target))
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.are.same({ "from-rules" }, lines(r.stdout)[1].h["X-Injected"])
    h.assert_healthy({ bystander, sbx }, client)
  end)
end)
