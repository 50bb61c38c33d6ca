-- bench/ngx_wait_app.lua: runs bench/wait_workload.lua inside nginx with the
-- e2b.ngx pump as users get it, or (?bridge=0) polling as a host without the
-- readiness bridge does.
local e2b = require("e2b")
local adapter = require("e2b.ngx")
local workload = require("bench.wait_workload")
local cjson = require("cjson")

local M = {}
local client, sbx

function M.handler()
  local old = adapter._force_polling(ngx.req.get_uri_args().bridge == "0")
  client = client or assert(e2b.client{})
  sbx = sbx or assert(client:create{})
  local ok, r = pcall(workload.run, e2b, sbx)
  adapter._force_polling(old)
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
