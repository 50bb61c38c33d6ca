-- Over HTTP/2, as E2B's edge speaks it: calls started together share one
-- connection. Against a second e2b-local started with --h2 (its HTTPS port
-- served by nghttpx, offering h2 and http/1.1), whose counters count the
-- client's connections to that port. A fresh client (only the domain and
-- the CA) learns from its first answer that its servers multiplex, and 20
-- runs started at once on a sandbox it has not spoken to yet open one
-- connection to it, not one each (CURLOPT_PIPEWAIT, transfer.c).
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

describe("e2b-local --h2's front", function()
  -- nghttpx, not e2b-local, accepts these connections: the egress proxy's
  -- refusal of e2b-local's own ports is what keeps sandboxes off it.
  it("is out of a sandbox's reach even when its policy names the loopback", function()
    local url, stop_http = h.http_server("host loopback")
    local ok, err = pcall(with_h2, nil, function(v)
      local c = h.client({ api_url = v.E2B_API_URL, sandbox_url = v.E2B_SANDBOX_URL, api_key = v.E2B_API_KEY,
                           domain = v.E2B_DOMAIN })
      local sbx = h.sandbox({ network = { allow = { "127.0.0.0/8" } } }, c)
      local function code(u)
        return assert(sbx:run({ "curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", u })).stdout
      end
      assert.are.equal("200", code(url .. "/"), "the host's loopback is reachable as the policy says")
      assert.are.equal("000", code(("https://127.0.0.1:%s/health"):format(v.E2B_DOMAIN:match(":(%d+)$"))))
      assert.are.equal("000", code(("https://localhost:%s/health"):format(v.E2B_DOMAIN:match(":(%d+)$"))))
      assert(sbx:kill())
    end)
    stop_http()
    assert(ok, err)
  end)
end)

describe("20 runs started together over HTTP/2", function()
  it("open one connection to a sandbox the client has not spoken to yet", function()
    with_h2(nil, function(v)
      local code = [[
        local e2b = require("e2b")
        local stats = require("spec.server_stats")
        local url, token = os.getenv("STATS_URL"), os.getenv("STATS_TOKEN")
        local c = assert(e2b.client{})
        local sbx = assert(c:create{})
        local before = stats.read(url, token)
        e2b.run(function()
          local tasks = {}
          for i = 1, 20 do tasks[i] = e2b.spawn(function() return assert(sbx:run("true")) end) end
          for i = 1, 20 do assert(tasks[i]:wait()) end
        end)
        local after = stats.read(url, token)
        assert(sbx:kill())
        io.write(after.https.connections - before.https.connections, " ",
                 after.https.requests - before.https.requests)
      ]]
      local env = { STATS_URL = v.E2B_API_URL, STATS_TOKEN = v.E2B_LOCAL_ADMIN_TOKEN, E2B_DOMAIN = v.E2B_DOMAIN,
                    E2B_API_KEY = v.E2B_API_KEY, E2B_CA_FILE = v.E2B_CA_FILE }
      local out = h.fresh_lua(code, { bare = true, env = env })
      local conns, requests = out:match("^(%d+) (%d+)$")
      assert(conns, "the workload failed: " .. out)
      assert.are.equal(20, tonumber(requests))
      assert.are.equal(1, tonumber(conns), conns .. " connections for 20 runs")
    end)
  end)
end)
