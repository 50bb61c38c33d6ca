-- bench/ngx_wait.lua: how should lua-e2b wait inside nginx? Runs
-- bench/wait_workload.lua under plain Lua 5.4 (e2b.sched, sleeping on the core's sockets:
-- the event-driven reference) and inside one nginx worker, with e2b.ngx's
-- one pump on the readiness bridge and with the polling a host without the
-- bridge falls back to; one row per setting. Numbers, not assertions.
--   e2b-local exec -- lua5.4 bench/ngx_wait.lua
local ROOT = arg[0]:match("^(.*)/bench/[^/]*$") or "."
package.path = ROOT .. "/?.lua;" .. package.path
local e2b = require("e2b")
local workload = require("bench.wait_workload")
local nginx = require("spec.ngx.nginx")
local cjson = require("cjson")

local rows = {}
local function row(name, r)
  rows[#rows + 1] = { name = name, r = r }
  local cells = { ("%-34s"):format(name) }
  for _, k in ipairs(workload.KEYS) do cells[#cells + 1] = ("%9.1f"):format(r[k]) end
  print(table.concat(cells, " "))
end

local head = { ("%-34s"):format("setting") }
for _, k in ipairs(workload.KEYS) do head[#head + 1] = ("%9s"):format(k:gsub("_ms$", ""):sub(1, 9)) end
print(table.concat(head, " "))
print("(all ms: unary = files:exists; run_true = sbx:run('true'); upload/download 3.6 MB; "
  .. "stdin_cat 4 MiB through cat; spawn20 = 20 tasks x sleep 0.5; idle = CPU used by a 2 s wait)")

do
  local client = assert(e2b.client{})
  local sbx = assert(client:create{})
  row("lua5.4 e2b.sched (reference)", workload.run(e2b, sbx))
  sbx:kill()
end

local srv = nginx.start{
  server = [[
    location = /wait { content_by_lua_block { require("bench.ngx_wait_app").handler() } }
    location = /cleanup { content_by_lua_block { require("bench.ngx_wait_app").cleanup() } }
  ]],
}
-- The pump as users get it (it sleeps on the core's readiness bridge), and
-- the polling a host without the bridge falls back to.
local settings = {
  { "ngx pump + bridge (default)", "bridge=1" },
  { "ngx pump, polling (no bridge)", "bridge=0" },
}
for _, s in ipairs(settings) do
  local r = srv:get("/wait?" .. s[2], 120000)
  local ok, t = pcall(cjson.decode, r.body)
  if not ok or r.status ~= 200 then error(s[1] .. ": " .. tostring(r.body)) end
  row(s[1], t)
end
srv:get("/cleanup")
srv:stop()
for _, line in ipairs(srv:errors()) do print("nginx: " .. line) end
srv:remove()
