-- e2b-local itself: isolation, auth, deadlines and its command line.
-- These rules are e2b-local's (on real E2B the VM boundary gives them).
local h = require("spec.helpers")
local e2b = h.e2b

if h.live then return end

-- The curl command line of a raw filesystem.Filesystem call to sbx's envd
-- (a sandbox made with secure = false: no access token), args before the URL.
local function envd_curl(sbx, method, args)
  return ("curl -s -X POST -H 'E2b-Sandbox-Id: %s' -H 'E2b-Sandbox-Port: 49983' %s '%s/filesystem.Filesystem/%s'")
    :format(sbx.sandbox_id, args, os.getenv("E2B_SANDBOX_URL"), method)
end

-- A unary call with a JSON body: what curl printed (and, with curl_args,
-- what they add, as -w's status).
local function envd_rpc(sbx, method, json, curl_args)
  return h.host(envd_curl(sbx, method, "-H 'Content-Type: application/json' --data " .. h.shell_quote(json)
    .. " " .. (curl_args or "")))
end

describe("e2b-local", function()
  local client
  setup(function() client = h.client() end)
  after_each(h.cleanup)

  it("gives each sandbox its own /home/user and /tmp", function()
    local a, b = h.sandbox({}, client), h.sandbox({}, client)
    assert(a.files:write("/home/user/mine", "a"))
    assert(a.files:write("/tmp/mine", "a"))
    assert.is_false((b.files:exists("/home/user/mine")))
    assert.is_false((b.files:exists("/tmp/mine")))
    -- (lua-e2b keeps command output under /tmp/.e2b-proc)
    assert.are.equal("", assert(b:run("ls -A /tmp | grep -vx .e2b-proc || true")).stdout)
  end)

  it("ends a sandbox's inotify watch once its stream's client leaves or its watcher is removed", function()
    -- as envd ends a watcher with its stream's context; the agent is told
    -- by a pipe the server closes, never by a message that would wait
    -- behind the requests queued before it (not secure: raw RPCs below)
    local sbx = h.sandbox({ secure = false }, client)
    local function watches()
      local n = h.host(("for p in $(pgrep -f '^/run/e2b/envd agent'); do"
        .. " grep -q '/%s$' /proc/$p/cgroup 2>/dev/null && ls -l /proc/$p/fd | grep -c inotify; done; true")
        :format(sbx.sandbox_id))
      return tonumber(n:match("%d+"))
    end
    assert(sbx.files:mkdir("/tmp/wl"))
    assert.are.equal(0, watches())
    local w = assert(sbx.files:watch_dir("/tmp/wl"))
    assert(sbx.files:write("/tmp/wl/a", "x"))
    assert.are.equal("a", assert(w:next(10000)).name)
    assert.are.equal(1, watches())
    w:stop()
    assert.is_true(h.eventually(function() return watches() == 0 end, 5000), "the stream's watch outlived it")
    -- the polling watchers (the Python SDK's): CreateWatcher, RemoveWatcher
    local created = envd_rpc(sbx, "CreateWatcher", '{"path":"/tmp/wl"}')
    local id = assert(created:match('"watcherId":"([^"]+)"'), created)
    assert.are.equal(1, watches())
    assert.are.equal("{}", envd_rpc(sbx, "RemoveWatcher", ('{"watcherId":"%s"}'):format(id)))
    assert.is_true(h.eventually(function() return watches() == 0 end, 5000), "a removed watcher's watch stayed")
  end)

  describe("a watch that lost events ends with envd's overflow error, never with a gap", function()
    -- envd ends a watch on fsnotify's overflow error: WatchDir's stream ends
    -- with it, GetWatcherEvents answers it. e2b-local keeps at most 10,000
    -- events a watcher waits on; past that (or on inotify's own overflow
    -- in the sandbox) events were lost, and it says so the same way.
    local overflow = "watcher error: fsnotify: queue or buffer overflow"
    local sbx
    before_each(function() sbx = h.sandbox({ secure = false }, client) end)

    it("GetWatcherEvents answers it once more than 10,000 events wait", function()
      assert(sbx.files:mkdir("/tmp/wo"))
      local created = envd_rpc(sbx, "CreateWatcher", '{"path":"/tmp/wo"}')
      local id = assert(created:match('"watcherId":"([^"]+)"'), created)
      -- a file each: created, its times set, closed written: about 36,000 events
      assert(sbx:run("cd /tmp/wo && seq 1 12000 | xargs touch && sleep 1"))
      local body = ('{"watcherId":"%s"}'):format(id)
      local answer = envd_rpc(sbx, "GetWatcherEvents", body, "-w ' %{http_code}'")
      assert.truthy(answer:find('"code":"internal"', 1, true), answer:sub(1, 300))
      assert.truthy(answer:find(overflow, 1, true), answer:sub(1, 300))
      assert.truthy(answer:find(" 500$"), answer:sub(-100))
      assert.truthy(envd_rpc(sbx, "GetWatcherEvents", body):find(overflow, 1, true), "said once")
      assert.are.equal("{}", envd_rpc(sbx, "RemoveWatcher", body))
    end)

    it("WatchDir's stream ends with it after the events before, once its reader fell behind", function()
      assert(sbx.files:mkdir("/tmp/ws"))
      local req = '{"path":"/tmp/ws"}'
      local out = os.tmpname()
      -- the reader stops reading for 4 s: the pipe, then the sockets, fill
      local envelope = ("printf '\\0\\0\\0\\0\\%03o%s'"):format(#req, req)
      h.host(("(%s | %s | (sleep 4; cat) >%s) >/dev/null 2>&1 &"):format(envelope,
        envd_curl(sbx, "WatchDir", "-N -H 'Content-Type: application/connect+json' --data-binary @-"), out))
      assert(sbx:run("sleep 0.5; cd /tmp/ws && perl -e 'for (1..100000) { open(my $f, \">\", \"a\") or die; close $f; unlink \"a\" }'"))
      local text
      assert.is_true(h.eventually(function()
        local f = io.open(out, "rb")
        text = f and f:read("a") or ""
        if f then f:close() end
        return text:find(overflow, 1, true) ~= nil
      end, 30000), "no overflow error: " .. #text .. " bytes, ending " .. text:sub(-200))
      assert.truthy(text:find('"code":"internal"', 1, true))
      assert.truthy(text:find('"name":"a"', 1, true), "the events before it")
      os.remove(out)
    end)
  end)

  it("isolates processes: one sandbox cannot see or signal another's", function()
    local a, b = h.sandbox({}, client), h.sandbox({}, client)
    local proc = assert(a:spawn({ "sleep", "77" }))
    local r = assert(b:run("ps -eo args"))
    assert.is_nil(r.stdout:find("sleep 77", 1, true))
    r = assert(b:run("kill -9 " .. proc.pid .. " 2>&1; echo rc=$?"))
    assert.are.equal("running", assert(client:describe(a.sandbox_id)).state)
    assert.truthy(assert(a:run("ps -eo args")).stdout:find("sleep 77", 1, true))
    proc:close()
  end)

  it("does not expose the host's home, state or other sandboxes", function()
    local sbx = h.sandbox({}, client)
    local r = assert(sbx:run("ls /root /work 2>&1; ls / "))
    assert.is_nil(r.stdout:find("e2b-local.", 1, true))
    assert.is_nil(r.stdout:find("main", 1, true))
    r = assert(sbx:run("touch /usr/x 2>&1 || echo readonly", { user = "root" }))
    assert.truthy(r.stdout:find("readonly", 1, true))
  end)

  it("runs commands in envd's process group, as envd, and a kept one's job in its own", function()
    local sbx = h.sandbox({}, client)
    local pgid = "ps -o pgid= -p $BASHPID"
    local function run(opts) return assert(sbx:run(pgid, opts)).stdout:match("%d+") end
    local a, b = run({ keep_output = false }), run({ keep_output = false })
    assert.truthy(a and b)
    assert.are.equal(a, b)
    local c, d = run(), run()
    assert.truthy(c and d)
    assert.are_not.equal(c, d)
    assert.are_not.equal(a, c)
  end)

  it("serves a sandbox's processes in turn: one flooding its output never holds up another's", function()
    local sbx, other = h.sandbox({}, client), h.sandbox({}, client)
    -- Nobody reads its stream: e2b-local reads and drops its output as fast as it comes,
    -- on the same reader as every other process of this sandbox.
    local flood = assert(sbx:spawn({ "cat", "/dev/zero" }, { keep_output = false }))
    flood:detach()
    flood:close()
    local function written() -- bytes the flood has written so far
      local r = assert(sbx:run("grep ^wchar: /proc/" .. flood.pid .. "/io", { keep_output = false }))
      return assert(tonumber(r.stdout:match("wchar: (%d+)")))
    end
    local before = written()
    for i = 1, 10 do
      assert.are.equal(i .. "\n", assert(sbx:run("echo " .. i, { keep_output = false })).stdout)
      assert.are.equal(i .. "\n", assert(other:run("echo " .. i, { keep_output = false })).stdout)
    end
    -- it was being read all along (a pipe left unread holds 64 KiB)
    assert.is_true(written() - before > 4 * 1024 * 1024)
  end)

  it("leaves no process behind on the host after kill", function()
    local marker = "e2bspecmarker" .. h.core.uuid4():gsub("-", ""):sub(1, 12)
    local sbx = h.sandbox({}, client)
    local proc = assert(sbx:spawn({ "bash", "-c", "exec -a " .. marker .. " sleep 300" }))
    proc:detach()
    local function on_host() return h.host("ps -eo args"):find(marker, 1, true) ~= nil end
    assert.is_true(h.eventually(on_host))
    assert(sbx:kill())
    assert.is_true(h.eventually(function() return not on_host() end, 5000))
  end)

  it("requires the API key: 401 becomes kind auth", function()
    local c = h.client({ api_key = "wrong" })
    local sbx, err = c:create({})
    assert.is_nil(sbx)
    assert.are.equal("auth", err.kind)
    assert.are.equal(401, err.status)
  end)

  it("enforces the envd access token of a secure sandbox", function()
    local sbx = h.sandbox({}, client)
    local untrusted = assert(client._h:sandbox(sbx.sandbox_id, "not-the-token"))
    local req = assert(untrusted:stat("/home/user"))
    local ok, err = require("e2b.rt").finish(req)
    assert.is_nil(ok)
    assert.are.equal("auth", err.kind)
    -- an insecure sandbox's envd asks for no token at all
    local insecure = h.sandbox({ secure = false }, client)
    local anyone = assert(client._h:sandbox(insecure.sandbox_id))
    assert(require("e2b.rt").finish(assert(anyone:stat("/home/user"))))
    assert.is_true(assert(insecure:run("true")).ok)
  end)

  it("lets user run sudo without a password, as E2B's base image does", function()
    local sbx = h.sandbox({}, client)
    local function run(cmd, opts)
      local r = assert(sbx:run(cmd, opts))
      return r.exit_code, r.stdout, r.stderr
    end
    local function out(cmd, opts)
      local code, stdout = run(cmd, opts)
      return { code, stdout }
    end
    assert.are.same({ 0, "0\n" }, out("sudo id -u"))
    -- (shells find it through the login profile; an argv command names it)
    assert.are.same({ 0, "root\n" }, out({ "/run/e2b/bin/sudo", "whoami" }))
    assert.are.same({ 0, "user\n" }, out("sudo -u user id -un"))
    assert.are.equal(7, (run("sudo sh -c 'exit 7'")))
    assert.are.same({ 0, "piped\n" }, out("echo piped | sudo cat"))
    assert.are.same({ 0, "/tmp\n" }, out("sudo pwd", { cwd = "/tmp" }))
    assert.are.same({ 0, "/root\n" }, out("sudo -i pwd"))
    local code, _, err = run("sudo no-such-command")
    assert.are.equal(127, code)
    assert.truthy(err:find("command not found", 1, true), err)
    -- root through sudo is the sandbox's root: the host's files stay out of reach
    code = run("sudo touch /usr/sudo-was-here")
    assert.are_not.equal(0, code)
    assert.are.equal("", h.host("ls /usr/sudo-was-here 2>/dev/null"))
  end)

  it("kills a sandbox when its deadline passes", function()
    local t0 = h.now_ms()
    local sbx = h.sandbox({ timeout_ms = 1500 }, client)
    assert.are.equal("running", assert(client:describe(sbx.sandbox_id)).state)
    local err
    assert.is_true(h.eventually(function()
      err = select(2, client:describe(sbx.sandbox_id))
      return err ~= nil
    end, 3000))
    assert.are.equal("not_found", err.kind)
    assert.is_true(h.now_ms() - t0 >= 1400, "killed before its deadline")
  end)

  it("pauses instead of killing at the deadline when on_timeout is pause", function()
    local t0 = h.now_ms()
    local sbx = h.sandbox({ timeout_ms = 1500, lifecycle = { on_timeout = "pause" } }, client)
    assert.is_true(h.eventually(function()
      return assert(client:describe(sbx.sandbox_id)).state == "paused"
    end, 3000))
    assert.is_true(h.now_ms() - t0 >= 1400, "paused before its deadline")
  end)

  it("answers envd calls for a killed sandbox with an error, not a hang", function()
    local sbx = h.sandbox({}, client)
    assert(sbx:kill())
    local t0 = h.now_ms()
    local st, err = sbx.files:stat("/home/user")
    assert.is_nil(st)
    -- The edge answers 502 for a sandbox that is gone, as E2B's does; one
    -- info check then makes it not_found.
    assert.are.equal(502, err.status)
    assert.are.equal("not_found", err.kind)
    assert.is_true(h.now_ms() - t0 < 5000)
  end)

  it("says an envd call failed because the sandbox is paused, and that retrying will not help", function()
    local sbx = h.sandbox({}, client)
    assert(sbx:pause())
    local st, err = sbx.files:stat("/home/user")
    assert.is_nil(st)
    assert.are_not.equal("not_found", err.kind)
    assert.truthy(err.message:find("paused", 1, true), tostring(err))
    assert.is_false(err.retryable)
    assert(sbx:kill())
  end)
end)

describe("e2b-local exec", function()
  it("runs the command with the four variables and exits with its status", function()
    local out = h.host("e2b-local exec -- sh -c 'echo \"$E2B_API_URL|$E2B_SANDBOX_URL|$E2B_DOMAIN|${E2B_API_KEY:+key}\"; exit 3' 2>/dev/null; echo rc=$?")
    local api, sbx, domain, key = out:match("(http://127%.0%.0%.1:%d+)|(http://127%.0%.0%.1:%d+)|(e2b%.localhost:%d+)|(key)")
    assert.truthy(api, out)
    assert.are.equal(api, sbx)
    assert.are.equal("key", key)
    assert.truthy(out:find("rc=3", 1, true))
  end)
end)

describe("e2b-local as a command", function()
  it("prints its version, and its help names every option", function()
    local bin = h.shell_quote(h.e2b_local_bin())
    assert.truthy(h.host(bin .. " --version"):match("^e2b%-local %d+%.%d+%.%d+\n$"))
    local help = h.host(bin .. " --help")
    for _, opt in ipairs({ "--listen", "--api-key", "--api-key-file", "--domain", "--state", "--template",
                           "--admin-token", "--log-requests", "--no-isolation", "--no-freezer", "--version", "--h2" }) do
      assert.truthy(help:find(opt:gsub("%-", "%%-") .. "[ ,\n]"), opt .. " is missing from --help")
    end
  end)

  it("keeps its API key across restarts with --state, readable by its owner only", function()
    local dir = os.tmpname()
    os.remove(dir)
    local first, stop = h.serve_local("--state " .. dir)
    assert.truthy(first.E2B_API_KEY, "the server did not start")
    stop()
    assert.are.equal("600\n", h.host("stat -c %a " .. dir .. "/api_key"))
    local second
    second, stop = h.serve_local("--state " .. dir)
    local c = h.client({ api_url = second.E2B_API_URL, api_key = first.E2B_API_KEY })
    assert.is_true(assert(c:probe()))
    stop()
    h.host("rm -rf " .. dir)
    assert.are.equal(first.E2B_API_KEY, second.E2B_API_KEY)
  end)

  it("logs requests behind --log-requests: method, path, status, time, never a key or query", function()
    local vars, stop = h.serve_local("--log-requests")
    local c = h.client({ api_url = vars.E2B_API_URL, api_key = vars.E2B_API_KEY })
    assert(c:probe())
    h.host(("curl -s -o /dev/null '%s/sandboxes/nope?signature=topsecret'"):format(vars.E2B_API_URL))
    local log = stop()
    assert.truthy(log:find("GET /v2/sandboxes 200 %d+ ms"), log)
    assert.truthy(log:find("GET /sandboxes/nope 401 %d+ ms"), log)
    assert.is_nil(log:find("topsecret", 1, true))
    assert.is_nil(log:find(vars.E2B_API_KEY, 1, true))
  end)

  it("names the address asked for when --listen is busy, and says why", function()
    local vars, stop = h.serve_local()
    local port = vars.E2B_API_URL:match(":(%d+)$")
    local out = h.host(h.shell_quote(h.e2b_local_bin()) .. " serve --listen 127.0.0.1:" .. port .. " 2>&1; echo rc=$?")
    stop()
    assert.truthy(out:find("127.0.0.1:" .. port, 1, true), out)
    assert.truthy(out:find("in use", 1, true), out)
    assert.is_nil(out:find("port 0", 1, true), out)
    assert.truthy(out:find("rc=1", 1, true), out)
  end)
end)
