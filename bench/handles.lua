-- bench/handles.lua: 1,000 concurrent command handles across 50 sandboxes
-- (each `sleep 2; echo i`), driven from one Lua state: Lua 5.4 and LuaJIT
-- with e2b.sched, and one nginx worker with e2b.ngx. Prints wall time, CPU
-- and RSS of that Lua state's process; numbers, not assertions.
--   e2b-local exec -- lua5.4 bench/handles.lua [handles] [sandboxes] [seconds]
-- (`luajit bench/handles.lua --state ...` is the LuaJIT run, printing JSON.)
-- E2B_BENCH_PARK=1 spawns them with park = true, E2B_BENCH_PARK=0 with
-- park = false, unset with spawn's default (see Sandbox:spawn);
-- E2B_BENCH_EXEC=1 runs `echo i; exec sleep N`, two processes a command
-- in the sandbox instead of three.
local ROOT = arg[0]:match("^(.*)/bench/[^/]*$") or "."
package.path = ROOT .. "/?.lua;" .. package.path
local e2b = require("e2b")
local workload = require("bench.handles_workload")
local cjson = require("cjson")

local state_mode = arg[1] == "--state"
local a = state_mode and 2 or 1
local PARK = { ["1"] = true, ["0"] = false }
local opts = { handles = tonumber(arg[a]) or 1000, sandboxes = tonumber(arg[a + 1]) or 50,
               seconds = tonumber(arg[a + 2]) or 2, park = PARK[os.getenv("E2B_BENCH_PARK") or ""],
               exec = os.getenv("E2B_BENCH_EXEC") == "1" }

if state_mode then
  local r = workload.run(e2b, opts)
  r.scheduler = e2b.scheduler
  print(cjson.encode(r))
  return
end

local nginx = require("spec.ngx.nginx")

local function row(name, r)
  local cells = { ("%-22s"):format(name) }
  for _, k in ipairs(workload.KEYS) do cells[#cells + 1] = ("%10.1f"):format(r[k] or -1) end
  print(table.concat(cells, " "))
end

print(("%d command handles (sleep %d) across %d sandboxes, one Lua state; ms and MiB")
  :format(opts.handles, opts.seconds, opts.sandboxes))
local head = { ("%-22s"):format("runtime") }
for _, k in ipairs(workload.KEYS) do head[#head + 1] = ("%10s"):format(k) end
print(table.concat(head, " "))

row(_VERSION:lower():gsub(" ", "") .. " e2b.sched", workload.run(e2b, opts))

local p = assert(io.popen(("luajit %s/bench/handles.lua --state %d %d %d 2>&1")
  :format(ROOT, opts.handles, opts.sandboxes, opts.seconds)))
local out = p:read("*a")
p:close()
local ok, r = pcall(cjson.decode, out:match("{.*}") or "")
if ok then row("luajit e2b.sched", r) else print("luajit: " .. out) end

local srv = nginx.start{
  main = "worker_rlimit_nofile 20000;",
  server = [[ location = /handles { content_by_lua_block { require("bench.ngx_handles_app").handler() } } ]],
}
local res = srv:get(("/handles?handles=%d&sandboxes=%d&seconds=%d")
  :format(opts.handles, opts.sandboxes, opts.seconds), 600000)
ok, r = pcall(cjson.decode, res.body)
if ok and res.status == 200 then row("nginx worker e2b.ngx", r) else print("nginx: " .. res.body) end
srv:stop()
for _, line in ipairs(srv:errors()) do print("nginx: " .. line) end
srv:remove()
