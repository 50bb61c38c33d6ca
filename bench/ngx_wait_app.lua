-- bench/ngx_wait_app.lua: runs bench/wait_workload.lua inside nginx with the
-- e2b.ngx wait mode of the query (?wait=semaphore&bridge=0&max_idle_ms=16&busy_ms=100).
local e2b = require("e2b")
local adapter = require("e2b.ngx")
local workload = require("bench.wait_workload")
local cjson = require("cjson")

local M = {}
local client, sbx

function M.handler()
  local args = ngx.req.get_uri_args()
  local t = {}
  for _, k in ipairs({ "wait", "min_idle_ms", "max_idle_ms", "busy_ms" }) do
    if args[k] then t[k] = tonumber(args[k]) or args[k] end
  end
  if args.bridge then t.bridge = args.bridge == "1" end
  local old = adapter.tune(t)
  client = client or assert(e2b.client{})
  sbx = sbx or assert(client:create{})
  local ok, r = pcall(workload.run, e2b, sbx)
  adapter.tune(old)
  if not ok then
    ngx.status = 500
    return ngx.say(tostring(r))
  end
  ngx.say(cjson.encode(r))
end

function M.cleanup()
  if sbx then sbx:kill() sbx = nil end
  ngx.say("ok")
end

return M
