-- No sandbox can stall e2b-local: a sandbox whose agent is kept busy by its
-- own unprivileged user (idle connections to the sudo helper's socket, a
-- CONNECT to the egress proxy sent in two halves) is still killed at once,
-- every other sandbox's deadline still fires on time, and the server still
-- stops promptly on SIGTERM. The attack runs as `user` inside the sandbox;
-- the spec measures from the host, against an e2b-local of its own.
local h = require("spec.helpers")
local e2b = h.e2b

if h.live then return end

-- Run as `user` inside a sandbox (argv[1]: a tag). Sends the head of a
-- CONNECT to a loopback port up to its last line, makes sure the proxy has
-- the connection, then keeps the sudo socket's backlog full of connections
-- that never send a request, finishes the CONNECT's head (the server now
-- asks the agent for that loopback connection), says it is ready in
-- /tmp/ready-TAG, and keeps flooding until killed.
local ATTACK = [[
import os, socket, sys, time
tag = sys.argv[1]
half = socket.create_connection(("127.0.0.1", 3128))
half.sendall(b"CONNECT 127.0.0.1:7 HTTP/1.1\r\nHost: 127.0.0.1:7\r\n")
probe = socket.create_connection(("127.0.0.1", 3128))
probe.sendall(b"CONNECT 127.0.0.1:7 HTTP/1.1\r\n\r\n")
probe.recv(100)  # answered or closed: the proxy has taken both connections
held, full = [], False
def flood():
    global full
    for _ in range(64):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.setblocking(False)
        try:
            s.connect("\0e2b-local-sudo")
        except BlockingIOError:
            full = True
            s.close()
            return
        except OSError:
            s.close()
            return
        held.append(s)
        while len(held) > 600:
            held.pop(0).close()
while not full:
    flood()
half.sendall(b"\r\n")
open("/tmp/ready-" + tag, "w").write("ready")
while True:
    flood()
    time.sleep(0.02)
]]

-- The sandboxes' /tmp files on the host: the state directory's copy.
local function ready(dir, tag)
  return h.host(("ls %s/sandboxes/*/tmp/ready-%s 2>/dev/null"):format(h.shell_quote(dir), tag)) ~= ""
end

-- Whether pid still runs (a zombie waiting for its reaper counts as ended).
local function running(pid)
  return h.host(("kill -0 %d 2>/dev/null && ! grep -q '^State:.Z' /proc/%d/status && echo yes")
    :format(pid, pid)) == "yes\n"
end

local function wait_for(what, fn, ms)
  local deadline = h.now_ms() + ms
  while h.now_ms() < deadline do
    if fn() then return end
    e2b.sleep(50)
  end
  error("timed out waiting for " .. what)
end

describe("a sandbox that keeps its agent busy", function()
  it("cannot stall kills, other sandboxes' deadlines or the server's stop", function()
    local dir = os.tmpname()
    os.remove(dir)
    local vars, stop, pid = h.serve_local("--no-tls --state " .. h.shell_quote(dir))
    pid = tonumber(pid)
    local ok, err = pcall(function()
      assert(vars.E2B_API_URL, "the second server did not start")
      local client = h.client({ api_url = vars.E2B_API_URL, sandbox_url = vars.E2B_SANDBOX_URL,
        api_key = vars.E2B_API_KEY, domain = vars.E2B_DOMAIN, request_timeout_ms = 10000, max_retries = 0 })
      local attackers = {}
      for _, tag in ipairs({ "due", "killed", "left" }) do
        attackers[tag] = assert(client:create{ timeout_ms = 120000 })
      end
      local victim = assert(client:create{ timeout_ms = 120000 })
      -- the attacked sandbox's deadline comes first: the timer meets it
      -- mid-attack, then the victim's
      assert(attackers.due:set_timeout(25000))
      local victim_due = h.now_ms() + 27000
      assert(victim:set_timeout(27000))
      for tag, sbx in pairs(attackers) do
        assert(sbx:spawn({ "python3", "-c", ATTACK, tag }, { keep_output = false }))
      end
      for tag in pairs(attackers) do
        wait_for("the attack in " .. tag, function() return ready(dir, tag) end, 20000)
      end
      assert(h.now_ms() < victim_due - 2000, "the attacks took too long to start")

      local t0 = h.now_ms()
      local killed, kerr = attackers.killed:kill()
      local kill_ms = h.now_ms() - t0
      assert.is_true(kill_ms <= 2000, "the kill took " .. kill_ms .. " ms (" .. tostring(kerr and kerr.message) .. ")")
      assert(killed, kerr and kerr.message)

      -- the agent under attack still serves its own sandbox
      local r, rerr = attackers.left:run("echo alive", { timeout_ms = 5000 })
      assert(r and r.stdout == "alive\n", "the busy agent stopped serving: " .. tostring(rerr and rerr.message))

      local late
      while h.now_ms() < victim_due + 10000 do
        local info = client:describe(victim.sandbox_id)
        if not info then
          late = h.now_ms() - victim_due
          break
        end
        e2b.sleep(100)
      end
      assert(late, "the victim's deadline never fired")
      -- 100 ms: how often the spec looks
      assert.is_true(late <= 1100, "the victim's deadline fired " .. late .. " ms late")

      t0 = h.now_ms()
      h.host("kill -TERM " .. pid)
      while running(pid) and h.now_ms() - t0 < 15000 do e2b.sleep(50) end
      local stop_ms = h.now_ms() - t0
      assert.is_true(stop_ms <= 5000, "SIGTERM took " .. stop_ms .. " ms")
    end)
    -- a server that ignores SIGTERM is killed, its guard then ends its sandboxes
    if running(pid) then h.host("kill -TERM " .. pid) end
    local t0 = h.now_ms()
    while running(pid) and h.now_ms() - t0 < 15000 do e2b.sleep(50) end
    if running(pid) then h.host("kill -KILL " .. pid) end
    local log = stop()
    h.host("rm -rf " .. h.shell_quote(dir))
    assert(ok, err)
    assert.is_nil(log:find("ERROR: %a+Sanitizer") or log:find("runtime error:", 1, true), log) -- under ASan/UBSan
  end)
end)
