-- What a sandbox can influence reaches the client too (envd's answers): a
-- hostile envd must not grow the client without bound. The envd here is a
-- fake on the host's loopback whose every answer is an endless body; the
-- control plane is e2b-local's.
local h = require("spec.helpers")

-- Answers every request 200 with an endless chunked body of zeros.
local ENDLESS_ENVD = [[
import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"\0" * 65536
        try:
            while True:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except OSError:
            pass
    do_POST = do_GET
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
]]

-- Starts the fake envd: its URL and a stop function.
local function endless_envd()
  local file = os.tmpname()
  local pid = h.host(("python3 -c %s %s >/dev/null 2>&1 & echo $!")
    :format(h.shell_quote(ENDLESS_ENVD), h.shell_quote(file))):match("%d+")
  local port
  for _ = 1, 100 do
    local f = io.open(file)
    port = f and f:read("a"):match("^%d+$")
    if f then f:close() end
    if port then break end
    h.e2b.sleep(50)
  end
  local function stop() h.host("kill " .. pid .. " 2>/dev/null; rm -f " .. h.shell_quote(file)) end
  if not port then stop() error("the fake envd did not start") end
  return "http://127.0.0.1:" .. port, stop
end

describe("client containment (e2b-local only)", function()
  if h.live then return end
  local url, stop, sbx
  setup(function()
    url, stop = endless_envd()
    local real = h.sandbox({})
    -- the same sandbox, its envd calls sent to the fake
    local c = h.client({ sandbox_url = url })
    sbx = assert(c:connect(real.sandbox_id))
  end)
  teardown(function()
    stop()
    h.cleanup()
  end)

  it("bounds a whole-file read of an endless body by max_bytes, with a clear error", function()
    local data, err = sbx.files:read("/home/user/x", { max_bytes = 4 * 1024 * 1024 })
    assert.is_nil(data)
    assert.are.equal("invalid_argument", err.kind)
    assert.are.equal("max_bytes", err.field)
    assert.truthy(err.message:find("larger than 4194304 bytes", 1, true), err.message)
  end)

  it("bounds it by default too (256 MiB), the client's memory staying near that", function()
    local data, err = sbx.files:read("/home/user/x")
    assert.is_nil(data)
    assert.truthy(err.message:find("larger than 268435456 bytes", 1, true), err.message)
    collectgarbage()
    collectgarbage()
    assert.is_true(collectgarbage("count") < 64 * 1024, tostring(collectgarbage("count")))
  end)
end)
