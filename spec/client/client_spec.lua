-- Client configuration, probing and the validation that happens before any I/O.
local h = require("spec.helpers")
local e2b = h.e2b

-- Evaluates Lua in a fresh interpreter with a controlled environment, so the
-- environment fallbacks can be observed without touching this process.
local function in_fresh_env(env, code)
  return h.fresh_lua(code, { bare = true, env = env })
end

describe("client configuration", function()
  it("falls back to E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL and E2B_TEMPLATE like the official SDKs", function()
    local out = in_fresh_env({ E2B_API_KEY = "k", E2B_API_URL = "http://127.0.0.1:9/", E2B_SANDBOX_URL = "http://127.0.0.1:8",
      E2B_TEMPLATE = "custom" },
      [[local c = require("e2b").client{}; io.write(c.api_url, " ", c.sandbox_url, " ", c.template)]])
    assert.are.equal("http://127.0.0.1:9 http://127.0.0.1:8 custom", out)
  end)

  it("derives api_url from E2B_DOMAIN, and defaults to e2b.app and the base template", function()
    assert.are.equal("https://api.example.org base",
      in_fresh_env({ E2B_DOMAIN = "example.org" },
        [[local c = require("e2b").client{}; io.write(c.api_url, " ", c.template)]]))
    assert.are.equal("https://api.e2b.app e2b.app",
      in_fresh_env({}, [[local c = require("e2b").client{}; io.write(c.api_url, " ", c.domain)]]))
  end)

  it("lets options win over the environment", function()
    local c = h.client({ api_url = "http://127.0.0.1:7", template = "other" })
    assert.are.equal("http://127.0.0.1:7", c.api_url)
    assert.are.equal("other", c.template)
  end)

  it("reports a missing API key as auth on first use, without a request", function()
    local out = in_fresh_env({ E2B_API_URL = "http://127.0.0.1:1" },
      [[local c = require("e2b").client{}; local ok, err = c:probe(); io.write(err.kind, " ", tostring(err.retryable))]])
    assert.are.equal("auth false", out)
  end)

  it("refuses unknown options, wrong types and negative times, naming the field", function()
    local cases = {
      { { bogus = 1 }, "bogus" },
      { { timeout_ms = -1 }, "timeout_ms" },
      { { request_timeout_ms = "fast" }, "request_timeout_ms" },
      { { network = 42 }, "network" },
      { { lifecycle = { on_timeout = "explode" } }, "lifecycle.on_timeout" },
      { { on_close = "shred" }, "on_close" },
    }
    for _, case in ipairs(cases) do
      local c, err = e2b.client(case[1])
      assert.is_nil(c)
      assert.are.equal("invalid_argument", err.kind)
      assert.are.equal(case[2], err.field)
      assert.truthy(tostring(err):find(case[2], 1, true))
    end
  end)

  it("says to use a colon when a method is called with a dot", function()
    local c = h.client({ api_url = "http://127.0.0.1:1", sandbox_url = "http://127.0.0.1:1" })
    local ok, msg = pcall(c.list, { state = "running" })
    assert.is_false(ok)
    assert.truthy(tostring(msg):find("Client.list called without its object: use a colon", 1, true), msg)
    local Files = require("e2b.files").Files
    ok, msg = pcall(Files.read, "/etc/hostname")
    assert.is_false(ok)
    assert.truthy(tostring(msg):find("use a colon, obj:read(...)", 1, true), msg)
  end)

  it("validates create options before any network call", function()
    -- Nothing listens on port 1: any request would fail as unavailable.
    local c = h.client({ api_url = "http://127.0.0.1:1", sandbox_url = "http://127.0.0.1:1" })
    local cases = {
      { { nope = true }, "nope" },
      { { timeout_ms = 0 }, "timeout_ms" },
      { { env = { A = 1 } }, "env" },
      { { metadata = { lua_e2b_id = "x" } }, "metadata.lua_e2b_id" },
      { { lifecycle = { on_timeout = "kill", keep_memory = true } }, "lifecycle.keep_memory" },
      { { lifecycle = { on_timeout = "pause", keep_memory = false, auto_resume = true } }, "lifecycle.auto_resume" },
      { { setup = 5 }, "setup" },
      { { network = { allow = { "example.com" }, bogus = {} } }, "network.bogus" },
    }
    for _, case in ipairs(cases) do
      local sbx, err = c:create(case[1])
      assert.is_nil(sbx)
      assert.are.equal("invalid_argument", err.kind, tostring(err))
      assert.are.equal(case[2], err.field)
    end
  end)

  it("refuses network policies E2B cannot enforce as unsupported, before allocation", function()
    local c = h.client({ api_url = "http://127.0.0.1:1" })
    local cases = {
      { { allow = { "example.com" }, deny = { "10.0.0.0/8" } }, "unsupported", "network.deny" },
      { { allow = { "example.com" }, transform = {} }, "unsupported", "network.transform" },
      { { deny = { "example.com" } }, "invalid_argument", "network.deny[1]" },
      { { deny = { "10.0.0.0/8", "10.0.0.0/33" } }, "invalid_argument", "network.deny[2]" },
    }
    for _, case in ipairs(cases) do
      local _, err = c:create({ network = case[1] })
      assert.are.equal(case[2], err.kind, tostring(err))
      assert.are.equal(case[3], err.field, tostring(err))
    end
  end)

  it("takes its network rules from libe2b: the kind and field the C core gives", function()
    local core = require("e2b.core")
    local _, cerr = core.network_check({ allow_out = { "a.com" }, deny_out = { "10.0.0.0/8" } })
    local _, lerr = e2b.client({ api_url = "http://127.0.0.1:1", network = { allow = { "a.com" }, deny = { "10.0.0.0/8" } } })
    assert.are.same({ "unsupported", "network.deny" }, { cerr.kind, cerr.field })
    assert.are.same({ cerr.kind, cerr.field }, { lerr.kind, lerr.field })
  end)
end)

