-- bench/network.lua: lua-e2b's side of bench/network.sh. Over HTTPS (only
-- E2B_DOMAIN, E2B_API_KEY and E2B_CA_FILE), against an e2b-local started
-- with --latency, prints one line per operation:
--   <op> <wall ms per op> <requests per op> <new connections per op> <TLS handshakes per op>
-- as e2b-local's HTTPS listener counted them (GET /_e2b_local/stats on its
-- plain listener: STATS_URL, E2B_LOCAL_ADMIN_TOKEN). R (arg 1, default 5)
-- repetitions of each; "concurrent_20" is one batch of 20 runs at once,
-- "concurrent_20_new" one on a sandbox the client has no connection to;
-- "stream_10mb" a spawned command's 10 MiB of stdout read as it comes
-- (kept output, the default; "stream_10mb_unkept" with keep_output = false);
-- "connect" a fresh client connecting to a running sandbox by id and
-- running one command (what a stateless gateway does per request);
-- "list_2_pages" two pages of the sandbox list (R sandboxes, ceil(R/2) a
-- page); "pause" then "resume" (connect to the paused sandbox by id and run
-- one command).
local e2b = require("e2b")
local core = require("e2b.core")
local stats = require("spec.server_stats")

local R = tonumber(arg[1]) or 5
local url, token = assert(os.getenv("STATS_URL")), assert(os.getenv("E2B_LOCAL_ADMIN_TOKEN"))

local function measure(name, reps, fn)
  local before = stats.read(url, token).https
  local t0 = core.now_ms()
  for i = 1, reps do fn(i) end
  local wall = core.now_ms() - t0
  local after = stats.read(url, token).https
  local per = reps
  if name:match("^concurrent_20") then per = 1 end
  print(("%s %.1f %.2f %.2f %.2f"):format(name, wall / per, (after.requests - before.requests) / per,
    (after.connections - before.connections) / per, (after.tls_handshakes - before.tls_handshakes) / per))
end

local client = assert(e2b.client{})
assert(client.api_url:match("^https://"), "run over HTTPS: unset E2B_API_URL and E2B_SANDBOX_URL")
local boxes = {}
measure("create", R, function(i) boxes[i] = assert(client:create{ timeout_ms = 600000 }) end)
local sbx = boxes[1]
assert(sbx:run("true")) -- the warm-up: a steady client is what is measured
measure("run_true", R * 4, function() assert(assert(sbx:run("true")).exit_code == 0) end)
local mb = string.rep("\0\1\2\3\255", 1048576 // 5 + 1):sub(1, 1048576)
measure("write_1mb", R, function() assert(sbx.files:write("/tmp/bench_1mb", mb)) end)
measure("read_1mb", R, function() assert(#assert(sbx.files:read("/tmp/bench_1mb")) == #mb) end)
local TEN = 10485760
local function stream_10mb(opts)
  local proc = assert(sbx:spawn("head -c " .. TEN .. " /dev/zero", opts))
  local got = 0
  while true do
    local data, stream = proc:read(60000)
    if not data then assert(stream == nil, tostring(stream)); break end
    assert(stream == "stdout", stream)
    got = got + #data
  end
  assert(assert(proc:wait()).exit_code == 0)
  proc:close()
  assert(got == TEN, ("stream_10mb: %d bytes"):format(got))
end
measure("stream_10mb", R, function() stream_10mb() end)
-- the bare live stream (the SDK's only kind): no files to read or remove
measure("stream_10mb_unkept", R, function() stream_10mb{ keep_output = false } end)
measure("concurrent_20", 1, function()
  e2b.run(function()
    local tasks = {}
    for i = 1, 20 do tasks[i] = e2b.spawn(function() return assert(sbx:run("true")) end) end
    for i = 1, 20 do tasks[i]:wait() end
  end)
end)
-- 20 at once on a sandbox not spoken to yet (no connection to its host):
-- over HTTP/2 these can share one new connection, over HTTP/1.1 never.
measure("concurrent_20_new", 1, function()
  local fresh = assert(boxes[2], "needs R >= 2")
  e2b.run(function()
    local tasks = {}
    for i = 1, 20 do tasks[i] = e2b.spawn(function() return assert(fresh:run("true")) end) end
    for i = 1, 20 do tasks[i]:wait() end
  end)
end)
measure("connect", R, function(i)
  local fresh = assert(e2b.client{})
  local h = assert(fresh:connect(boxes[i].sandbox_id))
  assert(assert(h:run("true")).exit_code == 0)
  h:close()
end)
local per_page = (R + 1) // 2
measure("list_2_pages", R, function()
  local first, next_token = assert(client:list_page{ limit = per_page })
  assert(#first == per_page and next_token, "list_2_pages: a first page with a next token")
  local second = assert(client:list_page{ limit = per_page, next_token = next_token })
  assert(#first + #second == R, ("list_2_pages: %d + %d sandboxes"):format(#first, #second))
end)
measure("pause", R, function(i) assert(boxes[i]:pause()) end)
measure("resume", R, function(i)
  local h = assert(client:connect(boxes[i].sandbox_id))
  assert(assert(h:run("true")).exit_code == 0)
  h:close()
end)
measure("kill", R, function(i) assert(boxes[i]:kill()) end)
