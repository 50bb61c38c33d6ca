-- spec/ngx/app.lua: the handlers of the nginx that spec/ngx/openresty_test.lua
-- starts (runs inside nginx, on LuaJIT, with e2b.ngx).
local e2b = require("e2b")
local cases = require("spec.ngx.cases")
local cjson = require("cjson.safe")

local M = {}

-- What init_by_lua and init_worker_by_lua saw when they tried to wait.
M.phase_errors = {}

function M.try_wait(phase)
  local ok, err = pcall(e2b.sleep, 1)
  M.phase_errors[phase] = ok and "no error" or tostring(err)
end

local ctx
local function context()
  if not ctx then ctx = cases.context(e2b) end
  return ctx
end

local function say_json(t)
  ngx.header["Content-Type"] = "application/json"
  ngx.say(cjson.encode(t))
end

-- GET /case?name=...[&bridge=0] -> "ok" or "FAIL: <error>"
function M.case()
  local name = ngx.var.arg_name and ngx.unescape_uri(ngx.var.arg_name)
  local c = name and cases.find(name)
  if not c then
    ngx.status = 404
    return ngx.say("no case ", tostring(name))
  end
  -- ?bridge=0: the pump polls curl's sockets (the fallback) for this case.
  local adapter = require("e2b.ngx")
  local old = adapter._force_polling(ngx.var.arg_bridge == "0")
  local ok, err = xpcall(c.fn, debug.traceback, e2b, context())
  adapter._force_polling(old)
  ngx.say(ok and "ok" or ("FAIL: " .. tostring(err)))
end

-- GET /cases -> the names, one a line
function M.list()
  for _, c in ipairs(cases.cases) do ngx.say(c.name) end
end

function M.cleanup()
  if ctx then ctx.cleanup() end
  ngx.say("ok")
end

-- GET /sandbox -> creates a sandbox, runs a 1 s command in it, kills it.
function M.sandbox()
  local sbx, err = context().client:create{}
  if not sbx then
    ngx.status = 500
    return say_json({ error = tostring(err) })
  end
  local res
  res, err = sbx:run("sleep 1; echo slept")
  sbx:kill()
  if not res then
    ngx.status = 500
    return say_json({ error = tostring(err) })
  end
  say_json({ stdout = res.stdout, scheduler = e2b.scheduler })
end

-- GET /stream?id=ID: creates sandbox ID and relays a command's output chunk by
-- chunk: "first", then (once /go?id=ID created /tmp/go in it) "second".
function M.stream()
  local id = ngx.var.arg_id
  local sbx, err = context().client:create{ id = id }
  if not sbx then
    ngx.status = 500
    return ngx.say("create: ", tostring(err))
  end
  local proc
  proc, err = sbx:spawn("echo first; while [ ! -e /tmp/go ]; do sleep 0.02; done; echo second")
  if not proc then
    sbx:kill()
    ngx.status = 500
    return ngx.say("spawn: ", tostring(err))
  end
  while true do
    local data, rerr = proc:read(30000)
    if not data then
      if rerr then ngx.print("\nread error: ", tostring(rerr)) end
      break
    end
    ngx.print(data)
    ngx.flush(true)
  end
  proc:close()
  sbx:kill()
end

-- GET /go?id=ID: finds sandbox ID by its logical id and lets /stream go on.
function M.go()
  local sbx, err = context().client:resume(ngx.var.arg_id)
  if not sbx then
    ngx.status = 500
    return ngx.say("resume: ", tostring(err))
  end
  local ok
  ok, err = sbx.files:write("/tmp/go", "")
  ngx.say(ok and "ok" or ("write: " .. tostring(err)))
end

-- GET /abortable: waits on a 30 s command until the client hangs up, then
-- ends the request from ngx.on_abort (lua_check_client_abort on), leaving
-- its wait parked for the adapter to forget.
function M.abortable()
  assert(ngx.on_abort(function() ngx.exit(499) end))
  local proc = assert(context().sandbox():spawn("sleep 30"))
  ngx.say("waiting")
  ngx.flush(true)
  proc:read()
  proc:close()
end

-- GET /idle[?bridge=0] -> { cpu_ms, stdout, bridged }: the CPU time the worker
-- process (all its threads: os.clock) used in a second of waiting for a 4 s
-- command in the shared sandbox: the least of three such seconds, after its
-- start (the request, the sandbox's watch, its listing: costs that vary with
-- what earlier cases left there, as a collection step may), so that only
-- what every second costs is left. And whether the pump slept on the
-- readiness bridge meanwhile. ?bridge=0: the pump polls curl's sockets (the
-- fallback).
function M.idle()
  local sbx = context().sandbox()
  assert(sbx:run("true"))
  local adapter = require("e2b.ngx")
  local old = adapter._force_polling(ngx.var.arg_bridge == "0")
  local res, err, bridged, cpu_ms, steps
  e2b.run(function()
    local t = e2b.spawn(function() return sbx:run("sleep 4; echo idle") end)
    e2b.sleep(500)
    bridged = adapter.stats().bridged
    for _ = 1, 3 do
      local cpu0, steps0 = os.clock(), adapter.stats().steps
      e2b.sleep(1000)
      local used = (os.clock() - cpu0) * 1000
      if not cpu_ms or used < cpu_ms then cpu_ms, steps = used, adapter.stats().steps - steps0 end
    end
    res, err = t:wait()
  end)
  adapter._force_polling(old)
  if not res then
    ngx.status = 500
    return say_json({ error = tostring(err) })
  end
  say_json({ cpu_ms = cpu_ms, steps = steps, stdout = res.stdout, bridged = bridged })
end

-- GET /stats -> the adapter's counters as JSON, after a full collection so
-- the coroutines of aborted requests are gone.
function M.stats()
  collectgarbage()
  collectgarbage()
  say_json(require("e2b.ngx").stats())
end

-- GET /scheduler -> e2b.scheduler
function M.scheduler()
  ngx.say(e2b.scheduler)
end

-- GET /phases -> what waiting in init / init_worker reported, as JSON.
function M.phases()
  say_json(M.phase_errors)
end

return M