describe("probe", function()
  it("is one authenticated call that allocates nothing", function()
    local c = h.client()
    local before = assert(c:list())
    assert.is_true(c:probe())
    assert.are.equal(#before, #assert(c:list()))
  end)

  -- A probe through a client made with opts fails with kind and retryable.
  local function failed_probe(opts, kind, retryable)
    local ok, err = h.client(opts):probe()
    assert.is_nil(ok)
    assert.are.equal(kind, err.kind)
    assert.are.equal(retryable, err.retryable)
    return err
  end

  it("reports a bad key as auth, not retryable", function()
    local err = failed_probe({ api_key = "e2b_0000000000000000000000000000000000000000" }, "auth", false)
    assert.are.equal(401, err.status)
  end)

  it("reports an unreachable backend as unavailable and retryable, never not_found", function()
    failed_probe({ api_url = "http://127.0.0.1:1" }, "unavailable", true)
  end)

  it("gives errors one readable line", function()
    local c = h.client({ api_url = "http://127.0.0.1:1" })
    local _, err = c:probe()
    local line = tostring(err)
    assert.truthy(line:match("^e2b unavailable error in probe: "), line)
    assert.is_nil(line:find("\n"))
  end)
end)

describe("error labels", function()
  local bad_key = "e2b_0000000000000000000000000000000000000000"

  it("names the user's call, with the sub-step in the message", function()
    local c = h.client({ api_key = bad_key })
    local _, err = c:create({ id = "label-" .. h.core.uuid4() })
    assert.are.equal("auth", err.kind)
    assert.are.equal("create", err.op)
    assert.truthy(err.message:find("list", 1, true), err.message)
    assert.truthy(tostring(err):match("^e2b auth error in create: "), tostring(err))
    _, err = c:describe("any-id")
    assert.are.equal("describe", err.op)
    _, err = c:probe()
    assert.are.equal("probe", err.op)
  end)
end)

describe("defaults", function()
  it("gives every call a total budget and names it when it is spent", function()
    -- A server that accepts connections and never answers.
    local port = h.host([[python3 -c '
import socket, os, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1]); sys.stdout.flush()
if os.fork() == 0:
    os.setsid(); n = os.open("/dev/null", os.O_RDWR); os.dup2(n, 1); os.dup2(n, 2)
    import time; time.sleep(20); os._exit(0)
os._exit(0)' ]]):match("%d+")
    assert.truthy(port)
    local c = h.client({ api_url = "http://127.0.0.1:" .. port, api_key = "k",
                         request_timeout_ms = 1000, budget_ms = 1500 })
    local ok, err = c:probe()
    assert.is_nil(ok)
    assert.are.equal("timeout", err.kind)
    assert.truthy(err.message:find("budget_ms", 1, true), err.message)
    assert.are.equal(60000, h.client().budget_ms)
  end)

  it("introduces itself to E2B as lua-e2b/<version>", function()
    -- A server that notes the User-Agent of the one request it takes.
    local seen = os.tmpname()
    local port = h.host(([[python3 -c '
import socket, os, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
print(s.getsockname()[1]); sys.stdout.flush()
if os.fork() == 0:
    os.setsid(); n = os.open("/dev/null", os.O_RDWR); os.dup2(n, 1); os.dup2(n, 2)
    s.settimeout(20); c, _ = s.accept(); head = b""
    while b"\r\n\r\n" not in head: head += c.recv(4096)
    ua = [l[11:].strip() for l in head.decode().split("\r\n") if l.lower().startswith("user-agent:")]
    open(sys.argv[1], "w").write(ua[0] if ua else "")
    c.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); c.close()
os._exit(0)' %s]]):format(h.shell_quote(seen))):match("%d+")
    assert.truthy(port)
    local c = h.client({ api_url = "http://127.0.0.1:" .. port, api_key = "k" })
    local ok, err = c:probe()
    assert.is_nil(ok)
    assert.are.equal("auth", err.kind)
    assert.are.equal("lua-e2b/" .. h.core.VERSION, h.read_file(seen))
    os.remove(seen)
  end)

  it("makes one attempt with max_retries = 0, and one more per retry", function()
    -- A server that answers every request 503 and counts them.
    local function attempts(max_retries)
      local seen = os.tmpname()
      local port = h.host(([[python3 -c '
import socket, os, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1]); sys.stdout.flush()
if os.fork() == 0:
    os.setsid(); n = os.open("/dev/null", os.O_RDWR); os.dup2(n, 1); os.dup2(n, 2)
    s.settimeout(3); count = 0
    try:
        while True:
            c, _ = s.accept(); head = b""
            while b"\r\n\r\n" not in head: head += c.recv(4096)
            count += 1; open(sys.argv[1], "w").write(str(count))
            c.sendall(b"HTTP/1.1 503 Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); c.close()
    except socket.timeout: pass
os._exit(0)' %s]]):format(h.shell_quote(seen))):match("%d+")
      local c = h.client({ api_url = "http://127.0.0.1:" .. port, api_key = "k", max_retries = max_retries })
      local _, err = c:probe()
      assert.are.equal("unavailable", err.kind)
      local n = tonumber(h.read_file(seen))
      os.remove(seen)
      return n
    end
    assert.are.equal(1, attempts(0))
    assert.are.equal(2, attempts(1))
  end)

  it("keeps one default owner per host and user, so reap finds a crashed process's orphans", function()
    local mine = h.client().owner
    local other = h.fresh_lua([[io.write(require("e2b").client{}.owner)]])
    assert.are.equal(mine, other)
    assert.is_nil(mine:find(":%d+$"), "the owner must not carry a pid: " .. mine)
    assert.are.equal("ci-7", h.fresh_lua([[io.write(require("e2b").client{}.owner)]],
      { env = { E2B_OWNER = "ci-7" } }))
  end)
end)
