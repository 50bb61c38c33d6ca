-- serve_page: serve a page from inside a sandbox (python3 -m http.server)
-- and fetch it from outside through the sandbox's public URL.
--
--   e2b-local exec -- lua5.4 examples/serve_page.lua    (or luajit)
--
-- sbx:url(8000) is https://8000-<id>.<domain>: on e2b-local
-- https://8000-<id>.e2b.localhost:<port>, which curl resolves to loopback,
-- with a certificate from e2b-local's own CA (E2B_CA_FILE, set by exec).
local e2b = require("e2b")

local client = assert(e2b.client{})
local sbx = assert(client:create{})

assert(sbx.files:write("/home/user/site/index.html", "<h1>Hello from " .. sbx.sandbox_id .. "</h1>\n"))
local server = assert(sbx:spawn({ "python3", "-m", "http.server", "8000" }, { cwd = "/home/user/site" }))

local url = sbx:url(8000) .. "/"
print("serving at " .. url)

-- curl reads its options from a private file: the traffic token (needed
-- only when the sandbox's public traffic is restricted) is a secret and
-- must not show up in the host's process list.
local config = os.tmpname()
local f = assert(io.open(config, "w"))
f:write(("url = %q\nsilent\nmax-time = 2\n"):format(url))
if os.getenv("E2B_CA_FILE") then f:write(("cacert = %q\n"):format(os.getenv("E2B_CA_FILE"))) end
if sbx.traffic_token then f:write(("header = %q\n"):format("e2b-traffic-access-token: " .. sbx.traffic_token)) end
f:close()

local body = ""
for _ = 1, 100 do -- until the server listens, the proxy answers 502
  local curl = io.popen("curl -K " .. config)
  body = curl:read("*a")
  curl:close()
  if body:find("Hello from", 1, true) then break end
  e2b.sleep(100)
end
os.remove(config)
io.write("fetched: " .. body)
assert(body:find("Hello from " .. sbx.sandbox_id, 1, true), "the page did not come back")
server:close()
assert(sbx:kill())
