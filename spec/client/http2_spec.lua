-- Over HTTP/2, as E2B's edge speaks it: calls started together share one
-- connection. Against a second e2b-local started with --h2 (its HTTPS port
-- served by nghttpx, offering h2 and http/1.1), whose counters count the
-- client's connections to that port.
local h = require("spec.helpers")
local stats = require("spec.server_stats")

if h.live then return end

local function with_h2(args, fn)
  local vars, stop = h.serve_local("--h2 " .. (args or ""))
  local ok, err = pcall(function()
    assert(vars.E2B_DOMAIN and vars.E2B_CA_FILE, "the --h2 server did not start")
    fn(vars)
  end)
  local log = stop()
  assert(ok, tostring(err) .. "\n" .. log)
end

describe("e2b-local --h2", function()
  it("counts the client's connections, handshakes and requests, not the front's own", function()
    with_h2(nil, function(v)
      local before = stats.read(v.E2B_API_URL, v.E2B_LOCAL_ADMIN_TOKEN)
      local url = ("https://api.%s/sandboxes"):format(v.E2B_DOMAIN)
      local out = h.host(("curl -s --cacert %s -H 'X-API-Key: %s' -o /dev/null -o /dev/null " ..
        "-w '%%{num_connects}/%%{http_version} ' '%s' '%s'; curl -s --http1.1 --cacert %s -H 'X-API-Key: %s' " ..
        "-o /dev/null -w '%%{num_connects}/%%{http_version}' '%s'")
        :format(v.E2B_CA_FILE, v.E2B_API_KEY, url, url, v.E2B_CA_FILE, v.E2B_API_KEY, url))
      local after = stats.read(v.E2B_API_URL, v.E2B_LOCAL_ADMIN_TOKEN)
      -- one curl asked twice over one HTTP/2 connection, a second once over HTTP/1.1
      assert.are.equal("1/2 0/2 1/1.1", out)
      assert.are.equal("nghttpx", after.https.front)
      assert.are.equal(2, after.https.connections - before.https.connections)
      assert.are.equal(2, after.https.tls_handshakes - before.https.tls_handshakes)
      assert.are.equal(3, after.https.requests - before.https.requests)
    end)
  end)

  it("delays every request on a new connection until its set-up (2*MS) is over, then MS", function()
    local L = 200
    with_h2("--latency " .. L, function(v)
      local url = ("https://api.%s/sandboxes"):format(v.E2B_DOMAIN)
      local out = h.host(("curl -s --cacert %s -o /dev/null -o /dev/null -w '%%{num_connects} %%{time_total}\\n' '%s' '%s'")
        :format(v.E2B_CA_FILE, url, url))
      local rows = {}
      for n, t in out:gmatch("(%d+) ([%d.]+)") do rows[#rows + 1] = { n = tonumber(n), ms = tonumber(t) * 1000 } end
      assert.are.equal(2, #rows, out)
      assert.is_true(rows[1].ms >= 3 * L, "the first answer took " .. rows[1].ms .. " ms")
      assert.are.equal(0, rows[2].n, "the second request reused the connection")
      assert.is_true(rows[2].ms >= L, "the second answer took " .. rows[2].ms .. " ms")
    end)
  end)
end)
