-- Connections are reused: over a real network each new connection costs a
-- TCP round trip, and over HTTPS a TLS handshake more, on every call that
-- opens one. Counted by e2b-local itself (GET /_e2b_local/stats), after a
-- warm-up, a steady stream of calls on one sandbox opens no new connection:
-- runs (kept output, the default, and unkept), a spawned process's stream,
-- files written and read back, and control-plane calls; over plain HTTP and
-- over HTTPS (the SDKs' own URL shapes).
local h = require("spec.helpers")
local stats = require("spec.server_stats")

if h.live then return end

local N = 12

-- The workload, run by the client `c` on sandbox `sbx`: one round of it
-- per call. `what` picks it.
local WORKLOAD = [[
  local what, c, sbx = ...
  if what == "run" then assert(sbx:run("true"))
  elseif what == "unkept" then assert(sbx:run("true", { keep_output = false }))
  elseif what == "spawn" then
    local p = assert(sbx:spawn("echo one; echo two"))
    local got = {}
    for line in p:lines() do got[#got + 1] = line end
    assert(#got == 2, "the stream lost lines")
    assert(p:wait())
  elseif what == "files" then
    assert(sbx.files:write("/home/user/f", "\0bytes\255"))
    assert(assert(sbx.files:read("/home/user/f")) == "\0bytes\255")
  elseif what == "control" then
    assert(sbx:info())
    assert(sbx:set_timeout(300000))
    assert(c:list())
  elseif what == "create" then
    assert(assert(c:create{}):kill())
  elseif what == "burst" then
    local e2b = require("e2b")
    e2b.run(function()
      local tasks = {}
      for i = 1, 100 do tasks[i] = e2b.spawn(function() return assert(sbx:run("echo " .. i)).stdout end) end
      for i = 1, 100 do assert(tasks[i]:wait() == i .. "\n") end
    end)
  end
]]

-- new connections (and TLS handshakes) while `n` rounds of `what` run
-- after two warm-up rounds, on a fresh client; over HTTPS with `https`.
-- Runs in a fresh interpreter so that the HTTPS client has only the
-- domain and the CA, as `e2b-local exec` hands them to the SDKs.
local function cost(what, n, https)
  local code = ([[
    local stats = require("spec.server_stats")
    local url, token = os.getenv("STATS_URL"), os.getenv("STATS_TOKEN")
    local round = load(%q)
    local e2b = require("e2b")
    local c = assert(e2b.client{})
    local sbx = assert(c:create{})
    for _ = 1, 2 do round(%q, c, sbx) end
    local before = stats.read(url, token)
    for _ = 1, %d do round(%q, c, sbx) end
    local after = stats.read(url, token)
    assert(sbx:kill())
    local l = %q
    io.write(after[l].connections - before[l].connections - (l == "http" and 1 or 0), " ",
             (after.https.tls_handshakes - before.https.tls_handshakes), " ",
             after[l].requests - before[l].requests - (l == "http" and 1 or 0))
  ]]):format(WORKLOAD, what, n, what, https and "https" or "http")
  local env = { STATS_URL = os.getenv("E2B_API_URL"), STATS_TOKEN = os.getenv("E2B_LOCAL_ADMIN_TOKEN") }
  if https then
    for _, k in ipairs({ "E2B_DOMAIN", "E2B_API_KEY", "E2B_CA_FILE" }) do env[k] = os.getenv(k) end
  end
  local out = h.fresh_lua(code, { bare = https, env = env })
  local conns, handshakes, requests = out:match("^(%-?%d+) (%-?%d+) (%-?%d+)$")
  assert(conns, "the workload failed: " .. out)
  return tonumber(conns), tonumber(handshakes), tonumber(requests)
end

for _, https in ipairs({ false, true }) do
  local over = https and "over HTTPS" or "over plain HTTP"
  describe("connection reuse " .. over, function()
    -- A spawned kept command that outlives its first pass (a loaded host)
    -- has its files read beside its own stream, and its sandbox's watch
    -- starts: the pool may grow by the connections that concurrency needs,
    -- once. One per command is what none of them may cost.
    local allowance = { spawn = 2 }
    for _, what in ipairs({ "run", "unkept", "spawn", "files", "control" }) do
      local most = allowance[what] or 0
      it(("%d rounds of %s after a warm-up open %s %s"):format(N, what,
          most == 0 and "no new connection" or ("at most " .. most .. " new connections"), over), function()
        local conns, handshakes, requests = cost(what, N, https)
        assert.is_true(requests >= N, "the workload reached the server: " .. requests .. " requests")
        assert.is_true(conns <= most, ("%d new connections for %d requests"):format(conns, requests))
        assert.is_true(handshakes <= (https and most or 0), handshakes .. " TLS handshakes")
      end)
    end
  end)
end

describe("a burst's connections", function()
  -- An agent's commands often come in bursts: the connections one burst
  -- opened serve the next, as the SDK's pool keeps them, instead of a new
  -- connection (a TLS handshake) for each command past a few idle ones.
  for _, https in ipairs({ false, true }) do
    it("serve the next bursts of 100 runs at once " .. (https and "over HTTPS" or "over plain HTTP"), function()
      local conns, handshakes, requests = cost("burst", 3, https)
      assert.are.equal(300, requests)
      assert.are.equal(0, conns)
      assert.are.equal(0, handshakes)
    end)
  end
end)

describe("a run's round trips", function()
  -- Kept output (the default) reaches the caller inlined at the end of the
  -- Start stream it already has: no read, no watch, no extra request.
  it("are one request for a kept run(), as for an unkept one", function()
    for _, what in ipairs({ "run", "unkept" }) do
      local _, _, requests = cost(what, N, false)
      assert.are.equal(N, requests, what)
    end
  end)
end)

describe("a create's round trips", function()
  -- E2B answers a create once the sandbox's envd is up (its orchestrator
  -- waits for envd before it answers), and the official SDKs send nothing
  -- more: a create is one request, and with the kill after it, two.
  it("are one request, as the SDK's, unless a readiness wait is asked for", function()
    local _, _, requests = cost("create", N, false)
    assert.are.equal(2 * N, requests)
  end)
end)

describe("e2b-local's counters", function()
  it("count each new connection, its TLS handshake and its requests, per listener", function()
    local before = stats.read()
    local ca, domain = os.getenv("E2B_CA_FILE"), os.getenv("E2B_DOMAIN")
    local out = h.host(("curl -s --cacert %s -o /dev/null -o /dev/null -w '%%{num_connects} ' " ..
      "https://api.%s/sandboxes https://api.%s/sandboxes; curl -s --cacert %s -o /dev/null " ..
      "-w '%%{num_connects}' https://api.%s/sandboxes"):format(ca, domain, domain, ca, domain))
    local after = stats.read()
    assert.are.equal("1 0 1", out)
    -- one curl asked twice on one connection, a second once on its own
    assert.are.equal(2, after.https.connections - before.https.connections)
    assert.are.equal(2, after.https.tls_handshakes - before.https.tls_handshakes)
    assert.are.equal(3, after.https.requests - before.https.requests)
    -- the second read is one connection and one request on the plain listener
    assert.are.equal(1, after.http.connections - before.http.connections)
    assert.are.equal(1, after.http.requests - before.http.requests)
  end)

  it("are the admin API's: refused without its token", function()
    local code = h.host(("curl -s -o /dev/null -w '%%{http_code}' '%s/_e2b_local/stats'"):format(os.getenv("E2B_API_URL")))
    assert.are.equal("403", code)
  end)
end)

-- curl sends a request again by itself, on a fresh connection, when the
-- reused one it went out on closes without an answer; a process Start or
-- a create that the server may have carried out must never go twice. A
-- rule that drops the first two such requests shows how many were sent.
describe("a call that must not run twice, on a reused connection that closes with no answer", function()
  after_each(function()
    h.faults()
    h.cleanup()
  end)

  local function remaining(match)
    for _, r in ipairs(stats.get("/_e2b_local/faults").rules) do
      if r.match == match then return r.remaining end
    end
  end

  it("a process Start is sent once and fails as unavailable", function()
    local sbx = h.sandbox()
    assert(sbx:run("true")) -- its connection is now in the pool
    local match = "POST envd:/process.Process/Start"
    h.faults({ { match = match, action = "drop", count = 2 } })
    local r, err = sbx:run("true", { keep_output = false })
    assert.is_nil(r)
    assert.are.equal("unavailable", err.kind, tostring(err))
    assert.are.equal(1, remaining(match), "the Start was sent again")
  end)

  it("a create is sent once and fails as unavailable", function()
    local c = h.client()
    assert(c:list()) -- a control-plane connection is now in the pool
    local match = "POST /v2/sandboxes"
    h.faults({ { match = match, action = "drop", count = 2 } })
    local sbx, err = c:create{}
    assert.is_nil(sbx)
    assert.are.equal("unavailable", err.kind, tostring(err))
    assert.are.equal(1, remaining(match), "the create was sent again")
  end)
end)

-- --latency: e2b-local answers as a server that far away would, so what a
-- client's connection churn costs shows on loopback. Only lower bounds are
-- asserted (a loaded machine is slower, never faster).
describe("e2b-local --latency MS", function()
  it("delays each answer by MS and a new connection's set-up by MS more, 2*MS over HTTPS", function()
    local L = 200
    local vars, stop = h.serve_local("--latency " .. L)
    local ok, err = pcall(function()
      assert(vars.E2B_DOMAIN, "the second server did not start")
      local fmt = "'%{num_connects} %{time_connect} %{time_appconnect} %{time_total}\\n'"
      local function timings(url, extra)
        local out = h.host(("curl -s %s -o /dev/null -o /dev/null -w %s '%s' '%s'")
          :format(extra or "", fmt, url, url))
        local rows = {}
        for n, tc, ta, tt in out:gmatch("(%d+) ([%d.]+) ([%d.]+) ([%d.]+)") do
          rows[#rows + 1] = { n = tonumber(n), connect = tonumber(tc) * 1000, tls = tonumber(ta) * 1000,
                              total = tonumber(tt) * 1000 }
        end
        assert(#rows == 2, out)
        return rows
      end
      local https = timings(("https://api.%s/sandboxes"):format(vars.E2B_DOMAIN), "--cacert " .. vars.E2B_CA_FILE)
      assert.are.equal(1, https[1].n)
      assert.is_true(https[1].tls >= 2 * L, "the TLS handshake took " .. https[1].tls .. " ms")
      assert.is_true(https[1].total >= 3 * L, "the first answer took " .. https[1].total .. " ms")
      assert.are.equal(0, https[2].n, "the second request reused the connection")
      assert.is_true(https[2].total >= L, "the second answer took " .. https[2].total .. " ms")
      local plain = timings(vars.E2B_API_URL .. "/sandboxes")
      assert.is_true(plain[1].total >= 2 * L, "the first plain answer took " .. plain[1].total .. " ms")
      assert.are.equal(0, plain[2].n)
      assert.is_true(plain[2].total >= L, "the second plain answer took " .. plain[2].total .. " ms")
    end)
    stop()
    assert(ok, err)
  end)

  it("refuses a latency it cannot honour, naming the option", function()
    local out = h.host(("%s serve --latency 10001 2>&1; %s serve --latency x 2>&1")
      :format(h.shell_quote(h.e2b_local_bin()), h.shell_quote(h.e2b_local_bin())))
    local _, n = out:gsub("invalid %-%-latency", "")
    assert.are.equal(2, n, out)
  end)
end)

describe("a sandbox's output watch nobody waits on", function()
  -- The watch a kept reader started stays a while for the next reader (it
  -- saves that reader a connection), but while it stays every kept command
  -- the sandbox runs sends it several events that nobody reads: a
  -- burst of 200 run()s cost the client about twice its CPU, e2b-local a
  -- third more (bench/README.md, burst). Counted on the host: the inotify
  -- descriptors e2b-local's processes (the sandbox's agent) hold.
  local function watches(server)
    return tonumber(h.host(([[ps -e -o pid=,ppid= | awk -v root=%d '{ kid[$2] = kid[$2] " " $1 }
      END { n = split(kid[root], q, " "); while (n > 0) { p = q[n--]; print p; m = split(kid[p], c, " ");
      for (i = 1; i <= m; i++) q[++n] = c[i] } }' | while read -r pid; do ls -l /proc/$pid/fd 2>/dev/null; done |
      grep -c 'anon_inode:inotify']]):format(server)))
  end

  it("ends once the kept commands that nobody reads have sent it a few dozen events", function()
    local server = assert(h.server_process(), "runs under e2b-local exec")
    local sbx = h.sandbox()
    local before = watches(server)
    -- parked (park = true) rather than followed: a followed reader needs no watch
    local p = assert(sbx:spawn("sleep 0.3; echo x", { park = true }))
    for _ in p:lines() do end
    assert(p:wait())
    p:close()
    assert.are.equal(before + 1, watches(server), "the reader's watch stays for the next reader")
    -- 30 runs send it a few hundred events; before, it stayed its full 10 s
    -- linger, far longer than these runs and this wait take
    for _ = 1, 30 do assert(sbx:run("true")) end
    assert.is_true(h.eventually(function() return watches(server) == before end, 3000),
      "the watch still carries the events of commands nobody reads")
  end)
end)

describe("a connect's round trips", function()
  after_each(h.cleanup)
  -- requests the plain listener served while fn ran (the closing stats
  -- read counts itself: one less)
  local function requests(fn)
    local before = stats.read()
    local back = fn()
    return stats.read().http.requests - before.http.requests - 1, back
  end
  local function left_ms(sbx) return assert(sbx:info()).end_at - os.time() * 1000 end

  -- E2B's connect never shortens a running sandbox's deadline (its
  -- KeepAliveFor refuses a shorter one) and answers it with what a handle
  -- needs (id, envd version, token, domain): one request, as the SDK's. Its
  -- logical id and metadata stay unknown until asked (info()).
  it("are one request to a running sandbox, and its longer deadline stays", function()
    local sbx = h.sandbox({ timeout_ms = 600000, metadata = { k = "v" } })
    local n, back = requests(function() return assert(h.client():connect(sbx.sandbox_id)) end)
    assert.are.equal(1, n)
    assert.is_nil(back.id)
    assert.is_nil(back.metadata)
    local info = assert(back:info())
    assert.are.equal(sbx.id, info.id)
    assert.are.equal("v", info.metadata.k)
    local left = left_ms(back)
    assert.is_true(left > 590000 and left <= 601000, tostring(left))
    assert(back:run("true"))
  end)

  -- A paused sandbox resumed with less than it was created with (known from
  -- the metadata the read brings) gets its lifetime back: one request more.
  it("are three to a paused one, which gets back the lifetime it was created with", function()
    local sbx = h.sandbox({ timeout_ms = 600000 })
    assert(sbx:pause())
    local n, back = requests(function() return assert(h.client():connect(sbx.sandbox_id)) end)
    assert.are.equal(3, n)
    local left = left_ms(back)
    assert.is_true(left > 590000 and left <= 601000, tostring(left))
    assert(back:run("true"))
  end)

  -- Where the lifetime is known before connecting, the connect itself asks
  -- for it: the client whose handle paused the sandbox, the handle itself,
  -- a resume by logical id (its search brings the metadata).
  it("are one to a sandbox this client paused, the lifetime asked for in the connect", function()
    local c = h.client()
    local sbx = h.sandbox({ timeout_ms = 600000 }, c)
    assert(sbx:pause())
    local n, back = requests(function() return assert(c:connect(sbx.sandbox_id)) end)
    assert.are.equal(1, n)
    local left = left_ms(back)
    assert.is_true(left > 590000 and left <= 601000, tostring(left))
    assert(sbx:pause())
    n = requests(function() return assert(sbx:connect()) end)
    assert.are.equal(1, n)
    left = left_ms(sbx)
    assert.is_true(left > 590000 and left <= 601000, tostring(left))
  end)

  -- The search brings state, metadata and the created lifetime: the
  -- connect asks for that lifetime, and nothing is read after it.
  it("are two for a resume by logical id: the search, the connect", function()
    local sbx = h.sandbox({ timeout_ms = 600000, metadata = { k = "v" } })
    assert(sbx:pause())
    local n, back = requests(function() return assert(h.client():resume(sbx.id)) end)
    assert.are.equal(2, n)
    assert.are.equal(sbx.id, back.id)
    assert.are.equal("v", back.metadata.k)
    local left = left_ms(back)
    assert.is_true(left > 590000 and left <= 601000, tostring(left))
  end)
end)

-- A kept command's files (.out, .err, .exit) go in one request that
-- removes them all, never one request per file, at a handle's close (what
-- is still queued); output past a MiB goes with the next kept command, at
-- no request of its own.
describe("removing a kept command's files", function()
  -- Run in a fresh interpreter, so that no earlier spec's handle, collected
  -- meanwhile, sends its own cleanup in the window counted. `case`: "close"
  -- (a connected handle closes with the name queued; the removal goes out
  -- with its client's next call), "large" (output past a MiB, removed by
  -- the next kept command, a run counted as the caller's). Waits until the files are gone, looking through another handle
  -- (an unkept run: one request per look), and prints the requests and new
  -- connections the plain listener saw, less the looks and the drives.
  local CODE = [[
    local case = ...
    local stats = require("spec.server_stats")
    local e2b = require("e2b")
    local c, c2 = assert(e2b.client{}), assert(e2b.client{})
    local sbx = assert(c:create{})
    local other = assert(c2:connect(sbx.sandbox_id))
    local p
    if case == "close" then
      p = assert(other:spawn("echo x"))
      for _ in p:lines() do end
    else
      assert(other:run("true"))
      p = assert(other:spawn("head -c 1200000 /dev/zero"))
      local n = 0
      while true do
        local chunk = p:read()
        if not chunk then break end
        n = n + #chunk
      end
      assert(n == 1200000, "read " .. n)
    end
    assert(p:wait())
    local prefix = "/tmp/.e2b-proc/" .. p.tag:gsub(".", function(ch) return ("%02x"):format(ch:byte()) end)
    local look = ("test -e %s.out || test -e %s.err || test -e %s.exit"):format(prefix, prefix, prefix)
    if case == "close" then p:close() end
    collectgarbage()
    local before = stats.read()
    if case == "close" then other:close() else p:close() end
    local spent, gone = 0, false
    if case == "large" then
      assert(other:run("true"))
      spent = 1
    end
    for _ = 1, 200 do
      if case == "close" then assert(c2:list()) spent = spent + 1 end
      local r = assert(sbx:run(look, { keep_output = false }))
      spent = spent + 1
      if r.exit_code ~= 0 then gone = true break end
    end
    local after = stats.read()
    assert(gone, "the files are still there")
    assert(sbx:kill())
    io.write(after.http.requests - before.http.requests - 1 - spent, " ",
             after.http.connections - before.http.connections - 1)
  ]]
  local function cost_of(case)
    local out = h.fresh_lua(("assert(load(%q))(%q)"):format(CODE, case),
      { env = { E2B_API_URL = os.getenv("E2B_API_URL"), E2B_LOCAL_ADMIN_TOKEN = os.getenv("E2B_LOCAL_ADMIN_TOKEN") } })
    local requests, conns = out:match("^(%-?%d+) (%-?%d+)$")
    assert(requests, "the workload failed: " .. out)
    return tonumber(requests), tonumber(conns)
  end

  it("cost one request at a handle's close", function()
    assert.are.equal(1, (cost_of("close")))
  end)

  it("cost no request of their own for output past a MiB: the next kept command removes them", function()
    local requests, conns = cost_of("large")
    assert.are.equal(0, requests)
    assert.is_true(conns <= 1, conns .. " new connections")
  end)
end)

describe("a streamed kept command's round trips", function()
  -- Its wrapper follows the command's files onto the start's own stream,
  -- so until its handle closes a streamed kept command costs the one
  -- request an unkept one costs (the SDK's): no watch, no read of a file.
  -- Counted in a fresh interpreter, so no earlier spec's collected handle
  -- sends its cleanup in the window.
  local CODE = [[
    local keep = ...
    local stats = require("spec.server_stats")
    local e2b = require("e2b")
    local c = assert(e2b.client{})
    local sbx = assert(c:create{})
    assert(sbx:run("true"))
    local before = stats.read()
    local p = assert(sbx:spawn("head -c 3000000 /dev/zero; printf 'e\\0r' >&2; sleep 0.2; printf end",
      { keep_output = keep == "kept" }))
    local out, err = {}, {}
    while true do
      local chunk, stream = p:read(20000)
      if not chunk then break end
      if stream == "stderr" then err[#err + 1] = chunk else out[#out + 1] = chunk end
    end
    assert(assert(p:wait()).exit_code == 0)
    local after = stats.read()
    assert(table.concat(out) == ("\0"):rep(3000000) .. "end", "stdout")
    assert(table.concat(err) == "e\0r", "stderr")
    p:close()
    assert(sbx:kill())
    io.write(after.http.requests - before.http.requests - 1)
  ]]
  local function requests(keep)
    local out = h.fresh_lua(("assert(load(%q))(%q)"):format(CODE, keep),
      { env = { E2B_API_URL = os.getenv("E2B_API_URL"), E2B_LOCAL_ADMIN_TOKEN = os.getenv("E2B_LOCAL_ADMIN_TOKEN") } })
    assert(out:match("^%d+$"), "the workload failed: " .. out)
    return tonumber(out)
  end

  it("are one request, as an unkept one's, until its handle closes", function()
    assert.are.equal(1, requests("unkept"))
    assert.are.equal(1, requests("kept"))
  end)
end)

describe("a pause's round trips", function()
  after_each(h.cleanup)
  -- E2B answers a pause once its snapshot is taken (the API waits for the
  -- orchestrator's Pause), as e2b-local does: the 2xx proves it, and no
  -- read follows. A 409 (already paused, or not pausable) is looked at.
  it("are one request, as the SDK's, and the sandbox is paused when it returns", function()
    local sbx = h.sandbox()
    local before = stats.read()
    assert.is_true(assert(sbx:pause()))
    local n = stats.read().http.requests - before.http.requests - 1
    assert.are.equal(1, n)
    assert.are.equal("paused", assert(h.client():describe(sbx.sandbox_id)).state)
  end)
end)
