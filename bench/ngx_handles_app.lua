-- bench/ngx_handles_app.lua: runs bench/handles_workload.lua inside nginx.
local e2b = require("e2b")
local workload = require("bench.handles_workload")
local cjson = require("cjson")

local M = {}

function M.handler()
  local args = ngx.req.get_uri_args()
  local ok, r = pcall(workload.run, e2b, {
    handles = tonumber(args.handles), sandboxes = tonumber(args.sandboxes),
    seconds = tonumber(args.seconds),
  })
  if not ok then
    ngx.status = 500
    return ngx.say(tostring(r))
  end
  r.scheduler = e2b.scheduler
  ngx.say(cjson.encode(r))
end

return M
