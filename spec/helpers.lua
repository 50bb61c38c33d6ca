-- Shared by the specs: the conformance suite runs against e2b-local (under
-- `e2b-local exec`), or against real E2B when E2B_LIVE=1 and E2B_API_KEY are
-- set. Tests only ever target loopback otherwise.
local e2b = require("e2b")
local core = require("e2b.core")

local M = { e2b = e2b, core = core }

M.live = os.getenv("E2B_LIVE") == "1" and (os.getenv("E2B_API_KEY") or "") ~= ""

local api_url = os.getenv("E2B_API_URL") or ""
if not M.live then
  assert(api_url:match("^http://127%.0%.0%.1[:/]") or api_url:match("^http://localhost[:/]"),
    "the specs target a loopback e2b-local: run them under `e2b-local exec -- busted ...`")
end

-- The interpreter running the specs, for specs that start a fresh process
-- with this process's package paths (busted --lua=luajit runs them too).
M.lua_bin = rawget(_G, "jit") and "luajit" or (_VERSION == "Lua 5.1" and "lua5.1" or "lua5.4")

-- fresh_lua(code, opts) -> what code writes to stdout, run by a new
-- interpreter with this process's package paths. opts.env: variables to set;
-- opts.bare: start without the E2B_* variables. Under a sanitizer build the
-- child gets the runtime preloaded, its leak check left to this process
-- (LSan's tracer crashes in a child spawned through io.popen here).
function M.fresh_lua(code, opts)
  opts = opts or {}
  local words = { "env" }
  if opts.bare then
    for _, name in ipairs({ "E2B_API_KEY", "E2B_API_URL", "E2B_SANDBOX_URL", "E2B_DOMAIN", "E2B_TEMPLATE", "E2B_CA_FILE" }) do
      words[#words + 1] = "-u " .. name
    end
  end
  for k, v in pairs(opts.env or {}) do words[#words + 1] = k .. "=" .. M.shell_quote(v) end
  local preload = os.getenv("LD_PRELOAD")
  if preload then words[#words + 1] = "LD_PRELOAD=" .. M.shell_quote(preload) .. " ASAN_OPTIONS=detect_leaks=0" end
  words[#words + 1] = "LUA_PATH=" .. M.shell_quote(package.path)
  words[#words + 1] = "LUA_CPATH=" .. M.shell_quote(package.cpath)
  words[#words + 1] = M.lua_bin .. " -e " .. M.shell_quote(code)
  return M.host(table.concat(words, " "))
end

-- The e2b-local serving these specs (an ancestor of this process): its pid
-- and executable, or nil when not run under `e2b-local exec`.
function M.server_process()
  local out = M.host([[p=$$; while [ "$p" -gt 1 ]; do e=$(readlink /proc/$p/exe);
    case $e in */e2b-local|*/e2b-local" (deleted)") echo "$p $e"; exit;; esac
    p=$(awk '{print $4}' /proc/$p/stat); done]])
  local pid, bin = out:match("^(%d+) (%S+)")
  return tonumber(pid), bin
end

local created = {}

-- client(opts) -> a client for the backend under test
function M.client(opts)
  return assert(e2b.client(opts or {}))
end

-- sandbox(opts) -> a new sandbox, killed by M.cleanup()
-- kept_name(tag) -> the name of a kept command's files in /tmp/.e2b-proc
-- (the hex of its tag: <name>.out, .err, .exit).
function M.kept_name(tag)
  return (tag:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

function M.sandbox(opts, client)
  client = client or M.client()
  local sbx = assert(client:create(opts or {}))
  created[#created + 1] = sbx
  return sbx, client
end

-- Kills what M.sandbox created (call from an after_each / teardown).
function M.cleanup()
  for i = #created, 1, -1 do
    created[i]:kill()
    created[i] = nil
  end
end

-- admin(method, path, body, server) -> status, body: a call to e2b-local's
-- admin API (server: serve_local's vars, default the one the specs run
-- under); the token goes to curl in a private file, never on its command
-- line. body: a table sent as JSON.
function M.admin(method, path, body, server)
  local token = assert(server and server.E2B_LOCAL_ADMIN_TOKEN or os.getenv("E2B_LOCAL_ADMIN_TOKEN"),
    "the admin API needs e2b-local")
  local url = (server and server.E2B_API_URL or os.getenv("E2B_API_URL")) .. path
  local header = os.tmpname()
  local f = assert(io.open(header, "w"))
  f:write("X-Admin-Token: ", token, "\n")
  f:close()
  local data = body and ("-H 'Content-Type: application/json' --data-binary " ..
    M.shell_quote(require("cjson").encode(body))) or ""
  local out = M.host(("curl -s -w '\\n%%{http_code}' -X %s -H @%s %s '%s'"):format(method, header, data, url))
  os.remove(header)
  local text, status = out:match("^(.*)\n(%d+)$")
  return tonumber(status), text
end

-- A private file holding the X-API-Key header for curl's -H @file, so the
-- key is never on a command line; the caller removes it. server: another
-- e2b-local's variables (default: the one the specs run under).
function M.key_header(server)
  local header = os.tmpname()
  local f = assert(io.open(header, "w"))
  f:write("X-API-Key: ", assert(server and server.E2B_API_KEY or os.getenv("E2B_API_KEY")), "\n")
  f:close()
  return header
end

-- The control plane, as the SDKs call it, with body (a string) as it is.
-- -> status, body
function M.api(method, path, body, server)
  local header = M.key_header(server)
  local cmd = ("curl -s -w '\\n%%{http_code}' -X %s -H @%s -H 'Content-Type: application/json' %s %s")
    :format(method, header, body and ("--data-binary " .. M.shell_quote(body)) or "",
      M.shell_quote((server and server.E2B_API_URL or os.getenv("E2B_API_URL")) .. path))
  local out = M.host(cmd)
  os.remove(header)
  local text, status = out:match("^(.*)\n(%d+)$")
  return tonumber(status), text
end

local function admin(method, path, body, server)
  local status, text = M.admin(method, path, body, server)
  assert(status and status >= 200 and status < 300,
    ("admin call %s %s failed: %s %s"):format(method, path, tostring(status), tostring(text)))
end

-- Fault injection on e2b-local (its admin API): faults{ rules } adds rules,
-- faults() clears them. Rules: { match = "GET /sandboxes/*", action = "status",
-- status = 503, count = 2, retry_after_s = 1 } and so on (emulator/README.md).
-- server: the variables serve_local printed, for that e2b-local (default: the one
-- the specs run under).
function M.faults(rules, seed, server)
  if rules then
    admin("POST", "/_e2b_local/faults", { seed = seed or 1, rules = rules }, server)
  else
    admin("DELETE", "/_e2b_local/faults", nil, server)
  end
end

-- The host loopback ports this process marked as standing in for the
-- internet on the e2b-local the specs run under (PUT /_e2b_local/internet).
local internet_ports = {}

local function mark_internet(port, on)
  internet_ports[port] = on or nil
  local list = {}
  for p in pairs(internet_ports) do list[#list + 1] = p end
  if #list == 0 then
    admin("DELETE", "/_e2b_local/internet")
  else
    admin("PUT", "/_e2b_local/internet", { ports = list })
  end
end

-- http_server(body, opts) -> url, stop, port: a web server on the host's
-- 127.0.0.1 (a free port) answering body for "/", for specs that reach the
-- host from inside a sandbox. The host's loopback is never the internet: a
-- sandbox reaches it only with a policy that names it, unless opts.internet,
-- which marks the port as standing in for the internet (reached as an
-- internet address would be, by allow-all too). opts.files: { ["/a/b"] = body }
-- served at those paths too. stop() ends it (and unmarks).
function M.http_server(body, opts)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. M.shell_quote(dir)))
  local f = assert(io.open(dir .. "/index.html", "w"))
  f:write(body)
  f:close()
  for path, bytes in pairs(opts and opts.files or {}) do -- more answers: GET path (its query ignored)
    assert(os.execute("mkdir -p " .. M.shell_quote((dir .. path):match("^(.*)/"))))
    f = assert(io.open(dir .. path, "w"))
    f:write(bytes)
    f:close()
  end
  local pid = M.host(("cd %s && python3 -u -m http.server 0 --bind 127.0.0.1 >%s/log 2>&1 & echo $!")
    :format(M.shell_quote(dir), M.shell_quote(dir))):match("%d+")
  local port
  for _ = 1, 100 do
    local log = io.open(dir .. "/log")
    port = log and log:read("a"):match("port (%d+)")
    if log then log:close() end
    if port then break end
    e2b.sleep(50)
  end
  local marked = false
  local function stop()
    if marked then mark_internet(tonumber(port), false) end
    M.host("kill " .. pid .. " 2>/dev/null; rm -rf " .. M.shell_quote(dir))
  end
  if not port then
    stop()
    error("the host web server did not start")
  end
  if opts and opts.internet then
    mark_internet(tonumber(port), true)
    marked = true
  end
  return "http://127.0.0.1:" .. port, stop, tonumber(port)
end

-- All 256 byte values, in order.
function M.all_bytes()
  local t = {}
  for i = 0, 255 do t[#t + 1] = string.char(i) end
  return table.concat(t)
end

M.now_ms = core.now_ms

-- pred's first true value, looked for every 50 ms for at most ms (default
-- 15 s); the last look's value (false or nil) when it never came. Specs
-- wait on conditions with it, never on a fixed sleep.
function M.eventually(pred, ms)
  local until_ms = M.now_ms() + (ms or 15000)
  while true do
    local v = pred()
    if v or M.now_ms() >= until_ms then return v end
    require("e2b").sleep(50)
  end
end

-- How many of sbx's processes have a command line matching the grep pattern,
-- as grep -c prints it ("0\n" when none). Write the pattern so that it does
-- not match itself ('[s]leep 30').
function M.count_procs(sbx, pattern)
  return assert(sbx:run("ps -eo args | grep -c '" .. pattern .. "' || true")).stdout
end

function M.shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- Runs shell text on the host and returns its stdout. The sanitizer runtime
-- preloaded into this interpreter (ASan runs) is kept out of host tools.
function M.host(cmd)
  local p = assert(io.popen("env -u LD_PRELOAD sh -c " .. M.shell_quote(cmd), "r"))
  local out = p:read("a")
  p:close()
  -- an e2b-local run this way (its stderr in out) is read as serve_local's log is
  local report = M.sanitizer_report(out)
  assert(not report, "a host command printed a sanitizer report:\n" .. (report or ""))
  return out
end

-- assert_healthy(bystanders) proves e2b-local survived an attack: a new
-- sandbox is created, runs a command, writes and reads back a file and is
-- killed; every bystander sandbox (created before the attack) still runs a
-- command. The containment specs call it after each attack.
function M.assert_healthy(bystanders, client)
  client = client or M.client()
  local sbx = assert(client:create{})
  local r = assert(sbx:run("echo alive"))
  assert(r.exit_code == 0 and r.stdout == "alive\n", "a new sandbox cannot run a command")
  assert(sbx.files:write("/home/user/health", "\0ok\255"))
  assert(assert(sbx.files:read("/home/user/health")) == "\0ok\255", "file bytes differ")
  assert(sbx:kill())
  for _, b in ipairs(bystanders or {}) do
    local br = assert(b:run("echo still"))
    assert(br.stdout == "still\n", "a bystander sandbox was lost")
  end
end

-- e2b_local_bin() -> the path of the e2b-local serving these specs (its
-- exec hands it over as E2B_LOCAL_BIN), else the one on PATH.
function M.e2b_local_bin()
  return os.getenv("E2B_LOCAL_BIN") or "e2b-local"
end

-- read_file(path) -> its bytes, "" when it cannot be opened (yet).
function M.read_file(path)
  local f = io.open(path, "rb")
  local bytes = f and f:read("a") or ""
  if f then f:close() end
  return bytes
end

-- write_file(path, bytes): creates or replaces the file, or raises.
function M.write_file(path, bytes)
  local f = assert(io.open(path, "wb"))
  assert(f:write(bytes))
  f:close()
end

-- json_lines(text) -> the decoded value of each non-empty line.
function M.json_lines(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do out[#out + 1] = require("cjson").decode(line) end
  return out
end

-- sanitizer_report(text) -> the first report AddressSanitizer, LeakSanitizer
-- or UBSan printed in text (from its first line), or nil: what
-- scripts/sanitizer_reports.sh finds in the busted logs, for the logs of
-- the servers a spec starts itself, which never reach those.
function M.sanitizer_report(text)
  local at
  for _, p in ipairs({ "==%d+==ERROR: AddressSanitizer", "==%d+==ERROR: LeakSanitizer",
                       ":%d+:%d+: runtime error: ", "LeakSanitizer has encountered a fatal error" }) do
    local s = text:find(p)
    if s and (not at or s < at) then at = s end
  end
  if not at then return nil end
  while at > 1 and text:sub(at - 1, at - 1) ~= "\n" do at = at - 1 end -- from its line's start
  return text:sub(at)
end

-- serve_local(args, env) -> vars, stop, pid: a second e2b-local (`serve` on a
-- free loopback port with extra args; env: "NAME=value ..." for its
-- environment, shell-quoted by the caller), the variables it printed and
-- its pid; stop() ends it with SIGTERM (if it still runs: a zombie waiting
-- for init counts as ended) and returns its log (stderr), failing when the
-- log holds a sanitizer report (an ASan build's leak at its exit).
function M.serve_local(args, env)
  local out, log = os.tmpname(), os.tmpname()
  local pid = M.host(("env %s %s serve --listen 127.0.0.1:0 %s >%s 2>%s & echo $!")
    :format(env or "", M.shell_quote(M.e2b_local_bin()), args or "", out, log)):match("%d+")
  local slurp = M.read_file
  local vars = {}
  for _ = 1, 200 do
    for k, v in slurp(out):gmatch("(E2B_[%u_]+)=(%S+)") do vars[k] = v end
    if vars.E2B_LOCAL_ADMIN_TOKEN or slurp(log):find("stopped") then break end
    e2b.sleep(25)
  end
  local function stop()
    M.host(("kill -TERM %s 2>/dev/null; while kill -0 %s 2>/dev/null && ! grep -q '^State:.Z' /proc/%s/status; do sleep 0.05; done")
      :format(pid, pid, pid))
    local text = slurp(log)
    os.remove(out)
    os.remove(log)
    local report = M.sanitizer_report(text)
    assert(not report, "the second e2b-local printed a sanitizer report:\n" .. (report or ""))
    return text
  end
  return vars, stop, pid
end

-- with_local_server(args, fn) -> log: runs fn(client, vars) against a
-- second e2b-local started with args, stops it whatever fn did, then
-- raises fn's error if it failed; returns the server's log.
function M.with_local_server(args, fn)
  local vars, stop = M.serve_local(args)
  local ok, err = pcall(function()
    assert(vars.E2B_API_URL, "the second server did not start")
    fn(M.client({ api_url = vars.E2B_API_URL, sandbox_url = vars.E2B_SANDBOX_URL,
                  api_key = vars.E2B_API_KEY, domain = vars.E2B_DOMAIN }), vars)
  end)
  local log = stop()
  assert(ok, err)
  return log
end

return M
